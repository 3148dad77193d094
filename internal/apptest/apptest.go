package apptest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"admit/internal/clerkfake"
	"admit/internal/identity"
	"admit/internal/oidcprovider"
	"admit/internal/serverkeys"
	"admit/internal/testutil"
	"admit/store"
)

// App is the real server on a loopback port over a temp-file database.
type App struct {
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
	Srv    http.Handler
	// OwnerID is the demo workspace owner's user ID.
	OwnerID string
	// Demo is the seeded demo program.
	Demo *store.Program
	Logs *testutil.SyncBuffer
	// Arrived counts the requests that reached admit's handler: their
	// headers were read and admit began serving them.
	Arrived atomic.Int64
}

type Config struct {
	Clerk bool
	// OIDC runs OpenID Connect mode against this provider; OIDCTrust sets
	// ADMIT_OIDC_TRUST_EMAIL; OIDCNoDiscovery leaves discovery to the test.
	OIDC            *oidcprovider.Provider
	OIDCTrust       bool
	OIDCNoDiscovery bool
	Hourly          int
	ClientIPHd      string
	DataDir         string
	// SignupDelay overrides the signup answers' release delay.
	SignupDelay time.Duration
	// SignupBodyTimeout overrides how long a signup body may take.
	SignupBodyTimeout time.Duration
	// Retention is the store's retention policy; zero means the default.
	Retention store.Retention
	// SignupQueue and WriteReserve bound the writer's queues; zero means
	// the store's defaults.
	SignupQueue, WriteReserve int
	// RetireChunk fixes the rows per table of each retirement step; zero
	// adapts them to their cost.
	RetireChunk int
	// OIDCSettings, when set, changes the OpenID Connect configuration
	// before the identity is built (a product's settings).
	OIDCSettings func(*identity.OIDCConfig)
	// Options, when set, changes the server's options before the server is
	// built; it receives the *handlers.Options the binding made.
	Options func(any)
	// Server changes the server after it is built, before it takes a
	// request; it receives the *handlers.Server.
	Server func(http.Handler)
}

// Option changes how Start runs the app.
type Option func(*Config)

// WithClerk runs the app in Clerk mode against the fake Backend API.
func WithClerk() Option { return func(c *Config) { c.Clerk = true } }

// WithOIDC runs the app in OpenID Connect mode against a real provider,
// asking for refresh tokens (offline_access).
func WithOIDC(p *oidcprovider.Provider) Option { return func(c *Config) { c.OIDC = p } }

// WithOIDCTrustEmail sets ADMIT_OIDC_TRUST_EMAIL=1.
func WithOIDCTrustEmail() Option { return func(c *Config) { c.OIDCTrust = true } }

// WithoutOIDCDiscovery starts the app before the provider is discovered:
// the test runs discovery itself.
func WithoutOIDCDiscovery() Option { return func(c *Config) { c.OIDCNoDiscovery = true } }

// WithOIDCSettings changes the OpenID Connect configuration before the
// identity is built.
func WithOIDCSettings(f func(*identity.OIDCConfig)) Option {
	return func(c *Config) { c.OIDCSettings = f }
}

// WithNetworkLimit sets ADMIT_NETWORK_HOURLY_LIMIT.
func WithNetworkLimit(n int) Option { return func(c *Config) { c.Hourly = n } }

// WithDataDir keeps the database in dir instead of a fresh temporary
// directory.
func WithDataDir(dir string) Option { return func(c *Config) { c.DataDir = dir } }

// WithRetention opens the store with the retention policy r.
func WithRetention(r store.Retention) Option { return func(c *Config) { c.Retention = r } }

// WithWriteQueues bounds the signups and the other writes that may wait
// for the database writer.
func WithWriteQueues(signups, reserve int) Option {
	return func(c *Config) { c.SignupQueue, c.WriteReserve = signups, reserve }
}

