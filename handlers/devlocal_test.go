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
		{"Via", "", []string{"Via", "1.1 nginx"}},
		{"X-Client-IP", "", []string{"X-Client-IP", "127.0.0.1"}},
		{"True-Client-IP", "", []string{"True-Client-IP", "203.0.113.7"}},
		{"CF-Connecting-IP", "", []string{"CF-Connecting-IP", "203.0.113.7"}},
		{"Fastly-Client-IP", "", []string{"Fastly-Client-IP", "203.0.113.7"}},
		{"X-Cluster-Client-IP", "", []string{"X-Cluster-Client-IP", "203.0.113.7"}},
		{"X-Forwarded-Host", "", []string{"X-Forwarded-Host", "waitlist.example.com"}},
		{"X-Forwarded-Proto", "", []string{"X-Forwarded-Proto", "https"}},
		{"an empty Via", "", []string{"Via", ""}},
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
			// The jar keys its cookies by the Host sent: this browser
			// opened the link at this host name.
			r := c.SendHost(t, "POST", "/dev/sign-in", host, "application/x-www-form-urlencoded", devSignInForm(),
				"Cookie", DevKeyCookie+"="+app.DevKey)
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
			headers := append([]string{"Cookie", DevKeyCookie + "=" + app.DevKey}, tc.headers...)
			r := app.NewClient(t).SendHost(t, "GET", "/sign-in", tc.host, "", "", headers...)
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

