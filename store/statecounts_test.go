package store

import (
	"context"
	"fmt"
	"reflect"
	"testing"
)

// mustGroupCounts counts the program's entries by state the slow way, from
// the entries themselves.
func mustGroupCounts(tb testing.TB, db *DB, programID string) map[string]int {
	tb.Helper()
	ctx := context.Background()
	out := map[string]int{}
	err := db.View(ctx, func(tx *Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT state, count(*) FROM entries WHERE program_id = ? GROUP BY state`, programID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var s string
			var n int
			if err := rows.Scan(&s, &n); err != nil {
				return err
			}
			out[s] = n
		}
		return rows.Err()
	})
	if err != nil {
		tb.Fatalf("group counts: %v", err)
	}
	return out
}

// wantCountsMatch fails unless StateCounts equals a count over the entries.
func wantCountsMatch(tb testing.TB, db *DB, sp signupProgram, when string) {
	tb.Helper()
	got, err := db.StateCounts(context.Background(), sp.Owner, sp.Program.ID)
	if err != nil {
		tb.Fatalf("%s: state counts: %v", when, err)
	}
	if want := mustGroupCounts(tb, db, sp.Program.ID); !reflect.DeepEqual(got, want) {
		tb.Fatalf("%s: StateCounts=%v, want %v (counted from the entries)", when, got, want)
	}
}

func TestStateCounts_FollowEveryInsertAndTransition(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	sp := mustSignupProgram(t, db, "counted", 1000, 1000)
	other := mustSignupProgram(t, db, "other-counted", 1000, 1000)
	wantCountsMatch(t, db, sp, "empty program")

	mustSeedEntries(t, db, sp.Program.ID, sp.Notice.ID, 300)
	wantCountsMatch(t, db, sp, "after a raw bulk insert")

	var tokens []string
	for i := range 6 {
		res := mustSignup(t, db, sp.signupReq(fmt.Sprintf("counted-%d@example.test", i)))
		tokens = append(tokens, res.RemovalToken)
		mustSignup(t, db, other.signupReq(fmt.Sprintf("counted-%d@example.test", i)))
	}
	ids := mustColumn[string](t, db, `SELECT id FROM entries WHERE program_id = ? AND email_key LIKE 'counted-%' ORDER BY email_key`, sp.Program.ID)
	if len(ids) != 6 {
		t.Fatalf("signed-up entries: %v", ids)
	}
	wantCountsMatch(t, db, sp, "after signups")

	steps := []struct {
		name string
		do   func() error
	}{
		{"select", func() error {
			_, err := db.SelectEntry(ctx, sp.Owner, sp.Program.ID, ids[0], Decision{Reason: "meets_policy"})
			return err
		}},
		{"select again", func() error {
			_, err := db.SelectEntry(ctx, sp.Owner, sp.Program.ID, ids[1], Decision{Reason: "meets_policy"})
			return err
		}},
		{"decline", func() error {
			_, err := db.DeclineEntry(ctx, sp.Owner, sp.Program.ID, ids[1], Decision{Reason: "capacity"})
			return err
		}},
		{"owner withdrawal", func() error {
			_, err := db.WithdrawEntry(ctx, sp.Owner, sp.Program.ID, ids[2], Decision{Reason: "applicant_request"})
			return err
		}},
		{"repeated withdrawal", func() error {
			_, err := db.WithdrawEntry(ctx, sp.Owner, sp.Program.ID, ids[2], Decision{Reason: "applicant_request"})
			return err
		}},
		{"removal by token", func() error { return db.RemoveByToken(ctx, tokens[3]) }},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		wantCountsMatch(t, db, sp, "after "+s.name)
	}
	wantCountsMatch(t, db, other, "the other program")
	if got, err := db.StateCounts(ctx, other.Owner, other.Program.ID); err != nil || got[StateWaiting] != 6 || len(got) != 1 {
		t.Fatalf("other program counts=%v (%v), want only 6 waiting: counts must not leak across programs", got, err)
	}

	// A duplicate adds no entry, so it changes no count.
	before := mustGroupCounts(t, db, sp.Program.ID)
	dup := sp.signupReq("counted-0@example.test")
	if _, err := db.Signup(ctx, dup); err != nil {
		t.Fatalf("duplicate signup: %v", err)
	}
	wantCountsMatch(t, db, sp, "after a duplicate signup")
	if after := mustGroupCounts(t, db, sp.Program.ID); !reflect.DeepEqual(before, after) {
		t.Fatalf("a duplicate changed the entries: %v → %v", before, after)
	}
}
