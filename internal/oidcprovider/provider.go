// Package oidcprovider is a real OpenID Provider for tests: zitadel/oidc's
// op package on a loopback port, over an in-memory storage written here. A
// sign-in at it completes at once as the user the test chose, so a test
// (or headless Chromium) follows the whole authorization code flow with
// PKCE through redirects. Switches break it in the ways a provider can go
// wrong: down, tokens for another audience, a wrong nonce, a bad
// signature, short-lived ID tokens, refresh tokens revoked, a person
// disabled. StartShaped makes it behave as a product documents it behaves
// (issuer and endpoint paths, discovery, when refresh tokens are given),
// for the provider sections of docs/DEPLOY.md.
//
// It is test-only: import it from _test.go files only, so it never ships
// in the binary.
package oidcprovider

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/text/language"
)

// User is the person a sign-in at the provider completes as.
type User struct {
	Sub   string
	Email string
	// EmailVerified is the email_verified claim; nil leaves it out (as
	// Entra ID does).
	EmailVerified *bool
}

// Verified and Unverified are the values of User.EmailVerified.
var (
	Verified   = ptr(true)
	Unverified = ptr(false)
)

func ptr[T any](v T) *T { return &v }

// Shape makes the provider look, from outside, as a product does: where
// its issuer and endpoints live, what its discovery document advertises,
// and when it gives a refresh token. The zero Shape is a plain provider at
// the server's root that follows OpenID Connect Core to the letter.
type Shape struct {
	// IssuerPath is the issuer's path after the host, exactly as the
	// product states it ("/realms/admit", "/application/o/admit/").
	IssuerPath string
	// Paths are the endpoints' paths on the host; empty ones default to
	// /authorize, /token, /userinfo, /revoke, /end_session and /keys.
	Paths Paths
	// NoEndSession leaves end_session_endpoint out of discovery.
	NoEndSession bool
	// ScopesSupported, when set, replaces discovery's scopes_supported.
	ScopesSupported []string
	// RefuseScopes are scopes the authorization endpoint refuses with a
	// 400 invalid_scope page, as Google refuses offline_access.
	RefuseScopes []string
	// Refresh says when a sign-in comes with a refresh token.
	Refresh RefreshPolicy
	// DiscoveryIssuerPath, when set, is the issuer path the discovery
	// document states instead of IssuerPath (Entra ID's multi-tenant
	// endpoints state a "{tenantid}" template).
	DiscoveryIssuerPath string
}

// Paths are a provider's endpoint paths.
type Paths struct {
	Authorize, Token, Userinfo, Revoke, EndSession, Keys string
}

// RefreshPolicy is when a provider issues a refresh token.
type RefreshPolicy int

const (
	// RefreshWithOfflineAccess: only when the offline_access scope was
	// granted (OpenID Connect Core §11; Zitadel, Entra ID, Authentik).
	RefreshWithOfflineAccess RefreshPolicy = iota
	// RefreshAlways: with every code exchange (Keycloak's default).
	RefreshAlways
	// RefreshWithAccessTypeOffline: only when the authorization request
	// carried access_type=offline, and then only at the person's first
	// consent to the client or with prompt=consent (Google).
	RefreshWithAccessTypeOffline
)

func (ps Paths) withDefaults() Paths {
	def := func(v, d string) string {
		if v == "" {
			return d
		}
		return v
	}
	return Paths{Authorize: def(ps.Authorize, "/authorize"), Token: def(ps.Token, "/token"),
		Userinfo: def(ps.Userinfo, "/userinfo"), Revoke: def(ps.Revoke, "/revoke"),
		EndSession: def(ps.EndSession, "/end_session"), Keys: def(ps.Keys, "/keys")}
}

