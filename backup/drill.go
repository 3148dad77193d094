package backup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/superfly/ltx"
)

// DefaultDrillInterval is how often the server runs a restore drill; it
// also runs one right after every start and another a minute later.
const DefaultDrillInterval = time.Hour

// A drill holds writes while it syncs the replica and counts the live rows,
// for at most drillHoldTimeout. After a failed or inconclusive drill the
// next one comes after drillRetry (or the interval, when shorter).
const (
	drillHoldTimeout = 5 * time.Second
	drillRetry       = time.Minute
)

// PauseFunc holds the database's writes until resume is called; the
// store's PauseWrites.
type PauseFunc func(ctx context.Context) (resume func(), err error)

// DrillResult is one restore drill's verdict.
type DrillResult struct {
	// At is when the drill took its position.
	At time.Time
	// TXID is the transaction the live database and the replica were both
	// at; the drill restored exactly that one.
	TXID ltx.TXID
	// Live and Restored are the row counts on each side.
	Live, Restored TableCounts
	// Problem says why the restore is not intact (integrity_check findings
	// or a decoding error); empty when it is.
	Problem string
	// Differences lists every table whose counts differ.
	Differences []string
	// WritesHeld is how long writes waited for the drill.
	WritesHeld time.Duration
	// Snapshot reports the fresh full snapshot a failed drill forced:
	// empty when the drill passed, else its outcome.
	Snapshot string
}

// OK reports whether the restore was intact and matched the live database.
func (d *DrillResult) OK() bool { return d.Problem == "" && len(d.Differences) == 0 }

// DrillStatus is what the restore drills found, for the console and /readyz.
type DrillStatus struct {
	// VerifiedAt is when a drill last found the backup restorable.
	VerifiedAt time.Time
	// FailingSince is when the backup was first found not restorable
	// since the last drill that passed; zero while it is restorable.
	FailingSince time.Time
	// LastFailure is the last failed drill, zero if none since start.
	LastFailure time.Time
}

// drillState is the replicator's record of its drills.
type drillState struct {
	mu     sync.Mutex
	status DrillStatus
	// running serializes drills.
	running sync.Mutex
}

// DrillStatus reports what the restore drills found; the zero value before
// the first drill and when replication is off.
func (r *Replicator) DrillStatus() DrillStatus {
	if r == nil {
		return DrillStatus{}
	}
	r.drills.mu.Lock()
	defer r.drills.mu.Unlock()
	return r.drills.status
}

// drillReady is Ready's part for the drills.
func (r *Replicator) drillReady() error {
	if since := r.DrillStatus().FailingSince; !since.IsZero() {
		return fmt.Errorf("backup not restorable since %s", since.UTC().Format(time.RFC3339))
	}
	return nil
}

// StartDrills runs a restore drill now, again a minute later, and then
// every interval until Close; after a failed or inconclusive drill the next
// comes sooner. pause holds the database's writes.
func (r *Replicator) StartDrills(interval time.Duration, pause PauseFunc) {
	if r == nil || interval <= 0 {
		return
	}
	r.bg.run(func(ctx context.Context) {
		for first := true; ; first = false {
			next := interval
			if first {
				// An unclean shutdown's damage shows in the first
				// seconds after start: check again soon.
				next = min(drillRetry, interval)
			}
			res, err := r.Drill(ctx, pause)
			if ctx.Err() != nil {
				return
			}
			switch {
			case err != nil:
				r.log.Warn("restore drill could not run; it runs again soon", "err", err)
				next = min(drillRetry, interval)
			case !res.OK(): // Drill logged it
				next = min(drillRetry, interval)
			default:
				r.log.Info("restore drill passed", "txid", res.TXID.String(), "tables", len(res.Live),
					"rows", res.Live.Rows(), "writes_held", res.WritesHeld.Round(time.Microsecond).String())
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(next):
			}
		}
	})
}

