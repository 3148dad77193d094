package backup

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/benbjohnson/litestream"
	"github.com/superfly/ltx"
)

// DefaultReplicaCheckInterval is how often the server checks that the
// replica still holds a restorable backup up to the transaction Litestream
// last shipped, and still belongs to this database. A check reads the
// replica's owner file and lists its snapshots and level-0 files: a replica
// whose files were deleted has no snapshot, or not the level-0 file last
// shipped. Every fullCheckEvery checks, and whenever that quick look finds
// something amiss, it lists every level and works out what restores. (On
// S3 a listing is a paid request: the quick look is two, the full one one
// per level and page.)
const DefaultReplicaCheckInterval = 20 * time.Second

// fullCheckEvery is how many checks go by between full ones.
const fullCheckEvery = 3

// replicaRepairTimeout bounds one check with its repair.
const replicaRepairTimeout = time.Minute

// ReplicaHealth is what the replica checks found, for the console and
// /readyz.
type ReplicaHealth struct {
	// LostSince is when a check first found that the replica no longer
	// holds a restorable backup of what was shipped to it (its files were
	// deleted, or some of them), or that it belongs to another database;
	// zero while it is sound. It stays set until a fresh snapshot has been
	// written and a check has found it restorable again.
	LostSince time.Time
	// Problem says what the check found; empty while the replica is sound.
	Problem string
}

// replicaHealth is the replicator's record of its replica checks.
type replicaHealth struct {
	mu     sync.Mutex
	health ReplicaHealth
}

// ReplicaHealth reports what the replica checks found; the zero value while
// the replica is sound and when replication is off.
func (r *Replicator) ReplicaHealth() ReplicaHealth {
	if r == nil {
		return ReplicaHealth{}
	}
	r.health.mu.Lock()
	defer r.health.mu.Unlock()
	return r.health.health
}

// healthReady is Ready's part for the replica checks. The message names no
// path or database: /readyz is public.
func (r *Replicator) healthReady() error {
	h := r.ReplicaHealth()
	if h.LostSince.IsZero() {
		return nil
	}
	if h.Problem == problemOwner {
		return fmt.Errorf("backup replica claimed by another database since %s", h.LostSince.UTC().Format(time.RFC3339))
	}
	return fmt.Errorf("backup replica lost since %s: it holds no restorable backup; taking a fresh snapshot",
		h.LostSince.UTC().Format(time.RFC3339))
}

// problemOwner is ReplicaHealth.Problem for a replica that now belongs to
// another database.
const problemOwner = "the replica belongs to another database"

// watchReplica checks the replica every interval until ctx is done.
func (r *Replicator) watchReplica(interval time.Duration) func(ctx context.Context) {
	return func(ctx context.Context) {
		t := time.NewTicker(interval)
		defer t.Stop()
		for n := 1; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			r.check(ctx, n%fullCheckEvery == 0)
		}
	}
}

// CheckReplica checks once that the replica holds a restorable backup up to
// the transaction Litestream last shipped and that it still belongs to this
// database. When it does not (the replica's files were deleted, and
// Litestream, which keeps its position in memory, goes on writing
// increments that chain to nothing), it records the replica as lost, which
// turns Ready into an error, writes a fresh full snapshot of the live
// database and its owner file, and clears the record only once a check
// after the snapshot finds the replica restorable again. A check that
// cannot list the replica gives no verdict: replication lag reports an
// unreachable replica.
//
// CheckReplica always lists every level; the server's own checks mostly
// take a quicker look (see DefaultReplicaCheckInterval).
func (r *Replicator) CheckReplica(ctx context.Context) { r.check(ctx, true) }

