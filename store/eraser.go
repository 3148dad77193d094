package store

import (
	"context"
	"log/slog"
	"time"
)

// An erasure commits in the database, but the bytes it replaced stay in
// older frames of the write-ahead log (and, while Litestream replicates, in
// its local copies of those frames) until a checkpoint copies the log into
// the database file and truncates it. secure_delete zeroes the old bytes in
// the database file itself. So every transaction that erases tells the
// eraser, which flushes promptly after the commit: "erased at once" holds on
// disk within seconds, not at some later checkpoint (docs/erasure.md).

// eraserGap is the least time between two flushes: erasures that commit
// while one runs, or within the gap after it, share the next. A burst of
// removals costs a few flushes, never a busy loop. A flush that took long
// (it copies the whole log into the database file) spaces the next out to
// eraserDutyFactor times its own duration, so flushing never takes more
// than a fifth of the time, even through a sweep that erases a million
// entries in batches; but never more than eraserMaxGap.
const (
	eraserGap        = 250 * time.Millisecond
	eraserDutyFactor = 4
	eraserMaxGap     = 10 * time.Second
)

// eraserMaxRetry bounds the wait between attempts after a failed flush.
const eraserMaxRetry = 5 * time.Second

// eraserFinalTimeout bounds the last flush RunEraser makes when it stops. A
// flush takes milliseconds; one that waits longer waits for Litestream,
// busy with a snapshot, and the next start's flush does the work instead of
// holding up the stop.
const eraserFinalTimeout = 2 * time.Second

// noteErasure tells the eraser that a committed transaction erased data.
// It never blocks: a signal already waiting covers this erasure too.
func (db *DB) noteErasure() {
	select {
	case db.erasures <- struct{}{}:
	default:
	}
}

// RunEraser flushes erased bytes out of every local file until ctx ends:
// once at start (an erasure committed just before a crash may still be in
// the log) and then after every committed erasure, calling flush, which
// must leave no copy of an older page version on local disk: Checkpoint
// when nothing replicates, or the replicator's equivalent. A failed flush
// is retried with backoff until one succeeds. When ctx ends with an erasure
// not yet flushed (one committed within the gap, or a flush that failed), it
// flushes once more, within eraserFinalTimeout, so that a clean stop leaves
// no erased bytes behind until the next start: cancel ctx only once nothing
// else can commit an erasure.
//
// On PostgreSQL there is no local log to flush: it calls flush never and
// returns when ctx ends.
func (db *DB) RunEraser(ctx context.Context, log *slog.Logger, flush func(context.Context) error) {
	if db.engine == PostgreSQL {
		<-ctx.Done()
		return
	}
	db.runEraser(ctx, log, flush)
	select {
	case <-db.erasures:
	default:
		return
	}
	final, cancel := context.WithTimeout(context.WithoutCancel(ctx), eraserFinalTimeout)
	defer cancel()
	if err := flush(final); err != nil {
		log.Warn("the last flush of erased data before stopping failed; the next start flushes it", "err", err)
	}
}

// runEraser is RunEraser's loop until ctx ends.
func (db *DB) runEraser(ctx context.Context, log *slog.Logger, flush func(context.Context) error) {
	pending := true
	var backoff time.Duration
	for {
		if !pending {
			select {
			case <-ctx.Done():
				return
			case <-db.erasures:
			}
		}
		// Erasures that commit from here on need a flush of their own.
		select {
		case <-db.erasures:
		default:
		}
		began := time.Now()
		err := flush(ctx)
		wait := min(max(eraserGap, eraserDutyFactor*time.Since(began)), eraserMaxGap)
		if err != nil {
			if ctx.Err() != nil {
				db.noteErasure() // RunEraser's last flush covers it
				return
			}
			backoff = min(max(2*backoff, 100*time.Millisecond), eraserMaxRetry)
			wait = max(wait, backoff)
			log.Warn("flushing erased data from the write-ahead log failed; retrying", "err", err, "retry_in", backoff)
			db.noteErasure()
		} else {
			backoff = 0
		}
		pending = false
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}
