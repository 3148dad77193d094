package systemtest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"admit/backup"
	"admit/internal/clerkfake"
	"admit/internal/config"
	"admit/store"
)

func readDeployFile(tb testing.TB, name string) string {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(moduleRoot, "deploy", name))
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// TestDeploy_SystemdUnitVerifies runs systemd-analyze on deploy/admit.service
// where it is installed: no warning from verify, and an exposure score of
// at most 2.0 ("OK") from the offline security review.
func TestDeploy_SystemdUnitVerifies(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed")
	}
	unit := readDeployFile(t, "admit.service")
	// verify checks that ExecStart exists: point it at a stand-in.
	dir := t.TempDir()
	bin := filepath.Join(dir, "admit")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(unit, "ExecStart=/usr/local/bin/admit serve") {
		t.Fatal("the unit does not start /usr/local/bin/admit serve")
	}
	path := filepath.Join(dir, "admit.service")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(unit, "/usr/local/bin/admit", bin)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sa, "verify", path).CombinedOutput()
	if err != nil || strings.Contains(string(out), "admit.service") {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, err = exec.Command(sa, "security", "--offline=true", "--threshold=20", path).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security: exposure above 2.0 (%v)\n%s", err, out)
	}
	for _, want := range []string{"User=admit", "StateDirectory=admit", "ProtectSystem=strict", "NoNewPrivileges=yes",
		"CapabilityBoundingSet=\n", "Restart=on-failure"} {
		if !strings.Contains(unit, want) {
			t.Errorf("the unit lacks %q", strings.TrimSpace(want))
		}
	}
	// admit drains HTTP for up to 10 s and gives the backup's final sync up
	// to 15 s: systemd must wait longer before SIGKILL.
	m := regexp.MustCompile(`(?m)^TimeoutStopSec=(\d+)s$`).FindStringSubmatch(unit)
	if m == nil {
		t.Fatal("the unit sets no TimeoutStopSec in seconds")
	}
	if d, _ := time.ParseDuration(m[1] + "s"); d <= 25*time.Second {
		t.Errorf("TimeoutStopSec=%s is not longer than admit's drain and final sync (25 s)", d)
	}
}

// TestDeploy_ProxyFilesSetWhatAdmitReads keeps deploy/'s proxy files and
// environment in step with what the proxy test below builds.
func TestDeploy_ProxyFilesSetWhatAdmitReads(t *testing.T) {
	for file, wants := range map[string][]string{
		"Caddyfile":  {"reverse_proxy 127.0.0.1:8080", "header_up X-Real-IP {remote_host}", "header_up X-Request-ID {http.request.uuid}"},
		"nginx.conf": {"proxy_pass http://127.0.0.1:8080;", "proxy_set_header Host $host;", "proxy_set_header X-Real-IP $remote_addr;", "proxy_set_header X-Request-ID $request_id;", "listen 443 ssl http2;", "gzip off;"},
		"admit.env":  {"ADMIT_PUBLIC_URL=https://", "ADMIT_CLIENT_IP_HEADER=X-Real-IP", "ADMIT_REQUEST_ID_HEADER=X-Request-ID", "ADMIT_METRICS_ADDR=127.0.0.1:"},
	} {
		text := readDeployFile(t, file)
		for _, w := range wants {
			if !strings.Contains(text, w) {
				t.Errorf("deploy/%s lacks %q", file, w)
			}
		}
	}
	env := map[string]string{}
	for _, line := range strings.Split(readDeployFile(t, "admit.env"), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			env[k] = v
		}
	}
	// The shipped placeholders are refused (TestConfigCmd_ShippedAdmitEnvIsRefusedNamingEachPlaceholder);
	// replaced as the operator replaces them, the file passes.
	for k, v := range env {
		env[k] = strings.NewReplacer("replace_me", "0123", "waitlist.example.com", "admit.example.org").Replace(v)
	}
	if _, err := config.Load(fakeEnv(env)); err != nil {
		t.Errorf("deploy/admit.env does not pass admit's configuration check: %v", err)
	}
	// The S3 example is a configuration admit accepts.
	bc, err := backup.LoadConfig(filepath.Join(moduleRoot, "deploy", "litestream.yml"), fakeEnv(nil))
	if err != nil || !bc.Replicated() {
		t.Errorf("deploy/litestream.yml: %v (replicated=%v)", err, bc != nil && bc.Replicated())
	}
}

