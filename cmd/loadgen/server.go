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
	"strconv"
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

// server is one running admit process.
type server struct {
	cmd     *exec.Cmd
	BaseURL string
	// StartToReady is the time from process start to the first 200 from /readyz.
	StartToReady time.Duration
	// PprofURL is the opt-in profiling listener, when one was asked for.
	PprofURL string
	exited   chan error
	logFile  *os.File
}

// serverEnv is the environment of the admit process: development identity
// on a loopback port chosen by the kernel, the data directory, a signup
// attempt limit that the load cannot reach, and no backup configuration.
func serverEnv(dataDir, pprofAddr string) []string {
	env := []string{
		"ADMIT_ADDR=127.0.0.1:0",
		"ADMIT_DATA=" + dataDir,
		"ADMIT_NETWORK_HOURLY_LIMIT=1000000",
		"ADMIT_LITESTREAM_CONFIG=" + filepath.Join(dataDir, "no-litestream.yml"),
	}
	if pprofAddr != "" {
		env = append(env, "ADMIT_PPROF_ADDR="+pprofAddr)
	}
	// Only what a Go binary needs from the parent: no Clerk or admit settings leak in.
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "GOMAXPROCS", "GOGC", "GOMEMLIMIT", "GODEBUG"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// startServer starts bin in dir and waits until /readyz answers 200. The
// server's log goes to logPath.
func startServer(ctx context.Context, bin, dataDir, logPath string, pprof bool) (*server, error) {
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	pprofAddr := ""
	if pprof {
		if pprofAddr, err = freeLoopbackAddr(); err != nil {
			logFile.Close()
			return nil, err
		}
	}
	cmd := exec.Command(bin, "serve")
	cmd.Dir = dataDir
	cmd.Env = serverEnv(dataDir, pprofAddr)
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
	s := &server{cmd: cmd, exited: make(chan error, 1), logFile: logFile}
	if pprofAddr != "" {
		s.PprofURL = "http://" + pprofAddr
	}
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
		return nil, fmt.Errorf("admit exited before listening (%v); see %s", err, logPath)
	case <-wait.Done():
		s.stop()
		return nil, fmt.Errorf("admit did not print its address: %w", wait.Err())
	}
	if err := checkLoopback(s.BaseURL); err != nil {
		s.stop()
		return nil, err
	}
	client := &http.Client{Timeout: time.Second}
	for {
		resp, err := client.Get(s.BaseURL + "/readyz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				s.StartToReady = time.Since(start)
				return s, nil
			}
		}
		select {
		case <-wait.Done():
			s.stop()
			return nil, fmt.Errorf("admit not ready: %w", wait.Err())
		case err := <-s.exited:
			s.exited <- err
			return nil, fmt.Errorf("admit exited (%v); see %s", err, logPath)
		case <-time.After(time.Millisecond):
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

// Pid is the server's process ID.
func (s *server) Pid() int { return s.cmd.Process.Pid }

// stop asks the server to shut down (SIGTERM) and kills it if it has not
// exited after 15 seconds.
func (s *server) stop() error {
	defer s.logFile.Close()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.exited:
		return err
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
		return errors.New("admit did not stop within 15s: killed")
	}
}

// resetPeakRSS resets the kernel's peak-RSS mark (VmHWM) of the process,
// so the next readPeakRSS covers only what happens after it.
func resetPeakRSS(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// readPeakRSS reads VmHWM, the process's peak resident set, in bytes.
func readPeakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return parseVmHWM(string(b))
}

// parseVmHWM extracts VmHWM (reported in kB) from /proc/PID/status text.
func parseVmHWM(status string) (int64, error) {
	for _, line := range strings.Split(status, "\n") {
		rest, ok := strings.CutPrefix(line, "VmHWM:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("unexpected VmHWM line %q", line)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("unexpected VmHWM line %q", line)
		}
		return kb * 1024, nil
	}
	return 0, errors.New("no VmHWM in /proc status")
}

// fileSize is a file's size, 0 when it does not exist.
func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}
