package backup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/litestream"
	"github.com/benbjohnson/litestream/file"
	"github.com/benbjohnson/litestream/s3"
	"github.com/superfly/ltx"
)

// DefaultMaxLag is how long a committed change may wait to reach the replica
// before the server reports itself not ready. Litestream ships changes about
// once a second (sync-interval) and backs off to at most five minutes while
// the replica fails, so a minute of lag means the replica is failing, not busy.
const DefaultMaxLag = time.Minute

// replicaCheckTimeout bounds the reachability check at start.
const replicaCheckTimeout = 15 * time.Second

// Replicator replicates admit's database with an embedded Litestream while
// the server runs. A nil *Replicator means replication is off: its methods
// then report ready and do nothing.
type Replicator struct {
	// MaxLag is how long changes may wait for the replica before Ready
	// fails; zero means DefaultMaxLag. Start sets it from Config.MaxLag.
	MaxLag time.Duration

	replica *ReplicaConfig
	store   *litestream.Store
	db      *litestream.DB
	started time.Time
	now     func() time.Time

	closeOnce sync.Once
	closeErr  error

	// up is set once a call into Litestream has succeeded (see litestream).
	up atomic.Bool

	// bg runs the catch-up, the replica checks and the restore drills;
	// drills and health record them; log is admit's logger.
	bg     background
	drills drillState
	health replicaHealth
	log    *slog.Logger

	// owners is the replica's owner file; owner describes this database.
	owners ownerStore
	owner  ReplicaOwner
	// checks counts finished replica checks; repairGate is Config's;
	// unplaced is set while a check found Litestream without a position
	// and committed transactions the replica cannot restore.
	checks     atomic.Int64
	repairGate chan struct{}
	unplaced   atomic.Bool
}

// Status is the replication state, for /readyz and the owner console.
type Status struct {
	// Replica says where the backup goes, without credentials.
	Replica string
	// LastSync is when the replica last held every change Litestream had
	// seen; zero before the first sync since start.
	LastSync time.Time
	// Pending is true while committed changes have not reached the replica.
	Pending bool
	// Lag is how long the pending changes have waited: the time since the
	// replica was last in sync (or since start). Zero when nothing is pending.
	Lag time.Duration
}

// Start replicates the database at dbPath to the replica litestream.yml names
// for it, in the background, until Close. It returns nil, nil when no replica
// is configured. The database must exist (store.Open creates it). Start
// checks once that the replica can be listed, so a wrong bucket, endpoint or
// credential fails the start rather than only the first sync.
//
// Litestream's lifecycle rule: Close must be called only after every other
// connection to the database has been closed (POSIX locks are per process).
func Start(ctx context.Context, cfg *Config, dbPath string, logger *slog.Logger) (*Replicator, error) {
	rc, err := cfg.ReplicaFor(dbPath)
	if err != nil || rc == nil {
		return nil, err
	}
	abs, err := expandPath(dbPath)
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	// Litestream logs every compaction at Info; admit keeps its warnings.
	lsLogger := slog.New(minLevel{logger.Handler(), slog.LevelWarn}).With("component", "litestream")

	db := litestream.NewDB(abs)
	r := litestream.NewReplica(db)
	if r.Client, err = newClient(rc, r, cfg.Credentials); err != nil {
		return nil, err
	}
	if rc.SyncInterval != nil {
		r.SyncInterval = *rc.SyncInterval
	}
	db.Replica = r

	st := litestream.NewStore([]*litestream.DB{db}, cfg.compactionLevels())
	st.Logger = lsLogger
	st.SnapshotInterval = cfg.snapshotInterval()
	st.SnapshotRetention = cfg.snapshotRetention()
	st.SetL0Retention(cfg.l0Retention())
	st.L0RetentionCheckInterval = cfg.l0RetentionCheckInterval()
	db.SetLogger(lsLogger.With("db", filepath.Base(abs)))
	r.Client.SetLogger(lsLogger)

	if err := initClient(ctx, rc, r.Client); err != nil {
		return nil, err
	}
	if err := checkReachable(ctx, r.Client); err != nil {
		return nil, fmt.Errorf("replica %s is not reachable: %w", rc, err)
	}
	owners, owner, err := claim(ctx, rc, cfg.Credentials, abs, logger)
	if err != nil {
		return nil, err
	}
	if err := st.Open(ctx); err != nil {
		_ = st.Close(context.Background())
		return nil, fmt.Errorf("start replication to %s: %w", rc, err)
	}
	repl := &Replicator{MaxLag: cfg.MaxLag, replica: rc, store: st, db: db, started: time.Now(), now: time.Now, log: logger,
		owners: owners, owner: owner, repairGate: cfg.repairGate}
	repl.bg.run(repl.catchUp)
	interval := cfg.ReplicaCheckInterval
	if interval <= 0 {
		interval = DefaultReplicaCheckInterval
	}
	repl.bg.run(repl.watchReplica(interval))
	return repl, nil
}

