// Package clerkfake is a fake Clerk Backend API for tests: it serves the
// JWKS and user lookups on loopback and mints RS256 session tokens (and
// deliberately broken ones) that the real Clerk SDK verifies.
//
// It is test-only: import it from _test.go files only, so it never ships
// in the binary.
package clerkfake

import (
	"crypto"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// DefaultIssuer is the iss the fake puts in session tokens.
const DefaultIssuer = "https://clerk.admit.test"

// DefaultAuthorizedParty is the azp the fake puts in session tokens until
// SetAuthorizedParty changes it.
const DefaultAuthorizedParty = "https://app.admit.test"

// Email is one address on a fake user.
type Email struct {
	// Address is the email address.
	Address string
	// Verified sets verification.status to "verified" (else "unverified").
	Verified bool
}

// Signer produces the signature bytes for a JWT signing input
// (base64url(header) "." base64url(payload)).
type Signer func(signingInput []byte) []byte

// Fake is a fake Clerk Backend API on a loopback httptest server. It is
// safe for concurrent use.
type Fake struct {
	tb     testing.TB
	srv    *httptest.Server
	secret string

	mu          sync.Mutex
	key         *rsa.PrivateKey
	kid         string
	users       map[string][]Email
	down        bool
	drop        bool
	delay       time.Duration
	azp         string
	now         func() time.Time
	jwksFetches int
	userFetches int
	// sessions maps each minted sid to its user; revoked marks the ones
	// revoked through the API.
	sessions map[string]string
	revoked  map[string]bool
}

// New starts a fake with a fresh RSA key and secret key, closed at the end
// of the test.
func New(tb testing.TB) *Fake {
	tb.Helper()
	f := &Fake{
		tb:     tb,
		secret: "sk_test_" + randomHex(16),
		key:    MustRSAKey(tb),
		kid:    "ins_" + randomHex(8),
		users:  map[string][]Email{},
		azp:    DefaultAuthorizedParty,
		now:    time.Now,

		sessions: map[string]string{},
		revoked:  map[string]bool{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/jwks", f.serveJWKS)
	mux.HandleFunc("GET /v1/users/{id}", f.serveUser)
	mux.HandleFunc("GET /v1/sessions", f.serveSessions)
	mux.HandleFunc("POST /v1/sessions/{id}/revoke", f.serveRevoke)
	f.srv = httptest.NewServer(mux) // listens on 127.0.0.1
	tb.Cleanup(f.srv.Close)
	return f
}

// URL is the Backend API base URL, ending in /v1 as the SDK expects.
func (f *Fake) URL() string { return f.srv.URL + "/v1" }

// SecretKey is the secret key the fake requires as a Bearer token.
func (f *Fake) SecretKey() string { return f.secret }

// Issuer is the iss of minted session tokens.
func (f *Fake) Issuer() string { return DefaultIssuer }

// AuthorizedParty is the azp of minted session tokens.
func (f *Fake) AuthorizedParty() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.azp
}

// SetAuthorizedParty changes the azp of session tokens minted from now on
// (e.g. to the URL of a server started on :0).
func (f *Fake) SetAuthorizedParty(azp string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.azp = azp
}

// SetClock sets the clock used for exp, nbf and iat in Claims and Session.
func (f *Fake) SetClock(now func() time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = now
}

// KeyID is the kid of the current signing key.
func (f *Fake) KeyID() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.kid
}

// RotateKey replaces the signing key with a new key and kid. The JWKS then
// publishes only the new key.
func (f *Fake) RotateKey() {
	key := MustRSAKey(f.tb)
	kid := "ins_" + randomHex(8)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.key, f.kid = key, kid
}

// PublicKeyPEM is the current public key as a PKIX "PUBLIC KEY" PEM block,
// the bytes an HS256 key-confusion attack uses as the HMAC secret.
func (f *Fake) PublicKeyPEM() []byte {
	f.mu.Lock()
	pub := &f.key.PublicKey
	f.mu.Unlock()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		f.tb.Fatalf("clerkfake: marshal public key: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// SetUser creates or replaces a user with the given addresses, in order;
// the first becomes the primary address.
func (f *Fake) SetUser(id string, emails ...Email) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.users[id] = append([]Email(nil), emails...)
}

// RemoveUser deletes a user; looking it up then answers 404.
func (f *Fake) RemoveUser(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.users, id)
}

// SetDown makes every endpoint answer 503 (true) or serve normally (false).
func (f *Fake) SetDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
}

// SetDropConnections makes every endpoint close the connection without an
// answer (true) or serve normally (false).
func (f *Fake) SetDropConnections(drop bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drop = drop
}

// SetDelay delays every answer by d (or until the client gives up), to
// exercise client timeouts.
func (f *Fake) SetDelay(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.delay = d
}

