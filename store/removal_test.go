package store

import (
	"context"
	"database/sql"
	"reflect"
	"slices"
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

// mustRedeemedGrant takes a waiting entry to active through the store's
// operations — selection, an invitation with its send recorded, redemption
// by userID with email verified — and returns the invitation and grant IDs.
func mustRedeemedGrant(tb testing.TB, db *DB, sp signupProgram, entryID, email, userID string) (invitationID, grantID string) {
	tb.Helper()
	ctx := context.Background()
	if _, err := db.SelectEntry(ctx, sp.Owner, sp.Program.ID, entryID, Decision{Reason: "meets_policy"}); err != nil {
		tb.Fatalf("select: %v", err)
	}
	res, err := db.IssueInvitation(ctx, sp.Owner, sp.Program.ID, entryID, NewInvitation{RequestKey: uuid.NewString(), ExpiresAt: db.Now().Add(24 * time.Hour)})
	if err != nil {
		tb.Fatalf("issue: %v", err)
	}
	if _, err := db.RecordDelivery(ctx, sp.Owner, res.Invitation.ID, DeliveryRecord{RequestKey: uuid.NewString(), Channel: "email"}); err != nil {
		tb.Fatalf("record delivery: %v", err)
	}
	red, err := db.Redeem(ctx, userID, []string{email}, res.Code)
	if err != nil {
		tb.Fatalf("redeem: %v", err)
	}
	return res.Invitation.ID, red.GrantID
}

func TestRemoveByToken_ErasesTheEmailWithdrawsAndRevokesAccess(t *testing.T) {
	db, clock := mustOpenDBWithClock(t)
	ctx := context.Background()
	sp := mustSignupProgram(t, db, "removal", 100, 100)
	const email = "Leaving.Person@example.com"
	res := mustSignup(t, db, sp.signupReq(email))
	bystander := mustSignup(t, db, sp.signupReq("staying@example.com"))
	entryID := mustEntrySnapshot(t, db, sp.Program.ID, email).ID

	// The entry holds an active grant, reached as in production: selected,
	// invited (the send recorded) and redeemed. A second entry holds an
	// issued invitation. Removal must end each.
	grantedInvite, grantID := mustRedeemedGrant(t, db, sp, entryID, email, "user_leaving")
	invitedEmail := "invited.leaving@example.com"
	invitedRes := mustSignup(t, db, sp.signupReq(invitedEmail))
	invitedID := mustEntrySnapshot(t, db, sp.Program.ID, invitedEmail).ID
	if _, err := db.SelectEntry(ctx, sp.Owner, sp.Program.ID, invitedID, Decision{Reason: "meets_policy"}); err != nil {
		t.Fatalf("select: %v", err)
	}
	issued, err := db.IssueInvitation(ctx, sp.Owner, sp.Program.ID, invitedID, NewInvitation{RequestKey: uuid.NewString(), ExpiresAt: clock.Now().Add(24 * time.Hour)})
	if err != nil {
		t.Fatalf("issue: %v", err)
	}
	issuedInvite := issued.Invitation.ID
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
	if got := mustCount(t, db, `SELECT count(*) FROM invitations WHERE id = ? AND state = 'redeemed'`, grantedInvite); got != 1 {
		t.Errorf("the redeemed invitation changed state")
	}
	if got := mustCount(t, db, `SELECT count(*) FROM grants WHERE id = ? AND active = 0 AND revoked_at = ?`,
		grantID, Millis(removedAt)); got != 1 {
		t.Errorf("the active grant was not revoked at the removal instant")
	}

	// The audit trail records it with no personal data.
	types, details := entryEvents(t, db, entryID)
	for _, want := range []string{"grant_revoked", "withdrawn", "erased"} {
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
	if n := mustCount(t, db, `SELECT count(*) FROM audit_events WHERE details LIKE '%@%'`); n != 0 {
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

	// The invited entry's removal revokes its issued invitation at once.
	clock.Add(time.Minute)
	invitedRemovedAt := clock.Now()
	if err := db.RemoveByToken(ctx, invitedRes.RemovalToken); err != nil {
		t.Fatalf("remove the invited entry: %v", err)
	}
	if got := mustCount(t, db, `SELECT count(*) FROM invitations WHERE id = ? AND state = 'revoked' AND terminal_at = ?`,
		issuedInvite, Millis(invitedRemovedAt)); got != 1 {
		t.Errorf("the issued invitation was not revoked at the removal instant")
	}
	invitedTypes, _ := entryEvents(t, db, invitedID)
	for _, want := range []string{"invite_revoked", "withdrawn", "erased"} {
		if !slices.Contains(invitedTypes, want) {
			t.Errorf("invited entry's events %v lack %q", invitedTypes, want)
		}
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
