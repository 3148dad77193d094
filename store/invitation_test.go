package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"admit/internal/testutil"
)

// mustIssueOK issues an invitation and fails the test on error.
func (k ownerKit) mustIssueOK(t *testing.T, entryID string, expires time.Time) *IssueResult {
	t.Helper()
	res, err := k.db.IssueInvitation(context.Background(), k.a, k.p.ID, entryID, NewInvitation{RequestKey: uuid.NewString(), ExpiresAt: expires})
	if err != nil {
		t.Fatalf("issue: %v", err)
	}
	return res
}

func TestIssueInvitation_TwoConcurrentIssuesForTheLastSeatExactlyOneSucceeds(t *testing.T) {
	for round := 0; round < 10; round++ {
		dir := t.TempDir()
		path := filepath.Join(dir, "admit.db")
		clock := testutil.NewClock(testEpoch)
		// Two stores on one file: two writer connections contending for
		// the database lock, as two processes would.
		db1, db2 := mustOpenAt(t, path, clock), mustOpenAt(t, path, clock)
		a, w := mustOwner(t, db1)
		np := newTestProgram(w, "last-seat")
		np.SeatCap = 2
		p, err := db1.CreateProgram(context.Background(), a, np)
		if err != nil {
			t.Fatal(err)
		}
		mustNotice(t, db1, a, p.ID)
		taken, e1, e2 := mustEntryVia(t, db1, a, p.ID, StateSelected), mustEntryVia(t, db1, a, p.ID, StateSelected),
			mustEntryVia(t, db1, a, p.ID, StateSelected)
		if _, err := db1.IssueInvitation(context.Background(), a, p.ID, taken, NewInvitation{RequestKey: uuid.NewString(), ExpiresAt: testEpoch.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}

		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make([]error, 2)
		for i, tc := range []struct {
			db    *DB
			entry string
		}{{db1, e1}, {db2, e2}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[i] = tc.db.IssueInvitation(context.Background(), a, p.ID, tc.entry, NewInvitation{RequestKey: uuid.NewString(), ExpiresAt: testEpoch.Add(time.Hour)})
			}()
		}
		close(start)
		wg.Wait()
		ok, conflicts := 0, 0
		for _, err := range errs {
			switch ErrorCode(err) {
			case "":
				ok++
			case ECONFLICT:
				conflicts++
			default:
				t.Fatalf("round %d: unexpected error %v", round, err)
			}
		}
		if ok != 1 || conflicts != 1 {
			t.Fatalf("round %d: %d issued and %d refused, want exactly 1 and 1", round, ok, conflicts)
		}
		if got := mustCount(t, db1, `SELECT count(*) FROM invitations WHERE program_id = ? AND state = 'issued'`, p.ID); got != 2 {
			t.Fatalf("round %d: issued invitations=%d, want the seat cap 2", round, got)
		}
		if got := mustCount(t, db1, `SELECT count(*) FROM entries WHERE program_id = ? AND state = 'invited'`, p.ID); got != 2 {
			t.Fatalf("round %d: invited entries=%d, want 2", round, got)
		}
	}
}

func TestIssueInvitation_NeitherTheCodeNorItsBytesReachTheDatabaseFiles(t *testing.T) {
	sqliteOnly(t, "the database files")
	k := mustOwnerKit(t, "digest-only", 5)
	e := k.entry(t, StateSelected)
	res := k.mustIssueOK(t, e, k.clock.Now().Add(time.Hour))
	if len(res.Code) != CodeLength || res.Replay {
		t.Fatalf("first issue: code %q replay %v", res.Code, res.Replay)
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(res.Code)
	if err != nil || len(raw) != 32 {
		t.Fatalf("code is not 32 bytes of base64url: %v", err)
	}
	sum := sha256.Sum256(raw)
	if n := mustCount(t, k.db, `SELECT count(*) FROM invitations WHERE id = ? AND code_digest = ?`, res.Invitation.ID, sum[:]); n != 1 {
		t.Fatal("the stored digest is not the SHA-256 of the code's bytes")
	}
	// Neither the code nor its bytes are anywhere in the database files.
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(k.db.Path + suffix)
		if err != nil && suffix == "" {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(res.Code)) || bytes.Contains(b, raw) {
			t.Fatalf("the code is stored in %s", k.db.Path+suffix)
		}
	}
	if n := mustCount(t, k.db, `SELECT count(*) FROM audit_events WHERE details LIKE ?`, "%"+res.Code+"%"); n != 0 {
		t.Fatal("an audit event holds the code")
	}
}

