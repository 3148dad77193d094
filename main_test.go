package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
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

	"admit/store"
)

// fakeEnv is a getenv over a fixed map, so tests never read the real
// environment.
func fakeEnv(m map[string]string) func(string) string {
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

func TestLoadConfig_Defaults(t *testing.T) {
	cfg, err := LoadConfig(fakeEnv(nil))
	if err != nil {
		t.Fatalf("LoadConfig with an empty environment: %v", err)
	}
	if got, want := cfg.Addr, "127.0.0.1:8080"; got != want {
		t.Errorf("Addr=%q, want %q", got, want)
	}
	if got, want := cfg.DataDir, "./data"; got != want {
		t.Errorf("DataDir=%q, want %q", got, want)
	}
	if got, want := cfg.DBPath(), filepath.Join("data", "admit.db"); got != want {
		t.Errorf("DBPath=%q, want %q", got, want)
	}
	if cfg.PublicURL == nil {
		t.Fatal("PublicURL is nil")
	}
	if got, want := cfg.PublicURL.String(), "http://127.0.0.1:8080"; got != want {
		t.Errorf("PublicURL=%q, want %q", got, want)
	}
	if got, want := cfg.NetworkHourlyLimit, 20; got != want {
		t.Errorf("NetworkHourlyLimit=%d, want %d", got, want)
	}
	if got, want := cfg.WriteQueue, store.DefaultSignupQueue; got != want {
		t.Errorf("WriteQueue=%d, want %d", got, want)
	}
	if got, want := cfg.ClerkAuthorizedParties, []string{"http://127.0.0.1:8080"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ClerkAuthorizedParties=%q, want %q", got, want)
	}
	if !cfg.DevMode() {
		t.Error("DevMode()=false without CLERK_SECRET_KEY, want true")
	}
	if got, want := cfg.DevOwnerEmail, "owner@example.test"; got != want {
		t.Errorf("DevOwnerEmail=%q, want %q", got, want)
	}
}

func TestLoadConfig_ValuesFromTheEnvironment(t *testing.T) {
	cfg, err := LoadConfig(fakeEnv(clerkEnv(map[string]string{
		"ADMIT_ADDR":                 "0.0.0.0:9000",
		"ADMIT_DATA":                 "/srv/admit",
		"ADMIT_PUBLIC_URL":           "https://admit.example.com/",
		"ADMIT_NETWORK_HOURLY_LIMIT": "7",
		"CLERK_API_URL":              "https://api.clerk.example/v1/",
		"CLERK_AUTHORIZED_PARTIES":   "https://a.example, https://b.example,",
		"ADMIT_CLIENT_IP_HEADER":     "X-Real-IP",
		"ADMIT_WRITE_QUEUE":          "900",
	})))
	if err != nil {
		t.Fatalf("LoadConfig: %v", err)
	}
	if cfg.DevMode() {
		t.Error("DevMode()=true with CLERK_SECRET_KEY set")
	}
	if got, want := cfg.PublicURL.String(), "https://admit.example.com"; got != want {
		t.Errorf("PublicURL=%q, want %q (the trailing slash dropped)", got, want)
	}
	if got, want := cfg.NetworkHourlyLimit, 7; got != want {
		t.Errorf("NetworkHourlyLimit=%d, want %d", got, want)
	}
	if got, want := cfg.ClerkAPIURL, "https://api.clerk.example/v1"; got != want {
		t.Errorf("ClerkAPIURL=%q, want %q", got, want)
	}
	if got, want := cfg.ClerkAuthorizedParties, []string{"https://a.example", "https://b.example"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ClerkAuthorizedParties=%q, want %q", got, want)
	}
	if got, want := cfg.ClientIPHeader, "X-Real-IP"; got != want {
		t.Errorf("ClientIPHeader=%q, want %q", got, want)
	}
	if got, want := cfg.WriteQueue, 900; got != want {
		t.Errorf("WriteQueue=%d, want %d", got, want)
	}
}

func TestLoadConfig_DevIdentityOnlyOnLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr    string
		wantErr bool
	}{
		{"127.0.0.1:8080", false},
		{"127.0.0.1:0", false},
		{"localhost:8080", false},
		{"[::1]:8080", false},
		{"0.0.0.0:8080", true},
		{":8080", true},
		{":0", true},
		{"[::]:8080", true},
		{"192.0.2.1:80", true},
		{"example.com:80", true},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			_, err := LoadConfig(fakeEnv(map[string]string{"ADMIT_ADDR": tc.addr}))
			if got := err != nil; got != tc.wantErr {
				t.Fatalf("ADMIT_ADDR=%q: err=%v, want error %v", tc.addr, err, tc.wantErr)
			}
			if tc.wantErr && !strings.Contains(err.Error(), "ADMIT_ADDR") {
				t.Fatalf("error %q does not name ADMIT_ADDR", err)
			}
		})
	}
}

