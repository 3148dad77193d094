package identity

import (
	"bytes"
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/clerk/clerk-sdk-go/v2"
	"github.com/clerk/clerk-sdk-go/v2/jwks"
	clerkjwt "github.com/clerk/clerk-sdk-go/v2/jwt"
	"github.com/clerk/clerk-sdk-go/v2/session"
	"github.com/clerk/clerk-sdk-go/v2/user"
	jose "github.com/go-jose/go-jose/v3"
	josejwt "github.com/go-jose/go-jose/v3/jwt"

	"admit/store"
)

const (
	// clerkSessionCookie is the cookie ClerkJS keeps the session token in.
	clerkSessionCookie = "__session"

	// clerkJWKSRefetchInterval bounds how often an unknown kid may trigger a
	// JWKS fetch (docs/ARCHITECTURE.md#identity: at most once a minute), so a
	// stream of forged kids cannot turn into a stream of calls to Clerk.
	clerkJWKSRefetchInterval = time.Minute

	// clerkLeeway is the clock skew tolerated on exp, nbf and iat. Clerk
	// session tokens live 60 s; 5 s absorbs ordinary skew between Clerk and
	// this server (an iat a second ahead of our clock would otherwise be
	// rejected) without meaningfully extending a token's life.
	clerkLeeway = 5 * time.Second

	// clerkHTTPTimeout is the Backend API timeout when ClerkConfig.HTTPClient
	// is nil.
	clerkHTTPTimeout = 5 * time.Second

	// clerkJWKSFetchTimeout bounds one JWKS fetch. The fetch runs detached
	// from the request's cancellation (a client hanging up must not count as
	// a failed fetch and block refetching for a minute), so it needs its own
	// bound.
	clerkJWKSFetchTimeout = 10 * time.Second

	// clerkMaxTokenBytes rejects absurd tokens before any parsing. Clerk
	// session tokens are around 1 KiB.
	clerkMaxTokenBytes = 8 << 10

	// clerkMinRSABits is the smallest RSA modulus accepted from the JWKS.
	clerkMinRSABits = 2048

	// clerkMaxTokenLife is the longest a Clerk session token lives (60 s)
	// plus the leeway: how long a session signed out here must stay
	// recorded as ended when its tokens cannot be seen.
	clerkMaxTokenLife = 60*time.Second + clerkLeeway
)

// Reasons a Clerk session token is rejected. They are fixed strings so an
// error can be logged without ever carrying token, claim or user data.
const (
	clerkReasonNoToken      = "no session token"
	clerkReasonAuthScheme   = "authorization scheme is not Bearer"
	clerkReasonAmbiguous    = "more than one session token"
	clerkReasonMalformed    = "malformed token"
	clerkReasonAlg          = "alg is not RS256"
	clerkReasonKid          = "kid missing"
	clerkReasonUnknownKid   = "unknown kid"
	clerkReasonSignature    = "bad signature"
	clerkReasonExpired      = "expired"
	clerkReasonNotYetValid  = "not yet valid"
	clerkReasonVerifier     = "rejected by verifier"
	clerkReasonExpMissing   = "exp missing"
	clerkReasonIssuer       = "iss mismatch"
	clerkReasonAzp          = "azp missing or not authorized"
	clerkReasonSid          = "sid missing"
	clerkReasonSub          = "sub missing or malformed"
	clerkReasonBadPrincipal = "principal missing or malformed"
	clerkReasonEnded        = "session signed out"
)

// clerkRejection is an ErrSignedOut with the fixed reason a token was
// refused. errors.Is(err, ErrSignedOut) holds for every rejection.
type clerkRejection struct{ reason string }

func (e *clerkRejection) Error() string { return ErrSignedOut.Error() + ": " + e.reason }
func (e *clerkRejection) Unwrap() error { return ErrSignedOut }

func clerkReject(reason string) error { return &clerkRejection{reason: reason} }

// clerkUnavailable wraps ErrIdentityUnavailable with a fixed description.
// The SDK's own error is deliberately dropped: its text can hold the request
// URL, and so a Clerk user ID.
func clerkUnavailable(what string) error {
	return fmt.Errorf("%w: %s", ErrIdentityUnavailable, what)
}

