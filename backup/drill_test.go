package backup

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"admit/internal/replicatest"
	"admit/internal/testutil"
	"admit/store"

	"github.com/google/uuid"
	"github.com/superfly/ltx"
)

// MustStartLogged is MustStart with a log the test can read.
func (e *testEnv) MustStartLogged(tb testing.TB) (*Replicator, *testutil.SyncBuffer) {
	tb.Helper()
	log := &testutil.SyncBuffer{}
	r, err := Start(context.Background(), e.Config, e.DBPath, slog.New(slog.NewTextHandler(log, nil)))
	if err != nil || r == nil {
		tb.Fatalf("Start: %v, %v", r, err)
	}
	tb.Cleanup(func() { _ = r.Close(context.Background()) })
	return r, log
}

// mustDrill runs one drill and fails the test if it could not run.
func mustDrill(tb testing.TB, r *Replicator, db *store.DB) *DrillResult {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := r.Drill(ctx, db.PauseWrites)
	if err != nil {
		tb.Fatalf("Drill: %v", err)
	}
	return res
}

// snapshotSince reports whether the replica holds a full snapshot of
// transaction txid or later written at or after t.
func snapshotSince(tb testing.TB, replicaDir string, txid ltx.TXID, t time.Time) bool {
	tb.Helper()
	m, err := filepath.Glob(filepath.Join(replicaDir, "ltx", "9", "*.ltx"))
	if err != nil {
		tb.Fatal(err)
	}
	for _, p := range m {
		_, maxTXID, err := ltx.ParseFilename(filepath.Base(p))
		fi, serr := os.Stat(p)
		if err == nil && serr == nil && maxTXID >= txid && !fi.ModTime().Before(t.Truncate(time.Second)) {
			return true
		}
	}
	return false
}

func TestDrill_DamagedReplicaFailsForcesASnapshotAndTheNextDrillPasses(t *testing.T) {
	e := MustTestEnv(t)
	db := e.MustOpenStore(t)
	r, log := e.MustStartLogged(t)
	e.mustSignup(t, db, 3)

	res := mustDrill(t, r, db)
	if !res.OK() {
		t.Fatalf("drill of a healthy backup failed: %q %v", res.Problem, res.Differences)
	}
	if got, want := res.Restored["entries"], int64(3); got != want || res.Live["entries"] != want {
		t.Errorf("drill entries live=%d restored=%d, want %d", res.Live["entries"], got, want)
	}
	t.Logf("writes held %s", res.WritesHeld)
	st := r.DrillStatus()
	if st.VerifiedAt.IsZero() || !st.FailingSince.IsZero() || r.Ready(context.Background()) != nil {
		t.Fatalf("after a passing drill: %+v, ready=%v", st, r.Ready(context.Background()))
	}

	e.mustSignup(t, db, 1)
	mustSync(t, r)
	replicatest.DamageLatest(t, e.ReplicaDir, replicatest.LocalDir(e.DBPath))
	damaged := time.Now()
	res = mustDrill(t, r, db)
	if res.OK() || !strings.Contains(res.Problem, "fails its check") {
		t.Fatalf("drill of a damaged replica: ok=%v problem=%q", res.OK(), res.Problem)
	}
	if res.Snapshot != "taken" || !snapshotSince(t, e.ReplicaDir, res.TXID, damaged) {
		t.Errorf("snapshot %q: want a fresh full snapshot of transaction %s", res.Snapshot, res.TXID)
	}
	st = r.DrillStatus()
	if st.FailingSince.IsZero() || st.LastFailure.IsZero() || st.VerifiedAt.After(st.FailingSince) {
		t.Errorf("after a failed drill: %+v", st)
	}
	if err := r.Ready(context.Background()); err == nil || !strings.Contains(err.Error(), "backup not restorable since") {
		t.Errorf("Ready after a failed drill: %v", err)
	}
	logged := log.String()
	if !strings.Contains(logged, "level=ERROR") || !strings.Contains(logged, "restore drill failed") {
		t.Errorf("the failed drill was not logged as an error:\n%s", logged)
	}
	if strings.Contains(logged, "@example.test") {
		t.Errorf("the log names an email:\n%s", logged)
	}

	// The fresh snapshot is a good restore point: the next drill passes.
	res = mustDrill(t, r, db)
	if !res.OK() {
		t.Fatalf("drill after the forced snapshot: %q %v", res.Problem, res.Differences)
	}
	if got, want := res.Restored["entries"], int64(4); got != want {
		t.Errorf("restored entries=%d, want %d", got, want)
	}
	st = r.DrillStatus()
	if !st.FailingSince.IsZero() || st.LastFailure.IsZero() || !st.VerifiedAt.After(st.LastFailure) && !st.VerifiedAt.Equal(st.LastFailure) {
		t.Errorf("after the repair: %+v", st)
	}
	if err := r.Ready(context.Background()); err != nil {
		t.Errorf("Ready after the repair: %v", err)
	}
}

// The drill's counts are exact while signups stream in: writes are held
// while the replica syncs and the live rows are counted.
func TestDrill_PassesWhileSignupsCommitConcurrently(t *testing.T) {
	e := MustTestEnv(t)
	db := e.MustOpenStore(t)
	r := e.MustStart(t)
	ctx, cancel := context.WithCancel(context.Background())
	_, notice, err := db.PublicProgram(ctx, store.DemoSlug)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var signed, failed atomic.Int64
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				_, err := db.Signup(context.Background(), store.SignupRequest{Slug: store.DemoSlug, RequestKey: uuid.NewString(),
					Email: fmt.Sprintf("w%d-%d@example.test", w, i), NoticeVersion: notice.Version, Permission: true})
				if store.ErrorCode(err) == store.ERATELIMITED {
					return // the demo program's hourly cap is full
				}
				if err != nil {
					failed.Add(1)
					return
				}
				signed.Add(1)
			}
		}()
	}
	var maxHeld time.Duration
	for i := range 5 {
		res := mustDrill(t, r, db)
		if !res.OK() {
			t.Errorf("drill %d under load: %q %v", i, res.Problem, res.Differences)
		}
		maxHeld = max(maxHeld, res.WritesHeld)
	}
	cancel()
	wg.Wait()
	if failed.Load() != 0 {
		t.Fatalf("%d signups failed", failed.Load())
	}
	if signed.Load() == 0 {
		t.Fatal("no signup committed during the drills")
	}
	t.Logf("%d signups during 5 drills; writes held at most %s", signed.Load(), maxHeld)
}
