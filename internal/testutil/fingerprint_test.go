package testutil

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"testing"

	_ "modernc.org/sqlite"
)

// The fingerprint sees what row counts miss: a value changed in place.
func TestFingerprint_SeesEveryChangeToARowNotOnlyCounts(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "fp.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`CREATE TABLE counters (key BLOB PRIMARY KEY, attempts INTEGER) STRICT`,
		`CREATE TABLE states (id TEXT PRIMARY KEY, state TEXT) STRICT`,
		`INSERT INTO counters VALUES (x'01', 1), (x'02', 5)`,
		`INSERT INTO states VALUES ('a', 'waiting'), ('b', 'selected')`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	take := func() Fingerprint {
		fp, err := Take(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		return fp
	}
	base := take()
	if again := take(); len(Changed(base, again)) != 0 {
		t.Fatalf("two fingerprints of the same rows differ: %v", Changed(base, again))
	}
	for _, tc := range []struct {
		name, change, undo, table string
	}{
		{"a counter bumped", `UPDATE counters SET attempts = 2 WHERE key = x'01'`, `UPDATE counters SET attempts = 1 WHERE key = x'01'`, "counters"},
		{"a state changed", `UPDATE states SET state = 'declined' WHERE id = 'a'`, `UPDATE states SET state = 'waiting' WHERE id = 'a'`, "states"},
		{"values swapped between rows", `UPDATE states SET state = CASE id WHEN 'a' THEN 'selected' ELSE 'waiting' END`,
			`UPDATE states SET state = CASE id WHEN 'a' THEN 'waiting' ELSE 'selected' END`, "states"},
	} {
		if _, err := db.ExecContext(ctx, tc.change); err != nil {
			t.Fatal(err)
		}
		if got := Changed(base, take()); !slices.Equal(got, []string{tc.table}) {
			t.Errorf("%s: changed tables %v, want [%s]", tc.name, got, tc.table)
		}
		if _, err := db.ExecContext(ctx, tc.undo); err != nil {
			t.Fatal(err)
		}
	}
	if got := Changed(base, take()); len(got) != 0 {
		t.Fatalf("after undoing every change: %v changed", got)
	}
}

// MustFingerprint reads through the view it is given, as a *store.DB's
// View passes its transaction.
func TestMustFingerprint_ReadsThroughTheView(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "fp.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (v INTEGER); INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	views := 0
	view := func(ctx context.Context, fn func(*sql.Tx) error) error {
		views++
		tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return err
		}
		defer tx.Rollback()
		return fn(tx)
	}
	fp := MustFingerprint(t, view)
	want, err := Take(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if views != 1 || len(Changed(fp, want)) != 0 || fp["t"] == "" {
		t.Fatalf("MustFingerprint=%v after %d views, want %v from one", fp, views, want)
	}
}
