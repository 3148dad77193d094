package identity

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"admit/store"
)

const (
	// oidcSessionCookie holds an OpenID Connect session's random ID.
	oidcSessionCookie = "admit_oidc"
	// oidcFlowCookie holds one sign-in's state, nonce and PKCE verifier,
	// sealed, between the start route and the callback.
	oidcFlowCookie = "admit_oidc_flow"
	// oidcFlowTTL is how long a sign-in at the provider may take.
	oidcFlowTTL = 10 * time.Minute
	// oidcLeeway is the clock skew tolerated on the ID token's iat.
	oidcLeeway = time.Minute
	// oidcRefreshEarly refreshes an access token this long before it
	// expires, so it does not expire on its way to the provider.
	oidcRefreshEarly = 10 * time.Second
	// oidcHTTPTimeout bounds every call to the provider.
	oidcHTTPTimeout = 10 * time.Second
	// oidcMaxBody bounds a userinfo answer.
	oidcMaxBody = 64 << 10
	// oidcDiscoveryMaxWait is the longest wait between two discovery
	// attempts while the provider cannot be reached at start.
	oidcDiscoveryMaxWait = 30 * time.Second
)

// OIDCRecheckEvery is how long a session goes without asking the provider
// whether the person may still be signed in: a signed-in request re-validates
// the session (refresh when its access token has expired, then userinfo)
// once this much time has passed since the last check, or sooner when the
// access token has expired (docs/DEPLOY.md#openid-connect).
const OIDCRecheckEvery = 5 * time.Minute

// SignInError is a sign-in at the provider that failed: wrong or expired
// state, a replayed or refused code, a token that does not verify, an
// error from the provider. Reason is a fixed sentence, safe to show and to
// log; it never holds a token, code, claim or address.
type SignInError struct{ Reason string }

func (e *SignInError) Error() string { return "sign-in failed: " + e.Reason }

func signInFailed(reason string) error { return &SignInError{Reason: reason} }

// Reasons a sign-in fails, shown on the failure page.
const (
	reasonFlow     = "This sign-in has expired or was already used, or it was started in another browser."
	reasonProvider = "The identity provider did not sign you in."
	reasonCode     = "The identity provider refused the sign-in code. It may have been used already."
	reasonToken    = "The identity provider's answer could not be verified."
)

// RedirectSignIn is an Identity that signs in by sending the browser to the
// identity provider and back (OpenID Connect).
type RedirectSignIn interface {
	// ProviderName names the provider on the sign-in page.
	ProviderName() string
	// StartSignIn remembers a new sign-in in a short-lived sealed cookie and
	// returns the provider's authorization URL. returnTo is a local path
	// to go on to afterwards. Before the provider has been discovered it
	// is ErrIdentityUnavailable.
	StartSignIn(w http.ResponseWriter, r *http.Request, returnTo string) (string, error)
	// FinishSignIn completes the sign-in at the callback: it starts a
	// server-side session and returns its principal and where to go on.
	// A failed sign-in is a *SignInError (or ErrIdentityUnavailable) and
	// starts no session.
	FinishSignIn(w http.ResponseWriter, r *http.Request) (*Principal, string, error)
}

// OIDCConfig configures the OpenID Connect identity.
type OIDCConfig struct {
	// Issuer is the provider's issuer URL (ADMIT_OIDC_ISSUER); discovery
	// reads <Issuer>/.well-known/openid-configuration.
	Issuer string
	// ClientID and ClientSecret are admit's client at the provider.
	ClientID, ClientSecret string
	// Scopes are requested at sign-in; they must include "openid".
	Scopes []string
	// TrustEmail counts an address whose email_verified claim is absent
	// (ADMIT_OIDC_TRUST_EMAIL). An explicit false never counts.
	TrustEmail bool
	// Name names the provider on the sign-in page; empty means the
	// issuer's host.
	Name string
	// RedirectURL is <public URL>/auth/callback; PostLogoutURL is where
	// the provider returns after its own sign-out (<public URL>/).
	RedirectURL, PostLogoutURL string
	// DB keeps the sessions; TokenKey (32 bytes) seals their tokens and
	// the sign-in cookie.
	DB       *store.DB
	TokenKey []byte
	// SecureCookie marks the cookies Secure (an https public URL).
	SecureCookie bool
	// HTTPClient calls the provider; nil means a client with a 10 s timeout.
	HTTPClient *http.Client
	// Now is the clock for tokens and sessions; nil means time.Now.
	Now func() time.Time
}

