package main

import (
	"bufio"
	"context"
	"errors"
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

// buildAdmit compiles the admit binary from the module at src into dir.
func buildAdmit(ctx context.Context, src, dir string, stderr io.Writer) (string, error) {
	bin := filepath.Join(dir, "admit")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	cmd.Dir = src
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build in %s: %w", src, err)
	}
	return bin, nil
}

// litestreamYAML is the backup configuration of the soak's server: its
// database replicated to a directory, with level-0 files kept long enough
// that every transaction ID of the run stays restorable.
func litestreamYAML(dbPath, replicaDir string) string {
	return fmt.Sprintf(`dbs:
  - path: %q
    replica:
      type: file
      path: %q
l0-retention: 24h
`, dbPath, replicaDir)
}

// server is one running admit process.
type server struct {
	cmd     *exec.Cmd
	BaseURL string
	exited  chan error
	logFile *os.File
}

// serverEnv is the environment of the admit process: development identity
// on a loopback address that stays the same across restarts, the data directory, a network
// signup limit the load cannot reach and the soak's litestream.yml.
func serverEnv(addr, dataDir, litestreamConfig string) []string {
	env := []string{
		"ADMIT_ADDR=" + addr,
		"ADMIT_DATA=" + dataDir,
		"ADMIT_NETWORK_HOURLY_LIMIT=1000000",
		"ADMIT_LITESTREAM_CONFIG=" + litestreamConfig,
	}
	// Only what a Go binary needs from the parent: no Clerk or admit settings leak in.
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "GOMAXPROCS", "GOGC", "GOMEMLIMIT", "GODEBUG"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// startServer starts bin in workDir and waits until /readyz answers 200.
// The server's log is appended to logPath.
func startServer(ctx context.Context, bin, workDir string, env []string, logPath string) (*server, error) {
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve")
	cmd.Dir = workDir
	cmd.Env = env
	cmd.Stderr = logFile
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start admit: %w", err)
	}
	s := &server{cmd: cmd, exited: make(chan error, 1), logFile: logFile}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if base, ok := parseListening(sc.Text()); ok {
				select {
				case addrc <- base:
				default:
				}
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	go func() { s.exited <- cmd.Wait() }()

	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	select {
	case s.BaseURL = <-addrc:
	case err := <-s.exited:
		s.exited <- err
		logFile.Close()
		return nil, fmt.Errorf("admit exited before listening (%v); see %s", err, logPath)
	case <-wait.Done():
		s.kill()
		return nil, fmt.Errorf("admit did not print its address: %w", wait.Err())
	}
	if err := checkLoopback(s.BaseURL); err != nil {
		s.kill()
		return nil, err
	}
	client := &http.Client{Timeout: time.Second}
	for {
		resp, err := client.Get(s.BaseURL + "/readyz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		select {
		case <-wait.Done():
			s.kill()
			return nil, fmt.Errorf("admit not ready: %w", wait.Err())
		case err := <-s.exited:
			s.exited <- err
			logFile.Close()
			return nil, fmt.Errorf("admit exited (%v); see %s", err, logPath)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// parseListening reads the server's "listening on http://HOST:PORT" line.
func parseListening(line string) (string, bool) {
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

// checkLoopback refuses any base URL whose host is not a loopback IP: the
// load never leaves this machine.
func checkLoopback(base string) error {
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

// freeLoopbackAddr returns a loopback address with a port free right now.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// kill ends the server with SIGKILL, as a crash or the OOM killer would,
// and waits for it to be gone.
func (s *server) kill() {
	defer s.logFile.Close()
	_ = s.cmd.Process.Signal(syscall.SIGKILL) // this soak's own child, by PID
	<-s.exited
}

// stop asks the server to shut down (SIGTERM): it syncs the replica one
// last time. It is killed if it has not exited after 30 seconds.
func (s *server) stop() error {
	defer s.logFile.Close()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.exited:
		return err
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
		<-s.exited
		return errors.New("admit did not stop within 30s: killed")
	}
}
