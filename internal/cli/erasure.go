package cli

import (
	"context"
	"log/slog"
	"sync"

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
