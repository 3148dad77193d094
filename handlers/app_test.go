package handlers

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/google/uuid"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"admit/internal/clerkfake"
	"admit/internal/identity"
	"admit/internal/oidcprovider"
	"admit/internal/serverkeys"
	"admit/internal/testutil"
	"admit/store"
)

// testApp is the real server on a loopback port over a temp-file database.
type testApp struct {
	URL   string
	DB    *store.DB
	Clock *testutil.Clock
	Clerk *clerkfake.Fake // nil in development mode
	Dev   *identity.DevIdentity
	// DevKey is the development sign-in key, as the console's link
	// carries it; empty outside development mode.
	DevKey string
	// OIDC is the OpenID Provider and OIDCId admit's identity in OpenID
	// Connect mode; nil otherwise.
	OIDC   *oidcprovider.Provider
	OIDCId *identity.OIDCIdentity
	Srv    *Server
	// OwnerID is the demo workspace owner's user ID.
	OwnerID string
	// Demo is the seeded demo program.
	Demo *store.Program
	Logs *testutil.SyncBuffer
	// Arrived counts the requests that reached admit's handler: their
	// headers were read and admit began serving them.
	Arrived atomic.Int64
}

type appConfig struct {
	clerk bool
	// oidc runs OpenID Connect mode against this provider; oidcTrust sets
	// ADMIT_OIDC_TRUST_EMAIL; oidcNoDiscovery leaves discovery to the test.
	oidc            *oidcprovider.Provider
	oidcTrust       bool
	oidcNoDiscovery bool
	hourly          int
	clientIPHd      string
	dataDir         string
	// signupDelay overrides the signup answers' release delay.
	signupDelay time.Duration
	// signupBodyTimeout overrides how long a signup body may take.
	signupBodyTimeout time.Duration
	// retention is the store's retention policy; zero means the default.
	retention store.Retention
	// signupQueue and writeReserve bound the writer's queues; zero means
	// the store's defaults.
	signupQueue, writeReserve int
	// retireChunk fixes the rows per table of each retirement step; zero
	// adapts them to their cost.
	retireChunk int
	// oidcSettings, when set, changes the OpenID Connect configuration
	// before the identity is built (a product's settings).
	oidcSettings func(*identity.OIDCConfig)
	// server changes the server after New, before it takes a request.
	server func(*Server)
}

type appOption func(*appConfig)

// withClerk runs the app in Clerk mode against the fake Backend API.
func withClerk() appOption { return func(c *appConfig) { c.clerk = true } }

// withOIDC runs the app in OpenID Connect mode against a real provider,
// asking for refresh tokens (offline_access).
func withOIDC(p *oidcprovider.Provider) appOption { return func(c *appConfig) { c.oidc = p } }

// withOIDCTrustEmail sets ADMIT_OIDC_TRUST_EMAIL=1.
func withOIDCTrustEmail() appOption { return func(c *appConfig) { c.oidcTrust = true } }

// withoutOIDCDiscovery starts the app before the provider is discovered:
// the test runs discovery itself.
func withoutOIDCDiscovery() appOption { return func(c *appConfig) { c.oidcNoDiscovery = true } }

// withOIDCSettings changes the OpenID Connect configuration before the
// identity is built.
func withOIDCSettings(f func(*identity.OIDCConfig)) appOption {
	return func(c *appConfig) { c.oidcSettings = f }
}

// withNetworkLimit sets ADMIT_NETWORK_HOURLY_LIMIT.
func withNetworkLimit(n int) appOption { return func(c *appConfig) { c.hourly = n } }

// withDataDir keeps the database in dir instead of a fresh temporary
// directory.
func withDataDir(dir string) appOption { return func(c *appConfig) { c.dataDir = dir } }

// withRetention opens the store with the retention policy r.
func withRetention(r store.Retention) appOption { return func(c *appConfig) { c.retention = r } }

// withWriteQueues bounds the signups and the other writes that may wait
// for the database writer.
func withWriteQueues(signups, reserve int) appOption {
	return func(c *appConfig) { c.signupQueue, c.writeReserve = signups, reserve }
}

// withRetireChunk fixes how many rows per table each retirement step
// takes, so a test can watch a retirement step by step.
func withRetireChunk(n int) appOption { return func(c *appConfig) { c.retireChunk = n } }