// OIDCIdentity is the Identity backed by an OpenID Connect provider
// (docs/ARCHITECTURE.md#identity): the authorization code flow with PKCE,
// the ID token verified with go-oidc, the person identified by issuer and
// sub, the current verified address read from userinfo on every request
// that needs it, and the session kept on the server.
type OIDCIdentity struct {
	cfg      OIDCConfig
	sessions *Sessions
	hc       *http.Client
	now      func() time.Time

	mu         sync.RWMutex
	provider   *oidc.Provider
	verifier   *oidc.IDTokenVerifier
	oauth      *oauth2.Config
	userinfo   string
	endSession string
	lastErr    string
	// authParams are extra authorization request parameters: how to ask
	// for a refresh token when the provider does not take offline_access.
	authParams []oauth2.AuthCodeOption

	// refreshing serializes token refreshes, striped by session digest, so
	// two requests never spend the same refresh token; a fixed number of
	// stripes keeps the memory bounded however many sessions refresh.
	refreshing [64]sync.Mutex
}

var (
	_ Identity       = (*OIDCIdentity)(nil)
	_ RedirectSignIn = (*OIDCIdentity)(nil)
)

// NewOIDCIdentity validates cfg and returns the identity. It makes no
// network call: Discover (or RunDiscovery) reads the provider's
// configuration.
func NewOIDCIdentity(cfg OIDCConfig) (*OIDCIdentity, error) {
	u, err := url.Parse(cfg.Issuer)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, errors.New("oidc: the issuer must be an absolute https URL")
	}
	if cfg.ClientID == "" || cfg.ClientSecret == "" {
		return nil, errors.New("oidc: a client ID and secret are required")
	}
	if !slices.Contains(cfg.Scopes, oidc.ScopeOpenID) {
		return nil, errors.New("oidc: the scopes must include openid")
	}
	if cfg.RedirectURL == "" || cfg.PostLogoutURL == "" {
		return nil, errors.New("oidc: the redirect and post-logout URLs are required")
	}
	s, err := NewSessions(cfg.DB, cfg.TokenKey, oidcSessionCookie, store.SessionModeOIDC, cfg.SecureCookie)
	if err != nil {
		return nil, err
	}
	if cfg.Name == "" {
		cfg.Name = u.Hostname()
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: oidcHTTPTimeout}
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &OIDCIdentity{cfg: cfg, sessions: s, hc: hc, now: now, lastErr: "not tried yet"}, nil
}

// OIDCUserID is the stable admit user ID of the person sub at issuer: a
// digest of both, so it holds nothing personal and two providers' subjects
// never collide. It is what `admit owner add --user` takes.
func OIDCUserID(issuer, sub string) string {
	sum := sha256.Sum256([]byte("admit oidc user\x00" + issuer + "\x00" + sub))
	return "oidc_" + hex.EncodeToString(sum[:20])
}

// Mode implements Identity: ModeOIDC.
func (o *OIDCIdentity) Mode() Mode { return ModeOIDC }

// ProviderName implements RedirectSignIn.
func (o *OIDCIdentity) ProviderName() string { return o.cfg.Name }

