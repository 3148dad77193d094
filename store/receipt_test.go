package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
)

// A signup's receipt answers a replay of its request key until
// ReceiptLifetime after the request — also when the entry was removed with
// its link and erased meanwhile, so the retry does not sign the person up
// again — and the sweep deletes it when that time has come; a receipt
// accepted later stays until its own time.
func TestReceipt_AnswersReplaysForItsLifetimeThenTheSweepDeletesIt(t *testing.T) {
	db, clock := mustOpenDBWithClock(t)
	ctx := context.Background()
	sp := mustSignupProgram(t, db, "receipts", 100, 100)
	t0 := clock.Now()
	kept, removed, later := sp.signupReq("kept@example.test"), sp.signupReq("removed@example.test"), sp.signupReq("later@example.test")
	mustSignup(t, db, kept)
	token := mustSignup(t, db, removed).RemovalToken
	clock.Add(time.Minute)
	if err := db.RemoveByToken(ctx, token); err != nil {
		t.Fatalf("remove: %v", err)
	}
	clock.Set(t0.Add(time.Hour))
	mustSignup(t, db, later)
	receipts := func() int {
		return mustCount(t, db, `SELECT count(*) FROM signup_receipts WHERE program_id = ?`, sp.Program.ID)
	}

	// The last instant of the window: the sweep keeps every receipt, and
	// both replays answer from theirs, signing nobody up again.
	clock.Set(t0.Add(ReceiptLifetime - time.Millisecond))
	if _, err := db.Sweep(ctx); err != nil {
		t.Fatalf("sweep: %v", err)
	}
	for _, r := range []SignupRequest{kept, removed} {
		res, err := db.Signup(ctx, r)
		if err != nil || !res.Replay {
			t.Fatalf("replay of %s within its window: %+v, %v; want the stored 202", r.Email, res, err)
		}
	}
	if n := mustCount(t, db, `SELECT count(*) FROM entries WHERE email_key = ?`, removed.Email); n != 0 {
		t.Fatalf("the removed address is listed %d times after its replay, want 0", n)
	}
	if n := receipts(); n != 3 {
		t.Fatalf("receipts within the window=%d, want 3", n)
	}

	// The window has ended for the first two: the sweep deletes their
	// receipts, erased entry or not, and tells the eraser.
	select {
	case <-db.erasures:
	default:
	}
	clock.Set(t0.Add(ReceiptLifetime))
	if _, err := db.Sweep(ctx); err != nil {
		t.Fatalf("sweep: %v", err)
	}
	if n := receipts(); n != 1 {
		t.Fatalf("receipts after their lifetime=%d, want 1 (the later one)", n)
	}
	if n := mustCount(t, db, `SELECT count(*) FROM signup_receipts WHERE request_key = ?`, later.RequestKey); n != 1 {
		t.Fatal("the sweep deleted the receipt accepted an hour later")
	}
	select {
	case <-db.erasures:
	default:
		t.Fatal("deleting receipts did not signal the eraser: their bytes would stay in the log")
	}

	clock.Set(t0.Add(time.Hour + ReceiptLifetime))
	if _, err := db.Sweep(ctx); err != nil {
		t.Fatalf("sweep: %v", err)
	}
	if n := receipts(); n != 0 {
		t.Fatalf("receipts after the later one's lifetime=%d, want 0", n)
	}
}

// One sweep deletes every expired receipt, however many, in bounded
// transactions.
func TestReceipt_OneSweepDeletesEveryExpiredReceiptInBoundedTransactions(t *testing.T) {
	db, clock := mustOpenDBWithClock(t)
	ctx := context.Background()
	sp := mustSignupProgram(t, db, "many-receipts", 100, 100)
	const n = 2*receiptSweepBatch + 7
	err := db.Update(ctx, func(tx *Tx) error {
		for i := range n {
			if i == n-1 {
				tx.Now = tx.Now.Add(time.Second) // the last receipt a second younger
			}
			binding := bind(signupTestKey, "test receipt", uuid.NewString())
			if err := insertSignupReceipt(ctx, tx, sp.Program.ID, uuid.NewString(), binding); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("insert receipts: %v", err)
	}
	var writes int
	db.txHeld = func(time.Duration, time.Duration) { writes++ }
	clock.Set(testEpoch.Add(ReceiptLifetime))
	if _, err := db.Sweep(ctx); err != nil {
		t.Fatalf("sweep: %v", err)
	}
	if got := mustCount(t, db, `SELECT count(*) FROM signup_receipts`); got != 1 {
		t.Fatalf("receipts after the sweep=%d, want 1 (the younger one)", got)
	}
	if writes < 3 {
		t.Fatalf("the sweep deleted %d receipts in %d write transactions, want at most %d a transaction", n-1, writes, receiptSweepBatch)
	}
}
