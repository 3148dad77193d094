package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"admit/internal/proc"
)

// buildAdmit compiles the admit binary from the module at src into dir.
var buildAdmit = proc.BuildAdmit

// server is one running admit process.
type server struct {
	*proc.Server
	// PprofURL is the opt-in profiling listener, when one was asked for.
	PprofURL string
}

// serverEnv is the environment of the admit process: development identity
// on a loopback port chosen by the kernel, the data directory, a signup
// attempt limit that the load cannot reach, no backup configuration, and
// the writer's signup queue when writeQueue is set (else admit's default).
func serverEnv(dataDir, pprofAddr string, writeQueue int) []string {
	env := []string{
		"ADMIT_ADDR=127.0.0.1:0",
		"ADMIT_DATA=" + dataDir,
		"ADMIT_NETWORK_HOURLY_LIMIT=1000000",
		"ADMIT_LITESTREAM_CONFIG=" + filepath.Join(dataDir, "no-litestream.yml"),
	}
	if pprofAddr != "" {
		env = append(env, "ADMIT_PPROF_ADDR="+pprofAddr)
	}
	if writeQueue > 0 {
		env = append(env, "ADMIT_WRITE_QUEUE="+strconv.Itoa(writeQueue))
	}
	return append(env, proc.ParentEnv()...)
}

// startServer starts bin in dir and waits until /readyz answers 200. The
// server's log goes to logPath; extraEnv is added to its environment.
func startServer(ctx context.Context, bin, dataDir, logPath string, pprof bool, writeQueue int, extraEnv ...string) (*server, error) {
	pprofAddr := ""
	if pprof {
		var err error
		if pprofAddr, err = proc.FreeLoopbackAddr(); err != nil {
			return nil, err
		}
	}
	s, err := proc.Start(ctx, bin, dataDir, append(serverEnv(dataDir, pprofAddr, writeQueue), extraEnv...), logPath)
	if err != nil {
		return nil, err
	}
	srv := &server{Server: s}
	if pprofAddr != "" {
		srv.PprofURL = "http://" + pprofAddr
	}
	return srv, nil
}

// stop asks the server to shut down (SIGTERM) and kills it if it has not
// exited after 15 seconds.
func (s *server) stop() error { return s.Stop(15 * time.Second) }

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
