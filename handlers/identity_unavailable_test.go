package handlers

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"admit/internal/oidcprovider"
	"admit/store"
)

// wantIdentity503 fails the test unless r is the sign-in provider's 503:
// Retry-After set, and a page that says when to try again (or the JSON
// error).
func wantIdentity503(tb testing.TB, what string, r *testResponse, isJSON bool) {
	tb.Helper()
	if r.StatusCode != http.StatusServiceUnavailable {
		tb.Fatalf("%s: status %d, want 503", what, r.StatusCode)
	}
	if got := r.Header.Get("Retry-After"); got != "30" {
		tb.Errorf("%s: Retry-After %q, want \"30\" (docs/API.md)", what, got)
	}
	if isJSON {
		if r.Body != "{\"error\":\"unavailable\"}\n" {
			tb.Errorf("%s: body %q, want the unavailable error", what, r.Body)
		}
		return
	}
	for _, want := range []string{"could not reach our sign-in provider", `data-testid="retry-after">You can try again in half a minute.`} {
		if !strings.Contains(r.Body, want) {
			tb.Errorf("%s: the page lacks %q", what, want)
		}
	}
}

// rule (docs/ARCHITECTURE.md#identity): a token endpoint that fails (a
// 5xx, or 429) when admit exchanges the code is the provider being
// unavailable — 503 with Retry-After, no session — not a refused sign-in;
// one that refuses the code (a 4xx) is the 400 failure page; and once the
// endpoint answers again, signing in works.
func TestOIDC_TokenEndpointFailingIs503NotAFailedSignIn(t *testing.T) {
	app := mustOIDCApp(t)
	for _, status := range []int{500, 502, 503, 504, 429} {
		c := app.NewClient(t)
		cb := c.OIDCAuthorize(t, "/")
		app.OIDC.SetTokenEndpointStatus(status)
		r := c.Get(t, strings.TrimPrefix(cb, app.URL))
		what := "token endpoint answering " + strconv.Itoa(status)
		wantIdentity503(t, what, r, false)
		if strings.Contains(r.Body, `data-testid="sign-in-failed"`) {
			t.Errorf("%s: the page says the sign-in failed", what)
		}
		// The callback's URL works once: trying again starts over.
		if !strings.Contains(r.Body, `<a href="/sign-in" role="button" data-testid="error-sign-in-again">Sign in again</a>`) ||
			strings.Contains(r.Body, `<a href="">Try again</a>`) {
			t.Errorf("%s: the page does not lead to /sign-in to start over", what)
		}
		if got := r.Header.Get("Cache-Control"); got != "private, no-store" {
			t.Errorf("%s: Cache-Control %q", what, got)
		}
		if n := sessionCount(t, app); n != 0 {
			t.Fatalf("%s: %d sessions, want none", what, n)
		}
		app.OIDC.SetTokenEndpointStatus(0)
	}
	// A refusal stays a refusal.
	c := app.NewClient(t)
	cb := c.OIDCAuthorize(t, "/")
	app.OIDC.SetTokenEndpointStatus(http.StatusBadRequest)
	signInFailure(t, app, c, cb)
	app.OIDC.SetTokenEndpointStatus(0)
	c = app.NewClient(t)
	c.SignIn(t, "after@example.test")
	if got := c.Get(t, "/api/csrf").StatusCode; got != http.StatusOK {
		t.Fatalf("signed in once the endpoint answers: status %d", got)
	}
}

// rule (docs/API.md#headers): every 503 because the sign-in provider
// cannot be reached carries Retry-After, as a page and as JSON: OpenID
// Connect's userinfo and token refresh failing, discovery not done yet,
// and Clerk's API down.
func TestIdentityUnavailable_Every503CarriesRetryAfter(t *testing.T) {
	t.Run("OIDC userinfo down", func(t *testing.T) {
		app := mustOIDCApp(t)
		c := app.NewClient(t)
		c.SignIn(t, "reader@example.com")
		mustInsertEntry(t, app.DB, app.Demo, "reader@example.com", store.StateWaiting)
		app.OIDC.SetDown(true)
		wantIdentity503(t, "GET /me", c.Get(t, "/me"), false)
		wantIdentity503(t, "GET /api/me/waitlist/demo", c.Get(t, "/api/me/waitlist/demo"), true)
	})
	t.Run("OIDC token refresh failing", func(t *testing.T) {
		app := mustOIDCApp(t)
		c := app.NewClient(t)
		c.SignIn(t, "reader@example.com")
		mustInsertEntry(t, app.DB, app.Demo, "reader@example.com", store.StateWaiting)
		app.Clock.Add(2 * time.Hour) // past the access token's hour
		app.OIDC.SetTokenEndpointStatus(http.StatusInternalServerError)
		wantIdentity503(t, "GET /api/me/waitlist/demo", c.Get(t, "/api/me/waitlist/demo"), true)
		if n := sessionCount(t, app); n != 1 {
			t.Fatalf("%d sessions after a failed refresh, want the session kept", n)
		}
	})
	t.Run("OIDC not discovered", func(t *testing.T) {
		p := oidcprovider.Start(t)
		app := MustStartApp(t, withOIDC(p), withoutOIDCDiscovery())
		wantIdentity503(t, "GET /auth/start", app.NewClient(t).Get(t, "/auth/start"), false)
	})
	t.Run("Clerk down", func(t *testing.T) {
		app := MustStartApp(t, withClerk())
		c := app.NewClient(t)
		c.SignIn(t, "applicant@example.com")
		mustInsertEntry(t, app.DB, app.Demo, "applicant@example.com", store.StateWaiting)
		app.Clerk.SetDown(true)
		wantIdentity503(t, "GET /me", c.Get(t, "/me"), false)
		wantIdentity503(t, "GET /api/me/waitlist/demo", c.Get(t, "/api/me/waitlist/demo"), true)
	})
}