// check is CheckReplica, with a quick look first unless full is set.
func (r *Replicator) check(ctx context.Context, full bool) {
	ctx, cancel := context.WithTimeout(ctx, replicaRepairTimeout)
	defer cancel()
	defer r.checks.Add(1)
	// rule: a lost replica is sound again only when a full listing says
	// so, after the fresh snapshot (docs/DEPLOY.md, "Backups").
	full = full || !r.ReplicaHealth().LostSince.IsZero()
	problem, err := r.replicaProblem(ctx, full)
	if err == nil && problem != "" {
		// Confirm with a second listing: a sound replica never fails
		// twice in a row (Litestream writes a compacted or snapshot file
		// before it deletes the files it covers, and levels are listed
		// from the lowest up).
		problem, err = r.replicaProblem(ctx, true)
	}
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("replica check could not run; it runs again soon", "err", err)
		}
		return
	}
	if problem == "" {
		r.setHealth("")
		return
	}
	if problem == problemOwner {
		if r.setHealth(problem) {
			r.log.Error("the backup replica now belongs to another database: its owner file names another database; "+
				"this server's changes no longer make a backup of their own (docs/DEPLOY.md, \"One replica, one database\")",
				"replica", r.replica.String())
		}
		return
	}
	if r.setHealth(problem) {
		r.log.Error("the backup replica no longer holds a restorable backup; taking a fresh full snapshot",
			"replica", r.replica.String(), "problem", problem)
	}
	r.repair(ctx)
}

// repair writes the owner file and a fresh snapshot, then checks again.
func (r *Replicator) repair(ctx context.Context) {
	if r.repairGate != nil {
		select {
		case <-r.repairGate:
		case <-ctx.Done():
			return
		}
	}
	if _, err := claimReplica(ctx, r.owners, r.replica.String(), r.owner); err != nil {
		r.log.Error("replica repair: could not write the owner file", "err", err)
		return
	}
	snap, err := r.forceSnapshot(ctx)
	if err != nil {
		r.log.Error("replica repair: the fresh snapshot failed; the next check tries again", "err", err)
		return
	}
	if r.db.Replica.Pos().TXID == 0 {
		// Litestream has no position: it looks for one in the replica's
		// level 0 and, finding none, would ship from the database's first
		// transaction, whose local file is long gone. The snapshot, as a
		// level-0 file, is where it resumes.
		if err := r.snapshotAsL0(ctx, snap); err != nil {
			r.log.Error("replica repair: could not give Litestream the snapshot to resume from; the next check tries again", "err", err)
			return
		}
		if err := r.litestream(ctx, r.db.SyncAndWait); err != nil {
			r.log.Error("replica repair: Litestream did not resume from the snapshot; the next check tries again", "err", err)
			return
		}
	}
	problem, err := r.replicaProblem(ctx, true)
	if err != nil || problem != "" {
		r.log.Error("replica repair: the replica is not restorable yet after the fresh snapshot; the next check tries again",
			"problem", problem, "err", err)
		return
	}
	r.setHealth("")
	r.log.Info("backup replica repaired: a fresh full snapshot restores", "replica", r.replica.String())
}

// setHealth records problem ("" for a sound replica) and reports whether
// the replica was sound before.
func (r *Replicator) setHealth(problem string) (wasSound bool) {
	r.health.mu.Lock()
	defer r.health.mu.Unlock()
	wasSound = r.health.health.LostSince.IsZero()
	switch {
	case problem == "":
		r.health.health = ReplicaHealth{}
	case wasSound:
		r.health.health = ReplicaHealth{LostSince: r.now().UTC(), Problem: problem}
	default:
		r.health.health.Problem = problem
	}
	return wasSound
}

