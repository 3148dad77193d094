package store

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"admit/internal/testutil"
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
	sqliteOnly(t, "the WAL file")
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
	other := mustOtherConnection(t, path)
	var busy, logFrames, done int
	if err := other.QueryRow(`PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &logFrames, &done); err != nil || busy != 0 || done != logFrames {
		t.Fatalf("checkpoint: busy=%d log=%d checkpointed=%d err=%v", busy, logFrames, done, err)
	}
	mustExecAll(t, db, `INSERT INTO bulk (id, v) VALUES (1000, 'after the restart')`)
	sizeBefore := testutil.FileSize(t, path+"-wal")
	if !walHolds() {
		t.Fatal("the restarted WAL no longer holds the old value: the check cannot see it")
	}

	// Cut in steps of 64 KiB, one write transaction each.
	defer func(step int64) { trimStep = step }(trimStep)
	trimStep = 64 << 10
	var txs int
	db.txHeld = func(work, held time.Duration) { txs++ }
	removed, err := db.TrimWAL(ctx)
	db.txHeld = nil
	if err != nil {
		t.Fatalf("TrimWAL: %v", err)
	}
	if want := int(removed/trimStep) + 1; txs < want {
		t.Errorf("%d bytes cut in %d write transactions, want at least %d of at most %d bytes", removed, txs, want, trimStep)
	}
	var pageSize int64
	if err := db.writer.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	size := testutil.FileSize(t, path+"-wal")
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

// mustOtherConnection opens a second connection to the database at path,
// outside the store, as Litestream holds one, and closes it at cleanup.
func mustOtherConnection(tb testing.TB, path string) *sql.DB {
	tb.Helper()
	other, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		tb.Fatal(err)
	}
	other.SetMaxOpenConns(1)
	tb.Cleanup(func() { other.Close() })
	return other
}

// walFrames asks SQLite how many frames the WAL of the database at path
// holds: a PASSIVE checkpoint reports the log's frame count, and copies
// nothing while reader holds a snapshot from before them.
func walFrames(tb testing.TB, other *sql.DB) int64 {
	tb.Helper()
	var busy, logFrames, done int64
	if err := other.QueryRow(`PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &logFrames, &done); err != nil {
		tb.Fatal(err)
	}
	return logFrames
}