// withSignupDelay sets when signup answers are released.
func withSignupDelay(d time.Duration) appOption { return func(c *appConfig) { c.signupDelay = d } }

// withSignupBodyTimeout sets how long a signup's body may take to arrive.
func withSignupBodyTimeout(d time.Duration) appOption {
	return func(c *appConfig) { c.signupBodyTimeout = d }
}

// testKey returns a deterministic 32-byte key.
func testKey(b byte) []byte {
	k := make([]byte, 32)
	for i := range k {
		k[i] = b + byte(i)
	}
	return k
}

// MustStartApp starts admit on 127.0.0.1:0 with a fresh database seeded
// with the demo workspace and program.
func MustStartApp(tb testing.TB, opts ...appOption) *testApp {
	tb.Helper()
	cfg := appConfig{hourly: 1000}
	for _, o := range opts {
		o(&cfg)
	}
	ctx := context.Background()
	if cfg.dataDir == "" {
		cfg.dataDir = tb.TempDir()
	}
	clock := testutil.NewClock(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	if cfg.oidc != nil {
		// The provider stamps its tokens with the real time.
		clock = testutil.NewClock(time.Now().UTC().Truncate(time.Second))
	}
	db, err := store.Open(ctx, filepath.Join(cfg.dataDir, "admit.db"),
		store.Options{BindingKey: testKey(120), Retention: cfg.retention, Now: clock.Now,
			SignupQueue: cfg.signupQueue, WriteReserve: cfg.writeReserve, RetireChunk: cfg.retireChunk})
	if err != nil {
		tb.Fatalf("open db: %v", err)
	}
	tb.Cleanup(func() { db.Close() })

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("listen: %v", err)
	}
	base := "http://" + ln.Addr().String()
	public, _ := url.Parse(base)
	app := &testApp{URL: base, DB: db, Clock: clock, Logs: &testutil.SyncBuffer{}}

	keys := serverkeys.Keys{SessionHash: testKey(1), SessionBlock: testKey(40), CSRF: testKey(80), Binding: testKey(120), Counter: testKey(160),
		SessionTokens: testKey(200)}
	var id identity.Identity
	var publishable string
	if cfg.oidc != nil {
		app.OIDC = cfg.oidc
		app.OIDC.AllowRedirect(base+"/auth/callback", base+"/")
		oc := identity.OIDCConfig{Issuer: app.OIDC.Issuer, ClientID: app.OIDC.ClientID,
			ClientSecret: app.OIDC.ClientSecret, Scopes: []string{"openid", "email", "offline_access"},
			TrustEmail: cfg.oidcTrust, Name: "Test ID", RedirectURL: base + "/auth/callback", PostLogoutURL: base + "/",
			DB: db, TokenKey: keys.SessionTokens, Now: clock.Now}
		if cfg.oidcSettings != nil {
			cfg.oidcSettings(&oc)
		}
		oi, err := identity.NewOIDCIdentity(oc)
		if err != nil {
			tb.Fatalf("oidc identity: %v", err)
		}
		if !cfg.oidcNoDiscovery {
			if err := oi.Discover(ctx); err != nil {
				tb.Fatalf("oidc discovery: %v", err)
			}
		}
		app.OIDCId, id = oi, oi
		app.OwnerID = identity.OIDCUserID(app.OIDC.Issuer, oidcSub("owner@example.test"))
	} else if cfg.clerk {
		app.Clerk = clerkfake.New(tb)
		app.Clerk.SetAuthorizedParty(base)
		ci, err := identity.NewClerkIdentity(identity.ClerkConfig{SecretKey: app.Clerk.SecretKey(), APIURL: app.Clerk.URL(),
			Issuer: app.Clerk.Issuer(), AuthorizedParties: []string{base}, DB: db})
		if err != nil {
			tb.Fatalf("clerk identity: %v", err)
		}
		id = ci
		publishable = "pk_test_" + base64.RawStdEncoding.EncodeToString([]byte("clerk.admit.test$"))
		app.OwnerID = "user_owner"
		app.Clerk.SetUser(app.OwnerID, clerkfake.Email{Address: "owner@example.test", Verified: true})
	} else {
		if app.Dev, err = identity.NewDevIdentity(db, keys.SessionTokens, false); err != nil {
			tb.Fatalf("dev identity: %v", err)
		}
		id = app.Dev
		app.OwnerID = identity.DevUserID("owner@example.test")
		if app.DevKey, err = NewDevSignInKey(); err != nil {
			tb.Fatalf("dev sign-in key: %v", err)
		}
	}
	if _, err := db.SeedDemo(ctx, app.OwnerID); err != nil {
		tb.Fatalf("seed: %v", err)
	}
	ps, err := db.OwnerPrograms(ctx, store.Actor{Kind: store.ActorOwner, UserID: app.OwnerID})
	if err != nil || len(ps) != 1 {
		tb.Fatalf("demo program: %v %d", err, len(ps))
	}
	app.Demo = &ps[0]

	var ready func(context.Context) error
	if app.OIDCId != nil {
		ready = func(context.Context) error { return app.OIDCId.Ready() }
	}
	srv, err := New(Options{
		PublicURL: public, NetworkHourlyLimit: cfg.hourly, ClientIPHeader: cfg.clientIPHd,
		ClerkPublishableKey: publishable, Keys: keys, SignupAnswerDelay: cfg.signupDelay,
		SignupBodyTimeout: cfg.signupBodyTimeout, DevSignInKey: app.DevKey,
		Logger: slog.New(slog.NewTextHandler(app.Logs, nil)), Ready: ready,
	}, db, id)
	if err != nil {
		tb.Fatalf("new server: %v", err)
	}
	app.Srv = srv
	if cfg.server != nil {
		cfg.server(srv)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		app.Arrived.Add(1)
		srv.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 5 * time.Second, ConnContext: ConnContext}
	go hs.Serve(ln)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(ctx)
	})
	return app
}

