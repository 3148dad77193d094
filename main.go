// Command admit runs waitlists and controlled early access from one binary.
//
//	admit [serve]                                  run the server (default)
//	admit owner add|remove|list --workspace NAME [--user USER_ID]
//	admit migrate [-status]                        apply database migrations and exit, or list them
//	admit restore [-timestamp T | -txid N] -o PATH restore the backup named in litestream.yml
//	admit version                                  print the build's version, commit and Go toolchain
//	admit backup verify                            restore drill: compare a restore with the live database
//	admit config                                   print the effective configuration, secrets hidden
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"admit/backup"
	"admit/handlers"
	"admit/internal/config"
	"admit/internal/identity"
	"admit/internal/serverkeys"
	"admit/internal/version"
	"admit/store"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "admit:", err)
		if errors.As(err, new(usageError)) {
			fmt.Fprint(os.Stderr, usage)
		}
		os.Exit(1)
	}
}

// usageError is a mistake in the command line; main prints the usage after it.
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
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return serve(ctx, env, stdout, stderr)
	case "owner":
		return ownerCmd(ctx, args, env, stdout)
	case "migrate":
		return migrateCmd(ctx, args, env, stdout)
	case "restore":
		return restoreCmd(ctx, args, env, stdout)
	case "backup":
		return backupCmd(ctx, args, env, stdout)
	case "config":
		return configCmd(args, env, stdout)
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, version.Get())
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return usagef("unknown command %q", cmd)
}

const usage = `usage:
  admit [serve]                                          run the server
  admit owner add    --workspace NAME --user USER_ID     make a user an owner (audited)
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

Continuous backup: admit serve replicates the database with Litestream when
litestream.yml ($ADMIT_LITESTREAM_CONFIG, default ./litestream.yml) names a replica.

One server per data directory: admit serve locks $ADMIT_DATA/admit.lock.
Beside a running server, owner, migrate -status and backup verify may run;
migrate and a restore into the live database are refused.
`

// loadConfig is config.Load with the context its errors are reported in.
func loadConfig(env config.Environment) (*config.Config, error) {
	cfg, err := config.Load(env)
	if err != nil {
		return nil, fmt.Errorf("configuration:\n%w", err)
	}
	return cfg, nil
}

// openStore loads the server keys from cfg's data directory and opens the
// database with opt, the binding key and the retention policy.
func openStore(ctx context.Context, cfg *config.Config, opt store.Options) (handlers.Keys, *store.DB, error) {
	keys, err := serverkeys.Load(cfg.Secrets, cfg.DataDir)
	if err != nil {
		return handlers.Keys{}, nil, err
	}
	opt.BindingKey, opt.Retention, opt.SignupQueue = keys.Binding, cfg.Retention, cfg.WriteQueue
	db, err := store.Open(ctx, cfg.DBPath(), opt)
	if err != nil {
		return handlers.Keys{}, nil, err
	}
	return keys, db, nil
}

// serveStoreOptions are the options serve opens the database with. While
// litestream.yml names a replica, Litestream alone checkpoints the WAL:
// admit's automatic checkpoint could otherwise, after a crash, copy frames
// Litestream has not read yet into the database file and restart the WAL
// before Litestream resumes, which corrupts every later restore point.
func serveStoreOptions(bc *backup.Config) store.Options {
	return store.Options{NoAutoCheckpoint: bc.Replicated()}
}

