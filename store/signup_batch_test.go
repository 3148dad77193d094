package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"admit/internal/testutil"
)

// pausedBatcher replaces db's signup batcher with one whose loop has not
// started: submitted signups wait in its queue until start is called, and
// the loop then takes them all as one batch.
func pausedBatcher(tb testing.TB, db *DB) (start func()) {
	tb.Helper()
	db.signups.stop()
	b := newSignupBatcher(db, cap(db.signups.slots))
	db.signups = b
	var once sync.Once
	start = func() { once.Do(func() { go b.loop() }) }
	tb.Cleanup(start) // Close waits for the loop: it must have started
	return start
}

// waitQueued waits until n signups wait in the batcher's queue.
func waitQueued(tb testing.TB, db *DB, n int) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(db.signups.calls) != n {
		if time.Now().After(deadline) {
			tb.Fatalf("%d signups queued, want %d", len(db.signups.calls), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// batchAnswer is one signup's answer.
type batchAnswer struct {
	res *SignupResult
	err error
}

// submitInOrder submits each request from its own goroutine, one after
// another in queue order, and returns a function that waits for the answers.
func submitInOrder(tb testing.TB, db *DB, ctxs []context.Context, reqs []SignupRequest) (wait func() []batchAnswer) {
	tb.Helper()
	answers := make([]batchAnswer, len(reqs))
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := db.Signup(ctxs[i], r)
			answers[i] = batchAnswer{res, err}
		}()
		waitQueued(tb, db, i+1)
	}
	return func() []batchAnswer { wg.Wait(); return answers }
}

func TestSignup_QueuedSignupsShareACommitAndEachIsAnsweredAsIfAlone(t *testing.T) {
	db, clock := mustOpenDBWithClock(t)
	sp := mustSignupProgram(t, db, "batched", 1000, 1000)
	start := pausedBatcher(t, db)

	counter := func(bad bool) *AttemptLimit {
		return &AttemptLimit{Max: 100, Key: func(hour time.Time) []byte {
			if bad {
				return make([]byte, 31) // the counter's CHECK refuses it: this signup fails alone
			}
			return benchAttempts.Key(hour)
		}}
	}
	var reqs []SignupRequest
	for i := range 6 {
		reqs = append(reqs, sp.signupReq(fmt.Sprintf("batched-%d@example.test", i)))
	}
	bad := sp.signupReq("bad-counter@example.test")
	reqs = append(reqs,
		bad,
		sp.signupReq("batched-0@example.test"), // 7: a duplicate of 0 with a fresh key
		reqs[1],                                // 8: a same-key replay of 1
		sp.signupReq("batched-6@example.test"), // 9: after the failure, still admitted
	)
	ctxs := make([]context.Context, len(reqs))
	for i := range reqs {
		reqs[i].Attempts = counter(i == 6)
		ctxs[i] = context.Background()
	}
	wait := submitInOrder(t, db, ctxs, reqs)
	// A clock that moves on every reading: one transaction reads it once.
	clock.Step(time.Millisecond)
	start()
	answers := wait()

	for i, a := range answers {
		if i == 6 {
			if a.err == nil {
				t.Fatalf("the signup with the refused counter key got %+v, want an error", a.res)
			}
			continue
		}
		if a.err != nil {
			t.Fatalf("signup %d: %v, want a 202", i, a.err)
		}
	}
	if got := answers[7].res; got.Replay || len(got.RemovalToken) != 64 || got.RemovalToken == answers[0].res.RemovalToken {
		t.Fatalf("duplicate answered %+v, want a first 202 with its own (decoy) token", got)
	}
	if got := answers[8].res; !got.Replay || got.RemovalToken != "" {
		t.Fatalf("same-key replay answered %+v, want the stored receipt without a token", got)
	}
	if got, want := mustCount(t, db, `SELECT count(*) FROM entries WHERE program_id = ?`, sp.Program.ID), 7; got != want {
		t.Fatalf("entries=%d, want %d (the duplicate, the replay and the failure add none)", got, want)
	}
	if got, want := mustCount(t, db, `SELECT count(*) FROM audit_events WHERE program_id = ? AND event_type = 'signup'`, sp.Program.ID), 7; got != want {
		t.Fatalf("signup events=%d, want %d", got, want)
	}
	counted := mustCount(t, db, `SELECT attempts FROM network_counters WHERE key = ?`, benchAttempts.Key(hourStart(testEpoch)))
	if want := len(reqs) - 2; counted != want {
		t.Fatalf("network attempts=%d, want %d: each new key counted once, the replay not at all, the failed one rolled back", counted, want)
	}
	if got := mustCount(t, db, `SELECT count(DISTINCT created_at) FROM entries WHERE program_id = ?`, sp.Program.ID); got != 1 {
		t.Fatalf("the batch's entries have %d join times, want 1: one transaction, one Tx.Now", got)
	}
	if got := mustCount(t, db, `SELECT count(*) FROM entries WHERE email_key = 'bad-counter@example.test'`); got != 0 {
		t.Fatalf("the failed signup stored %d entries", got)
	}
}

func TestSignup_CancelledWhileQueuedStoresNothing(t *testing.T) {
	db := MustOpenDB(t)
	sp := mustSignupProgram(t, db, "cancelled", 100, 100)
	start := pausedBatcher(t, db)

	gone, cancel := context.WithCancel(context.Background())
	wait := submitInOrder(t, db, []context.Context{context.Background(), gone},
		[]SignupRequest{sp.signupReq("kept@example.test"), sp.signupReq("gone@example.test")})
	cancel()
	start()
	answers := wait()

	if answers[0].err != nil {
		t.Fatalf("kept signup: %v", answers[0].err)
	}
	if err := answers[1].err; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled signup: err=%v, want context.Canceled", err)
	}
	if got := mustCount(t, db, `SELECT count(*) FROM entries WHERE email_key = 'gone@example.test'`); got != 0 {
		t.Fatalf("the cancelled signup stored %d entries", got)
	}
	if got := mustCount(t, db, `SELECT count(*) FROM entries WHERE email_key = 'kept@example.test'`); got != 1 {
		t.Fatalf("the kept signup stored %d entries, want 1", got)
	}
}