// tlsProxy is a Go reverse proxy configured like deploy/Caddyfile and
// deploy/nginx.conf: it terminates TLS, keeps the Host header, sets
// X-Real-IP to the connecting address and X-Request-ID to a new UUID,
// overwriting whatever the client sent in either.
func tlsProxy(tb testing.TB) (*httptest.Server, *atomic.Pointer[url.URL]) {
	tb.Helper()
	var target atomic.Pointer[url.URL]
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target.Load())
		pr.Out.Host = pr.In.Host // nginx: proxy_set_header Host $host; Caddy keeps it
		host, _, _ := net.SplitHostPort(pr.In.RemoteAddr)
		pr.Out.Header.Set("X-Real-IP", host)
		pr.Out.Header.Set("X-Request-ID", uuid.NewString())
		pr.Out.Header.Set("X-Forwarded-Proto", "https")
	}}
	ts := httptest.NewTLSServer(rp)
	tb.Cleanup(ts.Close)
	return ts, &target
}

// clientFrom is a client of the TLS proxy that connects from the loopback
// address ip, so the proxy sees a client of its own per address.
func clientFrom(tb testing.TB, proxy *httptest.Server, ip string) *http.Client {
	tb.Helper()
	tr := proxy.Client().Transport.(*http.Transport).Clone()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}
	jar, _ := cookiejar.New(nil)
	return &http.Client{Transport: tr, Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// mustSeedClerkDemo seeds the demo workspace, owned by ownerID, into a new
// database in data, as development mode does on its first start: a
// proxied deployment runs with real sign-in, which seeds nothing.
func mustSeedClerkDemo(tb testing.TB, data, ownerID string) {
	tb.Helper()
	keys, err := LoadKeys(fakeEnv(nil), data)
	if err != nil {
		tb.Fatal(err)
	}
	db, err := store.Open(context.Background(), filepath.Join(data, "admit.db"), store.Options{BindingKey: keys.Binding})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	if _, err := db.SeedDemo(context.Background(), ownerID); err != nil {
		tb.Fatalf("seed the demo: %v", err)
	}
}

func TestDeploy_BehindATLSProxyOriginCookiesHSTSAndClientIPsHold(t *testing.T) {
	proxy, target := tlsProxy(t)
	// Behind a proxy admit runs with real sign-in (development mode refuses
	// to): Clerk, here the fake Backend API, with tokens for the public URL.
	clerk := clerkfake.New(t)
	clerk.SetAuthorizedParty(proxy.URL)
	const ownerID = "user_owner"
	clerk.SetUser(ownerID, clerkfake.Email{Address: "owner@example.test", Verified: true})
	data := t.TempDir()
	mustSeedClerkDemo(t, data, ownerID)
	srv := MustRunServe(t, map[string]string{
		"ADMIT_ADDR":                 "127.0.0.1:0",
		"ADMIT_DATA":                 data,
		"ADMIT_PUBLIC_URL":           proxy.URL,
		"ADMIT_CLIENT_IP_HEADER":     "X-Real-IP",
		"ADMIT_REQUEST_ID_HEADER":    "X-Request-ID",
		"ADMIT_NETWORK_HOURLY_LIMIT": "3",
		"CLERK_SECRET_KEY":           clerk.SecretKey(),
		"CLERK_API_URL":              clerk.URL(),
		"CLERK_ISSUER":               clerk.Issuer(),
		"CLERK_PUBLISHABLE_KEY":      "pk_test_" + base64.RawStdEncoding.EncodeToString([]byte("clerk.admit.test$")),
	})
	u, _ := url.Parse(srv.URL)
	target.Store(u)
	alice, bob := clientFrom(t, proxy, "127.0.0.2"), clientFrom(t, proxy, "127.0.0.3")

	do := func(c *http.Client, method, path, ctype, body string, headers ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, proxy.URL+path, strings.NewReader(body))
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		resp.Body.Close()
		return resp
	}

	// HSTS and the proxy's request ID.
	resp := do(alice, "GET", "/", "", "", "X-Request-ID", "client-chosen")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Strict-Transport-Security"), "max-age=") {
		t.Fatalf("GET / through the proxy: %d, HSTS %q", resp.StatusCode, resp.Header.Get("Strict-Transport-Security"))
	}
	if id := resp.Header.Get("X-Request-ID"); uuid.Validate(id) != nil {
		t.Errorf("X-Request-ID=%q, want the proxy's UUID", id)
	}

	// The session cookie is Secure behind https.
	pu, _ := url.Parse(proxy.URL)
	alice.Jar.SetCookies(pu, []*http.Cookie{{Name: "__session", Value: clerk.Session(ownerID), Path: "/"}})
	resp = do(alice, "GET", "/owner", "", "")
	if resp.StatusCode != http.StatusOK || len(resp.Cookies()) == 0 {
		t.Fatalf("the owner console through the proxy: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	for _, c := range resp.Cookies() {
		if !c.Secure || !c.HttpOnly {
			t.Errorf("cookie %s: Secure=%v HttpOnly=%v, want both", c.Name, c.Secure, c.HttpOnly)
		}
	}

	// Origin: the public https origin is accepted, another refused.
	version := demoNoticeVersionVia(t, alice, proxy.URL)
	signup := func(c *http.Client, email, origin string, headers ...string) int {
		body, _ := json.Marshal(map[string]any{"requestKey": uuid.NewString(), "email": email, "noticeVersion": version, "permission": true})
		return do(c, "POST", "/api/public/programs/demo/signups", "application/json", string(bytes.TrimSpace(body)),
			append([]string{"Origin", origin}, headers...)...).StatusCode
	}
	if code := signup(alice, "proxy-evil@example.com", "https://evil.example"); code != http.StatusForbidden {
		t.Fatalf("cross-origin signup through the proxy: %d, want 403", code)
	}
	if code := signup(alice, "proxy-http@example.com", strings.Replace(proxy.URL, "https:", "http:", 1)); code != http.StatusForbidden {
		t.Fatalf("signup from the http origin: %d, want 403", code)
	}

	// Client-IP counting: each client address has its own hourly limit of
	// 3, and a client's own X-Real-IP does not get it another.
	for i := range 3 {
		if code := signup(alice, "proxy-alice-"+string(rune('a'+i))+"@example.com", proxy.URL); code != http.StatusAccepted {
			t.Fatalf("alice's signup %d: %d, want 202", i+1, code)
		}
	}
	if code := signup(alice, "proxy-alice-d@example.com", proxy.URL, "X-Real-IP", "203.0.113.9"); code != http.StatusTooManyRequests {
		t.Fatalf("alice's 4th signup, claiming another address: %d, want 429", code)
	}
	if code := signup(bob, "proxy-bob@example.com", proxy.URL); code != http.StatusAccepted {
		t.Fatalf("bob's first signup from another address: %d, want 202", code)
	}
}