// Discover reads the provider's configuration once. The ID token's
// signing keys are fetched when first needed, and again for an unknown key.
func (o *OIDCIdentity) Discover(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, o.hc), oidcHTTPTimeout)
	defer cancel()
	p, err := oidc.NewProvider(ctx, o.cfg.Issuer)
	if err != nil {
		o.mu.Lock()
		o.lastErr = "discovery failed"
		var mismatch *oidc.IssuerMismatchError
		if errors.As(err, &mismatch) {
			o.lastErr = "discovery answered with another issuer"
		}
		o.mu.Unlock()
		return fmt.Errorf("oidc: %s", o.Ready())
	}
	var extra struct {
		EndSession string   `json:"end_session_endpoint"`
		UserInfo   string   `json:"userinfo_endpoint"`
		Scopes     []string `json:"scopes_supported"`
	}
	if err := p.Claims(&extra); err != nil {
		return fmt.Errorf("oidc: discovery document: %w", err)
	}
	if extra.UserInfo == "" {
		o.mu.Lock()
		o.lastErr = "the provider has no userinfo endpoint"
		o.mu.Unlock()
		return errors.New("oidc: the provider has no userinfo endpoint")
	}
	verifier := p.VerifierContext(oidc.ClientContext(context.WithoutCancel(ctx), o.hc), &oidc.Config{
		ClientID: o.cfg.ClientID,
		Now:      o.now,
	})
	scopes, params := offlineRequest(o.cfg.Scopes, extra.Scopes)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.provider, o.verifier, o.userinfo, o.endSession, o.lastErr = p, verifier, extra.UserInfo, extra.EndSession, ""
	o.oauth = &oauth2.Config{ClientID: o.cfg.ClientID, ClientSecret: o.cfg.ClientSecret, Endpoint: p.Endpoint(),
		RedirectURL: o.cfg.RedirectURL, Scopes: scopes}
	o.authParams = params
	return nil
}

// offlineRequest is how admit asks for a refresh token. With offline_access
// among the configured scopes, a provider whose discovery document lists
// scopes_supported without offline_access (Google, which refuses the
// scope) is asked its own way instead: access_type=offline, with
// prompt=consent so that every sign-in, not only the first, comes with a
// refresh token (docs/DEPLOY.md#google). Other providers get the scopes
// as configured.
func offlineRequest(scopes, supported []string) ([]string, []oauth2.AuthCodeOption) {
	scopes = slices.Clone(scopes)
	if !slices.Contains(scopes, oidc.ScopeOfflineAccess) || len(supported) == 0 ||
		slices.Contains(supported, oidc.ScopeOfflineAccess) {
		return scopes, nil
	}
	scopes = slices.DeleteFunc(scopes, func(s string) bool { return s == oidc.ScopeOfflineAccess })
	return scopes, []oauth2.AuthCodeOption{oauth2.AccessTypeOffline, oauth2.SetAuthURLParam("prompt", "consent")}
}

// RunDiscovery discovers the provider, retrying with backoff (1 s, doubling
// up to 30 s) until it succeeds or ctx ends. Meanwhile Ready says why
// admit is not ready. attempted, when set, is told of every attempt: its
// error (nil for the success that ends the loop) and the wait before the
// next one.
func (o *OIDCIdentity) RunDiscovery(ctx context.Context, attempted func(err error, wait time.Duration)) {
	wait := time.Second
	for {
		err := o.Discover(ctx)
		if attempted != nil {
			attempted(err, wait)
		}
		if err == nil {
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, oidcDiscoveryMaxWait)
	}
}

// Ready is nil once the provider has been discovered, else an error
// saying why not (for /readyz).
func (o *OIDCIdentity) Ready() error {
	o.mu.RLock()
	defer o.mu.RUnlock()
	if o.provider != nil {
		return nil
	}
	return fmt.Errorf("identity provider not discovered yet: %s", o.lastErr)
}