// Drill is one restore drill while the server runs. With writes held (at
// most drillHoldTimeout) it ships every change to the replica and counts
// the live rows, so both sides are at the same transaction; then, writes
// flowing again, it restores exactly that transaction to a temporary file,
// runs integrity_check and compares the counts. A failed drill is logged as
// an error and forces a fresh full snapshot. The error return means the
// drill could not take its position (the replica is unreachable, or writes
// could not be held in time): that is no verdict on the backup.
func (r *Replicator) Drill(ctx context.Context, pause PauseFunc) (*DrillResult, error) {
	r.drills.running.Lock()
	defer r.drills.running.Unlock()

	res, err := r.drillPosition(ctx, pause)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "admit-drill-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	rs := &restorer{client: r.db.Replica.Client, out: filepath.Join(dir, "restored.db")}
	restored, err := rs.exact(ctx, restorePoint{TXID: res.TXID})
	var damage *damageError
	switch {
	case errors.As(err, &damage):
		res.Problem = damage.reason
	case err != nil:
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// A temporary file that cannot be written (a full $TMPDIR) or a
		// replica that cannot be reached says nothing about the backup
		// (replication lag reports the latter); a replica that answers
		// but cannot restore the transaction is not restorable.
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) && strings.HasPrefix(pe.Path, dir) {
			return nil, fmt.Errorf("restore into a temporary file: %w", err)
		}
		if lerr := checkReachable(ctx, r.db.Replica.Client); lerr != nil {
			return nil, fmt.Errorf("restore: %w (the replica does not answer: %v)", err, lerr)
		}
		res.Problem = err.Error()
	default:
		if res.Restored, err = TableRowCounts(ctx, restored.Path); err != nil {
			return nil, err
		}
		res.Differences = res.Live.Diff(res.Restored)
	}

	r.drills.mu.Lock()
	if res.OK() {
		r.drills.status.VerifiedAt = res.At
		r.drills.status.FailingSince = time.Time{}
	} else {
		r.drills.status.LastFailure = res.At
		if r.drills.status.FailingSince.IsZero() {
			r.drills.status.FailingSince = res.At
		}
	}
	r.drills.mu.Unlock()
	if res.OK() {
		return res, nil
	}

	// The live database is intact: a full snapshot of it is a good
	// restore point again, whatever went wrong in the replica's chain.
	res.Snapshot = "taken"
	if _, err := r.forceSnapshot(ctx); err != nil {
		res.Snapshot = "failed: " + err.Error()
	}
	r.log.Error("restore drill failed: the backup is not restorable; forced a fresh full snapshot",
		"txid", res.TXID.String(), "problem", res.Problem, "differences", strings.Join(res.Differences, ", "),
		"snapshot", res.Snapshot)
	return res, nil
}

// drillPosition holds writes, ships every change to the replica and counts
// the live rows: the replica and the counts are then at one transaction.
func (r *Replicator) drillPosition(ctx context.Context, pause PauseFunc) (*DrillResult, error) {
	hctx, cancel := context.WithTimeout(ctx, drillHoldTimeout)
	defer cancel()
	resume, err := pause(hctx)
	if err != nil {
		return nil, fmt.Errorf("hold writes: %w", err)
	}
	held := time.Now()
	defer resume()
	// Litestream writes transactions of its own (its bookkeeping tables)
	// past admit's write gate, and its monitor may stage one between the
	// two halves of a sync: sync again until both sides agree.
	var pos ltx.Pos
	for attempt := 1; ; attempt++ {
		if err := r.litestream(hctx, r.db.SyncAndWait); err != nil {
			return nil, fmt.Errorf("sync the replica: %w", err)
		}
		if pos, err = r.db.Pos(); err != nil {
			return nil, fmt.Errorf("replication position: %w", err)
		}
		rpos := r.db.Replica.Pos()
		if rpos.TXID == pos.TXID {
			break
		}
		if attempt == 3 {
			return nil, fmt.Errorf("the replica is at transaction %s after a sync to %s", rpos.TXID, pos.TXID)
		}
	}
	live, err := TableRowCounts(hctx, r.db.Path())
	if err != nil {
		return nil, fmt.Errorf("count the live rows: %w", err)
	}
	resume()
	return &DrillResult{At: time.Now().UTC(), TXID: pos.TXID, Live: live, WritesHeld: time.Since(held)}, nil
}

// forceSnapshot writes a full snapshot of the live database to the replica.
// Litestream may be writing its own snapshot of the same transaction to the
// same file at that moment, which fails one of the two: try again shortly.
func (r *Replicator) forceSnapshot(ctx context.Context) (*ltx.FileInfo, error) {
	var info *ltx.FileInfo
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		err = r.litestream(ctx, func(ctx context.Context) error {
			var err error
			info, err = r.db.Snapshot(ctx)
			return err
		})
		if err == nil || ctx.Err() != nil {
			return info, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return nil, err
}