// WithRetireChunk fixes how many rows per table each retirement step
// takes, so a test can watch a retirement step by step.
func WithRetireChunk(n int) Option { return func(c *Config) { c.RetireChunk = n } }

// WithSignupDelay sets when signup answers are released.
func WithSignupDelay(d time.Duration) Option { return func(c *Config) { c.SignupDelay = d } }

// WithSignupBodyTimeout sets how long a signup's body may take to arrive.
func WithSignupBodyTimeout(d time.Duration) Option {
	return func(c *Config) { c.SignupBodyTimeout = d }
}

// Key returns a deterministic 32-byte key.
func Key(b byte) []byte {
	k := make([]byte, 32)
	for i := range k {
		k[i] = b + byte(i)
	}
	return k
}

// Start starts admit on 127.0.0.1:0 with a fresh database seeded
// with the demo workspace and program.
func Start(tb testing.TB, opts ...Option) *App {
	tb.Helper()
	if bound.New == nil {
		tb.Fatal("apptest: no server bound; the test binary calls apptest.Bind first")
	}
	cfg := Config{Hourly: 1000}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.DataDir == "" {
		cfg.DataDir = tb.TempDir()
	}
	db, clock := mustOpenDB(tb, cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("listen: %v", err)
	}
	base := "http://" + ln.Addr().String()
	public, _ := url.Parse(base)
	app := &App{URL: base, DB: db, Clock: clock, Logs: &testutil.SyncBuffer{}}

	keys := serverkeys.Keys{SessionHash: Key(1), SessionBlock: Key(40), CSRF: Key(80), Binding: Key(120), Counter: Key(160),
		SessionTokens: Key(200)}
	id, publishable := startIdentity(tb, cfg, app, keys)
	mustSeedDemo(tb, app)

	var ready func(context.Context) error
	if app.OIDCId != nil {
		ready = func(context.Context) error { return app.OIDCId.Ready() }
	}
	srv, err := bound.New(Setup{
		PublicURL: public, NetworkHourlyLimit: cfg.Hourly, ClientIPHeader: cfg.ClientIPHd,
		ClerkPublishableKey: publishable, Keys: keys, SignupAnswerDelay: cfg.SignupDelay,
		SignupBodyTimeout: cfg.SignupBodyTimeout, DevSignInKey: app.DevKey,
		Logger: slog.New(slog.NewTextHandler(app.Logs, nil)), Ready: ready, DB: db, Identity: id,
		Options: cfg.Options,
	})
	if err != nil {
		tb.Fatalf("new server: %v", err)
	}
	app.Srv = srv
	if cfg.Server != nil {
		cfg.Server(srv)
	}
	serve(tb, app, ln)
	return app
}