// current returns the discovered provider's parts, or
// ErrIdentityUnavailable before discovery.
func (o *OIDCIdentity) current() (*oauth2.Config, *oidc.IDTokenVerifier, string, error) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	if o.provider == nil {
		return nil, nil, "", fmt.Errorf("%w: provider not discovered", ErrIdentityUnavailable)
	}
	return o.oauth, o.verifier, o.userinfo, nil
}

// oidcFlow is one sign-in in progress, sealed in the flow cookie.
type oidcFlow struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Return   string `json:"r"`
	Expires  int64  `json:"e"`
}

var oidcFlowAAD = []byte("admit oidc flow v1")

func randomToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// StartSignIn implements RedirectSignIn: code flow with PKCE S256, state
// and nonce.
func (o *OIDCIdentity) StartSignIn(w http.ResponseWriter, r *http.Request, returnTo string) (string, error) {
	oc, _, _, err := o.current()
	if err != nil {
		return "", err
	}
	// A provider that does not answer is said on admit's own page, not
	// found out by the browser at a host that does not answer.
	if err := o.answering(r.Context()); err != nil {
		return "", err
	}
	o.mu.RLock()
	params := o.authParams
	o.mu.RUnlock()
	f := oidcFlow{State: randomToken(), Nonce: randomToken(), Verifier: oauth2.GenerateVerifier(), Return: returnTo,
		Expires: o.now().Add(oidcFlowTTL).Unix()}
	plain, err := json.Marshal(f)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, o.sessions.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	sealed := o.sessions.aead.Seal(nonce, nonce, plain, oidcFlowAAD)
	http.SetCookie(w, &http.Cookie{Name: oidcFlowCookie, Value: base64.RawURLEncoding.EncodeToString(sealed),
		Path: "/auth/callback", MaxAge: int(oidcFlowTTL.Seconds()), HttpOnly: true, Secure: o.cfg.SecureCookie,
		// Lax: the provider's redirect back is a top-level GET navigation.
		SameSite: http.SameSiteLaxMode})
	opts := append([]oauth2.AuthCodeOption{oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier)}, params...)
	return oc.AuthCodeURL(f.State, opts...), nil
}

// oidcProbeTimeout bounds the check that the provider answers before a
// browser is sent to it.
const oidcProbeTimeout = 3 * time.Second

// answering checks that the provider answers now: its discovery document
// is served (any 2xx). Otherwise it is ErrIdentityUnavailable.
func (o *OIDCIdentity) answering(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, oidcProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(o.cfg.Issuer, "/")+"/.well-known/openid-configuration", nil)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrIdentityUnavailable, err)
	}
	resp, err := o.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%w: provider not answering", ErrIdentityUnavailable)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%w: provider answered %d", ErrIdentityUnavailable, resp.StatusCode)
	}
	return nil
}

// readFlow opens the request's flow cookie; nil when it is missing,
// forged or expired.
func (o *OIDCIdentity) readFlow(r *http.Request) *oidcFlow {
	cookies := r.CookiesNamed(oidcFlowCookie)
	if len(cookies) != 1 {
		return nil
	}
	sealed, err := base64.RawURLEncoding.Strict().DecodeString(cookies[0].Value)
	n := o.sessions.aead.NonceSize()
	if err != nil || len(sealed) < n {
		return nil
	}
	plain, err := o.sessions.aead.Open(nil, sealed[:n], sealed[n:], oidcFlowAAD)
	if err != nil {
		return nil
	}
	var f oidcFlow
	if json.Unmarshal(plain, &f) != nil || f.State == "" || f.Nonce == "" || f.Verifier == "" ||
		!o.now().Before(time.Unix(f.Expires, 0)) {
		return nil
	}
	return &f
}

// oidcTokens is what an OpenID Connect session keeps, sealed.
type oidcTokens struct {
	Sub          string    `json:"sub"`
	AccessToken  string    `json:"at"`
	RefreshToken string    `json:"rt,omitempty"`
	Expiry       time.Time `json:"exp,omitzero"`
	// Checked is when the provider last confirmed the session: the
	// sign-in, or a re-validation.
	Checked time.Time `json:"chk,omitzero"`
}