func TestLoadConfig_ClerkModeRequiresPublishableKeyAndIssuer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		wantErr []string // substrings; nil means no error
	}{
		{"complete", clerkEnv(nil), nil},
		{"all interfaces allowed", clerkEnv(map[string]string{"ADMIT_ADDR": "0.0.0.0:8080"}), nil},
		{"unspecified host allowed", clerkEnv(map[string]string{"ADMIT_ADDR": ":8080"}), nil},
		{"no publishable key", clerkEnv(map[string]string{"CLERK_PUBLISHABLE_KEY": ""}), []string{"CLERK_PUBLISHABLE_KEY"}},
		{"no issuer", clerkEnv(map[string]string{"CLERK_ISSUER": ""}), []string{"CLERK_ISSUER"}},
		{"neither", clerkEnv(map[string]string{"CLERK_PUBLISHABLE_KEY": "", "CLERK_ISSUER": ""}),
			[]string{"CLERK_PUBLISHABLE_KEY", "CLERK_ISSUER"}},
		{"http issuer", clerkEnv(map[string]string{"CLERK_ISSUER": "http://clerk.example.com"}), []string{"CLERK_ISSUER"}},
		{"dev mode with a stray issuer", map[string]string{"CLERK_ISSUER": "https://clerk.example.com"}, []string{"CLERK_SECRET_KEY"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := LoadConfig(fakeEnv(tc.env))
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("LoadConfig: %v", err)
				}
				if cfg.DevMode() {
					t.Fatal("DevMode()=true with CLERK_SECRET_KEY set")
				}
				return
			}
			if err == nil {
				t.Fatal("LoadConfig succeeded, want an error")
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %s", err, want)
				}
			}
		})
	}
}

func TestLoadConfig_RejectsBadValues(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		wantVar string
	}{
		{"public URL with a path", map[string]string{"ADMIT_PUBLIC_URL": "https://admit.example.com/app"}, "ADMIT_PUBLIC_URL"},
		{"public URL with a query", map[string]string{"ADMIT_PUBLIC_URL": "https://admit.example.com/?a=1"}, "ADMIT_PUBLIC_URL"},
		{"public URL with a fragment", map[string]string{"ADMIT_PUBLIC_URL": "https://admit.example.com#x"}, "ADMIT_PUBLIC_URL"},
		{"public URL with user info", map[string]string{"ADMIT_PUBLIC_URL": "https://u:p@admit.example.com"}, "ADMIT_PUBLIC_URL"},
		{"public URL ftp", map[string]string{"ADMIT_PUBLIC_URL": "ftp://admit.example.com"}, "ADMIT_PUBLIC_URL"},
		{"public URL without a host", map[string]string{"ADMIT_PUBLIC_URL": "https://"}, "ADMIT_PUBLIC_URL"},
		{"limit 0", map[string]string{"ADMIT_NETWORK_HOURLY_LIMIT": "0"}, "ADMIT_NETWORK_HOURLY_LIMIT"},
		{"limit -1", map[string]string{"ADMIT_NETWORK_HOURLY_LIMIT": "-1"}, "ADMIT_NETWORK_HOURLY_LIMIT"},
		{"limit abc", map[string]string{"ADMIT_NETWORK_HOURLY_LIMIT": "abc"}, "ADMIT_NETWORK_HOURLY_LIMIT"},
		{"write queue 0", map[string]string{"ADMIT_WRITE_QUEUE": "0"}, "ADMIT_WRITE_QUEUE"},
		{"write queue too deep", map[string]string{"ADMIT_WRITE_QUEUE": "100001"}, "ADMIT_WRITE_QUEUE"},
		{"write queue abc", map[string]string{"ADMIT_WRITE_QUEUE": "abc"}, "ADMIT_WRITE_QUEUE"},
		{"addr without port", map[string]string{"ADMIT_ADDR": "127.0.0.1"}, "ADMIT_ADDR"},
		{"addr with a bad port", map[string]string{"ADMIT_ADDR": "127.0.0.1:99999"}, "ADMIT_ADDR"},
		{"client IP header with a colon", map[string]string{"ADMIT_CLIENT_IP_HEADER": "X-Real-IP: 1"}, "ADMIT_CLIENT_IP_HEADER"},
		{"Clerk API URL v2", clerkEnv(map[string]string{"CLERK_API_URL": "https://api.clerk.com/v2"}), "CLERK_API_URL"},
		{"Clerk API URL without a version", clerkEnv(map[string]string{"CLERK_API_URL": "https://api.clerk.com"}), "CLERK_API_URL"},
		{"Clerk API URL without a host", clerkEnv(map[string]string{"CLERK_API_URL": "/v1"}), "CLERK_API_URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadConfig(fakeEnv(tc.env))
			if err == nil {
				t.Fatalf("LoadConfig(%v) succeeded, want an error naming %s", tc.env, tc.wantVar)
			}
			if !strings.Contains(err.Error(), tc.wantVar) {
				t.Fatalf("error %q does not name %s", err, tc.wantVar)
			}
		})
	}
}