// The end TrimWAL cuts at is where SQLite itself says the WAL's committed
// frames end, through commits of one page and of many, and after a restart
// that left an older generation behind.
func TestWALCommittedEnd_AgreesWithSQLitesOwnFrameCount(t *testing.T) {
	sqliteOnly(t, "the WAL file")
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "admit.db")
	db := mustOpenWith(t, path, Options{BindingKey: signupTestKey, NoAutoCheckpoint: true})
	other := mustOtherConnection(t, path)
	var pageSize int64
	if err := db.writer.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		end, err := walCommittedEnd(path+"-wal", nil)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		frames := walFrames(t, other)
		if want := walHeaderSize + frames*(walFrameHeaderSize+pageSize); end.offset != want {
			t.Fatalf("%s: committed end %d, want %d (%d frames)", when, end.offset, want, frames)
		}
	}
	mustExecAll(t, db, `CREATE TABLE bulk (id INTEGER PRIMARY KEY, v BLOB)`)
	check("one small commit")
	mustExecAll(t, db, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 40)
		 INSERT INTO bulk (id, v) SELECT i, randomblob(9000) FROM n`)
	check("a commit of many pages")
	if err := db.WriteWALFrames(ctx, 2); err != nil {
		t.Fatal(err)
	}
	check("two one-page commits")
	// walFrames' checkpoint copied every frame: the next commit restarts
	// the WAL over a longer older generation.
	mustExecAll(t, db, `UPDATE bulk SET v = 'x' WHERE id = 1`)
	if testutil.FileSize(t, path+"-wal") <= walHeaderSize+4*(walFrameHeaderSize+pageSize) {
		t.Fatal("the WAL did not keep an older generation past the restart")
	}
	check("after a restart")
	// Resuming from an earlier point of the same generation agrees too.
	from, err := walCommittedEnd(path+"-wal", nil)
	if err != nil {
		t.Fatal(err)
	}
	mustExecAll(t, db, `UPDATE bulk SET v = 'y' WHERE id = 2`)
	resumed, err := walCommittedEnd(path+"-wal", from)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := walCommittedEnd(path+"-wal", nil)
	if err != nil {
		t.Fatal(err)
	}
	if resumed.offset != whole.offset || resumed.sum != whole.sum || resumed.offset <= from.offset {
		t.Fatalf("resumed end %+v, whole-file end %+v, from %d", resumed.offset, whole.offset, from.offset)
	}
}

// WriteWALFrames leaves at least n frames after the last restart, even when
// its first write restarts the WAL.
func TestWriteWALFrames_LeavesTheWALHoldingThatMany(t *testing.T) {
	sqliteOnly(t, "the WAL file")
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "admit.db")
	db := mustOpenWith(t, path, Options{BindingKey: signupTestKey, NoAutoCheckpoint: true})
	other := mustOtherConnection(t, path)
	mustExecAll(t, db, `CREATE TABLE t (v)`, `INSERT INTO t VALUES (1)`)
	walFrames(t, other) // every frame copied: the next write restarts the WAL
	if err := db.WriteWALFrames(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if got := walFrames(t, other); got < 2 {
		t.Fatalf("frames after WriteWALFrames(2)=%d, want at least 2", got)
	}
}

// otherProcessEnv names the database a re-run of this test binary opens, as
// another process (an admit command, a backup tool) would.
const otherProcessEnv = "ADMIT_STORE_TEST_OTHER_PROCESS_DB"

// TestTrimWAL_KeepsTheProcesssLocksForOtherProcesses trims the WAL and then
// lets another process open the database. SQLite holds POSIX locks on the
// shared-memory file for the whole process; were the trim to open and close
// that file itself, the locks would be gone, the other process would take
// itself for the first, reset the index, and this process's next write would
// fail on the index's memory.
func TestTrimWAL_KeepsTheProcesssLocksForOtherProcesses(t *testing.T) {
	sqliteOnly(t, "the WAL file")
	if path := os.Getenv(otherProcessEnv); path != "" {
		// SQLite's unix VFS holds a shared lock on byte 128 of the
		// shared-memory file (after its eight lock bytes from offset 120)
		// while a connection has it open: another process asking for a
		// write lock there must find it held.
		f, err := os.Open(path + "-shm")
		if err != nil {
			t.Fatal(err)
		}
		lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: io.SeekStart, Start: 128, Len: 1}
		if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if lk.Type != syscall.F_RDLCK {
			t.Fatalf("no process holds the shared-memory file's lock (type %d): the test process dropped its locks", lk.Type)
		}
		other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := other.QueryRow(`SELECT count(*) FROM bulk`).Scan(&n); err != nil || n != 3 {
			t.Fatalf("the other process read %d rows (%v), want 3", n, err)
		}
		other.Close()
		return
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "admit.db")
	db := mustOpenWith(t, path, Options{BindingKey: signupTestKey, NoAutoCheckpoint: true})
	mustExecAll(t, db, `CREATE TABLE bulk (id INTEGER PRIMARY KEY, v BLOB)`, `INSERT INTO bulk (v) VALUES (randomblob(20000))`, `INSERT INTO bulk (v) VALUES (2)`)
	if err := db.WriteWALFrames(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := db.TrimWAL(ctx); err != nil {
		t.Fatal(err)
	}
	mustExecAll(t, db, `INSERT INTO bulk (v) VALUES (3)`)
	cmd := exec.Command(os.Args[0], "-test.run=^TestTrimWAL_KeepsTheProcesssLocksForOtherProcesses$", "-test.count=1")
	cmd.Env = append(os.Environ(), otherProcessEnv+"="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the other process: %v\n%s", err, out)
	}
	for i := range 20 {
		if err := db.Update(ctx, func(tx *Tx) error {
			_, err := tx.ExecContext(ctx, `UPDATE bulk SET v = ? WHERE id = 2`, i)
			return err
		}); err != nil {
			t.Fatalf("write %d after the other process opened the database: %v", i, err)
		}
		var n int
		if err := db.reader.QueryRow(`SELECT count(*) FROM bulk`).Scan(&n); err != nil || n != 3 {
			t.Fatalf("read %d after the other process opened the database: %d rows, %v", i, n, err)
		}
	}
}