// ClerkConfig configures the Clerk identity.
type ClerkConfig struct {
	// SecretKey is the Clerk secret key (CLERK_SECRET_KEY) used for the
	// Backend API. Required.
	SecretKey string
	// APIURL is the Backend API base URL ending in /v1 (CLERK_API_URL);
	// empty means https://api.clerk.com/v1.
	APIURL string
	// Issuer is the exact iss every session token must carry
	// (CLERK_ISSUER). Required.
	Issuer string
	// AuthorizedParties lists the exact azp values accepted
	// (CLERK_AUTHORIZED_PARTIES). Required, at least one.
	AuthorizedParties []string
	// HTTPClient makes Backend API calls; nil means a client with a 5 s
	// timeout.
	HTTPClient *http.Client
	// Now is the clock for token times and the JWKS refetch limit; nil
	// means time.Now.
	Now func() time.Time
	// DB records the sessions signed out here, so a copy of their token
	// is refused afterwards (docs/ARCHITECTURE.md#sessions). Required.
	DB *store.DB
}

// ClerkIdentity is the Identity backed by Clerk: it verifies Clerk session
// JWTs against a cached JWKS and reads verified email addresses from the
// Clerk Backend API. It is safe for concurrent use.
type ClerkIdentity struct {
	issuer        string
	parties       []string
	now           func() time.Time
	jwks          *jwks.Client
	users         *user.Client
	clerkSessions *session.Client
	db            *store.DB

	// fetchMu serializes JWKS fetches so concurrent requests with an unknown
	// kid cause one fetch, not many.
	fetchMu sync.Mutex

	// mu guards the fields below.
	mu          sync.Mutex
	keys        map[string]*clerk.JSONWebKey // by kid; RS256 RSA keys only
	attempted   bool                         // a JWKS fetch has been tried
	lastAttempt time.Time                    // when the last fetch started
	lastFailed  bool                         // the last fetch did not succeed
}

var _ Identity = (*ClerkIdentity)(nil)

// NewClerkIdentity validates cfg and returns a Clerk identity. It makes no
// network call; the JWKS is fetched on the first authenticated request.
func NewClerkIdentity(cfg ClerkConfig) (*ClerkIdentity, error) {
	if cfg.SecretKey == "" {
		return nil, errors.New("clerk: secret key is required")
	}
	if cfg.DB == nil {
		return nil, errors.New("clerk: a database is required for signed-out sessions")
	}
	if cfg.Issuer == "" || strings.TrimSpace(cfg.Issuer) != cfg.Issuer {
		return nil, errors.New("clerk: issuer is required and must have no surrounding space")
	}
	if u, err := url.Parse(cfg.Issuer); err != nil || !u.IsAbs() || u.Host == "" {
		return nil, errors.New("clerk: issuer must be an absolute URL")
	}
	if len(cfg.AuthorizedParties) == 0 {
		return nil, errors.New("clerk: at least one authorized party is required")
	}
	for _, p := range cfg.AuthorizedParties {
		if p == "" || strings.TrimSpace(p) != p {
			return nil, errors.New("clerk: authorized parties must be non-empty with no surrounding space")
		}
	}
	apiURL := cfg.APIURL
	if apiURL == "" {
		apiURL = clerk.APIURL
	}
	if u, err := url.Parse(apiURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, errors.New("clerk: API URL must be an absolute http(s) URL")
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: clerkHTTPTimeout}
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	// Never the SDK's package-level key or backend: each identity carries
	// its own configuration.
	secret := cfg.SecretKey
	backend := clerk.NewBackend(&clerk.BackendConfig{Key: &secret, URL: &apiURL, HTTPClient: hc})
	return &ClerkIdentity{
		issuer:        cfg.Issuer,
		parties:       slices.Clone(cfg.AuthorizedParties),
		now:           now,
		jwks:          &jwks.Client{Backend: backend},
		users:         &user.Client{Backend: backend},
		clerkSessions: &session.Client{Backend: backend},
		db:            cfg.DB,
		keys:          map[string]*clerk.JSONWebKey{},
	}, nil
}

// Mode returns ModeClerk.
func (c *ClerkIdentity) Mode() Mode { return ModeClerk }