func TestIssueInvitation_SameKeyReplaysMetadataWithoutCodeEvenAfterStateChanges(t *testing.T) {
	k := mustOwnerKit(t, "replays", 5)
	ctx := context.Background()
	e, other := k.entry(t, StateSelected), k.entry(t, StateSelected)
	key := uuid.NewString()
	exp := k.clock.Now().Add(2 * time.Hour)
	var first *IssueResult
	if got := auditDelta(t, k.db, func() {
		var err error
		if first, err = k.db.IssueInvitation(ctx, k.a, k.p.ID, e, NewInvitation{RequestKey: key, ExpiresAt: exp}); err != nil {
			t.Fatal(err)
		}
	}); got != 1 {
		t.Fatalf("issue audit events=%d, want 1", got)
	}
	replay := func(what string) *IssueResult {
		t.Helper()
		var res *IssueResult
		wantUnchangedBy(t, what, k.db, func() {
			var err error
			if res, err = k.db.IssueInvitation(ctx, k.a, k.p.ID, e, NewInvitation{RequestKey: key, ExpiresAt: exp}); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		})
		if !res.Replay || res.Code != "" || res.Invitation.ID != first.Invitation.ID {
			t.Fatalf("%s: %+v, want the same invitation, marked replay, without a code", what, res)
		}
		return res
	}
	replay("replay")
	// The key is read before any state check: after a revoke the same
	// request still answers with the (now revoked) invitation.
	k.clock.Add(time.Minute)
	if _, err := k.db.RevokeInvitation(ctx, k.a, first.Invitation.ID); err != nil {
		t.Fatal(err)
	}
	if got := replay("replay after revoke"); got.Invitation.State != InviteRevoked {
		t.Fatalf("replay after revoke shows %q", got.Invitation.State)
	}
	// Another binding for the same key is a conflict.
	_, err := k.db.IssueInvitation(ctx, k.a, k.p.ID, e, NewInvitation{RequestKey: key, ExpiresAt: exp.Add(time.Millisecond)})
	wantErrorCode(t, "same key, other expiry", err, ECONFLICT)
	_, err = k.db.IssueInvitation(ctx, k.a, k.p.ID, other, NewInvitation{RequestKey: key, ExpiresAt: exp})
	wantErrorCode(t, "same key, other entry", err, ECONFLICT)
	if n := mustCount(t, k.db, `SELECT count(*) FROM invitations WHERE program_id = ?`, k.p.ID); n != 1 {
		t.Fatalf("invitations=%d, want 1", n)
	}
	_, err = k.db.IssueInvitation(ctx, k.a, k.p.ID, e, NewInvitation{RequestKey: "NOT-A-UUID", ExpiresAt: exp})
	wantErrorCode(t, "malformed key", err, EINVALID)
	_, err = k.db.IssueInvitation(ctx, k.a, k.p.ID, e, NewInvitation{RequestKey: strings.ToUpper(uuid.NewString()), ExpiresAt: exp})
	wantErrorCode(t, "uppercase key", err, EINVALID)
}

