package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"admit/internal/testutil"
)

const testLeaseTTL = 30 * time.Second

// mustTwoServers opens the same database twice, as two servers sharing it
// would, both on one fake clock.
func mustTwoServers(tb testing.TB) (a, b *DB, clock *testutil.Clock) {
	tb.Helper()
	clock = testutil.NewClock(testEpoch)
	path := filepath.Join(tb.TempDir(), "admit.db")
	return mustOpenAt(tb, path, clock), mustOpenAt(tb, path, clock), clock
}

// mustTake takes or renews a lease and fails the test on an error.
func mustTake(tb testing.TB, db *DB, name, holder string) Lease {
	tb.Helper()
	l, err := db.TakeLease(context.Background(), name, holder, testLeaseTTL)
	if err != nil {
		tb.Fatalf("take lease %s for %s: %v", name, holder, err)
	}
	return l
}

// wantLease fails the test unless l is held by holder in epoch, until
// expires.
func wantLease(tb testing.TB, what string, l Lease, holder string, epoch int64, expires time.Time) {
	tb.Helper()
	if !l.HeldBy(holder) || l.Holder != holder || l.Epoch != epoch || !l.Expires.Equal(expires) {
		tb.Fatalf("%s: %+v, want held by %s in epoch %d until %v", what, l, holder, epoch, expires)
	}
}

func TestLease_OneHolderAtATimeUntilItExpires(t *testing.T) {
	a, b, clock := mustTwoServers(t)
	t0 := clock.Now()
	wantLease(t, "a takes the free lease", mustTake(t, a, "sweeper", "a"), "a", 1, t0.Add(testLeaseTTL))
	if l := mustTake(t, b, "sweeper", "b"); l.HeldBy("b") || l.Holder != "a" || l.Epoch != 1 {
		t.Fatalf("b while a holds: %+v, want a's holding, not b's", l)
	}
	// A renewal keeps the epoch and moves the expiry.
	t1 := clock.Add(testLeaseTTL / 3)
	wantLease(t, "a renews", mustTake(t, a, "sweeper", "a"), "a", 1, t1.Add(testLeaseTTL))
	// Until the renewed lease expires, to the millisecond, b cannot take it.
	clock.Set(t1.Add(testLeaseTTL - time.Millisecond))
	if l := mustTake(t, b, "sweeper", "b"); l.HeldBy("b") {
		t.Fatalf("b a millisecond before a's lease expires: %+v", l)
	}
	// Another lease is another row: b holds it meanwhile.
	wantLease(t, "b takes another lease", mustTake(t, b, "retirer", "b"), "b", 1, clock.Now().Add(testLeaseTTL))
	t2 := clock.Add(time.Millisecond)
	wantLease(t, "b takes the expired lease", mustTake(t, b, "sweeper", "b"), "b", 2, t2.Add(testLeaseTTL))
	if l := mustTake(t, a, "sweeper", "a"); l.HeldBy("a") || l.Holder != "b" || l.Epoch != 2 {
		t.Fatalf("a after b took over: %+v, want b's holding", l)
	}
}

func TestLease_AHolderTakingItsExpiredLeaseBackStartsANewEpoch(t *testing.T) {
	db, clock := mustOpenDBWithClock(t)
	mustTake(t, db, "retirer", "a")
	t1 := clock.Add(testLeaseTTL) // the renewal comes too late
	wantLease(t, "a's late renewal", mustTake(t, db, "retirer", "a"), "a", 2, t1.Add(testLeaseTTL))
}

func TestLease_ReleaseLetsAnotherTakeAtOnceAndNeverUndoesAnotherHolding(t *testing.T) {
	a, b, clock := mustTwoServers(t)
	ctx := context.Background()
	la := mustTake(t, a, "sweeper", "a")
	if err := a.ReleaseLease(ctx, la); err != nil {
		t.Fatal(err)
	}
	now := clock.Now()
	lb := mustTake(t, b, "sweeper", "b")
	wantLease(t, "b at the instant a released", lb, "b", 2, now.Add(testLeaseTTL))
	// a's release again, of a holding that has ended, leaves b's alone.
	if err := a.ReleaseLease(ctx, la); err != nil {
		t.Fatal(err)
	}
	if l := mustTake(t, a, "sweeper", "a"); l.HeldBy("a") || l.Holder != "b" || l.Epoch != 2 {
		t.Fatalf("a after releasing a lost holding: %+v, want b's holding", l)
	}
}