// testClient is a browser-like client: a cookie jar, no redirect following.
type testClient struct {
	*http.Client
	app    *testApp
	bearer string
	csrf   string
}

// NewClient returns a signed-out client.
//
// In development mode the client holds the development sign-in key, as a
// browser on this machine does once it has opened the console's link;
// NewClientWithoutDevKey gives one that never opened it.
func (a *testApp) NewClient(tb testing.TB) *testClient {
	tb.Helper()
	c := a.NewClientWithoutDevKey(tb)
	if a.DevKey != "" {
		u, _ := url.Parse(a.URL)
		c.Jar.SetCookies(u, []*http.Cookie{{Name: devKeyCookie, Value: a.DevKey, Path: "/"}})
	}
	return c
}

// DevLink is the development sign-in link admit would print at start.
func (a *testApp) DevLink() string { return DevSignInLink(a.URL, a.DevKey) }

// NewClientWithoutDevKey returns a signed-out client that has not opened
// the development sign-in link.
func (a *testApp) NewClientWithoutDevKey(tb testing.TB) *testClient {
	tb.Helper()
	jar, _ := cookiejar.New(nil)
	return &testClient{app: a, Client: &http.Client{
		Jar:     jar,
		Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}}
}

// SignIn signs the client in as email: the dev form in development mode, a
// fake Clerk session cookie (user ID derived from the email, verified) in
// Clerk mode. It returns the user ID.
func (c *testClient) SignIn(tb testing.TB, email string) string {
	tb.Helper()
	if c.app.OIDC != nil {
		c.app.OIDC.SetUser(oidcprovider.User{Sub: oidcSub(email), Email: email, EmailVerified: oidcprovider.Verified})
		if resp := c.OIDCSignIn(tb, "/"); resp.StatusCode != http.StatusSeeOther {
			tb.Fatalf("oidc sign-in: status %d", resp.StatusCode)
		}
		return identity.OIDCUserID(c.app.OIDC.Issuer, oidcSub(email))
	}
	if c.app.Clerk != nil {
		id := "user_" + strings.NewReplacer("@", "_", ".", "_", "+", "_").Replace(email)
		if email == "owner@example.test" {
			id = c.app.OwnerID
		}
		c.app.Clerk.SetUser(id, clerkfake.Email{Address: email, Verified: true})
		c.SetClerkSession(tb, id)
		return id
	}
	resp := c.PostForm(tb, "/dev/sign-in", url.Values{"email": {email}, "redirect_url": {"/"}})
	if resp.StatusCode != http.StatusSeeOther {
		tb.Fatalf("dev sign-in: status %d", resp.StatusCode)
	}
	return identity.DevUserID(email)
}