// FinishSignIn implements RedirectSignIn. The flow cookie is cleared
// whatever happens, so a callback URL works once.
func (o *OIDCIdentity) FinishSignIn(w http.ResponseWriter, r *http.Request) (*Principal, string, error) {
	http.SetCookie(w, &http.Cookie{Name: oidcFlowCookie, Value: "", Path: "/auth/callback", MaxAge: -1, HttpOnly: true,
		Secure: o.cfg.SecureCookie, SameSite: http.SameSiteLaxMode})
	q := r.URL.Query()
	f := o.readFlow(r)
	if f == nil || len(q["state"]) != 1 || !hmac.Equal([]byte(q.Get("state")), []byte(f.State)) {
		return nil, "", signInFailed(reasonFlow)
	}
	if q.Has("error") {
		return nil, "", signInFailed(reasonProvider)
	}
	code := q.Get("code")
	if len(q["code"]) != 1 || code == "" {
		return nil, "", signInFailed(reasonProvider)
	}
	oc, verifier, _, err := o.current()
	if err != nil {
		return nil, "", err
	}
	ctx := oidc.ClientContext(r.Context(), o.hc)
	ctx = context.WithValue(ctx, oauth2.HTTPClient, o.hc)
	tok, err := oc.Exchange(ctx, code, oauth2.VerifierOption(f.Verifier))
	if err != nil {
		// rule (docs/ARCHITECTURE.md#identity): the token endpoint refusing
		// the code (a 4xx) fails the sign-in; a 5xx or 429, or no answer,
		// is the provider being unavailable: signing in again may work
		// once it is back.
		if re, ok := errors.AsType[*oauth2.RetrieveError](err); ok && !providerFailing(re) {
			return nil, "", signInFailed(reasonCode)
		}
		return nil, "", fmt.Errorf("%w: token exchange failed", ErrIdentityUnavailable)
	}
	rawID, _ := tok.Extra("id_token").(string)
	if rawID == "" {
		return nil, "", signInFailed(reasonToken)
	}
	idt, err := verifier.Verify(ctx, rawID) // signature (JWKS), iss, aud, exp
	if err != nil {
		return nil, "", signInFailed(reasonToken)
	}
	if err := o.checkIDToken(idt, f.Nonce, tok.AccessToken); err != nil {
		return nil, "", err
	}
	data, err := json.Marshal(oidcTokens{Sub: idt.Subject, AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken,
		Expiry: tokenExpiry(tok, o.now()), Checked: o.now()})
	if err != nil {
		return nil, "", err
	}
	l, err := o.sessions.start(r.Context(), w, OIDCUserID(o.cfg.Issuer, idt.Subject), data)
	if err != nil {
		return nil, "", err
	}
	p := l.principal()
	p.live = l
	return p, f.Return, nil
}

// providerFailing reports whether the token endpoint's error answer is
// the provider failing (a 5xx, or 429 Too Many Requests) rather than a
// refusal of what admit sent.
func providerFailing(re *oauth2.RetrieveError) bool {
	if re.Response == nil {
		return true
	}
	code := re.Response.StatusCode
	return code >= 500 || code == http.StatusTooManyRequests
}

// checkIDToken checks what go-oidc leaves to the caller: nonce, azp, iat,
// sub, and at_hash when present.
func (o *OIDCIdentity) checkIDToken(idt *oidc.IDToken, nonce, accessToken string) error {
	if !hmac.Equal([]byte(idt.Nonce), []byte(nonce)) {
		return signInFailed(reasonToken)
	}
	var claims struct {
		Azp string `json:"azp"`
	}
	if err := idt.Claims(&claims); err != nil {
		return signInFailed(reasonToken)
	}
	if claims.Azp != "" && claims.Azp != o.cfg.ClientID {
		return signInFailed(reasonToken)
	}
	if len(idt.Audience) > 1 && claims.Azp == "" {
		return signInFailed(reasonToken)
	}
	if idt.IssuedAt.IsZero() || idt.IssuedAt.After(o.now().Add(oidcLeeway)) {
		return signInFailed(reasonToken)
	}
	if idt.Subject == "" || len(idt.Subject) > 255 {
		return signInFailed(reasonToken)
	}
	if idt.AccessTokenHash != "" && idt.VerifyAccessToken(accessToken) != nil {
		return signInFailed(reasonToken)
	}
	return nil
}

