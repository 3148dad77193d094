package identity

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"admit/internal/clerkfake"
	"admit/internal/testutil"
)

// clerkEpoch is where each test's clock (shared by the identity and the
// fake) starts.
var clerkEpoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func newClerkTestClock() *testutil.Clock { return testutil.NewClock(clerkEpoch) }

// mustClerkIdentity returns a ClerkIdentity configured for f, reading time
// from clock, which also becomes the fake's clock for minted tokens.
func mustClerkIdentity(tb testing.TB, f *clerkfake.Fake, clock *testutil.Clock) *ClerkIdentity {
	tb.Helper()
	f.SetClock(clock.Now)
	id, err := NewClerkIdentity(ClerkConfig{
		SecretKey:         f.SecretKey(),
		APIURL:            f.URL(),
		Issuer:            f.Issuer(),
		AuthorizedParties: []string{"https://other.admit.test", f.AuthorizedParty()},
		HTTPClient:        &http.Client{Timeout: 2 * time.Second},
		Now:               clock.Now,
		DB:                mustIdentityDB(tb, clock.Now),
	})
	if err != nil {
		tb.Fatalf("NewClerkIdentity: %v", err)
	}
	return id
}

func clerkBearerRequest(token string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/me", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	return r
}

func clerkCookieRequest(token string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/me", nil)
	r.AddCookie(&http.Cookie{Name: "__session", Value: token})
	return r
}

// clerkRejectionReason returns the fixed reason of a rejection, or "" when
// err is not one.
func clerkRejectionReason(err error) string {
	if rej, ok := errors.AsType[*clerkRejection](err); ok {
		return rej.reason
	}
	return ""
}

