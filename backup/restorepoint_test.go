package backup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"admit/internal/replicatest"

	"github.com/superfly/ltx"
)

// mustPos returns the live database's replicated transaction.
func mustPos(tb testing.TB, r *Replicator) ltx.TXID {
	tb.Helper()
	pos, err := r.db.Pos()
	if err != nil {
		tb.Fatal(err)
	}
	return pos.TXID
}

func TestRestore_DamagedNewestLTXRestoresTheNewestIntactState(t *testing.T) {
	e := MustTestEnv(t)
	db := e.MustOpenStore(t)
	r := e.MustStart(t)
	e.mustSignup(t, db, 4)
	mustSync(t, r)
	intact := mustPos(t, r)
	wantCounts := mustCounts(t, e.DBPath)
	e.mustSignup(t, db, 1)
	mustSync(t, r)
	newest := mustPos(t, r)
	mustStop(t, db, r)
	if newest <= intact {
		t.Fatalf("the last signup made no transaction: %s after %s", newest, intact)
	}

	ctx := context.Background()
	dir := t.TempDir()
	// Undamaged, the newest state is restored and nothing is skipped.
	res := e.mustRestore(t, filepath.Join(dir, "before.db"), time.Time{})
	if res.TXID != newest || res.Skipped != nil {
		t.Fatalf("undamaged restore: txid=%s skipped=%+v, want %s and nothing skipped", res.TXID, res.Skipped, newest)
	}
	if got, want := res.Tables["entries"], wantCounts["entries"]+1; got != want {
		t.Fatalf("undamaged restore has %d entries, want %d", got, want)
	}

	damaged := replicatest.DamageLatest(t, e.ReplicaDir, replicatest.LocalDir(e.DBPath))
	minTXID, maxTXID, err := ltx.ParseFilename(filepath.Base(damaged))
	if err != nil || maxTXID != newest {
		t.Fatalf("damaged %s, want the file ending at %s", damaged, newest)
	}

	res = e.mustRestore(t, filepath.Join(dir, "after.db"), time.Time{})
	if got, want := res.TXID, minTXID-1; got != want {
		t.Errorf("restored transaction %s, want %s (just before the damaged file)", got, want)
	}
	if res.Skipped == nil {
		t.Fatal("the restore reports nothing skipped")
	}
	if got, want := res.Skipped.Transactions, uint64(newest-res.TXID); got != want || res.Skipped.NewestTXID != newest {
		t.Errorf("skipped %d up to %s, want %d up to %s", got, res.Skipped.NewestTXID, want, newest)
	}
	if !strings.Contains(res.Skipped.Reason, "fails its check") || strings.Contains(res.Skipped.Reason, dir) {
		t.Errorf("skip reason %q: want the check's findings without a temporary path", res.Skipped.Reason)
	}
	if res.Skipped.NewestAt.IsZero() || res.At.IsZero() || res.At.After(res.Skipped.NewestAt) {
		t.Errorf("times: restored %v, newest %v", res.At, res.Skipped.NewestAt)
	}
	if err := IntegrityCheck(ctx, res.Path); err != nil {
		t.Fatal(err)
	}
	if res.TXID == intact {
		if diffs := wantCounts.Diff(res.Tables); len(diffs) > 0 {
			t.Errorf("restored counts differ from the state at %s: %v", intact, diffs)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.try*")); len(left) > 0 {
		t.Errorf("temporary restores left behind: %v", left)
	}

	// A requested point is restored exactly or refused.
	_, err = Restore(ctx, e.Config, e.DBPath, RestoreOptions{Output: filepath.Join(dir, "txid.db"), TXID: newest})
	if err == nil || !strings.Contains(err.Error(), "failed its check") {
		t.Errorf("restore of the damaged transaction: err=%v, want failed its check", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "txid.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused restore left its file: %v", err)
	}
	_, err = Restore(ctx, e.Config, e.DBPath, RestoreOptions{Output: filepath.Join(dir, "latest.db"), NoFallback: true})
	if err == nil || !strings.Contains(err.Error(), "failed its check") {
		t.Errorf("restore of the newest state without fallback: err=%v, want failed its check", err)
	}
	got, err := Restore(ctx, e.Config, e.DBPath, RestoreOptions{Output: filepath.Join(dir, "intact.db"), TXID: res.TXID})
	if err != nil {
		t.Fatalf("restore of transaction %s: %v", res.TXID, err)
	}
	if got.TXID != res.TXID || got.Skipped != nil || len(got.Tables.Diff(res.Tables)) > 0 {
		t.Errorf("restore -txid %s: %s %v, want the same state as the fallback", res.TXID, got.TXID, got.Tables.Diff(res.Tables))
	}
	_, err = Restore(ctx, e.Config, e.DBPath, RestoreOptions{Output: filepath.Join(dir, "future.db"), TXID: newest + 100})
	if err == nil || !strings.Contains(err.Error(), "cannot restore transaction") {
		t.Errorf("restore of a transaction the replica lacks: err=%v", err)
	}
}

func TestRestore_EveryDamagedPointIsAnError(t *testing.T) {
	e := MustTestEnv(t)
	db := e.MustOpenStore(t)
	r := e.MustStart(t)
	e.mustSignup(t, db, 2)
	mustSync(t, r)
	mustStop(t, db, r)
	replicatest.DamageFiles(t, e.ReplicaDir)
	out := filepath.Join(t.TempDir(), "x.db")
	_, err := Restore(context.Background(), e.Config, e.DBPath, RestoreOptions{Output: out})
	if err == nil || !strings.Contains(err.Error(), "no restore point passes its check") {
		t.Fatalf("err=%v, want no restore point passes", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed restore left its file: %v", err)
	}
}

// A level-0 file in the middle of the chain whose bytes were overwritten
// no longer decodes (the lz4 data is garbage): every point from it on is
// damaged. A restore without a point steps back past it to the newest
// point before it, which passes integrity_check, and names the file it
// could not read; a restore drill (Verify) does the same and reports the
// backup as failing.
func TestRestore_AnL0FileThatDoesNotDecodeIsSteppedOver(t *testing.T) {
	e := MustTestEnv(t)
	db := e.MustOpenStore(t)
	r := e.MustStart(t)
	for range 6 {
		e.mustSignup(t, db, 1)
		mustSync(t, r) // one level-0 file each
	}
	newest := mustPos(t, r)
	mustStop(t, db, r) // no compaction may read around the damage
	// A file in the middle of the level-0 files that the newest point's
	// restore reads after the newest snapshot or compaction.
	l0 := replicatest.L0Chain(t, e.ReplicaDir)
	if len(l0) < 3 {
		t.Fatalf("%d level-0 files after the newest snapshot, want at least 3", len(l0))
	}
	damaged := l0[len(l0)/2]
	minTXID, _, err := ltx.ParseFilename(filepath.Base(damaged))
	if err != nil {
		t.Fatal(err)
	}
	if _, last, _ := ltx.ParseFilename(filepath.Base(l0[len(l0)-1])); last != newest {
		t.Fatalf("the level-0 files end at %s, the database at %s", last, newest)
	}
	// The live state at the point just before the damaged file.
	intact := filepath.Join(t.TempDir(), "intact.db")
	ctx := context.Background()
	if _, err := Restore(ctx, e.Config, e.DBPath, RestoreOptions{Output: intact, TXID: minTXID - 1}); err != nil {
		t.Fatalf("restore of transaction %s before the damage: %v", minTXID-1, err)
	}
	wantCounts := mustCounts(t, intact)
	replicatest.CorruptMiddle(t, damaged)

	dir := t.TempDir()
	// The damage is a decoding error, not a failed check: a requested
	// point past it is refused with the file named.
	_, err = Restore(ctx, e.Config, e.DBPath, RestoreOptions{Output: filepath.Join(dir, "newest.db"), TXID: newest})
	if err == nil || !strings.Contains(err.Error(), "does not decode") || !strings.Contains(err.Error(), filepath.Base(damaged)) {
		t.Fatalf("restore -txid %s past the damaged file: err=%v, want it does not decode, naming %s", newest, err, filepath.Base(damaged))
	}

	res := e.mustRestore(t, filepath.Join(dir, "fallback.db"), time.Time{})
	if got, want := res.TXID, minTXID-1; got != want {
		t.Errorf("restored transaction %s, want %s (just before the damaged file)", got, want)
	}
	if res.Skipped == nil || res.Skipped.NewestTXID != newest || res.Skipped.Transactions != uint64(newest-res.TXID) {
		t.Fatalf("skipped %+v, want the %d transactions up to %s", res.Skipped, newest-res.TXID, newest)
	}
	for _, want := range []string{"does not decode", "level 0 file " + filepath.Base(damaged)} {
		if !strings.Contains(res.Skipped.Reason, want) {
			t.Errorf("skip reason %q lacks %q", res.Skipped.Reason, want)
		}
	}
	if err := IntegrityCheck(ctx, res.Path); err != nil {
		t.Fatal(err)
	}
	if diffs := wantCounts.Diff(res.Tables); len(diffs) > 0 {
		t.Errorf("the fallback differs from transaction %s: %v", minTXID-1, diffs)
	}

	// The drill restores the same point and says the newest is damaged.
	v, err := Verify(ctx, e.Config, e.DBPath, VerifyOptions{Attempts: 1})
	if err != nil {
		t.Fatalf("Verify: %v, want a result naming the damage", err)
	}
	if v.OK() || v.Skipped == nil || v.TXID != minTXID-1 || !strings.Contains(v.Skipped.Reason, filepath.Base(damaged)) {
		t.Fatalf("Verify: ok=%v txid=%s skipped=%+v, want failing at %s with %s named", v.OK(), v.TXID, v.Skipped, minTXID-1, filepath.Base(damaged))
	}
}