// JWKSFetches counts requests to GET /v1/jwks, including failed ones.
func (f *Fake) JWKSFetches() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.jwksFetches
}

// UserFetches counts requests to GET /v1/users/{id}, including failed ones.
func (f *Fake) UserFetches() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.userFetches
}

// Header is the JOSE header of a valid token: alg RS256, typ JWT and the
// current kid. The map is a fresh copy, free to modify.
func (f *Fake) Header() map[string]any {
	return map[string]any{"alg": "RS256", "typ": "JWT", "kid": f.KeyID()}
}

// Claims are the claims of a valid session token for userID: iss, sub, a
// fresh sid, azp, exp now+60s, nbf and iat now-5s. The map is a fresh copy,
// free to modify.
func (f *Fake) Claims(userID string) map[string]any {
	sid := "sess_" + randomHex(8)
	f.mu.Lock()
	now, azp := f.now(), f.azp
	f.sessions[sid] = userID
	f.mu.Unlock()
	return map[string]any{
		"iss": DefaultIssuer,
		"sub": userID,
		"sid": sid,
		"azp": azp,
		"exp": now.Add(60 * time.Second).Unix(),
		"nbf": now.Add(-5 * time.Second).Unix(),
		"iat": now.Add(-5 * time.Second).Unix(),
		"v":   2,
	}
}

// Session mints a valid session token for userID, after applying mods to
// its claims (e.g. delete(c, "sid")).
func (f *Fake) Session(userID string, mods ...func(claims map[string]any)) string {
	claims := f.Claims(userID)
	for _, mod := range mods {
		mod(claims)
	}
	return f.Mint(claims)
}

// Mint signs claims with the current key under the standard header.
func (f *Fake) Mint(claims map[string]any) string {
	return f.MintWith(f.Header(), claims, f.Signer())
}

// MintWith builds a compact JWT from any header and claims and signs it
// with sign; nothing is checked, so it builds attack tokens too.
func (f *Fake) MintWith(header, claims map[string]any, sign Signer) string {
	h, err := json.Marshal(header)
	if err != nil {
		f.tb.Fatalf("clerkfake: marshal header: %v", err)
	}
	c, err := json.Marshal(claims)
	if err != nil {
		f.tb.Fatalf("clerkfake: marshal claims: %v", err)
	}
	return MintRaw(h, c, sign)
}

// MintRaw builds a compact JWT from raw header and payload bytes (e.g. a
// header with a duplicated name, which a map cannot express) and signs it
// with sign.
func MintRaw(header, payload []byte, sign Signer) string {
	input := b64(header) + "." + b64(payload)
	return input + "." + b64(sign([]byte(input)))
}

// Signer signs RS256 with the fake's current key.
func (f *Fake) Signer() Signer {
	f.mu.Lock()
	key := f.key
	f.mu.Unlock()
	return RS256(f.tb, key)
}

// RS256 signs with key using RSASSA-PKCS1-v1_5 and SHA-256.
func RS256(tb testing.TB, key *rsa.PrivateKey) Signer {
	return func(input []byte) []byte {
		digest := sha256.Sum256(input)
		sig, err := rsa.SignPKCS1v15(nil, key, crypto.SHA256, digest[:])
		if err != nil {
			tb.Fatalf("clerkfake: sign: %v", err)
		}
		return sig
	}
}

// HS256 signs with HMAC-SHA256 under secret.
func HS256(secret []byte) Signer {
	return func(input []byte) []byte {
		mac := hmac.New(sha256.New, secret)
		mac.Write(input)
		return mac.Sum(nil)
	}
}

// Unsigned produces an empty signature, as for alg "none".
func Unsigned() Signer {
	return func([]byte) []byte { return nil }
}

// MustRSAKey generates a 2048-bit RSA key.
func MustRSAKey(tb testing.TB) *rsa.PrivateKey {
	tb.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		tb.Fatalf("clerkfake: generate key: %v", err)
	}
	return key
}

// answerFailure applies SetDown, SetDropConnections and SetDelay; it
// reports whether the request was fully handled.
func (f *Fake) answerFailure(w http.ResponseWriter, r *http.Request) bool {
	f.mu.Lock()
	down, drop, delay := f.down, f.drop, f.delay
	f.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return true
		}
	}
	if drop {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
			return true
		}
		panic(http.ErrAbortHandler) // closes the connection without an answer
	}
	if down {
		writeError(w, http.StatusServiceUnavailable, "service_unavailable")
		return true
	}
	if r.Header.Get("Authorization") != "Bearer "+f.secret {
		writeError(w, http.StatusUnauthorized, "authentication_invalid")
		return true
	}
	return false
}