// Authenticate verifies the request's Clerk session token, taken from
// "Authorization: Bearer" or else the __session cookie. Every failure is
// ErrSignedOut, except that an unknown signing key while Clerk's JWKS cannot
// be fetched is ErrIdentityUnavailable (fail closed with 503: the token may
// be valid, but we cannot tell).
func (c *ClerkIdentity) Authenticate(r *http.Request) (*Principal, error) {
	token, err := clerkSessionToken(r)
	if err != nil {
		return nil, err
	}
	kid, err := clerkCheckHeader(token)
	if err != nil {
		return nil, err
	}
	key, err := c.key(r.Context(), kid)
	if err != nil {
		return nil, err
	}

	issuer := c.issuer
	claims, err := clerkjwt.Verify(r.Context(), &clerkjwt.VerifyParams{
		Token:  token,
		JWK:    key,
		Clock:  clerkClock(c.now),
		Leeway: clerkLeeway,
		// With ProxyURL set the SDK compares iss exactly; without it, it
		// only checks a prefix. We also compare below.
		ProxyURL:               &issuer,
		AuthorizedPartyHandler: c.authorizedParty,
	})
	if err != nil {
		return nil, clerkVerifyRejection(err)
	}

	// The SDK accepts a token without exp; admit does not (docs/ARCHITECTURE.md#identity).
	if claims.Expiry == nil {
		return nil, clerkReject(clerkReasonExpMissing)
	}
	if claims.Issuer != c.issuer {
		return nil, clerkReject(clerkReasonIssuer)
	}
	if !c.authorizedParty(claims.AuthorizedParty) {
		return nil, clerkReject(clerkReasonAzp)
	}
	if claims.SessionID == "" {
		return nil, clerkReject(clerkReasonSid)
	}
	if !clerkValidID(claims.Subject) {
		return nil, clerkReject(clerkReasonSub)
	}
	// rule: a session signed out here stays out, even for a copy of a
	// token that still verifies (docs/ARCHITECTURE.md#sessions).
	ended, err := c.db.ProviderSessionEnded(r.Context(), clerkSidDigest(claims.SessionID))
	if err != nil {
		return nil, clerkUnavailable("read signed-out sessions")
	}
	if ended {
		return nil, clerkReject(clerkReasonEnded)
	}
	return &Principal{UserID: claims.Subject, SessionID: claims.SessionID, expires: time.Unix(*claims.Expiry, 0).Add(clerkLeeway)}, nil
}

// clerkSidDigest is the digest a Clerk session ID is recorded under.
func clerkSidDigest(sid string) []byte {
	sum := sha256.Sum256([]byte("admit clerk sid\x00" + sid))
	return sum[:]
}

// SignOut implements Identity: the request's Clerk session is recorded as
// ended until its last token has expired. The page's script signs out of
// Clerk itself, which stops new tokens; the handler clears the cookie.
func (c *ClerkIdentity) SignOut(w http.ResponseWriter, r *http.Request, p *Principal) (string, error) {
	if p == nil || p.SessionID == "" {
		return "", nil
	}
	until := p.expires
	if until.IsZero() {
		until = c.now().Add(clerkMaxTokenLife)
	}
	return "", c.db.EndProviderSession(r.Context(), clerkSidDigest(p.SessionID), until)
}

// SignOutEverywhere implements Identity: every active Clerk session of the
// user is revoked through the Backend API (so Clerk mints no new token for
// it) and recorded as ended until its last token has expired. If Clerk
// cannot be reached it fails with ErrIdentityUnavailable, after ending
// this session here.
func (c *ClerkIdentity) SignOutEverywhere(w http.ResponseWriter, r *http.Request, p *Principal) error {
	if p == nil || !clerkValidID(p.UserID) {
		return clerkReject(clerkReasonBadPrincipal)
	}
	if _, err := c.SignOut(w, r, p); err != nil {
		return err
	}
	ctx := r.Context()
	uid, status := p.UserID, "active"
	list, err := c.clerkSessions.List(ctx, &session.ListParams{UserID: &uid, Status: &status})
	if err != nil || list == nil {
		return clerkUnavailable("session list failed")
	}
	until := c.now().Add(clerkMaxTokenLife)
	for _, sess := range list.Sessions {
		if sess == nil || !clerkValidID(sess.ID) || sess.UserID != p.UserID {
			continue
		}
		if err := c.db.EndProviderSession(ctx, clerkSidDigest(sess.ID), until); err != nil {
			return err
		}
		if _, err := c.clerkSessions.Revoke(ctx, &session.RevokeParams{ID: sess.ID}); err != nil {
			return clerkUnavailable("session revoke failed")
		}
	}
	return nil
}

