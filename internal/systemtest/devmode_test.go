package systemtest

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"admit/internal/testutil"
)

// realSignInHint is what every refused development setting must say: how
// to configure real sign-in instead.
var realSignInHint = []string{"CLERK_SECRET_KEY", "ADMIT_OIDC_ISSUER"}

// TestServe_DevModeRefusesToStartBehindAProxy starts the real binary in
// development mode with each setting of a proxied deployment: it exits
// non-zero before listening or touching its data, and says which variable
// to change and how to configure real sign-in.
func TestServe_DevModeRefusesToStartBehindAProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := MustBuildAdmit(t)
	for _, tc := range []struct {
		name    string
		env     []string
		wantVar string
	}{
		{"https public URL", []string{"ADMIT_PUBLIC_URL=https://waitlist.example.com"}, "ADMIT_PUBLIC_URL"},
		{"http public URL off this machine", []string{"ADMIT_PUBLIC_URL=http://waitlist.example.com"}, "ADMIT_PUBLIC_URL"},
		{"https loopback public URL", []string{"ADMIT_PUBLIC_URL=https://127.0.0.1:8443"}, "ADMIT_PUBLIC_URL"},
		{"client IP header", []string{"ADMIT_CLIENT_IP_HEADER=X-Real-IP"}, "ADMIT_CLIENT_IP_HEADER"},
		{"client IP header with a loopback public URL", []string{"ADMIT_CLIENT_IP_HEADER=X-Forwarded-For",
			"ADMIT_PUBLIC_URL=http://127.0.0.1:8080"}, "ADMIT_CLIENT_IP_HEADER"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			data := filepath.Join(dir, "data")
			cmd := exec.Command(bin, "serve")
			cmd.Dir = dir
			cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir,
				"ADMIT_ADDR=127.0.0.1:0", "ADMIT_DATA=" + data,
				"ADMIT_LITESTREAM_CONFIG=" + filepath.Join(dir, "no-litestream.yml")}, tc.env...)
			var stderr testutil.SyncBuffer
			cmd.Stderr = &stderr
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Either admit says it listens (the failure: stop it at once) or
			// its output ends as it exits.
			listening := make(chan string, 1)
			outDone := make(chan struct{})
			go func() {
				defer close(outDone)
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					if strings.HasPrefix(sc.Text(), "listening on") {
						select {
						case listening <- sc.Text():
						default:
						}
					}
				}
			}()
			select {
			case line := <-listening:
				_ = cmd.Process.Kill() // this test's own child, by PID
				<-outDone
				_ = cmd.Wait()
				t.Fatalf("admit serve with %q started: %q", tc.env, line)
			case <-outDone:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				<-outDone
				_ = cmd.Wait()
				t.Fatalf("admit serve with %q neither exited nor listened within 30 s", tc.env)
			}
			err = cmd.Wait()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Fatalf("admit serve with %q: %v, want a non-zero exit status; stderr %q", tc.env, err, stderr.String())
			}
			msg := stderr.String()
			for _, want := range append([]string{tc.wantVar, "development mode"}, realSignInHint...) {
				if !strings.Contains(msg, want) {
					t.Errorf("stderr does not name %s:\n%s", want, msg)
				}
			}
			// Refused before any data was touched.
			for _, name := range []string{"admit.db", "secrets"} {
				if _, err := os.Stat(filepath.Join(data, name)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s was created (stat: %v)", name, err)
				}
			}
		})
	}
}

// TestServe_DevSignInThroughAProxyIsNotFound puts the deployment guide's
// proxy in front of a development server left at its defaults: the proxy
// keeps the loopback Host it was sent, but its forwarding header gives it
// away, and the development sign-in answers 404 with no session.
func TestServe_DevSignInThroughAProxyIsNotFound(t *testing.T) {
	proxy, target := tlsProxy(t)
	srv := MustRunServe(t, map[string]string{"ADMIT_ADDR": "127.0.0.1:0", "ADMIT_DATA": t.TempDir()})
	u, _ := url.Parse(srv.URL)
	target.Store(u)
	c := clientFrom(t, proxy, "127.0.0.2")
	send := func(base, method, path, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		resp.Body.Close()
		return resp
	}
	form := url.Values{"email": {"owner@example.test"}, "redirect_url": {"/owner"}}.Encode()

	resp := send(proxy.URL, "POST", "/dev/sign-in", form)
	if got, want := resp.StatusCode, http.StatusNotFound; got != want {
		t.Fatalf("development sign-in through the proxy: status %d, want %d", got, want)
	}
	if sc := resp.Header.Values("Set-Cookie"); len(sc) != 0 {
		t.Fatalf("the refused sign-in set cookies: %q", sc)
	}
	if resp := send(proxy.URL, "GET", "/owner", ""); resp.StatusCode != http.StatusSeeOther ||
		!strings.HasPrefix(resp.Header.Get("Location"), "/sign-in?") {
		t.Fatalf("the owner console through the proxy afterwards: %d to %q, want 303 to sign in", resp.StatusCode, resp.Header.Get("Location"))
	}

	// Control: the same form straight to the loopback address, after the
	// console's link, signs in.
	openDevLink(t, c, srv.DevLink)
	if resp := send(srv.URL, "POST", "/dev/sign-in", form); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("direct development sign-in: status %d, want 303", resp.StatusCode)
	}
}