// tokenExpiry is when an access token expires, read on admit's clock.
func tokenExpiry(tok *oauth2.Token, now time.Time) time.Time {
	if tok.ExpiresIn > 0 {
		return now.Add(time.Duration(tok.ExpiresIn) * time.Second)
	}
	return tok.Expiry
}

// Authenticate implements Identity: the cookie must name a live session,
// re-validated with the provider when a check is due (recheck).
func (o *OIDCIdentity) Authenticate(r *http.Request) (*Principal, error) {
	l, err := o.sessions.load(r)
	if err != nil {
		return nil, err
	}
	if err := o.recheck(r.Context(), l); err != nil {
		return nil, err
	}
	p := l.principal()
	p.live = l
	return p, nil
}

// recheck re-validates the session with the provider when OIDCRecheckEvery
// has passed since the last check or its access token has expired: the
// tokens are refreshed if needed, then userinfo must still answer for the
// session's subject. A refused refresh or token ends the session
// (ErrSignedOut); a provider that cannot be reached is
// ErrIdentityUnavailable, and the next request tries again. Otherwise it
// makes no call.
func (o *OIDCIdentity) recheck(ctx context.Context, l *liveSession) error {
	var t oidcTokens
	if err := json.Unmarshal(l.data, &t); err != nil || t.AccessToken == "" {
		return ErrSignedOut
	}
	now := o.now()
	if now.Sub(t.Checked) < OIDCRecheckEvery && !o.expired(&t) {
		return nil
	}
	_, _, endpoint, err := o.current()
	if err != nil {
		return err
	}
	tokens, err := o.freshTokens(ctx, l)
	if err != nil {
		return err
	}
	if _, err := o.userinfoClaims(ctx, l, endpoint, tokens); err != nil {
		return err
	}
	return o.markChecked(ctx, l, now)
}

// markChecked records that the provider confirmed the session at at. It
// re-reads the row under the session's refresh lock, so it never writes
// back tokens another request has just rotated. A failed write only means
// the next request checks again.
func (o *OIDCIdentity) markChecked(ctx context.Context, l *liveSession, at time.Time) error {
	mu := o.refreshLock(l.digest)
	mu.Lock()
	defer mu.Unlock()
	t, err := o.storedTokens(ctx, l)
	if err != nil {
		return err
	}
	if !t.Checked.Before(at) {
		return nil
	}
	t.Checked = at
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	if err := o.sessions.update(ctx, l, data); errors.Is(err, ErrSignedOut) {
		return err
	}
	return nil
}

// VerifiedEmails implements Identity: the provider's userinfo, read now
// with the session's access token (refreshed first when it has expired).
// An address counts only with email_verified true, or, with TrustEmail,
// when the claim is absent. A provider that cannot be reached is
// ErrIdentityUnavailable; tokens that can no longer be refreshed or are
// refused end the session (ErrSignedOut).
func (o *OIDCIdentity) VerifiedEmails(ctx context.Context, p *Principal) ([]string, error) {
	all, err := o.Addresses(ctx, p)
	if err != nil {
		return nil, err
	}
	return verifiedOnly(all), nil
}