// serve runs admit until ctx is done: the store, replication, erasure, the
// identity provider and the HTTP server, closed in the reverse order.
func serve(ctx context.Context, env config.Environment, stdout, stderr io.Writer) (err error) {
	cfg, err := loadConfig(env)
	if err != nil {
		return err
	}
	logger := newLogger(cfg.Log, stderr)
	tuneGC(cfg.GC)
	// Read litestream.yml before any data is touched: a bad key refuses the start.
	backupCfg, err := loadBackupConfig(cfg)
	if err != nil {
		return err
	}
	m := newServeMetrics(cfg)
	// rule: one server per data directory, locked before the keys or the
	// database are touched and held until the process ends
	// (docs/DEPLOY.md, "One server per data directory").
	lock, err := lockDataDir(cfg.DataDir, "serve")
	if err != nil {
		if busy := new(dataDirBusyError); errors.As(err, &busy) {
			return fmt.Errorf("%w: admit runs one server per data directory; stop that process "+
				"(or let it finish) first, or give this server its own ADMIT_DATA", err)
		}
		return err
	}
	defer func() { err = errors.Join(err, lock.release()) }() // after everything below has closed
	keys, db, err := openStore(ctx, cfg, m.storeOptions(serveStoreOptions(backupCfg)))
	if err != nil {
		return err
	}
	var repl *backup.Replicator
	defer func() {
		// Litestream's lifecycle rule: it closes (with a final sync) only
		// after admit's own connections are closed. The HTTP server and the
		// sweeper have stopped by the time this runs.
		closeDB(db, &err)
		closeCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := repl.Close(closeCtx); err != nil {
			logger.Error("final backup sync failed: the latest changes may be missing from the backup", "err", err)
		}
	}()
	if repl, err = startReplication(ctx, backupCfg, cfg.DBPath(), cfg.Backup.DrillInterval, db.PauseWrites, logger); err != nil {
		return err
	}
	defer startErasure(ctx, db, repl, logger)()

	// Listen first: with port 0 the public URL must name the bound port.
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	defer ln.Close()
	cfg.UseListener(ln.Addr())

	id, err := newIdentity(ctx, cfg, keys, db, logger)
	if err != nil {
		return err
	}
	ready := repl.Ready // not ready while changes wait too long for the replica
	if oi, ok := id.(*identity.OIDCIdentity); ok {
		// Discovery at start, retried with backoff while /readyz says why.
		go oi.RunDiscovery(ctx, func(err error, wait time.Duration) {
			if err != nil {
				logger.Warn("identity provider discovery failed; retrying", "err", err, "retry_in", wait)
			} else {
				logger.Info("identity provider discovered")
			}
		})
		ready = func(ctx context.Context) error {
			if err := oi.Ready(); err != nil {
				return err
			}
			return repl.Ready(ctx)
		}
	}

	srv, err := handlers.New(handlers.Options{
		PublicURL:           cfg.PublicURL,
		ClientIPHeader:      cfg.ClientIPHeader,
		RequestIDHeader:     cfg.RequestIDHeader,
		Requests:            m.requestObserver(),
		NetworkHourlyLimit:  cfg.NetworkHourlyLimit,
		ClerkPublishableKey: cfg.ClerkPublishableKey,
		Keys:                keys,
		Logger:              logger,
		BackupRetention:     backupCfg.BackupRetention(),
		Ready:               ready,
		BackupStatus:        backupStatus(repl),
	}, db, id)
	if err != nil {
		return err
	}

	announce(stdout, cfg, ln.Addr())
	stopMetrics, err := m.start(cfg, db, repl, stdout, logger)
	if err != nil {
		return err
	}
	defer stopMetrics()
	if cfg.PprofAddr != "" {
		stopPprof, err := startPprof(cfg.PprofAddr, logger)
		if err != nil {
			return err
		}
		defer stopPprof()
	}
	return serveHTTP(ctx, srv, ln, logger)
}

// announce prints the address admit listens on and, with the development
// identity, where to sign in.
func announce(stdout io.Writer, cfg *config.Config, addr net.Addr) {
	base := "http://" + addr.String()
	fmt.Fprintf(stdout, "listening on %s\n", base)
	if cfg.DevMode() {
		fmt.Fprintf(stdout, "development sign-in: %s/sign-in (the demo owner signs in as ADMIT_DEV_OWNER_EMAIL, default owner@example.test)\n", base)
	}
}

