package store

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"admit/internal/testutil"
)

// recordingObserver counts what the store tells it.
type recordingObserver struct {
	mu                       sync.Mutex
	waits, batches, batched  int
	signups, invites, failed map[string]int
	sweeps, erased           int
	holds                    int
	commits, emptyCommits    int
	longest                  time.Duration
}

func newRecordingObserver() *recordingObserver {
	return &recordingObserver{signups: map[string]int{}, invites: map[string]int{}, failed: map[string]int{}}
}

func (o *recordingObserver) WriteLockWait(time.Duration) { o.mu.Lock(); o.waits++; o.mu.Unlock() }
func (o *recordingObserver) WriteLockHeld(d time.Duration) {
	o.mu.Lock()
	o.holds++
	o.longest = max(o.longest, d)
	o.mu.Unlock()
}
func (o *recordingObserver) WriteCommit(d time.Duration) {
	o.mu.Lock()
	o.commits++
	if d <= 0 {
		o.emptyCommits++
	}
	o.mu.Unlock()
}
func (o *recordingObserver) SignupBatch(n int) {
	o.mu.Lock()
	o.batches++
	o.batched += n
	o.mu.Unlock()
}
func (o *recordingObserver) Signup(outcome string)     { o.mu.Lock(); o.signups[outcome]++; o.mu.Unlock() }
func (o *recordingObserver) Invitation(event string)   { o.mu.Lock(); o.invites[event]++; o.mu.Unlock() }
func (o *recordingObserver) RedemptionFailed(r string) { o.mu.Lock(); o.failed[r]++; o.mu.Unlock() }
func (o *recordingObserver) Sweep(n int)               { o.mu.Lock(); o.sweeps++; o.erased += n; o.mu.Unlock() }