func TestLoadConfig_ReportsEveryProblemAtOnce(t *testing.T) {
	_, err := LoadConfig(fakeEnv(map[string]string{
		"ADMIT_ADDR":                 "0.0.0.0:8080",
		"ADMIT_PUBLIC_URL":           "ftp://admit.example.com",
		"ADMIT_NETWORK_HOURLY_LIMIT": "abc",
	}))
	if err == nil {
		t.Fatal("LoadConfig succeeded, want errors")
	}
	for _, want := range []string{"ADMIT_ADDR", "ADMIT_PUBLIC_URL", "ADMIT_NETWORK_HOURLY_LIMIT"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if got, want := len(strings.Split(err.Error(), "\n")), 3; got != want {
		t.Errorf("error has %d lines, want %d (one per problem): %q", got, want, err)
	}
}

// secretEnv returns all ADMIT_SECRET_* variables, each key filled with b.
func secretEnv(b byte) map[string]string {
	m := map[string]string{}
	for _, n := range secretNames {
		m["ADMIT_SECRET_"+strings.ToUpper(n)] = strings.Repeat(hex.EncodeToString([]byte{b}), 32)
	}
	return m
}

func TestLoadKeys_GeneratesPrivateFileOnceAndReusesIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data") // not created yet
	first, err := LoadKeys(fakeEnv(nil), dir)
	if err != nil {
		t.Fatalf("first LoadKeys: %v", err)
	}
	st, err := os.Stat(filepath.Join(dir, "secrets"))
	if err != nil {
		t.Fatalf("secrets file: %v", err)
	}
	if got, want := st.Mode().Perm(), os.FileMode(0o600); got != want {
		t.Fatalf("secrets file mode=%o, want %o", got, want)
	}
	keys := [][]byte{first.SessionHash, first.SessionBlock, first.CSRF, first.Binding, first.Counter}
	seen := map[string]bool{}
	for i, k := range keys {
		if got, want := len(k), 32; got != want {
			t.Fatalf("key %d has %d bytes, want %d", i, got, want)
		}
		if seen[string(k)] {
			t.Fatalf("key %d repeats another key: every key has one purpose", i)
		}
		seen[string(k)] = true
	}

	second, err := LoadKeys(fakeEnv(nil), dir)
	if err != nil {
		t.Fatalf("second LoadKeys: %v", err)
	}
	if !reflect.DeepEqual(first, second) {
		t.Fatal("second LoadKeys returned different keys: the file was regenerated")
	}
}

func TestLoadKeys_RefusesFileReadableByOthers(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadKeys(fakeEnv(nil), dir); err != nil {
		t.Fatalf("generate: %v", err)
	}
	path := filepath.Join(dir, "secrets")
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadKeys(fakeEnv(nil), dir)
	if err == nil {
		t.Fatal("LoadKeys accepted a secrets file with mode 0644")
	}
	if !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("error %q does not say how to fix it", err)
	}
}

