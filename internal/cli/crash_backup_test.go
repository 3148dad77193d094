package cli

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"admit/backup"
	"admit/store"

	"github.com/benbjohnson/litestream"

	"github.com/google/uuid"
)

// copyTree copies the regular files under src to dst, keeping the layout.
// Litestream may still rename a temporary file away while the copy runs; a
// file gone before it is read is left out, as a crash would leave no trace
// of it in the files that count.
func copyTree(tb testing.TB, src, dst string) {
	tb.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p != src {
			return nil
		}
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o700)
		}
		in, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		tb.Fatalf("copy %s: %v", src, err)
	}
}

// ltxFiles lists the names of the replica's LTX files at level.
func ltxFiles(tb testing.TB, replica string, level int) map[string]bool {
	tb.Helper()
	ents, err := os.ReadDir(filepath.Join(replica, "ltx", fmt.Sprint(level)))
	if err != nil && !os.IsNotExist(err) {
		tb.Fatal(err)
	}
	names := map[string]bool{}
	for _, e := range ents {
		names[e.Name()] = true
	}
	return names
}

// onlyIncrements leaves in the replica its level-0 files and the snapshots
// named in keep, and removes every other LTX file.
func onlyIncrements(tb testing.TB, replica string, keep map[string]bool) {
	tb.Helper()
	for level := 1; level <= litestream.SnapshotLevel; level++ {
		for name := range ltxFiles(tb, replica, level) {
			if level == litestream.SnapshotLevel && keep[name] {
				continue
			}
			if err := os.Remove(filepath.Join(replica, "ltx", fmt.Sprint(level), name)); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

// crashSite is a data directory, its litestream.yml and its file replica.
type crashSite struct {
	dir, dbPath, replica string
	cfg                  *backup.Config
}

func newCrashSite(tb testing.TB, dir string) *crashSite {
	tb.Helper()
	s := &crashSite{dir: dir, dbPath: filepath.Join(dir, "data", "admit.db"), replica: filepath.Join(dir, "replica")}
	if err := os.MkdirAll(filepath.Dir(s.dbPath), 0o700); err != nil {
		tb.Fatal(err)
	}
	file := filepath.Join(dir, "litestream.yml")
	yml := fmt.Sprintf("dbs:\n  - path: %s\n    replica:\n      type: file\n      path: %s\n", s.dbPath, s.replica)
	if err := os.WriteFile(file, []byte(yml), 0o600); err != nil {
		tb.Fatal(err)
	}
	var err error
	if s.cfg, err = backup.LoadConfig(file, func(string) string { return "" }); err != nil {
		tb.Fatal(err)
	}
	return s
}

// open opens the site's database with the options serve uses.
func (s *crashSite) open(tb testing.TB) *store.DB {
	tb.Helper()
	opt := serveStoreOptions(s.cfg)
	opt.BindingKey = make([]byte, store.BindingKeySize)
	db, err := store.Open(context.Background(), s.dbPath, opt)
	if err != nil {
		tb.Fatal(err)
	}
	return db
}

func (s *crashSite) replicate(tb testing.TB) *backup.Replicator {
	tb.Helper()
	repl, err := backup.Start(context.Background(), s.cfg, s.dbPath, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil || repl == nil {
		tb.Fatalf("start replication: %v", err)
	}
	return repl
}

// insertRows commits n transactions of one row each into crash_rows: a
// random unique key (its index pages change all over) and 400 random bytes.
func insertRows(tb testing.TB, exec func(q string, args ...any) error, n int) {
	tb.Helper()
	for range n {
		v := make([]byte, 400)
		rand.Read(v)
		if err := exec(`INSERT INTO crash_rows (k, v) VALUES (?, ?)`, uuid.NewString(), v); err != nil {
			tb.Fatal(err)
		}
	}
}

func storeExec(db *store.DB) func(string, ...any) error {
	return func(q string, args ...any) error {
		return db.Update(context.Background(), func(tx *store.Tx) error {
			_, err := tx.ExecContext(context.Background(), q, args...)
			return err
		})
	}
}

// A crash leaves committed changes in the WAL that Litestream has not read
// yet. After the restart, admit's first commits must not checkpoint them
// and restart the WAL before Litestream resumes: Litestream would then go
// on from the new WAL's start, the replica would never get those changes,
// and every restore point from there on would be corrupt. The crash is
// made exact by copying the files at chosen moments, as SIGKILL leaves them.
func TestCrash_RestartBeforeReplicationResumesKeepsTheReplicaRestorable(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()

	// Before the crash: replication runs and has read every change.
	live := newCrashSite(t, filepath.Join(root, "live"))
	db := live.open(t)
	if err := storeExec(db)(`CREATE TABLE crash_rows (id INTEGER PRIMARY KEY, k TEXT NOT NULL UNIQUE, v BLOB NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	const synced = 150 // a few hundred WAL frames: below Litestream's checkpoint threshold
	insertRows(t, storeExec(db), synced)
	repl := live.replicate(t)
	if err := repl.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	// The crash image: the database, its WAL and Litestream's local state
	// and replica, copied while nothing writes.
	crashed := newCrashSite(t, filepath.Join(root, "crashed"))
	for _, f := range []string{"admit.db", "admit.db-wal", ".admit.db-litestream"} {
		copyTree(t, filepath.Join(live.dir, "data", f), filepath.Join(crashed.dir, "data", f))
	}
	copyTree(t, live.replica, crashed.replica)
	// Litestream may not have written its first snapshot yet: its first
	// level-0 file then holds the whole database.
	snapshotsBefore := ltxFiles(t, crashed.replica, litestream.SnapshotLevel)
	db.Close()
	repl.Close(ctx)

	// Changes committed after Litestream's last read, before the kill: the
	// process held Litestream's read lock, so they are still in the WAL,
	// which now holds more frames than SQLite's automatic checkpoint allows.
	dying, err := sql.Open("sqlite", "file:"+crashed.dbPath+"?_pragma=busy_timeout(5000)&_pragma=wal_autocheckpoint(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer dying.Close() // after the checks: a dead process's open file, no transaction
	dying.SetMaxOpenConns(1)
	const unsynced = 600
	insertRows(t, func(q string, args ...any) error { _, err := dying.Exec(q, args...); return err }, unsynced)

	// The restart, in serve's order: the store opens and serves its first
	// commits, then replication starts and syncs.
	db = crashed.open(t)
	const early = 5
	insertRows(t, storeExec(db), early)
	repl = crashed.replicate(t)
	if err := repl.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	const later = 20
	insertRows(t, storeExec(db), later)
	if err := repl.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := repl.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// Restore through every increment written since the crash: from the
	// snapshot taken before it, through each level-0 file. (A snapshot
	// Litestream takes after the restart, and files compacted from the
	// level-0 ones, are set aside: the former would hide a bad increment
	// from this restore, the latter would not.)
	onlyIncrements(t, crashed.replica, snapshotsBefore)
	out := filepath.Join(root, "restored.db")
	res, err := backup.Restore(ctx, crashed.cfg, crashed.dbPath, backup.RestoreOptions{Output: out})
	if err != nil {
		t.Fatalf("restore of the latest state after the crash: %v", err)
	}
	if want := int64(synced + unsynced + early + later); res.Tables["crash_rows"] != want {
		t.Fatalf("restored crash_rows=%d, want %d", res.Tables["crash_rows"], want)
	}
}