func (f *Fake) serveJWKS(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.jwksFetches++
	pub, kid := &f.key.PublicKey, f.kid
	f.mu.Unlock()
	if f.answerFailure(w, r) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"keys": []map[string]any{{
		"use": "sig",
		"kty": "RSA",
		"kid": kid,
		"alg": "RS256",
		"n":   b64(pub.N.Bytes()),
		"e":   b64(big.NewInt(int64(pub.E)).Bytes()),
	}}})
}

// userJSON and emailJSON follow the shapes of clerk.User and
// clerk.EmailAddress.
type userJSON struct {
	Object                string      `json:"object"`
	ID                    string      `json:"id"`
	PrimaryEmailAddressID *string     `json:"primary_email_address_id"`
	EmailAddresses        []emailJSON `json:"email_addresses"`
	PhoneNumbers          []any       `json:"phone_numbers"`
	Web3Wallets           []any       `json:"web3_wallets"`
	ExternalAccounts      []any       `json:"external_accounts"`
	PublicMetadata        any         `json:"public_metadata"`
	CreatedAt             int64       `json:"created_at"`
	UpdatedAt             int64       `json:"updated_at"`
}

type emailJSON struct {
	ID           string           `json:"id"`
	Object       string           `json:"object"`
	EmailAddress string           `json:"email_address"`
	Reserved     bool             `json:"reserved"`
	Verification verificationJSON `json:"verification"`
	LinkedTo     []any            `json:"linked_to"`
}

type verificationJSON struct {
	Status   string `json:"status"`
	Strategy string `json:"strategy"`
	Attempts *int64 `json:"attempts"`
	ExpireAt *int64 `json:"expire_at"`
}

func (f *Fake) serveUser(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	f.mu.Lock()
	f.userFetches++
	emails, ok := f.users[id]
	emails = append([]Email(nil), emails...)
	f.mu.Unlock()
	if f.answerFailure(w, r) {
		return
	}
	if !ok {
		writeError(w, http.StatusNotFound, "resource_not_found")
		return
	}
	u := userJSON{
		Object:           "user",
		ID:               id,
		EmailAddresses:   []emailJSON{},
		PhoneNumbers:     []any{},
		Web3Wallets:      []any{},
		ExternalAccounts: []any{},
		PublicMetadata:   map[string]any{},
		CreatedAt:        1700000000000,
		UpdatedAt:        1700000000000,
	}
	for i, e := range emails {
		status := "unverified"
		if e.Verified {
			status = "verified"
		}
		eid := "idn_" + randomHex(8)
		if i == 0 {
			u.PrimaryEmailAddressID = &eid
		}
		u.EmailAddresses = append(u.EmailAddresses, emailJSON{
			ID:           eid,
			Object:       "email_address",
			EmailAddress: e.Address,
			Verification: verificationJSON{Status: status, Strategy: "email_code"},
			LinkedTo:     []any{},
		})
	}
	writeJSON(w, http.StatusOK, u)
}

// writeError answers in the Clerk API error shape, which the SDK turns into
// a *clerk.APIErrorResponse.
func writeError(w http.ResponseWriter, status int, code string) {
	writeJSON(w, status, map[string]any{
		"errors": []map[string]any{{"code": code, "message": code, "long_message": code}},
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "marshal", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// randomHex returns n random bytes in hex. crypto/rand.Read never fails
// (it crashes the program instead), so it is safe in handler goroutines.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Revoked reports whether the session sid was revoked through the API.
func (f *Fake) Revoked(sid string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.revoked[sid]
}

// sessionJSON follows the shape of clerk.Session.
type sessionJSON struct {
	Object string `json:"object"`
	ID     string `json:"id"`
	UserID string `json:"user_id"`
	Status string `json:"status"`
}

// serveSessions lists the sessions minted for ?user_id= (the active ones
// with ?status=active).
func (f *Fake) serveSessions(w http.ResponseWriter, r *http.Request) {
	if f.answerFailure(w, r) {
		return
	}
	uid, status := r.URL.Query().Get("user_id"), r.URL.Query().Get("status")
	f.mu.Lock()
	list := []sessionJSON{}
	for sid, u := range f.sessions {
		st := "active"
		if f.revoked[sid] {
			st = "revoked"
		}
		if u == uid && (status == "" || status == st) {
			list = append(list, sessionJSON{Object: "session", ID: sid, UserID: u, Status: st})
		}
	}
	f.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"data": list, "total_count": len(list)})
}

// serveRevoke revokes a minted session.
func (f *Fake) serveRevoke(w http.ResponseWriter, r *http.Request) {
	if f.answerFailure(w, r) {
		return
	}
	sid := r.PathValue("id")
	f.mu.Lock()
	u, ok := f.sessions[sid]
	if ok {
		f.revoked[sid] = true
	}
	f.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "resource_not_found")
		return
	}
	writeJSON(w, http.StatusOK, sessionJSON{Object: "session", ID: sid, UserID: u, Status: "revoked"})
}
