package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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
	// noSpace says the last storage failure was for lack of space.
	noSpace atomic.Bool
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
	if isStorageError(err) || isNoSpace(err) {
		h.noSpace.Store(isNoSpace(err))
		h.failingSince.CompareAndSwap(0, max(time.Now().UnixMilli(), 1))
	}
}

// failing reports whether writes are marked as failing.
func (h *writeHealth) failing() bool { return h.failingSince.Load() != 0 }

// ErrNoSpace is wrapped by the error of every write that failed because the
// disk is full. It is an EUNAVAILABLE error: nothing was saved, and the
// same request may be sent again once there is room.
var ErrNoSpace = &Error{Code: EUNAVAILABLE,
	Message: "The server cannot save anything right now: its storage is full. Nothing was saved. Please try again later."}

// isNoSpace reports a write that failed for lack of space: SQLite's
// SQLITE_FULL (what it answers when a write to the database, its WAL or a
// temporary file meets ENOSPC), its shared-memory file failing to grow (the
// one place SQLite reports a full disk as an I/O error), or ENOSPC and
// EDQUOT themselves from a write outside SQLite.
func isNoSpace(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	if pgCode(err) == pgDiskFull {
		return true
	}
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return false
	}
	return e.Code()&0xff == sqlite3.SQLITE_FULL || e.Code() == sqlite3.SQLITE_IOERR_SHMSIZE
}

// noSpace wraps err in ErrNoSpace when it is a failure for lack of space,
// so that callers see an EUNAVAILABLE error; other errors are returned as
// they are.
func noSpace(err error) error {
	if err == nil || errors.Is(err, ErrNoSpace) || !isNoSpace(err) {
		return err
	}
	return fmt.Errorf("%w (%w)", ErrNoSpace, err)
}

// isStorageError reports a SQLite error that says the database file cannot
// be written, as opposed to a refused statement or a busy lock.
//
// On PostgreSQL: a full disk or another insufficient-resources error
// (class 53), a system or I/O error (class 58), a database that takes only
// reads (a standby), or a lost connection to the server.
func isStorageError(err error) bool {
	if c := pgCode(err); c != "" {
		switch {
		case strings.HasPrefix(c, "53"), strings.HasPrefix(c, "58"), c == pgReadOnlyTransaction:
			return true
		}
	}
	if isLostConnection(err) {
		return true
	}
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

// WriteStatus says whether writes reach the database.
type WriteStatus struct {
	// FailingSince is when a write first failed for a storage reason since
	// the last write that succeeded; zero while writes succeed.
	FailingSince time.Time
	// DiskFull says the last failure was for lack of space.
	DiskFull bool
}

// Failing reports whether writes are failing.
func (s WriteStatus) Failing() bool { return !s.FailingSince.IsZero() }

// WriteStatus reports whether writes reach the database, probing as
// Writable does. While writes succeed it costs one atomic load.
func (db *DB) WriteStatus(ctx context.Context) WriteStatus {
	if !db.health.failing() {
		return WriteStatus{}
	}
	h := &db.health
	h.probeMu.Lock()
	defer h.probeMu.Unlock()
	if time.Since(h.lastProbe) >= writeProbeInterval && h.failing() {
		h.lastProbe = time.Now()
		_ = db.Update(ctx, probeWrite) // its outcome is noted like any write's
	}
	since := h.failingSince.Load()
	if since == 0 {
		return WriteStatus{}
	}
	return WriteStatus{FailingSince: FromMillis(since), DiskFull: h.noSpace.Load()}
}

// Writable reports whether writes reach the database: nil while they do.
// After a write failed for a storage reason it tries a write of its own, at
// most once a second, so that a disk with room again shows at once instead
// of waiting for the next real write. The probe rewrites the database's
// user_version with its own value: no row and nothing personal.
func (db *DB) Writable(ctx context.Context) error {
	st := db.WriteStatus(ctx)
	if !st.Failing() {
		return nil
	}
	return Errorf(EUNAVAILABLE, "database writes are failing since %s", st.FailingSince.Format(time.RFC3339))
}

// probeWrite writes without changing anything. On SQLite it writes the
// database header's user_version, unchanged: SQLite writes page 1 to the
// WAL at commit either way. On PostgreSQL it updates the newest row of
// goose's version table to itself: a new row version, written to the
// table and the server's log at commit.
func probeWrite(tx *Tx) error {
	return probeOn(context.Background(), tx.engine, tx.Tx)
}

// probeOn runs the probe's statements in sqlTx, on engine.
func probeOn(ctx context.Context, engine Engine, sqlTx *sql.Tx) error {
	if engine == PostgreSQL {
		if _, err := sqlTx.ExecContext(ctx, `UPDATE goose_db_version SET tstamp = tstamp
			WHERE id = (SELECT max(id) FROM goose_db_version)`); err != nil {
			return fmt.Errorf("rewrite the schema version: %w", err)
		}
		return nil
	}
	var v int64
	if err := sqlTx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return fmt.Errorf("read user_version: %w", err)
	}
	if _, err := sqlTx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, v)); err != nil {
		return fmt.Errorf("write user_version: %w", err)
	}
	return nil
}

// probeHeld runs probeWrite in a transaction of its own, for a caller
// that holds the write gate.
func (db *DB) probeHeld() error {
	ctx := context.Background()
	sqlTx, err := db.writer.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer sqlTx.Rollback()
	if db.engine == PostgreSQL {
		if _, err := sqlTx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, writeLockKey); err != nil {
			return err
		}
	}
	if err := probeOn(ctx, db.engine, sqlTx); err != nil {
		return err
	}
	return sqlTx.Commit()
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