func clerkB64JSON(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatalf("marshal: %v", err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func TestClerkAuthenticate_AcceptsValidSessionFromBearerOrCookie(t *testing.T) {
	f := clerkfake.New(t)
	clock := newClerkTestClock()
	id := mustClerkIdentity(t, f, clock)

	tests := []struct {
		name string
		req  func(token string) *http.Request
	}{
		{"bearer header", clerkBearerRequest},
		{"lower-case bearer scheme", func(token string) *http.Request {
			r := httptest.NewRequest(http.MethodGet, "/me", nil)
			r.Header.Set("Authorization", "bearer "+token)
			return r
		}},
		{"__session cookie", clerkCookieRequest},
		{"__session cookie beside other cookies", func(token string) *http.Request {
			r := clerkCookieRequest(token)
			r.AddCookie(&http.Cookie{Name: "admit", Value: "x"})
			return r
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claims := f.Claims("user_2valid")
			p, err := id.Authenticate(tt.req(f.Mint(claims)))
			if err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
			if got, want := p.UserID, "user_2valid"; got != want {
				t.Fatalf("UserID=%q, want %q", got, want)
			}
			if got, want := p.SessionID, claims["sid"]; got != want {
				t.Fatalf("SessionID=%q, want %q", got, want)
			}
		})
	}
	if got, want := id.Mode(), ModeClerk; got != want {
		t.Fatalf("Mode()=%v, want %v", got, want)
	}
}

func TestClerkAuthenticate_RejectsEveryInvalidSessionAsSignedOut(t *testing.T) {
	f := clerkfake.New(t)
	otherKey := clerkfake.MustRSAKey(t)
	const uid = "user_2attack"

	// without returns a claims modifier deleting names.
	without := func(names ...string) func(map[string]any) {
		return func(c map[string]any) {
			for _, n := range names {
				delete(c, n)
			}
		}
	}
	set := func(name string, v any) func(map[string]any) {
		return func(c map[string]any) { c[name] = v }
	}
	withHeader := func(mod func(h map[string]any)) func(*clerkfake.Fake, *testutil.Clock) *http.Request {
		return func(f *clerkfake.Fake, _ *testutil.Clock) *http.Request {
			h := f.Header()
			mod(h)
			return clerkBearerRequest(f.MintWith(h, f.Claims(uid), f.Signer()))
		}
	}
	session := func(mods ...func(map[string]any)) func(*clerkfake.Fake, *testutil.Clock) *http.Request {
		return func(f *clerkfake.Fake, _ *testutil.Clock) *http.Request {
			return clerkBearerRequest(f.Session(uid, mods...))
		}
	}

	tests := []struct {
		name       string
		req        func(f *clerkfake.Fake, clock *testutil.Clock) *http.Request
		wantReason string
	}{
		{"no token", func(*clerkfake.Fake, *testutil.Clock) *http.Request {
			return httptest.NewRequest(http.MethodGet, "/me", nil)
		}, clerkReasonNoToken},
		{"empty __session cookie", func(*clerkfake.Fake, *testutil.Clock) *http.Request {
			return clerkCookieRequest("")
		}, clerkReasonNoToken},
		{"empty bearer", func(*clerkfake.Fake, *testutil.Clock) *http.Request {
			return clerkBearerRequest("")
		}, clerkReasonNoToken},
		{"basic auth does not fall through to a valid cookie", func(f *clerkfake.Fake, _ *testutil.Clock) *http.Request {
			r := clerkCookieRequest(f.Session(uid))
			r.SetBasicAuth("admin", "admin")
			return r
		}, clerkReasonAuthScheme},
		{"bearer token without a space", func(f *clerkfake.Fake, _ *testutil.Clock) *http.Request {
			r := httptest.NewRequest(http.MethodGet, "/me", nil)
			r.Header.Set("Authorization", "Bearer"+f.Session(uid))
			return r
		}, clerkReasonAuthScheme},
		{"two authorization headers", func(f *clerkfake.Fake, _ *testutil.Clock) *http.Request {
			r := clerkBearerRequest(f.Session(uid))
			r.Header.Add("Authorization", "Bearer "+f.Session(uid))
			return r
		}, clerkReasonAmbiguous},
		{"two __session cookies", func(f *clerkfake.Fake, _ *testutil.Clock) *http.Request {
			r := clerkCookieRequest(f.Session(uid))
			r.AddCookie(&http.Cookie{Name: "__session", Value: f.Session("user_2other")})
			return r
		}, clerkReasonAmbiguous},
		{"not a JWT", func(*clerkfake.Fake, *testutil.Clock) *http.Request {
			return clerkBearerRequest("not-a-token")
		}, clerkReasonMalformed},
		{"JWS JSON serialization", func(f *clerkfake.Fake, _ *testutil.Clock) *http.Request {
			parts := strings.Split(f.Session(uid), ".")
			js, _ := json.Marshal(map[string]string{"protected": parts[0], "payload": parts[1], "signature": parts[2]})
			return clerkBearerRequest(string(js))
		}, clerkReasonMalformed},
		{"oversized token", func(f *clerkfake.Fake, _ *testutil.Clock) *http.Request {
			return clerkBearerRequest(f.Session(uid, set("pad", strings.Repeat("a", 9000))))
		}, clerkReasonMalformed},
		{"alg none, unsigned", func(f *clerkfake.Fake, _ *testutil.Clock) *http.Request {
			h := f.Header()
			h["alg"] = "none"
			return clerkBearerRequest(f.MintWith(h, f.Claims(uid), clerkfake.Unsigned()))
		}, clerkReasonAlg},
		{"alg none, RS256 signature", withHeader(func(h map[string]any) { h["alg"] = "none" }), clerkReasonAlg},
		{"alg HS256 keyed with the public key PEM", func(f *clerkfake.Fake, _ *testutil.Clock) *http.Request {
			h := f.Header()
			h["alg"] = "HS256"
			return clerkBearerRequest(f.MintWith(h, f.Claims(uid), clerkfake.HS256(f.PublicKeyPEM())))
		}, clerkReasonAlg},
		{"alg RS512", withHeader(func(h map[string]any) { h["alg"] = "RS512" }), clerkReasonAlg},
		{"alg lower-case rs256", withHeader(func(h map[string]any) { h["alg"] = "rs256" }), clerkReasonAlg},
		{"alg missing", withHeader(func(h map[string]any) { delete(h, "alg") }), clerkReasonAlg},
		{"duplicate alg header", func(f *clerkfake.Fake, _ *testutil.Clock) *http.Request {
			header := []byte(`{"alg":"HS256","kid":"` + f.KeyID() + `","alg":"RS256"}`)
			payload, _ := json.Marshal(f.Claims(uid))
			return clerkBearerRequest(clerkfake.MintRaw(header, payload, f.Signer()))
		}, clerkReasonMalformed},
		{"crit header", withHeader(func(h map[string]any) { h["crit"] = []string{"exp"}; h["exp"] = 1 }), clerkReasonMalformed},
		{"kid missing", withHeader(func(h map[string]any) { delete(h, "kid") }), clerkReasonKid},
		{"kid empty", withHeader(func(h map[string]any) { h["kid"] = "" }), clerkReasonKid},
		{"kid not a string", withHeader(func(h map[string]any) { h["kid"] = 7 }), clerkReasonKid},
		{"unknown kid", withHeader(func(h map[string]any) { h["kid"] = "ins_unknown" }), clerkReasonUnknownKid},
		{"another RSA key with the same kid", func(f *clerkfake.Fake, _ *testutil.Clock) *http.Request {
			return clerkBearerRequest(f.MintWith(f.Header(), f.Claims(uid), clerkfake.RS256(t, otherKey)))
		}, clerkReasonSignature},
		{"payload swapped under a valid signature", func(f *clerkfake.Fake, _ *testutil.Clock) *http.Request {
			parts := strings.Split(f.Session("user_2victim"), ".")
			return clerkBearerRequest(parts[0] + "." + clerkB64JSON(t, f.Claims(uid)) + "." + parts[2])
		}, clerkReasonSignature},
		// The SDK's own issuer check is a prefix match on "https://clerk.";
		// these would pass it without an exact comparison.
		{"wrong iss with clerk prefix", session(set("iss", "https://clerk.evil.test")), clerkReasonVerifier},
		{"iss extending the issuer", session(set("iss", clerkfake.DefaultIssuer+".evil.test")), clerkReasonVerifier},
		{"iss missing", session(without("iss")), clerkReasonVerifier},
		{"azp missing", session(without("azp")), clerkReasonVerifier},
		{"azp foreign", session(set("azp", "https://evil.test")), clerkReasonVerifier},
		{"azp with trailing slash", session(func(c map[string]any) { c["azp"] = c["azp"].(string) + "/" }), clerkReasonVerifier},
		{"sid missing", session(without("sid")), clerkReasonSid},
		{"sub missing", session(without("sub")), clerkReasonSub},
		{"sub not a safe ID", session(set("sub", "user_2x/../../jwks")), clerkReasonSub},
		{"exp missing", session(without("exp")), clerkReasonExpMissing},
		{"expired", func(f *clerkfake.Fake, clock *testutil.Clock) *http.Request {
			return clerkBearerRequest(f.Session(uid, set("exp", clock.Now().Add(-10*time.Second).Unix())))
		}, clerkReasonExpired},
		{"expired beyond the 5s leeway", func(f *clerkfake.Fake, clock *testutil.Clock) *http.Request {
			return clerkBearerRequest(f.Session(uid, set("exp", clock.Now().Add(-6*time.Second).Unix())))
		}, clerkReasonExpired},
		{"nbf in the future", func(f *clerkfake.Fake, clock *testutil.Clock) *http.Request {
			return clerkBearerRequest(f.Session(uid, set("nbf", clock.Now().Add(10*time.Second).Unix())))
		}, clerkReasonNotYetValid},
		{"iat in the future", func(f *clerkfake.Fake, clock *testutil.Clock) *http.Request {
			return clerkBearerRequest(f.Session(uid, set("iat", clock.Now().Add(10*time.Second).Unix())))
		}, clerkReasonNotYetValid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newClerkTestClock()
			id := mustClerkIdentity(t, f, clock)
			p, err := id.Authenticate(tt.req(f, clock))
			if p != nil {
				t.Fatalf("Authenticate returned principal %+v, want none", p)
			}
			if !errors.Is(err, ErrSignedOut) {
				t.Fatalf("err=%v, want ErrSignedOut", err)
			}
			if errors.Is(err, ErrIdentityUnavailable) {
				t.Fatalf("err=%v, want not ErrIdentityUnavailable", err)
			}
			if got, want := clerkRejectionReason(err), tt.wantReason; got != want {
				t.Fatalf("reason=%q, want %q", got, want)
			}
		})
	}
}

func TestClerkAuthenticate_UnknownKidRefetchesAtMostOncePerMinute(t *testing.T) {
	f := clerkfake.New(t)
	clock := newClerkTestClock()
	id := mustClerkIdentity(t, f, clock)

	unknownKid := func() *http.Request {
		h := f.Header()
		h["kid"] = "ins_unknown"
		return clerkBearerRequest(f.MintWith(h, f.Claims("user_2x"), f.Signer()))
	}

	// The first request fetches the JWKS.
	if _, err := id.Authenticate(clerkBearerRequest(f.Session("user_2x"))); err != nil {
		t.Fatalf("valid token: %v", err)
	}
	if got, want := f.JWKSFetches(), 1; got != want {
		t.Fatalf("JWKSFetches=%d, want %d", got, want)
	}

	steps := []struct {
		advance     time.Duration
		req         func() *http.Request
		wantErr     error
		wantFetches int
	}{
		{0, unknownKid, ErrSignedOut, 1},                // within the minute: no refetch
		{10 * time.Second, unknownKid, ErrSignedOut, 1}, // +10s
		{49 * time.Second, unknownKid, ErrSignedOut, 1}, // +59s
		{1 * time.Second, unknownKid, ErrSignedOut, 2},  // +60s: one refetch, kid still unknown
		{1 * time.Second, unknownKid, ErrSignedOut, 2},  // +61s: limited again
		{30 * time.Second, func() *http.Request { // +91s: a known kid never fetches
			return clerkBearerRequest(f.Session("user_2x"))
		}, nil, 2},
		{30 * time.Second, unknownKid, ErrSignedOut, 3}, // +121s: another minute passed
	}
	for i, s := range steps {
		clock.Add(s.advance)
		_, err := id.Authenticate(s.req())
		if s.wantErr == nil && err != nil {
			t.Fatalf("step %d: err=%v, want nil", i, err)
		}
		if s.wantErr != nil && !errors.Is(err, s.wantErr) {
			t.Fatalf("step %d: err=%v, want %v", i, err, s.wantErr)
		}
		if got, want := f.JWKSFetches(), s.wantFetches; got != want {
			t.Fatalf("step %d: JWKSFetches=%d, want %d", i, got, want)
		}
	}
}

func TestClerkAuthenticate_ConcurrentFirstRequestsFetchJWKSOnce(t *testing.T) {
	f := clerkfake.New(t)
	id := mustClerkIdentity(t, f, newClerkTestClock())

	const n = 20
	tokens := make([]string, n)
	for i := range tokens {
		tokens[i] = f.Session("user_2x")
	}
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for _, tok := range tokens {
		wg.Go(func() {
			_, err := id.Authenticate(clerkBearerRequest(tok))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Authenticate: %v", err)
		}
	}
	if got, want := f.JWKSFetches(), 1; got != want {
		t.Fatalf("JWKSFetches=%d, want %d", got, want)
	}
}

func TestClerkAuthenticate_RotatedKeyAcceptedAfterRefetchAndOldKeyDropped(t *testing.T) {
	f := clerkfake.New(t)
	clock := newClerkTestClock()
	id := mustClerkIdentity(t, f, clock)

	if _, err := id.Authenticate(clerkBearerRequest(f.Session("user_2x"))); err != nil {
		t.Fatalf("valid token before rotation: %v", err)
	}
	oldHeader, oldSigner := f.Header(), f.Signer()
	f.RotateKey()

	// The refetch limit still holds right after a rotation.
	clock.Add(time.Second)
	if _, err := id.Authenticate(clerkBearerRequest(f.Session("user_2x"))); clerkRejectionReason(err) != clerkReasonUnknownKid {
		t.Fatalf("new kid within the minute: err=%v, want %q", err, clerkReasonUnknownKid)
	}

	clock.Add(time.Minute)
	p, err := id.Authenticate(clerkBearerRequest(f.Session("user_2x")))
	if err != nil {
		t.Fatalf("new kid after refetch: %v", err)
	}
	if got, want := p.UserID, "user_2x"; got != want {
		t.Fatalf("UserID=%q, want %q", got, want)
	}
	if got, want := f.JWKSFetches(), 2; got != want {
		t.Fatalf("JWKSFetches=%d, want %d", got, want)
	}

	// A fresh token under the key Clerk no longer publishes is refused.
	old := f.MintWith(oldHeader, f.Claims("user_2x"), oldSigner)
	if _, err := id.Authenticate(clerkBearerRequest(old)); clerkRejectionReason(err) != clerkReasonUnknownKid {
		t.Fatalf("old kid after rotation: err=%v, want %q", err, clerkReasonUnknownKid)
	}
}

func TestClerkAuthenticate_UnreachableJWKSWithUnknownKeyIsUnavailable(t *testing.T) {
	tests := []struct {
		name string
		fail func(f *clerkfake.Fake, on bool)
	}{
		{"503", (*clerkfake.Fake).SetDown},
		{"connection dropped", (*clerkfake.Fake).SetDropConnections},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := clerkfake.New(t)
			clock := newClerkTestClock()
			id := mustClerkIdentity(t, f, clock)

			tt.fail(f, true)
			_, err := id.Authenticate(clerkBearerRequest(f.Session("user_2x")))
			if !errors.Is(err, ErrIdentityUnavailable) || errors.Is(err, ErrSignedOut) {
				t.Fatalf("provider down: err=%v, want ErrIdentityUnavailable only", err)
			}

			// Back up, but the failed attempt still counts toward the limit.
			tt.fail(f, false)
			clock.Add(30 * time.Second)
			if _, err := id.Authenticate(clerkBearerRequest(f.Session("user_2x"))); !errors.Is(err, ErrIdentityUnavailable) {
				t.Fatalf("within the minute after a failure: err=%v, want ErrIdentityUnavailable", err)
			}
			clock.Add(30 * time.Second)
			if _, err := id.Authenticate(clerkBearerRequest(f.Session("user_2x"))); err != nil {
				t.Fatalf("after the minute: %v", err)
			}

			// With the key cached, tokens verify while the provider is down.
			tt.fail(f, true)
			if _, err := id.Authenticate(clerkBearerRequest(f.Session("user_2x"))); err != nil {
				t.Fatalf("cached key, provider down: %v", err)
			}
		})
	}
}