// demoNoticeVersionVia is demoNoticeVersion through client c.
func demoNoticeVersionVia(tb testing.TB, c *http.Client, base string) int {
	tb.Helper()
	resp, err := c.Get(base + "/api/public/programs/demo")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		Notice struct {
			Version int `json:"version"`
		} `json:"notice"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || v.Notice.Version < 1 {
		tb.Fatalf("GET demo program through the proxy: %d (%v)", resp.StatusCode, err)
	}
	return v.Notice.Version
}

// TestDeploy_ProxyConfigurationsParse runs `nginx -t` on deploy/nginx.conf
// (inside a minimal nginx.conf, with a throwaway certificate) and `caddy
// validate` on deploy/Caddyfile, each where installed.
func TestDeploy_ProxyConfigurationsParse(t *testing.T) {
	t.Run("nginx", func(t *testing.T) {
		nginx, err := exec.LookPath("nginx")
		if err != nil {
			t.Skip("nginx is not installed")
		}
		openssl, err := exec.LookPath("openssl")
		if err != nil {
			t.Skip("openssl is not installed")
		}
		dir := t.TempDir()
		cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
		if out, err := exec.Command(openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
			"-days", "1", "-subj", "/CN=waitlist.example.com").CombinedOutput(); err != nil {
			t.Fatalf("openssl: %v\n%s", err, out)
		}
		site := strings.NewReplacer("/etc/letsencrypt/live/waitlist.example.com/fullchain.pem", cert,
			"/etc/letsencrypt/live/waitlist.example.com/privkey.pem", key).Replace(readDeployFile(t, "nginx.conf"))
		sitePath := filepath.Join(dir, "site.conf")
		conf := "pid " + dir + "/nginx.pid;\nerror_log " + dir + "/error.log;\nevents {}\nhttp {\n  access_log off;\n" +
			"  client_body_temp_path " + dir + "/body;\n  proxy_temp_path " + dir + "/proxy;\n  include " + sitePath + ";\n}\n"
		mainPath := filepath.Join(dir, "nginx.conf")
		if err := os.WriteFile(sitePath, []byte(site), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(mainPath, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(nginx, "-t", "-c", mainPath, "-p", dir).CombinedOutput(); err != nil {
			t.Fatalf("nginx -t: %v\n%s", err, out)
		}
	})
	t.Run("caddy", func(t *testing.T) {
		caddy, err := exec.LookPath("caddy")
		if err != nil {
			t.Skip("caddy is not installed")
		}
		home := t.TempDir()
		cmd := exec.Command(caddy, "validate", "--config", filepath.Join(moduleRoot, "deploy", "Caddyfile"), "--adapter", "caddyfile")
		cmd.Env = append(os.Environ(), "HOME="+home, "XDG_DATA_HOME="+home, "XDG_CONFIG_HOME="+home)
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "Valid configuration") {
			t.Fatalf("caddy validate: %v\n%s", err, out)
		}
	})
}
