package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"admit/backup"
	"admit/handlers"
	"admit/internal/config"
)

// loadBackupConfig reads litestream.yml (cfg.Backup.ConfigFile) and adds
// the backup settings of admit's configuration. A missing file means
// replication is off.
func loadBackupConfig(cfg *config.Config) (*backup.Config, error) {
	c, err := backup.LoadConfig(cfg.Backup.ConfigFile, cfg.Backup.Expand)
	if err != nil {
		return nil, fmt.Errorf("backup configuration: %w", err)
	}
	c.Credentials, c.MaxLag = cfg.Backup.Credentials, cfg.Backup.MaxLag
	return c, nil
}

// startReplication starts continuous backup of dbPath when litestream.yml
// names a replica for it, with a restore drill every drills (none when
// zero) that holds writes through pause, and says in the log whether it
// runs. It returns a nil Replicator (whose methods do nothing) when
// replication is off.
func startReplication(ctx context.Context, bc *backup.Config, dbPath string, drills time.Duration, pause backup.PauseFunc, logger *slog.Logger) (*backup.Replicator, error) {
	repl, err := backup.Start(ctx, bc, dbPath, logger)
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	switch {
	case repl != nil:
		s, _ := repl.Status()
		every := "off"
		if drills > 0 {
			every = drills.String()
		}
		logger.Info("replicating the database", "replica", s.Replica, "config", bc.File,
			"backup_retention", bc.BackupRetention().String(), "restore_drill_every", every)
		repl.StartDrills(drills, pause)
	case !bc.Exists:
		logger.Warn("no litestream.yml: continuous backup is off", "config", bc.File)
	default:
		logger.Warn("litestream.yml names no replica: continuous backup is off", "config", bc.File)
	}
	return repl, nil
}

// errLitestreamOnPostgres is the answer of a Litestream command (cmd) on
// PostgreSQL: it does not apply there, and the engine's own tools do the work.
func errLitestreamOnPostgres(cmd string) error {
	return fmt.Errorf("%s does not apply to PostgreSQL: Litestream backs up admit's SQLite file only, and this admit "+
		"uses the PostgreSQL database of ADMIT_DATABASE_URL. Back it up and check its backups with PostgreSQL's own tools: "+
		"base backups and WAL archiving (pg_basebackup, pgBackRest, Barman, WAL-G) or your managed service's backups, "+
		"and test a restore into a new database (docs/DEPLOY.md, \"Backups on PostgreSQL\")", cmd)
}

// backupCmd is `admit backup verify`: the restore drill.
func backupCmd(ctx context.Context, args []string, env config.Environment, stdout io.Writer) error {
	if len(args) != 1 || args[0] != "verify" {
		return usagef("backup: want verify")
	}
	cfg, err := loadConfig(env)
	if err != nil {
		return err
	}
	if cfg.PostgreSQL() {
		return errLitestreamOnPostgres("backup verify")
	}
	bc, err := loadBackupConfig(cfg)
	if err != nil {
		return err
	}
	res, err := backup.Verify(ctx, bc, cfg.DBPath(), backup.VerifyOptions{})
	if err != nil {
		return fmt.Errorf("backup verify: %w", err)
	}
	if sk := res.Skipped; sk != nil {
		// The drill stepped back past damage, as restore does: say what
		// restores, and what does not.
		fmt.Fprintf(stdout, "backup verify FAILED: the newest %d transactions of %s (up to %s, replicated %s) do not restore intact: %s\n",
			sk.Transactions, res.Replica, sk.NewestTXID, sk.NewestAt.UTC().Format(time.RFC3339), sk.Reason)
		diff := "matches the live database"
		if len(res.Differences) > 0 {
			diff = "differs from the live database (live ≠ restored): " + strings.Join(res.Differences, ", ")
		}
		fmt.Fprintf(stdout, "the newest intact state is transaction %s (`admit restore` restores it; integrity_check ok); it %s\n", res.TXID, diff)
		fmt.Fprintln(stdout, "a fresh full snapshot repairs the backup: `admit serve` takes one when its restore drill fails")
		return fmt.Errorf("backup verify: the newest %d transactions do not restore intact", sk.Transactions)
	}
	if g := res.Gap; g != nil {
		fmt.Fprintf(stdout, "backup verify FAILED: %s: %s\n", res.Replica, gapReport(g, res.TXID, time.Time{}))
		fmt.Fprintln(stdout, "a fresh full snapshot repairs the backup: `admit serve` takes one when its replica check finds the gap")
		return fmt.Errorf("backup verify: the replica is missing %s", g.MissingFiles())
	}
	if !res.OK() {
		fmt.Fprintf(stdout, "backup verify FAILED: %s differs from the live database (live ≠ restored): %s\n", res.Replica, strings.Join(res.Differences, ", "))
		return fmt.Errorf("backup verify: %d tables differ", len(res.Differences))
	}
	fmt.Fprintf(stdout, "backup verify ok: %s matches the live database: %d tables, %d rows, integrity_check ok\n",
		res.Replica, len(res.Live), res.Live.Rows())
	return nil
}

// backupStatus adapts the replicator's status for the owner console; nil
// when no replica is configured.
func backupStatus(repl *backup.Replicator) func() (handlers.BackupStatus, error) {
	if repl == nil {
		return nil
	}
	return func() (handlers.BackupStatus, error) {
		st, err := repl.Status()
		d := repl.DrillStatus()
		return handlers.BackupStatus{Replica: st.Replica, LastSync: st.LastSync, Pending: st.Pending, Lag: st.Lag,
			VerifiedAt: d.VerifiedAt, NotRestorableSince: notRestorableSince(d, repl.ReplicaHealth()), LastFailedDrill: d.LastFailure}, err
	}
}

// notRestorableSince is when the backup was first found not restorable,
// by a restore drill or by the replica check (a lost replica, or one
// another database has claimed); zero while it is restorable.
func notRestorableSince(d backup.DrillStatus, h backup.ReplicaHealth) time.Time {
	switch {
	case d.FailingSince.IsZero():
		return h.LostSince
	case h.LostSince.IsZero() || d.FailingSince.Before(h.LostSince):
		return d.FailingSince
	}
	return h.LostSince
}
