package systemtest

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"admit/internal/cli"
	"admit/internal/config"
	"admit/internal/serverkeys"
	"admit/internal/testutil"
	"admit/store"
)

// hermetic returns a copy of env that points ADMIT_LITESTREAM_CONFIG at a
// file that does not exist, unless env sets it: the repository's own
// litestream.yml must not decide what a test replicates.
func hermetic(tb testing.TB, env map[string]string) map[string]string {
	tb.Helper()
	out := map[string]string{"ADMIT_LITESTREAM_CONFIG": filepath.Join(tb.TempDir(), "no-litestream.yml")}
	for k, v := range env {
		out[k] = v
	}
	return out
}

// runningServer is `admit serve` started by MustRunServe.
type runningServer struct {
	// URL is the base URL read from the "listening on" line.
	URL string
	// DevLink is the development sign-in link printed after it, in
	// development mode.
	DevLink string
	Stderr  *testutil.SyncBuffer
	// Stdout receives every stdout line after the "listening on" line.
	Stdout <-chan string
	// Stop cancels Run's context and returns Run's result, failing the
	// test if Run does not return within 10 seconds.
	Stop func(tb testing.TB) error
}

var listeningLine = regexp.MustCompile(`^listening on (http://127\.0\.0\.1:[0-9]+)$`)

// devLinkLine is the development sign-in line serve prints after the
// address: the link and its 43-character key.
var devLinkLine = regexp.MustCompile(`^development sign-in: (http://127\.0\.0\.1:[0-9]+/dev/sign-in\?key=[A-Za-z0-9_-]{43}) `)

// devModeEnv reports whether env (NAME=value lines) starts admit with the
// development identity.
func devModeEnv(env []string) bool {
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if (k == "CLERK_SECRET_KEY" || k == "ADMIT_OIDC_ISSUER") && v != "" {
			return false
		}
	}
	return true
}

// devKeyOf is the key a development sign-in link carries.
func devKeyOf(tb testing.TB, link string) string {
	tb.Helper()
	u, err := url.Parse(link)
	if err != nil || u.Query().Get("key") == "" {
		tb.Fatalf("no key in the development sign-in link %q", link)
	}
	return u.Query().Get("key")
}

// openDevLink opens the development sign-in link with c, as the person at
// the machine does: c's cookie jar then holds the key.
func openDevLink(tb testing.TB, c *http.Client, link string) {
	tb.Helper()
	resp, err := c.Get(link)
	if err != nil {
		tb.Fatalf("open the development sign-in link: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusSeeOther {
		tb.Fatalf("the development sign-in link: status %d", resp.StatusCode)
	}
}

// MustRunServe runs `admit serve` with env in a goroutine and waits for its
// "listening on" line. Run is stopped at cleanup if the test did not stop it.
func MustRunServe(tb testing.TB, env map[string]string) *runningServer {
	tb.Helper()
	env = hermetic(tb, env)
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	stderr := &testutil.SyncBuffer{}
	done := make(chan error, 1)
	go func() {
		err := cli.Run(ctx, nil, fakeEnv(env), pw, stderr)
		pw.Close()
		done <- err
	}()
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()

	var once sync.Once
	var runErr error
	stop := func(tb testing.TB) error {
		tb.Helper()
		once.Do(func() {
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(10 * time.Second):
				runErr = errors.New("Run did not return within 10s of cancellation")
			}
		})
		return runErr
	}
	tb.Cleanup(func() { _ = stop(tb) })

	srv := &runningServer{Stderr: stderr, Stdout: lines, Stop: stop}
	deadline := time.After(15 * time.Second)
	for srv.URL == "" {
		select {
		case line, ok := <-lines:
			if !ok {
				tb.Fatalf("serve ended before printing its address: %v; stderr:\n%s", stop(tb), stderr)
			}
			if m := listeningLine.FindStringSubmatch(line); m != nil {
				srv.URL = m[1]
			}
		case <-deadline:
			tb.Fatalf("no \"listening on\" line within 15s; stderr:\n%s", stderr)
		}
	}
	var kv []string
	for k, v := range env {
		kv = append(kv, k+"="+v)
	}
	if devModeEnv(kv) {
		line := srv.nextLine(tb)
		m := devLinkLine.FindStringSubmatch(line)
		if m == nil {
			tb.Fatalf("stdout line after the address %q, want the development sign-in link", line)
		}
		srv.DevLink = m[1]
	}
	return srv
}