func TestIssueInvitation_ExpiryIsJudgedByTheTransactionClock(t *testing.T) {
	k := mustOwnerKit(t, "expiry-clock", 1)
	ctx := context.Background()
	now := k.clock.Now()
	max := now.Add(time.Duration(k.p.MaxInvitationDays) * 24 * time.Hour)
	a, b := k.entry(t, StateSelected), k.entry(t, StateSelected)

	for _, tc := range []struct {
		name string
		at   time.Time
	}{{"now", now}, {"past", now.Add(-time.Second)}, {"a millisecond past the maximum", max.Add(time.Millisecond)}} {
		_, err := k.db.IssueInvitation(ctx, k.a, k.p.ID, a, NewInvitation{RequestKey: uuid.NewString(), ExpiresAt: tc.at})
		wantErrorCode(t, "expiry "+tc.name, err, EINVALID)
	}
	exp := now.Add(time.Hour)
	res := k.mustIssueOK(t, a, exp)

	// One millisecond before expiry the seat is taken and the code live.
	k.clock.Set(exp.Add(-time.Millisecond))
	_, err := k.db.IssueInvitation(ctx, k.a, k.p.ID, b, NewInvitation{RequestKey: uuid.NewString(), ExpiresAt: exp.Add(time.Hour)})
	wantErrorCode(t, "the only seat is taken", err, ECONFLICT)
	_, err = k.db.IssueInvitation(ctx, k.a, k.p.ID, a, NewInvitation{RequestKey: uuid.NewString(), ExpiresAt: exp.Add(time.Hour)})
	wantErrorCode(t, "reissue while live", err, ECONFLICT)

	// At the expiry instant: no send can be recorded, the seat is free.
	k.clock.Set(exp)
	_, err = k.db.RecordDelivery(ctx, k.a, res.Invitation.ID, DeliveryRecord{RequestKey: uuid.NewString(), Channel: "email"})
	wantErrorCode(t, "record a send at expiry", err, ECONFLICT)
	p := mustProgramByID(t, k.db, k.a, k.p.ID)
	one := 1
	if _, err := k.db.UpdateProgram(ctx, k.a, p.ID, ProgramSettings{ExpectedRevision: p.Revision, SeatCap: &one}); err != nil {
		t.Fatalf("seat cap 1 with only an expired invitation: %v", err)
	}
	// Reissuing marks the old one expired (with its event) and issues anew.
	var again *IssueResult
	if got := auditDelta(t, k.db, func() { again = k.mustIssueOK(t, a, exp.Add(time.Hour)) }); got != 2 {
		t.Fatalf("reissue audit events=%d, want 2 (invite_expired, invite_issued)", got)
	}
	var state string
	var terminal int64
	mustUpdate(t, k.db, func(tx *Tx) error {
		return tx.QueryRowContext(ctx, `SELECT state, terminal_at FROM invitations WHERE id = ?`, res.Invitation.ID).Scan(&state, &terminal)
	})
	if state != InviteExpired || terminal != Millis(exp) {
		t.Fatalf("old invitation %s at %d, want expired at the transaction clock %d", state, terminal, Millis(exp))
	}
	if again.Invitation.ID == res.Invitation.ID || k.state(t, a) != StateInvited {
		t.Fatal("reissue did not make a new invitation for the invited entry")
	}
	if n := mustCount(t, k.db, `SELECT count(*) FROM audit_events WHERE event_type = 'invite_expired' AND actor_kind = 'system'`); n != 1 {
		t.Fatalf("invite_expired events by the system=%d, want 1", n)
	}
}

