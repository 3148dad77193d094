package cli

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"admit/backup"
	"admit/store"
)

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
//
// The sweeper and the retirer are work for the database, run by one server
// at a time under their leases (runLeased); the eraser flushes this
// server's own database file, so every server runs its own
// (docs/ARCHITECTURE.md#background-work-and-leases).
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
	leased := runLeased(sweepCtx, db, logger)
	go func() {
		defer background.Done()
		leased("sweeper", func(ctx context.Context) { db.RunSweeper(ctx, store.SweepInterval, logger) })
	}()
	go func() {
		defer background.Done()
		leased("retirer", func(ctx context.Context) { db.RunRetirer(ctx, store.RetireCheckInterval, logger) })
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

// fileLeaseTTL is how long a lease lasts on SQLite, where the data
// directory's lock already keeps every other server away: long, so that
// renewals add almost no writes (nor replicated changes) to an idle server.
const fileLeaseTTL = time.Hour

// runLeased returns the function that runs work under the named lease,
// held by this server under one random holder ID, until ctx ends. On
// SQLite this server holds the data directory's lock, so any lease still
// held is a stopped server's: it ends them first, and takes each lease at
// once. Servers sharing a PostgreSQL database hold each lease for
// store.LeaseTTL at a time.
func runLeased(ctx context.Context, db *store.DB, logger *slog.Logger) func(name string, work func(context.Context)) {
	holder, ttl := store.NewLeaseHolder(), store.LeaseTTL
	if db.Engine() == store.SQLite {
		ttl = fileLeaseTTL
		if err := db.EndLeases(ctx); err != nil {
			logger.Warn("ending a stopped server's leases failed: its background work waits for them to expire", "err", err)
		}
	}
	logger.Info("background work runs under leases", "holder", holder, "lease_ttl", ttl)
	return func(name string, work func(context.Context)) {
		db.RunLeased(ctx, store.LeasedJob{Lease: name, Holder: holder, TTL: ttl, Run: work}, logger)
	}
}