// TestDevSignIn_NeedsTheConsolesKey: a request straight from this machine
// (as one through a bare, Host-rewriting proxy looks) gets no session
// without the key of the link admit printed at start, whatever the form
// holds; the link gives this browser the key and the form then signs in.
func TestDevSignIn_NeedsTheConsolesKey(t *testing.T) {
	app := MustStartApp(t)
	// Every field the sign-in page offers, and a guess at a key field.
	forms := map[string]string{
		"the page's fields": devSignInForm(),
		"a key field":       url.Values{"email": {"owner@example.test"}, "redirect_url": {"/owner"}, "key": {"guess"}}.Encode(),
	}
	for name, form := range forms {
		t.Run("no key, "+name, func(t *testing.T) {
			c := app.NewClientWithoutDevKey(t)
			before := dbFingerprint(t, app.DB)
			r := c.SendHost(t, "POST", "/dev/sign-in", "", "application/x-www-form-urlencoded", form)
			if got, want := r.StatusCode, http.StatusForbidden; got != want {
				t.Fatalf("POST /dev/sign-in without the key: status %d, want %d", got, want)
			}
			if sc := r.Header.Values("Set-Cookie"); len(sc) != 0 {
				t.Fatalf("the refused sign-in set cookies: %q", sc)
			}
			if !strings.Contains(r.Body, `data-testid="dev-sign-in-needs-link"`) || strings.Contains(r.Body, `action="/dev/sign-in"`) {
				t.Fatalf("the refusal does not say where the link is, or offers the form:\n%s", r.Body)
			}
			if got := r.Header.Get("Cache-Control"); got != "private, no-store" {
				t.Errorf("Cache-Control=%q, want private, no-store", got)
			}
			wantSignedOut(t, "sign-in without the key", c)
			wantNoChange(t, "sign-in without the key", app, before)
		})
	}

	t.Run("the sign-in page without the key", func(t *testing.T) {
		r := app.NewClientWithoutDevKey(t).Get(t, "/sign-in")
		if r.StatusCode != http.StatusOK || strings.Contains(r.Body, `action="/dev/sign-in"`) ||
			!strings.Contains(r.Body, `data-testid="dev-sign-in-needs-link"`) {
			t.Fatalf("GET /sign-in without the key: %d; want 200 saying where the link is, no form:\n%s", r.StatusCode, r.Body)
		}
	})

	wrongKey, err := NewDevSignInKey()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("a wrong key in the cookie", func(t *testing.T) {
		c := app.NewClientWithoutDevKey(t)
		u, _ := url.Parse(app.URL)
		c.Jar.SetCookies(u, []*http.Cookie{{Name: DevKeyCookie, Value: wrongKey, Path: "/"}})
		r := c.SendHost(t, "POST", "/dev/sign-in", "", "application/x-www-form-urlencoded", devSignInForm())
		if got, want := r.StatusCode, http.StatusForbidden; got != want {
			t.Fatalf("POST /dev/sign-in with another key: status %d, want %d", got, want)
		}
		wantSignedOut(t, "sign-in with another key", c)
	})

	for _, tc := range []struct{ name, query string }{
		{"no key", ""},
		{"an empty key", "key="},
		{"another key", "key=" + wrongKey},
		{"the key cut short", "key=" + app.DevKey[:len(app.DevKey)-1]},
		{"the key twice", "key=" + app.DevKey + "&key=" + app.DevKey},
		{"a malformed query", "key=%zz"},
	} {
		t.Run("link with "+tc.name, func(t *testing.T) {
			c := app.NewClientWithoutDevKey(t)
			r := c.SendHost(t, "GET", "/dev/sign-in?"+tc.query, "", "", "")
			if got, want := r.StatusCode, http.StatusForbidden; got != want {
				t.Fatalf("GET /dev/sign-in?%s: status %d, want %d", tc.query, got, want)
			}
			if sc := r.Header.Values("Set-Cookie"); len(sc) != 0 {
				t.Fatalf("the refused link set cookies: %q", sc)
			}
			if !strings.Contains(r.Body, "not the one admit printed") {
				t.Fatalf("the refusal does not say the link is not this start's:\n%s", r.Body)
			}
			if r := c.SendHost(t, "POST", "/dev/sign-in", "", "application/x-www-form-urlencoded", devSignInForm()); r.StatusCode != http.StatusForbidden {
				t.Fatalf("sign-in after a refused link: %d, want 403", r.StatusCode)
			}
		})
	}

	t.Run("the console's link through a proxy", func(t *testing.T) {
		c := app.NewClientWithoutDevKey(t)
		r := c.SendHost(t, "GET", strings.TrimPrefix(app.DevLink(), app.URL), "", "", "", "Via", "1.1 proxy")
		if got, want := r.StatusCode, http.StatusNotFound; got != want {
			t.Fatalf("the link through a proxy: status %d, want %d", got, want)
		}
		if sc := r.Header.Values("Set-Cookie"); len(sc) != 0 {
			t.Fatalf("the refused link set cookies: %q", sc)
		}
	})

	t.Run("the console's link", func(t *testing.T) {
		c := app.NewClientWithoutDevKey(t)
		r := c.SendHost(t, "GET", strings.TrimPrefix(app.DevLink(), app.URL), "", "", "")
		if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/sign-in" {
			t.Fatalf("the console's link: %d to %q, want 303 to /sign-in", r.StatusCode, r.Header.Get("Location"))
		}
		if got := r.Header.Get("Cache-Control"); got != "private, no-store" {
			t.Errorf("Cache-Control=%q, want private, no-store", got)
		}
		sc := strings.Join(r.Header.Values("Set-Cookie"), "\n")
		for _, want := range []string{DevKeyCookie + "=" + app.DevKey, "HttpOnly", "SameSite=Strict", "Path=/"} {
			if !strings.Contains(sc, want) {
				t.Fatalf("Set-Cookie %q lacks %q", sc, want)
			}
		}
		page := c.Get(t, "/sign-in")
		if !strings.Contains(page.Body, `action="/dev/sign-in"`) {
			t.Fatal("after the link, the sign-in page offers no form")
		}
		ok := c.SendHost(t, "POST", "/dev/sign-in", "", "application/x-www-form-urlencoded", devSignInForm())
		if ok.StatusCode != http.StatusSeeOther {
			t.Fatalf("sign-in after the link: %d, want 303", ok.StatusCode)
		}
		// No page shows the key, and the log never holds it.
		for _, path := range []string{"/", "/sign-in", "/owner", "/me", "/me/account", "/privacy"} {
			if body := c.Get(t, path).Body; strings.Contains(body, app.DevKey) {
				t.Fatalf("%s shows the development sign-in key", path)
			}
		}
		if strings.Contains(app.Logs.String(), app.DevKey) {
			t.Fatal("the log holds the development sign-in key")
		}
	})
}

func TestNew_DevIdentityRefusesAMalformedKeyAndMakesOneNobodyHolds(t *testing.T) {
	app := MustStartApp(t)
	u, _ := url.Parse(app.URL)
	for _, key := range []string{"short", strings.Repeat("a", devKeyLen+1)} {
		_, err := New(Options{PublicURL: u, Keys: srvOf(app).opts.Keys, DevSignInKey: key}, app.DB, app.Dev)
		if err == nil || !strings.Contains(err.Error(), "sign-in key") {
			t.Errorf("New with the development identity and key %q: %v, want a refusal naming the sign-in key", key, err)
		}
	}
	// No key given: the server makes its own, told to nobody.
	srv, err := New(Options{PublicURL: u, Keys: srvOf(app).opts.Keys}, app.DB, app.Dev)
	if err != nil {
		t.Fatalf("New without a key: %v", err)
	}
	if len(srv.opts.DevSignInKey) != devKeyLen || srv.opts.DevSignInKey == app.DevKey {
		t.Fatalf("New without a key kept %q", srv.opts.DevSignInKey)
	}
	if srv.devKeyMatches("") {
		t.Fatal("the empty key matches")
	}
}