func TestLease_EndLeasesFreesEveryLeaseForTheNextServer(t *testing.T) {
	db, clock := mustOpenDBWithClock(t)
	mustTake(t, db, "sweeper", "killed")
	mustTake(t, db, "retirer", "killed")
	if err := db.EndLeases(context.Background()); err != nil {
		t.Fatal(err)
	}
	now := clock.Now()
	wantLease(t, "sweeper after EndLeases", mustTake(t, db, "sweeper", "next"), "next", 2, now.Add(testLeaseTTL))
	wantLease(t, "retirer after EndLeases", mustTake(t, db, "retirer", "next"), "next", 2, now.Add(testLeaseTTL))
}

func TestLease_RefusesNamesAndHoldersTheTableWouldNot(t *testing.T) {
	db := MustOpenDB(t)
	long := string(make([]byte, 65))
	for _, tc := range []struct {
		name, holder string
		ttl          time.Duration
	}{{"", "a", time.Second}, {long, "a", time.Second}, {"sweeper", "", time.Second}, {"sweeper", long, time.Second}, {"sweeper", "a", 0}} {
		_, err := db.TakeLease(context.Background(), tc.name, tc.holder, tc.ttl)
		wantCode(t, fmt.Sprintf("lease %q for %q, ttl %v", tc.name, tc.holder, tc.ttl), err, EINVALID)
	}
	if got := mustCount(t, db, `SELECT count(*) FROM leases`); got != 0 {
		t.Fatalf("%d leases after refusals", got)
	}
}