// replicaProblem says what is wrong with the replica, or "" when it holds a
// restorable backup up to the transaction Litestream last shipped and its
// owner file names this database. A missing owner file alone is written
// again. Unless full is set, a replica that has a snapshot and the
// level-0 file last shipped passes without a full listing.
func (r *Replicator) replicaProblem(ctx context.Context, full bool) (string, error) {
	o, err := r.owners.read(ctx)
	if err != nil {
		return "", err
	}
	if o != nil && o.DatabaseID != r.owner.DatabaseID {
		return problemOwner, nil
	}
	// The position is read before the listing: a file Litestream ships
	// after it is listed, or is not needed.
	shipped := r.db.Replica.Pos().TXID
	if !full && shipped > 0 && o != nil {
		ok, err := r.quickLook(ctx, shipped)
		if err != nil || ok {
			return "", err
		}
	}
	points, err := restorePoints(ctx, r.db.Replica.Client)
	if err != nil {
		return "", fmt.Errorf("list the replica: %w", err)
	}
	var newest ltx.TXID
	if len(points) > 0 {
		newest = points[len(points)-1].TXID
	}
	if shipped == 0 {
		return r.unplacedProblem(newest)
	}
	r.unplaced.Store(false)
	if newest < shipped {
		if newest == 0 {
			return fmt.Sprintf("transaction %s was shipped, and the replica restores no transaction", shipped), nil
		}
		return fmt.Sprintf("transaction %s was shipped, and the replica restores none after %s", shipped, newest), nil
	}
	if o == nil {
		if _, err := claimReplica(ctx, r.owners, r.replica.String(), r.owner); err != nil && !errors.As(err, new(*OwnerError)) {
			return "", err
		}
	}
	return "", nil
}

// unplacedProblem is replicaProblem's verdict while Litestream has no
// position in the replica: its syncs are failing, or it has not synced
// since start. A replica emptied while the server was stopped leaves it
// there for good: it asks the replica's level 0 where to resume, finds
// nothing and tries to ship the database's first transaction, whose local
// file is long gone. That is a problem once two checks in a row find
// committed transactions the replica cannot restore; a slow first sync is
// not.
func (r *Replicator) unplacedProblem(newest ltx.TXID) (string, error) {
	_, local, err := r.db.MaxLTX()
	if err != nil {
		return "", fmt.Errorf("local position: %w", err)
	}
	if local == 0 || newest >= local {
		r.unplaced.Store(false)
		return "", nil
	}
	if !r.unplaced.Swap(true) {
		return "", nil
	}
	if newest == 0 {
		return fmt.Sprintf("transaction %s is committed, Litestream ships nothing, and the replica restores no transaction", local), nil
	}
	return fmt.Sprintf("transaction %s is committed, Litestream ships nothing, and the replica restores none after %s", local, newest), nil
}

// snapshotAsL0 copies the snapshot to the replica's level 0, where
// Litestream looks for the position it resumes from.
func (r *Replicator) snapshotAsL0(ctx context.Context, snap *ltx.FileInfo) error {
	c := r.db.Replica.Client
	rd, err := c.OpenLTXFile(ctx, snap.Level, snap.MinTXID, snap.MaxTXID, 0, 0)
	if err != nil {
		return err
	}
	defer rd.Close()
	_, err = c.WriteLTXFile(ctx, 0, snap.MinTXID, snap.MaxTXID, rd)
	return err
}

// quickLook reports whether the replica holds a snapshot and the level-0
// file of transaction shipped or a later one. Litestream keeps the newest
// level-0 file and at least one snapshot, so a sound replica always does.
func (r *Replicator) quickLook(ctx context.Context, shipped ltx.TXID) (bool, error) {
	c := r.db.Replica.Client
	snap, err := newestFile(ctx, c, litestream.SnapshotLevel)
	if err != nil || snap == 0 {
		return false, err
	}
	l0, err := newestFile(ctx, c, 0)
	return l0 >= shipped, err
}

// newestFile is the highest transaction of a level's files, 0 for none.
func newestFile(ctx context.Context, c litestream.ReplicaClient, level int) (ltx.TXID, error) {
	itr, err := c.LTXFiles(ctx, level, 0, false)
	if err != nil {
		return 0, err
	}
	var newest ltx.TXID
	for itr.Next() {
		newest = max(newest, itr.Item().MaxTXID)
	}
	return newest, itr.Close()
}
