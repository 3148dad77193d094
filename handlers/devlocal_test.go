package handlers

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// devSignInForm is a valid development sign-in as the demo owner.
func devSignInForm() string {
	return url.Values{"email": {"owner@example.test"}, "redirect_url": {"/owner"}}.Encode()
}

// wantSignedOut fails the test unless c holds no session: the CSRF token
// route answers 401 and the owner console sends it to sign in.
func wantSignedOut(tb testing.TB, what string, c *testClient) {
	tb.Helper()
	if got := c.Get(tb, "/api/csrf").StatusCode; got != http.StatusUnauthorized {
		tb.Fatalf("%s: GET /api/csrf afterwards: %d, want 401 (signed out)", what, got)
	}
	r := c.Get(tb, "/owner")
	if r.StatusCode != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), "/sign-in?") {
		tb.Fatalf("%s: GET /owner afterwards: %d to %q, want 303 to the sign-in page", what, r.StatusCode, r.Header.Get("Location"))
	}
}

func TestDevSignIn_AnswersOnlyDirectLoopbackRequests(t *testing.T) {
	app := MustStartApp(t)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(app.URL, "http://"))
	// The site's normal 404: a POST to a path no route has.
	normal := app.NewClient(t).SendHost(t, "POST", "/dev/no-such-route", "", "application/x-www-form-urlencoded", devSignInForm())
	if normal.StatusCode != http.StatusNotFound {
		t.Fatalf("POST to an unknown path: %d, want 404", normal.StatusCode)
	}

	for _, tc := range []struct {
		name    string
		host    string
		headers []string
	}{
		{"public host name", "waitlist.example.com", nil},
		{"public host name with a port", "waitlist.example.com:443", nil},
		{"the public host with the server's port", "waitlist.example.com:" + port, nil},
		{"a name ending in localhost", "localhost.example.com:" + port, nil},
		{"a subdomain of localhost", "admit.localhost:" + port, nil},
		{"a private IPv4 address", "10.0.0.5:" + port, nil},
		{"an IPv6 address", "[2001:db8::1]:" + port, nil},
		{"X-Forwarded-For", "", []string{"X-Forwarded-For", "203.0.113.7"}},
		{"X-Forwarded-For naming loopback", "", []string{"X-Forwarded-For", "127.0.0.1"}},
		{"Forwarded", "", []string{"Forwarded", "for=203.0.113.7;proto=https"}},
		{"X-Real-IP", "", []string{"X-Real-IP", "127.0.0.1"}},
		{"localhost Host through a proxy", "localhost:" + port, []string{"X-Forwarded-For", "203.0.113.7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := app.NewClient(t)
			before := dbFingerprint(t, app.DB)
			r := c.SendHost(t, "POST", "/dev/sign-in", tc.host, "application/x-www-form-urlencoded", devSignInForm(), tc.headers...)
			if got, want := r.StatusCode, http.StatusNotFound; got != want {
				t.Fatalf("POST /dev/sign-in: status %d, want %d", got, want)
			}
			sameResponse(t, "refused sign-in vs the site's 404", r, normal)
			if got := r.Header.Get("Cache-Control"); got != "private, no-store" {
				t.Errorf("Cache-Control=%q, want private, no-store", got)
			}
			if sc := r.Header.Values("Set-Cookie"); len(sc) != 0 {
				t.Fatalf("the refused sign-in set cookies: %q", sc)
			}
			wantSignedOut(t, "refused sign-in", c)
			wantNoChange(t, "refused sign-in", app, before)

			// Control: the same form, sent straight to the loopback
			// address, signs in.
			ok := c.SendHost(t, "POST", "/dev/sign-in", "", "application/x-www-form-urlencoded", devSignInForm())
			if ok.StatusCode != http.StatusSeeOther {
				t.Fatalf("direct sign-in: %d, want 303", ok.StatusCode)
			}
			if got := c.Get(t, "/api/csrf").StatusCode; got != http.StatusOK {
				t.Fatalf("after the direct sign-in, /api/csrf: %d, want 200", got)
			}
		})
	}

	t.Run("no Host", func(t *testing.T) {
		// net/http always sends a Host: an HTTP/1.0 request without one is
		// written by hand.
		r := rawNoHostPost(t, app, devSignInForm())
		if got, want := r.StatusCode, http.StatusNotFound; got != want {
			t.Fatalf("POST /dev/sign-in without a Host: status %d, want %d", got, want)
		}
		if sc := r.Header.Values("Set-Cookie"); len(sc) != 0 {
			t.Fatalf("the refused sign-in set cookies: %q", sc)
		}
	})

	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST:" + port, "localhost",
		"127.0.0.1", "127.9.9.9:" + port, "[::1]:" + port, "[::1]"} {
		t.Run("loopback Host "+host, func(t *testing.T) {
			c := app.NewClient(t)
			r := c.SendHost(t, "POST", "/dev/sign-in", host, "application/x-www-form-urlencoded", devSignInForm())
			if r.StatusCode != http.StatusSeeOther {
				t.Fatalf("POST /dev/sign-in with Host %q: %d, want 303", host, r.StatusCode)
			}
			if !strings.Contains(strings.Join(r.Header.Values("Set-Cookie"), "\n"), "admit_dev=") {
				t.Fatalf("no development cookie set: %q", r.Header.Values("Set-Cookie"))
			}
		})
	}
}

// rawNoHostPost sends an HTTP/1.0 development sign-in without a Host
// header and reads the answer's status and headers.
func rawNoHostPost(tb testing.TB, app *testApp, form string) *testResponse {
	tb.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(app.URL, "http://"))
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /dev/sign-in HTTP/1.0\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n%s", len(form), form)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		tb.Fatalf("read the answer: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return &testResponse{StatusCode: resp.StatusCode, Header: resp.Header, Body: string(b)}
}

func TestDevSignIn_PageOffersTheFormOnlyToDirectLoopbackRequests(t *testing.T) {
	app := MustStartApp(t)
	for _, tc := range []struct {
		name     string
		host     string
		headers  []string
		wantForm bool
	}{
		{"direct", "", nil, true},
		{"localhost", "localhost", nil, true},
		{"public host name", "waitlist.example.com", nil, false},
		{"X-Forwarded-For", "", []string{"X-Forwarded-For", "203.0.113.7"}, false},
		{"Forwarded", "", []string{"Forwarded", "for=203.0.113.7"}, false},
		{"X-Real-IP", "", []string{"X-Real-IP", "203.0.113.7"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := app.NewClient(t).SendHost(t, "GET", "/sign-in", tc.host, "", "", tc.headers...)
			if r.StatusCode != http.StatusOK {
				t.Fatalf("GET /sign-in: %d, want 200", r.StatusCode)
			}
			form := strings.Contains(r.Body, `action="/dev/sign-in"`)
			note := strings.Contains(r.Body, `data-testid="dev-sign-in-local-only"`)
			if form != tc.wantForm || note == tc.wantForm {
				t.Fatalf("GET /sign-in: form shown=%v, local-only note shown=%v; want the form %v", form, note, tc.wantForm)
			}
		})
	}
}