func TestLoadKeys_RefusesCorruptFile(t *testing.T) {
	for _, tc := range []struct {
		name, content string
	}{
		{"not hex", "session_hash=zz\n"},
		{"short key", "session_hash=" + strings.Repeat("ab", 16) + "\n"},
		{"no equals sign", strings.Repeat("ab", 32) + "\n"},
		{"missing keys", "session_hash=" + strings.Repeat("ab", 32) + "\n"},
		{"empty", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "secrets"), []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := LoadKeys(fakeEnv(nil), dir); err == nil {
				t.Fatal("LoadKeys accepted a corrupt secrets file")
			}
		})
	}
}

func TestLoadKeys_FromEnvironmentAllOrNothing(t *testing.T) {
	t.Run("all set", func(t *testing.T) {
		dir := t.TempDir()
		env := secretEnv(0xab)
		env["ADMIT_SECRET_COUNTER"] = strings.Repeat("cd", 32)
		keys, err := LoadKeys(fakeEnv(env), dir)
		if err != nil {
			t.Fatalf("LoadKeys: %v", err)
		}
		if got, want := keys.SessionHash, bytes.Repeat([]byte{0xab}, 32); !bytes.Equal(got, want) {
			t.Errorf("SessionHash=%x, want %x", got, want)
		}
		if got, want := keys.Counter, bytes.Repeat([]byte{0xcd}, 32); !bytes.Equal(got, want) {
			t.Errorf("Counter=%x, want %x", got, want)
		}
		if _, err := os.Stat(filepath.Join(dir, "secrets")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a secrets file was written although the environment has the keys (stat: %v)", err)
		}
	})
	t.Run("partially set", func(t *testing.T) {
		env := secretEnv(0xab)
		delete(env, "ADMIT_SECRET_BINDING")
		_, err := LoadKeys(fakeEnv(env), t.TempDir())
		if err == nil {
			t.Fatal("LoadKeys accepted a partial set of ADMIT_SECRET_* variables")
		}
		if !strings.Contains(err.Error(), "ADMIT_SECRET_") {
			t.Fatalf("error %q does not name the variables", err)
		}
	})
	t.Run("malformed", func(t *testing.T) {
		env := secretEnv(0xab)
		env["ADMIT_SECRET_CSRF"] = "abcd"
		_, err := LoadKeys(fakeEnv(env), t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "ADMIT_SECRET_CSRF") {
			t.Fatalf("err=%v, want one naming ADMIT_SECRET_CSRF", err)
		}
	})
}