func TestRecordDelivery_OnceAndIdempotentByKey(t *testing.T) {
	k := mustOwnerKit(t, "delivery", 5)
	ctx := context.Background()
	res := k.mustIssueOK(t, k.entry(t, StateSelected), k.clock.Now().Add(time.Hour))
	key := uuid.NewString()
	var inv *Invitation
	if got := auditDelta(t, k.db, func() {
		var err error
		if inv, err = k.db.RecordDelivery(ctx, k.a, res.Invitation.ID, DeliveryRecord{RequestKey: key, Channel: "  email  ", Reference: "msg 4"}); err != nil {
			t.Fatal(err)
		}
	}); got != 1 {
		t.Fatalf("audit events=%d, want 1", got)
	}
	if inv.DeliveryRecordedAt == nil || !inv.DeliveryRecordedAt.Equal(k.clock.Now()) || inv.DeliveryChannel != "email" || inv.DeliveryReference != "msg 4" {
		t.Fatalf("read-back %+v", inv)
	}
	wantUnchangedBy(t, "replay", k.db, func() {
		again, err := k.db.RecordDelivery(ctx, k.a, res.Invitation.ID, DeliveryRecord{RequestKey: key, Channel: "email", Reference: "msg 4"})
		if err != nil || again.DeliveryChannel != "email" {
			t.Fatalf("replay: %+v %v", again, err)
		}
	})
	_, err := k.db.RecordDelivery(ctx, k.a, res.Invitation.ID, DeliveryRecord{RequestKey: key, Channel: "sms"})
	wantErrorCode(t, "same key, other channel", err, ECONFLICT)
	_, err = k.db.RecordDelivery(ctx, k.a, res.Invitation.ID, DeliveryRecord{RequestKey: uuid.NewString(), Channel: "sms"})
	wantErrorCode(t, "second record", err, ECONFLICT)
	for _, tc := range []struct{ name, channel, ref string }{
		{"empty channel", " ", ""}, {"long channel", strings.Repeat("c", 81), ""}, {"long reference", "email", strings.Repeat("r", 161)},
	} {
		_, err = k.db.RecordDelivery(ctx, k.a, res.Invitation.ID, DeliveryRecord{RequestKey: uuid.NewString(), Channel: tc.channel, Reference: tc.ref})
		wantErrorCode(t, tc.name, err, EINVALID)
	}
	stranger, _ := mustOwner(t, k.db)
	_, err = k.db.RecordDelivery(ctx, stranger, res.Invitation.ID, DeliveryRecord{RequestKey: uuid.NewString(), Channel: "email"})
	wantErrorCode(t, "foreign owner", err, ENOTFOUND)
}

func TestRevokeInvitation_SelectsTheEntryAgainAndFreesTheSeat(t *testing.T) {
	k := mustOwnerKit(t, "revoke-invite", 1)
	ctx := context.Background()
	a, b := k.entry(t, StateSelected), k.entry(t, StateSelected)
	res := k.mustIssueOK(t, a, k.clock.Now().Add(time.Hour))
	stranger, _ := mustOwner(t, k.db)
	_, err := k.db.RevokeInvitation(ctx, stranger, res.Invitation.ID)
	wantErrorCode(t, "foreign owner", err, ENOTFOUND)
	var inv *Invitation
	if got := auditDelta(t, k.db, func() {
		if inv, err = k.db.RevokeInvitation(ctx, k.a, res.Invitation.ID); err != nil {
			t.Fatal(err)
		}
	}); got != 1 {
		t.Fatalf("audit events=%d, want 1", got)
	}
	if inv.State != InviteRevoked || inv.TerminalAt == nil || k.state(t, a) != StateSelected {
		t.Fatalf("after revoke: %+v, entry %s", inv, k.state(t, a))
	}
	_, err = k.db.RevokeInvitation(ctx, k.a, res.Invitation.ID)
	wantErrorCode(t, "revoke twice", err, ECONFLICT)
	k.mustIssueOK(t, b, k.clock.Now().Add(time.Hour)) // the seat is free again
}

func TestRevokeGrant_EndsAccessOnceAndOnlyForItsOwner(t *testing.T) {
	k := mustOwnerKit(t, "revoke-grant", 2)
	ctx := context.Background()
	e := k.entry(t, StateSelected)
	res := k.mustIssueOK(t, e, k.clock.Now().Add(time.Hour))
	var email string
	mustUpdate(t, k.db, func(tx *Tx) error {
		return tx.QueryRowContext(ctx, `SELECT email_key FROM entries WHERE id = ?`, e).Scan(&email)
	})
	if _, err := k.db.RecordDelivery(ctx, k.a, res.Invitation.ID, DeliveryRecord{RequestKey: uuid.NewString(), Channel: "email"}); err != nil {
		t.Fatal(err)
	}
	red, err := k.db.Redeem(ctx, "user_grant", []string{email}, res.Code)
	if err != nil {
		t.Fatal(err)
	}
	stranger, _ := mustOwner(t, k.db)
	_, err = k.db.RevokeGrant(ctx, stranger, red.GrantID)
	wantErrorCode(t, "foreign owner", err, ENOTFOUND)
	_, err = k.db.RevokeGrant(ctx, k.a, "not-a-uuid")
	wantErrorCode(t, "malformed ID", err, ENOTFOUND)
	k.clock.Add(time.Minute)
	var g *Grant
	if got := auditDelta(t, k.db, func() {
		if g, err = k.db.RevokeGrant(ctx, k.a, red.GrantID); err != nil {
			t.Fatal(err)
		}
	}); got != 1 {
		t.Fatalf("audit events=%d, want 1", got)
	}
	if g.Active || g.RevokedAt == nil || !g.RevokedAt.Equal(k.clock.Now()) || k.state(t, e) != StateRevoked {
		t.Fatalf("after revoke: %+v, entry %s", g, k.state(t, e))
	}
	_, err = k.db.RevokeGrant(ctx, k.a, red.GrantID)
	wantErrorCode(t, "revoke twice", err, ECONFLICT)
	if n := mustCount(t, k.db, `SELECT count(*) FROM audit_events WHERE details LIKE '%@%'`); n != 0 {
		t.Fatal("an audit event holds an address")
	}
}

