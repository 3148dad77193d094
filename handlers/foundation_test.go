package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"testing"

	"admit/internal/clerkfake"
	"admit/internal/version"
	"admit/store"
)

// checkSecurityHeaders asserts the headers every HTML page carries.
func checkSecurityHeaders(t *testing.T, path string, r *testResponse) {
	t.Helper()
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("%s: content type %q, want text/html", path, r.Header.Get("Content-Type"))
	}
	csp := r.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "object-src 'none'", "base-uri 'none'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("%s: CSP %q lacks %q", path, csp, want)
		}
	}
	if got := r.Header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("%s: X-Content-Type-Options=%q", path, got)
	}
	if got := r.Header.Get("Referrer-Policy"); got != "no-referrer" {
		t.Errorf("%s: Referrer-Policy=%q", path, got)
	}
	if strings.Contains(r.Body, "<script>") || strings.Contains(r.Body, " style=") {
		t.Errorf("%s: inline script or style in page", path)
	}
}

func TestSecurityHeaders_EveryHTMLRoute(t *testing.T) {
	app := MustStartApp(t)
	anon := app.NewClient(t)
	owner := app.NewClient(t)
	owner.SignIn(t, "owner@example.test")

	entry := mustInsertEntry(t, app.DB, app.Demo, "owner@example.test", store.StateWaiting)
	prog := "/owner/programs/" + app.Demo.ID
	for _, tc := range []struct {
		client *testClient
		path   string
		status int
	}{
		{anon, "/", http.StatusOK},
		{anon, "/sign-in", http.StatusOK},
		{anon, "/waitlist/demo", http.StatusOK},
		{anon, "/waitlist/no-such", http.StatusNotFound},
		{anon, "/manage/", http.StatusOK},
		{anon, "/privacy", http.StatusOK},
		{anon, "/redeem", http.StatusOK},
		{anon, "/no-such-page", http.StatusNotFound},
		{anon, "/owner/nothing", http.StatusNotFound},
		{owner, "/", http.StatusOK},
		{owner, "/me", http.StatusOK},
		{owner, "/me/waitlist/demo/withdraw", http.StatusOK},
		{owner, "/redeem", http.StatusOK},
		{owner, "/early-access/demo", http.StatusNotFound},
		{owner, "/owner", http.StatusOK},
		{owner, prog, http.StatusOK},
		{owner, prog + "/entries", http.StatusOK},
		{owner, prog + "/entries/" + entry, http.StatusOK},
		{owner, prog + "/events", http.StatusOK},
		{owner, "/no-such-page", http.StatusNotFound},
	} {
		r := tc.client.Get(t, tc.path)
		if r.StatusCode != tc.status {
			t.Fatalf("GET %s: status %d, want %d", tc.path, r.StatusCode, tc.status)
		}
		checkSecurityHeaders(t, tc.path, r)
		if !strings.Contains(r.Body, `data-testid="dev-banner"`) {
			t.Errorf("GET %s: no development banner", tc.path)
		}
	}
}

func TestSecurityHeaders_HSTSOnlyForHTTPS(t *testing.T) {
	app := MustStartApp(t)
	if got := app.NewClient(t).Get(t, "/").Header.Get("Strict-Transport-Security"); got != "" {
		t.Fatalf("HSTS on an http public URL: %q", got)
	}
	u, _ := url.Parse("https://admit.example.com")
	srv, err := New(Options{PublicURL: u, Keys: srvOf(app).opts.Keys}, app.DB, app.Dev)
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	srv.ServeHTTP(rec, mustRequest(t, "GET", "https://admit.example.com/healthz"))
	if got := rec.Header().Get("Strict-Transport-Security"); !strings.HasPrefix(got, "max-age=") {
		t.Fatalf("HSTS=%q on an https public URL", got)
	}
}

func TestSensitiveResponsesAreNoStore(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	c.SignIn(t, "owner@example.test")
	for _, path := range []string{"/me", "/owner", "/api/csrf", "/api/owner/programs", "/sign-in", "/no-such"} {
		if got := c.Get(t, path).Header.Get("Cache-Control"); got != "private, no-store" {
			t.Errorf("GET %s: Cache-Control=%q, want private, no-store", path, got)
		}
	}
}