// Provider is a running OpenID Provider. It is safe for concurrent use.
type Provider struct {
	// Issuer is the provider's issuer URL (http://127.0.0.1:PORT).
	Issuer       string
	ClientID     string
	ClientSecret string

	srv   *httptest.Server
	st    *storage
	shape Shape
	down  atomic.Bool
	// dropUserinfo makes the userinfo endpoint close the connection
	// without an answer: a connection error, not an HTTP status.
	dropUserinfo atomic.Bool
	// calls counts every request to the provider; userinfoCalls and
	// endSessions count requests to those endpoints.
	calls, userinfoCalls, endSessions atomic.Int64
	// tokenStatus, when not 0, is the status the token endpoint answers
	// every request with (SetTokenEndpointStatus).
	tokenStatus atomic.Int32
	// tamper, when set, rewrites the claims of the ID tokens the token
	// endpoint answers with, re-signed with the published key.
	tamper atomic.Pointer[func(map[string]any)]
}

// Start runs a provider on 127.0.0.1 until the test ends. redirectURIs
// are admit's /auth/callback URL(s) and post-logout URL(s); AllowRedirect
// adds more once admit's port is known.
func Start(tb testing.TB) *Provider { return StartShaped(tb, Shape{}) }

// StartShaped runs a provider shaped as a product (see Shape) on
// 127.0.0.1 until the test ends.
func StartShaped(tb testing.TB, shape Shape) *Provider {
	tb.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		tb.Fatal(err)
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		tb.Fatal(err)
	}
	shape.Paths = shape.Paths.withDefaults()
	p := &Provider{ClientID: "admit-test", ClientSecret: randomHex(16), shape: shape}
	p.st = &storage{
		requests: map[string]*authRequest{}, codes: map[string]string{},
		tokens: map[string]*token{}, refresh: map[string]*refreshToken{},
		key: key, otherKey: other, kid: "k-" + randomHex(4),
		client:     &client{id: p.ClientID, secret: p.ClientSecret, idLife: time.Hour},
		user:       User{Sub: "sub-default", Email: "person@example.test", EmailVerified: Verified},
		accessLife: time.Hour, refreshPolicy: shape.Refresh,
		accessType: map[string]string{}, consented: map[string]bool{},
	}
	mux := http.NewServeMux()
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.calls.Add(1)
		if p.down.Load() {
			http.Error(w, "provider down", http.StatusServiceUnavailable)
			return
		}
		p.front(w, r, mux)
	}))
	p.srv.Start()
	tb.Cleanup(p.srv.Close)
	p.Issuer = p.srv.URL + shape.IssuerPath

	var cryptoKey [32]byte
	copy(cryptoKey[:], randomBytes(32))
	at := func(path string) *op.Endpoint { return op.NewEndpointWithURL(internalPath(path), p.srv.URL+path) }
	ps := shape.Paths
	provider, err := op.NewProvider(&op.Config{
		CryptoKey:                cryptoKey,
		DefaultLogoutRedirectURI: "/logged-out",
		CodeMethodS256:           true,
		AuthMethodPost:           true,
		GrantTypeRefreshToken:    true,
		SupportedUILocales:       []language.Tag{language.English},
	}, p.st, op.StaticIssuer(p.Issuer), op.WithAllowInsecure(),
		op.WithCustomEndpoints(at(ps.Authorize), at(ps.Token), at(ps.Userinfo), at(ps.Revoke), at(ps.EndSession), at(ps.Keys)))
	if err != nil {
		tb.Fatal(err)
	}
	interceptor := op.NewIssuerInterceptor(provider.IssuerFromRequest)
	callback := op.AuthCallbackURL(provider)
	// The login page: it completes the sign-in at once as the chosen user.
	mux.Handle("/login", interceptor.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("id")
		if err := p.st.completeLogin(id); err != nil {
			http.Error(w, "unknown sign-in", http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, callback(r.Context(), id), http.StatusFound)
	}))
	mux.HandleFunc("/logged-out", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("signed out")) })
	mux.Handle("/", provider)
	return p
}

// internalPath is where the op routes an endpoint the product serves at
// path: without a trailing slash (Authentik's paths have one).
func internalPath(path string) string {
	if len(path) > 1 {
		return strings.TrimSuffix(path, "/")
	}
	return path
}

