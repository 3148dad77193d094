package store

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"admit/internal/testutil"

	"github.com/google/uuid"
)

// A committed key answers from its receipt whatever changed since — here
// the network reached its hourly limit — and a replay counts no attempt.
func TestSignup_ReplayAtTheNetworkLimitAnswersFromItsReceiptAndCountsNothing(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	sp := mustSignupProgram(t, db, "replay-limit", 100, 100)
	key := bytes.Repeat([]byte{7}, 32)
	limit := &AttemptLimit{Max: 2, Key: func(time.Time) []byte { return key }}
	withLimit := func(r SignupRequest) SignupRequest { r.Attempts = limit; return r }

	first := withLimit(sp.signupReq("first@example.com"))
	mustSignup(t, db, first)
	mustSignup(t, db, withLimit(sp.signupReq("second@example.com")))
	_, err := db.Signup(ctx, withLimit(sp.signupReq("third@example.com")))
	wantCode(t, "a new key over the network limit", err, ERATELIMITED)

	before, counters := dbFingerprint(t, db), attemptsByKey(t, db)
	if got, want := counters[string(key)], 2; got != want {
		t.Fatalf("attempts=%d, want %d: the network is at its limit", got, want)
	}
	for range 3 {
		res, err := db.Signup(ctx, first)
		if err != nil {
			t.Fatalf("replay at the network limit: %v, want its 202", err)
		}
		if got, want := *res, (SignupResult{Replay: true}); got != want {
			t.Fatalf("replay result %+v, want %+v", got, want)
		}
	}
	// A key rebound to other fields is answered from the receipt too: a
	// conflict, not a rate limit, and nothing counted.
	rebound := first
	rebound.Email = "other@example.com"
	_, err = db.Signup(ctx, rebound)
	wantCode(t, "a rebound key at the network limit", err, ECONFLICT)
	wantUnchanged(t, "replays at the network limit", db, before)
}

// Below the limit too, a replay leaves the counter where it was.
func TestSignup_ReplayBelowTheLimitCountsNoAttempt(t *testing.T) {
	db := MustOpenDB(t)
	sp := mustSignupProgram(t, db, "replay-count", 100, 100)
	key := bytes.Repeat([]byte{8}, 32)
	req := sp.signupReq("once@example.com")
	req.Attempts = &AttemptLimit{Max: 10, Key: func(time.Time) []byte { return key }}
	mustSignup(t, db, req)
	before := dbFingerprint(t, db)
	if res, err := db.Signup(context.Background(), req); err != nil || !res.Replay {
		t.Fatalf("replay: %+v, %v", res, err)
	}
	wantUnchanged(t, "a replay", db, before)
	if got, want := attemptsByKey(t, db)[string(key)], 1; got != want {
		t.Fatalf("attempts=%d, want %d", got, want)
	}
}

// A denial at the queue or hour cap keeps the attempt it counted
// (docs/signup.md#what-a-refusal-keeps: count, then stop) and stores
// nothing else: no receipt, entry, event or hour increment, and no change
// to any existing row.
func TestSignup_DenialAtACapStoresNothingButItsCountedAttempt(t *testing.T) {
	for _, tc := range []struct {
		name              string
		queueCap, hourCap int
	}{
		{"queue cap full", 2, 100},
		{"hourly cap full", 100, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := MustOpenDB(t)
			sp := mustSignupProgram(t, db, "denial", tc.queueCap, tc.hourCap)
			key := bytes.Repeat([]byte{3}, 32)
			limit := &AttemptLimit{Max: 100, Key: func(time.Time) []byte { return key }}
			for _, email := range []string{"known@example.com", "other@example.com"} {
				req := sp.signupReq(email)
				req.Attempts = limit
				mustSignup(t, db, req)
			}
			for _, email := range []string{"known@example.com", "unknown@example.com"} {
				before, counters := dbFingerprint(t, db), attemptsByKey(t, db)
				req := sp.signupReq(email)
				req.Attempts = limit
				_, err := db.Signup(context.Background(), req)
				wantCode(t, email, err, ERATELIMITED)
				wantOnlyAttemptsCounted(t, "a denial of "+email, db, before, counters, key, 1)
			}
		})
	}
}