// claim gives the database at dbPath its identity, if it has none yet, and
// makes sure the replica belongs to it, before Litestream writes anything.
func claim(ctx context.Context, rc *ReplicaConfig, cred Credentials, dbPath string, logger *slog.Logger) (ownerStore, ReplicaOwner, error) {
	id, err := databaseIdentity(ctx, dbPath)
	if err != nil {
		return nil, ReplicaOwner{}, err
	}
	owners, err := newOwnerStore(ctx, rc, cred)
	if err != nil {
		return nil, ReplicaOwner{}, fmt.Errorf("replica %s: %w", rc, err)
	}
	this := thisOwner(id, dbPath)
	claimed, err := claimReplica(ctx, owners, rc.String(), this)
	if err != nil {
		return nil, ReplicaOwner{}, err
	}
	if claimed {
		logger.Info("the replica now belongs to this database", "replica", rc.String(), "database_id", id)
	}
	return owners, this, nil
}

// initClient prepares the replica client, explaining a known failure.
func initClient(ctx context.Context, rc *ReplicaConfig, c litestream.ReplicaClient) error {
	err := c.Init(ctx)
	if err != nil && strings.Contains(err.Error(), "RootCAs") {
		// Litestream v0.5.18 gives the AWS SDK its own *http.Client, which
		// cannot take the SDK's custom CA bundle.
		return fmt.Errorf("replica %s: %w (AWS_CA_BUNDLE is set, which Litestream's S3 client cannot use: unset it and add the CA to the system trust store or SSL_CERT_FILE)", rc, err)
	}
	if err != nil {
		return fmt.Errorf("replica %s: %w", rc, err)
	}
	return nil
}

// checkReachable lists the replica's level-0 files once.
func checkReachable(ctx context.Context, c litestream.ReplicaClient) error {
	ctx, cancel := context.WithTimeout(ctx, replicaCheckTimeout)
	defer cancel()
	itr, err := c.LTXFiles(ctx, 0, 0, false)
	if err != nil {
		return err
	}
	for itr.Next() {
	}
	return itr.Close()
}

// newClient builds the Litestream replica client for rc. An S3 replica
// uses cred (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or, as the
// official CLI allows, LITESTREAM_ACCESS_KEY_ID and
// LITESTREAM_SECRET_ACCESS_KEY); without them the AWS SDK's default chain
// applies (shared config, instance role).
func newClient(rc *ReplicaConfig, r *litestream.Replica, cred Credentials) (litestream.ReplicaClient, error) {
	switch rc.kind() {
	case "file":
		p, err := expandPath(rc.Path)
		if err != nil {
			return nil, err
		}
		c := file.NewReplicaClient(p)
		c.Replica = r
		return c, nil
	case "s3":
		c := s3.NewReplicaClient()
		c.Bucket = rc.Bucket
		c.Path = strings.Trim(rc.Path, "/")
		c.Region = rc.Region
		c.Endpoint = rc.Endpoint
		// As the official CLI: path-style when an endpoint is set, unless
		// force-path-style says otherwise.
		c.ForcePathStyle = rc.Endpoint != ""
		if rc.ForcePathStyle != nil {
			c.ForcePathStyle = *rc.ForcePathStyle
		}
		if (cred.AccessKeyID == "") != (cred.SecretAccessKey == "") {
			return nil, errors.New("set both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or neither")
		}
		c.AccessKeyID, c.SecretAccessKey = cred.AccessKeyID, cred.SecretAccessKey
		return c, nil
	}
	return nil, fmt.Errorf("replica type %q is not supported", rc.Type)
}