func TestObserver_IsToldEveryOutcomeOnceAfterItsCommit(t *testing.T) {
	obs := newRecordingObserver()
	clock := testutil.NewClock(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	db := mustOpenWith(t, filepath.Join(t.TempDir(), "admit.db"), Options{BindingKey: signupTestKey, Now: clock.Now, Observer: obs})
	a, w := mustOwner(t, db)
	f := &accessFixture{db: db, clock: clock, owner: a, ws: w}
	p := f.program(t, "observed", "private")
	ctx := context.Background()
	req := func(email string) SignupRequest {
		return SignupRequest{Slug: p.Slug, RequestKey: uuid.NewString(), Email: email, NoticeVersion: 1, Permission: true}
	}

	// 16 concurrent signups against an hourly cap of 10: each is told once,
	// 10 accepted and 6 refused by the cap.
	var wg sync.WaitGroup
	var mu sync.Mutex
	full := 0
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := db.Signup(ctx, req("obs"+string(rune('a'+i))+"@example.com"))
			mu.Lock()
			defer mu.Unlock()
			if ErrorCode(err) == ERATELIMITED {
				full++
			} else if err != nil {
				t.Errorf("signup %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if full != 6 {
		t.Fatalf("%d signups refused by the hourly cap of 10, want 6", full)
	}
	p = mustSetProgram(t, db, a, p.ID, func(s *ProgramSettings) { s.HourlyCap = ptrTo(100) })
	first := req("obs-dup@example.com")
	if _, err := db.Signup(ctx, first); err != nil {
		t.Fatal(err)
	}
	first.RequestKey = uuid.NewString() // the same address again: a duplicate
	if _, err := db.Signup(ctx, first); err != nil {
		t.Fatal(err)
	}
	if res, err := db.Signup(ctx, first); err != nil || !res.Replay {
		t.Fatalf("replay: %+v %v", res, err)
	}
	if _, err := db.Signup(ctx, req("not an address")); ErrorCode(err) != EINVALID {
		t.Fatalf("invalid: %v", err)
	}
	limited := req("obs-limited@example.com")
	limited.Attempts = &AttemptLimit{Max: 0, Key: func(time.Time) []byte { return []byte("k") }}
	if _, err := db.Signup(ctx, limited); ErrorCode(err) != ERATELIMITED {
		t.Fatalf("network limit: %v", err)
	}
	stale := req("obs-stale@example.com")
	stale.NoticeVersion = 99
	if _, err := db.Signup(ctx, stale); ErrorCode(err) != ECONFLICT {
		t.Fatalf("stale notice: %v", err)
	}

	// Invitations: issued twice, one redeemed, one revoked; a wrong code fails.
	code, _, _ := f.invite(t, p, "obs-invited@example.com", true)
	if _, err := db.Redeem(ctx, "user_obs", []string{"obs-invited@example.com"}, code); err != nil {
		t.Fatalf("redeem: %v", err)
	}
	if _, err := db.Redeem(ctx, "user_obs", []string{"obs-invited@example.com"}, code); err == nil {
		t.Fatal("a second redemption of one code succeeded")
	}
	_, _, invID := f.invite(t, p, "obs-revoked@example.com", false)
	if _, err := db.RevokeInvitation(ctx, a, invID); err != nil {
		t.Fatalf("revoke: %v", err)
	}

	// A withdrawn entry is erased by the sweep once its retention passed.
	entry := mustEntryVia(t, db, a, p.ID, StateWaiting)
	if _, err := db.WithdrawEntry(ctx, a, p.ID, entry, Decision{Reason: "applicant_request"}); err != nil {
		t.Fatalf("withdraw: %v", err)
	}
	clock.Add(DefaultRetention.Withdrawn + time.Hour)
	if n, err := db.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("sweep erased %d (%v), want 1", n, err)
	}

	obs.mu.Lock()
	defer obs.mu.Unlock()
	// 10 + obs-dup + the two invited addresses + the one mustEntryVia made.
	accepted := obs.signups[OutcomeAccepted]
	for outcome, want := range map[string]int{OutcomeDuplicate: 1, OutcomeReplay: 1, OutcomeInvalid: 1,
		OutcomeNetworkLimit: 1, OutcomeConflict: 1, OutcomeCap: 6, OutcomeError: 0} {
		if got := obs.signups[outcome]; got != want {
			t.Errorf("signups %s: %d, want %d", outcome, got, want)
		}
	}
	if accepted != 14 {
		t.Errorf("accepted signups: %d, want 14", accepted)
	}
	// Every signup decided under the lock shares a commit: accepted,
	// duplicate, the replay (its key is read under the lock first),
	// capped, over the network limit, with a stale notice.
	if want := accepted + 1 + 1 + 6 + 1 + 1; obs.batched != want || obs.batches < 1 || obs.batches > obs.batched {
		t.Errorf("batches %d holding %d signups, want every signup that reached the batcher (%d) in one", obs.batches, obs.batched, want)
	}
	if obs.invites["issued"] != 2 || obs.invites["redeemed"] != 1 || obs.invites["revoked"] != 1 {
		t.Errorf("invitations %v, want 2 issued, 1 redeemed, 1 revoked", obs.invites)
	}
	if total := obs.failed[ENOTFOUND] + obs.failed[ECONFLICT]; total != 1 || len(obs.failed) != 1 {
		t.Errorf("redemption failures %v, want the one second redemption", obs.failed)
	}
	if obs.sweeps != 1 || obs.erased != 1 {
		t.Errorf("sweeps %d erasing %d, want 1 erasing 1", obs.sweeps, obs.erased)
	}
	if obs.waits < obs.batches {
		t.Errorf("%d write-lock waits for %d batches", obs.waits, obs.batches)
	}

	counts, err := db.ProgramCounts(ctx)
	if err != nil || len(counts) != 1 || counts[0].ID != p.ID {
		t.Fatalf("program counts %+v (%v)", counts, err)
	}
	// The erased entry keeps its state and its count: the counts come from
	// the state counters, not from counting the entries at every scrape.
	if c := counts[0]; c.States[StateWithdrawn] != 1 || c.States[StateActive] != 1 || c.Occupied < 1 || c.QueueCap != p.QueueCap {
		t.Errorf("program counts %+v", c)
	}
}

// Every write transaction that began is told its hold once, committed or
// rolled back, from many goroutines at once; one that never got the lock
// is not; and the hold covers the transaction's work. Each commit is told
// its time once; a rollback has none.
func TestObserver_IsToldEveryWriteLockHoldOnce(t *testing.T) {
	obs := newRecordingObserver()
	db := mustOpenWith(t, filepath.Join(t.TempDir(), "admit.db"), Options{BindingKey: signupTestKey, Observer: obs})
	ctx := context.Background()
	obs.mu.Lock()
	before, waitsBefore, commitsBefore := obs.holds, obs.waits, obs.commits
	obs.mu.Unlock()

	const workers, each = 32, 10
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				err := db.Update(ctx, func(tx *Tx) error {
					if _, err := tx.ExecContext(ctx, `DELETE FROM network_counters WHERE expires_at < 0`); err != nil {
						return err
					}
					if i%3 == 0 {
						return Errorf(ECONFLICT, "rolled back on purpose")
					}
					return nil
				})
				if err != nil && ErrorCode(err) != ECONFLICT {
					t.Errorf("worker %d update %d: %v", w, i, err)
				}
			}
		}()
	}
	wg.Wait()
	// One transaction that holds the lock for 60 ms.
	if err := db.Update(ctx, func(*Tx) error { time.Sleep(60 * time.Millisecond); return nil }); err != nil {
		t.Fatal(err)
	}
	// One that never begins: its context is already done.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := db.Update(cancelled, func(*Tx) error { return nil }); err == nil {
		t.Fatal("an update with a cancelled context began")
	}

	obs.mu.Lock()
	defer obs.mu.Unlock()
	if got, want := obs.holds-before, workers*each+1; got != want {
		t.Errorf("%d holds told, want exactly %d", got, want)
	}
	if got, want := obs.waits-waitsBefore, workers*each+1; got != want {
		t.Errorf("%d waits told, want exactly %d (one per transaction that began)", got, want)
	}
	if obs.longest < 60*time.Millisecond {
		t.Errorf("longest hold %v, want at least the 60 ms transaction", obs.longest)
	}
	// Each worker rolls back its updates 0, 3, 6 and 9.
	if got, want := obs.commits-commitsBefore, workers*(each-4)+1; got != want {
		t.Errorf("%d commits told, want exactly %d (one per transaction that committed)", got, want)
	}
	if obs.emptyCommits > 0 {
		t.Errorf("%d commits told no time", obs.emptyCommits)
	}
}