// discoveryPath is where the product serves its discovery document.
func (p *Provider) discoveryPath() string {
	return strings.TrimSuffix(p.shape.IssuerPath, "/") + "/.well-known/openid-configuration"
}

// front answers a request as the product would before handing it to the
// op: discovery at the issuer's path, refused scopes, what the
// authorization request asked for, and the counters and switches.
func (p *Provider) front(w http.ResponseWriter, r *http.Request, mux http.Handler) {
	public := r.URL.Path
	if a := p.shape.Paths.Authorize; public == a+"callback" || public == a+"/callback" {
		// The op's own login callback, under an authorization path with a
		// trailing slash.
		r.URL.Path = internalPath(a) + "/callback"
	} else {
		r.URL.Path = internalPath(public)
	}
	switch public {
	case p.discoveryPath():
		r.URL.Path = "/.well-known/openid-configuration"
		p.serveDiscovery(w, r, mux)
		return
	case "/.well-known/openid-configuration":
		http.NotFound(w, r) // the issuer has a path: nothing at the root
		return
	case p.shape.Paths.Authorize:
		q := r.URL.Query()
		for _, sc := range strings.Fields(q.Get("scope")) {
			if slices.Contains(p.shape.RefuseScopes, sc) {
				http.Error(w, "Error 400: invalid_scope", http.StatusBadRequest)
				return
			}
		}
		p.st.set(func(s *storage) { s.accessType[q.Get("state")] = q.Get("access_type") })
	case p.shape.Paths.Userinfo:
		p.userinfoCalls.Add(1)
		if p.dropUserinfo.Load() {
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
				return
			}
		}
	case p.shape.Paths.EndSession:
		p.endSessions.Add(1)
	case p.shape.Paths.Token:
		if status := p.tokenStatus.Load(); status != 0 {
			// As a product's token endpoint failing answers: an OAuth
			// error body with the status.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(int(status))
			w.Write([]byte(`{"error":"server_error","error_description":"the token endpoint failed"}`))
			return
		}
		if f := p.tamper.Load(); f != nil {
			p.serveTampered(w, r, mux, *f)
			return
		}
	}
	mux.ServeHTTP(w, r)
}

// serveDiscovery answers the op's discovery document as the shape says:
// without end_session_endpoint, with its own scopes_supported.
func (p *Provider) serveDiscovery(w http.ResponseWriter, r *http.Request, h http.Handler) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	var doc map[string]any
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &doc) != nil {
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
		return
	}
	if p.shape.NoEndSession {
		delete(doc, "end_session_endpoint")
	}
	if p.shape.ScopesSupported != nil {
		doc["scopes_supported"] = p.shape.ScopesSupported
	}
	if p.shape.DiscoveryIssuerPath != "" {
		doc["issuer"] = p.srv.URL + p.shape.DiscoveryIssuerPath
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(doc)
}

// AllowRedirect registers admit's callback and post-logout URLs.
func (p *Provider) AllowRedirect(callback, postLogout string) {
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	p.st.client.redirects = append(p.st.client.redirects, callback)
	p.st.client.postLogout = append(p.st.client.postLogout, postLogout)
}

// SetUser chooses who the next sign-ins complete as; userinfo answers for
// every token of that sub with these claims from now on.
func (p *Provider) SetUser(u User) {
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	p.st.user = u
	if p.st.users == nil {
		p.st.users = map[string]User{}
	}
	p.st.users[u.Sub] = u
}

// SetDown makes every endpoint answer 503 (true) or work again (false).
func (p *Provider) SetDown(down bool) { p.down.Store(down) }

// SetTokenEndpointStatus makes the token endpoint answer every request,
// code exchanges and refreshes alike, with status and an OAuth error body
// (status 0: answer normally again). The other endpoints keep working.
func (p *Provider) SetTokenEndpointStatus(status int) { p.tokenStatus.Store(int32(status)) }

// SetUserinfoUnreachable makes the userinfo endpoint drop each connection
// without answering (true), as an unreachable provider does, or answer
// again (false).
func (p *Provider) SetUserinfoUnreachable(on bool) { p.dropUserinfo.Store(on) }

