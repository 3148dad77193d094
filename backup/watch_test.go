package backup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/superfly/ltx"
)

// TestReplicaCheck_ADeletedReplicaIsNotReadyUntilAFreshSnapshotRestoresEverySignup
// deletes the replica directory under a running replicator. Litestream,
// which keeps its position in memory, recreates the directory with
// increments that chain to nothing, so no restore works: the check must
// turn Ready into an error, keep it an error until the fresh snapshot is
// written (the repair is held here to look at that state), and a restore
// afterwards must hold every signup.
func TestReplicaCheck_ADeletedReplicaIsNotReadyUntilAFreshSnapshotRestoresEverySignup(t *testing.T) {
	ctx := context.Background()
	e := MustTestEnv(t)
	e.Config.ReplicaCheckInterval = 50 * time.Millisecond
	gate := make(chan struct{})
	e.Config.repairGate = gate
	db := e.MustOpenStore(t)
	r, log := e.MustStartLogged(t)
	e.mustSignup(t, db, 5)
	mustSync(t, r)
	waitFor(t, 10*time.Second, "a check of the sound replica", func() bool { return r.checks.Load() >= 2 })
	if err := r.Ready(ctx); err != nil {
		t.Fatalf("Ready with a sound replica: %v", err)
	}

	if err := os.RemoveAll(e.ReplicaDir); err != nil {
		t.Fatal(err)
	}
	e.mustSignup(t, db, 3)
	mustSync(t, r)
	if _, err := os.Stat(filepath.Join(e.ReplicaDir, "ltx", "0")); err != nil {
		t.Fatalf("Litestream did not recreate the replica: %v", err)
	}
	waitFor(t, time.Minute, "Ready to report the lost replica", func() bool {
		err := r.Ready(ctx)
		return err != nil && strings.HasPrefix(err.Error(), "backup replica lost since ")
	})
	if h := r.ReplicaHealth(); h.LostSince.IsZero() || !strings.Contains(h.Problem, "restores no transaction") {
		t.Errorf("ReplicaHealth=%+v, want lost with the problem named", h)
	}
	if !strings.Contains(log.String(), "the backup replica no longer holds a restorable backup") {
		t.Errorf("the log does not say the replica was lost:\n%s", log)
	}
	// This is what made it urgent: meanwhile no restore works.
	if _, err := Restore(ctx, e.Config, e.DBPath, RestoreOptions{Output: filepath.Join(t.TempDir(), "lost.db")}); err == nil {
		t.Fatal("a restore of the lost replica succeeded")
	}
	// Ready stays an error while the snapshot has not been written, even
	// with the signups replicated since.
	e.mustSignup(t, db, 1)
	mustSync(t, r)
	if err := r.Ready(ctx); err == nil {
		t.Fatal("Ready while the fresh snapshot is held back")
	}

	close(gate)
	waitFor(t, time.Minute, "Ready after the repair", func() bool { return r.Ready(ctx) == nil })
	if !strings.Contains(log.String(), "backup replica repaired") {
		t.Errorf("the log does not say the replica was repaired:\n%s", log)
	}
	if _, err := os.Stat(filepath.Join(e.ReplicaDir, ownerFileName)); err != nil {
		t.Errorf("the repair did not write the owner file again: %v", err)
	}
	// A restore right after Ready holds every signup acknowledged so far.
	res := e.mustRestore(t, filepath.Join(t.TempDir(), "healed.db"), time.Time{})
	if got, want := res.Tables["entries"], int64(9); got != want {
		t.Errorf("restore right after the repair holds %d entries, want %d", got, want)
	}

	e.mustSignup(t, db, 2)
	mustSync(t, r)
	want := mustCounts(t, e.DBPath)
	mustStop(t, db, r)
	res = e.mustRestore(t, filepath.Join(t.TempDir(), "final.db"), time.Time{})
	if !reflect.DeepEqual(res.Tables, want) {
		t.Errorf("restore after the stop differs from the live database: %v", want.Diff(res.Tables))
	}
	if got := res.Tables["entries"]; got != 11 {
		t.Errorf("restored entries=%d, want 11", got)
	}
}

// mustRemoveTXID deletes every file of the replica that holds transaction
// txid, at every level: the replica then lacks it, as after a lost file.
func mustRemoveTXID(tb testing.TB, replicaDir string, txid ltx.TXID) {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join(replicaDir, "ltx", "*", "*.ltx"))
	if err != nil {
		tb.Fatal(err)
	}
	removed := 0
	for _, p := range paths {
		lo, hi, err := ltx.ParseFilename(filepath.Base(p))
		if err != nil || txid < lo || txid > hi {
			continue
		}
		if err := os.Remove(p); err != nil {
			tb.Fatal(err)
		}
		removed++
	}
	if removed == 0 {
		tb.Fatalf("no replica file holds transaction %s", txid)
	}
}