// startErasure starts the sweeper, the eraser and the retirer and returns
// the function that stops them and waits for all three. Erasure runs inside
// serve: the sweeper erases what is due at start and every SweepInterval,
// the eraser flushes every erasure (the sweeper's, a removal's) out of the
// WAL and Litestream's local files within seconds of its commit, and the
// retirer dates a retired program's entries for erasure in short steps
// after the owner's request has been answered. Stopping the retirer leaves
// a large retirement pending between two steps; the next start resumes it.
// The eraser stops last, when the HTTP server has drained and the sweeper
// has stopped, and flushes once more if an erasure is still in the WAL.
func startErasure(ctx context.Context, db *store.DB, repl *backup.Replicator, logger *slog.Logger) (stop func()) {
	flush := db.Checkpoint
	if repl != nil {
		flush = func(ctx context.Context) error { return repl.Erase(ctx, db) }
	}
	sweepCtx, stopSweeper := context.WithCancel(ctx)
	eraseCtx, stopEraser := context.WithCancel(context.WithoutCancel(ctx))
	var background, eraser sync.WaitGroup
	background.Add(2)
	eraser.Add(1)
	go func() {
		defer background.Done()
		db.RunSweeper(sweepCtx, store.SweepInterval, logger)
	}()
	go func() {
		defer background.Done()
		db.RunRetirer(sweepCtx, store.RetireCheckInterval, logger)
	}()
	go func() {
		defer eraser.Done()
		db.RunEraser(eraseCtx, logger, flush)
	}()
	return func() {
		stopSweeper()
		background.Wait()
		stopEraser()
		eraser.Wait()
	}
}

// newIdentity picks the identity provider: OpenID Connect, Clerk, or the
// development sign-in (which seeds the demo workspace on a fresh database).
func newIdentity(ctx context.Context, cfg *config.Config, keys handlers.Keys, db *store.DB, logger *slog.Logger) (identity.Identity, error) {
	if cfg.OIDCMode() {
		public := cfg.PublicURL.String()
		return identity.NewOIDCIdentity(identity.OIDCConfig{
			Issuer:        cfg.OIDCIssuer,
			ClientID:      cfg.OIDCClientID,
			ClientSecret:  cfg.OIDCClientSecret,
			Scopes:        cfg.OIDCScopes,
			TrustEmail:    cfg.OIDCTrustEmail,
			Name:          cfg.OIDCProviderName,
			RedirectURL:   public + "/auth/callback",
			PostLogoutURL: public + "/",
			DB:            db,
			TokenKey:      keys.SessionTokens,
			SecureCookie:  cfg.PublicURL.Scheme == "https",
		})
	}
	if !cfg.DevMode() {
		return identity.NewClerkIdentity(identity.ClerkConfig{
			SecretKey:         cfg.ClerkSecretKey,
			APIURL:            cfg.ClerkAPIURL,
			Issuer:            cfg.ClerkIssuer,
			AuthorizedParties: cfg.ClerkAuthorizedParties,
			DB:                db,
		})
	}
	id, err := identity.NewDevIdentity(db, keys.SessionTokens, cfg.PublicURL.Scheme == "https")
	if err != nil {
		return nil, err
	}
	owner, err := store.NormalizeEmail(cfg.DevOwnerEmail)
	if err != nil {
		return nil, fmt.Errorf("ADMIT_DEV_OWNER_EMAIL: %w", err)
	}
	if seeded, err := db.SeedDemo(ctx, identity.DevUserID(owner)); err != nil {
		return nil, fmt.Errorf("seed demo: %w", err)
	} else if seeded {
		logger.Info("seeded the demo workspace, owner and program")
	}
	return id, nil
}

