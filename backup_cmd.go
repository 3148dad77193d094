package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"admit/backup"
)

// loadBackupConfig reads litestream.yml ($ADMIT_LITESTREAM_CONFIG or
// ./litestream.yml). A missing file means replication is off.
func loadBackupConfig(getenv func(string) string) (*backup.Config, error) {
	c, err := backup.LoadConfig(backup.ConfigPath(getenv), getenv)
	if err != nil {
		return nil, fmt.Errorf("backup configuration: %w", err)
	}
	return c, nil
}

// startReplication starts continuous backup of dbPath when litestream.yml
// names a replica for it, and says in the log whether it runs. It returns a
// nil Replicator (whose methods do nothing) when replication is off.
func startReplication(ctx context.Context, bc *backup.Config, dbPath string, getenv func(string) string, logger *slog.Logger) (*backup.Replicator, error) {
	repl, err := backup.Start(ctx, bc, dbPath, getenv, logger)
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	switch {
	case repl != nil:
		s, _ := repl.Status()
		logger.Info("replicating the database", "replica", s.Replica, "config", bc.File,
			"backup_retention", bc.BackupRetention().String())
	case !bc.Exists:
		logger.Warn("no litestream.yml: continuous backup is off", "config", bc.File)
	default:
		logger.Warn("litestream.yml names no replica: continuous backup is off", "config", bc.File)
	}
	return repl, nil
}

// restoreCmd is `admit restore [-timestamp T] -o PATH`.
func restoreCmd(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.String("o", "", "output path (must not exist)")
	ts := fs.String("timestamp", "", "restore the database as it was at this RFC 3339 instant")
	if err := fs.Parse(args); err != nil {
		return usagef("restore: %w", err)
	}
	if fs.NArg() > 0 {
		return usagef("restore: unexpected argument %q", fs.Arg(0))
	}
	if *out == "" {
		return errors.New("restore: -o PATH is required: admit never restores over a file")
	}
	var at time.Time
	if *ts != "" {
		var err error
		if at, err = time.Parse(time.RFC3339, *ts); err != nil {
			return fmt.Errorf("restore: -timestamp %q is not an RFC 3339 time such as 2025-01-02T15:04:05Z", *ts)
		}
	}
	cfg, err := LoadConfig(getenv)
	if err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	bc, err := loadBackupConfig(getenv)
	if err != nil {
		return err
	}
	res, err := backup.Restore(ctx, bc, cfg.DBPath(), getenv, backup.RestoreOptions{Output: *out, Timestamp: at})
	if err != nil {
		return err
	}
	point := "latest"
	if !at.IsZero() {
		point = "as of " + at.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(stdout, "restored %s from %s (%s): %d tables, %d rows, integrity_check ok\n",
		res.Path, res.Replica, point, len(res.Tables), res.Tables.Rows())
	return nil
}

// backupCmd is `admit backup verify`: the restore drill.
func backupCmd(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) != 1 || args[0] != "verify" {
		return usagef("backup: want verify")
	}
	cfg, err := LoadConfig(getenv)
	if err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	bc, err := loadBackupConfig(getenv)
	if err != nil {
		return err
	}
	res, err := backup.Verify(ctx, bc, cfg.DBPath(), getenv, backup.VerifyOptions{})
	if err != nil {
		return fmt.Errorf("backup verify: %w", err)
	}
	if !res.OK() {
		fmt.Fprintf(stdout, "backup verify FAILED: %s differs from the live database (live ≠ restored): %s\n", res.Replica, strings.Join(res.Differences, ", "))
		return fmt.Errorf("backup verify: %d tables differ", len(res.Differences))
	}
	fmt.Fprintf(stdout, "backup verify ok: %s matches the live database: %d tables, %d rows, integrity_check ok\n",
		res.Replica, len(res.Live), res.Live.Rows())
	return nil
}
