package migrations_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// The triggers that keep counters and clear delivery references leave
// both engines with the same rows after the same statements.
func TestSchema_TriggersKeepTheSameCountsOnBothEngines(t *testing.T) {
	want := strings.Join([]string{
		"occupied 3",
		"count active 1", "count invited 1", "count selected 1", "count waiting 0", "count withdrawn 0",
		"funnel " + id(programID) + " joined 4 selected 4 invited 4 redeemed 1",
		"funnel " + id(220) + " joined 0 selected 0 invited 0 redeemed 0",
		"invitation " + id(issuedInviteID) + " email <nil>",
		"references left 0",
	}, "\n")
	for _, eng := range []namedEngine{onSQLite, onPostgres} {
		t.Run(eng.name, func(t *testing.T) {
			e := eng.open(t, 0)
			for _, f := range fixture {
				e.mustExec(t, f.q, f.args...)
			}
			steps := []struct {
				q    string
				args []any
			}{
				// An erased, withdrawn entry deleted: its state's count drops.
				{`DELETE FROM entries WHERE id = ?`, []any{id(erasedID)}},
				// Selected (the funnel counts it), withdrawn (it leaves the
				// queue), back to waiting (it takes its place again), selected.
				{`UPDATE entries SET state = 'selected' WHERE id = ?`, []any{id(waitingID)}},
				{`UPDATE entries SET state = 'withdrawn' WHERE id = ?`, []any{id(waitingID)}},
				{`UPDATE entries SET state = 'waiting' WHERE id = ?`, []any{id(waitingID)}},
				{`UPDATE entries SET state = 'selected' WHERE id = ?`, []any{id(waitingID)}},
				// An entry's first invitation counts, a second does not; of
				// two in one statement, the first.
				{`INSERT INTO invitations (id, program_id, entry_id, code_digest, state, issued_at, expires_at, terminal_at)
					VALUES (?, ?, ?, ?, 'expired', 1, 2, 2)`, []any{id(200), id(programID), id(waitingID), blob(200, 32)}},
				{`INSERT INTO invitations (id, program_id, entry_id, code_digest, state, issued_at, expires_at, terminal_at)
					VALUES (?, ?, ?, ?, 'revoked', 2, 3, 3)`, []any{id(201), id(programID), id(waitingID), blob(201, 32)}},
				{`INSERT INTO entries (id, program_id, email_key, notice_id, permission_at, state, created_at, updated_at)
					VALUES (?, ?, 'late@example.test', ?, 1, 'invited', 1, 1)`, []any{id(210), id(programID), id(noticeID)}},
				{`INSERT INTO invitations (id, program_id, entry_id, code_digest, state, issued_at, expires_at, terminal_at)
					VALUES (?, ?, ?, ?, 'revoked', 1, 2, 2), (?, ?, ?, ?, 'expired', 2, 3, 3)`,
					[]any{id(202), id(programID), id(210), blob(202, 32), id(203), id(programID), id(210), blob(203, 32)}},
				{`INSERT INTO grants (id, program_id, entry_id, invitation_id, user_id, granted_at) VALUES (?, ?, ?, ?, 'user-9', 3)`,
					[]any{id(204), id(programID), id(activeID), id(redeemedInviteID)}},
				// Erasure clears the entry's delivery references.
				{`UPDATE entries SET erased_at = 9, removal_hash = NULL, email_key = ? WHERE id = ?`, []any{"erased:" + id(invitedID), id(invitedID)}},
				// A new program gets its funnel.
				{`INSERT INTO programs (id, workspace_id, public_slug, purpose, queue_cap, hourly_cap, seat_cap, created_at, updated_at)
					VALUES (?, ?, 'second', 'Testing', 1, 1, 1, 1, 1)`, []any{id(220), id(wsID)}},
			}
			for _, s := range steps {
				e.mustExec(t, s.q, s.args...)
			}
			if got := counters(t, e); got != want {
				t.Errorf("after the same statements:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func counters(t *testing.T, e *engine) string {
	var lines []string
	for _, r := range queryAll(t, e, `SELECT occupied FROM programs WHERE id = ?`, id(programID)) {
		lines = append(lines, fmt.Sprintf("occupied %d", num(r[0])))
	}
	for _, r := range queryAll(t, e, `SELECT state, n FROM entry_state_counts WHERE program_id = ? ORDER BY state`, id(programID)) {
		lines = append(lines, fmt.Sprintf("count %s %d", str(r[0]), num(r[1])))
	}
	for _, r := range queryAll(t, e, `SELECT program_id, joined, selected, invited, redeemed FROM program_funnel ORDER BY program_id`) {
		lines = append(lines, fmt.Sprintf("funnel %s joined %d selected %d invited %d redeemed %d", str(r[0]), num(r[1]), num(r[2]), num(r[3]), num(r[4])))
	}
	for _, r := range queryAll(t, e, `SELECT id, delivery_channel, delivery_reference FROM invitations WHERE id = ?`, id(issuedInviteID)) {
		lines = append(lines, fmt.Sprintf("invitation %s %s %v", str(r[0]), str(r[1]), r[2]))
	}
	for _, r := range queryAll(t, e, `SELECT count(*) FROM invitations WHERE delivery_reference IS NOT NULL`) {
		lines = append(lines, fmt.Sprintf("references left %d", num(r[0])))
	}
	return strings.Join(lines, "\n")
}

// PostgreSQL's TRUNCATE fires no row trigger: the history tables refuse
// it with the message their delete triggers give.
func TestSchema_PostgresHistoryRefusesTruncate(t *testing.T) {
	e := newPostgres(t, 0)
	for _, f := range fixture {
		e.mustExec(t, f.q, f.args...)
	}
	for _, q := range []string{
		`TRUNCATE audit_events`,
		`TRUNCATE workspace_events`,
		`TRUNCATE notices CASCADE`,
		`TRUNCATE programs CASCADE`,
	} {
		if got := outcome(e.tryInTx(context.Background(), q)); got != immutable {
			t.Errorf("%s: got %s, want %s", q, got, immutable)
		}
	}
	if got := outcome(e.tryInTx(context.Background(), `TRUNCATE network_counters`)); got != "ok" {
		t.Errorf("TRUNCATE of a table that is no history: %s", got)
	}
}

// Text compares by byte on both engines (SQLite's BINARY, PostgreSQL's
// COLLATE "C"), whatever the database's locale, and lower() folds ASCII
// letters only: the queue's order and its search by address agree.
func TestSchema_TextComparesBytesOnBothEngines(t *testing.T) {
	addresses := []string{"zoe@x.test", "Zoe@x.test", "a-b@x.test", "ab@x.test", "_a@x.test", "\u00e9mile@x.test", "\u00c9mile@x.test", "a.b@x.test", "10@x.test", "9@x.test"}
	want := "10@x.test 10@x.test|9@x.test 9@x.test|Zoe@x.test zoe@x.test|_a@x.test _a@x.test|a-b@x.test a-b@x.test|" +
		"a.b@x.test a.b@x.test|ab@x.test ab@x.test|zoe@x.test zoe@x.test|\u00c9mile@x.test \u00c9mile@x.test|\u00e9mile@x.test \u00e9mile@x.test"
	for _, eng := range []namedEngine{onSQLite, onPostgres, onPostgresICU} {
		t.Run(eng.name, func(t *testing.T) {
			e := eng.open(t, 0)
			for _, f := range fixture[:5] {
				e.mustExec(t, f.q, f.args...)
			}
			for i, a := range addresses {
				e.mustExec(t, `INSERT INTO entries (id, program_id, email_key, notice_id, permission_at, state, created_at, updated_at)
					VALUES (?, ?, ?, ?, 1, 'waiting', 1, 1)`, id(300+i), id(programID), a, id(noticeID))
			}
			var got []string
			for _, r := range queryAll(t, e, `SELECT email_key, lower(email_key) FROM entries WHERE program_id = ? ORDER BY email_key`, id(programID)) {
				got = append(got, str(r[0])+" "+str(r[1]))
			}
			if strings.Join(got, "|") != want {
				t.Errorf("addresses in order:\n%s\nwant:\n%s", strings.Join(got, "|"), want)
			}
			r := queryAll(t, e, `SELECT count(*) FROM entries WHERE program_id = ? AND state = 'waiting' AND lower(email_key) >= 'zoe@' AND lower(email_key) < 'zoe@x.tesu'`, id(programID))
			if num(r[0][0]) != 2 {
				t.Errorf("a search by the lowercased address finds %d, want both Zoe and zoe", num(r[0][0]))
			}
		})
	}
}