// serveHTTP serves h on ln until ctx is done, then shuts down gracefully.
func serveHTTP(ctx context.Context, h http.Handler, ln net.Listener, logger *slog.Logger) error {
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func ownerCmd(ctx context.Context, args []string, env config.Environment, stdout io.Writer) (err error) {
	if len(args) == 0 {
		return usagef("owner: want add, remove or list")
	}
	sub := args[0]
	fs := flag.NewFlagSet("owner "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	workspace := fs.String("workspace", "", "workspace name")
	user := fs.String("user", "", "identity provider user ID")
	if err := fs.Parse(args[1:]); err != nil {
		return usagef("owner %s: %w", sub, err)
	}
	if *workspace == "" {
		return usagef("owner %s: --workspace is required", sub)
	}
	if sub != "list" && *user == "" {
		return usagef("owner %s: --user is required", sub)
	}
	db, release, err := openBesideServer(ctx, env, "owner")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, release()) }()
	defer closeDB(db, &err)
	cli := store.Actor{Kind: store.ActorCLI}
	switch sub {
	case "add":
		if _, err := db.AddOwner(ctx, cli, *workspace, *user); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s is an owner of %q\n", *user, *workspace)
	case "remove":
		if err := db.RemoveOwner(ctx, cli, *workspace, *user); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s is no longer an owner of %q\n", *user, *workspace)
	case "list":
		owners, err := db.ListOwners(ctx, *workspace)
		if err != nil {
			return err
		}
		for _, o := range owners {
			status := "active"
			if !o.Active {
				status = "removed"
			}
			fmt.Fprintf(stdout, "%s\t%s\t%s\n", o.UserID, status, o.UpdatedAt.Format(time.RFC3339))
		}
	default:
		return usagef("owner: unknown subcommand %q", sub)
	}
	return nil
}

// closeDB closes db and adds a failure to *err: closing the last connection
// checkpoints the WAL, so a write is not safely on disk until it succeeds.
func closeDB(db *store.DB, err *error) {
	if cerr := db.Close(); cerr != nil {
		*err = errors.Join(*err, fmt.Errorf("close database: %w", cerr))
	}
}

// openBesideServer opens the database for a command that may run beside
// admit serve (cmd names it in the lock file). Such a command migrates only
// while it holds the data directory's lock; beside a running server, which
// migrated at its start, it opens the schema as it is and refuses one with
// migrations pending. release drops the lock, if it was taken.
func openBesideServer(ctx context.Context, env config.Environment, cmd string) (db *store.DB, release func() error, err error) {
	cfg, err := loadConfig(env)
	if err != nil {
		return nil, nil, err
	}
	schema, err := store.ReadSchema(ctx, cfg.DBPath())
	if err != nil {
		return nil, nil, err
	}
	opt := store.Options{NoMigrate: len(schema.Pending) == 0}
	var lock *dataLock
	if !opt.NoMigrate {
		if lock, err = lockDataDir(cfg.DataDir, cmd); err != nil {
			if busy := new(dataDirBusyError); errors.As(err, &busy) {
				return nil, nil, fmt.Errorf("%s: the database needs migrations this admit applies, and %w: "+
					"restart the server with this admit (it migrates when it starts), then run this command again", cmd, err)
			}
			return nil, nil, err
		}
	}
	if _, db, err = openStore(ctx, cfg, opt); err != nil {
		return nil, nil, errors.Join(err, lock.release())
	}
	return db, lock.release, nil
}

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
		return printSchemaStatus(ctx, cfg.DBPath(), stdout)
	}
	// rule: only the data directory's lock holder migrates: a running
	// server migrated at its start, and must not have its schema changed
	// under it (docs/DEPLOY.md, "One server per data directory").
	lock, err := lockDataDir(cfg.DataDir, "migrate")
	if err != nil {
		if busy := new(dataDirBusyError); errors.As(err, &busy) {
			return fmt.Errorf("migrate: %w. admit serve applies migrations when it starts: "+
				"stop it and run admit migrate, or restart it with this admit", err)
		}
		return err
	}
	defer func() { err = errors.Join(err, lock.release()) }()
	_, db, err := openStore(ctx, cfg, store.Options{})
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
func printSchemaStatus(ctx context.Context, path string, stdout io.Writer) error {
	s, err := store.ReadSchema(ctx, path)
	if err != nil {
		return fmt.Errorf("migrate -status: %w", err)
	}
	known := store.KnownVersion()
	fmt.Fprintf(stdout, "database %s: schema version %d; this admit knows migrations up to %d\n", path, s.Version(), known)
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
		fmt.Fprintf(stdout, "%d unknown migration(s): a newer admit migrated this database, and this admit will not serve or migrate it. "+
			"Run the newer admit, or restore a backup from before the upgrade (docs/DEPLOY.md).\n", len(s.Unknown))
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
			VerifiedAt: d.VerifiedAt, NotRestorableSince: d.FailingSince, LastFailedDrill: d.LastFailure}, err
	}
}
