package main

import (
	"context"
	"fmt"
	"time"

	"admit/internal/proc"
)

// buildAdmit compiles the admit binary from the module at src into dir.
var buildAdmit = proc.BuildAdmit

// freeLoopbackAddr returns a loopback address with a port free right now.
var freeLoopbackAddr = proc.FreeLoopbackAddr

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
type server struct{ *proc.Server }

// serverEnv is the environment of the admit process: development identity
// on a loopback address that stays the same across restarts, the data directory, a network
// signup limit the load cannot reach and the soak's litestream.yml.
func serverEnv(addr, dataDir, litestreamConfig string) []string {
	return append([]string{
		"ADMIT_ADDR=" + addr,
		"ADMIT_DATA=" + dataDir,
		"ADMIT_NETWORK_HOURLY_LIMIT=1000000",
		"ADMIT_LITESTREAM_CONFIG=" + litestreamConfig,
	}, proc.ParentEnv()...)
}

// startServer starts bin in workDir and waits until /readyz answers 200.
// The server's log is appended to logPath.
func startServer(ctx context.Context, bin, workDir string, env []string, logPath string) (*server, error) {
	s, err := proc.Start(ctx, bin, workDir, env, logPath)
	if err != nil {
		return nil, err
	}
	return &server{s}, nil
}

// kill ends the server with SIGKILL, as a crash or the OOM killer would,
// and waits for it to be gone.
func (s *server) kill() { s.Kill() }

// stop asks the server to shut down (SIGTERM): it syncs the replica one
// last time. It is killed if it has not exited after 30 seconds.
func (s *server) stop() error { return s.Stop(30 * time.Second) }