// VerifiedEmails fetches the user from the Clerk Backend API on every call
// and returns only addresses whose verification status is "verified". A user
// Clerk no longer knows (404) has no verified addresses. Any other failure
// (network, timeout, non-2xx) is ErrIdentityUnavailable.
func (c *ClerkIdentity) VerifiedEmails(ctx context.Context, p *Principal) ([]string, error) {
	all, err := c.Addresses(ctx, p)
	if err != nil {
		return nil, err
	}
	return verifiedOnly(all), nil
}

// Addresses implements AddressLister: the user's addresses from the
// Backend API, fetched as VerifiedEmails fetches them, each verified only
// when its verification status is "verified".
func (c *ClerkIdentity) Addresses(ctx context.Context, p *Principal) ([]Address, error) {
	if p == nil || !clerkValidID(p.UserID) {
		return nil, clerkReject(clerkReasonBadPrincipal)
	}
	u, err := c.users.Get(ctx, p.UserID)
	if err != nil {
		if apiErr, ok := errors.AsType[*clerk.APIErrorResponse](err); ok {
			if apiErr.HTTPStatusCode == http.StatusNotFound {
				return []Address{}, nil
			}
			return nil, clerkUnavailable(fmt.Sprintf("user lookup: status %d", apiErr.HTTPStatusCode))
		}
		return nil, clerkUnavailable("user lookup failed")
	}
	if u == nil || u.ID != p.UserID {
		return nil, clerkUnavailable("user lookup: unexpected user in response")
	}
	all := []Address{}
	for _, e := range u.EmailAddresses {
		if e == nil || e.EmailAddress == "" {
			continue
		}
		// docs/ARCHITECTURE.md#identity: only addresses whose verification.status is "verified".
		verified := e.Verification != nil && e.Verification.Status == "verified"
		all = append(all, Address{Email: e.EmailAddress, Verified: verified})
	}
	return all, nil
}

func (c *ClerkIdentity) authorizedParty(azp string) bool {
	return azp != "" && slices.Contains(c.parties, azp)
}

// key returns the RS256 key for kid from the cache, refetching the JWKS when
// kid is unknown and the last fetch was at least a minute ago.
func (c *ClerkIdentity) key(ctx context.Context, kid string) (*clerk.JSONWebKey, error) {
	c.mu.Lock()
	k := c.keys[kid]
	c.mu.Unlock()
	if k != nil {
		return k, nil
	}

	c.fetchMu.Lock()
	defer c.fetchMu.Unlock()

	c.mu.Lock()
	if k := c.keys[kid]; k != nil { // fetched while we waited
		c.mu.Unlock()
		return k, nil
	}
	now := c.now()
	if c.attempted && now.Sub(c.lastAttempt) < clerkJWKSRefetchInterval {
		failed := c.lastFailed
		c.mu.Unlock()
		if failed {
			return nil, clerkUnavailable("jwks fetch failed recently")
		}
		return nil, clerkReject(clerkReasonUnknownKid)
	}
	c.attempted, c.lastAttempt, c.lastFailed = true, now, true
	c.mu.Unlock()

	fetchCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), clerkJWKSFetchTimeout)
	defer cancel()
	set, err := c.jwks.Get(fetchCtx, &jwks.GetParams{})
	if err != nil || set == nil {
		return nil, clerkUnavailable("jwks fetch failed")
	}
	keys := clerkUsableKeys(set)

	c.mu.Lock()
	// Replace, not merge: a key Clerk stopped publishing stops verifying.
	c.keys, c.lastFailed = keys, false
	k = keys[kid]
	c.mu.Unlock()
	if k == nil {
		return nil, clerkReject(clerkReasonUnknownKid)
	}
	return k, nil
}

// clerkUsableKeys keeps the JWKS entries that can verify RS256 signatures:
// RSA public keys of at least 2048 bits, for signing, with a kid and alg
// RS256 (or no alg). Each is stored with Algorithm "RS256" so the SDK's
// header-vs-key algorithm comparison also enforces RS256.
func clerkUsableKeys(set *clerk.JSONWebKeySet) map[string]*clerk.JSONWebKey {
	keys := map[string]*clerk.JSONWebKey{}
	for _, k := range set.Keys {
		if k == nil || k.KeyID == "" {
			continue
		}
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		if k.Algorithm != "" && k.Algorithm != string(jose.RS256) {
			continue
		}
		pub, ok := k.Key.(*rsa.PublicKey)
		if !ok || pub.N == nil || pub.N.BitLen() < clerkMinRSABits {
			continue
		}
		keys[k.KeyID] = &clerk.JSONWebKey{Key: pub, KeyID: k.KeyID, Algorithm: string(jose.RS256), Use: "sig"}
	}
	return keys
}