func TestLease_ManyContendersGetExactlyOneHolderPerEpoch(t *testing.T) {
	a, b, clock := mustTwoServers(t)
	dbs := []*DB{a, b}
	const goroutines, tries = 16, 40
	type holding struct {
		holder      string
		epoch       int64
		at, expires time.Time
	}
	var (
		mu   sync.Mutex
		held []holding
		wg   sync.WaitGroup
	)
	start := make(chan struct{})
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			holder, db := fmt.Sprintf("holder-%02d", g), dbs[g%len(dbs)]
			<-start
			last := int64(0)
			for i := range tries {
				// The clock moves while the others contend: by the TTL, so
				// the holding expires and the next try takes the next
				// epoch; by half of it, so only an unrenewed holding does.
				switch {
				case g == 0 && i%4 == 0:
					clock.Add(testLeaseTTL)
				case g == 0 && i%4 == 2:
					clock.Add(testLeaseTTL / 2)
				}
				l, err := db.TakeLease(context.Background(), "sweeper", holder, testLeaseTTL)
				if err != nil {
					t.Errorf("%s: %v", holder, err)
					return
				}
				if l.Epoch < last {
					t.Errorf("%s saw epoch %d after %d", holder, l.Epoch, last)
				}
				last = l.Epoch
				if l.HeldBy(holder) {
					mu.Lock()
					held = append(held, holding{holder, l.Epoch, l.At, l.Expires})
					mu.Unlock()
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	holders := map[int64]string{}
	// taken is when each epoch's holding began, lasted until it last ran.
	taken, lasted := map[int64]time.Time{}, map[int64]time.Time{}
	for _, h := range held {
		if prev, ok := holders[h.epoch]; ok && prev != h.holder {
			t.Fatalf("epoch %d held by both %s and %s", h.epoch, prev, h.holder)
		}
		holders[h.epoch] = h.holder
		if at, ok := taken[h.epoch]; !ok || h.at.Before(at) {
			taken[h.epoch] = h.at
		}
		if h.expires.After(lasted[h.epoch]) {
			lasted[h.epoch] = h.expires
		}
	}
	// No holding began before the one before it had expired.
	for e, at := range taken {
		if prev, ok := lasted[e-1]; ok && at.Before(prev) {
			t.Fatalf("epoch %d taken at %v, while epoch %d lasted until %v", e, at, e-1, prev)
		}
	}
	var final int64
	mustUpdate(t, a, func(tx *Tx) error {
		return tx.QueryRowContext(context.Background(), `SELECT epoch FROM leases WHERE name = 'sweeper'`).Scan(&final)
	})
	// Every epoch was one taking, answered to its taker as held.
	for e := int64(1); e <= final; e++ {
		if _, ok := holders[e]; !ok {
			t.Fatalf("epoch %d of %d was never reported held", e, final)
		}
	}
	if int64(len(holders)) != final || final < tries/4 {
		t.Fatalf("%d epochs held, final epoch %d: want every epoch once, and at least one per expiry (%d)", len(holders), final, tries/4)
	}
}

// leaseTimer is a LeasedJob.After that the test fires: each wait the
// runner asks for arrives on waits, and runs out when the test fires it.
type leaseTimer struct{ waits chan leaseWait }

type leaseWait struct {
	d    time.Duration
	fire chan time.Time
}

func (lt *leaseTimer) after(d time.Duration) <-chan time.Time {
	w := leaseWait{d: d, fire: make(chan time.Time, 1)}
	lt.waits <- w
	return w.fire
}

// leaseRunner is one server's RunLeased on a test database, its work
// reporting each start and stop.
type leaseRunner struct {
	db      *DB
	holder  string
	timer   *leaseTimer
	started chan context.Context
	stopped chan error
	cancel  context.CancelFunc
	done    chan struct{}
}

// startLeaseRunner runs a lease runner until the test ends (or stop).
func startLeaseRunner(t *testing.T, db *DB, name, holder string) *leaseRunner {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &leaseRunner{db: db, holder: holder, timer: &leaseTimer{waits: make(chan leaseWait, 64)},
		started: make(chan context.Context, 8), stopped: make(chan error, 8), cancel: cancel, done: make(chan struct{})}
	job := LeasedJob{Lease: name, Holder: holder, TTL: testLeaseTTL, After: r.timer.after, Run: func(ctx context.Context) {
		r.started <- ctx
		<-ctx.Done()
		r.stopped <- context.Cause(ctx)
	}}
	go func() {
		defer close(r.done)
		db.RunLeased(ctx, job, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	t.Cleanup(r.stop)
	return r
}

// stop stops the runner cleanly and waits until it has returned.
func (r *leaseRunner) stop() {
	r.cancel()
	<-r.done
}

// epochOf is the epoch the work whose context this is runs under.
func epochOf(ctx context.Context) int64 { return ctx.Value(fenceKey{}).(*leaseFence).epoch }

// leaseRow reads a lease's row.
func leaseRow(tb testing.TB, db *DB, name string) Lease {
	tb.Helper()
	var l Lease
	err := db.View(context.Background(), func(tx *Tx) error {
		var err error
		l, _, err = readLease(context.Background(), tx, name)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// wantNotStarted fails the test if r's work has started.
func (r *leaseRunner) wantNotStarted(tb testing.TB, what string) {
	tb.Helper()
	select {
	case <-r.started:
		tb.Fatalf("%s: %s's work started", what, r.holder)
	default:
	}
}

func TestRunLeased_AKilledHoldersWorkIsTakenOverWithinTheTTLOfItsLastRenewal(t *testing.T) {
	dbA, dbB, clock := mustTwoServers(t)
	a := startLeaseRunner(t, dbA, "sweeper", "a")
	// A free lease is taken at once: a's work starts before any wait.
	aWork := <-a.started
	if e := epochOf(aWork); e != 1 {
		t.Fatalf("a's work runs in epoch %d, want 1", e)
	}
	wa := <-a.timer.waits
	b := startLeaseRunner(t, dbB, "sweeper", "b")
	wb := <-b.timer.waits
	if wa.d != testLeaseTTL/3 || wb.d != testLeaseTTL/3 {
		t.Fatalf("a waits %v to renew, b %v to try again; want a third of the TTL, %v", wa.d, wb.d, testLeaseTTL/3)
	}
	b.wantNotStarted(t, "while a holds the lease")
	// a renews once, and is then killed: it never runs again.
	clock.Add(wa.d)
	wa.fire <- clock.Now()
	<-a.timer.waits
	lastRenewal := clock.Now()
	if l := leaseRow(t, dbA, "sweeper"); !l.HeldBy("a") || !l.Expires.Equal(lastRenewal.Add(testLeaseTTL)) {
		t.Fatalf("after a's renewal: %+v", l)
	}
	// b tries whenever it asks to, the clock moving as far as it waits.
	var bWork context.Context
	for bWork == nil {
		clock.Add(wb.d)
		wb.fire <- clock.Now()
		wb = <-b.timer.waits
		if l := leaseRow(t, dbB, "sweeper"); !l.HeldBy("b") {
			b.wantNotStarted(t, "while a's lease lasts")
			continue
		}
		if took := clock.Now().Sub(lastRenewal); took != testLeaseTTL {
			t.Fatalf("b took over %v after a's last renewal, want exactly the TTL %v", took, testLeaseTTL)
		}
		bWork = <-b.started
	}
	if e := epochOf(bWork); e != 2 {
		t.Fatalf("b's work runs in epoch %d, want 2", e)
	}
	// a, paused rather than killed, still runs; its first write under the
	// lost lease is refused and ends its work.
	if _, err := dbA.Sweep(aWork); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("a's sweep after b took over: %v, want ErrLeaseLost", err)
	}
	if err := <-a.stopped; !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("a's work stopped by %v, want ErrLeaseLost", err)
	}
}

func TestRunLeased_WorkStopsWhenTheLeaseIsTakenAway(t *testing.T) {
	dbA, dbB, clock := mustTwoServers(t)
	a := startLeaseRunner(t, dbA, "retirer", "a")
	<-a.started
	wa := <-a.timer.waits
	// a's renewal is late: the lease expires, and another server takes it.
	clock.Add(testLeaseTTL)
	wantLease(t, "c takes the expired lease", mustTake(t, dbB, "retirer", "c"), "c", 2, clock.Now().Add(testLeaseTTL))
	a.wantNotStarted(t, "before a's renewal")
	wa.fire <- clock.Now()
	if err := <-a.stopped; !errors.Is(err, errLeaseStopped) {
		t.Fatalf("a's work stopped by %v, want the runner's stop", err)
	}
	// a keeps trying, at a third of the TTL, and its work starts again
	// only when it takes the lease again, in a new epoch.
	wa = <-a.timer.waits
	if wa.d != testLeaseTTL/3 {
		t.Fatalf("a waits %v, want %v", wa.d, testLeaseTTL/3)
	}
	a.wantNotStarted(t, "while c holds the lease")
	clock.Add(testLeaseTTL)
	wa.fire <- clock.Now()
	if e := epochOf(<-a.started); e != 3 {
		t.Fatalf("a's work runs again in epoch %d, want 3", e)
	}
}

func TestRunLeased_CleanStopReleasesForTheNextServerAtOnce(t *testing.T) {
	dbA, dbB, clock := mustTwoServers(t)
	a := startLeaseRunner(t, dbA, "sweeper", "a")
	<-a.started
	b := startLeaseRunner(t, dbB, "sweeper", "b")
	wb := <-b.timer.waits
	a.stop()
	if err := <-a.stopped; !errors.Is(err, context.Canceled) {
		t.Fatalf("a's work stopped by %v, want its cancelled context", err)
	}
	// The clock has not moved: b takes the lease the moment it tries.
	wb.fire <- clock.Now()
	if e := epochOf(<-b.started); e != 2 {
		t.Fatalf("b's work runs in epoch %d, want 2", e)
	}
}

func TestRunLeased_AFailedRenewalStopsTheWork(t *testing.T) {
	clock := testutil.NewClock(testEpoch)
	db, err := openTestDB(t, filepath.Join(t.TempDir(), "admit.db"), Options{BindingKey: signupTestKey, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	a := startLeaseRunner(t, db, "sweeper", "a")
	<-a.started
	wa := <-a.timer.waits
	if err := db.Close(); err != nil { // every later write fails
		t.Fatal(err)
	}
	wa.fire <- clock.Now()
	if err := <-a.stopped; !errors.Is(err, errLeaseStopped) {
		t.Fatalf("a's work stopped by %v, want the runner's stop", err)
	}
	// It retries sooner than a renewal's interval.
	if wa = <-a.timer.waits; wa.d >= testLeaseTTL/3 {
		t.Fatalf("after a failed renewal a waits %v, want less than %v", wa.d, testLeaseTTL/3)
	}
}

func TestRunLeased_ReleasesTheLeaseWhenTheWorkIsDone(t *testing.T) {
	db, clock := mustOpenDBWithClock(t)
	timer := &leaseTimer{waits: make(chan leaseWait, 64)}
	job := LeasedJob{Lease: "once", Holder: "a", TTL: testLeaseTTL, After: timer.after, Run: func(context.Context) {}}
	db.RunLeased(context.Background(), job, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if l := leaseRow(t, db, "once"); l.Epoch != 1 || l.HeldBy("a") || !l.Expires.Equal(clock.Now()) {
		t.Fatalf("after the work returned: %+v, want epoch 1 released now", l)
	}
}

// fencedBy returns a context of work run under l, as RunLeased makes it.
func fencedBy(t *testing.T, l Lease) context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	t.Cleanup(func() { cancel(nil) })
	return withLeaseFence(ctx, l, cancel)
}

func TestLease_FencedSweepAndRetirementWriteNothingOnceTheLeaseIsLost(t *testing.T) {
	a, b, clock := mustTwoServers(t)
	ctx := context.Background()
	sp := mustSignupProgram(t, a, "fenced", benchCap, benchCap)
	mustSeedEntriesIn(t, a, sp.Program.ID, sp.Notice.ID, 5, func(int) string { return StateWithdrawn })
	retired := mustSignupProgram(t, a, "fenced-retired", benchCap, benchCap)
	mustSeedWaiting(t, a, retired.Program.ID, retired.Notice.ID, 5)
	if _, err := a.beginRetirement(ctx, retired.Owner, retired.Program.ID,
		Retirement{ExpectedRevision: retired.Program.Revision, Confirm: retired.Program.Slug}); err != nil {
		t.Fatal(err)
	}
	clock.Add(a.RetentionPolicy().Withdrawn)
	sweeper, retirer := mustTake(t, a, "sweeper", "a"), mustTake(t, a, "retirer", "a")
	// Both leases pass to b: a, paused past their expiry, does not know.
	clock.Add(testLeaseTTL)
	mustTake(t, b, "sweeper", "b")
	mustTake(t, b, "retirer", "b")
	sweepCtx, retireCtx := fencedBy(t, sweeper), fencedBy(t, retirer)
	wantUnchangedBy(t, "a's fenced work", a, func() {
		if _, err := a.FinishRetirements(retireCtx); !errors.Is(err, ErrLeaseLost) {
			t.Fatalf("a's retirement steps: %v, want ErrLeaseLost", err)
		}
		if n, err := a.Sweep(sweepCtx); !errors.Is(err, ErrLeaseLost) || n != 0 {
			t.Fatalf("a's sweep: erased %d, %v; want none and ErrLeaseLost", n, err)
		}
	})
	for what, ctx := range map[string]context.Context{"sweeper": sweepCtx, "retirer": retireCtx} {
		if !errors.Is(context.Cause(ctx), ErrLeaseLost) {
			t.Fatalf("a's %s work was not ended: cause %v", what, context.Cause(ctx))
		}
	}
	// b's work, under the holding that is current, proceeds.
	sweeper, retirer = mustTake(t, b, "sweeper", "b"), mustTake(t, b, "retirer", "b")
	if _, err := b.FinishRetirements(fencedBy(t, retirer)); err != nil {
		t.Fatal(err)
	}
	due := mustCount(t, b, `SELECT count(*) FROM entries WHERE erased_at IS NULL AND erase_after <= ?`, Millis(clock.Now()))
	if n, err := b.Sweep(fencedBy(t, sweeper)); err != nil || n != due || due < 5 {
		t.Fatalf("b's sweep: erased %d, %v; want the %d due (at least the 5 withdrawn)", n, err, due)
	}
	if n := mustCount(t, b, `SELECT count(*) FROM programs WHERE retire_pending = 1`); n != 0 {
		t.Fatalf("%d retirements pending after b's retirer", n)
	}
}