// nextLine returns the next stdout line, failing after a few seconds.
func (s *runningServer) nextLine(tb testing.TB) string {
	tb.Helper()
	select {
	case line, ok := <-s.Stdout:
		if !ok {
			tb.Fatal("stdout closed")
		}
		return line
	case <-time.After(5 * time.Second):
		tb.Fatal("no further stdout line within 5s")
	}
	return ""
}

// get fetches path and returns status and body.
func get(tb testing.TB, c *http.Client, u string) (int, string) {
	tb.Helper()
	resp, err := c.Get(u)
	if err != nil {
		tb.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("read %s: %v", u, err)
	}
	return resp.StatusCode, string(b)
}

func TestRun_ServeStartsPrintsAddressAndShutsDownGracefully(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engineRun) { testServeStartsAndShutsDown(t, e) })
}

// testServeStartsAndShutsDown is TestRun_ServeStartsPrintsAddressAndShutsDownGracefully
// on one engine.
func testServeStartsAndShutsDown(t *testing.T, e engineRun) {
	data := t.TempDir()
	env := map[string]string{"ADMIT_ADDR": "127.0.0.1:0", "ADMIT_DATA": data}
	if e.dbURL != "" {
		env["ADMIT_DATABASE_URL"] = e.dbURL
	}
	srv := MustRunServe(t, env)

	if !strings.HasPrefix(srv.DevLink, srv.URL+"/dev/sign-in?key=") {
		t.Fatalf("development sign-in link %q, want one on %s", srv.DevLink, srv.URL)
	}

	jar, _ := cookiejar.New(nil)
	client := &http.Client{Timeout: 10 * time.Second, Jar: jar}
	for _, tc := range []struct {
		path, want string
	}{
		{"/healthz", `"ok"`},
		{"/readyz", `"ready"`},
		{"/", `href="/waitlist/demo"`},
	} {
		status, body := get(t, client, srv.URL+tc.path)
		if got, want := status, http.StatusOK; got != want {
			t.Fatalf("GET %s: status=%d, want %d; body %s", tc.path, got, want, body)
		}
		if !strings.Contains(body, tc.want) {
			t.Fatalf("GET %s: body lacks %s:\n%s", tc.path, tc.want, body)
		}
	}

	// The demo owner from the first start can sign in and open the console,
	// so an email address passes through the server before the log check.
	openDevLink(t, client, srv.DevLink)
	resp, err := client.PostForm(srv.URL+"/dev/sign-in", url.Values{"email": {"owner@example.test"}, "redirect_url": {"/owner"}})
	if err != nil {
		t.Fatalf("dev sign-in: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got, want := resp.StatusCode, http.StatusOK; got != want {
		t.Fatalf("dev sign-in then /owner: status=%d, want %d", got, want)
	}
	if !strings.Contains(string(body), "Owner console") || !strings.Contains(string(body), "demo") {
		t.Fatalf("/owner after dev sign-in lacks the console or the demo program:\n%s", body)
	}

	if err := srv.Stop(t); err != nil {
		t.Fatalf("Run after cancellation: %v, want nil", err)
	}
	// Shut down means the port is closed.
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(srv.URL, "http://"), time.Second); err == nil {
		c.Close()
		t.Fatal("the server still accepts connections after Run returned")
	}

	logs := srv.Stderr.String()
	if !strings.Contains(logs, "route=") {
		t.Fatalf("stderr holds no request log lines:\n%s", logs)
	}
	if !strings.Contains(logs, "shutting down") {
		t.Errorf("stderr does not log the shutdown:\n%s", logs)
	}
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "@") {
			t.Errorf("log line holds an '@' (an email address?): %s", line)
		}
	}
	_, err = os.Stat(filepath.Join(data, "admit.db"))
	switch {
	case e.dbURL == "" && err != nil:
		t.Errorf("no database in ADMIT_DATA: %v", err)
	case e.dbURL != "" && !errors.Is(err, os.ErrNotExist):
		t.Errorf("a SQLite database in ADMIT_DATA on PostgreSQL (stat: %v)", err)
	}
}

