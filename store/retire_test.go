package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
)

// retireFixture is a lifecycle fixture with entries in every state that
// retirement changes or keeps, and what a test needs to act as each.
type retireFixture struct {
	*lifecycleFixture
	waiting, selected, invited, active, withdrawn string
	// invitedCode is the invited entry's code, recorded as sent.
	invitedCode string
	// activeUser holds the active entry's grant.
	activeUser string
	// withdrawnErase is the withdrawn entry's own erasure date.
	withdrawnErase time.Time
}

func newRetireFixture(t *testing.T) *retireFixture {
	t.Helper()
	f := &retireFixture{lifecycleFixture: newLifecycleFixture(t)}
	ctx := context.Background()
	f.withdrawn, _ = f.join(t, "withdrawn@example.com")
	if _, err := f.db.WithdrawEntry(ctx, f.owner, f.p.ID, f.withdrawn, Decision{Reason: "applicant_request"}); err != nil {
		t.Fatal(err)
	}
	f.withdrawnErase = f.clock.Now().Add(testRetention.Withdrawn)
	f.clock.Add(time.Hour)
	f.waiting, _ = f.join(t, "waiting@example.com")
	f.selected, _ = f.join(t, "selected@example.com")
	if _, err := f.db.SelectEntry(ctx, f.owner, f.p.ID, f.selected, Decision{Reason: "meets_policy"}); err != nil {
		t.Fatal(err)
	}
	f.active, _ = f.join(t, "active@example.com")
	f.activate(t, f.active, "active@example.com")
	f.activeUser = "user_" + f.active[:8]
	f.invited, _ = f.join(t, "invited@example.com")
	if _, err := f.db.SelectEntry(ctx, f.owner, f.p.ID, f.invited, Decision{Reason: "meets_policy"}); err != nil {
		t.Fatal(err)
	}
	res, err := f.db.IssueInvitation(ctx, f.owner, f.p.ID, f.invited, NewInvitation{RequestKey: uuid.NewString(), ExpiresAt: f.clock.Now().Add(10 * 24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.RecordDelivery(ctx, f.owner, res.Invitation.ID, DeliveryRecord{RequestKey: uuid.NewString(), Channel: "email"}); err != nil {
		t.Fatal(err)
	}
	f.invitedCode = res.Code
	// More waiting entries, so the steps below are several (in the next
	// hour: the program's hourly cap is small).
	f.clock.Add(time.Hour)
	for i := range 7 {
		f.join(t, fmt.Sprintf("more%d@example.com", i))
	}
	return f
}

// eraseAfter reads an entry's erasure date.
func (f *retireFixture) eraseAfter(t *testing.T, entryID string) time.Time {
	t.Helper()
	var ms *int64
	mustUpdate(t, f.db, func(tx *Tx) error {
		return tx.QueryRowContext(context.Background(), `SELECT erase_after FROM entries WHERE id = ?`, entryID).Scan(&ms)
	})
	if ms == nil {
		t.Fatalf("entry %s has no erasure date", entryID)
	}
	return FromMillis(*ms)
}

func TestRetireProgram_StepsDateEverythingFromTheRetirementNotFromWhenTheyRun(t *testing.T) {
	f := newRetireFixture(t)
	f.db.retireChunk = 2
	ctx := context.Background()
	p := mustProgramByID(t, f.db, f.owner, f.p.ID)
	retiredAt := f.clock.Add(24 * time.Hour)
	if _, err := f.db.beginRetirement(ctx, f.owner, p.ID, Retirement{ExpectedRevision: p.Revision, Confirm: p.Slug}); err != nil {
		t.Fatal(err)
	}
	// Each step runs a day after the one before: a step that dated from
	// its own clock would postpone erasure.
	steps := 0
	for done := false; !done; steps++ {
		f.clock.Add(24 * time.Hour)
		mustUpdate(t, f.db, func(tx *Tx) error {
			var err error
			done, err = f.db.retireStep(ctx, tx, p.ID, 2)
			return err
		})
	}
	if steps < 5 {
		t.Fatalf("retirement took %d steps at 2 entries each, want at least 5 (12 entries)", steps)
	}
	if got := mustCount(t, f.db, `SELECT count(*) FROM programs WHERE id = ? AND retire_pending = 0`, p.ID); got != 1 {
		t.Fatal("the retirement is still pending after its last step")
	}
	retiredErase := retiredAt.Add(testRetention.RetiredProgram)
	for name, id := range map[string]string{"waiting": f.waiting, "selected": f.selected, "invited": f.invited} {
		if got := f.eraseAfter(t, id); !got.Equal(retiredErase) {
			t.Errorf("%s entry: erase_after=%v, want retirement + retired-program period %v", name, got, retiredErase)
		}
	}
	// Revoked at the retirement: the earlier of the revoked and the
	// retired-program periods, from the retirement.
	if got, want := f.eraseAfter(t, f.active), retiredAt.Add(min(testRetention.Revoked, testRetention.RetiredProgram)); !got.Equal(want) {
		t.Errorf("active entry: erase_after=%v, want %v", got, want)
	}
	if got := f.eraseAfter(t, f.withdrawn); !got.Equal(f.withdrawnErase) {
		t.Errorf("withdrawn entry: erase_after=%v, want its own earlier %v", got, f.withdrawnErase)
	}
	if got := mustCount(t, f.db, `SELECT count(*) FROM invitations WHERE program_id = ? AND state = 'revoked' AND terminal_at = ?`,
		p.ID, Millis(retiredAt)); got != 1 {
		t.Errorf("invitations revoked at the retirement instant: %d, want 1", got)
	}
	if got := mustCount(t, f.db, `SELECT count(*) FROM grants WHERE program_id = ? AND active = 0 AND revoked_at = ?`,
		p.ID, Millis(retiredAt)); got != 1 {
		t.Errorf("grants revoked at the retirement instant: %d, want 1", got)
	}

	// The sweep erases each on its date, to the millisecond.
	f.clock.Set(retiredErase.Add(-time.Millisecond))
	if _, err := f.db.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if f.erased(t, f.waiting) || f.erased(t, f.invited) || f.erased(t, f.active) {
		t.Fatal("erased before the retired-program period ended")
	}
	if !f.erased(t, f.withdrawn) {
		t.Fatal("the withdrawn entry was not erased on its own earlier date")
	}
	f.clock.Set(retiredErase)
	if _, err := f.db.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mustCount(t, f.db, `SELECT count(*) FROM entries WHERE program_id = ? AND erased_at IS NULL`, p.ID); got != 0 {
		t.Fatalf("%d entries not erased when the retired-program period ended", got)
	}
}

func TestRetireProgram_PendingRetirementLetsNobodyInAndTheSweepFinishesIt(t *testing.T) {
	f := newRetireFixture(t)
	ctx := context.Background()
	p := mustProgramByID(t, f.db, f.owner, f.p.ID)
	// Before: the active entry reads its content.
	if _, err := f.db.ReadPrivateContent(ctx, p.Slug, f.activeUser, []string{"active@example.com"}); err != nil {
		t.Fatalf("private content before retirement: %v", err)
	}
	// The retirement commits and, as if the server stopped right after,
	// none of its steps runs.
	if _, err := f.db.beginRetirement(ctx, f.owner, p.ID, Retirement{ExpectedRevision: p.Revision, Confirm: p.Slug}); err != nil {
		t.Fatal(err)
	}
	if got := mustCount(t, f.db, `SELECT count(*) FROM invitations WHERE program_id = ? AND state = 'issued'`, p.ID); got != 1 {
		t.Fatalf("issued invitations before any step=%d: the test needs the steps still to do", got)
	}
	if _, err := f.db.Redeem(ctx, "user_invited", []string{"invited@example.com"}, f.invitedCode); ErrorCode(err) != ENOTFOUND {
		t.Errorf("redeem while the retirement is pending: %v, want not found", err)
	}
	if _, err := f.db.ReadPrivateContent(ctx, p.Slug, f.activeUser, []string{"active@example.com"}); ErrorCode(err) != ENOTFOUND {
		t.Errorf("private content while the retirement is pending: %v, want not found", err)
	}
	if _, err := f.db.Signup(ctx, SignupRequest{Slug: p.Slug, RequestKey: uuid.NewString(), Email: "late@example.com",
		NoticeVersion: 1, Permission: true}); ErrorCode(err) != ECONFLICT {
		t.Errorf("signup while the retirement is pending: %v, want conflict", err)
	}
	if _, err := f.db.IssueInvitation(ctx, f.owner, p.ID, f.selected, NewInvitation{RequestKey: uuid.NewString(), ExpiresAt: f.clock.Now().Add(time.Hour)}); ErrorCode(err) != ECONFLICT {
		t.Errorf("invitation issued while the retirement is pending: %v, want conflict", err)
	}
	for email, want := range map[string]string{"invited@example.com": StateSelected, "active@example.com": StateRevoked, "waiting@example.com": StateWaiting} {
		own, err := f.db.OwnEntry(ctx, p.Slug, []string{email})
		if err != nil {
			t.Fatal(err)
		}
		if own.State != want {
			t.Errorf("%s reads its state as %s while the retirement is pending, want %s", email, own.State, want)
		}
	}

	// The next sweep (at start) finishes the retirement before erasing.
	if _, err := f.db.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mustCount(t, f.db, `SELECT count(*) FROM programs WHERE id = ? AND retire_pending = 0`, p.ID); got != 1 {
		t.Fatal("the sweep did not finish the pending retirement")
	}
	for q, want := range map[string]int{
		`SELECT count(*) FROM invitations WHERE program_id = ? AND state = 'issued'`:                                0,
		`SELECT count(*) FROM grants WHERE program_id = ? AND active = 1`:                                           0,
		`SELECT count(*) FROM entries WHERE program_id = ? AND state IN ('invited', 'active')`:                      0,
		`SELECT count(*) FROM entries WHERE program_id = ? AND erase_after IS NULL AND erased_at IS NULL`:           0,
		`SELECT count(*) FROM entries WHERE program_id = ? AND state = 'revoked'`:                                   1,
		`SELECT count(*) FROM entry_state_counts WHERE program_id = ? AND state IN ('invited', 'active') AND n > 0`: 0,
	} {
		if got := mustCount(t, f.db, q, p.ID); got != want {
			t.Errorf("%s: %d, want %d", q, got, want)
		}
	}
}

// mustSeedWaiting inserts n waiting entries into the program in one
// transaction, as many signups would leave them.
func mustSeedWaiting(tb testing.TB, db *DB, programID, noticeID string, n int) {
	tb.Helper()
	ids := mustSeedEntriesIn(tb, db, programID, noticeID, n, func(int) string { return StateWaiting })
	if len(ids) != n {
		tb.Fatalf("seeded %d entries, want %d", len(ids), n)
	}
}

func TestRetireProgram_SignupsProceedWhileABigRetirementRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds 20,000 entries")
	}
	db := MustOpenDB(t)
	big := mustSignupProgram(t, db, "retiring", benchCap, benchCap)
	mustSeedWaiting(t, db, big.Program.ID, big.Notice.ID, 20000)
	other := mustSignupProgram(t, db, "still-open", benchCap, benchCap)
	ctx := context.Background()
	p := mustProgramByID(t, db, big.Owner, big.Program.ID)

	retired := func() bool {
		var n int
		if err := db.readRow(ctx, `SELECT count(*) FROM programs WHERE id = ? AND retired_at IS NOT NULL`, p.ID).Scan(&n); err != nil {
			panic(err) // not reached on a healthy database; reported as a test failure by the runner
		}
		return n == 1
	}
	var returned atomic.Bool
	retireErr := make(chan error, 1)
	go func() {
		_, err := db.RetireProgram(ctx, big.Owner, p.ID, Retirement{ExpectedRevision: p.Revision, Confirm: p.Slug})
		returned.Store(true)
		retireErr <- err
	}()

	// Signups to the other program, from several goroutines, until the
	// retirement returns. A signup counts as "during" when it began after
	// the retirement had committed and ended before RetireProgram returned:
	// with the retirement in one transaction there is no such window.
	const workers = 4
	var (
		mu       sync.Mutex
		errs     []error
		accepted int
		during   int
	)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !returned.Load(); i++ {
				after := retired()
				_, err := db.Signup(ctx, other.signupReq(fmt.Sprintf("w%d-%d@example.test", w, i)))
				stillRunning := !returned.Load()
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					accepted++
					if after && stillRunning {
						during++
					}
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := <-retireErr; err != nil {
		t.Fatalf("retire: %v", err)
	}
	for _, err := range errs {
		t.Errorf("signup during retirement: %v", err)
	}
	if got := mustCount(t, db, `SELECT count(*) FROM entries WHERE program_id = ?`, other.Program.ID); got != accepted {
		t.Fatalf("the open program holds %d entries, want the %d accepted signups", got, accepted)
	}
	if during < workers {
		t.Fatalf("%d signups ran while the retirement's steps did (of %d accepted): signups waited for the whole retirement", during, accepted)
	}
	t.Logf("%d of %d signups were accepted while the retirement ran", during, accepted)
	if got := mustCount(t, db, `SELECT count(*) FROM entries WHERE program_id = ? AND erase_after IS NULL AND erased_at IS NULL`, p.ID); got != 0 {
		t.Fatalf("%d entries of the retired program have no erasure date", got)
	}
}

func TestNextRetireChunk_AimsAtTheTargetShrinksAtOnceAndGrowsAtMostTwofold(t *testing.T) {
	for _, tc := range []struct {
		chunk int
		took  time.Duration
		want  int
	}{
		{250, retireStepTarget, 250},
		{250, 2 * retireStepTarget, 125},
		{250, 100 * retireStepTarget, minRetireChunk},
		{250, retireStepTarget / 10, 500},
		{250, 0, 500},
		{maxRetireChunk, time.Microsecond, maxRetireChunk},
	} {
		if got := nextRetireChunk(tc.chunk, tc.took); got != tc.want {
			t.Errorf("nextRetireChunk(%d, %s)=%d, want %d", tc.chunk, tc.took, got, tc.want)
		}
	}
}

func TestSweep_ErasesEveryDueEntryInBatches(t *testing.T) {
	db, clock := mustOpenDBWithClock(t)
	sp := mustSignupProgram(t, db, "sweep-batches", benchCap, benchCap)
	const n = 1000
	mustSeedEntriesIn(t, db, sp.Program.ID, sp.Notice.ID, n, func(int) string { return StateWithdrawn })
	clock.Add(db.RetentionPolicy().Withdrawn)
	var txs atomic.Int32
	db.txHeld = func(time.Duration, time.Duration) { txs.Add(1) }
	erased, err := db.Sweep(context.Background())
	db.txHeld = nil
	if err != nil {
		t.Fatal(err)
	}
	if erased != n {
		t.Fatalf("sweep erased %d, want %d", erased, n)
	}
	if got := mustCount(t, db, `SELECT count(*) FROM entries WHERE program_id = ? AND erased_at IS NULL`, sp.Program.ID); got != 0 {
		t.Fatalf("%d due entries left", got)
	}
	if got := txs.Load(); got < n/sweepBatch {
		t.Fatalf("the sweep ran %d transactions for %d entries: batches larger than %d", got, n, sweepBatch)
	}
}

func TestRetireProgram_WrongConfirmationIsInvalidAndRetiresNothing(t *testing.T) {
	f := newRetireFixture(t)
	ctx := context.Background()
	p := mustProgramByID(t, f.db, f.owner, f.p.ID)
	before := dbFingerprint(t, f.db)
	for _, confirm := range []string{"", "not-" + p.Slug, strings.ToUpper(p.Slug)} {
		_, err := f.db.RetireProgram(ctx, f.owner, p.ID, Retirement{ExpectedRevision: p.Revision, Confirm: confirm})
		wantCode(t, "retire confirmed with "+strconv.Quote(confirm), err, EINVALID)
	}
	wantUnchanged(t, "a retirement with the wrong confirmation", f.db, before)
	// The confirmation is checked only for the owner's own program: another
	// owner learns nothing about it, whatever they type.
	stranger := Actor{Kind: ActorOwner, UserID: "user_someone_else"}
	_, err := f.db.RetireProgram(ctx, stranger, p.ID, Retirement{ExpectedRevision: p.Revision, Confirm: "wrong"})
	wantCode(t, "a stranger's retirement", err, ENOTFOUND)
	// The slug with surrounding spaces, as typed into the form, retires it.
	got, err := f.db.RetireProgram(ctx, f.owner, p.ID, Retirement{ExpectedRevision: p.Revision, Confirm: " " + p.Slug + " "})
	if err != nil || got.RetiredAt == nil {
		t.Fatalf("retire with the slug: %+v %v, want retired", got, err)
	}
}
