package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"admit/backup"
	"admit/handlers"
	"admit/internal/config"
	"admit/internal/datalock"
	"admit/internal/identity"
	"admit/internal/serverkeys"
	"admit/store"
)

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
func serve(ctx context.Context, env config.Environment, names []string, stdout, stderr io.Writer) (err error) {
	// Every check admit config makes, before any data is touched.
	ok, err := preflight(ctx, env)
	if err != nil {
		return err
	}
	cfg, backupCfg := ok.cfg, ok.backup
	logger := newLogger(cfg.Log, stderr)
	warnUnknown(names, func(name, closest string) {
		logger.Warn("unknown variable ignored: admit reads no such setting", "name", name, "did_you_mean", closest)
	})
	tuneGC(cfg.GC)
	m := newServeMetrics(cfg)
	lock, err := lockForServe(cfg.DataDir)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, lock.Release()) }() // after everything below has closed
	opt := m.storeOptions(serveStoreOptions(backupCfg))
	opt.Migrated = func(mg store.Migration) { logger.Info("migrated", "version", mg.Version, "name", mg.Name) }
	keys, db, err := openStore(ctx, cfg, opt)
	if err != nil {
		return err
	}
	var repl *backup.Replicator
	defer func() { closeStorage(db, repl, logger, &err) }()
	if cfg.PostgreSQL() {
		logger.Info("database: PostgreSQL; Litestream does not apply, back it up with the engine's own tools (docs/DEPLOY.md#backups-on-postgresql)",
			"database", cfg.DatabaseLocation())
	} else if repl, err = startReplication(ctx, backupCfg, cfg.DBPath(), cfg.Backup.DrillInterval, db.PauseWrites, logger); err != nil {
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

	devKey, err := devSignInKey(cfg)
	if err != nil {
		return err
	}
	id, err := newIdentity(ctx, cfg, keys, db, logger)
	if err != nil {
		return err
	}
	startDiscovery(ctx, id, logger)
	srv, err := newHandler(cfg, keys, db, id, repl, backupCfg, m, devKey, logger)
	if err != nil {
		return err
	}
	announce(stdout, cfg, ln.Addr(), devKey)
	stopSide, err := startSideListeners(cfg, db, repl, m, stdout, logger)
	if err != nil {
		return err
	}
	defer stopSide()
	return serveHTTP(ctx, srv, ln, logger)
}

// lockForServe takes the data directory's lock for serve.
//
// rule: one server per data directory, locked before the keys or the
// database are touched and held until the process ends
// (docs/DEPLOY.md, "One server per data directory").
func lockForServe(dataDir string) (*datalock.Lock, error) {
	lock, err := datalock.Take(dataDir, "serve")
	if busy := new(datalock.BusyError); errors.As(err, &busy) {
		return nil, fmt.Errorf("%w: admit runs one server per data directory; stop that process "+
			"(or let it finish) first, or give this server its own ADMIT_DATA", err)
	}
	return lock, err
}

// closeStorage closes the database, then the replicator, adding a failure
// to close the database to *err.
//
// Litestream's lifecycle rule: it closes (with a final sync) only after
// admit's own connections are closed. The HTTP server and the sweeper have
// stopped by the time this runs.
func closeStorage(db *store.DB, repl *backup.Replicator, logger *slog.Logger, err *error) {
	closeDB(db, err)
	closeCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := repl.Close(closeCtx); err != nil {
		logger.Error("final backup sync failed: the latest changes may be missing from the backup", "err", err)
	}
}