func TestUnmatchedPathsAre404JSONAndHTML(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	for _, path := range []string{"/api/nothing", "/api/owner", "/api/me", "/assets/nothing.js", "/early-access-nope"} {
		r := c.Get(t, path)
		if r.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", path, r.StatusCode)
		}
	}
	if r := c.Get(t, "/api/nothing"); r.Body != "{\"error\":\"not_found\"}\n" {
		t.Errorf("API 404 body %q", r.Body)
	}
}

func TestOwnerRoutes_RemovedOwnerIsDeniedOnNextRequest(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	c.SignIn(t, "owner@example.test")
	if got := c.Get(t, "/api/owner/programs").StatusCode; got != http.StatusOK {
		t.Fatalf("owner: %d", got)
	}
	if err := app.DB.RemoveOwner(context.Background(), store.Actor{Kind: store.ActorCLI}, store.DemoWorkspace, app.OwnerID); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/api/owner/programs", "/api/owner/workspaces", "/owner"} {
		if got := c.Get(t, path).StatusCode; got != http.StatusNotFound {
			t.Fatalf("removed owner GET %s: %d, want 404", path, got)
		}
	}
}

func TestOwnerRoutes_NonOwnerGetsTheSame404(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	c.SignIn(t, "applicant@example.com")
	missing := c.Get(t, "/api/owner/no-such-route")
	for _, path := range []string{"/api/owner/programs", "/api/owner/workspaces"} {
		r := c.Get(t, path)
		if r.StatusCode != http.StatusNotFound || r.Body != missing.Body {
			t.Fatalf("non-owner GET %s: %d %q, want the 404 of a missing path %q", path, r.StatusCode, r.Body, missing.Body)
		}
	}
	if got := c.Get(t, "/owner").StatusCode; got != http.StatusNotFound {
		t.Fatalf("non-owner GET /owner: %d", got)
	}
	// Signed out: 401 for the API, a redirect to sign-in for pages.
	anon := app.NewClient(t)
	if got := anon.Get(t, "/api/owner/programs").StatusCode; got != http.StatusUnauthorized {
		t.Fatalf("anonymous owner API: %d, want 401", got)
	}
	r := anon.Get(t, "/owner")
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/sign-in?redirect_url=%2Fowner" {
		t.Fatalf("anonymous /owner: %d Location %q", r.StatusCode, r.Header.Get("Location"))
	}
}

func TestClerk_ValidCookieAndBearerAreAccepted(t *testing.T) {
	app := MustStartApp(t, withClerk())
	app.Clerk.SetUser("user_a", clerkfake.Email{Address: "a@example.com", Verified: true})

	cookie := app.NewClient(t)
	cookie.SetClerkSession(t, "user_a")
	if got := cookie.Get(t, "/api/csrf").StatusCode; got != http.StatusOK {
		t.Fatalf("cookie session: %d", got)
	}
	bearer := app.NewClient(t)
	bearer.Bearer = app.Clerk.Session("user_a")
	if got := bearer.Get(t, "/api/csrf").StatusCode; got != http.StatusOK {
		t.Fatalf("bearer session: %d", got)
	}
	for name, tok := range map[string]string{
		"expired":     app.Clerk.Session("user_a", func(c map[string]any) { c["exp"] = 1 }),
		"foreign azp": app.Clerk.Session("user_a", func(c map[string]any) { c["azp"] = "https://evil.example" }),
		"no sid":      app.Clerk.Session("user_a", func(c map[string]any) { delete(c, "sid") }),
	} {
		bad := app.NewClient(t)
		bad.Bearer = tok
		r := bad.Get(t, "/api/csrf")
		if r.StatusCode != http.StatusUnauthorized || r.Body != "{\"error\":\"unauthorized\"}\n" {
			t.Errorf("%s token: %d %q, want 401", name, r.StatusCode, r.Body)
		}
		if r := bad.Get(t, "/me"); r.StatusCode != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), "/sign-in?redirect_url=") {
			t.Errorf("%s token on a page: %d %q, want a redirect to sign-in", name, r.StatusCode, r.Header.Get("Location"))
		}
	}
}