func TestClerkVerifiedEmails_ReturnsOnlyVerifiedAddresses(t *testing.T) {
	f := clerkfake.New(t)
	id := mustClerkIdentity(t, f, newClerkTestClock())
	f.SetUser("user_2mixed",
		clerkfake.Email{Address: "a@example.test", Verified: true},
		clerkfake.Email{Address: "b@example.test", Verified: false},
		clerkfake.Email{Address: "c@example.test", Verified: true},
	)
	f.SetUser("user_2none", clerkfake.Email{Address: "d@example.test", Verified: false})

	tests := []struct {
		user string
		want []string
	}{
		{"user_2mixed", []string{"a@example.test", "c@example.test"}},
		{"user_2none", []string{}},
		{"user_2deleted", []string{}}, // 404: no verified addresses, not an error
	}
	for _, tt := range tests {
		t.Run(tt.user, func(t *testing.T) {
			got, err := id.VerifiedEmails(context.Background(), &Principal{UserID: tt.user, SessionID: "sess_1"})
			if err != nil {
				t.Fatalf("VerifiedEmails: %v", err)
			}
			if got == nil || !slices.Equal(got, tt.want) {
				t.Fatalf("VerifiedEmails=%q, want %q", got, tt.want)
			}
		})
	}
}

func TestClerkVerifiedEmails_FetchesFreshOnEveryCall(t *testing.T) {
	f := clerkfake.New(t)
	id := mustClerkIdentity(t, f, newClerkTestClock())
	p := &Principal{UserID: "user_2fresh", SessionID: "sess_1"}

	f.SetUser(p.UserID,
		clerkfake.Email{Address: "old@example.test", Verified: true},
		clerkfake.Email{Address: "new@example.test", Verified: true},
	)
	got, err := id.VerifiedEmails(context.Background(), p)
	if err != nil {
		t.Fatalf("first VerifiedEmails: %v", err)
	}
	if want := []string{"old@example.test", "new@example.test"}; !slices.Equal(got, want) {
		t.Fatalf("first VerifiedEmails=%q, want %q", got, want)
	}

	// The user removes an address in Clerk; the next call must not see it.
	f.SetUser(p.UserID, clerkfake.Email{Address: "new@example.test", Verified: true})
	got, err = id.VerifiedEmails(context.Background(), p)
	if err != nil {
		t.Fatalf("second VerifiedEmails: %v", err)
	}
	if want := []string{"new@example.test"}; !slices.Equal(got, want) {
		t.Fatalf("second VerifiedEmails=%q, want %q", got, want)
	}
	if got, want := f.UserFetches(), 2; got != want {
		t.Fatalf("UserFetches=%d, want %d", got, want)
	}

	// And a deleted user has none.
	f.RemoveUser(p.UserID)
	got, err = id.VerifiedEmails(context.Background(), p)
	if err != nil || len(got) != 0 {
		t.Fatalf("removed user: VerifiedEmails=%q, %v, want none", got, err)
	}
}

