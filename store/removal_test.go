package store

import (
	"context"
	"database/sql"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// removalRow is what token removal changes on an entry.
type removalRow struct {
	Email       string
	State       string
	RemovalHash []byte
	ErasedAt    sql.NullInt64
	EraseAfter  sql.NullInt64
}

// mustRemovalRow reads the removal-relevant columns of an entry.
func mustRemovalRow(tb testing.TB, db *DB, entryID string) removalRow {
	tb.Helper()
	ctx := context.Background()
	var r removalRow
	err := db.View(ctx, func(tx *Tx) error {
		return tx.QueryRowContext(ctx, `SELECT email_key, state, removal_hash, erased_at, erase_after FROM entries WHERE id = ?`,
			entryID).Scan(&r.Email, &r.State, &r.RemovalHash, &r.ErasedAt, &r.EraseAfter)
	})
	if err != nil {
		tb.Fatalf("read entry: %v", err)
	}
	return r
}

// entryEvents lists the entry's audit event types and details, oldest first.
func entryEvents(tb testing.TB, db *DB, entryID string) (types, details []string) {
	tb.Helper()
	ctx := context.Background()
	err := db.View(ctx, func(tx *Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT event_type, details FROM audit_events WHERE entry_id = ? ORDER BY id`, entryID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var typ, d string
			if err := rows.Scan(&typ, &d); err != nil {
				return err
			}
			types = append(types, typ)
			details = append(details, d)
		}
		return rows.Err()
	})
	if err != nil {
		tb.Fatalf("read events: %v", err)
	}
	return types, details
}

func TestRemoveByToken_ErasesTheEmailWithdrawsAndRevokesAccess(t *testing.T) {
	db, clock := mustOpenDBWithClock(t)
	ctx := context.Background()
	sp := mustSignupProgram(t, db, "removal", 100, 100)
	const email = "Leaving.Person@example.com"
	res := mustSignup(t, db, sp.signupReq(email))
	bystander := mustSignup(t, db, sp.signupReq("staying@example.com"))
	entryID := mustEntrySnapshot(t, db, sp.Program.ID, email).ID

	// The entry holds a redeemed invitation with an active grant, and a
	// second, issued invitation: removal must end both.
	var grantedInvite, issuedInvite, grantID string
	mustUpdate(t, db, func(tx *Tx) error {
		var err error
		if grantedInvite, err = rawInvitation(ctx, tx, sp.Program.ID, entryID, "redeemed"); err != nil {
			return err
		}
		if issuedInvite, err = rawInvitation(ctx, tx, sp.Program.ID, entryID, "issued"); err != nil {
			return err
		}
		grantID = uuid.NewString()
		if _, err := tx.ExecContext(ctx, `INSERT INTO grants (id, program_id, entry_id, invitation_id, clerk_user_id, active, granted_at)
			VALUES (?, ?, ?, ?, 'user_leaving', 1, ?)`, grantID, sp.Program.ID, entryID, grantedInvite, Millis(tx.Now)); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE entries SET state = 'active' WHERE id = ?`, entryID)
		return err
	})
	occupied := mustCount(t, db, `SELECT occupied FROM programs WHERE id = ?`, sp.Program.ID)

	clock.Add(3 * time.Minute)
	removedAt := clock.Now()
	if err := db.RemoveByToken(ctx, res.RemovalToken); err != nil {
		t.Fatalf("remove: %v", err)
	}

	row := mustRemovalRow(t, db, entryID)
	if got, want := row.Email, tombstone(entryID); got != want {
		t.Errorf("email_key=%q, want the tombstone %q", got, want)
	}
	if strings.Contains(row.Email, "@") || strings.Contains(strings.ToLower(row.Email), "leaving") {
		t.Errorf("email_key=%q still looks like the address", row.Email)
	}
	if row.RemovalHash != nil {
		t.Errorf("removal_hash=%x, want NULL", row.RemovalHash)
	}
	if got, want := row.ErasedAt, (sql.NullInt64{Int64: Millis(removedAt), Valid: true}); got != want {
		t.Errorf("erased_at=%v, want %v", got, want)
	}
	if row.EraseAfter.Valid {
		t.Errorf("erase_after=%v, want NULL once erased", row.EraseAfter)
	}
	if got, want := row.State, StateWithdrawn; got != want {
		t.Errorf("state=%q, want %q", got, want)
	}
	if n := mustCount(t, db, `SELECT count(*) FROM entries WHERE email_key = ?`, email); n != 0 {
		t.Errorf("%d entries still hold the address", n)
	}
	if got, want := mustCount(t, db, `SELECT occupied FROM programs WHERE id = ?`, sp.Program.ID), occupied-1; got != want {
		t.Errorf("occupied=%d, want %d (a withdrawn entry frees its place)", got, want)
	}

	// Access ends in the same transaction.
	if got := mustCount(t, db, `SELECT count(*) FROM invitations WHERE id = ? AND state = 'revoked' AND terminal_at = ?`,
		issuedInvite, Millis(removedAt)); got != 1 {
		t.Errorf("the issued invitation was not revoked at the removal instant")
	}
	if got := mustCount(t, db, `SELECT count(*) FROM invitations WHERE id = ? AND state = 'redeemed'`, grantedInvite); got != 1 {
		t.Errorf("the redeemed invitation changed state")
	}
	if got := mustCount(t, db, `SELECT count(*) FROM grants WHERE id = ? AND active = 0 AND revoked_at = ?`,
		grantID, Millis(removedAt)); got != 1 {
		t.Errorf("the active grant was not revoked at the removal instant")
	}

	// The audit trail records it with no personal data.
	types, details := entryEvents(t, db, entryID)
	for _, want := range []string{"invite_revoked", "grant_revoked", "withdrawn", "erased"} {
		found := false
		for _, typ := range types {
			found = found || typ == want
		}
		if !found {
			t.Errorf("events %v lack %q", types, want)
		}
	}
	for i, d := range details {
		if strings.Contains(d, "@") || strings.Contains(d, res.RemovalToken) {
			t.Errorf("event %s details %s hold an address or the token", types[i], d)
		}
	}
	if n := mustCount(t, db, `SELECT count(*) FROM audit_events WHERE instr(details, '@') > 0`); n != 0 {
		t.Errorf("%d audit events hold an '@'", n)
	}

	// The other entry is untouched.
	if got := mustCount(t, db, `SELECT count(*) FROM entries WHERE email_key = 'staying@example.com' AND state = 'waiting'
		AND removal_hash = ?`, HashRemovalToken(bystander.RemovalToken)); got != 1 {
		t.Error("removal touched another entry")
	}

	// A second removal with the same token is a no-op and no error.
	before := dbFingerprint(t, db)
	clock.Add(time.Minute)
	if err := db.RemoveByToken(ctx, res.RemovalToken); err != nil {
		t.Fatalf("second removal: %v", err)
	}
	wantUnchanged(t, "a second removal", db, before)
	if got := mustRemovalRow(t, db, entryID); !reflect.DeepEqual(got, row) {
		t.Fatalf("second removal changed the entry:\nbefore %+v\nafter  %+v", row, got)
	}
	typesAgain, _ := entryEvents(t, db, entryID)
	if !reflect.DeepEqual(typesAgain, types) {
		t.Fatalf("second removal added events: %v, want %v", typesAgain, types)
	}
}

