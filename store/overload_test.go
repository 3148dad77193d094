package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"admit/internal/testutil"
)

// mustOpenQueues opens a database whose signup queue and write reserve
// hold signupQueue and reserve.
func mustOpenQueues(tb testing.TB, signupQueue, reserve int) *DB {
	tb.Helper()
	clock := testutil.NewClock(testEpoch.Add(10 * time.Minute))
	return mustOpenWith(tb, filepath.Join(tb.TempDir(), "admit.db"), Options{BindingKey: signupTestKey,
		Now: clock.Now, SignupQueue: signupQueue, WriteReserve: reserve})
}

// mustHoldWriter takes the writer with a transaction that writes nothing
// and waits until release is called; every other write waits meanwhile.
// The hold takes one slot of the write reserve.
func mustHoldWriter(tb testing.TB, db *DB) (release func()) {
	tb.Helper()
	held, free, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- db.Update(context.Background(), func(*Tx) error {
			close(held)
			<-free
			return nil
		})
	}()
	select {
	case <-held:
	case err := <-done:
		tb.Fatalf("hold the writer: %v", err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			close(free)
			if err := <-done; err != nil {
				tb.Errorf("the held transaction: %v", err)
			}
		})
	}
	tb.Cleanup(release)
	return release
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestSignup_PastTheQueueBoundIsBusyAtOnceAndWritesNothing(t *testing.T) {
	const n, depth = 300, 40
	db := mustOpenQueues(t, depth, 0)
	sp := mustSignupProgram(t, db, "overload", 10000, 10000)
	release := mustHoldWriter(t, db)
	before := dbFingerprint(t, db)

	reqs := make([]SignupRequest, n)
	errs := make([]error, n)
	var busy atomic.Int64
	var wg sync.WaitGroup
	for i := range reqs {
		reqs[i] = sp.signupReq(fmt.Sprintf("queued%03d@example.com", i))
		reqs[i].Attempts = benchAttempts
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = db.Signup(context.Background(), reqs[i])
			if errors.Is(errs[i], ErrBusy) {
				busy.Add(1)
			}
		}()
	}
	// With the writer held, the ones past the bound are answered without
	// waiting for it; the rest wait.
	waitFor(t, "every signup to be queued or refused", func() bool {
		return busy.Load() == n-depth && db.SignupsWaiting() == depth
	})
	wantUnchanged(t, "signups waiting for a held writer", db, before)
	release()
	wg.Wait()

	var admitted []int
	for i, err := range errs {
		switch {
		case err == nil:
			admitted = append(admitted, i)
		case errors.Is(err, ErrBusy):
			wantCode(t, "a refused signup", err, EUNAVAILABLE)
		default:
			t.Fatalf("signup %d: %v, want an admission or ErrBusy", i, err)
		}
	}
	if got, want := len(admitted), depth; got != want {
		t.Fatalf("admitted %d, want exactly %d (the queue's depth)", got, want)
	}
	if got := busy.Load(); got != n-depth {
		t.Fatalf("refused %d, want %d", got, n-depth)
	}
	if got, want := mustCount(t, db, `SELECT count(*) FROM entries WHERE program_id = ?`, sp.Program.ID), depth; got != want {
		t.Fatalf("entries=%d, want %d", got, want)
	}
	if got, want := mustCount(t, db, `SELECT count(*) FROM signup_receipts WHERE program_id = ?`, sp.Program.ID), depth; got != want {
		t.Fatalf("receipts=%d, want %d: a refused signup leaves no receipt", got, want)
	}
	// rule: a refused signup does not spend the network's attempts.
	if got, want := mustCount(t, db, `SELECT attempts FROM network_counters WHERE key = ?`,
		benchAttempts.Key(hourStart(testEpoch))), depth; got != want {
		t.Fatalf("network attempts=%d, want %d", got, want)
	}
	if got := db.SignupsWaiting(); got != 0 {
		t.Fatalf("%d signups still hold a place in the queue after every answer", got)
	}
	// A refused signup is sent again with the same key and is admitted:
	// nothing of it was stored.
	for i, err := range errs {
		if err != nil {
			if res := mustSignup(t, db, reqs[i]); res.Replay {
				t.Fatalf("the retried signup %d was answered as a replay", i)
			}
			break
		}
	}
}

func TestUpdate_PastTheReserveIsBusyAtOnceAndSignupsDoNotTakeIt(t *testing.T) {
	const n, depth, reserve = 50, 5, 4
	db := mustOpenQueues(t, depth, reserve)
	sp := mustSignupProgram(t, db, "reserve", 10000, 10000)
	release := mustHoldWriter(t, db) // takes one slot of the reserve

	// Fill the signup queue and refuse more: the reserve stays free.
	var wg sync.WaitGroup
	var signupBusy atomic.Int64
	for i := range depth + 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := db.Signup(context.Background(), sp.signupReq(fmt.Sprintf("s%02d@example.com", i))); errors.Is(err, ErrBusy) {
				signupBusy.Add(1)
			}
		}()
	}
	waitFor(t, "the signup queue to fill", func() bool { return signupBusy.Load() == 10 && db.SignupsWaiting() == depth })

	// Owner writes: the reserve's free slots wait, the rest are refused.
	errs := make([]error, n)
	var busy atomic.Int64
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = db.Update(context.Background(), func(tx *Tx) error {
				_, err := tx.ExecContext(context.Background(), `UPDATE programs SET updated_at = updated_at + 1 WHERE id = ?`, sp.Program.ID)
				return err
			})
			if errors.Is(errs[i], ErrBusy) {
				busy.Add(1)
			}
		}()
	}
	waitFor(t, "the owner writes to be queued or refused", func() bool {
		return busy.Load() == n-(reserve-1) && db.WritesWaiting() == reserve
	})
	release()
	wg.Wait()
	var done int
	for _, err := range errs {
		if err == nil {
			done++
		} else if !errors.Is(err, ErrBusy) {
			t.Fatalf("owner write: %v, want success or ErrBusy", err)
		}
	}
	if got, want := done, reserve-1; got != want {
		t.Fatalf("owner writes done=%d, want %d", got, want)
	}
	p := mustProgramByID(t, db, sp.Owner, sp.Program.ID)
	if got, want := p.UpdatedAt, sp.Program.UpdatedAt.Add(time.Duration(reserve-1)*time.Millisecond); !got.Equal(want) {
		t.Fatalf("updated_at moved to %v, want %v: exactly the waiting writes ran", got, want)
	}
	if got, want := mustCount(t, db, `SELECT count(*) FROM entries WHERE program_id = ?`, sp.Program.ID), depth; got != want {
		t.Fatalf("entries=%d, want %d", got, want)
	}
}