// Status reports the replication state. Positions are read from
// Litestream's local state, without a round trip to the replica.
//
// The local position is the newest level-0 file's name, not Litestream's
// Pos: Pos reads and verifies that whole file whenever its cache is cold
// (at start, and after Litestream deletes a level-0 file), and after an
// erasure flush the newest file is a snapshot of the whole database, so
// every metrics scrape or /readyz could read the database's size in bytes
// and allocate half as much again (docs/PERFORMANCE.md#scale).
func (r *Replicator) Status() (Status, error) {
	if r == nil {
		return Status{}, nil
	}
	s := Status{Replica: r.replica.String(), LastSync: r.db.LastSuccessfulSyncAt()}
	_, local, err := r.db.MaxLTX()
	if err != nil {
		return s, fmt.Errorf("replication position: %w", err)
	}
	// The replica's position is reset to zero when a sync fails, so a
	// failing replica shows as pending until a sync succeeds again.
	if local > r.db.Replica.Pos().TXID {
		s.Pending = true
		since := s.LastSync
		if since.IsZero() {
			since = r.started
		}
		s.Lag = max(r.now().Sub(since), 0)
	}
	return s, nil
}

// Ready is for handlers.Options.Ready (/readyz): an error when the last
// restore drill found the backup not restorable, or when committed
// changes have waited longer than MaxLag to reach the replica, so a load
// balancer or monitor notices that new signups are not being backed up. The
// message names no bucket or path: /readyz is public.
func (r *Replicator) Ready(context.Context) error {
	if r == nil {
		return nil
	}
	if err := r.drillReady(); err != nil {
		return err
	}
	if err := r.healthReady(); err != nil {
		return err
	}
	s, err := r.Status()
	if err != nil {
		return errors.New("replication state unknown")
	}
	limit := r.MaxLag
	if limit <= 0 {
		limit = DefaultMaxLag
	}
	if s.Pending && s.Lag > limit {
		return fmt.Errorf("replication is %s behind (limit %s)", s.Lag.Round(time.Second), limit)
	}
	return nil
}

// Sync ships every committed change to the replica now and waits for it.
func (r *Replicator) Sync(ctx context.Context) error {
	if r == nil {
		return nil
	}
	return r.litestream(ctx, r.db.SyncAndWait)
}

// litestreamStartTimeout bounds a call into Litestream made before one has
// succeeded, which its caller cannot cancel, only end by its deadline (see
// litestream).
const litestreamStartTimeout = 30 * time.Second