// TestLoadKeys_ReadsTheRotationsPreviousKeys: the rotation steps of
// docs/DEPLOY.md ("Rotating a key") — the old session and CSRF keys renamed
// previous_*, new ones added — give the server both; the previous session
// keys come as a pair, from the file or from the environment.
func TestLoadKeys_ReadsTheRotationsPreviousKeys(t *testing.T) {
	hexKey := func(b byte) string { return strings.Repeat(hex.EncodeToString([]byte{b}), 32) }
	dir := t.TempDir()
	if _, err := LoadKeys(fakeEnv(nil), dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "secrets")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	old := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			old[k] = v
		}
	}
	// The rotation as documented: the old keys kept as previous_*.
	rotated := fmt.Sprintf("session_hash=%s\nsession_block=%s\ncsrf=%s\nbinding=%s\ncounter=%s\n"+
		"previous_session_hash=%s\nprevious_session_block=%s\nprevious_csrf=%s\n",
		hexKey(1), hexKey(2), hexKey(3), old["binding"], old["counter"],
		old["session_hash"], old["session_block"], old["csrf"])
	if err := os.WriteFile(path, []byte(rotated), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := LoadKeys(fakeEnv(nil), dir)
	if err != nil {
		t.Fatalf("LoadKeys after the rotation: %v", err)
	}
	for _, c := range []struct {
		name string
		got  []byte
		want string
	}{
		{"SessionHash", keys.SessionHash, hexKey(1)},
		{"CSRF", keys.CSRF, hexKey(3)},
		{"PreviousSessionHash", keys.PreviousSessionHash, old["session_hash"]},
		{"PreviousSessionBlock", keys.PreviousSessionBlock, old["session_block"]},
		{"PreviousCSRF", keys.PreviousCSRF, old["csrf"]},
	} {
		if got := hex.EncodeToString(c.got); got != c.want {
			t.Errorf("%s=%s, want %s", c.name, got, c.want)
		}
	}

	// Half a session pair is refused, from the file and the environment.
	half := strings.Replace(rotated, "previous_session_block=", "#previous_session_block=", 1)
	if err := os.WriteFile(path, []byte(half), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKeys(fakeEnv(nil), dir); err == nil || !strings.Contains(err.Error(), "previous_session_block") {
		t.Errorf("half a previous session pair in the file: err=%v, want one naming previous_session_block", err)
	}
	env := secretEnv(0xab)
	env["ADMIT_SECRET_PREVIOUS_SESSION_HASH"] = hexKey(9)
	if _, err := LoadKeys(fakeEnv(env), t.TempDir()); err == nil {
		t.Error("half a previous session pair in the environment was accepted")
	}
	env["ADMIT_SECRET_PREVIOUS_SESSION_BLOCK"] = hexKey(8)
	env["ADMIT_SECRET_PREVIOUS_CSRF"] = hexKey(7)
	keys, err = LoadKeys(fakeEnv(env), t.TempDir())
	if err != nil {
		t.Fatalf("previous keys from the environment: %v", err)
	}
	if got, want := hex.EncodeToString(keys.PreviousCSRF), hexKey(7); got != want {
		t.Errorf("PreviousCSRF=%s, want %s", got, want)
	}
}

// TestLoadKeys_SystemdCredentialReplacesTheDataDirectorysFile: with a
// credential named "secrets" (LoadCredential=secrets:…), LoadKeys reads it
// and writes no file into the data directory; without one it falls back to
// the data directory.
func TestLoadKeys_SystemdCredentialReplacesTheDataDirectorysFile(t *testing.T) {
	source := t.TempDir()
	want, err := LoadKeys(fakeEnv(nil), source) // generates source/secrets
	if err != nil {
		t.Fatal(err)
	}
	creds := t.TempDir()
	b, err := os.ReadFile(filepath.Join(source, "secrets"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(creds, "secrets"), b, 0o400); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	got, err := LoadKeys(fakeEnv(map[string]string{"CREDENTIALS_DIRECTORY": creds}), data)
	if err != nil {
		t.Fatalf("LoadKeys from the credential: %v", err)
	}
	if !bytes.Equal(got.SessionHash, want.SessionHash) || !bytes.Equal(got.Counter, want.Counter) {
		t.Error("the keys differ from the credential's")
	}
	if _, err := os.Stat(filepath.Join(data, "secrets")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a secrets file was written into the data directory (stat: %v)", err)
	}
	// Other credentials only: the data directory's file, generated.
	if _, err := LoadKeys(fakeEnv(map[string]string{"CREDENTIALS_DIRECTORY": t.TempDir()}), data); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(data, "secrets")); err != nil {
		t.Errorf("no secrets file in the data directory without the credential: %v", err)
	}
}

// syncBuffer is an io.Writer safe for the server's concurrent log writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

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
	URL    string
	Stderr *syncBuffer
	// Stdout receives every stdout line after the "listening on" line.
	Stdout <-chan string
	// Stop cancels Run's context and returns Run's result, failing the
	// test if Run does not return within 10 seconds.
	Stop func(tb testing.TB) error
}

var listeningLine = regexp.MustCompile(`^listening on (http://127\.0\.0\.1:[0-9]+)$`)