// Addresses implements AddressLister: the userinfo's address, read as
// VerifiedEmails reads it, with whether it counts as verified.
func (o *OIDCIdentity) Addresses(ctx context.Context, p *Principal) ([]Address, error) {
	if p == nil || p.live == nil {
		return nil, ErrSignedOut
	}
	_, _, endpoint, err := o.current()
	if err != nil {
		return nil, err
	}
	tokens, err := o.freshTokens(ctx, p.live)
	if err != nil {
		return nil, err
	}
	claims, err := o.userinfoClaims(ctx, p.live, endpoint, tokens)
	if err != nil {
		return nil, err
	}
	var email string
	if json.Unmarshal(claims["email"], &email) != nil || email == "" {
		return []Address{}, nil
	}
	return []Address{{Email: email, Verified: o.emailVerified(claims["email_verified"])}}, nil
}

// userinfoClaims reads the userinfo endpoint with the session's access
// token. A 401 or 403 means the provider no longer honours the session
// (the token was revoked, the person disabled or removed): the session
// ends (ErrSignedOut). Any other failure, or an answer about another
// subject, is ErrIdentityUnavailable.
func (o *OIDCIdentity) userinfoClaims(ctx context.Context, l *liveSession, endpoint string, tokens *oidcTokens) (map[string]json.RawMessage, error) {
	claims, status, err := o.fetchUserinfo(ctx, endpoint, tokens.AccessToken)
	if err != nil {
		return nil, fmt.Errorf("%w: userinfo failed", ErrIdentityUnavailable)
	}
	if status == http.StatusUnauthorized || status == http.StatusForbidden {
		_ = o.sessions.endDigest(ctx, l.digest)
		return nil, ErrSignedOut
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("%w: userinfo status %d", ErrIdentityUnavailable, status)
	}
	var sub string
	if err := json.Unmarshal(claims["sub"], &sub); err != nil || sub != tokens.Sub {
		// A userinfo answer about someone else is never used.
		return nil, fmt.Errorf("%w: userinfo subject mismatch", ErrIdentityUnavailable)
	}
	return claims, nil
}

// emailVerified reads the email_verified claim: true (or "true", as some
// providers send it) counts; absent counts only with TrustEmail.
func (o *OIDCIdentity) emailVerified(raw json.RawMessage) bool {
	if raw == nil {
		return o.cfg.TrustEmail
	}
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return b
	}
	var s string
	return json.Unmarshal(raw, &s) == nil && s == "true"
}

// expired reports whether t's access token has expired, or is about to.
func (o *OIDCIdentity) expired(t *oidcTokens) bool {
	return !t.Expiry.IsZero() && !o.now().Add(oidcRefreshEarly).Before(t.Expiry)
}

// storedTokens reads the session's tokens again from its row: another
// request may have changed them since this one loaded the session.
func (o *OIDCIdentity) storedTokens(ctx context.Context, l *liveSession) (*oidcTokens, error) {
	row, err := o.sessions.db.SessionByDigest(ctx, l.digest)
	if store.ErrorCode(err) == store.ENOTFOUND {
		return nil, ErrSignedOut
	}
	if err != nil {
		return nil, fmt.Errorf("%w: read session", ErrIdentityUnavailable)
	}
	data, err := o.sessions.open(l.digest, row.UserID, row.Sealed)
	var t oidcTokens
	if err != nil || json.Unmarshal(data, &t) != nil {
		return nil, ErrSignedOut
	}
	return &t, nil
}