// newHandler builds admit's HTTP handler on db and the identity id.
func newHandler(cfg *config.Config, keys serverkeys.Keys, db *store.DB, id identity.Identity, repl *backup.Replicator,
	backupCfg *backup.Config, m *metrics, devKey string, logger *slog.Logger) (http.Handler, error) {
	return handlers.New(handlers.Options{
		PublicURL:           cfg.PublicURL,
		ClientIPHeader:      cfg.ClientIPHeader,
		RequestIDHeader:     cfg.RequestIDHeader,
		Requests:            m.requestObserver(),
		NetworkHourlyLimit:  cfg.NetworkHourlyLimit,
		ClerkPublishableKey: cfg.Clerk.PublishableKey,
		Keys:                keys,
		Logger:              logger,
		BackupRetention:     backupRetention(cfg, backupCfg),
		Ready:               readiness(id, repl),
		BackupStatus:        backupStatus(repl),
		DevSignInKey:        devKey,
	}, db, id)
}

// backupRetention is how long erased data can survive in Litestream's
// backup: none on PostgreSQL, whose backups are the operator's.
func backupRetention(cfg *config.Config, bc *backup.Config) time.Duration {
	if cfg.PostgreSQL() {
		return 0
	}
	return bc.BackupRetention()
}

// startDiscovery discovers the OpenID Provider, in OpenID Connect mode,
// in the background: retried with backoff, each failure logged, while
// /readyz says why admit is not ready yet. Other modes have nothing to
// discover.
func startDiscovery(ctx context.Context, id identity.Identity, logger *slog.Logger) {
	oi, ok := id.(*identity.OIDCIdentity)
	if !ok {
		return
	}
	go oi.RunDiscovery(ctx, func(err error, wait time.Duration) {
		if err != nil {
			logger.Warn("identity provider discovery failed; retrying", "err", err, "retry_in", wait)
		} else {
			logger.Info("identity provider discovered")
		}
	})
}

// readiness is what /readyz checks besides the database: the replica is
// not too far behind and, with OpenID Connect, the provider has been
// discovered (startDiscovery).
func readiness(id identity.Identity, repl *backup.Replicator) func(context.Context) error {
	oi, ok := id.(*identity.OIDCIdentity)
	if !ok {
		return repl.Ready // not ready while changes wait too long for the replica
	}
	return func(ctx context.Context) error {
		if err := oi.Ready(); err != nil {
			return err
		}
		return repl.Ready(ctx)
	}
}

// startSideListeners starts the metrics and profiling listeners that cfg
// turns on, and returns the function that stops them.
func startSideListeners(cfg *config.Config, db *store.DB, repl *backup.Replicator, m *metrics, stdout io.Writer, logger *slog.Logger) (stop func(), err error) {
	stopMetrics, err := m.start(cfg, db, repl, stdout, logger)
	if err != nil {
		return nil, err
	}
	if cfg.PprofAddr == "" {
		return stopMetrics, nil
	}
	stopPprof, err := startPprof(cfg.PprofAddr, logger)
	if err != nil {
		stopMetrics()
		return nil, err
	}
	return func() { stopPprof(); stopMetrics() }, nil
}

// devSignInKey makes this start's development sign-in key, or "" outside
// development mode.
func devSignInKey(cfg *config.Config) (string, error) {
	if !cfg.DevMode() {
		return "", nil
	}
	key, err := handlers.NewDevSignInKey()
	if err != nil {
		return "", fmt.Errorf("development sign-in key: %w", err)
	}
	return key, nil
}

// announce prints the address admit listens on and, with the development
// identity, the sign-in link that carries this start's key.
//
// rule (docs/DEPLOY.md#development-mode): the key is printed here, on the
// console of the person who started admit, and nowhere else: not in the
// log, not on any page.
func announce(stdout io.Writer, cfg *config.Config, addr net.Addr, devKey string) {
	base := "http://" + addr.String()
	fmt.Fprintf(stdout, "listening on %s\n", base)
	if cfg.DevMode() {
		fmt.Fprintf(stdout, "development sign-in: %s (open it in a browser on this machine; it changes at every start; "+
			"the demo owner signs in as ADMIT_DEV_OWNER_EMAIL, default owner@example.test)\n", handlers.DevSignInLink(base, devKey))
	}
}