// SetUserinfoSubject makes userinfo answer about the subject sub, whoever
// the access token belongs to ("" answers for the token's own subject
// again): a provider that mixes people up.
func (p *Provider) SetUserinfoSubject(sub string) { p.st.set(func(s *storage) { s.userinfoSub = sub }) }

// SetIDTokenClaims rewrites the claims of every ID token the token
// endpoint answers with from now on (nil stops), and signs the result with
// the provider's published key: a token that verifies but says what the
// test wants.
func (p *Provider) SetIDTokenClaims(f func(claims map[string]any)) {
	if f == nil {
		p.tamper.Store(nil)
		return
	}
	p.tamper.Store(&f)
}

// serveTampered answers a token request through the provider, then
// rewrites the ID token in its answer.
func (p *Provider) serveTampered(w http.ResponseWriter, r *http.Request, h http.Handler, f func(map[string]any)) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	var body map[string]any
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &body) != nil {
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
		return
	}
	raw, _ := body["id_token"].(string)
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		http.Error(w, "no id_token", http.StatusInternalServerError)
		return
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	var claims map[string]any
	if err != nil || json.Unmarshal(payload, &claims) != nil {
		http.Error(w, "bad id_token", http.StatusInternalServerError)
		return
	}
	f(claims)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: p.st.key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", p.st.kid))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	out, _ := json.Marshal(claims)
	jws, err := signer.Sign(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	body["id_token"], _ = jws.CompactSerialize()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(body)
}

// SetWrongAudience makes new ID tokens name another client.
func (p *Provider) SetWrongAudience(on bool) { p.st.set(func(s *storage) { s.wrongAud = on }) }

// SetWrongNonce makes new ID tokens carry a nonce admit did not send.
func (p *Provider) SetWrongNonce(on bool) { p.st.set(func(s *storage) { s.wrongNonce = on }) }

// SetBadSignature signs new tokens with a key the JWKS does not publish
// (under the published key's kid).
func (p *Provider) SetBadSignature(on bool) { p.st.set(func(s *storage) { s.badSig = on }) }

// SetIDTokenLifetime sets how long new ID tokens live.
func (p *Provider) SetIDTokenLifetime(d time.Duration) {
	p.st.set(func(s *storage) { s.client.idLife = d })
}

// RevokeRefreshTokens revokes every refresh token issued so far.
func (p *Provider) RevokeRefreshTokens() {
	p.st.set(func(s *storage) { clear(s.refresh) })
}

// RevokeAccessTokens revokes every access token issued so far: userinfo
// refuses them (401).
func (p *Provider) RevokeAccessTokens() {
	p.st.set(func(s *storage) { clear(s.tokens) })
}

// DisableUser disables the person sub, as an administrator disabling or
// deleting an account does: their refresh tokens are refused
// (invalid_grant) and userinfo refuses their access tokens (401).
func (p *Provider) DisableUser(sub string) {
	p.st.set(func(s *storage) {
		if s.disabled == nil {
			s.disabled = map[string]bool{}
		}
		s.disabled[sub] = true
	})
}

// Calls counts every request made to the provider, answered or not.
func (p *Provider) Calls() int64 { return p.calls.Load() }

// UserinfoCalls counts requests to the userinfo endpoint.
func (p *Provider) UserinfoCalls() int64 { return p.userinfoCalls.Load() }

// EndSessions counts requests to the end-session (logout) endpoint.
func (p *Provider) EndSessions() int64 { return p.endSessions.Load() }

// Refreshes counts refresh-token grants.
func (p *Provider) Refreshes() int64 {
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	return p.st.refreshes
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return b
}

func randomHex(n int) string { return hex.EncodeToString(randomBytes(n)) }