// oidcSub is the provider's subject for a test address: stable, and
// unlike the address.
func oidcSub(email string) string { return "sub-" + oidcprovider.SubjectDigest(email) }

// OIDCSignIn follows the code flow as a browser would: admit's start route,
// the provider's redirects, then admit's callback, whose answer it returns.
func (c *testClient) OIDCSignIn(tb testing.TB, redirect string) *testResponse {
	tb.Helper()
	callback := c.OIDCAuthorize(tb, redirect)
	return c.Get(tb, strings.TrimPrefix(callback, c.app.URL))
}

// OIDCAuthorize starts a sign-in and follows the provider's redirects up
// to (not into) admit's callback, whose full URL it returns.
func (c *testClient) OIDCAuthorize(tb testing.TB, redirect string) string {
	tb.Helper()
	resp := c.Get(tb, "/auth/start?redirect_url="+url.QueryEscape(redirect))
	if resp.StatusCode != http.StatusSeeOther {
		tb.Fatalf("GET /auth/start: status %d", resp.StatusCode)
	}
	next := resp.Header.Get("Location")
	for range 10 {
		if strings.HasPrefix(next, c.app.URL+"/auth/callback") {
			return next
		}
		req, err := http.NewRequest(http.MethodGet, next, nil)
		if err != nil {
			tb.Fatal(err)
		}
		r, err := c.Client.Do(req)
		if err != nil {
			tb.Fatalf("provider: %v", err)
		}
		r.Body.Close()
		loc, err := r.Location()
		if err != nil {
			tb.Fatalf("provider answered %d without a redirect", r.StatusCode)
		}
		next = loc.String()
	}
	tb.Fatal("the provider never redirected back to admit")
	return ""
}

// SetClerkSession puts a fresh fake-Clerk session token for userID in the
// __session cookie.
func (c *testClient) SetClerkSession(tb testing.TB, userID string) {
	tb.Helper()
	u, _ := url.Parse(c.app.URL)
	c.Jar.SetCookies(u, []*http.Cookie{{Name: "__session", Value: c.app.Clerk.Session(userID), Path: "/"}})
}

// CSRF fetches and remembers the client's CSRF token.
func (c *testClient) CSRF(tb testing.TB) string {
	tb.Helper()
	resp := c.Do(tb, "GET", "/api/csrf", "", nil)
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("GET /api/csrf: status %d body %s", resp.StatusCode, resp.Body)
	}
	var v struct {
		CSRFToken string `json:"csrfToken"`
	}
	if err := json.Unmarshal([]byte(resp.Body), &v); err != nil || v.CSRFToken == "" {
		tb.Fatalf("csrf body %q: %v", resp.Body, err)
	}
	c.csrf = v.CSRFToken
	return v.CSRFToken
}

// testResponse is a fully read response.
type testResponse struct {
	StatusCode int
	Header     http.Header
	Body       string
}

// Do sends a request with an optional body of the given content type.
// Extra headers come as name, value pairs.
func (c *testClient) Do(tb testing.TB, method, path, contentType string, body io.Reader, headers ...string) *testResponse {
	tb.Helper()
	r, err := c.Send(method, path, contentType, body, headers...)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// Send is Do returning its error: it may run on any goroutine.
func (c *testClient) Send(method, path, contentType string, body io.Reader, headers ...string) (*testResponse, error) {
	req, err := http.NewRequest(method, c.app.URL+path, body)
	if err != nil {
		return nil, fmt.Errorf("new request: %w", err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+c.bearer)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: read body: %w", method, path, err)
	}
	return &testResponse{StatusCode: resp.StatusCode, Header: resp.Header, Body: string(b)}, nil
}

// Get sends a GET.
func (c *testClient) Get(tb testing.TB, path string, headers ...string) *testResponse {
	tb.Helper()
	return c.Do(tb, "GET", path, "", nil, headers...)
}

// PostForm sends a urlencoded form.
func (c *testClient) PostForm(tb testing.TB, path string, form url.Values, headers ...string) *testResponse {
	tb.Helper()
	return c.Do(tb, "POST", path, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()), headers...)
}

