package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// writeProbeInterval is the least time between two probe writes.
const writeProbeInterval = time.Second

// writeHealth records whether write transactions reach the disk.
type writeHealth struct {
	// failingSince is when a write first failed for a storage reason
	// (Unix ms) since the last commit; zero while writes succeed.
	failingSince atomic.Int64
	// probeMu serializes probes; lastProbe is when the last one ran.
	probeMu   sync.Mutex
	lastProbe time.Time
}

// noteWrite records a write transaction's outcome. A commit costs one
// atomic load; only a storage failure (full disk, I/O error, read-only or
// damaged file) marks writes as failing.
func (h *writeHealth) noteWrite(err error) {
	if err == nil {
		if h.failingSince.Load() != 0 {
			h.failingSince.Store(0)
		}
		return
	}
	if isStorageError(err) {
		h.failingSince.CompareAndSwap(0, max(time.Now().UnixMilli(), 1))
	}
}

// isStorageError reports a SQLite error that says the database file cannot
// be written, as opposed to a refused statement or a busy lock.
func isStorageError(err error) bool {
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code() & 0xff {
	case sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN,
		sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return true
	}
	return false
}

// Writable reports whether writes reach the database: nil while they do.
// After a write failed for a storage reason it tries a write of its own, at
// most once a second, so that a disk with room again shows at once instead
// of waiting for the next real write. The probe rewrites the database's
// user_version with its own value: no row and nothing personal.
func (db *DB) Writable(ctx context.Context) error {
	if db.health.failingSince.Load() == 0 {
		return nil
	}
	h := &db.health
	h.probeMu.Lock()
	defer h.probeMu.Unlock()
	if time.Since(h.lastProbe) >= writeProbeInterval && h.failingSince.Load() != 0 {
		h.lastProbe = time.Now()
		_ = db.Update(ctx, probeWrite) // its outcome is noted like any write's
	}
	since := h.failingSince.Load()
	if since == 0 {
		return nil
	}
	return Errorf(EUNAVAILABLE, "database writes are failing since %s", FromMillis(since).Format(time.RFC3339))
}

// probeWrite writes the database header's user_version, unchanged: SQLite
// writes page 1 to the WAL at commit either way.
func probeWrite(tx *Tx) error {
	ctx := context.Background()
	var v int64
	if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return fmt.Errorf("read user_version: %w", err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, v)); err != nil {
		return fmt.Errorf("write user_version: %w", err)
	}
	return nil
}

// PauseWrites waits, like a write transaction, for the write gate and holds
// it until resume is called: no write transaction starts meanwhile. It is
// for taking a consistent position across the database and its backup; keep
// the pause short. It fails when ctx ends before the gate is free.
func (db *DB) PauseWrites(ctx context.Context) (resume func(), err error) {
	select {
	case db.wgate <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("pause writes: %w", ctx.Err())
	}
	var once sync.Once
	return func() { once.Do(func() { <-db.wgate }) }, nil
}
