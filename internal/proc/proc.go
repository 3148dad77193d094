// Package proc builds and runs admit as a child process for the load and
// soak tools: it starts `admit serve`, reads the address it prints, waits
// for /readyz, and stops or kills it by its own PID.
package proc

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// BuildAdmit compiles the admit binary from the module at src into dir.
func BuildAdmit(ctx context.Context, src, dir string, stderr io.Writer) (string, error) {
	bin := filepath.Join(dir, "admit")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	cmd.Dir = src
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build in %s: %w", src, err)
	}
	return bin, nil
}

// ParentEnv is what a Go binary needs from the parent's environment, and
// nothing else: no Clerk or admit settings leak into the child.
func ParentEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "GOMAXPROCS", "GOGC", "GOMEMLIMIT", "GODEBUG"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// Server is one running admit process.
type Server struct {
	cmd *exec.Cmd
	// BaseURL is the address the server printed (a loopback address).
	BaseURL string
	// DevSignInLink is the development sign-in link the server printed, in
	// development mode; empty otherwise.
	DevSignInLink string
	// StartToReady is the time from process start to the first 200 from /readyz.
	StartToReady time.Duration
	exited       chan error
	logFile      *os.File
}

// ReadyTimeout bounds how long Start waits for the address and for /readyz
// (a tool measuring a large database may raise it).
var ReadyTimeout = 30 * time.Second

// Start runs `bin serve` in dir with exactly env and waits until /readyz
// answers 200. The server's stderr (its log) is appended to logPath. A
// server that does not get ready is killed.
func Start(ctx context.Context, bin, dir string, env []string, logPath string) (*Server, error) {
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve")
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stderr = logFile
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start admit: %w", err)
	}
	s := &Server{cmd: cmd, exited: make(chan error, 1), logFile: logFile}
	addrc, devc := make(chan string, 1), make(chan string, 1)
	go readAddress(stdout, addrc, devc)
	go func() { s.exited <- cmd.Wait() }()

	wait, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	select {
	case s.BaseURL = <-addrc:
	case err := <-s.exited:
		return nil, s.exitedEarly(err, "admit exited before listening", logPath)
	case <-wait.Done():
		s.Kill()
		return nil, fmt.Errorf("admit did not print its address: %w", wait.Err())
	}
	if err := CheckLoopback(s.BaseURL); err != nil {
		s.Kill()
		return nil, err
	}
	if err := s.waitReady(wait, logPath); err != nil {
		return nil, err
	}
	s.StartToReady = time.Since(start)
	if devMode(env) {
		// Printed right after the address, before the server answers.
		select {
		case s.DevSignInLink = <-devc:
		case <-wait.Done():
			s.Kill()
			return nil, fmt.Errorf("admit printed no development sign-in link: %w", wait.Err())
		}
	}
	return s, nil
}

// devMode reports whether env starts admit with the development identity:
// neither Clerk nor OpenID Connect configured.
func devMode(env []string) bool {
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if (k == "CLERK_SECRET_KEY" || k == "ADMIT_OIDC_ISSUER") && v != "" {
			return false
		}
	}
	return true
}

// readAddress sends the first address the server prints on addrc and its
// development sign-in link, if any, on devc, and drains the rest of its
// output.
func readAddress(stdout io.Reader, addrc, devc chan<- string) {
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if base, ok := ParseListening(sc.Text()); ok {
			select {
			case addrc <- base:
			default:
			}
		}
		if link, ok := ParseDevSignIn(sc.Text()); ok {
			select {
			case devc <- link:
			default:
			}
		}
	}
	io.Copy(io.Discard, stdout)
}

// ParseDevSignIn reads the server's "development sign-in: LINK …" line.
func ParseDevSignIn(line string) (string, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), "development sign-in: ")
	if !ok {
		return "", false
	}
	link, _, _ := strings.Cut(rest, " ")
	u, err := url.Parse(link)
	if err != nil || u.Scheme != "http" || u.Path != "/dev/sign-in" || u.Query().Get("key") == "" {
		return "", false
	}
	return link, true
}

// DevSignInKey is the key that the server's development sign-in link
// carries; empty outside development mode.
func (s *Server) DevSignInKey() string {
	u, err := url.Parse(s.DevSignInLink)
	if err != nil {
		return ""
	}
	return u.Query().Get("key")
}

// waitReady asks /readyz every millisecond until it answers 200, the
// server exits or wait is done (then the server is killed).
func (s *Server) waitReady(wait context.Context, logPath string) error {
	client := &http.Client{Timeout: time.Second}
	for {
		resp, err := client.Get(s.BaseURL + "/readyz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-wait.Done():
			s.Kill()
			return fmt.Errorf("admit not ready: %w", wait.Err())
		case err := <-s.exited:
			return s.exitedEarly(err, "admit exited", logPath)
		case <-time.After(time.Millisecond):
		}
	}
}

// exitedEarly records an exit seen while starting (so a later Stop or
// Kill still sees it) and describes it.
func (s *Server) exitedEarly(err error, what, logPath string) error {
	s.exited <- err
	s.logFile.Close()
	return fmt.Errorf("%s (%v); see %s", what, err, logPath)
}

// Pid is the server's process ID.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Kill ends the server with SIGKILL, as a crash or the OOM killer would,
// and waits for it to be gone.
func (s *Server) Kill() {
	defer s.logFile.Close()
	_ = s.cmd.Process.Signal(syscall.SIGKILL) // our own child, by PID
	<-s.exited
}

// Stop asks the server to shut down (SIGTERM) and kills it if it has not
// exited after timeout.
func (s *Server) Stop(timeout time.Duration) error {
	defer s.logFile.Close()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.exited:
		return err
	case <-time.After(timeout):
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
		<-s.exited
		return fmt.Errorf("admit did not stop within %v: killed", timeout)
	}
}

// ParseListening reads the server's "listening on http://HOST:PORT" line.
func ParseListening(line string) (string, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok {
		return "", false
	}
	u, err := url.Parse(rest)
	if err != nil || u.Scheme != "http" || u.Host == "" || u.Port() == "" {
		return "", false
	}
	return rest, true
}

// CheckLoopback refuses any base URL whose host is not a loopback IP: the
// load never leaves this machine.
func CheckLoopback(base string) error {
	u, err := url.Parse(base)
	if err != nil {
		return err
	}
	ip := net.ParseIP(u.Hostname())
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("admit listens on %s, not a loopback address: refusing to send load", u.Host)
	}
	return nil
}

// FreeLoopbackAddr returns a loopback address with a port free right now.
func FreeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
