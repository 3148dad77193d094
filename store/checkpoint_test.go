package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fillWAL commits n transactions of 500 rows of about 2 KB each (some 250
// pages each), enough with n ≥ 5 to take the WAL past SQLite's automatic
// checkpoint threshold (1000 pages).
func fillWAL(t *testing.T, db *DB, n int) {
	t.Helper()
	ctx := context.Background()
	if err := db.Update(ctx, func(tx *Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS wal_fill (id INTEGER PRIMARY KEY, v TEXT NOT NULL)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := db.Update(ctx, func(tx *Tx) error {
			for range 500 {
				if _, err := tx.ExecContext(ctx, `INSERT INTO wal_fill (v) VALUES (?)`, strings.Repeat("x", 2000)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// With NoAutoCheckpoint, admit's commits never copy the WAL into the
// database file: only an explicit checkpoint (Litestream's, while it
// replicates) does. Without it, SQLite checkpoints on its own.
func TestOpen_NoAutoCheckpointLeavesTheWALToItsReplicator(t *testing.T) {
	sqliteOnly(t, "checkpoints of the WAL file")
	ctx := context.Background()
	for _, tc := range []struct {
		opt        Options
		checkpoint bool
	}{
		{Options{BindingKey: signupTestKey, NoAutoCheckpoint: true}, false},
		{Options{BindingKey: signupTestKey}, true},
	} {
		path := filepath.Join(t.TempDir(), "admit.db")
		db, err := Open(ctx, path, tc.opt)
		if err != nil {
			t.Fatal(err)
		}
		var pages int
		if err := db.writer.QueryRowContext(ctx, `PRAGMA wal_autocheckpoint`).Scan(&pages); err != nil {
			t.Fatal(err)
		}
		before := fileSize(t, path)
		fillWAL(t, db, 6)
		after := fileSize(t, path)
		db.Close()
		if grew := after > before; grew != tc.checkpoint {
			t.Errorf("%+v (wal_autocheckpoint=%d): database file %d → %d bytes after 6 large commits; checkpointed=%t, want %t",
				tc.opt, pages, before, after, grew, tc.checkpoint)
		}
	}
}