// MustRunServe runs `admit serve` with env in a goroutine and waits for its
// "listening on" line. Run is stopped at cleanup if the test did not stop it.
func MustRunServe(tb testing.TB, env map[string]string) *runningServer {
	tb.Helper()
	env = hermetic(tb, env)
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	stderr := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		err := Run(ctx, nil, fakeEnv(env), pw, stderr)
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
	data := t.TempDir()
	srv := MustRunServe(t, map[string]string{"ADMIT_ADDR": "127.0.0.1:0", "ADMIT_DATA": data})

	if line := srv.nextLine(t); !strings.HasPrefix(line, "development sign-in: "+srv.URL+"/sign-in") {
		t.Fatalf("second stdout line %q, want the development sign-in address", line)
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
	if _, err := os.Stat(filepath.Join(data, "admit.db")); err != nil {
		t.Errorf("no database in ADMIT_DATA: %v", err)
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
			var stdout, stderr syncBuffer
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				done <- Run(ctx, []string{"serve"}, fakeEnv(hermetic(t, map[string]string{"ADMIT_ADDR": addr, "ADMIT_DATA": data})), &stdout, &stderr)
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
	err := Run(ctx, args, fakeEnv(env), &stdout, &stderr)
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

// TestOwnerCLI_RejectsBadArguments: each mistake is an error naming it; a
// mistake in the command line (not in the data) is a usageError, after
// which main prints the usage.
func TestOwnerCLI_RejectsBadArguments(t *testing.T) {
	env := map[string]string{"ADMIT_DATA": t.TempDir()}
	for _, tc := range []struct {
		name  string
		args  []string
		want  string
		usage bool
	}{
		{"no subcommand", []string{"owner"}, "add, remove or list", true},
		{"add without --user", []string{"owner", "add", "--workspace", "Acme"}, "--user", true},
		{"remove without --user", []string{"owner", "remove", "--workspace", "Acme"}, "--user", true},
		{"without --workspace", []string{"owner", "add", "--user", "user_1"}, "--workspace", true},
		{"unknown subcommand", []string{"owner", "promote", "--workspace", "Acme", "--user", "user_1"}, "unknown subcommand", true},
		{"unknown flag", []string{"owner", "add", "--workspace", "Acme", "--user", "user_1", "--role", "admin"}, "role", true},
		{"list of an unknown workspace", []string{"owner", "list", "--workspace", "Nope"}, "Nope", false},
		{"unknown command", []string{"frobnicate"}, "unknown command", true},
		{"backup without verify", []string{"backup"}, "want verify", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runCmd(t, env, tc.args...)
			if err == nil {
				t.Fatalf("admit %s succeeded, want an error", strings.Join(tc.args, " "))
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q lacks %q", err, tc.want)
			}
			if strings.HasSuffix(err.Error(), "\n") || strings.Contains(err.Error(), "usage:") {
				t.Fatalf("error %q carries the usage text; main prints it", err)
			}
			if got := errors.As(err, new(usageError)); got != tc.usage {
				t.Fatalf("usage error=%v, want %v (%v)", got, tc.usage, err)
			}
		})
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

func TestRun_HelpPrintsUsage(t *testing.T) {
	out := mustRunCmd(t, nil, "help")
	for _, want := range []string{"admit owner add", "admit migrate"} {
		if !strings.Contains(out, want) {
			t.Errorf("help output lacks %q:\n%s", want, out)
		}
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

func TestOpenDB_TheWriteQueueComesFromTheEnvironment(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want int
	}{{"", store.DefaultSignupQueue}, {"77", 77}} {
		dir := t.TempDir()
		_, db, err := openDB(context.Background(), fakeEnv(map[string]string{"ADMIT_DATA": dir, "ADMIT_WRITE_QUEUE": tc.env}))
		if err != nil {
			t.Fatalf("openDB: %v", err)
		}
		signups, reserve := db.QueueBounds()
		db.Close()
		if signups != tc.want || reserve != store.DefaultWriteReserve {
			t.Errorf("ADMIT_WRITE_QUEUE=%q: bounds %d and %d, want %d and %d", tc.env, signups, reserve, tc.want, store.DefaultWriteReserve)
		}
	}
}

func TestLoadKeys_AddsTheSessionTokensKeyToAnOlderSecretsFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "secrets")
	var old strings.Builder
	for i, n := range []string{"session_hash", "session_block", "csrf", "binding", "counter"} {
		fmt.Fprintf(&old, "%s=%s\n", n, strings.Repeat(fmt.Sprintf("%02x", i+1), 32))
	}
	if err := os.WriteFile(path, []byte(old.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := LoadKeys(fakeEnv(nil), dir)
	if err != nil {
		t.Fatalf("LoadKeys on an older secrets file: %v", err)
	}
	if len(keys.SessionTokens) != 32 || keys.Counter[0] != 5 {
		t.Fatalf("keys: session tokens %d bytes, counter %x", len(keys.SessionTokens), keys.Counter[:1])
	}
	b, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(b), old.String()) || !strings.Contains(string(b), "session_tokens=") {
		t.Fatalf("secrets file after the upgrade:\n%s", b)
	}
	again, err := LoadKeys(fakeEnv(nil), dir)
	if err != nil || string(again.SessionTokens) != string(keys.SessionTokens) {
		t.Fatalf("the added key changed on the next start: %v", err)
	}
}
