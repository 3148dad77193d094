package store

import (
	"context"
	"testing"
	"time"
)

// rule (docs/erasure.md): an address an owner was invited by is kept only
// while the invitation can still be taken, and a removed owner's sign-in
// address goes with the membership; the name stays for the history.
func TestTeam_OwnersAddressesGoWhenNoLongerNeeded(t *testing.T) {
	ctx := context.Background()
	db, clock := mustOpenDBWithClock(t)
	cli := Actor{Kind: ActorCLI}
	count := func(query string, args ...any) int {
		t.Helper()
		var n int
		if err := db.readRow(ctx, query, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// One invitation is taken, one is left to expire.
	if _, _, err := db.AddOwnerByEmail(ctx, cli, "Team", "taken@example.com", "Ada"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.AddOwnerByEmail(ctx, cli, "Team", "left@example.com", ""); err != nil {
		t.Fatal(err)
	}
	const user = "user_taken_owner"
	if n, err := db.ClaimOwnerInvites(ctx, user, []string{"taken@example.com"}); err != nil || n != 1 {
		t.Fatalf("claim: %d, %v; want 1 place taken", n, err)
	}
	if _, err := db.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if got := count(`SELECT count(*) FROM owner_invites WHERE email_key = 'taken@example.com'`); got != 0 {
		t.Errorf("the taken invitation was kept (%d rows)", got)
	}
	if got := count(`SELECT count(*) FROM owner_invites WHERE email_key = 'left@example.com'`); got != 1 {
		t.Fatalf("the open invitation is gone before it expired (%d rows)", got)
	}

	// A millisecond before its expiry it stays; at its expiry it goes.
	var expires int64
	if err := db.readRow(ctx, `SELECT expires_at FROM owner_invites WHERE email_key = 'left@example.com'`).Scan(&expires); err != nil {
		t.Fatal(err)
	}
	clock.Set(time.UnixMilli(expires - 1).UTC())
	if _, err := db.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if got := count(`SELECT count(*) FROM owner_invites WHERE email_key = 'left@example.com'`); got != 1 {
		t.Fatalf("the invitation was deleted before it expired (%d rows)", got)
	}
	clock.Set(time.UnixMilli(expires).UTC())
	if _, err := db.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if got := count(`SELECT count(*) FROM owner_invites`); got != 0 {
		t.Fatalf("%d owner invitations kept after expiry", got)
	}

	// Removed, the owner's address goes; the name stays for the history.
	if got := count(`SELECT count(*) FROM staff_members WHERE user_id = ? AND email = 'taken@example.com'`, user); got != 1 {
		t.Fatalf("the owner's membership does not hold the address it was added by (%d rows)", got)
	}
	if err := db.RemoveOwner(ctx, cli, "Team", user); err != nil {
		t.Fatal(err)
	}
	if got := count(`SELECT count(*) FROM staff_members WHERE user_id = ? AND email IS NULL AND name = 'Ada' AND active = 0`, user); got != 1 {
		t.Fatalf("the removed owner's address was kept, or the name lost (%d rows)", got)
	}
}