// A replay needs no write: with every write failing (the disk is full), a
// new signup fails and nothing is acknowledged, but a replay of an
// acknowledged signup key, and of owner action keys, still answers.
func TestReplays_AnswerWhileEveryWriteFails(t *testing.T) {
	sqliteOnly(t, "a full disk under the database file")
	dir, fill := testutil.MustFullDisk(t)
	db := mustOpenAt(t, filepath.Join(dir, "admit.db"), testutil.NewClock(testEpoch))
	ctx := context.Background()
	sp := mustSignupProgram(t, db, "full-disk", 100, 100)
	key := bytes.Repeat([]byte{4}, 32)
	limit := &AttemptLimit{Max: 100, Key: func(time.Time) []byte { return key }}

	signup := sp.signupReq("acknowledged@example.com")
	signup.Attempts = limit
	mustSignup(t, db, signup)
	dupReq := sp.signupReq("acknowledged@example.com") // a duplicate's 202 replays too
	dupReq.Attempts = limit
	mustSignup(t, db, dupReq)
	invited := sp.signupReq("invited@example.com")
	mustSignup(t, db, invited)
	var entryID string
	if err := db.View(ctx, func(tx *Tx) error {
		return tx.QueryRowContext(ctx, `SELECT id FROM entries WHERE email_key = ?`, "invited@example.com").Scan(&entryID)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SelectEntry(ctx, sp.Owner, sp.Program.ID, entryID, Decision{Reason: "meets_policy"}); err != nil {
		t.Fatal(err)
	}
	issueKey, deliveryKey := uuid.NewString(), uuid.NewString()
	exp := testEpoch.Add(48 * time.Hour)
	issued, err := db.IssueInvitation(ctx, sp.Owner, sp.Program.ID, entryID, NewInvitation{RequestKey: issueKey, ExpiresAt: exp})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.RecordDelivery(ctx, sp.Owner, issued.Invitation.ID, DeliveryRecord{RequestKey: deliveryKey, Channel: "email"}); err != nil {
		t.Fatal(err)
	}

	fill()
	before := dbFingerprint(t, db)
	// Precondition: writes really fail now.
	fresh := sp.signupReq("new@example.com")
	fresh.Attempts = limit
	if res, err := db.Signup(ctx, fresh); !errors.Is(err, ErrNoSpace) || ErrorCode(err) != EUNAVAILABLE {
		t.Fatalf("a new signup on a full disk: %+v, %v; want ErrNoSpace", res, err)
	}
	if _, err := db.SelectEntry(ctx, sp.Owner, sp.Program.ID, entryID, Decision{Reason: "meets_policy"}); err == nil {
		t.Fatal("an owner write on a full disk succeeded")
	}

	for _, req := range []SignupRequest{signup, dupReq} {
		res, err := db.Signup(ctx, req)
		if err != nil {
			t.Fatalf("signup replay on a full disk: %v, want its 202", err)
		}
		if !res.Replay || res.RemovalToken != "" {
			t.Fatalf("signup replay on a full disk: %+v", res)
		}
	}
	rep, err := db.IssueInvitation(ctx, sp.Owner, sp.Program.ID, entryID, NewInvitation{RequestKey: issueKey, ExpiresAt: exp})
	if err != nil || !rep.Replay || rep.Code != "" || rep.Invitation.ID != issued.Invitation.ID {
		t.Fatalf("issue replay on a full disk: %+v, %v", rep, err)
	}
	inv, err := db.RecordDelivery(ctx, sp.Owner, issued.Invitation.ID, DeliveryRecord{RequestKey: deliveryKey, Channel: "email"})
	if err != nil || inv.DeliveryRecordedAt == nil {
		t.Fatalf("delivery record replay on a full disk: %+v, %v", inv, err)
	}
	wantUnchanged(t, "replays on a full disk", db, before)
}

// Owner action keys replay whatever changed since: after the program was
// retired (its invitations revoked, signup closed), the issue and the
// delivery record keys still answer from their receipts, with the
// invitation as it now is, and change nothing.
func TestOwnerReplays_AnswerAfterTheProgramIsRetired(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	sp := mustSignupProgram(t, db, "retired-replays", 100, 100)
	mustSignup(t, db, sp.signupReq("chosen@example.com"))
	var entryID string
	if err := db.View(ctx, func(tx *Tx) error {
		return tx.QueryRowContext(ctx, `SELECT id FROM entries WHERE email_key = ?`, "chosen@example.com").Scan(&entryID)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SelectEntry(ctx, sp.Owner, sp.Program.ID, entryID, Decision{Reason: "meets_policy"}); err != nil {
		t.Fatal(err)
	}
	issueKey, deliveryKey := uuid.NewString(), uuid.NewString()
	exp := testEpoch.Add(48 * time.Hour)
	issued, err := db.IssueInvitation(ctx, sp.Owner, sp.Program.ID, entryID, NewInvitation{RequestKey: issueKey, ExpiresAt: exp})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.RecordDelivery(ctx, sp.Owner, issued.Invitation.ID, DeliveryRecord{RequestKey: deliveryKey, Channel: "email"}); err != nil {
		t.Fatal(err)
	}
	p := mustProgramByID(t, db, sp.Owner, sp.Program.ID)
	if _, err := db.RetireProgram(ctx, sp.Owner, p.ID, Retirement{ExpectedRevision: p.Revision, Confirm: p.Slug}); err != nil {
		t.Fatal(err)
	}
	mustFinishRetirements(t, db)

	before := dbFingerprint(t, db)
	rep, err := db.IssueInvitation(ctx, sp.Owner, sp.Program.ID, entryID, NewInvitation{RequestKey: issueKey, ExpiresAt: exp})
	if err != nil || !rep.Replay || rep.Code != "" || rep.Invitation.ID != issued.Invitation.ID {
		t.Fatalf("issue replay after retirement: %+v, %v", rep, err)
	}
	if rep.Invitation.State != InviteRevoked {
		t.Fatalf("issue replay shows the invitation %s, want it as it now is (revoked)", rep.Invitation.State)
	}
	inv, err := db.RecordDelivery(ctx, sp.Owner, issued.Invitation.ID, DeliveryRecord{RequestKey: deliveryKey, Channel: "email"})
	if err != nil || inv.ID != issued.Invitation.ID || inv.DeliveryRecordedAt == nil {
		t.Fatalf("delivery replay after retirement: %+v, %v", inv, err)
	}
	// A new key is refused: the program is retired.
	_, err = db.IssueInvitation(ctx, sp.Owner, sp.Program.ID, entryID, NewInvitation{RequestKey: uuid.NewString(), ExpiresAt: exp})
	wantCode(t, "a new issue after retirement", err, ECONFLICT)
	wantUnchanged(t, "owner replays after retirement", db, before)
}
