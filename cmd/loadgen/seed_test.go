package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"admit/store"
)

// The one seeder against a database migrated by admit's store, in several
// transactions: each entry with its receipt and signup event, a
// time-ordered ID that carries its join time, the due dates asked for, and
// counters that agree with the entries.
func TestSeedEntries_WritesWhatASignupWritesInChunks(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "admit.db")
	db, err := store.Open(ctx, path, store.Options{BindingKey: bytes.Repeat([]byte{7}, store.BindingKeySize)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SeedDemo(ctx, "user_seed"); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := openWriter(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	count := func(q string, args ...any) int {
		t.Helper()
		var n int
		if err := raw.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	var programID string
	if err := raw.QueryRowContext(ctx, `SELECT id FROM programs WHERE public_slug = ?`, store.DemoSlug).Scan(&programID); err != nil {
		t.Fatal(err)
	}
	receiptsBefore := count(`SELECT count(*) FROM signup_receipts WHERE program_id = ?`, programID)
	eventsBefore := count(`SELECT count(*) FROM audit_events WHERE program_id = ? AND event_type = 'signup'`, programID)

	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	const n = 250
	wantDue, wantLater := 0, 0
	entry := func(i int) (string, bool) {
		st := seedState(i)
		return st, i < 150 && i%2 == 0
	}
	for i := range n {
		if st, due := entry(i); st == "declined" || st == "withdrawn" {
			if due {
				wantDue++
			} else {
				wantLater++
			}
		}
	}
	if wantDue == 0 || wantLater == 0 {
		t.Fatalf("the fixture has %d due and %d later erasures, want some of each", wantDue, wantLater)
	}
	err = seedEntries(ctx, path, now, 100, seedProgram{ID: programID, N: n,
		Email: func(i int) string { return fmt.Sprintf("seed-test-%03d@example.test", i) },
		Entry: entry})
	if err != nil {
		t.Fatalf("seed: %v", err)
	}

	if got := count(`SELECT count(*) FROM entries WHERE program_id = ? AND email_key LIKE 'seed-test-%'`, programID); got != n {
		t.Errorf("seeded entries: %d, want %d", got, n)
	}
	if got := count(`SELECT count(*) FROM signup_receipts WHERE program_id = ?`, programID) - receiptsBefore; got != n {
		t.Errorf("receipts: %d more, want %d", got, n)
	}
	if got := count(`SELECT count(*) FROM audit_events WHERE program_id = ? AND event_type = 'signup'`, programID) - eventsBefore; got != n {
		t.Errorf("signup events: %d more, want %d", got, n)
	}
	if got := count(`SELECT count(*) FROM entries WHERE program_id = ? AND erase_after <= ?`, programID, now.UnixMilli()); got != wantDue {
		t.Errorf("entries due for erasure: %d, want %d", got, wantDue)
	}
	if got := count(`SELECT count(*) FROM entries WHERE program_id = ? AND erase_after = ?`, programID, now.Add(30*24*time.Hour).UnixMilli()); got != wantLater {
		t.Errorf("entries due in 30 days: %d, want %d", got, wantLater)
	}
	if got := count(`SELECT count(*) FROM entries WHERE program_id = ? AND erase_after IS NOT NULL AND state NOT IN ('declined', 'withdrawn')`, programID); got != 0 {
		t.Errorf("%d entries of other states have an erasure date, want none", got)
	}
	// Counters from the entries, as admit keeps them.
	if got := count(`SELECT count(*) FROM (SELECT state, count(*) AS entries FROM entries WHERE program_id = ?1 GROUP BY state)
		FULL JOIN (SELECT state, n AS counted FROM entry_state_counts WHERE program_id = ?1 AND n > 0) USING (state)
		WHERE entries IS NOT counted`, programID); got != 0 {
		t.Errorf("%d states whose counter differs from the entries", got)
	}
	if got := count(`SELECT occupied - (SELECT count(*) FROM entries WHERE program_id = ?1 AND state <> 'withdrawn') FROM programs WHERE id = ?1`, programID); got != 0 {
		t.Errorf("queue occupancy is off by %d", got)
	}

	rows, err := raw.QueryContext(ctx, `SELECT id, created_at FROM entries WHERE program_id = ? AND email_key LIKE 'seed-test-%' ORDER BY email_key`, programID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var last string
	for rows.Next() {
		var id string
		var at int64
		if err := rows.Scan(&id, &at); err != nil {
			t.Fatal(err)
		}
		if ms, err := strconv.ParseInt(strings.ReplaceAll(id, "-", "")[:12], 16, 64); err != nil || ms != at {
			t.Fatalf("entry %s joined at %d: its ID's time is %d (%v)", id, at, ms, err)
		}
		if at < now.Add(-30*24*time.Hour).UnixMilli() || at >= now.UnixMilli() {
			t.Fatalf("entry %s joined at %d, outside the 30 days before now", id, at)
		}
		if id <= last {
			t.Fatalf("entry %s follows %s: IDs not in join order", id, last)
		}
		last = id
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}
