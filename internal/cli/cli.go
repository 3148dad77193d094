// Package cli is admit's command line: Main runs one command, each in a
// file of its own — serve.go, owner.go, migrate.go, restore.go, backup.go
// (backup verify), version.go, config.go and dbcopy.go (db copy) — on the configuration
// internal/config reads. The wiring serve shares lives beside them: the
// logger (logger.go), GC tuning (gc.go), the metrics collector
// (metrics.go), profiling (pprof.go), the store (store.go), the identity
// provider (identity.go), erasure (erasure.go) and the HTTP server
// (httpserver.go); the data directory's lock is internal/datalock and the
// server keys internal/serverkeys.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"admit/internal/config"
)

// Main runs the command args names in the process's environment, prints
// a failure to stderr (and the usage, after a mistake in the command
// line), and returns the process's exit status. Leading --env-file FILE
// options first add each file's variables to the environment, read as
// systemd reads EnvironmentFile= (ReadEnvFile).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	args, err := applyEnvFiles(args)
	if err == nil {
		err = run(ctx, args, os.Getenv, environNames(os.Environ()), stdout, stderr)
	}
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "admit:", err)
	if errors.As(err, new(usageError)) {
		fmt.Fprint(stderr, usage)
	}
	return 1
}

// usageError is a mistake in the command line; Main prints the usage after it.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef returns a usageError formatted like fmt.Errorf.
func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// Run executes one admit command. It returns when the command is done or,
// for serve, after ctx is cancelled and the server has shut down.
func Run(ctx context.Context, args []string, env config.Environment, stdout, stderr io.Writer) error {
	return run(ctx, args, env, nil, stdout, stderr)
}

// run is Run in an environment whose variables' names are names: serve and
// config warn about those that look like admit's and are not.
func run(ctx context.Context, args []string, env config.Environment, names []string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return serve(ctx, env, names, stdout, stderr)
	case "owner":
		return ownerCmd(ctx, args, env, stdout)
	case "migrate":
		return migrateCmd(ctx, args, env, stdout)
	case "restore":
		return restoreCmd(ctx, args, env, stdout)
	case "backup":
		return backupCmd(ctx, args, env, stdout)
	case "config":
		return configCmd(ctx, args, env, names, stdout, stderr)
	case "db":
		return dbCmd(ctx, args, env, stdout)
	case "version", "-version", "--version":
		return versionCmd(stdout)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return usagef("unknown command %q", cmd)
}

const usage = `usage: admit [--env-file FILE]... [COMMAND]
  --env-file FILE                                        add FILE's variables (read as systemd reads
                                                         EnvironmentFile=) to the environment first
  admit [serve]                                          run the server
  admit owner add    --workspace NAME --user USER_ID     make a user an owner (audited)
  admit owner add    --workspace NAME --email ADDRESS [--name NAME]
                     the first sign-in with ADDRESS verified within 7 days becomes an owner (audited)
  admit owner remove --workspace NAME --user USER_ID     remove an owner (audited)
  admit owner list   --workspace NAME                    list a workspace's owners
  admit migrate                                          apply database migrations (refused while a server runs)
  admit migrate -status                                  list applied, pending and unknown migrations
  admit restore [-timestamp T | -txid N] -o PATH         restore the backup litestream.yml names into a new
                                                         file (T is RFC 3339, N a 16-hex-digit transaction;
                                                         default the newest state that passes integrity_check)
  admit version                                          print the build: version, commit, Go toolchain
  admit backup verify                                    restore the latest backup to a temp file and compare
                                                         its per-table row counts with the live database
  admit config                                           print the effective configuration (secrets hidden)
                                                         and check it as admit serve does
  admit db copy --to postgres://…                        copy this stopped SQLite installation into an empty
                                                         PostgreSQL database, checking each table's rows

Continuous backup: admit serve replicates the database with Litestream when
litestream.yml ($ADMIT_LITESTREAM_CONFIG, default ./litestream.yml) names a replica.

One server per data directory: admit serve locks $ADMIT_DATA/admit.lock.
Beside a running server, owner, migrate -status and backup verify may run;
migrate and a restore into the live database are refused.
`