// mustOpenDB opens the app's database in cfg's data directory, on the
// test clock, closed when the test ends.
func mustOpenDB(tb testing.TB, cfg Config) (*store.DB, *testutil.Clock) {
	tb.Helper()
	clock := testutil.NewClock(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	if cfg.OIDC != nil {
		// The provider stamps its tokens with the real time.
		clock = testutil.NewClock(time.Now().UTC().Truncate(time.Second))
	}
	db, err := store.Open(context.Background(), filepath.Join(cfg.DataDir, "admit.db"),
		store.Options{BindingKey: Key(120), Retention: cfg.Retention, Now: clock.Now,
			SignupQueue: cfg.SignupQueue, WriteReserve: cfg.WriteReserve, RetireChunk: cfg.RetireChunk})
	if err != nil {
		tb.Fatalf("open db: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	return db, clock
}

// startIdentity makes the identity cfg asks for — OpenID Connect, Clerk
// against its fake, or the development sign-in — and sets the app's owner
// ID; publishable is Clerk's publishable key, "" in the other modes.
func startIdentity(tb testing.TB, cfg Config, app *App, keys serverkeys.Keys) (id identity.Identity, publishable string) {
	tb.Helper()
	switch {
	case cfg.OIDC != nil:
		return startOIDC(tb, cfg, app, keys), ""
	case cfg.Clerk:
		return startClerk(tb, app)
	}
	var err error
	if app.Dev, err = identity.NewDevIdentity(app.DB, keys.SessionTokens, false); err != nil {
		tb.Fatalf("dev identity: %v", err)
	}
	app.OwnerID = identity.DevUserID("owner@example.test")
	if app.DevKey, err = bound.NewDevSignInKey(); err != nil {
		tb.Fatalf("dev sign-in key: %v", err)
	}
	return app.Dev, ""
}

// startOIDC makes the OpenID Connect identity against cfg.OIDC, discovered
// unless cfg says the test discovers it.
func startOIDC(tb testing.TB, cfg Config, app *App, keys serverkeys.Keys) identity.Identity {
	tb.Helper()
	base := app.URL
	app.OIDC = cfg.OIDC
	app.OIDC.AllowRedirect(base+"/auth/callback", base+"/")
	oc := identity.OIDCConfig{Issuer: app.OIDC.Issuer, ClientID: app.OIDC.ClientID,
		ClientSecret: app.OIDC.ClientSecret, Scopes: []string{"openid", "email", "offline_access"},
		TrustEmail: cfg.OIDCTrust, Name: "Test ID", RedirectURL: base + "/auth/callback", PostLogoutURL: base + "/",
		DB: app.DB, TokenKey: keys.SessionTokens, Now: app.Clock.Now}
	if cfg.OIDCSettings != nil {
		cfg.OIDCSettings(&oc)
	}
	oi, err := identity.NewOIDCIdentity(oc)
	if err != nil {
		tb.Fatalf("oidc identity: %v", err)
	}
	if !cfg.OIDCNoDiscovery {
		if err := oi.Discover(context.Background()); err != nil {
			tb.Fatalf("oidc discovery: %v", err)
		}
	}
	app.OIDCId = oi
	app.OwnerID = identity.OIDCUserID(app.OIDC.Issuer, OIDCSub("owner@example.test"))
	return oi
}

// startClerk starts the fake Clerk Backend API, with the owner as a user,
// and makes the Clerk identity against it.
func startClerk(tb testing.TB, app *App) (identity.Identity, string) {
	tb.Helper()
	base := app.URL
	app.Clerk = clerkfake.New(tb)
	app.Clerk.SetAuthorizedParty(base)
	ci, err := identity.NewClerkIdentity(identity.ClerkConfig{SecretKey: app.Clerk.SecretKey(), APIURL: app.Clerk.URL(),
		Issuer: app.Clerk.Issuer(), AuthorizedParties: []string{base}, DB: app.DB})
	if err != nil {
		tb.Fatalf("clerk identity: %v", err)
	}
	app.OwnerID = "user_owner"
	app.Clerk.SetUser(app.OwnerID, clerkfake.Email{Address: "owner@example.test", Verified: true})
	return ci, "pk_test_" + base64.RawStdEncoding.EncodeToString([]byte("clerk.admit.test$"))
}

// mustSeedDemo seeds the demo workspace and program for the app's owner.
func mustSeedDemo(tb testing.TB, app *App) {
	tb.Helper()
	ctx := context.Background()
	if _, err := app.DB.SeedDemo(ctx, app.OwnerID); err != nil {
		tb.Fatalf("seed: %v", err)
	}
	ps, err := app.DB.OwnerPrograms(ctx, store.Actor{Kind: store.ActorOwner, UserID: app.OwnerID})
	if err != nil || len(ps) != 1 {
		tb.Fatalf("demo program: %v %d", err, len(ps))
	}
	app.Demo = &ps[0]
}

// serve serves the app's server on ln, counting the requests that reach
// it, until the test ends.
func serve(tb testing.TB, app *App, ln net.Listener) {
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		app.Arrived.Add(1)
		app.Srv.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 5 * time.Second, ConnContext: bound.ConnContext}
	go hs.Serve(ln)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(ctx)
	})
}

