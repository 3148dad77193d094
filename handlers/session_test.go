package handlers

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"admit/internal/identity"
)

// copyCookies returns a new client holding the same cookies as c: what an
// attacker who copied the browser's cookies holds.
func copyCookies(tb testing.TB, c *testClient) *testClient {
	tb.Helper()
	u, _ := url.Parse(c.App.URL)
	cp := c.App.NewClient(tb)
	cp.Jar.SetCookies(u, c.Jar.Cookies(u))
	cp.CSRFToken = c.CSRFToken
	return cp
}

func mustSignOut(tb testing.TB, c *testClient) {
	tb.Helper()
	resp := c.PostForm(tb, "/sign-out", url.Values{"csrf": {c.CSRF(tb)}})
	if resp.StatusCode != http.StatusSeeOther {
		tb.Fatalf("sign-out: status %d", resp.StatusCode)
	}
}

func TestSession_DevCopiedCookieIsRefusedAfterSignOut(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	c.SignIn(t, "reader@example.test")
	copied := copyCookies(t, c)
	if got := copied.Get(t, "/api/csrf").StatusCode; got != http.StatusOK {
		t.Fatalf("the copy before sign-out: status %d, want 200", got)
	}
	mustSignOut(t, c)
	if got, want := copied.Get(t, "/api/csrf").StatusCode, http.StatusUnauthorized; got != want {
		t.Fatalf("the copied cookie after sign-out: status %d, want %d", got, want)
	}
	if got, want := copied.Get(t, "/me").StatusCode, http.StatusSeeOther; got != want {
		t.Fatalf("the copied cookie on /me after sign-out: status %d, want %d (to sign in)", got, want)
	}
}

func TestSession_ClerkCopiedTokenIsRefusedAfterSignOut(t *testing.T) {
	app := MustStartApp(t, withClerk())
	c := app.NewClient(t)
	c.SignIn(t, "reader@example.test")
	copied := copyCookies(t, c)
	other := app.NewClient(t)
	other.SignIn(t, "reader@example.test") // another Clerk session of the same user
	mustSignOut(t, c)
	if got, want := copied.Get(t, "/api/csrf").StatusCode, http.StatusUnauthorized; got != want {
		t.Fatalf("the copied Clerk token after sign-out: status %d, want %d", got, want)
	}
	if got := other.Get(t, "/api/csrf").StatusCode; got != http.StatusOK {
		t.Fatalf("another session of the same user: status %d, want 200 (only the signed-out session ends)", got)
	}
}

func TestSession_SignOutEverywhereEndsEveryConcurrentSession(t *testing.T) {
	app := MustStartApp(t)
	laptop, phone, someoneElse := app.NewClient(t), app.NewClient(t), app.NewClient(t)
	laptop.SignIn(t, "owner@example.test")
	phone.SignIn(t, "owner@example.test")
	someoneElse.SignIn(t, "reader@example.test")
	for _, c := range []*testClient{laptop, phone} {
		if got := c.Get(t, "/owner").StatusCode; got != http.StatusOK {
			t.Fatalf("owner console before: status %d", got)
		}
	}
	page := laptop.Get(t, "/me/account")
	if page.StatusCode != http.StatusOK || !strings.Contains(page.Body, app.OwnerID) ||
		!strings.Contains(page.Body, `action="/me/account/sign-out-everywhere"`) {
		t.Fatalf("account page: status %d, want the user ID and the sign-out-everywhere form", page.StatusCode)
	}
	if got := page.Header.Get("Cache-Control"); got != "private, no-store" {
		t.Fatalf("account page Cache-Control=%q", got)
	}
	// Without the CSRF token nothing ends.
	if got, want := laptop.PostForm(t, "/me/account/sign-out-everywhere", nil).StatusCode, http.StatusForbidden; got != want {
		t.Fatalf("without CSRF: status %d, want %d", got, want)
	}
	resp := laptop.PostForm(t, "/me/account/sign-out-everywhere", url.Values{"csrf": {laptop.CSRF(t)}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("sign out everywhere: status %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	for name, c := range map[string]*testClient{"laptop": laptop, "phone": phone} {
		if got, want := c.Get(t, "/owner").StatusCode, http.StatusSeeOther; got != want {
			t.Fatalf("%s after sign-out everywhere: status %d, want %d", name, got, want)
		}
	}
	if got := someoneElse.Get(t, "/api/csrf").StatusCode; got != http.StatusOK {
		t.Fatalf("another person's session: status %d, want 200", got)
	}
	if n, err := app.DB.CountUserSessions(t.Context(), app.OwnerID); err != nil || n != 0 {
		t.Fatalf("owner sessions left: %d, %v", n, err)
	}
}

func TestSession_ExpiresWithTheClock(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	c.SignIn(t, "reader@example.test")
	app.Clock.Add(identity.SessionTTL - 1)
	if got := c.Get(t, "/api/csrf").StatusCode; got != http.StatusOK {
		t.Fatalf("just before expiry: status %d", got)
	}
	app.Clock.Add(1)
	if got, want := c.Get(t, "/api/csrf").StatusCode, http.StatusUnauthorized; got != want {
		t.Fatalf("at expiry: status %d, want %d", got, want)
	}
}

func TestSession_ClerkSignOutEverywhereRevokesEverySessionAtClerk(t *testing.T) {
	app := MustStartApp(t, withClerk())
	laptop, phone, someoneElse := app.NewClient(t), app.NewClient(t), app.NewClient(t)
	laptop.SignIn(t, "owner@example.test")
	phone.SignIn(t, "owner@example.test")
	someoneElse.SignIn(t, "reader@example.test")
	resp := laptop.PostForm(t, "/me/account/sign-out-everywhere", url.Values{"csrf": {laptop.CSRF(t)}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign out everywhere: status %d body %s", resp.StatusCode, resp.Body)
	}
	// The phone's token still verifies for up to a minute, but its session
	// was revoked at Clerk and is recorded as ended here.
	if got, want := phone.Get(t, "/api/csrf").StatusCode, http.StatusUnauthorized; got != want {
		t.Fatalf("the other device's current token: status %d, want %d", got, want)
	}
	if got := someoneElse.Get(t, "/api/csrf").StatusCode; got != http.StatusOK {
		t.Fatalf("another person's session: status %d, want 200", got)
	}
}

func TestSession_PrivacyPageSaysWhatSessionsKeepInEachMode(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []appOption
		want string
	}{
		{"development", nil, "the address you signed in with (encrypted"},
		{"Clerk", []appOption{withClerk()}, "a fingerprint (SHA-256) of that sign-in session"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := MustStartApp(t, tc.opts...)
			page := app.NewClient(t).Get(t, "/privacy")
			if !strings.Contains(page.Body, tc.want) {
				t.Fatalf("privacy page lacks %q", tc.want)
			}
		})
	}
}