func TestRemoveByToken_UnknownTokenChangesNothing(t *testing.T) {
	db := MustOpenDB(t)
	sp := mustSignupProgram(t, db, "no-match", 100, 100)
	mustSignup(t, db, sp.signupReq("kept@example.com"))
	before := dbFingerprint(t, db)
	if err := db.RemoveByToken(context.Background(), strings.Repeat("0", 64)); err != nil {
		t.Fatalf("remove with an unknown token: %v", err)
	}
	wantUnchanged(t, "removal with an unknown token", db, before)
}

// TestRemoveByToken_AfterWithdrawalStillErases covers removal of an
// entry already withdrawn (which keeps its email for a while): the link
// still erases at once, and adds no second withdrawn event.
func TestRemoveByToken_AfterWithdrawalStillErases(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	sp := mustSignupProgram(t, db, "withdrawn-first", 100, 100)
	res := mustSignup(t, db, sp.signupReq("gone@example.com"))
	entryID := mustEntrySnapshot(t, db, sp.Program.ID, "gone@example.com").ID
	mustUpdate(t, db, func(tx *Tx) error {
		return db.setEntryState(ctx, tx, sp.Program.ID, entryID, StateWithdrawn, false)
	})
	if err := db.RemoveByToken(ctx, res.RemovalToken); err != nil {
		t.Fatalf("remove: %v", err)
	}
	row := mustRemovalRow(t, db, entryID)
	if row.Email != tombstone(entryID) || row.RemovalHash != nil || !row.ErasedAt.Valid || row.EraseAfter.Valid {
		t.Fatalf("entry after removal %+v, want erased", row)
	}
	types, _ := entryEvents(t, db, entryID)
	withdrawn := 0
	for _, typ := range types {
		if typ == "withdrawn" {
			withdrawn++
		}
	}
	if withdrawn != 0 {
		t.Fatalf("events %v: removal of an already withdrawn entry added a withdrawn event", types)
	}
}