func TestClerkVerifiedEmails_ProviderFailureIsUnavailable(t *testing.T) {
	const uid = "user_2unreachable"
	tests := []struct {
		name  string
		setup func(f *clerkfake.Fake) ClerkConfig
	}{
		{"503", func(f *clerkfake.Fake) ClerkConfig {
			f.SetDown(true)
			return ClerkConfig{}
		}},
		{"connection dropped", func(f *clerkfake.Fake) ClerkConfig {
			f.SetDropConnections(true)
			return ClerkConfig{}
		}},
		{"timeout", func(f *clerkfake.Fake) ClerkConfig {
			f.SetDelay(5 * time.Second)
			return ClerkConfig{HTTPClient: &http.Client{Timeout: 100 * time.Millisecond}}
		}},
		{"secret key rejected", func(f *clerkfake.Fake) ClerkConfig {
			return ClerkConfig{SecretKey: "sk_test_wrong"}
		}},
		{"nothing listening", func(f *clerkfake.Fake) ClerkConfig {
			srv := httptest.NewServer(http.NotFoundHandler())
			srv.Close()
			return ClerkConfig{APIURL: srv.URL + "/v1"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := clerkfake.New(t)
			f.SetUser(uid, clerkfake.Email{Address: "a@example.test", Verified: true})
			cfg := tt.setup(f)
			if cfg.SecretKey == "" {
				cfg.SecretKey = f.SecretKey()
			}
			if cfg.APIURL == "" {
				cfg.APIURL = f.URL()
			}
			cfg.Issuer, cfg.AuthorizedParties = f.Issuer(), []string{f.AuthorizedParty()}
			cfg.DB = mustIdentityDB(t, nil)
			id, err := NewClerkIdentity(cfg)
			if err != nil {
				t.Fatalf("NewClerkIdentity: %v", err)
			}

			got, err := id.VerifiedEmails(context.Background(), &Principal{UserID: uid, SessionID: "sess_1"})
			if got != nil {
				t.Fatalf("VerifiedEmails=%q, want nil", got)
			}
			if !errors.Is(err, ErrIdentityUnavailable) {
				t.Fatalf("err=%v, want ErrIdentityUnavailable", err)
			}
			// The error may be logged: it must not carry the Clerk user ID
			// (the SDK's transport errors include the request URL).
			if strings.Contains(err.Error(), uid) {
				t.Fatalf("err=%q contains the user ID", err)
			}
		})
	}
}

func TestClerkVerifiedEmails_RefusesMissingOrUnsafeUserID(t *testing.T) {
	f := clerkfake.New(t)
	id := mustClerkIdentity(t, f, newClerkTestClock())
	for _, p := range []*Principal{nil, {}, {UserID: "../jwks"}, {UserID: "user_2x?x=1"}} {
		if _, err := id.VerifiedEmails(context.Background(), p); !errors.Is(err, ErrSignedOut) {
			t.Fatalf("VerifiedEmails(%+v): err=%v, want ErrSignedOut", p, err)
		}
	}
	if got, want := f.UserFetches(), 0; got != want {
		t.Fatalf("UserFetches=%d, want %d", got, want)
	}
}

func TestNewClerkIdentity_RejectsIncompleteConfig(t *testing.T) {
	db := mustIdentityDB(t, nil)
	valid := func() ClerkConfig {
		return ClerkConfig{
			DB:                db,
			SecretKey:         "sk_test_x",
			APIURL:            "https://api.clerk.com/v1",
			Issuer:            "https://clerk.admit.test",
			AuthorizedParties: []string{"https://app.admit.test"},
		}
	}
	if _, err := NewClerkIdentity(valid()); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	tests := []struct {
		name string
		mod  func(c *ClerkConfig)
	}{
		{"no secret key", func(c *ClerkConfig) { c.SecretKey = "" }},
		{"no database", func(c *ClerkConfig) { c.DB = nil }},
		{"no issuer", func(c *ClerkConfig) { c.Issuer = "" }},
		{"relative issuer", func(c *ClerkConfig) { c.Issuer = "clerk.admit.test" }},
		{"issuer with space", func(c *ClerkConfig) { c.Issuer = "https://clerk.admit.test " }},
		{"no authorized parties", func(c *ClerkConfig) { c.AuthorizedParties = nil }},
		{"empty authorized party", func(c *ClerkConfig) { c.AuthorizedParties = []string{""} }},
		{"API URL not http", func(c *ClerkConfig) { c.APIURL = "ftp://api.clerk.com/v1" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := valid()
			tt.mod(&cfg)
			if id, err := NewClerkIdentity(cfg); err == nil {
				t.Fatalf("NewClerkIdentity=%v, want error", id)
			}
		})
	}
}