func TestInvitationStateAt_AnIssuedInvitationIsExpiredFromItsExpiryOn(t *testing.T) {
	exp := testEpoch.Add(time.Hour)
	for _, tc := range []struct {
		state string
		at    time.Time
		want  string
	}{
		{InviteIssued, exp.Add(-time.Millisecond), InviteIssued},
		{InviteIssued, exp, InviteExpired},
		{InviteIssued, exp.Add(time.Hour), InviteExpired},
		{InviteRedeemed, exp.Add(time.Hour), InviteRedeemed},
		{InviteRevoked, exp.Add(time.Hour), InviteRevoked},
		{InviteExpired, exp.Add(-time.Hour), InviteExpired},
	} {
		inv := &Invitation{State: tc.state, ExpiresAt: exp}
		if got := inv.StateAt(tc.at); got != tc.want {
			t.Errorf("%s invitation at expiry%+v: state %q, want %q", tc.state, tc.at.Sub(exp), got, tc.want)
		}
	}
}

// Issues of one request key that all read "no receipt" before any of them
// took the write lock are one issue: the first issues, every other one is
// its replay — never a conflict with the invitation the first one made.
func TestIssueInvitation_ConcurrentSameKeyIssuesReplayTheFirst(t *testing.T) {
	db := mustOpenQueues(t, 64, 64)
	sp := mustSignupProgram(t, db, "same-key", 100, 100)
	entry := mustEntryVia(t, db, sp.Owner, sp.Program.ID, StateSelected)
	ni := NewInvitation{RequestKey: uuid.NewString(), ExpiresAt: testEpoch.Add(10*time.Minute + 24*time.Hour)}
	const n = 8
	release := mustHoldWriter(t, db)
	type outcome struct {
		res *IssueResult
		err error
	}
	results := make(chan outcome, n)
	for range n {
		go func() {
			res, err := db.IssueInvitation(context.Background(), sp.Owner, sp.Program.ID, entry, ni)
			results <- outcome{res, err}
		}()
	}
	// Every issue has read its key before the lock (no receipt yet) and now
	// waits for the writer beside the hold.
	deadline := time.Now().Add(10 * time.Second)
	for db.WritesWaiting() < n+1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d writes waiting, want %d", db.WritesWaiting(), n+1)
		}
		time.Sleep(time.Millisecond)
	}
	release()
	var issued, replays int
	ids := map[string]bool{}
	for range n {
		o := <-results
		if o.err != nil {
			t.Fatalf("a same-key issue failed: %v (code %q)", o.err, ErrorCode(o.err))
		}
		if o.res.Replay {
			replays++
		} else {
			issued++
		}
		ids[o.res.Invitation.ID] = true
	}
	if issued != 1 || replays != n-1 || len(ids) != 1 {
		t.Fatalf("issued=%d replays=%d invitations=%d; want 1, %d and 1", issued, replays, len(ids), n-1)
	}
	if got := mustCount(t, db, `SELECT count(*) FROM invitations WHERE entry_id = ?`, entry); got != 1 {
		t.Fatalf("%d invitations stored, want 1", got)
	}
}
