package proc

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the server Start runs: with PROC_FAKE set it
// behaves as admit serve would, in the way the variable names.
func TestMain(m *testing.M) {
	if mode := os.Getenv("PROC_FAKE"); mode != "" {
		fakeServe(mode)
		return
	}
	os.Exit(m.Run())
}

// fakeDevKey is the development sign-in key fakeServe prints.
const fakeDevKey = "k3y_0f-the-fake-server-with-43-characters00"

// fakeServe is a stand-in for `admit serve`: "serve" listens on loopback,
// prints its address, answers /readyz and exits on SIGTERM; "stubborn"
// does the same but ignores SIGTERM; "exit" fails before listening.
func fakeServe(mode string) {
	if mode == "exit" {
		fmt.Fprintln(os.Stderr, "configuration: no good")
		os.Exit(3)
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.Exit(4)
	}
	fmt.Printf("listening on http://%s\n", ln.Addr())
	fmt.Printf("development sign-in: http://%s/dev/sign-in?key=%s (open it in a browser on this machine)\n", ln.Addr(), fakeDevKey)
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
		}
	}))
	for range term {
		if mode != "stubborn" {
			os.Exit(0)
		}
	}
}

func startFake(t *testing.T, mode string) (*Server, string, error) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "admit.log")
	s, err := Start(context.Background(), os.Args[0], t.TempDir(), append(ParentEnv(), "PROC_FAKE="+mode), logPath)
	return s, logPath, err
}

func TestStart_WaitsForReadyAndStopEndsTheProcess(t *testing.T) {
	s, _, err := startFake(t, "serve")
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := CheckLoopback(s.BaseURL); err != nil {
		t.Fatal(err)
	}
	if got, want := s.DevSignInLink, s.BaseURL+"/dev/sign-in?key="+fakeDevKey; got != want {
		t.Errorf("DevSignInLink=%q, want %q", got, want)
	}
	if got := s.DevSignInKey(); got != fakeDevKey {
		t.Errorf("DevSignInKey()=%q, want %q", got, fakeDevKey)
	}
	if s.StartToReady <= 0 {
		t.Errorf("StartToReady=%v, want a positive duration", s.StartToReady)
	}
	resp, err := http.Get(s.BaseURL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz=%d after Start returned", resp.StatusCode)
	}
	if err := s.Stop(10 * time.Second); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := syscall.Kill(s.Pid(), 0); err == nil {
		t.Fatalf("process %d still exists after Stop", s.Pid())
	}
}

func TestStop_KillsAServerThatIgnoresTheSignal(t *testing.T) {
	s, _, err := startFake(t, "stubborn")
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	err = s.Stop(200 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("Stop of a server ignoring SIGTERM: err=%v, want one saying it was killed", err)
	}
}

func TestKill_EndsTheProcessAtOnce(t *testing.T) {
	s, _, err := startFake(t, "stubborn")
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	s.Kill()
	if err := syscall.Kill(s.Pid(), 0); err == nil {
		t.Fatalf("process %d still exists after Kill", s.Pid())
	}
}

func TestStart_ReportsAServerThatExitsBeforeListening(t *testing.T) {
	_, logPath, err := startFake(t, "exit")
	if err == nil || !strings.Contains(err.Error(), "exited before listening") || !strings.Contains(err.Error(), logPath) {
		t.Fatalf("Start of a failing server: err=%v, want one saying it exited and naming the log", err)
	}
	if b, _ := os.ReadFile(logPath); !strings.Contains(string(b), "no good") {
		t.Errorf("the server's stderr is not in its log: %q", b)
	}
}

func TestParseListening_ReadsTheServerAddress(t *testing.T) {
	for line, want := range map[string]string{
		"listening on http://127.0.0.1:43211":     "http://127.0.0.1:43211",
		"  listening on http://[::1]:8080  ":      "http://[::1]:8080",
		"development sign-in: http://127.0.0.1:1": "",
		"listening on 127.0.0.1:80":               "",
		"listening on http://127.0.0.1":           "",
	} {
		got, ok := ParseListening(line)
		if got != want || ok != (want != "") {
			t.Errorf("ParseListening(%q)=%q,%v, want %q", line, got, ok, want)
		}
	}
}

func TestCheckLoopback_RefusesAnyOtherAddress(t *testing.T) {
	for _, base := range []string{"http://127.0.0.1:8080", "http://[::1]:8080"} {
		if err := CheckLoopback(base); err != nil {
			t.Errorf("CheckLoopback(%q)=%v, want nil", base, err)
		}
	}
	for _, base := range []string{"http://10.0.0.1:8080", "http://example.com:80", "http://0.0.0.0:80"} {
		if err := CheckLoopback(base); err == nil {
			t.Errorf("CheckLoopback(%q) accepted it", base)
		}
	}
}

func TestParentEnv_PassesOnlyWhatAGoBinaryNeeds(t *testing.T) {
	t.Setenv("ADMIT_CLERK_SECRET_KEY", "sk_test_leak")
	t.Setenv("GOGC", "150")
	env := ParentEnv()
	joined := strings.Join(env, "\n")
	if strings.Contains(joined, "ADMIT_") {
		t.Errorf("ParentEnv passes an admit setting: %q", env)
	}
	if !strings.Contains(joined, "GOGC=150") {
		t.Errorf("ParentEnv drops GOGC: %q", env)
	}
}

func TestParseDevSignIn_ReadsTheLinkOnly(t *testing.T) {
	for _, tc := range []struct {
		line, want string
		ok         bool
	}{
		{"development sign-in: http://127.0.0.1:8080/dev/sign-in?key=abc (open it)", "http://127.0.0.1:8080/dev/sign-in?key=abc", true},
		{"development sign-in: http://127.0.0.1:8080/dev/sign-in?key=abc", "http://127.0.0.1:8080/dev/sign-in?key=abc", true},
		{"development sign-in: http://127.0.0.1:8080/sign-in (old form)", "", false},
		{"development sign-in: http://127.0.0.1:8080/dev/sign-in?key= (no key)", "", false},
		{"listening on http://127.0.0.1:8080", "", false},
	} {
		got, ok := ParseDevSignIn(tc.line)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseDevSignIn(%q) = %q, %v; want %q, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}