// Client is a browser-like client: a cookie jar, no redirect following.
type Client struct {
	*http.Client
	// App is the app the client talks to.
	App *App
	// Bearer, when set, is sent as the Authorization bearer token.
	Bearer string
	// CSRFToken is the token CSRF fetched, sent by PostJSON and the forms.
	CSRFToken string
}

// NewClient returns a signed-out client.
//
// In development mode the client holds the development sign-in key, as a
// browser on this machine does once it has opened the console's link;
// NewClientWithoutDevKey gives one that never opened it.
func (a *App) NewClient(tb testing.TB) *Client {
	tb.Helper()
	c := a.NewClientWithoutDevKey(tb)
	if a.DevKey != "" {
		u, _ := url.Parse(a.URL)
		c.Jar.SetCookies(u, []*http.Cookie{{Name: bound.DevKeyCookie, Value: a.DevKey, Path: "/"}})
	}
	return c
}

// DevLink is the development sign-in link admit would print at start.
func (a *App) DevLink() string { return bound.DevSignInLink(a.URL, a.DevKey) }

// NewClientWithoutDevKey returns a signed-out client that has not opened
// the development sign-in link.
func (a *App) NewClientWithoutDevKey(tb testing.TB) *Client {
	tb.Helper()
	jar, _ := cookiejar.New(nil)
	return &Client{App: a, Client: &http.Client{
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
func (c *Client) SignIn(tb testing.TB, email string) string {
	tb.Helper()
	if c.App.OIDC != nil {
		c.App.OIDC.SetUser(oidcprovider.User{Sub: OIDCSub(email), Email: email, EmailVerified: oidcprovider.Verified})
		if resp := c.OIDCSignIn(tb, "/"); resp.StatusCode != http.StatusSeeOther {
			tb.Fatalf("oidc sign-in: status %d", resp.StatusCode)
		}
		return identity.OIDCUserID(c.App.OIDC.Issuer, OIDCSub(email))
	}
	if c.App.Clerk != nil {
		id := "user_" + strings.NewReplacer("@", "_", ".", "_", "+", "_").Replace(email)
		if email == "owner@example.test" {
			id = c.App.OwnerID
		}
		c.App.Clerk.SetUser(id, clerkfake.Email{Address: email, Verified: true})
		c.SetClerkSession(tb, id)
		return id
	}
	resp := c.PostForm(tb, "/dev/sign-in", url.Values{"email": {email}, "redirect_url": {"/"}})
	if resp.StatusCode != http.StatusSeeOther {
		tb.Fatalf("dev sign-in: status %d", resp.StatusCode)
	}
	return identity.DevUserID(email)
}

// OIDCSub is the provider's subject for a test address: stable, and
// unlike the address.
func OIDCSub(email string) string { return "sub-" + oidcprovider.SubjectDigest(email) }

// OIDCSignIn follows the code flow as a browser would: admit's start route,
// the provider's redirects, then admit's callback, whose answer it returns.
func (c *Client) OIDCSignIn(tb testing.TB, redirect string) *Response {
	tb.Helper()
	callback := c.OIDCAuthorize(tb, redirect)
	return c.Get(tb, strings.TrimPrefix(callback, c.App.URL))
}

// OIDCAuthorize starts a sign-in and follows the provider's redirects up
// to (not into) admit's callback, whose full URL it returns.
func (c *Client) OIDCAuthorize(tb testing.TB, redirect string) string {
	tb.Helper()
	resp := c.Get(tb, "/auth/start?redirect_url="+url.QueryEscape(redirect))
	if resp.StatusCode != http.StatusSeeOther {
		tb.Fatalf("GET /auth/start: status %d", resp.StatusCode)
	}
	next := resp.Header.Get("Location")
	for range 10 {
		if strings.HasPrefix(next, c.App.URL+"/auth/callback") {
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
func (c *Client) SetClerkSession(tb testing.TB, userID string) {
	tb.Helper()
	u, _ := url.Parse(c.App.URL)
	c.Jar.SetCookies(u, []*http.Cookie{{Name: "__session", Value: c.App.Clerk.Session(userID), Path: "/"}})
}

// CSRF fetches and remembers the client's CSRF token.
func (c *Client) CSRF(tb testing.TB) string {
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
	c.CSRFToken = v.CSRFToken
	return v.CSRFToken
}

// Response is a fully read response.
type Response struct {
	StatusCode int
	Header     http.Header
	Body       string
}

// Do sends a request with an optional body of the given content type.
// Extra headers come as name, value pairs.
func (c *Client) Do(tb testing.TB, method, path, contentType string, body io.Reader, headers ...string) *Response {
	tb.Helper()
	r, err := c.Send(method, path, contentType, body, headers...)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// Send is Do returning its error: it may run on any goroutine.
func (c *Client) Send(method, path, contentType string, body io.Reader, headers ...string) (*Response, error) {
	req, err := http.NewRequest(method, c.App.URL+path, body)
	if err != nil {
		return nil, fmt.Errorf("new request: %w", err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.Bearer != "" {
		req.Header.Set("Authorization", "Bearer "+c.Bearer)
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
	return &Response{StatusCode: resp.StatusCode, Header: resp.Header, Body: string(b)}, nil
}

// Get sends a GET.
func (c *Client) Get(tb testing.TB, path string, headers ...string) *Response {
	tb.Helper()
	return c.Do(tb, "GET", path, "", nil, headers...)
}

// PostForm sends a urlencoded form.
func (c *Client) PostForm(tb testing.TB, path string, form url.Values, headers ...string) *Response {
	tb.Helper()
	return c.Do(tb, "POST", path, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()), headers...)
}

// PostJSON sends a JSON body with the client's CSRF token, if any.
func (c *Client) PostJSON(tb testing.TB, method, path, body string, headers ...string) *Response {
	tb.Helper()
	if c.CSRFToken != "" {
		headers = append([]string{"X-CSRF-Token", c.CSRFToken}, headers...)
	}
	return c.Do(tb, method, path, "application/json", strings.NewReader(body), headers...)
}

// SendJSON is PostJSON returning its error: it may run on any goroutine.
func (c *Client) SendJSON(method, path, body string, headers ...string) (*Response, error) {
	if c.CSRFToken != "" {
		headers = append([]string{"X-CSRF-Token", c.CSRFToken}, headers...)
	}
	return c.Send(method, path, "application/json", strings.NewReader(body), headers...)
}

// InsertEntry puts email on program p's list through the store's own
// operations — a signup (opening the program's signup for it if closed,
// and closing it again), then the owner's selection or decline — so the
// entry has the receipt, events and counts a real one has. It returns the
// entry's ID. Other states come from their own operations (invitations,
// redemption, withdrawal), which the tests that need them perform.
func InsertEntry(tb testing.TB, db *store.DB, p *store.Program, email, state string) string {
	tb.Helper()
	ctx := context.Background()
	var ownerID string
	if err := db.View(ctx, func(tx *store.Tx) error {
		return tx.QueryRow(`SELECT user_id FROM staff_members WHERE workspace_id = ? AND role = 'owner' AND active = 1
			ORDER BY created_at LIMIT 1`, p.WorkspaceID).Scan(&ownerID)
	}); err != nil {
		tb.Fatalf("find the program's owner: %v", err)
	}
	owner := OwnerActor(ownerID)
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
		tb.Fatalf("InsertEntry: %q is reached by other operations", state)
	}
	if err != nil {
		tb.Fatalf("make entry %s: %v", state, err)
	}
	return id
}