// litestream runs call, a call into Litestream that syncs, with ctx. The
// first sync also opens Litestream's own connection to the database and
// then its file handle; if ctx is cancelled in between, Litestream keeps
// the connection, counts itself started and never opens the handle, and
// every later sync of this process, the final one at Close included, fails
// with "invalid argument" (Litestream v0.5.18, DB.init): nothing more
// reaches the replica until a restart. A stop right after a start cancelled
// the first sync that way. So until one call has succeeded, a call is not
// cancelled with its caller's context: it ends at that context's deadline,
// if it has one, and after litestreamStartTimeout at most. (A deadline is
// far longer than the opening itself, and keeps a stop's bound.)
func (r *Replicator) litestream(ctx context.Context, call func(context.Context) error) error {
	if r.up.Load() {
		return call(ctx)
	}
	deadline := time.Now().Add(litestreamStartTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	ctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	defer cancel()
	err := call(ctx)
	if err == nil {
		r.up.Store(true)
	}
	return err
}

// errWALNotRestarted is Erase's answer when Litestream was busy and the
// checkpoint left the WAL as it was: a later Erase does the work.
var errWALNotRestarted = errors.New("checkpoint did not restart the WAL")

// WALStore is what Erase needs of admit's store (store.DB).
type WALStore interface {
	// WriteWALFrames commits n transactions that each write one page
	// and change nothing anyone reads.
	WriteWALFrames(ctx context.Context, n int) error
	// TrimWAL truncates the WAL after its last committed frame.
	TrimWAL(ctx context.Context) (int64, error)
}

// Erase removes the older versions of erased rows from every local file
// while replicating. Through Litestream, which holds a read transaction open
// while it replicates, it checkpoints the WAL into the database file in
// PASSIVE mode, so that Litestream's next write restarts the WAL; the store's
// TrimWAL then cuts off the frames of the earlier WAL generation the restart
// left in the file. Erase ships every change to the replica and deletes
// Litestream's local copies of changes the replica already holds (the
// level-0 LTX files in the directory next to the database), which hold the
// erased bytes as they were before. It keeps the newest local file, from
// which Litestream reads its position; Litestream's compaction reads from the
// replica any file no longer on local disk, and restores always read the
// replica. The replica's own copies expire with the backup retention
// (Config.BackupRetention).
//
// It does not ask Litestream for a TRUNCATE checkpoint: Litestream follows
// every one with a snapshot of the whole database, taken while it holds the
// write lock, which stalls every write for as long as copying the database
// takes. A restart of a WAL that holds a single frame makes Litestream
// snapshot too (it cannot check, before its position, that the WAL was not
// overwritten), and a WAL holds just one frame after every flush (the
// restart's own write) and so at every start after a clean stop: Erase
// first commits two one-page transactions (the first may itself restart the
// WAL), so that the WAL holds two frames at least.
//
// It fails when the checkpoint did not restart the WAL (Litestream skips it
// while it takes a snapshot, and a reader of an older snapshot keeps it from
// copying every frame), so the caller retries. See docs/erasure.md.
func (r *Replicator) Erase(ctx context.Context, s WALStore) error {
	if r == nil {
		return errors.New("replication is off: checkpoint through the store")
	}
	if err := s.WriteWALFrames(ctx, 2); err != nil {
		return err
	}
	before, err := walHeader(r.db.WALPath())
	if err != nil {
		return err
	}
	if err := r.litestream(ctx, func(ctx context.Context) error {
		return r.db.Checkpoint(ctx, litestream.CheckpointModePassive)
	}); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	after, err := walHeader(r.db.WALPath())
	if err != nil {
		return err
	}
	if before != nil && bytes.Equal(before, after) {
		return errWALNotRestarted
	}
	if _, err := s.TrimWAL(ctx); err != nil {
		return err
	}
	if err := r.litestream(ctx, r.db.SyncAndWait); err != nil {
		return fmt.Errorf("ship changes before pruning local copies: %w", err)
	}
	return r.pruneLocalL0()
}

// pruneLocalL0 deletes the local level-0 LTX files that the replica already
// holds, except the newest.
func (r *Replicator) pruneLocalL0() error {
	shipped := r.db.Replica.Pos().TXID
	_, newest, err := r.db.MaxLTX()
	if err != nil {
		return fmt.Errorf("local changes: %w", err)
	}
	dir := r.db.LTXLevelDir(0)
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("local changes: %w", err)
	}
	var errs []error
	for _, ent := range ents {
		_, maxTXID, err := ltx.ParseFilename(ent.Name())
		if err != nil || maxTXID >= newest || maxTXID > shipped {
			continue
		}
		if err := os.Remove(filepath.Join(dir, ent.Name())); err != nil && !os.IsNotExist(err) {
			errs = append(errs, fmt.Errorf("delete local copy: %w", err))
		}
	}
	return errors.Join(errs...)
}

// walHeader reads the WAL's 32-byte header, which changes when a
// checkpoint restarts the WAL; nil when the WAL is empty or absent.
func walHeader(path string) ([]byte, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read WAL header: %w", err)
	}
	defer f.Close()
	b := make([]byte, 32)
	if _, err := io.ReadFull(f, b); errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("read WAL header: %w", err)
	}
	return b, nil
}

// Close stops replication after a final sync, bounded by ctx. Call it only
// after admit's own connections to the database are closed. Closing twice is
// safe.
func (r *Replicator) Close(ctx context.Context) error {
	if r == nil {
		return nil
	}
	r.closeOnce.Do(func() {
		r.bg.stop()
		if !r.up.Load() {
			// Litestream's monitor makes its own first sync, and Close
			// cancels it: if that sync is still opening Litestream's
			// handles, the final sync fails (see litestream). And with no
			// sync run yet, Litestream's Close makes no final sync at all.
			// One sync of admit's own first, bounded by the stop's ctx.
			_ = r.db.Sync(ctx)
		}
		if err := r.store.Close(ctx); err != nil {
			r.closeErr = fmt.Errorf("stop replication to %s: %w", r.replica, err)
		}
	})
	return r.closeErr
}

// minLevel is a slog.Handler that drops records below a level.
type minLevel struct {
	slog.Handler
	level slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.level && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(a []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(a), h.level}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.level}
}