// storage is the provider's in-memory op.Storage.
type storage struct {
	mu       sync.Mutex
	requests map[string]*authRequest
	codes    map[string]string // code → request ID
	tokens   map[string]*token
	refresh  map[string]*refreshToken
	key      *rsa.PrivateKey
	otherKey *rsa.PrivateKey
	kid      string
	client   *client
	user     User
	users    map[string]User
	// userinfoSub, when set, is the subject userinfo answers about.
	userinfoSub string
	accessLife  time.Duration
	refreshes   int64
	disabled    map[string]bool
	// refreshPolicy is the shape's; accessType is each authorization
	// request's access_type, by state; consented is who has given the
	// client an offline grant (RefreshWithAccessTypeOffline).
	refreshPolicy RefreshPolicy
	accessType    map[string]string
	consented     map[string]bool

	wrongAud, wrongNonce, badSig bool
}

var _ op.Storage = (*storage)(nil)

func (s *storage) set(f func(*storage)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

var errNotFound = errors.New("not found")

func (s *storage) completeLogin(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	req, ok := s.requests[id]
	if !ok {
		return errNotFound
	}
	if s.users == nil {
		s.users = map[string]User{}
	}
	s.users[s.user.Sub] = s.user
	req.subject, req.done, req.authTime = s.user.Sub, true, time.Now()
	req.scopes = s.grantedScopes(req)
	if s.wrongNonce {
		req.nonce = "not-the-nonce-admit-sent"
	}
	if s.wrongAud {
		req.audience = []string{"some-other-client"}
	}
	return nil
}

// grantedScopes are the scopes a completed sign-in grants: the op issues
// a refresh token exactly when offline_access is among them, so the
// refresh policy adds or removes it. s.mu is held.
func (s *storage) grantedScopes(req *authRequest) []string {
	scopes := slices.DeleteFunc(slices.Clone(req.scopes), func(sc string) bool { return sc == oidc.ScopeOfflineAccess })
	offline := slices.Contains(req.scopes, oidc.ScopeOfflineAccess)
	switch s.refreshPolicy {
	case RefreshAlways:
		offline = true
	case RefreshWithAccessTypeOffline:
		offline = req.accessType == "offline" && (slices.Contains(req.prompt, "consent") || !s.consented[req.subject])
		if offline {
			s.consented[req.subject] = true
		}
	}
	if offline {
		scopes = append(scopes, oidc.ScopeOfflineAccess)
	}
	return scopes
}

func (s *storage) CreateAuthRequest(_ context.Context, r *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	req := &authRequest{id: randomHex(12), clientID: r.ClientID, redirect: r.RedirectURI, state: r.State,
		nonce: r.Nonce, scopes: r.Scopes, responseType: r.ResponseType, responseMode: r.ResponseMode,
		audience: []string{r.ClientID}, prompt: r.Prompt, accessType: s.accessType[r.State]}
	delete(s.accessType, r.State)
	if r.CodeChallenge != "" {
		req.challenge = &oidc.CodeChallenge{Challenge: r.CodeChallenge, Method: r.CodeChallengeMethod}
	}
	s.requests[req.id] = req
	return req, nil
}

func (s *storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.requests[id]; ok {
		return r, nil
	}
	return nil, errNotFound
}

func (s *storage) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	s.mu.Lock()
	id, ok := s.codes[code]
	s.mu.Unlock()
	if !ok {
		return nil, errNotFound
	}
	return s.AuthRequestByID(ctx, id)
}

func (s *storage) SaveAuthCode(_ context.Context, id, code string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes[code] = id
	return nil
}

// DeleteAuthRequest is called once a code has been exchanged: the code
// is gone, so a replay is refused.
func (s *storage) DeleteAuthRequest(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.requests, id)
	for code, rid := range s.codes {
		if rid == id {
			delete(s.codes, code)
		}
	}
	return nil
}

func (s *storage) newToken(clientID, subject string, audience, scopes []string) *token {
	t := &token{id: randomHex(16), clientID: clientID, subject: subject, audience: audience, scopes: scopes,
		expires: time.Now().Add(s.accessLife)}
	s.tokens[t.id] = t
	return t
}

func (s *storage) CreateAccessToken(_ context.Context, r op.TokenRequest) (string, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.newToken(s.client.id, r.GetSubject(), r.GetAudience(), r.GetScopes())
	return t.id, t.expires, nil
}

