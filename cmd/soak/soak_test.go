package main

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"admit/backup"

	_ "modernc.org/sqlite"
)

func TestParseFlags_Defaults(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Cycles < 20 || c.Clients != 32 || !slices.Equal(c.Rates, []float64{25, 50, 0}) || c.RemoveEvery != 10 {
		t.Errorf("defaults: cycles=%d clients=%d rates=%v remove-every=%d, want ≥20, 32, [25 50 0], 10", c.Cycles, c.Clients, c.Rates, c.RemoveEvery)
	}
	for _, bad := range [][]string{{"-cycles", "0"}, {"-clients", "0"}, {"-rate", "-1"}, {"-rate", "fast"}, {"-rate", "10,"}, {"-load", "0s"}, {"-remove-every", "-1"}} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) accepted", bad)
		}
	}
	c, err = parseFlags([]string{"-rate", "0, 12.5"}, io.Discard)
	if err != nil || !slices.Equal(c.Rates, []float64{0, 12.5}) {
		t.Errorf("-rate '0, 12.5': %v %v", c.Rates, err)
	}
}

// The soak's litestream.yml is one admit accepts, naming a file replica
// for the database and keeping level-0 files for the whole run.
func TestLitestreamYAML_AdmitReadsIt(t *testing.T) {
	dir := t.TempDir()
	dbPath, replica := filepath.Join(dir, "data", "admit.db"), filepath.Join(dir, "replica")
	file := filepath.Join(dir, "litestream.yml")
	if err := os.WriteFile(file, []byte(litestreamYAML(dbPath, replica)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := backup.LoadConfig(file, func(string) string { return "" })
	if err != nil {
		t.Fatalf("admit refuses the soak's litestream.yml: %v", err)
	}
	rc, err := cfg.ReplicaFor(dbPath)
	if err != nil || rc == nil {
		t.Fatalf("no replica for %s: %v", dbPath, err)
	}
	if rc.Type != "file" || rc.Path != replica {
		t.Errorf("replica %+v, want file at %s", rc, replica)
	}
	if cfg.L0Retention == nil || *cfg.L0Retention < time.Hour {
		t.Errorf("l0-retention %v: level-0 files must outlive the run", cfg.L0Retention)
	}
}

// soakSchema is the part of admit's schema the checker reads, with the
// indexes that a lost page breaks.
const soakSchema = `
CREATE TABLE entries (id INTEGER PRIMARY KEY, email_key TEXT NOT NULL UNIQUE, state TEXT NOT NULL);
CREATE INDEX entries_email_idx ON entries(email_key);
CREATE TABLE signup_receipts (request_key TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE entry_state_counts (state TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE audit_events (id INTEGER PRIMARY KEY, entry_id INTEGER REFERENCES entries(id), event_type TEXT NOT NULL);
INSERT INTO entry_state_counts VALUES ('waiting', 0);
`

// testDB creates a database with soakSchema at path and returns a handle.
func testDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(soakSchema); err != nil {
		t.Fatal(err)
	}
	return db
}

// signUp stores one signup as admit does, in one transaction: the entry,
// its receipt, the count and the signup event. A replica's restore point
// never falls between them.
func signUp(t *testing.T, db *sql.DB, email, key string) {
	t.Helper()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO entries (email_key, state) VALUES (?, 'waiting')`, []any{email}},
		{`INSERT INTO signup_receipts VALUES (?)`, []any{key}},
		{`UPDATE entry_state_counts SET n = n + 1 WHERE state = 'waiting'`, nil},
		{`INSERT INTO audit_events (entry_id, event_type) SELECT id, 'signup' FROM entries WHERE email_key = ?`, []any{email}},
	} {
		if _, err := tx.Exec(q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// checkpointed copies the WAL into the database file so that the file
// alone holds every row.
func checkpointed(t *testing.T, db *sql.DB) {
	t.Helper()
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
}

func TestCheckPoint_AGoodPointHoldsItsEntries(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "point.db")
	db := testDB(t, path)
	l := newLedger()
	var emails []string
	for range 5 {
		e, k := l.next(1)
		signUp(t, db, e, k)
		emails = append(emails, e)
	}
	checkpointed(t, db)
	prev := map[string]bool{emails[0]: true, emails[1]: true}
	ps := checkPoint(ctx, path, prev, l)
	if ps.Corrupt() {
		t.Fatalf("a consistent point reported corrupt: %v", ps.Problems)
	}
	if len(ps.Emails) != 5 {
		t.Errorf("read %d entries, want 5", len(ps.Emails))
	}
}

func TestCheckPoint_FindsEachInconsistency(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		// spoil changes a database of two good signups; prev is the
		// previous point's entries.
		spoil func(db *sql.DB, l *ledger) (prev map[string]bool)
		want  string
	}{
		{"an entry the soak never sent", func(db *sql.DB, l *ledger) map[string]bool {
			signUp(t, db, "soak-9-999@example.test", "unknown-key")
			return nil
		}, "never sent"},
		{"an entry without its receipt", func(db *sql.DB, l *ledger) map[string]bool {
			e, _ := l.next(1)
			db.Exec(`INSERT INTO entries (email_key, state) VALUES (?, 'waiting')`, e)
			db.Exec(`UPDATE entry_state_counts SET n = n + 1`)
			db.Exec(`INSERT INTO audit_events (entry_id, event_type) SELECT id, 'signup' FROM entries WHERE email_key = ?`, e)
			return nil
		}, "without their signup receipt"},
		{"an entry without its signup event", func(db *sql.DB, l *ledger) map[string]bool {
			db.Exec(`DELETE FROM audit_events WHERE id = (SELECT max(id) FROM audit_events)`)
			return nil
		}, "1 entries without one"},
		{"a signup event twice", func(db *sql.DB, l *ledger) map[string]bool {
			db.Exec(`INSERT INTO audit_events (entry_id, event_type) SELECT entry_id, event_type FROM audit_events LIMIT 1`)
			return nil
		}, "signup events: 3 for 2 entries"},
		{"state counts that disagree", func(db *sql.DB, l *ledger) map[string]bool {
			db.Exec(`UPDATE entry_state_counts SET n = n + 3`)
			return nil
		}, "entry_state_counts says"},
		{"an entry of the previous point gone", func(db *sql.DB, l *ledger) map[string]bool {
			e, _ := l.next(1)
			return map[string]bool{e: true}
		}, "previous restore point are gone"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "point.db")
			db := testDB(t, path)
			l := newLedger()
			for range 2 {
				e, k := l.next(1)
				signUp(t, db, e, k)
			}
			prev := tc.spoil(db, l)
			checkpointed(t, db)
			ps := checkPoint(ctx, path, prev, l)
			if !ps.Corrupt() || !strings.Contains(strings.Join(ps.Problems, "; "), tc.want) {
				t.Errorf("problems %q, want one containing %q", ps.Problems, tc.want)
			}
		})
	}
}

// A page of an index overwritten, as a restore that misses a checkpointed
// change leaves it, fails integrity_check.
func TestCheckPoint_CorruptPageFailsIntegrityCheck(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "point.db")
	db := testDB(t, path)
	l := newLedger()
	for range 300 {
		e, k := l.next(1)
		signUp(t, db, e, k)
	}
	checkpointed(t, db)
	var root, pageSize int64
	if err := db.QueryRow(`SELECT rootpage FROM sqlite_schema WHERE name = 'entries_email_idx'`).Scan(&root); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	db.Close()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, pageSize), (root-1)*pageSize); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ps := checkPoint(ctx, path, nil, l)
	if !ps.Corrupt() || !strings.HasPrefix(ps.Problems[0], "integrity_check") {
		t.Fatalf("problems %q, want an integrity_check failure", ps.Problems)
	}
}

// The checker lists the replica's restore points and restores each with
// Litestream: here against a real replication of a small database.
func TestChecker_ScansEveryRestorePointOfAReplica(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dbPath, replica, scratch := filepath.Join(dir, "data", "admit.db"), filepath.Join(dir, "replica"), filepath.Join(dir, "scratch")
	for _, d := range []string{filepath.Dir(dbPath), scratch} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	db := testDB(t, dbPath)
	file := filepath.Join(dir, "litestream.yml")
	if err := os.WriteFile(file, []byte(litestreamYAML(dbPath, replica)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := backup.LoadConfig(file, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	repl, err := backup.Start(ctx, cfg, dbPath, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer repl.Close(ctx)
	l := newLedger()
	const batches = 3
	for range batches {
		for range 4 {
			e, k := l.next(1)
			signUp(t, db, e, k)
			l.answered(e, true)
		}
		if err := repl.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	chk := &checker{replica: replica, scratch: scratch, ledger: l}
	res, err := chk.scanNew(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Points < batches || res.Corrupt != 0 {
		t.Fatalf("scan: %+v, want ≥%d points, none corrupt", res, batches)
	}
	if len(chk.lastEmails) != 4*batches {
		t.Errorf("the newest point holds %d entries, want %d", len(chk.lastEmails), 4*batches)
	}
	lacking, unerased, ps, err := chk.latestHoldsAcked(ctx)
	if err != nil || lacking != 0 || unerased != 0 || ps.Corrupt() {
		t.Errorf("latest: lacking=%d unerased=%d problems=%v err=%v", lacking, unerased, ps.Problems, err)
	}
	again, err := chk.scanNew(ctx)
	if err != nil || again.Points != 0 {
		t.Errorf("a second scan with nothing new checked %d points (%v)", again.Points, err)
	}
}

// A removed entry may leave a later point; an entry nobody removed may not.
// The latest state must not hold an entry whose removal was answered 200.
func TestCheckPoint_ARemovedEntryMayLeaveALaterPointButMustLeaveTheLatest(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "point.db")
	db := testDB(t, path)
	l := newLedger()
	kept, k := l.next(1)
	signUp(t, db, kept, k)
	l.answered(kept, true)
	removed, _ := l.next(1)
	l.answered(removed, true)
	l.removalSent(removed)
	l.removalDone(removed)
	checkpointed(t, db)
	if ps := checkPoint(ctx, path, map[string]bool{kept: true, removed: true}, l); ps.Corrupt() {
		t.Fatalf("a removed entry gone from a later point counted as lost: %v", ps.Problems)
	}
	if held := l.mustHold(); !held[kept] || held[removed] {
		t.Errorf("mustHold=%v, want only %s", held, kept)
	}
	// The data files still hold the removed address until it is erased.
	signUp(t, db, removed, "key-of-removed")
	checkpointed(t, db)
	if err := os.Rename(path, filepath.Join(dir, "admit.db")); err != nil {
		t.Fatal(err)
	}
	if d, err := removedOnDisk(dir, l.removedSnapshot()); err != nil || d != (onDisk{Live: 1}) {
		t.Errorf("removedOnDisk=%+v, %v; want one live copy", d, err)
	}
}

func TestSoakAddresses_FindsEveryAddressInBytes(t *testing.T) {
	b := []byte("\x00soak-3-41@example.test\x07xxsoak-12-9@example.testsoak-1-1@example.org soak-@example.test soak-2-2@example.test")
	var got []string
	for _, a := range soakAddresses(b) {
		got = append(got, a.email)
		if !bytes.HasPrefix(b[a.offset:], []byte(a.email)) {
			t.Errorf("%s is not at offset %d", a.email, a.offset)
		}
	}
	want := []string{"soak-3-41@example.test", "soak-12-9@example.test", "soak-@example.test", "soak-2-2@example.test"}
	if !slices.Equal(got, want) {
		t.Errorf("soakAddresses=%q, want %q", got, want)
	}
}

// inPageGap tells the gap between a b-tree page's cell pointers and its
// cell content from the rest of the page.
func TestInPageGap_OnlyBetweenTheCellPointersAndTheContent(t *testing.T) {
	db := make([]byte, 3*4096)
	db[16], db[17] = 0x10, 0x00 // page size 4096
	p := db[4096:8192]          // page 2: an index leaf with 3 cells, content from 4000
	p[0], p[3], p[4], p[5], p[6] = 10, 0, 3, 0x0f, 0xa0
	for at, want := range map[int]bool{0: false, 13: false, 14: true, 3999: true, 4000: false, 4095: false} {
		if got := inPageGap(db, 4096+at); got != want {
			t.Errorf("offset %d in the page: inPageGap=%v, want %v", at, got, want)
		}
	}
	// Page 3 is not a b-tree page (an overflow or free page): no gap.
	if inPageGap(db, 2*4096+200) {
		t.Error("a page that is not a b-tree page has a gap")
	}
	// Page 1's header starts after the 100-byte database header.
	db[100], db[103], db[104], db[105], db[106] = 13, 0, 1, 0x0f, 0x00
	if inPageGap(db, 100+9) || !inPageGap(db, 100+10) || inPageGap(db, 0x0f00) {
		t.Error("page 1's gap is not measured after the database header")
	}
}

func TestSummary_CleanOnlyWithoutAnyBadPoint(t *testing.T) {
	var s Summary
	s.add(cycleResult{Points: pointsResult{Points: 5}})
	if !s.Clean() {
		t.Fatal("no problem, yet not clean")
	}
	for _, r := range []cycleResult{
		{Points: pointsResult{Points: 3, Corrupt: 1}},
		{LatestErr: "integrity_check: Page 3: never used"},
		{Lacking: 2},
		{Unerased: 1},
		{OnDisk: onDisk{WAL: 1}},
		{OnDisk: onDisk{Live: 1}},
		{Rejected: 1},
	} {
		var s Summary
		s.add(r)
		if s.Clean() {
			t.Errorf("%+v counted clean", r)
		}
	}
	s.add(cycleResult{Points: pointsResult{Points: 4, Corrupt: 2}})
	if s.Points != 9 || s.Corrupt != 2 || s.CorruptCycles != 1 {
		t.Errorf("totals %+v", s)
	}
	if !strings.Contains(s.report(nil), "corrupt 2 (in 1 cycles)") || !strings.Contains(s.report(nil), "FAILED") {
		t.Errorf("report: %s", s.report(nil))
	}
}
