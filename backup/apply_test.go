package backup

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/litestream"
	"github.com/benbjohnson/litestream/file"
	"github.com/superfly/ltx"
)

// mustExec runs statements on db.
func mustExec(tb testing.TB, db *sql.DB, stmts ...string) {
	tb.Helper()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			tb.Fatalf("%s: %v", s, err)
		}
	}
}

// mustInsertBlobs adds n rows of size random bytes each to table t.
func mustInsertBlobs(tb testing.TB, db *sql.DB, n, size int) {
	tb.Helper()
	for range n {
		b := make([]byte, size)
		rand.Read(b)
		if _, err := db.Exec(`INSERT INTO t (v) VALUES (?)`, b); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestRestoreTo_WritesWhatLitestreamsRestoreWritesAtEveryPoint replicates a
// database that grows past the write buffer, changes pages in place,
// shrinks (VACUUM) and grows again, then restores every restore point both
// ways: admit's restore must write the very bytes Litestream's writes.
func TestRestoreTo_WritesWhatLitestreamsRestoreWritesAtEveryPoint(t *testing.T) {
	e := MustTestEnv(t)
	if err := os.MkdirAll(filepath.Dir(e.DBPath), 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+e.DBPath+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	mustExec(t, db, `CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB)`, `CREATE INDEX t_v ON t (v)`)
	r := e.MustStart(t)
	mustSync(t, r)
	// 3 MiB of rows: the snapshot spans several write buffers.
	mustInsertBlobs(t, db, 700, 4000)
	mustSync(t, r)
	mustExec(t, db, `UPDATE t SET v = randomblob(4000) WHERE id % 7 = 0`)
	mustSync(t, r)
	mustExec(t, db, `DELETE FROM t WHERE id > 100`, `VACUUM`)
	mustSync(t, r)
	mustInsertBlobs(t, db, 50, 3000)
	mustSync(t, r)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	client := file.NewReplicaClient(e.ReplicaDir)
	points, err := restorePoints(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	if len(points) < 5 {
		t.Fatalf("%d restore points, want one per sync", len(points))
	}
	dir := t.TempDir()
	var sizes []int64
	for _, p := range points {
		ours, theirs := filepath.Join(dir, "admit-"+p.TXID.String()+".db"), filepath.Join(dir, "litestream-"+p.TXID.String()+".db")
		if err := restoreTo(ctx, client, p.TXID, ours); err != nil {
			t.Fatalf("restore %s: %v", p.TXID, err)
		}
		lr := litestream.NewReplica(nil)
		lr.Client = client
		opt := litestream.NewRestoreOptions()
		opt.OutputPath, opt.TXID = theirs, p.TXID
		if err := lr.Restore(ctx, opt); err != nil {
			t.Fatalf("Litestream's restore of %s: %v", p.TXID, err)
		}
		a, err := os.ReadFile(ours)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(theirs)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Fatalf("transaction %s: admit wrote %d bytes, Litestream %d, and they differ", p.TXID, len(a), len(b))
		}
		if err := IntegrityCheck(ctx, ours); err != nil {
			t.Fatalf("transaction %s: %v", p.TXID, err)
		}
		sizes = append(sizes, int64(len(a)))
		if _, err := os.Stat(ours + ".tmp"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the temporary file of %s is left: %v", p.TXID, err)
		}
	}
	// The history really grew past the write buffer and shrank.
	grew, shrank := false, false
	for i := 1; i < len(sizes); i++ {
		grew = grew || sizes[i] > 2*applyWriteBuffer
		shrank = shrank || sizes[i] < sizes[i-1]
	}
	if !grew || !shrank {
		t.Fatalf("database sizes %v: want one over %d bytes and a shrink", sizes, 2*applyWriteBuffer)
	}
}

func TestDBWriter_SnapshotLeavesTheLockPageZeroAndEveryOtherPageInPlace(t *testing.T) {
	const pageSize = 512
	f, err := os.Create(filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// A buffer of four pages, full when the lock page (5) comes.
	w := &dbWriter{f: f, pageSize: pageSize, lockPgno: 5, buf: make([]byte, 0, 4*pageSize)}
	page := func(pgno uint32) []byte { return bytes.Repeat([]byte{byte(pgno)}, pageSize) }
	for pgno := uint32(1); pgno <= 12; pgno++ {
		if pgno == 5 {
			continue
		}
		if err := w.appendPage(pgno, page(pgno)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.flush(); err != nil {
		t.Fatal(err)
	}
	// A later file writes page 9 again and grows the database by one page.
	for _, pgno := range []uint32{9, 13} {
		if err := w.writePage(pgno, page(100+pgno)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 13*pageSize {
		t.Fatalf("%d bytes, want 13 pages", len(got))
	}
	for pgno := uint32(1); pgno <= 13; pgno++ {
		want := page(pgno)
		switch pgno {
		case 5:
			want = make([]byte, pageSize)
		case 9, 13:
			want = page(100 + pgno)
		}
		if at := got[(pgno-1)*pageSize : pgno*pageSize]; !bytes.Equal(at, want) {
			t.Errorf("page %d holds %d…, want %d…", pgno, at[0], want[0])
		}
	}
	// A page beyond the end with a gap (other than the lock page) is an
	// invalid file, not a database with a hole.
	if err := w.writePage(15, page(15)); !errors.Is(err, ltx.ErrInvalidFile) {
		t.Errorf("a gap before page 15: err=%v, want ErrInvalidFile", err)
	}
}

// checksummedReplica writes LTX files with database checksums, as
// Litestream's LTX format allows, into a file replica: a snapshot of the
// database at states[0], then one file per later state holding the pages
// that changed. bad names a transaction whose file records a wrong
// post-apply checksum while being a valid file itself.
func checksummedReplica(tb testing.TB, dir string, states [][]byte, pageSize int, bad ltx.TXID) {
	tb.Helper()
	ctx := context.Background()
	client := file.NewReplicaClient(dir)
	pageSum := func(db []byte) ltx.Checksum {
		sum := ltx.ChecksumFlag
		for i := 0; i*pageSize < len(db); i++ {
			sum = ltx.ChecksumFlag | (sum ^ ltx.ChecksumPage(uint32(i+1), db[i*pageSize:(i+1)*pageSize]))
		}
		return sum
	}
	for i, st := range states {
		txid := ltx.TXID(i + 1)
		var buf bytes.Buffer
		enc, err := ltx.NewEncoder(&buf)
		if err != nil {
			tb.Fatal(err)
		}
		hdr := ltx.Header{Version: ltx.Version, PageSize: uint32(pageSize), Commit: uint32(len(st) / pageSize),
			MinTXID: txid, MaxTXID: txid, Timestamp: time.Now().UnixMilli()}
		if i > 0 {
			hdr.PreApplyChecksum = pageSum(states[i-1])
		}
		if err := enc.EncodeHeader(hdr); err != nil {
			tb.Fatal(err)
		}
		for p := 0; p*pageSize < len(st); p++ {
			data := st[p*pageSize : (p+1)*pageSize]
			if i > 0 && (p+1)*pageSize <= len(states[i-1]) && bytes.Equal(data, states[i-1][p*pageSize:(p+1)*pageSize]) {
				continue
			}
			if err := enc.EncodePage(ltx.PageHeader{Pgno: uint32(p + 1)}, data); err != nil {
				tb.Fatal(err)
			}
		}
		sum := pageSum(st)
		if txid == bad {
			sum ^= 0xbad
		}
		enc.SetPostApplyChecksum(sum)
		if err := enc.Close(); err != nil {
			tb.Fatal(err)
		}
		if _, err := client.WriteLTXFile(ctx, 0, txid, txid, &buf); err != nil {
			tb.Fatal(err)
		}
	}
}

// mustDatabaseStates returns a small database's file after each group of
// statements (rollback journal, so the file is the whole state).
func mustDatabaseStates(tb testing.TB, groups ...[]string) (states [][]byte, pageSize int) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "states.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(DELETE)")
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, g := range groups {
		mustExec(tb, db, g...)
		b, err := os.ReadFile(path)
		if err != nil {
			tb.Fatal(err)
		}
		states = append(states, b)
	}
	if err := db.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
		tb.Fatal(err)
	}
	return states, pageSize
}

func TestRestore_PagesThatMissTheRecordedChecksumAreDamageAndTheNewestIntactStateIsRestored(t *testing.T) {
	states, pageSize := mustDatabaseStates(t,
		[]string{`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)`, `INSERT INTO t (v) VALUES ('one')`},
		[]string{`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200) INSERT INTO t (v) SELECT 'two ' || i FROM n`},
		[]string{`INSERT INTO t (v) VALUES ('three')`},
	)
	e := MustTestEnv(t)
	checksummedReplica(t, e.ReplicaDir, states, pageSize, 3)
	ctx := context.Background()
	dir := t.TempDir()

	// Exactly the last two states: the intact one restores byte for byte
	// (over the temporary file a killed restore left), the other is
	// refused as damage.
	if err := os.WriteFile(filepath.Join(dir, "two.db.tmp"), []byte("left by a killed restore"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := restoreTo(ctx, file.NewReplicaClient(e.ReplicaDir), 2, filepath.Join(dir, "two.db")); err != nil {
		t.Fatalf("restore 2: %v", err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "two.db")); err != nil || !bytes.Equal(got, states[1]) {
		t.Fatalf("restore 2 differs from the database at 2 (err %v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "two.db.tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary file is left: %v", err)
	}
	err := restoreTo(ctx, file.NewReplicaClient(e.ReplicaDir), 3, filepath.Join(dir, "three.db"))
	if !errors.Is(err, ltx.ErrChecksumMismatch) {
		t.Fatalf("restore 3: err=%v, want a checksum mismatch", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "three.db*")); len(left) > 0 {
		t.Errorf("a refused restore left %v", left)
	}

	// admit restore falls back to the newest intact state and says why.
	res, err := Restore(ctx, e.Config, e.DBPath, RestoreOptions{Output: filepath.Join(dir, "restored.db")})
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if res.TXID != 2 || res.Skipped == nil || res.Skipped.NewestTXID != 3 {
		t.Fatalf("restored %s, skipped %+v: want 2, with 3 skipped", res.TXID, res.Skipped)
	}
	if !strings.Contains(res.Skipped.Reason, "does not decode") || !strings.Contains(res.Skipped.Reason, "checksum") {
		t.Errorf("skip reason %q: want the checksum mismatch", res.Skipped.Reason)
	}
	if got, want := res.Tables["t"], int64(201); got != want {
		t.Errorf("restored %d rows, want %d", got, want)
	}
}

func TestRestoreTo_AFileWhoseBytesChangedIsRefused(t *testing.T) {
	states, pageSize := mustDatabaseStates(t,
		[]string{`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)`, `INSERT INTO t (v) VALUES ('one')`})
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// at is the offset from the file's end of the byte to change.
		at int
	}{
		{"page index", ltx.TrailerSize + 10},
		{"trailer's post-apply checksum", ltx.TrailerSize - 1},
		{"file checksum", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			checksummedReplica(t, dir, states, pageSize, 0)
			path := filepath.Join(dir, "ltx", "0", ltx.FormatFilename(1, 1))
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "x.db")
			if err := restoreTo(ctx, file.NewReplicaClient(dir), 1, out); err != nil {
				t.Fatalf("the intact file: %v", err)
			}
			raw[len(raw)-tc.at] ^= 0x01
			if err := os.WriteFile(path, raw, 0o600); err != nil {
				t.Fatal(err)
			}
			err = restoreTo(ctx, file.NewReplicaClient(dir), 1, filepath.Join(t.TempDir(), "y.db"))
			if !errors.Is(err, ltx.ErrChecksumMismatch) {
				t.Fatalf("err=%v, want a checksum mismatch", err)
			}
		})
	}
}

// flakyClient is a file replica whose streams fail the way an object
// store's can: breaking after some bytes, or a file vanishing once.
type flakyClient struct {
	*file.ReplicaClient
	breakAfter int64 // the first stream of each file ends in an error after this many bytes
	vanishOnce bool  // the first open of the first file says it does not exist
	opens      map[string]int
}

func (c *flakyClient) OpenLTXFile(ctx context.Context, level int, minTXID, maxTXID ltx.TXID, offset, size int64) (io.ReadCloser, error) {
	name := fmt.Sprintf("%d/%s", level, ltx.FormatFilename(minTXID, maxTXID))
	c.opens[name]++
	if c.vanishOnce {
		c.vanishOnce = false
		return nil, fmt.Errorf("open %s: %w", name, os.ErrNotExist)
	}
	rc, err := c.ReplicaClient.OpenLTXFile(ctx, level, minTXID, maxTXID, offset, size)
	if err != nil || c.breakAfter == 0 || c.opens[name] > 1 {
		return rc, err
	}
	return &brokenStream{ReadCloser: rc, left: c.breakAfter}, nil
}

// brokenStream fails after left bytes, as a dropped connection does.
type brokenStream struct {
	io.ReadCloser
	left int64
}

func (b *brokenStream) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errors.New("connection reset by peer")
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

func TestRestoreTo_ResumesABrokenStreamAndReplansWhenAFileVanishes(t *testing.T) {
	e := MustTestEnv(t)
	db := e.MustOpenStore(t)
	r := e.MustStart(t)
	e.mustSignup(t, db, 20)
	mustSync(t, r)
	e.mustSignup(t, db, 5)
	mustSync(t, r)
	txid := mustPos(t, r)
	mustStop(t, db, r)

	ctx := context.Background()
	dir := t.TempDir()
	want := filepath.Join(dir, "want.db")
	if err := restoreTo(ctx, file.NewReplicaClient(e.ReplicaDir), txid, want); err != nil {
		t.Fatal(err)
	}
	wantBytes, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		client *flakyClient
	}{
		{"broken streams", &flakyClient{breakAfter: 1000}},
		{"a vanished file", &flakyClient{vanishOnce: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.client.ReplicaClient = file.NewReplicaClient(e.ReplicaDir)
			tc.client.opens = map[string]int{}
			out := filepath.Join(t.TempDir(), "x.db")
			if err := restoreTo(ctx, tc.client, txid, out); err != nil {
				t.Fatalf("restore: %v", err)
			}
			got, err := os.ReadFile(out)
			if err != nil || !bytes.Equal(got, wantBytes) {
				t.Fatalf("the restore differs from an undisturbed one (err %v)", err)
			}
			reopened := 0
			for _, n := range tc.client.opens {
				if n > 1 {
					reopened++
				}
			}
			if reopened == 0 {
				t.Errorf("no file was opened twice: %v", tc.client.opens)
			}
		})
	}
}
