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
	_, err = Restore(ctx, e.Config, e.DBPath, fakeEnv(nil), RestoreOptions{Output: filepath.Join(dir, "txid.db"), TXID: newest})
	if err == nil || !strings.Contains(err.Error(), "failed its check") {
		t.Errorf("restore of the damaged transaction: err=%v, want failed its check", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "txid.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused restore left its file: %v", err)
	}
	_, err = Restore(ctx, e.Config, e.DBPath, fakeEnv(nil), RestoreOptions{Output: filepath.Join(dir, "latest.db"), NoFallback: true})
	if err == nil || !strings.Contains(err.Error(), "failed its check") {
		t.Errorf("restore of the newest state without fallback: err=%v, want failed its check", err)
	}
	got, err := Restore(ctx, e.Config, e.DBPath, fakeEnv(nil), RestoreOptions{Output: filepath.Join(dir, "intact.db"), TXID: res.TXID})
	if err != nil {
		t.Fatalf("restore of transaction %s: %v", res.TXID, err)
	}
	if got.TXID != res.TXID || got.Skipped != nil || len(got.Tables.Diff(res.Tables)) > 0 {
		t.Errorf("restore -txid %s: %s %v, want the same state as the fallback", res.TXID, got.TXID, got.Tables.Diff(res.Tables))
	}
	_, err = Restore(ctx, e.Config, e.DBPath, fakeEnv(nil), RestoreOptions{Output: filepath.Join(dir, "future.db"), TXID: newest + 100})
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
	_, err := Restore(context.Background(), e.Config, e.DBPath, fakeEnv(nil), RestoreOptions{Output: out})
	if err == nil || !strings.Contains(err.Error(), "no restore point passes its check") {
		t.Fatalf("err=%v, want no restore point passes", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed restore left its file: %v", err)
	}
}
