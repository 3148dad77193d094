package backup

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"admit/internal/testutil"
	"admit/store"

	"github.com/google/uuid"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// testEnv is where one test's database and file replica live.
type testEnv struct {
	DBPath     string
	ReplicaDir string
	Config     *Config
	seq        int
}

// MustTestEnv prepares paths under a temp directory and a litestream.yml
// naming a file replica for the database.
func MustTestEnv(tb testing.TB) *testEnv {
	tb.Helper()
	dir := tb.TempDir()
	e := &testEnv{DBPath: filepath.Join(dir, "data", "admit.db"), ReplicaDir: filepath.Join(dir, "replica")}
	e.Config = mustLoadConfig(tb, fmt.Sprintf("dbs:\n  - path: %s\n    replica:\n      type: file\n      path: %s\n", e.DBPath, e.ReplicaDir), nil)
	return e
}

// MustOpenStore opens admit's store at e.DBPath, seeding the demo program on
// first open, and closes it at cleanup unless the test closed it.
func (e *testEnv) MustOpenStore(tb testing.TB) *store.DB {
	tb.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, e.DBPath, store.Options{BindingKey: make([]byte, store.BindingKeySize)})
	if err != nil {
		tb.Fatalf("store.Open: %v", err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	if _, err := db.SeedDemo(ctx, "user_owner"); err != nil {
		tb.Fatalf("SeedDemo: %v", err)
	}
	return db
}

// MustStart starts replication of e.DBPath and stops it at cleanup unless
// the test stopped it.
func (e *testEnv) MustStart(tb testing.TB) *Replicator {
	tb.Helper()
	r, err := Start(context.Background(), e.Config, e.DBPath, quietLogger())
	if err != nil {
		tb.Fatalf("Start: %v", err)
	}
	if r == nil {
		tb.Fatal("Start returned no replicator for a configured replica")
	}
	tb.Cleanup(func() { _ = r.Close(context.Background()) })
	return r
}

// quietLogger discards log output.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// mustSignup adds n new entries (each with its audit event) to the demo program.
func (e *testEnv) mustSignup(tb testing.TB, db *store.DB, n int) {
	tb.Helper()
	ctx := context.Background()
	_, notice, err := db.PublicProgram(ctx, store.DemoSlug)
	if err != nil {
		tb.Fatalf("PublicProgram: %v", err)
	}
	for range n {
		e.seq++
		_, err := db.Signup(ctx, store.SignupRequest{Slug: store.DemoSlug, RequestKey: uuid.NewString(),
			Email: fmt.Sprintf("person%d@example.test", e.seq), NoticeVersion: notice.Version, Permission: true})
		if err != nil {
			tb.Fatalf("Signup: %v", err)
		}
	}
}

// mustSync ships every committed change to the replica.
func mustSync(tb testing.TB, r *Replicator) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Sync(ctx); err != nil {
		tb.Fatalf("Sync: %v", err)
	}
}

// mustStop closes the store first, then replication: Litestream's lifecycle rule.
func mustStop(tb testing.TB, db *store.DB, r *Replicator) {
	tb.Helper()
	if err := db.Close(); err != nil {
		tb.Fatalf("close store: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Close(ctx); err != nil {
		tb.Fatalf("Close: %v", err)
	}
}

// mustDeleteDB removes the database, its WAL and Litestream's local state,
// as if the disk were lost.
func mustDeleteDB(tb testing.TB, path string) {
	tb.Helper()
	for _, p := range []string{path, path + "-wal", path + "-shm", filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+"-litestream")} {
		if err := os.RemoveAll(p); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		tb.Fatalf("database still there: %v", err)
	}
}

// mustRestore restores e's database to out.
func (e *testEnv) mustRestore(tb testing.TB, out string, at time.Time) *RestoreResult {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := Restore(ctx, e.Config, e.DBPath, RestoreOptions{Output: out, Timestamp: at})
	if err != nil {
		tb.Fatalf("Restore: %v", err)
	}
	return res
}

