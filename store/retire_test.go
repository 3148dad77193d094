package store

import (
	"context"
	"fmt"
	"io"
	"log/slog"
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
	// RetireProgram returns at the retirement's commit, with none of its
	// steps run: no retirer runs here, as if the server stopped right after.
	retired, err := f.db.RetireProgram(ctx, f.owner, p.ID, Retirement{ExpectedRevision: p.Revision, Confirm: p.Slug})
	if err != nil {
		t.Fatal(err)
	}
	if retired.RetiredAt == nil || retired.SignupOpen || retired.AccessEnabled {
		t.Fatalf("RetireProgram answered %+v, want the program retired", retired)
	}
	if want := (RetirementProgress{Pending: true, Done: 0, Total: 12}); retired.Retirement != want {
		t.Fatalf("RetireProgram answered progress %+v, want %+v", retired.Retirement, want)
	}
	if got := mustCount(t, f.db, `SELECT count(*) FROM invitations WHERE program_id = ? AND state = 'issued'`, p.ID); got != 1 {
		t.Fatalf("issued invitations when RetireProgram returned=%d, want 1: the steps ran before it answered", got)
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

	// The retirement commits; its steps then run as the retirer runs them.
	if _, err := db.RetireProgram(ctx, big.Owner, p.ID, Retirement{ExpectedRevision: p.Revision, Confirm: p.Slug}); err != nil {
		t.Fatal(err)
	}
	var returned atomic.Bool
	retireErr := make(chan error, 1)
	go func() {
		_, err := db.FinishRetirements(ctx)
		returned.Store(true)
		retireErr <- err
	}()

	// Signups to the other program, from several goroutines, until the
	// steps are done. A signup counts as "during" when it began after the
	// retirement had committed and ended before its last step: with the
	// retirement in one transaction there is no such window.
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
				_, err := db.Signup(ctx, other.signupReq(fmt.Sprintf("w%d-%d@example.test", w, i)))
				stillRunning := !returned.Load()
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					accepted++
					if stillRunning {
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

// mustFinishRetirements runs every pending retirement's steps to their
// end, as the retirer does in admit serve.
func mustFinishRetirements(tb testing.TB, db *DB) {
	tb.Helper()
	if _, err := db.FinishRetirements(context.Background()); err != nil {
		tb.Fatalf("finish retirements: %v", err)
	}
	if n := mustCount(tb, db, `SELECT count(*) FROM programs WHERE retire_pending = 1`); n != 0 {
		tb.Fatalf("%d retirements still pending after FinishRetirements", n)
	}
}

// retirementOf reads a program's retirement progress as the program page
// does.
func retirementOf(tb testing.TB, db *DB, owner Actor, programID string) RetirementProgress {
	tb.Helper()
	pg, err := db.ProgramPage(context.Background(), owner, programID)
	if err != nil {
		tb.Fatal(err)
	}
	return pg.Program.Retirement
}

func TestRetireProgram_EachStepRecordsHowManyEntriesItReached(t *testing.T) {
	f := newRetireFixture(t)
	f.db.retireChunk = 2
	ctx := context.Background()
	p := mustProgramByID(t, f.db, f.owner, f.p.ID)
	if got := p.Retirement; got != (RetirementProgress{}) {
		t.Fatalf("a running program's retirement progress %+v, want none", got)
	}
	if _, err := f.db.RetireProgram(ctx, f.owner, p.ID, Retirement{ExpectedRevision: p.Revision, Confirm: p.Slug}); err != nil {
		t.Fatal(err)
	}
	// 12 entries (the withdrawn one too: every entry is dated or keeps
	// its earlier date), 2 a step: six steps reach two each, and a
	// seventh finds none left and ends the retirement.
	for step := 1; step <= 7; step++ {
		var done bool
		mustUpdate(t, f.db, func(tx *Tx) error {
			var err error
			done, err = f.db.retireStep(ctx, tx, p.ID, 2)
			return err
		})
		want := RetirementProgress{Pending: step < 7, Done: int64(min(2*step, 12)), Total: 12}
		if got := retirementOf(t, f.db, f.owner, p.ID); got != want {
			t.Fatalf("after step %d: progress %+v, want %+v", step, got, want)
		}
		if done != (step == 7) {
			t.Fatalf("step %d reported done=%v", step, done)
		}
	}
}

// retirerLog discards the retirer's log lines.
var retirerLog = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestRunRetirer_StopsBetweenStepsWhenCancelledAndResumesLater(t *testing.T) {
	f := newRetireFixture(t)
	f.db.retireChunk = 2
	p := mustProgramByID(t, f.db, f.owner, f.p.ID)
	if _, err := f.db.RetireProgram(context.Background(), f.owner, p.ID, Retirement{ExpectedRevision: p.Revision, Confirm: p.Slug}); err != nil {
		t.Fatal(err)
	}

	// The server shuts down after the retirer's third step: it returns
	// without running a fourth.
	ctx, cancel := context.WithCancel(context.Background())
	var steps atomic.Int32
	f.db.retireStepped = func(string, bool) {
		if steps.Add(1) == 3 {
			cancel()
		}
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		f.db.RunRetirer(ctx, time.Hour, retirerLog)
	}()
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("RunRetirer did not return after its context ended")
	}
	if got, want := retirementOf(t, f.db, f.owner, p.ID), (RetirementProgress{Pending: true, Done: 6, Total: 12}); got != want {
		t.Fatalf("after a stop at the third step: progress %+v, want %+v", got, want)
	}
	if got := mustCount(t, f.db, `SELECT count(*) FROM entries WHERE program_id = ? AND erase_after IS NULL`, p.ID); got != 6 {
		t.Fatalf("%d entries undated after three steps of two, want 6 (the withdrawn one is dated)", got)
	}

	// The next start's retirer resumes from the cursor and finishes it.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	finished := make(chan struct{})
	steps.Store(0)
	f.db.retireStepped = func(_ string, done bool) {
		steps.Add(1)
		if done {
			close(finished)
		}
	}
	stopped = make(chan struct{})
	go func() {
		defer close(stopped)
		f.db.RunRetirer(ctx, time.Hour, retirerLog)
	}()
	select {
	case <-finished:
	case <-time.After(30 * time.Second):
		t.Fatal("the resumed retirer did not finish the retirement")
	}
	cancel()
	<-stopped
	// Three more steps reach the last six entries; the fourth finds none.
	if got := steps.Load(); got != 4 {
		t.Errorf("the resumed retirement took %d steps, want 4: it did not resume from its cursor", got)
	}
	if got, want := retirementOf(t, f.db, f.owner, p.ID), (RetirementProgress{Pending: false, Done: 12, Total: 12}); got != want {
		t.Fatalf("finished retirement: progress %+v, want %+v", got, want)
	}
	for q, want := range map[string]int{
		`SELECT count(*) FROM invitations WHERE program_id = ? AND state = 'issued'`:                      0,
		`SELECT count(*) FROM grants WHERE program_id = ? AND active = 1`:                                 0,
		`SELECT count(*) FROM entries WHERE program_id = ? AND state IN ('invited', 'active')`:            0,
		`SELECT count(*) FROM entries WHERE program_id = ? AND erase_after IS NULL AND erased_at IS NULL`: 0,
	} {
		if got := mustCount(t, f.db, q, p.ID); got != want {
			t.Errorf("%s: %d, want %d", q, got, want)
		}
	}
}

func TestRunRetirer_IsWokenByARetirementWithoutWaitingForItsInterval(t *testing.T) {
	db := MustOpenDB(t)
	first := mustSignupProgram(t, db, "retired-first", benchCap, benchCap)
	second := mustSignupProgram(t, db, "retired-second", benchCap, benchCap)
	mustSeedWaiting(t, db, first.Program.ID, first.Notice.ID, 10)
	mustSeedWaiting(t, db, second.Program.ID, second.Notice.ID, 10)
	retire := func(sp signupProgram) {
		p := mustProgramByID(t, db, sp.Owner, sp.Program.ID)
		if _, err := db.RetireProgram(context.Background(), sp.Owner, p.ID, Retirement{ExpectedRevision: p.Revision, Confirm: p.Slug}); err != nil {
			t.Fatal(err)
		}
	}
	finished := make(chan string, 2)
	db.retireStepped = func(id string, done bool) {
		if done {
			finished <- id
		}
	}
	wait := func(id string) {
		t.Helper()
		select {
		case got := <-finished:
			if got != id {
				t.Fatalf("finished %s, want %s", got, id)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("retirement of %s not finished: the retirer was not woken", id)
		}
	}
	// The first is pending when the retirer starts; the second commits
	// after the retirer has finished the first, and its interval (an hour)
	// never elapses here.
	retire(first)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		db.RunRetirer(ctx, time.Hour, retirerLog)
	}()
	defer func() { cancel(); <-stopped }()
	wait(first.Program.ID)
	retire(second)
	wait(second.Program.ID)
}

func TestRetiredProgram_RefusesEveryOwnerChangeToItsEntriesButWithdrawal(t *testing.T) {
	for _, finished := range []bool{false, true} {
		t.Run(map[bool]string{false: "while the retirement is pending", true: "once it is finished"}[finished], func(t *testing.T) {
			f := newRetireFixture(t)
			ctx := context.Background()
			var invitationID, grantID string
			mustUpdate(t, f.db, func(tx *Tx) error {
				if err := tx.QueryRowContext(ctx, `SELECT id FROM invitations WHERE entry_id = ?`, f.invited).Scan(&invitationID); err != nil {
					return err
				}
				return tx.QueryRowContext(ctx, `SELECT id FROM grants WHERE entry_id = ?`, f.active).Scan(&grantID)
			})
			p := mustProgramByID(t, f.db, f.owner, f.p.ID)
			if _, err := f.db.RetireProgram(ctx, f.owner, p.ID, Retirement{ExpectedRevision: p.Revision, Confirm: p.Slug}); err != nil {
				t.Fatal(err)
			}
			if finished {
				mustFinishRetirements(t, f.db)
			}
			before := dbFingerprint(t, f.db)
			for name, act := range map[string]func() error{
				"select": func() error {
					_, err := f.db.SelectEntry(ctx, f.owner, p.ID, f.waiting, Decision{Reason: "meets_policy"})
					return err
				},
				"bulk select": func() error {
					_, err := f.db.SelectEntries(ctx, f.owner, p.ID, Selection{EntryIDs: []string{f.waiting}, Reason: "meets_policy"})
					return err
				},
				"decline": func() error {
					_, err := f.db.DeclineEntry(ctx, f.owner, p.ID, f.selected, Decision{Reason: DeclineReasons[0]})
					return err
				},
				"bulk decline": func() error {
					_, err := f.db.DeclineEntries(ctx, f.owner, p.ID, Selection{EntryIDs: []string{f.waiting, f.selected}, Reason: DeclineReasons[0]})
					return err
				},
				"issue an invitation": func() error {
					_, err := f.db.IssueInvitation(ctx, f.owner, p.ID, f.selected, NewInvitation{RequestKey: uuid.NewString(), ExpiresAt: f.clock.Now().Add(time.Hour)})
					return err
				},
				"record a send": func() error {
					_, err := f.db.RecordDelivery(ctx, f.owner, invitationID, DeliveryRecord{RequestKey: uuid.NewString(), Channel: "email"})
					return err
				},
				"revoke the invitation": func() error {
					_, err := f.db.RevokeInvitation(ctx, f.owner, invitationID)
					return err
				},
				"revoke the access": func() error {
					_, err := f.db.RevokeGrant(ctx, f.owner, grantID)
					return err
				},
			} {
				err := act()
				wantCode(t, name, err, ECONFLICT)
				if err != nil && !strings.Contains(err.Error(), "This program is retired") {
					t.Errorf("%s: %q does not say the program is retired", name, err)
				}
			}
			wantUnchanged(t, "owner changes to a retired program's entries", f.db, before)

			// Withdrawal stays open: it is the applicant's choice, made by
			// themselves or through the owner on their documented request.
			if _, err := f.db.WithdrawOwn(ctx, p.Slug, "user_waiting", []string{"waiting@example.com"}); err != nil {
				t.Fatalf("the applicant's own withdrawal from a retired program: %v", err)
			}
			if e, err := f.db.WithdrawEntry(ctx, f.owner, p.ID, f.selected, Decision{Reason: "applicant_request"}); err != nil || e.State != StateWithdrawn {
				t.Fatalf("the owner's withdrawal on the applicant's request: %+v, %v", e, err)
			}
		})
	}
}