// PostJSON sends a JSON body with the client's CSRF token, if any.
func (c *testClient) PostJSON(tb testing.TB, method, path, body string, headers ...string) *testResponse {
	tb.Helper()
	if c.csrf != "" {
		headers = append([]string{"X-CSRF-Token", c.csrf}, headers...)
	}
	return c.Do(tb, method, path, "application/json", strings.NewReader(body), headers...)
}

// SendJSON is PostJSON returning its error: it may run on any goroutine.
func (c *testClient) SendJSON(method, path, body string, headers ...string) (*testResponse, error) {
	if c.csrf != "" {
		headers = append([]string{"X-CSRF-Token", c.csrf}, headers...)
	}
	return c.Send(method, path, "application/json", strings.NewReader(body), headers...)
}

// dbFingerprint digests every row of every table: equal fingerprints
// prove that a request stored, removed and changed nothing — a counter
// bumped or a state changed on an existing row included, which row counts
// would miss.
func dbFingerprint(tb testing.TB, db *store.DB) testutil.Fingerprint {
	tb.Helper()
	return testutil.MustFingerprint(tb, db.View)
}

// sameRows reports whether two fingerprints are equal.
func sameRows(a, b testutil.Fingerprint) bool { return maps.Equal(a, b) }

// mustInsertEntry puts email on program p's list through the store's own
// operations — a signup (opening the program's signup for it if closed,
// and closing it again), then the owner's selection or decline — so the
// entry has the receipt, events and counts a real one has. It returns the
// entry's ID. Other states come from their own operations (invitations,
// redemption, withdrawal), which the tests that need them perform.
func mustInsertEntry(tb testing.TB, db *store.DB, p *store.Program, email, state string) string {
	tb.Helper()
	ctx := context.Background()
	var ownerID string
	if err := db.View(ctx, func(tx *store.Tx) error {
		return tx.QueryRow(`SELECT clerk_user_id FROM staff_members WHERE workspace_id = ? AND role = 'owner' AND active = 1
			ORDER BY created_at LIMIT 1`, p.WorkspaceID).Scan(&ownerID)
	}); err != nil {
		tb.Fatalf("find the program's owner: %v", err)
	}
	owner := ownerActorOf(ownerID)
	cur, err := db.ProgramByID(ctx, owner, p.ID)
	if err != nil {
		tb.Fatalf("read program: %v", err)
	}
	setOpen := func(open bool) {
		tb.Helper()
		if cur, err = db.UpdateProgram(ctx, owner, p.ID, store.ProgramSettings{ExpectedRevision: cur.Revision, SignupOpen: &open}); err != nil {
			tb.Fatalf("set signup open=%v: %v", open, err)
		}
	}
	if !cur.SignupOpen {
		setOpen(true)
		defer setOpen(false)
	}
	norm, err := store.NormalizeEmail(email)
	if err != nil {
		tb.Fatalf("email %q: %v", email, err)
	}
	if _, err := db.Signup(ctx, store.SignupRequest{Slug: cur.Slug, RequestKey: uuid.NewString(), Email: norm,
		NoticeVersion: cur.CurrentNoticeVersion, Permission: true}); err != nil {
		tb.Fatalf("signup of %s: %v", email, err)
	}
	var id string
	if err := db.View(ctx, func(tx *store.Tx) error {
		return tx.QueryRow(`SELECT id FROM entries WHERE program_id = ? AND email_key = ?`, p.ID, norm).Scan(&id)
	}); err != nil {
		tb.Fatalf("find the new entry: %v", err)
	}
	switch state {
	case store.StateWaiting:
	case store.StateSelected:
		_, err = db.SelectEntry(ctx, owner, p.ID, id, store.Decision{Reason: "owner_discretion"})
	case store.StateDeclined:
		_, err = db.DeclineEntry(ctx, owner, p.ID, id, store.Decision{Reason: "other"})
	default:
		tb.Fatalf("mustInsertEntry: %q is reached by other operations", state)
	}
	if err != nil {
		tb.Fatalf("make entry %s: %v", state, err)
	}
	return id
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