// mustStopAndRestoreEntries stops the store and replication, restores the
// replica's latest state to a new file and returns the entries the live
// database held at the stop and the entries the restore holds.
func (e *testEnv) mustStopAndRestoreEntries(tb testing.TB, db *store.DB, r *Replicator) (live, restored int64) {
	tb.Helper()
	live = mustCounts(tb, e.DBPath)["entries"]
	mustStop(tb, db, r)
	return live, e.mustRestore(tb, filepath.Join(tb.TempDir(), "r.db"), time.Time{}).Tables["entries"]
}

// mustCounts returns the per-table row counts of the database at path.
func mustCounts(tb testing.TB, path string) TableCounts {
	tb.Helper()
	c, err := TableRowCounts(context.Background(), path)
	if err != nil {
		tb.Fatalf("TableRowCounts: %v", err)
	}
	return c
}

// mustAuditEvents returns every audit event of the database at path, one
// string per row with every column, in id order.
func mustAuditEvents(tb testing.TB, path string) []string {
	tb.Helper()
	db, err := openReadOnly(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT * FROM audit_events ORDER BY id`)
	if err != nil {
		tb.Fatalf("read audit_events: %v", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for rows.Next() {
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			tb.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = string(v)
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

func TestReplicate_DeleteDatabase_RestoreHasIdenticalRowCountsAndAuditEvents(t *testing.T) {
	e := MustTestEnv(t)
	db := e.MustOpenStore(t)
	e.mustSignup(t, db, 3) // written before replication starts
	r := e.MustStart(t)
	e.mustSignup(t, db, 4) // and while it runs
	if _, err := db.AddOwner(context.Background(), store.Actor{Kind: store.ActorCLI}, "Second workspace", "user_two"); err != nil {
		t.Fatal(err)
	}
	mustSync(t, r)
	wantCounts := mustCounts(t, e.DBPath)
	wantAudit := mustAuditEvents(t, e.DBPath)
	if got := wantCounts["entries"]; got != 7 {
		t.Fatalf("entries before the loss=%d, want 7", got)
	}
	if len(wantAudit) < 7 {
		t.Fatalf("audit events before the loss=%d, want at least 7", len(wantAudit))
	}
	mustStop(t, db, r)

	mustDeleteDB(t, e.DBPath)
	res := e.mustRestore(t, e.DBPath, time.Time{})

	if got := mustCounts(t, e.DBPath); !reflect.DeepEqual(got, wantCounts) {
		t.Errorf("restored counts differ: %v", wantCounts.Diff(got))
	}
	if !reflect.DeepEqual(res.Tables, wantCounts) {
		t.Errorf("RestoreResult.Tables differ: %v", wantCounts.Diff(res.Tables))
	}
	if got := mustAuditEvents(t, e.DBPath); !reflect.DeepEqual(got, wantAudit) {
		t.Errorf("restored audit events differ:\n got %q\nwant %q", got, wantAudit)
	}
	if err := IntegrityCheck(context.Background(), e.DBPath); err != nil {
		t.Error(err)
	}
	// The restored file is admit's database again.
	db2, err := store.Open(context.Background(), e.DBPath, store.Options{BindingKey: make([]byte, store.BindingKeySize)})
	if err != nil {
		t.Fatalf("store.Open of the restored database: %v", err)
	}
	db2.Close()
}

func TestRestore_PointInTimeExcludesRowsWrittenAfterIt(t *testing.T) {
	e := MustTestEnv(t)
	db := e.MustOpenStore(t)
	r := e.MustStart(t)
	e.mustSignup(t, db, 2)
	mustSync(t, r)
	// Litestream stamps each change when it ships it, to the millisecond.
	time.Sleep(20 * time.Millisecond)
	t1 := time.Now()
	time.Sleep(20 * time.Millisecond)
	e.mustSignup(t, db, 3)
	mustSync(t, r)
	mustStop(t, db, r)

	dir := t.TempDir()
	atT1 := e.mustRestore(t, filepath.Join(dir, "t1.db"), t1)
	if got, want := atT1.Tables["entries"], int64(2); got != want {
		t.Errorf("entries restored at T1=%d, want %d (only those written before T1)", got, want)
	}
	latest := e.mustRestore(t, filepath.Join(dir, "latest.db"), time.Time{})
	if got, want := latest.Tables["entries"], int64(5); got != want {
		t.Errorf("entries restored at the latest point=%d, want %d", got, want)
	}

	// Before the first backup there is nothing to restore.
	_, err := Restore(context.Background(), e.Config, e.DBPath,
		RestoreOptions{Output: filepath.Join(dir, "early.db"), Timestamp: t1.Add(-time.Hour)})
	if err == nil || !strings.Contains(err.Error(), "no backup") {
		t.Errorf("restore before the first backup: err=%v, want a no-backup error", err)
	}
}

func TestRestore_ResumeReplicationWriteAndRestoreAgainHasTheNewRows(t *testing.T) {
	e := MustTestEnv(t)
	db := e.MustOpenStore(t)
	r := e.MustStart(t)
	e.mustSignup(t, db, 2)
	mustSync(t, r)
	mustStop(t, db, r)

	mustDeleteDB(t, e.DBPath)
	e.mustRestore(t, e.DBPath, time.Time{})

	// Resume on the restored database, as after a disaster recovery.
	db = e.MustOpenStore(t)
	r = e.MustStart(t)
	e.mustSignup(t, db, 3)
	mustSync(t, r)
	want := mustCounts(t, e.DBPath)
	wantAudit := mustAuditEvents(t, e.DBPath)
	mustStop(t, db, r)

	again := e.mustRestore(t, filepath.Join(t.TempDir(), "again.db"), time.Time{})
	if got, want := again.Tables["entries"], int64(5); got != want {
		t.Errorf("entries after the second restore=%d, want %d (2 before the restore, 3 after)", got, want)
	}
	if !reflect.DeepEqual(again.Tables, want) {
		t.Errorf("second restore differs from the live database: %v", want.Diff(again.Tables))
	}
	if got := mustAuditEvents(t, again.Path); !reflect.DeepEqual(got, wantAudit) {
		t.Errorf("audit events after the second restore differ:\n got %q\nwant %q", got, wantAudit)
	}
}

func TestRestore_RefusesToOverwriteAnExistingFile(t *testing.T) {
	e := MustTestEnv(t)
	db := e.MustOpenStore(t)
	r := e.MustStart(t)
	mustSync(t, r)
	mustStop(t, db, r)

	out := filepath.Join(t.TempDir(), "existing.db")
	if err := os.WriteFile(out, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Restore(context.Background(), e.Config, e.DBPath, RestoreOptions{Output: out})
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("Restore over an existing file: err=%v, want already exists", err)
	}
	if b, _ := os.ReadFile(out); string(b) != "keep me" {
		t.Errorf("existing file was changed to %q", b)
	}
}

func TestRestore_WithoutAReplicaSaysSo(t *testing.T) {
	cfg := mustLoadConfig(t, "dbs:\n  - path: data/admit.db\n", nil)
	_, err := Restore(context.Background(), cfg, "data/admit.db", RestoreOptions{Output: filepath.Join(t.TempDir(), "x.db")})
	if err == nil || !strings.Contains(err.Error(), "names no replica") {
		t.Fatalf("err=%v, want names no replica", err)
	}
}

func TestVerify_MatchesThenReportsUnreplicatedRows(t *testing.T) {
	e := MustTestEnv(t)
	db := e.MustOpenStore(t)
	r := e.MustStart(t)
	e.mustSignup(t, db, 3)
	mustSync(t, r)

	ctx := context.Background()
	res, err := Verify(ctx, e.Config, e.DBPath, VerifyOptions{Attempts: 1})
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if !res.OK() {
		t.Fatalf("Verify of an up-to-date replica differs: %v", res.Differences)
	}
	if got, want := res.Restored["entries"], int64(3); got != want {
		t.Errorf("restored entries=%d, want %d", got, want)
	}
	mustStop(t, db, r)

	// Rows written while replication is off never reach the replica.
	db = e.MustOpenStore(t)
	e.mustSignup(t, db, 1)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	res, err = Verify(ctx, e.Config, e.DBPath, VerifyOptions{Attempts: 2, Wait: 10 * time.Millisecond})
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if res.OK() {
		t.Fatal("Verify found no difference after an unreplicated signup")
	}
	if got := strings.Join(res.Differences, "; "); !strings.Contains(got, "entries: 4 ≠ 3") {
		t.Errorf("differences %q do not report entries 4 ≠ 3", got)
	}
}

func TestReplicator_StatusAndReadyFollowTheReplica(t *testing.T) {
	e := MustTestEnv(t)
	db := e.MustOpenStore(t)
	r := e.MustStart(t)
	r.MaxLag = 300 * time.Millisecond
	mustSync(t, r)

	ctx := context.Background()
	s, err := r.Status()
	if err != nil {
		t.Fatal(err)
	}
	if s.Pending || s.LastSync.IsZero() {
		t.Errorf("after a sync: Pending=%v LastSync=%v, want in sync with a last sync time", s.Pending, s.LastSync)
	}
	if got, want := s.Replica, "file://"+e.ReplicaDir; got != want {
		t.Errorf("Replica=%q, want %q", got, want)
	}
	if err := r.Ready(ctx); err != nil {
		t.Errorf("Ready in sync: %v", err)
	}

	// Break the replica: its directory becomes a file.
	moved := e.ReplicaDir + ".moved"
	if err := os.Rename(e.ReplicaDir, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.ReplicaDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e.mustSignup(t, db, 1)
	waitFor(t, 10*time.Second, "Ready to fail while the replica is broken", func() bool { return r.Ready(ctx) != nil })
	err = r.Ready(ctx)
	if !strings.Contains(err.Error(), "behind") || strings.Contains(err.Error(), e.ReplicaDir) {
		t.Errorf("Ready error %q: want a lag message that names no path", err)
	}
	if s, _ := r.Status(); !s.Pending || s.Lag <= r.MaxLag {
		t.Errorf("Status while broken: %+v, want pending with lag over %s", s, r.MaxLag)
	}

	// Repair it: the change is shipped and the server is ready again.
	if err := os.Remove(e.ReplicaDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(moved, e.ReplicaDir); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "Ready to recover", func() bool { return r.Ready(ctx) == nil })
	mustSync(t, r)
	mustStop(t, db, r)
	if got, want := e.mustRestore(t, filepath.Join(t.TempDir(), "r.db"), time.Time{}).Tables["entries"], int64(1); got != want {
		t.Errorf("entries in the replica after recovery=%d, want %d", got, want)
	}
}

func TestReplicator_NilMeansReplicationOff(t *testing.T) {
	cfg := mustLoadConfig(t, "dbs:\n  - path: data/admit.db\n", nil)
	r, err := Start(context.Background(), cfg, "data/admit.db", quietLogger())
	if err != nil || r != nil {
		t.Fatalf("Start without a replica=%v, %v; want nil, nil", r, err)
	}
	if err := r.Ready(context.Background()); err != nil {
		t.Errorf("nil Ready: %v", err)
	}
	if s, err := r.Status(); err != nil || s != (Status{}) {
		t.Errorf("nil Status=%+v, %v", s, err)
	}
	if err := r.Close(context.Background()); err != nil {
		t.Errorf("nil Close: %v", err)
	}
}

func TestStart_UnreachableReplicaFailsTheStart(t *testing.T) {
	e := MustTestEnv(t)
	e.MustOpenStore(t)
	// The replica "directory" is a file: it cannot be listed or written.
	if err := os.WriteFile(e.ReplicaDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := Start(context.Background(), e.Config, e.DBPath, quietLogger())
	if err == nil {
		r.Close(context.Background())
		t.Fatal("Start succeeded with an unusable replica")
	}
	if !strings.Contains(err.Error(), "not reachable") {
		t.Errorf("err=%v, want not reachable", err)
	}
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// MustFakeS3 serves an in-memory S3-compatible API on 127.0.0.1 with one
// bucket, closed at cleanup.
func MustFakeS3(tb testing.TB, bucket string) string {
	tb.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(bucket); err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	tb.Cleanup(srv.Close)
	return srv.URL
}

func TestReplicate_S3CompatibleReplicaRoundTrips(t *testing.T) {
	// The AWS SDK reads the process environment too; a CA bundle set for
	// this machine's proxies would stop Litestream's client (see initClient).
	t.Setenv("AWS_CA_BUNDLE", "")
	endpoint := MustFakeS3(t, "admit-backups")
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "admit.db")
	cfg := mustLoadConfig(t, `
dbs:
  - path: `+dbPath+`
    replica:
      type: s3
      bucket: admit-backups
      path: prod/admit
      endpoint: $S3_ENDPOINT
      region: us-east-1
      force-path-style: true
`, map[string]string{"S3_ENDPOINT": endpoint})
	e := &testEnv{DBPath: dbPath, Config: cfg}
	db := e.MustOpenStore(t)
	cfg.Credentials = Credentials{AccessKeyID: "test-key", SecretAccessKey: "test-secret"}
	r, err := Start(context.Background(), cfg, dbPath, quietLogger())
	if err != nil {
		t.Fatalf("Start with an S3 replica: %v", err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	e.mustSignup(t, db, 4)
	mustSync(t, r)
	want := mustCounts(t, dbPath)
	wantAudit := mustAuditEvents(t, dbPath)
	mustStop(t, db, r)

	res, err := Restore(context.Background(), cfg, dbPath, RestoreOptions{Output: filepath.Join(dir, "restored.db")})
	if err != nil {
		t.Fatalf("Restore from S3: %v", err)
	}
	if !reflect.DeepEqual(res.Tables, want) {
		t.Errorf("restored counts differ: %v", want.Diff(res.Tables))
	}
	if got := mustAuditEvents(t, res.Path); !reflect.DeepEqual(got, wantAudit) {
		t.Errorf("restored audit events differ")
	}
	if got, want := res.Replica, "s3://admit-backups/prod/admit at "+endpoint; got != want {
		t.Errorf("Replica=%q, want %q", got, want)
	}
}

// TestReplicator_EraseRestartsTheWALWithoutASnapshotAndLeavesNoOlderFrame
// builds a database of random (incompressible) data far larger than one
// change, replaces a marked value, and flushes it as the eraser does. The
// flush must leave the old value in neither the WAL nor the database file,
// must not copy the whole database into a new Litestream file (a snapshot,
// which Litestream takes under the write lock), and replication must go on.
func TestReplicator_EraseRestartsTheWALWithoutASnapshotAndLeavesNoOlderFrame(t *testing.T) {
	e := MustTestEnv(t)
	db := e.MustOpenStore(t)
	r := e.MustStart(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const bulk = 6 << 20
	marker := []byte("erase-me-" + uuid.NewString())
	mustBulkTable(t, db, bulk, marker)
	mustSync(t, r)
	// A change the size of one row, then the marker replaced: the old
	// value is now only in older page versions.
	e.mustSignup(t, db, 2)
	if err := db.Update(ctx, func(tx *store.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE bulk SET v = 'replaced' WHERE id = 0`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	mustSync(t, r)
	holds := func(path string) bool {
		b, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		return bytes.Contains(b, marker)
	}
	if !holds(e.DBPath + "-wal") {
		t.Fatal("the WAL does not hold the old value before the flush: the check cannot see it")
	}
	walBefore := testutil.FileSize(t, e.DBPath+"-wal")
	l0 := r.db.LTXLevelDir(0)

	// Litestream's new files hold this flush's changes, not the database.
	start := time.Now()
	counted := &trimCounter{DB: db}
	mustNoSnapshot(t, l0, bulk, func() { mustErase(t, ctx, r, counted) })
	trimmed := counted.trimmed
	t.Logf("flush took %s; WAL %d bytes before, %d trimmed, %d after", time.Since(start).Round(time.Millisecond), walBefore, trimmed, testutil.FileSize(t, e.DBPath+"-wal"))
	for _, p := range []string{e.DBPath + "-wal", e.DBPath} {
		if holds(p) {
			t.Errorf("%s still holds the replaced value after the flush", filepath.Base(p))
		}
	}
	if trimmed == 0 {
		t.Error("nothing was trimmed: the restarted WAL's older frames were left for the trim to find")
	}
	// A second flush at once finds the WAL holding only the restart's own
	// frame: still no snapshot.
	mustNoSnapshot(t, l0, bulk, func() { mustErase(t, ctx, r, db) })

	e.mustSignup(t, db, 2)
	mustSync(t, r)
	if want, got := e.mustStopAndRestoreEntries(t, db, r); got != want || want != 4 {
		t.Errorf("entries in the replica after the flush=%d, want %d (4)", got, want)
	}
	var off *Replicator
	if err := off.Erase(ctx, db); err == nil {
		t.Error("Erase with replication off did nothing silently")
	}
}

// mustErase flushes as the eraser does, which tries again when Litestream
// was busy and the checkpoint did not restart the WAL: after Litestream's
// sync in progress has finished (Sync waits for it), Erase is called again,
// until it succeeds or ctx ends. Any other error fails the test.
func mustErase(tb testing.TB, ctx context.Context, r *Replicator, s WALStore) {
	tb.Helper()
	for attempt := 1; ; attempt++ {
		err := r.Erase(ctx, s)
		if err == nil {
			if attempt > 1 {
				tb.Logf("Erase succeeded at attempt %d (Litestream was busy)", attempt)
			}
			return
		}
		if !errors.Is(err, errWALNotRestarted) || ctx.Err() != nil {
			tb.Fatalf("Erase, attempt %d: %v", attempt, err)
		}
		if err := r.Sync(ctx); err != nil {
			tb.Fatalf("Sync before trying Erase again: %v", err)
		}
	}
}

// trimCounter is a store that records how many bytes its TrimWAL removed.
type trimCounter struct {
	*store.DB
	trimmed int64
}

func (c *trimCounter) TrimWAL(ctx context.Context) (int64, error) {
	n, err := c.DB.TrimWAL(ctx)
	c.trimmed += n
	return n, err
}

// mustBulkTable creates the table bulk holding size bytes of random, so
// incompressible, data in rows of 64 KiB, and the row 0 holding value: a
// database far larger than one change, whose snapshot cannot hide.
func mustBulkTable(tb testing.TB, db *store.DB, size int, value []byte) {
	tb.Helper()
	ctx := context.Background()
	err := db.Update(ctx, func(tx *store.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE bulk (id INTEGER PRIMARY KEY, v BLOB)`); err != nil {
			return err
		}
		for i := range size / (64 << 10) {
			if _, err := tx.ExecContext(ctx, `INSERT INTO bulk (id, v) VALUES (?, randomblob(65536))`, i+1); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO bulk (id, v) VALUES (0, ?)`, value)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// mustNoSnapshot runs fn and fails if it left new files in the LTX
// directory dir adding up to a quarter of a database of size bytes or more:
// a snapshot.
func mustNoSnapshot(tb testing.TB, dir string, size int64, fn func()) {
	tb.Helper()
	before := mustLTXSizes(tb, dir)
	fn()
	var written int64
	for name, n := range mustLTXSizes(tb, dir) {
		if _, ok := before[name]; !ok {
			written += n
		}
	}
	if written >= size/4 {
		tb.Errorf("%d bytes of new LTX files for a %d-byte database: Litestream took a snapshot", written, size)
	}
}

// mustLTXSizes returns the size of every file in dir by name.
func mustLTXSizes(tb testing.TB, dir string) map[string]int64 {
	tb.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	m := make(map[string]int64, len(ents))
	for _, ent := range ents {
		fi, err := ent.Info()
		if err != nil {
			tb.Fatal(err)
		}
		m[ent.Name()] = fi.Size()
	}
	return m
}

// TestReplicator_ACleanRestartResumesWithoutASnapshot stops replication
// cleanly, as the server does, and starts it again with the eraser's flush
// at start: Litestream must go on from its position rather than copy the
// whole database into a new snapshot.
func TestReplicator_ACleanRestartResumesWithoutASnapshot(t *testing.T) {
	e := MustTestEnv(t)
	db := e.MustOpenStore(t)
	r := e.MustStart(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const bulk = 6 << 20
	mustBulkTable(t, db, bulk, []byte("kept"))
	e.mustSignup(t, db, 2)
	mustSync(t, r)
	l0 := r.db.LTXLevelDir(0)
	mustStop(t, db, r)
	if testutil.FileSize(t, e.DBPath+"-wal") == 0 {
		t.Fatal("the WAL is gone after a clean stop")
	}
	// The restart, the eraser's flush at start, and new changes.
	mustNoSnapshot(t, l0, bulk, func() {
		db = e.MustOpenStore(t)
		r = e.MustStart(t)
		mustErase(t, ctx, r, db)
		e.mustSignup(t, db, 2)
		mustSync(t, r)
	})
	if want, got := e.mustStopAndRestoreEntries(t, db, r); got != want || want != 4 {
		t.Errorf("entries in the replica after the restart=%d, want %d (4)", got, want)
	}
}

// TestReplicator_ACallCancelledWhileLitestreamStartsBreaksNothing: the first
// call into Litestream also opens its connection and file handle, and a
// context cancelled part-way through that (a stop right after a start) left
// the connection without the file handle, so that every later sync, the
// final one at Close included, failed with "invalid argument". Every later
// sync must still ship the changes.
func TestReplicator_ACallCancelledWhileLitestreamStartsBreaksNothing(t *testing.T) {
	e := MustTestEnv(t)
	db := e.MustOpenStore(t)
	e.mustSignup(t, db, 3)
	r := e.MustStart(t)
	_ = r.Sync(&cancelledAfterFirstCheck{})
	mustSync(t, r)
	e.mustSignup(t, db, 2)
	if live, got := e.mustStopAndRestoreEntries(t, db, r); got != 5 || live != 5 {
		t.Fatalf("the restored database has %d entries, want 5 (live %d)", got, live)
	}
}

// TestReplicator_ACallBeforeLitestreamStartedKeepsItsDeadline: such a call
// is not cancelled with its caller, but its caller's deadline still ends
// it, so that a stop stays within its bound.
func TestReplicator_ACallBeforeLitestreamStartedKeepsItsDeadline(t *testing.T) {
	e := MustTestEnv(t)
	db := e.MustOpenStore(t)
	e.mustSignup(t, db, 1)
	r := e.MustStart(t)
	past, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if err := r.Sync(past); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a sync past its deadline: %v, want the deadline exceeded", err)
	}
	mustSync(t, r)
}

// TestReplicator_AStopRightAfterAStartShipsTheChanges: Litestream's own
// first sync waits for its monitor's first tick, a second after the start,
// and its Close makes a final sync only once one has run. A stop before
// that must still ship every change.
func TestReplicator_AStopRightAfterAStartShipsTheChanges(t *testing.T) {
	e := MustTestEnv(t)
	db := e.MustOpenStore(t)
	e.mustSignup(t, db, 4)
	r := e.MustStart(t)
	if live, got := e.mustStopAndRestoreEntries(t, db, r); got != 4 || live != 4 {
		t.Fatalf("the restored database has %d entries, want 4 (live %d)", got, live)
	}
}

// cancelledAfterFirstCheck is a context that is already done, but whose
// first Err reports it live: a cancellation that lands just after the
// caller's own check, in the middle of what it then starts.
type cancelledAfterFirstCheck struct{ checks atomic.Int32 }

var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (c *cancelledAfterFirstCheck) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *cancelledAfterFirstCheck) Done() <-chan struct{}       { return closedDone }
func (c *cancelledAfterFirstCheck) Value(any) any               { return nil }
func (c *cancelledAfterFirstCheck) Err() error {
	if c.checks.Add(1) == 1 {
		return nil
	}
	return context.Canceled
}
