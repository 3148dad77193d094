package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"admit/internal/config"
	"admit/internal/datalock"
	"admit/store"
)

// migrateCmd is `admit migrate [-status]`.
func migrateCmd(ctx context.Context, args []string, env config.Environment, stdout io.Writer) (err error) {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	status := fs.Bool("status", false, "list applied, pending and unknown migrations; change nothing")
	if err := fs.Parse(args); err != nil {
		return usagef("migrate: %w", err)
	}
	if fs.NArg() > 0 {
		return usagef("migrate: unexpected argument %q", fs.Arg(0))
	}
	cfg, err := loadConfig(env)
	if err != nil {
		return err
	}
	if *status {
		return printSchemaStatus(ctx, cfg, stdout)
	}
	if cfg.PostgreSQL() {
		// Servers starting together, or this command beside them, migrate
		// once: OpenPostgres migrates under PostgreSQL's advisory lock.
		return migrateDB(ctx, cfg, stdout)
	}
	// rule: only the data directory's lock holder migrates: a running
	// server migrated at its start, and must not have its schema changed
	// under it (docs/DEPLOY.md, "One server per data directory").
	lock, err := datalock.Take(cfg.DataDir, "migrate")
	if err != nil {
		if busy := new(datalock.BusyError); errors.As(err, &busy) {
			return fmt.Errorf("migrate: %w. admit serve applies migrations when it starts: "+
				"stop it and run admit migrate, or restart it with this admit", err)
		}
		return err
	}
	defer func() { err = errors.Join(err, lock.Release()) }()
	return migrateDB(ctx, cfg, stdout)
}

// migrateDB opens cfg's database, which applies the pending migrations, and
// says what it applied.
func migrateDB(ctx context.Context, cfg *config.Config, stdout io.Writer) (err error) {
	_, db, err := openStore(ctx, cfg, store.Options{Migrated: func(m store.Migration) {
		fmt.Fprintf(stdout, "migrated: version %d, %s\n", m.Version, m.Name)
	}})
	if err != nil {
		return err
	}
	defer closeDB(db, &err)
	fmt.Fprintf(stdout, "database is up to date: schema version %d\n", store.KnownVersion())
	return nil
}

// printSchemaStatus is `admit migrate -status`: one line per migration,
// applied, pending or unknown, then what to do. It only reads, so it may
// run beside a server, and never creates the database.
func printSchemaStatus(ctx context.Context, cfg *config.Config, stdout io.Writer) error {
	s, err := readSchema(ctx, cfg)
	if err != nil {
		return fmt.Errorf("migrate -status: %w", err)
	}
	known := store.KnownVersion()
	fmt.Fprintf(stdout, "database %s: schema version %d; this admit knows migrations up to %d\n", databaseName(cfg), s.Version(), known)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "state\tversion\tmigration\tapplied")
	for _, m := range s.Applied {
		fmt.Fprintf(tw, "applied\t%d\t%s\t%s\n", m.Version, m.Name, appliedAt(m))
	}
	for _, m := range s.Pending {
		fmt.Fprintf(tw, "pending\t%d\t%s\t-\n", m.Version, m.Name)
	}
	for _, m := range s.Unknown {
		fmt.Fprintf(tw, "unknown\t%d\t(not in this admit)\t%s\n", m.Version, appliedAt(m))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	switch {
	case len(s.Unknown) > 0:
		them := "them"
		if len(s.Unknown) == 1 {
			them = "it"
		}
		fmt.Fprintf(stdout, "%d unknown migration(s), not in this admit: %s. This admit will not serve or migrate this database: "+
			"run the admit that applied %s, or restore a backup from before it migrated (docs/DEPLOY.md).\n",
			len(s.Unknown), store.MissingMigrations(s.Unknown), them)
	case len(s.Pending) > 0:
		fmt.Fprintf(stdout, "%d pending migration(s): admit migrate, or the next admit serve, applies them.\n", len(s.Pending))
	default:
		fmt.Fprintln(stdout, "up to date")
	}
	return nil
}

// appliedAt formats when a migration was applied, "-" when unknown.
func appliedAt(m store.Migration) string {
	if m.AppliedAt.IsZero() {
		return "-"
	}
	return m.AppliedAt.UTC().Format(time.RFC3339)
}
