package handlers

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"admit/internal/oidcprovider"
	"admit/internal/testutil"

	"github.com/google/uuid"
)

// wantWritesFail fails the test unless a new signup fails for lack of
// space: the disk is full for admit.
func wantWritesFail(tb testing.TB, app *testApp) {
	tb.Helper()
	r := app.NewClient(tb).PostJSON(tb, "POST", signupAPI, signupJSONBody(uuid.NewString(), "full-"+uuid.NewString()[:8]+"@example.com", 1, true))
	if r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") != "60" {
		tb.Fatalf("a signup on the full disk: status %d, want 503 for lack of space", r.StatusCode)
	}
}

// rule (docs/ARCHITECTURE.md#sessions): ending a session does not depend
// on free space. With the disk full — every other write failing — signing
// out still ends the session on the server in each identity mode: the
// row is deleted (or Clerk's session recorded as ended), so a copy of the
// cookie taken before is refused. Once there is room again the reserve
// that let it through is made again.
func TestSignOut_OnAFullDiskEndsTheSession(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts func() []appOption
		// status is sign-out's answer: a redirect home, or in OpenID
		// Connect mode the page linking to the provider's sign-out.
		status int
	}{
		{"development", func() []appOption { return nil }, http.StatusSeeOther},
		{"OpenID Connect", func() []appOption { return []appOption{withOIDC(oidcprovider.Start(t))} }, http.StatusOK},
		{"Clerk", func() []appOption { return []appOption{withClerk()} }, http.StatusSeeOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, fill := testutil.MustFullDisk(t)
			app := MustStartApp(t, append(tc.opts(), withDataDir(dir))...)
			reserve := app.DB.Path + "-reserve"
			if _, err := os.Stat(reserve); err != nil {
				t.Fatalf("no reserve after start: %v", err)
			}
			c := app.NewClient(t)
			c.SignIn(t, "reader@example.com")
			tok := c.CSRF(t)
			copied := app.NewClient(t)
			copied.Jar.SetCookies(mustURL(t, app.URL+"/"), c.Jar.Cookies(mustURL(t, app.URL+"/")))
			if got := copied.Get(t, "/api/csrf").StatusCode; got != http.StatusOK {
				t.Fatalf("the copied cookie before sign-out: status %d", got)
			}

			fill()
			wantWritesFail(t, app)
			r := c.PostForm(t, "/sign-out", url.Values{"csrf": {tok}})
			if r.StatusCode != tc.status {
				t.Fatalf("sign-out on a full disk: status %d, want %d; body %.400s", r.StatusCode, tc.status, r.Body)
			}
			if got := c.Get(t, "/api/csrf").StatusCode; got != http.StatusUnauthorized {
				t.Fatalf("this browser after sign-out: status %d, want 401", got)
			}
			if got := copied.Get(t, "/api/csrf").StatusCode; got != http.StatusUnauthorized {
				t.Fatalf("a copy of the cookie after sign-out on a full disk: status %d, want 401", got)
			}
			if tc.name != "Clerk" {
				if n := sessionCount(t, app); n != 0 {
					t.Fatalf("%d sessions left after sign-out, want 0", n)
				}
			}
			if _, err := os.Stat(reserve); !os.IsNotExist(err) {
				t.Fatalf("the reserve is still there after it let the sign-out through (%v)", err)
			}

			// Room again: the next session's end makes the reserve again.
			if err := os.Remove(filepath.Join(dir, "filler")); err != nil {
				t.Fatal(err)
			}
			c.SignIn(t, "reader@example.com")
			if r := c.PostForm(t, "/sign-out", url.Values{"csrf": {c.CSRF(t)}}); r.StatusCode != tc.status {
				t.Fatalf("sign-out with room: status %d", r.StatusCode)
			}
			if fi, err := os.Stat(reserve); err != nil || fi.Size() == 0 {
				t.Fatalf("the reserve was not made again once there was room (%v)", err)
			}
		})
	}
}

// rule (docs/ARCHITECTURE.md#sessions): when the server cannot end the
// session even with its reserve, this browser is signed out all the same
// (its cookie cleared) and the page says plainly that the session did not
// end on the server — and it did not: a copy of the cookie still works.
func TestSignOut_WhenTheServerCannotEndTheSessionThePageSaysSo(t *testing.T) {
	dir, fill := testutil.MustFullDisk(t)
	app := MustStartApp(t, withDataDir(dir))
	c := app.NewClient(t)
	c.SignIn(t, "reader@example.com")
	tok := c.CSRF(t)
	copied := app.NewClient(t)
	copied.Jar.SetCookies(mustURL(t, app.URL+"/"), c.Jar.Cookies(mustURL(t, app.URL+"/")))
	// No reserve: the room it would free is taken as well.
	if err := os.Remove(app.DB.Path + "-reserve"); err != nil {
		t.Fatal(err)
	}
	fill()
	wantWritesFail(t, app)

	r := c.PostForm(t, "/sign-out", url.Values{"csrf": {tok}})
	if r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("sign-out that could not end the session: status %d, want 503", r.StatusCode)
	}
	for _, want := range []string{`data-testid="sign-out-incomplete"`, "Signed out in this browser only",
		"Your session did not end on the server.", "its storage is full", "Sign out everywhere"} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(r.Body, "Signed in as") || strings.Contains(r.Body, `action="/sign-out"`) {
		t.Error("the page shows the visitor as signed in")
	}
	if got := r.Header.Get("Cache-Control"); got != "private, no-store" {
		t.Errorf("Cache-Control %q", got)
	}
	cleared := false
	for _, ck := range (&http.Response{Header: r.Header}).Cookies() {
		if ck.Name == "admit_dev" && ck.MaxAge < 0 {
			cleared = true
		}
	}
	if !cleared {
		t.Fatalf("the session cookie was not cleared: Set-Cookie %q", r.Header.Values("Set-Cookie"))
	}
	if got := c.Get(t, "/api/csrf").StatusCode; got != http.StatusUnauthorized {
		t.Fatalf("this browser after sign-out: status %d, want 401", got)
	}
	// What the page says is so: the server still holds the session.
	if n := sessionCount(t, app); n != 1 {
		t.Fatalf("%d sessions, want the one the server could not end", n)
	}
	if got := copied.Get(t, "/api/csrf").StatusCode; got != http.StatusOK {
		t.Fatalf("the copied cookie: status %d, want 200 as the page warns", got)
	}
}