func (s *storage) CreateAccessAndRefreshTokens(_ context.Context, r op.TokenRequest, current string) (string, string, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if current != "" {
		if _, ok := s.refresh[current]; !ok {
			return "", "", time.Time{}, op.ErrInvalidRefreshToken
		}
		delete(s.refresh, current) // rotated: each refresh token works once
		s.refreshes++
	}
	t := s.newToken(s.client.id, r.GetSubject(), r.GetAudience(), r.GetScopes())
	rt := &refreshToken{id: randomHex(16), subject: r.GetSubject(), audience: r.GetAudience(), scopes: r.GetScopes(),
		authTime: time.Now(), amr: []string{"pwd"}, clientID: s.client.id}
	s.refresh[rt.id] = rt
	return t.id, rt.id, t.expires, nil
}

func (s *storage) TokenRequestByRefreshToken(_ context.Context, rt string) (op.RefreshTokenRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.refresh[rt]; ok && !s.disabled[t.subject] {
		return t, nil
	}
	return nil, op.ErrInvalidRefreshToken
}

func (s *storage) TerminateSession(context.Context, string, string) error { return nil }

func (s *storage) RevokeToken(_ context.Context, id, _, _ string) *oidc.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tokens, id)
	delete(s.refresh, id)
	return nil
}

func (s *storage) GetRefreshTokenInfo(_ context.Context, _, rt string) (string, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.refresh[rt]; ok {
		return t.subject, t.id, nil
	}
	return "", "", op.ErrInvalidRefreshToken
}

func (s *storage) SigningKey(context.Context) (op.SigningKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.key
	if s.badSig {
		k = s.otherKey
	}
	return &signingKey{id: s.kid, key: k}, nil
}

func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *storage) KeySet(context.Context) ([]op.Key, error) {
	return []op.Key{&publicKey{id: s.kid, key: &s.key.PublicKey}}, nil
}

func (s *storage) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id != s.client.id {
		return nil, errNotFound
	}
	c := *s.client
	c.redirects, c.postLogout = slices.Clone(c.redirects), slices.Clone(c.postLogout)
	return &c, nil
}

func (s *storage) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	if id != s.client.id || secret != s.client.secret {
		return errors.New("invalid client")
	}
	return nil
}

// setUserinfo fills the claims of sub: email and email_verified as the
// test chose.
func (s *storage) setUserinfo(u *oidc.UserInfo, sub string, scopes []string) {
	s.mu.Lock()
	user, ok := s.users[sub]
	s.mu.Unlock()
	u.Subject = sub
	if !ok || !slices.Contains(scopes, oidc.ScopeEmail) {
		return
	}
	u.Email = user.Email
	if user.EmailVerified != nil {
		u.AppendClaims("email_verified", *user.EmailVerified)
	}
}

// SetUserinfoFromScopes fills the ID token's user claims: the subject
// (the op copies the whole userinfo over the ID token's claims).
func (s *storage) SetUserinfoFromScopes(_ context.Context, u *oidc.UserInfo, userID, _ string, _ []string) error {
	u.Subject = userID
	return nil
}

func (s *storage) SetUserinfoFromToken(_ context.Context, u *oidc.UserInfo, tokenID, _, _ string) error {
	s.mu.Lock()
	t, ok := s.tokens[tokenID]
	disabled := ok && s.disabled[t.subject]
	s.mu.Unlock()
	if !ok || disabled || time.Now().After(t.expires) {
		return errors.New("token is invalid or has expired")
	}
	s.setUserinfo(u, t.subject, t.scopes)
	s.mu.Lock()
	if s.userinfoSub != "" {
		u.Subject = s.userinfoSub
	}
	s.mu.Unlock()
	return nil
}

func (s *storage) SetIntrospectionFromToken(context.Context, *oidc.IntrospectionResponse, string, string, string) error {
	return errors.New("introspection is not supported")
}

func (s *storage) GetPrivateClaimsFromScopes(context.Context, string, string, []string) (map[string]any, error) {
	return nil, nil
}