// clerkSessionToken extracts the session token. An Authorization header, if
// present, must be the only one and use the Bearer scheme: it is never
// skipped in favour of the cookie. Without one, exactly one __session cookie
// is used (two are ambiguous and refused rather than guessed between).
func clerkSessionToken(r *http.Request) (string, error) {
	var token string
	if auth := r.Header.Values("Authorization"); len(auth) > 0 {
		if len(auth) > 1 {
			return "", clerkReject(clerkReasonAmbiguous)
		}
		scheme, rest, ok := strings.Cut(auth[0], " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return "", clerkReject(clerkReasonAuthScheme)
		}
		token = strings.TrimSpace(rest)
	} else {
		cookies := r.CookiesNamed(clerkSessionCookie)
		switch len(cookies) {
		case 0:
			return "", clerkReject(clerkReasonNoToken)
		case 1:
			token = cookies[0].Value
		default:
			return "", clerkReject(clerkReasonAmbiguous)
		}
	}
	if token == "" {
		return "", clerkReject(clerkReasonNoToken)
	}
	if len(token) > clerkMaxTokenBytes {
		return "", clerkReject(clerkReasonMalformed)
	}
	return token, nil
}

// clerkCheckHeader parses the token's JOSE header before any library sees
// it: the token must be compact-serialized (three base64url parts; the JSON
// serialization go-jose would also accept is refused), alg exactly RS256,
// kid a non-empty string, no crit, and no duplicate header names (so no
// parser can read a different alg or kid than this check did). It returns
// the kid.
func clerkCheckHeader(token string) (string, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", clerkReject(clerkReasonMalformed)
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(parts[0])
	if err != nil {
		return "", clerkReject(clerkReasonMalformed)
	}
	header, err := clerkDecodeHeader(raw)
	if err != nil {
		return "", clerkReject(clerkReasonMalformed)
	}
	var alg, kid string
	if v, ok := header["alg"]; !ok || json.Unmarshal(v, &alg) != nil || alg != string(jose.RS256) {
		return "", clerkReject(clerkReasonAlg)
	}
	if _, ok := header["crit"]; ok {
		return "", clerkReject(clerkReasonMalformed)
	}
	if v, ok := header["kid"]; !ok || json.Unmarshal(v, &kid) != nil || kid == "" {
		return "", clerkReject(clerkReasonKid)
	}
	// Checked after alg so an unsigned alg "none" token is reported as such.
	for _, p := range parts[1:] {
		if _, err := base64.RawURLEncoding.Strict().DecodeString(p); p == "" || err != nil {
			return "", clerkReject(clerkReasonMalformed)
		}
	}
	return kid, nil
}

// clerkDecodeHeader decodes a JSON object, refusing duplicate names and
// trailing data.
func clerkDecodeHeader(raw []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("header is not an object")
	}
	header := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, ok := tok.(string)
		if !ok {
			return nil, errors.New("bad header name")
		}
		if _, dup := header[name]; dup {
			return nil, errors.New("duplicate header name")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		header[name] = v
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, errors.New("header is not an object")
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("trailing data after header")
	}
	return header, nil
}

// clerkVerifyRejection maps an SDK verification error to a fixed reason.
func clerkVerifyRejection(err error) error {
	switch {
	case errors.Is(err, josejwt.ErrExpired):
		return clerkReject(clerkReasonExpired)
	case errors.Is(err, josejwt.ErrNotValidYet), errors.Is(err, josejwt.ErrIssuedInTheFuture):
		return clerkReject(clerkReasonNotYetValid)
	case errors.Is(err, jose.ErrCryptoFailure):
		return clerkReject(clerkReasonSignature)
	default:
		return clerkReject(clerkReasonVerifier)
	}
}

// clerkValidID reports whether id looks like a Clerk ID (e.g. "user_2abc"):
// non-empty, bounded, and only characters that are safe in a URL path
// segment, since the SDK does not escape the ID it puts in the path.
func clerkValidID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
		default:
			return false
		}
	}
	return true
}

// clerkClock adapts a time function to the SDK's Clock.
type clerkClock func() time.Time

func (f clerkClock) Now() time.Time { return f().UTC() }