func TestRun_SecondStartKeepsDataAndDoesNotReseed(t *testing.T) {
	data := t.TempDir()
	env := map[string]string{"ADMIT_ADDR": "127.0.0.1:0", "ADMIT_DATA": data}
	first := MustRunServe(t, env)
	if err := first.Stop(t); err != nil {
		t.Fatalf("first Run: %v", err)
	}
	if !strings.Contains(first.Stderr.String(), "seeded the demo") {
		t.Fatalf("first start did not seed the demo:\n%s", first.Stderr)
	}
	second := MustRunServe(t, env)
	status, body := get(t, &http.Client{Timeout: 10 * time.Second}, second.URL+"/")
	if status != http.StatusOK || strings.Count(body, `href="/waitlist/demo"`) != 1 {
		t.Fatalf("second start: GET / status %d, want 200 with one demo link:\n%s", status, body)
	}
	if err := second.Stop(t); err != nil {
		t.Fatalf("second Run: %v", err)
	}
	if strings.Contains(second.Stderr.String(), "seeded the demo") {
		t.Fatal("second start seeded the demo again")
	}
}

func TestRun_DevIdentityRefusesAllInterfaces(t *testing.T) {
	// A port known to be free, so "nothing listens" can be checked on it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()

	for _, addr := range []string{"0.0.0.0:0", net.JoinHostPort("0.0.0.0", strconv.Itoa(port)), net.JoinHostPort("", strconv.Itoa(port))} {
		t.Run(addr, func(t *testing.T) {
			data := t.TempDir()
			var stdout, stderr testutil.SyncBuffer
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				done <- cli.Run(ctx, []string{"serve"}, fakeEnv(hermetic(t, map[string]string{"ADMIT_ADDR": addr, "ADMIT_DATA": data})), &stdout, &stderr)
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "ADMIT_ADDR") {
					t.Fatalf("Run: err=%v, want an error naming ADMIT_ADDR", err)
				}
			case <-time.After(10 * time.Second):
				cancel()
				<-done
				t.Fatalf("Run kept serving on %s with the development identity; stdout %q", addr, stdout.String())
			}
			if strings.Contains(stdout.String(), "listening") {
				t.Fatalf("stdout %q says it listened", stdout.String())
			}
			if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second); err == nil {
				c.Close()
				t.Fatalf("something listens on port %d", port)
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

// runCmd runs one admit command to completion and returns its stdout.
func runCmd(tb testing.TB, env map[string]string, args ...string) (string, error) {
	tb.Helper()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := cli.Run(ctx, args, fakeEnv(env), &stdout, &stderr)
	return stdout.String(), err
}

// mustRunCmd is runCmd that fails the test on an error.
func mustRunCmd(tb testing.TB, env map[string]string, args ...string) string {
	tb.Helper()
	out, err := runCmd(tb, env, args...)
	if err != nil {
		tb.Fatalf("admit %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// ownerStatus returns user's status column from `owner list` output.
func ownerStatus(tb testing.TB, list, user string) string {
	tb.Helper()
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			tb.Fatalf("owner list line %q: want 3 tab-separated fields", line)
		}
		if _, err := time.Parse(time.RFC3339, f[2]); err != nil {
			tb.Fatalf("owner list line %q: time: %v", line, err)
		}
		if f[0] == user {
			return f[1]
		}
	}
	tb.Fatalf("owner list %q does not list %s", list, user)
	return ""
}

func TestOwnerCLI_AddRemoveListAreAudited(t *testing.T) {
	data := t.TempDir()
	env := map[string]string{"ADMIT_DATA": data}

	out := mustRunCmd(t, env, "owner", "add", "--workspace", "Acme", "--user", "user_1")
	if !strings.Contains(out, "user_1") || !strings.Contains(out, "Acme") {
		t.Fatalf("owner add output %q names neither the user nor the workspace", out)
	}
	if got, want := ownerStatus(t, mustRunCmd(t, env, "owner", "list", "--workspace", "Acme"), "user_1"), "active"; got != want {
		t.Fatalf("after add: status=%q, want %q", got, want)
	}
	// Adding an active owner again changes nothing and records nothing.
	mustRunCmd(t, env, "owner", "add", "--workspace", "Acme", "--user", "user_1")

	out = mustRunCmd(t, env, "owner", "remove", "--workspace", "Acme", "--user", "user_1")
	if !strings.Contains(out, "user_1") {
		t.Fatalf("owner remove output %q does not name the user", out)
	}
	if got, want := ownerStatus(t, mustRunCmd(t, env, "owner", "list", "--workspace", "Acme"), "user_1"), "removed"; got != want {
		t.Fatalf("after remove: status=%q, want %q", got, want)
	}
	// Removing again is an error: there is no active owner to remove.
	if _, err := runCmd(t, env, "owner", "remove", "--workspace", "Acme", "--user", "user_1"); err == nil {
		t.Error("removing a removed owner succeeded")
	}

	keys, err := LoadKeys(fakeEnv(env), data)
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(context.Background(), filepath.Join(data, "admit.db"), store.Options{BindingKey: keys.Binding})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	events, err := db.WorkspaceEvents(context.Background(), "Acme")
	if err != nil {
		t.Fatal(err)
	}
	type ev struct{ Type, Subject string }
	var got []ev
	for _, e := range events {
		got = append(got, ev{e.Type, e.SubjectUserID})
		if e.ActorKind != store.ActorCLI {
			t.Errorf("event %s has actor %q, want %q", e.Type, e.ActorKind, store.ActorCLI)
		}
	}
	want := []ev{{"workspace_created", ""}, {"owner_added", "user_1"}, {"owner_removed", "user_1"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("workspace events=%v, want %v", got, want)
	}
}

func TestRun_MigrateIsIdempotent(t *testing.T) {
	data := t.TempDir()
	env := map[string]string{"ADMIT_DATA": data}
	for i := range 2 {
		out := mustRunCmd(t, env, "migrate")
		if !strings.Contains(out, "up to date") {
			t.Fatalf("migrate run %d: output %q", i+1, out)
		}
	}
	// The schema is there, read without store.Open (which would migrate).
	raw, err := sql.Open("sqlite", "file:"+filepath.Join(data, "admit.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var n int
	if err := raw.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN ('workspaces', 'programs', 'entries')`).Scan(&n); err != nil {
		t.Fatalf("read schema: %v", err)
	}
	if got, want := n, 3; got != want {
		t.Fatalf("tables found=%d, want %d", got, want)
	}
}

func TestRun_PortZeroSameOriginFormPostIsAccepted(t *testing.T) {
	// With ADMIT_ADDR=127.0.0.1:0 and no ADMIT_PUBLIC_URL, the allowed
	// Origin must name the port actually bound, or a browser's same-origin
	// POST (Origin: http://127.0.0.1:PORT) would be refused with 403.

	srv := MustRunServe(t, map[string]string{"ADMIT_ADDR": "127.0.0.1:0", "ADMIT_DATA": t.TempDir()})
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/dev/sign-in",
		strings.NewReader(url.Values{"email": {"owner@example.test"}}.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", srv.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("Cookie", "admit_dev_key="+devKeyOf(t, srv.DevLink))
	client := &http.Client{Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got, want := resp.StatusCode, http.StatusSeeOther; got != want {
		t.Fatalf("same-origin sign-in: status=%d, want %d", got, want)
	}
}

// moduleRoot is the repository's root, where the admit command and the
// shipped files (litestream.yml, deploy/) are.
const moduleRoot = "../.."

// fakeEnv is an environment over a fixed map, so tests never read the real
// environment.
func fakeEnv(m map[string]string) config.Environment {
	return func(k string) string { return m[k] }
}

// clerkEnv is a complete Clerk-mode environment; tests override entries.
func clerkEnv(over map[string]string) map[string]string {
	m := map[string]string{
		"CLERK_SECRET_KEY":      "sk_test_x",
		"CLERK_PUBLISHABLE_KEY": "pk_test_x",
		"CLERK_ISSUER":          "https://clerk.example.com",
	}
	for k, v := range over {
		m[k] = v
	}
	return m
}

// LoadKeys loads the server keys as admit's commands do: from the secrets
// source config.Load reads from env, or dataDir's secrets file.
func LoadKeys(env config.Environment, dataDir string) (serverkeys.Keys, error) {
	cfg, err := config.Load(env)
	if err != nil {
		return serverkeys.Keys{}, err
	}
	return serverkeys.Load(cfg.Secrets, dataDir)
}

// TestMain runs the tests, then removes the binary MustBuildAdmit built.
func TestMain(m *testing.M) {
	code := m.Run()
	if admitBinary.dir != "" {
		os.RemoveAll(admitBinary.dir)
	}
	os.Exit(code)
}