// level0 lists the replica's level-0 files, ascending.
func level0(tb testing.TB, replicaDir string) []string {
	tb.Helper()
	ents, err := os.ReadDir(filepath.Join(replicaDir, "ltx", "0"))
	if err != nil {
		tb.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if _, _, err := ltx.ParseFilename(e.Name()); err == nil {
			names = append(names, e.Name())
		}
	}
	return names
}

func TestRestore_AMissingFileIsNamedWithWhereTheRestoreStoppedAndHowFarBehind(t *testing.T) {
	e := MustTestEnv(t)
	e.Config.ReplicaCheckInterval = time.Hour // no repair during the test
	db := e.MustOpenStore(t)
	r := e.MustStart(t)
	// One transaction per signup, each shipped on its own.
	for range 12 {
		e.mustSignup(t, db, 1)
		mustSync(t, r)
	}
	mustStop(t, db, r)
	names := level0(t, e.ReplicaDir)
	if len(names) < 12 {
		t.Fatalf("the replica holds %d level-0 files, want at least 12", len(names))
	}
	lost, _, err := ltx.ParseFilename(names[len(names)-6])
	if err != nil {
		t.Fatal(err)
	}
	_, newest, _ := ltx.ParseFilename(names[len(names)-1])
	mustRemoveTXID(t, e.ReplicaDir, lost)

	res := e.mustRestore(t, filepath.Join(t.TempDir(), "r.db"), time.Time{})
	if got, want := res.TXID, lost-1; got != want {
		t.Errorf("restored transaction %s, want %s, the last before the missing one", got, want)
	}
	g := res.Gap
	if g == nil {
		t.Fatal("the restore reports no gap")
	}
	if g.From != lost || g.To != lost || g.NewestTXID != newest {
		t.Errorf("gap %s–%s, newest %s; want %s–%s, newest %s", g.From, g.To, g.NewestTXID, lost, lost, newest)
	}
	if got, want := g.MissingFiles(), "ltx/0/"+ltx.FormatFilename(lost, lost); got != want {
		t.Errorf("missing files %q, want %q", got, want)
	}
	if g.NewestAt.Before(res.At) {
		t.Errorf("the newest transaction's time %s is before the restored one's %s", g.NewestAt, res.At)
	}
	if got := res.Tables["entries"]; got >= 12 {
		t.Errorf("restored entries=%d: the signups after the gap cannot be in it", got)
	}

	// Verify fails on the gap.
	v, err := Verify(context.Background(), e.Config, e.DBPath, VerifyOptions{Attempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	if v.OK() || v.Gap == nil || v.Gap.From != lost {
		t.Errorf("Verify: OK=%v gap=%+v, want the gap at %s", v.OK(), v.Gap, lost)
	}
}

func TestReplicaCheck_AMissingFileInARunningReplicaIsRepairedBySnapshot(t *testing.T) {
	ctx := context.Background()
	e := MustTestEnv(t)
	e.Config.ReplicaCheckInterval = time.Hour // checks run when the test calls
	db := e.MustOpenStore(t)
	r, log := e.MustStartLogged(t)
	for range 6 {
		e.mustSignup(t, db, 1)
		mustSync(t, r)
	}
	r.CheckReplica(ctx)
	if err := r.Ready(ctx); err != nil {
		t.Fatalf("Ready with a sound replica: %v", err)
	}
	names := level0(t, e.ReplicaDir)
	lost, _, _ := ltx.ParseFilename(names[len(names)-3])
	mustRemoveTXID(t, e.ReplicaDir, lost)
	r.CheckReplica(ctx)
	if !strings.Contains(log.String(), "the backup replica no longer holds a restorable backup") ||
		!strings.Contains(log.String(), "restores none after "+(lost-1).String()) {
		t.Errorf("the log does not name the problem:\n%s", log)
	}
	if err := r.Ready(ctx); err != nil {
		t.Errorf("Ready after the repair: %v", err)
	}
	want := mustCounts(t, e.DBPath)
	mustStop(t, db, r)
	res := e.mustRestore(t, filepath.Join(t.TempDir(), "r.db"), time.Time{})
	if res.Gap != nil || !reflect.DeepEqual(res.Tables, want) {
		t.Errorf("restore after the repair: gap %+v, differences %v", res.Gap, want.Diff(res.Tables))
	}
}

func TestStart_AReplicaOfAnotherDatabaseIsRefusedAndItsOwnerStillReplicates(t *testing.T) {
	ctx := context.Background()
	prod := MustTestEnv(t)
	db := prod.MustOpenStore(t)
	r := prod.MustStart(t)
	prod.mustSignup(t, db, 3)
	mustSync(t, r)
	prodID, err := DatabaseIdentity(ctx, prod.DBPath)
	if err != nil || len(prodID) != 32 {
		t.Fatalf("production's identity %q, %v", prodID, err)
	}

	// Staging names the same replica.
	staging := MustTestEnv(t)
	staging.Config = mustLoadConfig(t, "dbs:\n  - path: "+staging.DBPath+"\n    replica:\n      type: file\n      path: "+prod.ReplicaDir+"\n", nil)
	sdb := staging.MustOpenStore(t)
	_, err = Start(ctx, staging.Config, staging.DBPath, quietLogger())
	var owner *OwnerError
	if !errors.As(err, &owner) {
		t.Fatalf("Start of a second database on the replica: %v, want an *OwnerError", err)
	}
	stagingID, _ := DatabaseIdentity(ctx, staging.DBPath)
	for _, want := range []string{"file://" + prod.ReplicaDir, "database " + prodID, prod.DBPath, "database " + stagingID, staging.DBPath, "docs/DEPLOY.md"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not name %q: %v", want, err)
		}
	}
	staging.mustSignup(t, sdb, 5)

	prod.mustSignup(t, db, 1)
	mustSync(t, r)
	want := mustCounts(t, prod.DBPath)
	mustStop(t, db, r)
	res := prod.mustRestore(t, filepath.Join(t.TempDir(), "r.db"), time.Time{})
	if !reflect.DeepEqual(res.Tables, want) {
		t.Errorf("production's restore differs from production: %v", want.Diff(res.Tables))
	}

	// The restored database is the replica's owner: on a new machine it
	// replicates on into the same replica.
	moved := MustTestEnv(t)
	moved.Config = mustLoadConfig(t, "dbs:\n  - path: "+moved.DBPath+"\n    replica:\n      type: file\n      path: "+prod.ReplicaDir+"\n", nil)
	if err := os.MkdirAll(filepath.Dir(moved.DBPath), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(res.Path, moved.DBPath); err != nil {
		t.Fatal(err)
	}
	if id, _ := DatabaseIdentity(ctx, moved.DBPath); id != prodID {
		t.Fatalf("the restored database's identity %q, want %q", id, prodID)
	}
	mdb := moved.MustOpenStore(t)
	mr := moved.MustStart(t)
	moved.seq = 100 // new people
	moved.mustSignup(t, mdb, 2)
	mustSync(t, mr)
	want = mustCounts(t, moved.DBPath)
	mustStop(t, mdb, mr)
	res = moved.mustRestore(t, filepath.Join(t.TempDir(), "r2.db"), time.Time{})
	if !reflect.DeepEqual(res.Tables, want) || res.Tables["entries"] != 6 {
		t.Errorf("restore after the move: %d entries, differences %v", res.Tables["entries"], want.Diff(res.Tables))
	}
}

// A replica emptied while the server was stopped, after an erasure pruned
// Litestream's local files: Litestream, finding no position in the
// replica, tries to ship the database's first transaction, whose local file
// is gone, and fails for good. The check notices and the repair's snapshot
// gives Litestream a place to resume from.
func TestReplicaCheck_AReplicaEmptiedWhileStoppedIsRepairedAfterTheStart(t *testing.T) {
	ctx := context.Background()
	e := MustTestEnv(t)
	e.Config.ReplicaCheckInterval = 50 * time.Millisecond
	db := e.MustOpenStore(t)
	r := e.MustStart(t)
	for range 5 {
		e.mustSignup(t, db, 1)
		mustSync(t, r)
	}
	mustErase(t, ctx, r, db)
	mustStop(t, db, r)
	if _, err := os.Stat(filepath.Join(filepath.Dir(e.DBPath), ".admit.db-litestream", "ltx", "0", ltx.FormatFilename(1, 1))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the erasure left Litestream's first local file: %v", err)
	}
	if err := os.RemoveAll(e.ReplicaDir); err != nil {
		t.Fatal(err)
	}

	db = e.MustOpenStore(t)
	r, log := e.MustStartLogged(t)
	e.mustSignup(t, db, 2)
	waitFor(t, time.Minute, "the repair", func() bool { return strings.Contains(log.String(), "backup replica repaired") })
	if !strings.Contains(log.String(), "Litestream ships nothing") {
		t.Errorf("the log does not say what was wrong:\n%s", log)
	}
	e.mustSignup(t, db, 1)
	mustSync(t, r)
	if err := r.Ready(ctx); err != nil {
		t.Errorf("Ready after the repair: %v", err)
	}
	want := mustCounts(t, e.DBPath)
	mustStop(t, db, r)
	res := e.mustRestore(t, filepath.Join(t.TempDir(), "r.db"), time.Time{})
	if !reflect.DeepEqual(res.Tables, want) || res.Tables["entries"] != 8 {
		t.Errorf("restore after the repair: %d entries, differences %v", res.Tables["entries"], want.Diff(res.Tables))
	}
}