func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errNotFound
}

func (s *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, errors.New("JWT profile is not supported")
}

func (s *storage) Health(context.Context) error { return nil }

// authRequest is one authorization request.
type authRequest struct {
	id, clientID, redirect, state, nonce, subject string
	accessType                                    string
	scopes, prompt                                []string
	audience                                      []string
	responseType                                  oidc.ResponseType
	responseMode                                  oidc.ResponseMode
	challenge                                     *oidc.CodeChallenge
	done                                          bool
	authTime                                      time.Time
}

func (a *authRequest) GetID() string                         { return a.id }
func (a *authRequest) GetACR() string                        { return "" }
func (a *authRequest) GetAMR() []string                      { return []string{"pwd"} }
func (a *authRequest) GetAudience() []string                 { return a.audience }
func (a *authRequest) GetAuthTime() time.Time                { return a.authTime }
func (a *authRequest) GetClientID() string                   { return a.clientID }
func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge { return a.challenge }
func (a *authRequest) GetNonce() string                      { return a.nonce }
func (a *authRequest) GetRedirectURI() string                { return a.redirect }
func (a *authRequest) GetResponseType() oidc.ResponseType    { return a.responseType }
func (a *authRequest) GetResponseMode() oidc.ResponseMode    { return a.responseMode }
func (a *authRequest) GetScopes() []string                   { return a.scopes }
func (a *authRequest) GetState() string                      { return a.state }
func (a *authRequest) GetSubject() string                    { return a.subject }
func (a *authRequest) Done() bool                            { return a.done }

type token struct {
	id, clientID, subject string
	audience, scopes      []string
	expires               time.Time
}

type refreshToken struct {
	id, subject, clientID string
	audience, scopes, amr []string
	authTime              time.Time
}

func (r *refreshToken) GetAMR() []string                 { return r.amr }
func (r *refreshToken) GetAudience() []string            { return r.audience }
func (r *refreshToken) GetAuthTime() time.Time           { return r.authTime }
func (r *refreshToken) GetClientID() string              { return r.clientID }
func (r *refreshToken) GetScopes() []string              { return r.scopes }
func (r *refreshToken) GetSubject() string               { return r.subject }
func (r *refreshToken) SetCurrentScopes(scopes []string) { r.scopes = scopes }

type signingKey struct {
	id  string
	key *rsa.PrivateKey
}

func (k *signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k *signingKey) Key() any                                    { return k.key }
func (k *signingKey) ID() string                                  { return k.id }

type publicKey struct {
	id  string
	key *rsa.PublicKey
}

func (k *publicKey) ID() string                         { return k.id }
func (k *publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k *publicKey) Use() string                        { return "sig" }
func (k *publicKey) Key() any                           { return k.key }

// client is admit's registration at the provider: a confidential web
// client with the code flow and refresh tokens.
type client struct {
	id, secret            string
	redirects, postLogout []string
	idLife                time.Duration
}

func (c *client) GetID() string                       { return c.id }
func (c *client) RedirectURIs() []string              { return c.redirects }
func (c *client) PostLogoutRedirectURIs() []string    { return c.postLogout }
func (c *client) ApplicationType() op.ApplicationType { return op.ApplicationTypeWeb }
func (c *client) AuthMethod() oidc.AuthMethod         { return oidc.AuthMethodBasic }
func (c *client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c *client) LoginURL(id string) string            { return "/login?id=" + id }
func (c *client) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeBearer }
func (c *client) IDTokenLifetime() time.Duration       { return c.idLife }
func (c *client) DevMode() bool                        { return true }
func (c *client) IsScopeAllowed(string) bool           { return false }
func (c *client) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c *client) ClockSkew() time.Duration             { return 0 }
func (c *client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeCode, oidc.GrantTypeRefreshToken}
}

// SubjectDigest is a short stable label for a subject, for test names.
func SubjectDigest(sub string) string {
	s := sha256.Sum256([]byte(sub))
	return hex.EncodeToString(s[:4])
}
