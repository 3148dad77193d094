package backup

import (
	"context"
	"sync"
	"time"
)

// Catch-up: Litestream retries a failed sync after a back-off that doubles
// up to five minutes, so a replica (or local disk) that works again would
// wait that long. The replicator checks every catchUpInterval and, once
// changes have waited catchUpAfter, ships them itself.
const (
	catchUpInterval = time.Second
	catchUpAfter    = 3 * time.Second
	catchUpTimeout  = 10 * time.Second
)

// background runs the replicator's own goroutines until stop.
type background struct {
	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// run starts fn in a goroutine that stop cancels and waits for.
func (b *background) run(fn func(ctx context.Context)) {
	b.once.Do(func() { b.ctx, b.cancel = context.WithCancel(context.Background()) })
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		fn(b.ctx)
	}()
}

// stop cancels every goroutine run started and waits for them.
func (b *background) stop() {
	b.once.Do(func() { b.ctx, b.cancel = context.WithCancel(context.Background()) })
	b.cancel()
	b.wg.Wait()
}

// catchUp ships waiting changes at once when Litestream's own sync has
// stalled, so that the backup and readiness recover within seconds of the
// replica or the local disk working again. Litestream logs the failures.
func (r *Replicator) catchUp(ctx context.Context) {
	t := time.NewTicker(catchUpInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s, err := r.Status()
		waiting := err == nil && s.Pending && s.Lag >= catchUpAfter
		// Litestream's last copy of the WAL into its local files failed
		// (a full disk): it now backs off, while Pending cannot see the
		// changes it has not copied.
		if d := r.db.SyncDiagnostic(); !d.Active && d.Error != "" {
			waiting = true
		}
		if !waiting {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, catchUpTimeout)
		_ = r.litestream(sctx, r.db.SyncAndWait)
		cancel()
	}
}