// TestServe_DevSignInThroughABareProxyNeedsTheConsolesLink runs the built
// binary in development mode behind the plainest reverse proxy (nginx's
// bare `proxy_pass http://127.0.0.1:PORT;`): it rewrites Host to the
// upstream's and adds no forwarding header, so its requests look exactly
// like a browser's on this machine. Without the link admit printed on its
// console, every field the sign-in page offers gives no session, and the
// owner API stays shut; the console's link, opened on this machine, signs
// in.
func TestServe_DevSignInThroughABareProxyNeedsTheConsolesLink(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := MustBuildAdmit(t)
	dir := t.TempDir()
	srv := MustStartAdmit(t, bin, dir, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir,
		"ADMIT_ADDR=127.0.0.1:0", "ADMIT_DATA=" + filepath.Join(dir, "data"),
		"ADMIT_LITESTREAM_CONFIG=" + filepath.Join(dir, "no-litestream.yml")})
	upstream, _ := url.Parse(srv.URL)
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(upstream) // Host becomes the upstream's; no X-Forwarded-*
	}})
	t.Cleanup(proxy.Close)

	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	send := func(base, method, path, form string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(form))
		if form != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	key := devKeyOf(t, srv.DevLink)

	resp, page := send(proxy.URL, "GET", "/sign-in", "")
	if resp.StatusCode != http.StatusOK || strings.Contains(page, `action="/dev/sign-in"`) ||
		!strings.Contains(page, "development sign-in:") {
		t.Fatalf("the sign-in page through the proxy: %d; want 200 saying where the link is, no form:\n%s", resp.StatusCode, page)
	}
	for name, form := range map[string]url.Values{
		"the page's fields":     {"email": {"owner@example.test"}, "redirect_url": {"/owner"}},
		"a guessed key field":   {"email": {"owner@example.test"}, "redirect_url": {"/owner"}, "key": {"guess"}},
		"the address alone":     {"email": {"owner@example.test"}},
		"an empty key in query": {"email": {"owner@example.test"}, "redirect_url": {"/owner"}},
	} {
		path := "/dev/sign-in"
		if name == "an empty key in query" {
			path += "?key="
		}
		resp, _ := send(proxy.URL, "POST", path, form.Encode())
		if got, want := resp.StatusCode, http.StatusForbidden; got != want {
			t.Fatalf("POST /dev/sign-in through the proxy with %s: status %d, want %d", name, got, want)
		}
		if sc := resp.Header.Values("Set-Cookie"); len(sc) != 0 {
			t.Fatalf("POST /dev/sign-in through the proxy with %s set cookies: %q", name, sc)
		}
	}
	if resp, _ := send(proxy.URL, "GET", "/dev/sign-in", ""); resp.StatusCode != http.StatusForbidden ||
		len(resp.Header.Values("Set-Cookie")) != 0 {
		t.Fatalf("the link without its key through the proxy: %d %q, want 403 and no cookie", resp.StatusCode, resp.Header.Values("Set-Cookie"))
	}
	if resp, _ := send(proxy.URL, "GET", "/api/owner/workspaces", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the owner API through the proxy: %d, want 401", resp.StatusCode)
	}
	if resp, _ := send(proxy.URL, "GET", "/owner", ""); resp.StatusCode != http.StatusSeeOther ||
		!strings.HasPrefix(resp.Header.Get("Location"), "/sign-in?") {
		t.Fatalf("the owner console through the proxy: %d to %q, want 303 to sign in", resp.StatusCode, resp.Header.Get("Location"))
	}

	// On this machine, the console's link and then the form sign in.
	resp, _ = send(srv.URL, "GET", strings.TrimPrefix(srv.DevLink, srv.URL), "")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/sign-in" {
		t.Fatalf("the console's link: %d to %q, want 303 to /sign-in", resp.StatusCode, resp.Header.Get("Location"))
	}
	_, page = send(srv.URL, "GET", "/sign-in", "")
	if !strings.Contains(page, `action="/dev/sign-in"`) || strings.Contains(page, key) {
		t.Fatalf("after the link, the sign-in page offers no form or shows the key:\n%s", page)
	}
	form := url.Values{"email": {"owner@example.test"}, "redirect_url": {"/owner"}}.Encode()
	if resp, _ := send(srv.URL, "POST", "/dev/sign-in", form); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("development sign-in after the link: %d, want 303", resp.StatusCode)
	}
	if resp, _ := send(srv.URL, "GET", "/owner", ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("the owner console after signing in: %d, want 200", resp.StatusCode)
	}
	if strings.Contains(srv.stderr.String(), key) {
		t.Fatal("the log holds the development sign-in key")
	}
}