func TestSignup_AfterCloseFailsInsteadOfWaiting(t *testing.T) {
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "admit.db"),
		Options{BindingKey: signupTestKey, Now: testutil.NewClock(testEpoch).Now})
	if err != nil {
		t.Fatal(err)
	}
	sp := mustSignupProgram(t, db, "closed-db", 100, 100)
	if err := db.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := db.Signup(context.Background(), sp.signupReq("late@example.test"))
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, errClosed) {
			t.Fatalf("signup after close: err=%v, want %v", err, errClosed)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a signup after Close is still waiting")
	}
}

// Refusals inside one batch write nothing of their own and leave the rest of
// the batch, and the attempts they counted, in the commit.
func TestSignup_RefusalsInABatchWriteNothingAndKeepTheRest(t *testing.T) {
	db := MustOpenDB(t)
	sp := mustSignupProgram(t, db, "batch-refusals", 100, 100)
	start := pausedBatcher(t, db)
	limit := &AttemptLimit{Max: 4, Key: benchAttempts.Key}
	var reqs []SignupRequest
	for i := range 6 {
		r := sp.signupReq(fmt.Sprintf("refusals-%d@example.test", i))
		r.Attempts = limit
		reqs = append(reqs, r)
	}
	reqs[1].NoticeVersion = 99 // refused by admission: counted, nothing stored
	ctxs := make([]context.Context, len(reqs))
	for i := range ctxs {
		ctxs[i] = context.Background()
	}
	wait := submitInOrder(t, db, ctxs, reqs)
	start()
	answers := wait()
	want := []string{"", ECONFLICT, "", "", ERATELIMITED, ERATELIMITED}
	for i, a := range answers {
		if got := ErrorCode(a.err); got != want[i] {
			t.Errorf("signup %d: code %q (%v), want %q", i, got, a.err, want[i])
		}
	}
	if got := mustCount(t, db, `SELECT attempts FROM network_counters WHERE key = ?`, benchAttempts.Key(hourStart(testEpoch))); got != 4 {
		t.Errorf("attempts=%d, want 4: the conflict counted, the two over the limit did not", got)
	}
	for table, n := range map[string]int{"entries": 3, "signup_receipts": 3, "audit_events WHERE event_type = 'signup'": 3} {
		if got := mustCount(t, db, `SELECT count(*) FROM `+table); got != n {
			t.Errorf("%s=%d, want %d", table, got, n)
		}
	}
}
