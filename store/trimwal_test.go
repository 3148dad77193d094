package store

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
)

// mustExecAll runs statements in one write transaction of db.
func mustExecAll(tb testing.TB, db *DB, stmts ...string) {
	tb.Helper()
	ctx := context.Background()
	err := db.Update(ctx, func(tx *Tx) error {
		for _, s := range stmts {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// TestTrimWAL_CutsTheOlderFramesARestartLeftAndKeepsEveryCommit fills the WAL
// with a marked value and random pages, replaces the value, checkpoints from
// another connection (as Litestream does) and restarts the WAL with a small
// commit: the file keeps its size and the old value in frames SQLite no
// longer reads. TrimWAL must cut exactly those frames, and the database must
// keep every committed row, through later writes and a reopen.
func TestTrimWAL_CutsTheOlderFramesARestartLeftAndKeepsEveryCommit(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "admit.db")
	db := mustOpenWith(t, path, Options{BindingKey: signupTestKey, NoAutoCheckpoint: true})
	marker := "trim-me-" + uuid.NewString()
	mustExecAll(t, db, `CREATE TABLE bulk (id INTEGER PRIMARY KEY, v BLOB)`,
		`INSERT INTO bulk (id, v) VALUES (0, '`+marker+`')`,
		`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 64)
		 INSERT INTO bulk (id, v) SELECT i, randomblob(16384) FROM n`)
	mustExecAll(t, db, `UPDATE bulk SET v = 'replaced' WHERE id = 0`)
	walHolds := func() bool {
		b, err := os.ReadFile(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Contains(b, []byte(marker))
	}

	// Nothing to cut while the WAL is one generation.
	if n, err := db.TrimWAL(ctx); err != nil || n != 0 {
		t.Fatalf("TrimWAL before any restart: removed %d, err %v; want 0, nil", n, err)
	}
	other, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var busy, logFrames, done int
	if err := other.QueryRow(`PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &logFrames, &done); err != nil || busy != 0 || done != logFrames {
		t.Fatalf("checkpoint: busy=%d log=%d checkpointed=%d err=%v", busy, logFrames, done, err)
	}
	mustExecAll(t, db, `INSERT INTO bulk (id, v) VALUES (1000, 'after the restart')`)
	sizeBefore := mustFileSize(t, path+"-wal")
	if !walHolds() {
		t.Fatal("the restarted WAL no longer holds the old value: the check cannot see it")
	}

	removed, err := db.TrimWAL(ctx)
	if err != nil {
		t.Fatalf("TrimWAL: %v", err)
	}
	var pageSize int64
	if err := db.writer.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	size := mustFileSize(t, path+"-wal")
	if removed != sizeBefore-size || (size-walHeaderSize)%(walFrameHeaderSize+pageSize) != 0 || size > walHeaderSize+8*(walFrameHeaderSize+pageSize) {
		t.Fatalf("WAL %d bytes before, %d after, %d reported removed: want a whole number of the restart's few frames left", sizeBefore, size, removed)
	}
	if walHolds() {
		t.Fatal("the WAL still holds the old value after the trim")
	}

	// Every commit is still there, later writes append after it, and a
	// reopen recovers the same rows from the trimmed WAL.
	mustExecAll(t, db, `INSERT INTO bulk (id, v) VALUES (1001, 'after the trim')`)
	count := func(db *DB) (n int) {
		if err := db.reader.QueryRow(`SELECT count(*) FROM bulk`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got, want := count(db), 67; got != want {
		t.Fatalf("rows after the trim=%d, want %d", got, want)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	reopened := mustOpenWith(t, path, Options{BindingKey: signupTestKey})
	if got, want := count(reopened), 67; got != want {
		t.Fatalf("rows after reopening=%d, want %d", got, want)
	}
	var check string
	if err := reopened.reader.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check=%q, %v", check, err)
	}
}

// TestReadWALIndexHeader_RefusesAnIndexItCannotTrust checks that a header
// whose two copies differ, or of another version, is refused rather than
// used to cut the WAL.
func TestReadWALIndexHeader_RefusesAnIndexItCannotTrust(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admit.db")
	db := mustOpenWith(t, path, Options{BindingKey: signupTestKey})
	mustExecAll(t, db, `CREATE TABLE t (v)`, `INSERT INTO t VALUES (1)`)
	good, err := os.ReadFile(path + "-shm")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := readWALIndexHeader(path + "-shm"); err != nil {
		t.Fatalf("the live index: %v", err)
	}
	for name, damage := range map[string]func(b []byte){
		"copies differ": func(b []byte) { b[48+16]++ },
		"other version": func(b []byte) { b[0]++; b[48]++ },
		"not init":      func(b []byte) { b[12], b[48+12] = 0, 0 },
	} {
		b := bytes.Clone(good[:96])
		damage(b)
		p := filepath.Join(t.TempDir(), "shm")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := readWALIndexHeader(p); err == nil {
			t.Errorf("%s: the header was trusted", name)
		}
	}
}

// mustFileSize returns the size of the file at path.
func mustFileSize(tb testing.TB, path string) int64 {
	tb.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return fi.Size()
}

// FillWAL writes frames only until the WAL holds as many as asked.
func TestFillWAL_WritesFramesUntilTheWALHoldsEnough(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "admit.db")
	db := mustOpenWith(t, path, Options{BindingKey: signupTestKey, NoAutoCheckpoint: true})
	other, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	frames := func() uint32 {
		mx, _, err := readWALIndexHeader(path + "-shm")
		if err != nil {
			t.Fatal(err)
		}
		return mx
	}
	if got := frames(); got != 0 {
		t.Fatalf("frames after a TRUNCATE checkpoint=%d, want 0", got)
	}
	if err := db.FillWAL(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if got := frames(); got != 2 {
		t.Fatalf("frames after FillWAL(2)=%d, want 2", got)
	}
	if err := db.FillWAL(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if got := frames(); got != 2 {
		t.Fatalf("frames after a second FillWAL(2)=%d, want still 2", got)
	}
}