// freshTokens returns the session's tokens with an access token that has
// not expired, refreshing (and storing) them first if needed.
func (o *OIDCIdentity) freshTokens(ctx context.Context, l *liveSession) (*oidcTokens, error) {
	var t oidcTokens
	if err := json.Unmarshal(l.data, &t); err != nil || t.AccessToken == "" {
		return nil, ErrSignedOut
	}
	if !o.expired(&t) {
		return &t, nil
	}
	mu := o.refreshLock(l.digest)
	mu.Lock()
	defer mu.Unlock()
	// Another request may have refreshed meanwhile: read the row again.
	stored, err := o.storedTokens(ctx, l)
	if err != nil {
		return nil, err
	}
	if t = *stored; !o.expired(&t) {
		return &t, nil
	}
	if t.RefreshToken == "" {
		// rule: without a refresh token the session ends with its access
		// token (docs/DEPLOY.md#openid-connect).
		_ = o.sessions.endDigest(ctx, l.digest)
		return nil, ErrSignedOut
	}
	oc, _, _, err := o.current()
	if err != nil {
		return nil, err
	}
	hctx := context.WithValue(ctx, oauth2.HTTPClient, o.hc)
	// An empty access token makes the token source refresh at once.
	tok, err := oc.TokenSource(hctx, &oauth2.Token{RefreshToken: t.RefreshToken}).Token()
	if err != nil {
		if re, ok := errors.AsType[*oauth2.RetrieveError](err); ok && re.ErrorCode == "invalid_grant" {
			// rule: when the provider refuses the refresh token (revoked,
			// expired, the person disabled) the person is signed out
			// (docs/ARCHITECTURE.md#identity). Any other answer, a 5xx
			// included, is the provider failing, not a refusal.
			_ = o.sessions.endDigest(ctx, l.digest)
			return nil, ErrSignedOut
		}
		return nil, fmt.Errorf("%w: token refresh failed", ErrIdentityUnavailable)
	}
	t.AccessToken, t.Expiry = tok.AccessToken, tokenExpiry(tok, o.now())
	if tok.RefreshToken != "" {
		t.RefreshToken = tok.RefreshToken
	}
	data, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	if err := o.sessions.update(ctx, l, data); err != nil {
		if errors.Is(err, ErrSignedOut) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: store refreshed tokens", ErrIdentityUnavailable)
	}
	return &t, nil
}

func (o *OIDCIdentity) refreshLock(digest []byte) *sync.Mutex {
	return &o.refreshing[int(digest[0])%len(o.refreshing)]
}

// fetchUserinfo asks the userinfo endpoint with the access token and
// returns its claims (for a 200) and the status.
func (o *OIDCIdentity) fetchUserinfo(ctx context.Context, endpoint, accessToken string) (map[string]json.RawMessage, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+accessToken)
	req.Header.Set("Accept", "application/json")
	resp, err := o.hc.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, oidcMaxBody))
	if err != nil {
		return nil, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode, nil
	}
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/jwt") {
		// A signed userinfo answer is not supported: admit asks for JSON.
		return nil, 0, errors.New("signed userinfo")
	}
	var claims map[string]json.RawMessage
	if err := json.Unmarshal(body, &claims); err != nil {
		return nil, 0, err
	}
	return claims, resp.StatusCode, nil
}

// SignOut implements Identity: the session's row is deleted; when the
// provider advertises end_session_endpoint, the browser goes on to sign
// out there (RP-initiated logout) and comes back to the start page.
func (o *OIDCIdentity) SignOut(w http.ResponseWriter, r *http.Request, p *Principal) (string, error) {
	if err := o.sessions.end(w, r); err != nil {
		return "", err
	}
	o.mu.RLock()
	end := o.endSession
	o.mu.RUnlock()
	if p == nil || end == "" {
		return "", nil
	}
	u, err := url.Parse(end)
	if err != nil {
		return "", nil
	}
	q := u.Query()
	// client_id, not id_token_hint: no token ever goes in a URL.
	q.Set("client_id", o.cfg.ClientID)
	q.Set("post_logout_redirect_uri", o.cfg.PostLogoutURL)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// SignOutEverywhere implements Identity: every admit session of the user
// ends. The sessions at the provider are the provider's to end.
func (o *OIDCIdentity) SignOutEverywhere(w http.ResponseWriter, r *http.Request, p *Principal) error {
	if p == nil {
		return errors.New("sign out everywhere: no principal")
	}
	return o.sessions.endAll(w, r, p.UserID)
}
