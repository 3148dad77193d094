package secure_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// The CSRF and origin checks as the app applies them: a signed-in write
// with another sign-in's token, or none, is refused; a write from another
// origin is refused before any handler runs, and changes nothing.

func TestCSRF_TokenFromAnotherSessionIsRejected(t *testing.T) {
	app := MustStartApp(t)
	alice := app.NewClient(t)
	alice.SignIn(t, "alice@example.com")
	bob := app.NewClient(t)
	bob.SignIn(t, "bob@example.com")
	aliceToken := alice.CSRF(t)
	bobToken := bob.CSRF(t)
	if aliceToken == bobToken {
		t.Fatal("two sessions got the same CSRF token")
	}

	// Bob submits a form carrying Alice's token: refused, Bob stays signed in.
	r := bob.PostForm(t, "/sign-out", url.Values{"csrf": {aliceToken}})
	if got, want := r.StatusCode, http.StatusForbidden; got != want {
		t.Fatalf("sign-out with another session's token: status %d, want %d", got, want)
	}
	if got := bob.Get(t, "/api/csrf").StatusCode; got != http.StatusOK {
		t.Fatalf("bob was signed out by a foreign token: %d", got)
	}
	// No token at all: refused.
	if got := bob.PostForm(t, "/sign-out", url.Values{}).StatusCode; got != http.StatusForbidden {
		t.Fatalf("sign-out without a token: status %d, want 403", got)
	}
	// The same user signing in again is a new session: the old token fails.
	bob.SignIn(t, "bob@example.com")
	if got := bob.PostForm(t, "/sign-out", url.Values{"csrf": {bobToken}}).StatusCode; got != http.StatusForbidden {
		t.Fatalf("token from bob's previous session: status %d, want 403", got)
	}
	// Bob's own current token works (header form).
	tok := bob.CSRF(t)
	if got := bob.PostForm(t, "/sign-out", url.Values{}, "X-CSRF-Token", tok).StatusCode; got != http.StatusSeeOther {
		t.Fatalf("sign-out with own token: status %d, want 303", got)
	}
	if got := bob.Get(t, "/api/csrf").StatusCode; got != http.StatusUnauthorized {
		t.Fatalf("after sign-out /api/csrf: %d, want 401", got)
	}
}

func TestCrossOriginPost_IsRejectedWithNoDatabaseChange(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	c.SignIn(t, "owner@example.test")
	tok := c.CSRF(t)
	before := dbFingerprint(t, app.DB)
	for _, tc := range []struct {
		name    string
		headers []string
	}{
		{"foreign Origin", []string{"Origin", "https://evil.example"}},
		{"Origin with another port", []string{"Origin", strings.Replace(app.URL, "127.0.0.1:", "127.0.0.1:1", 1)}},
		{"null Origin", []string{"Origin", "null"}},
		{"cross-site fetch metadata", []string{"Sec-Fetch-Site", "cross-site"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{"/dev/sign-in", "/sign-out", "/waitlist/demo", "/manage/remove"} {
				r := c.PostForm(t, path, url.Values{"email": {"mallory@example.com"}, "csrf": {tok}, "permission": {"yes"},
					"noticeVersion": {"1"}, "requestKey": {"5b0c7a4e-2d7e-4b8e-9a51-3f1c2d4e5f60"},
					"token": {strings.Repeat("a", 64)}}, tc.headers...)
				if got, want := r.StatusCode, http.StatusForbidden; got != want {
					t.Fatalf("POST %s: status %d, want %d", path, got, want)
				}
			}
		})
	}
	for _, tc := range [][]string{{"Origin", "https://evil.example"}, {"Sec-Fetch-Site", "cross-site"}} {
		body := `{"requestKey":"5b0c7a4e-2d7e-4b8e-9a51-3f1c2d4e5f61","email":"mallory@example.com","noticeVersion":1,"permission":true}`
		if r := c.PostJSON(t, "POST", "/api/public/programs/demo/signups", body, tc...); r.StatusCode != http.StatusForbidden {
			t.Fatalf("cross-origin JSON signup (%s): %d, want 403", tc[0], r.StatusCode)
		}
	}
	if after := dbFingerprint(t, app.DB); !sameRows(before, after) {
		t.Fatalf("database changed: before %v after %v", before, after)
	}
	// Control: the same signup from the right origin does change the database.
	ok := c.PostForm(t, "/waitlist/demo", url.Values{"email": {"mallory@example.com"}, "permission": {"yes"},
		"noticeVersion": {"1"}, "requestKey": {"5b0c7a4e-2d7e-4b8e-9a51-3f1c2d4e5f62"}}, "Origin", app.URL)
	if ok.StatusCode != http.StatusAccepted {
		t.Fatalf("same-origin signup: %d", ok.StatusCode)
	}
	if n := appCount(t, app, `SELECT count(*) FROM entries WHERE email_key = 'mallory@example.com'`); n != 1 {
		t.Fatalf("same-origin signup stored %d entries, want 1", n)
	}
	// Still signed in as the owner: the cross-origin sign-in did not take.
	if got := c.Get(t, "/api/owner/programs").StatusCode; got != http.StatusOK {
		t.Fatalf("owner session lost: %d", got)
	}
	// The same-origin Origin header is accepted.
	if got := c.PostForm(t, "/sign-out", url.Values{"csrf": {tok}}, "Origin", app.URL).StatusCode; got != http.StatusSeeOther {
		t.Fatalf("same-origin sign-out: %d, want 303", got)
	}
}