func TestRecipient_ClerkDownFailsClosedWith503(t *testing.T) {
	app := MustStartApp(t, withClerk())
	c := app.NewClient(t)
	c.SignIn(t, "applicant@example.com")
	mustInsertEntry(t, app.DB, app.Demo, "applicant@example.com", store.StateWaiting)
	if r := c.Get(t, "/api/me/waitlist/demo"); r.StatusCode != http.StatusOK {
		t.Fatalf("with Clerk up: %d %s", r.StatusCode, r.Body)
	}
	app.Clerk.SetDown(true)
	r := c.Get(t, "/api/me/waitlist/demo")
	if r.StatusCode != http.StatusServiceUnavailable || r.Body != "{\"error\":\"unavailable\"}\n" {
		t.Fatalf("API with Clerk down: %d %q, want 503", r.StatusCode, r.Body)
	}
	page := c.Get(t, "/me")
	if page.StatusCode != http.StatusServiceUnavailable || !strings.Contains(page.Body, "Try again") {
		t.Fatalf("/me with Clerk down: %d", page.StatusCode)
	}
	if strings.Contains(page.Body, "applicant@example.com") {
		t.Fatal("503 page shows the email")
	}
}

func TestRecipient_UnverifiedAddressIsNeverUsed(t *testing.T) {
	app := MustStartApp(t, withClerk())
	mustInsertEntry(t, app.DB, app.Demo, "pat@example.com", store.StateWaiting)
	app.Clerk.SetUser("user_pat", clerkfake.Email{Address: "pat@example.com", Verified: false},
		clerkfake.Email{Address: "other@example.com", Verified: true})
	c := app.NewClient(t)
	c.SetClerkSession(t, "user_pat")
	notFound := c.Get(t, "/api/me/waitlist/no-such-program")
	r := c.Get(t, "/api/me/waitlist/demo")
	if r.StatusCode != http.StatusNotFound || r.Body != notFound.Body {
		t.Fatalf("unverified address matched: %d %q", r.StatusCode, r.Body)
	}
	if page := c.Get(t, "/me"); strings.Contains(page.Body, "waiting") {
		t.Fatal("/me lists an entry matched by an unverified address")
	}
	// Once verified, the same entry is found.
	app.Clerk.SetUser("user_pat", clerkfake.Email{Address: "pat@example.com", Verified: true})
	if r := c.Get(t, "/api/me/waitlist/demo"); r.StatusCode != http.StatusOK || !strings.Contains(r.Body, `"state":"waiting"`) {
		t.Fatalf("verified address: %d %q", r.StatusCode, r.Body)
	}
}

func TestSignUpCreatesNoStaffRow(t *testing.T) {
	app := MustStartApp(t, withClerk())
	before := dbFingerprint(t, app.DB)
	c := app.NewClient(t)
	c.SignIn(t, "newcomer@example.com")
	for _, path := range []string{"/me", "/api/csrf", "/owner", "/api/owner/programs"} {
		c.Get(t, path)
	}
	if after := dbFingerprint(t, app.DB); after["staff_members"] != before["staff_members"] {
		t.Fatalf("staff rows %s → %s after a sign-in", before["staff_members"], after["staff_members"])
	}
}

func TestHealthzReportsTheBuildVersion(t *testing.T) {
	app := MustStartApp(t)
	resp := app.NewClient(t).Get(t, "/healthz")
	var body struct {
		Status  string       `json:"status"`
		Version version.Info `json:"version"`
	}
	if err := json.Unmarshal([]byte(resp.Body), &body); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /healthz: %d %q (%v)", resp.StatusCode, resp.Body, err)
	}
	if body.Status != "ok" || body.Version != version.Get() || body.Version.Go != runtime.Version() || body.Version.Version == "" {
		t.Fatalf("GET /healthz: %+v, want status ok and version %+v", body, version.Get())
	}
}
