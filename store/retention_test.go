package store

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"admit/internal/testutil"
)

// testRetention uses a different period per state so a mix-up shows.
var testRetention = Retention{
	Withdrawn:      10 * 24 * time.Hour,
	Declined:       20 * 24 * time.Hour,
	Revoked:        40 * 24 * time.Hour,
	RetiredProgram: 15 * 24 * time.Hour,
}

// lifecycleFixture is an open program with signups and the owner's actor.
type lifecycleFixture struct {
	db    *DB
	clock *testutil.Clock
	owner Actor
	p     *Program
}

func newLifecycleFixture(t *testing.T) *lifecycleFixture {
	t.Helper()
	clock := testutil.NewClock(testEpoch)
	db := mustOpenWith(t, filepath.Join(t.TempDir(), "admit.db"), Options{BindingKey: signupTestKey, Retention: testRetention, Now: clock.Now})
	owner, w := mustOwner(t, db)
	p := mustProgram(t, db, owner, w, "lifecycle")
	mustNotice(t, db, owner, p.ID)
	ctx := context.Background()
	if _, err := db.PutContent(ctx, owner, p.ID, ContentEdit{ExpectedRevision: 0, Body: "Private text."}); err != nil {
		t.Fatal(err)
	}
	p = mustProgramByID(t, db, owner, p.ID)
	yes := true
	p, err := db.UpdateProgram(ctx, owner, p.ID, ProgramSettings{ExpectedRevision: p.Revision, SignupOpen: &yes, AccessEnabled: &yes})
	if err != nil {
		t.Fatal(err)
	}
	return &lifecycleFixture{db: db, clock: clock, owner: owner, p: p}
}

// join signs email up and returns its entry ID and removal token.
func (f *lifecycleFixture) join(t *testing.T, email string) (string, string) {
	t.Helper()
	res, err := f.db.Signup(context.Background(), SignupRequest{Slug: f.p.Slug, RequestKey: uuid.NewString(),
		Email: email, NoticeVersion: 1, Permission: true})
	if err != nil {
		t.Fatalf("signup %s: %v", email, err)
	}
	var id string
	mustUpdate(t, f.db, func(tx *Tx) error {
		return tx.QueryRowContext(context.Background(), `SELECT id FROM entries WHERE email_key = ?`, email).Scan(&id)
	})
	return id, res.RemovalToken
}

// activate takes an entry through selection, invitation, a recorded send and
// redemption, returning the grant ID.
func (f *lifecycleFixture) activate(t *testing.T, entryID, email string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := f.db.SelectEntry(ctx, f.owner, f.p.ID, entryID, Decision{Reason: "meets_policy"}); err != nil {
		t.Fatal(err)
	}
	res, err := f.db.IssueInvitation(ctx, f.owner, f.p.ID, entryID, NewInvitation{RequestKey: uuid.NewString(), ExpiresAt: f.clock.Now().Add(24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.RecordDelivery(ctx, f.owner, res.Invitation.ID, DeliveryRecord{RequestKey: uuid.NewString(), Channel: "email"}); err != nil {
		t.Fatal(err)
	}
	red, err := f.db.Redeem(ctx, "user_"+entryID[:8], []string{email}, res.Code)
	if err != nil {
		t.Fatalf("redeem: %v", err)
	}
	return red.GrantID
}

// erased reports whether the entry's email has been erased.
func (f *lifecycleFixture) erased(t *testing.T, entryID string) bool {
	t.Helper()
	var key string
	var erasedAt *int64
	mustUpdate(t, f.db, func(tx *Tx) error {
		return tx.QueryRowContext(context.Background(), `SELECT email_key, erased_at FROM entries WHERE id = ?`, entryID).Scan(&key, &erasedAt)
	})
	if (erasedAt != nil) != strings.HasPrefix(key, "erased:") {
		t.Fatalf("entry %s: email_key %q and erased_at %v disagree", entryID, key, erasedAt)
	}
	return erasedAt != nil
}

func TestRetention_ErasesEachStateExactlyAtItsPolicy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy time.Duration
		// act moves a fresh entry into the state under test.
		act func(t *testing.T, f *lifecycleFixture, entryID, email string)
	}{
		{"withdrawn", testRetention.Withdrawn, func(t *testing.T, f *lifecycleFixture, id, _ string) {
			if _, err := f.db.WithdrawEntry(context.Background(), f.owner, f.p.ID, id, Decision{Reason: "applicant_request"}); err != nil {
				t.Fatal(err)
			}
		}},
		{"declined", testRetention.Declined, func(t *testing.T, f *lifecycleFixture, id, _ string) {
			if _, err := f.db.DeclineEntry(context.Background(), f.owner, f.p.ID, id, Decision{Reason: "not_eligible"}); err != nil {
				t.Fatal(err)
			}
		}},
		{"revoked", testRetention.Revoked, func(t *testing.T, f *lifecycleFixture, id, email string) {
			g := f.activate(t, id, email)
			if _, err := f.db.RevokeGrant(context.Background(), f.owner, g); err != nil {
				t.Fatal(err)
			}
		}},
		{"waiting in a retired program", testRetention.RetiredProgram, func(t *testing.T, f *lifecycleFixture, _, _ string) {
			f.retire(t)
		}},
		{"active in a retired program", testRetention.RetiredProgram, func(t *testing.T, f *lifecycleFixture, id, email string) {
			f.activate(t, id, email)
			f.retire(t)
		}},
		{"selected in a retired program", testRetention.RetiredProgram, func(t *testing.T, f *lifecycleFixture, id, _ string) {
			if _, err := f.db.SelectEntry(context.Background(), f.owner, f.p.ID, id, Decision{Reason: "meets_policy"}); err != nil {
				t.Fatal(err)
			}
			f.retire(t)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newLifecycleFixture(t)
			email := "person@example.com"
			id, _ := f.join(t, email)
			f.clock.Add(time.Hour)
			start := f.clock.Now()
			tc.act(t, f, id, email)

			// The exact moment: a millisecond (the stored precision) before
			// the policy it is kept, at the policy it is erased.
			f.clock.Set(start.Add(tc.policy - time.Millisecond))
			if n, err := f.db.Sweep(context.Background()); err != nil || n != 0 {
				t.Fatalf("sweep a millisecond before the policy: erased %d, err %v", n, err)
			}
			if f.erased(t, id) {
				t.Fatal("erased before its policy")
			}
			f.clock.Set(start.Add(tc.policy))
			if n, err := f.db.Sweep(context.Background()); err != nil || n != 1 {
				t.Fatalf("sweep at the policy: erased %d, err %v", n, err)
			}
			if !f.erased(t, id) {
				t.Fatal("not erased after its policy")
			}
			if got := mustCount(t, f.db, `SELECT count(*) FROM entries WHERE id = ?`, id); got != 1 {
				t.Fatalf("erasure deleted the row: count %d", got)
			}
			if got := mustCount(t, f.db, `SELECT count(*) FROM audit_events WHERE entry_id = ? AND event_type = 'erased' AND details NOT LIKE '%@%'`, id); got != 1 {
				t.Fatalf("erased events: %d", got)
			}
		})
	}
}

// retire retires the fixture's program at its current revision and runs
// the retirement's steps to their end, as the retirer does in admit serve.
func (f *lifecycleFixture) retire(t *testing.T) {
	t.Helper()
	p := mustProgramByID(t, f.db, f.owner, f.p.ID)
	if _, err := f.db.RetireProgram(context.Background(), f.owner, p.ID, Retirement{ExpectedRevision: p.Revision, Confirm: p.Slug}); err != nil {
		t.Fatalf("retire: %v", err)
	}
	mustFinishRetirements(t, f.db)
}

func TestRetention_ActiveStatesAreKeptWhileTheProgramRuns(t *testing.T) {
	f := newLifecycleFixture(t)
	waiting, _ := f.join(t, "waiting@example.com")
	active, _ := f.join(t, "active@example.com")
	f.activate(t, active, "active@example.com")
	f.clock.Add(10 * 365 * 24 * time.Hour)
	if n, err := f.db.Sweep(context.Background()); err != nil || n != 0 {
		t.Fatalf("sweep erased %d, err %v", n, err)
	}
	if f.erased(t, waiting) || f.erased(t, active) {
		t.Fatal("a running program's waiting or active entry was erased")
	}
}

func TestRetireProgram_RevokesAccessAndNeverPostponesErasure(t *testing.T) {
	f := newLifecycleFixture(t)
	ctx := context.Background()
	withdrawn, _ := f.join(t, "early@example.com")
	if _, err := f.db.WithdrawEntry(ctx, f.owner, f.p.ID, withdrawn, Decision{Reason: "applicant_request"}); err != nil {
		t.Fatal(err)
	}
	withdrawnAt := f.clock.Now()
	active, _ := f.join(t, "active@example.com")
	grant := f.activate(t, active, "active@example.com")
	invited, _ := f.join(t, "invited@example.com")
	if _, err := f.db.SelectEntry(ctx, f.owner, f.p.ID, invited, Decision{Reason: "meets_policy"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.IssueInvitation(ctx, f.owner, f.p.ID, invited, NewInvitation{RequestKey: uuid.NewString(), ExpiresAt: f.clock.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}

	f.clock.Add(24 * time.Hour)
	before := mustCount(t, f.db, `SELECT count(*) FROM audit_events`)
	f.retire(t)
	if got := mustCount(t, f.db, `SELECT count(*) FROM audit_events WHERE event_type = 'program_retired'`); got != 1 {
		t.Fatalf("program_retired events: %d", got)
	}
	if mustCount(t, f.db, `SELECT count(*) FROM audit_events`) <= before {
		t.Fatal("retirement not audited")
	}
	p := mustProgramByID(t, f.db, f.owner, f.p.ID)
	if p.SignupOpen || p.AccessEnabled || p.RetiredAt == nil {
		t.Fatalf("retired program: open=%v access=%v retired=%v", p.SignupOpen, p.AccessEnabled, p.RetiredAt)
	}
	if got := mustCount(t, f.db, `SELECT count(*) FROM grants WHERE id = ? AND active = 0`, grant); got != 1 {
		t.Fatal("grant still active after retirement")
	}
	if got := mustCount(t, f.db, `SELECT count(*) FROM invitations WHERE program_id = ? AND state = 'issued'`, f.p.ID); got != 0 {
		t.Fatalf("%d invitations still issued", got)
	}
	if got := mustCount(t, f.db, `SELECT count(*) FROM entries WHERE program_id = ? AND erase_after IS NULL AND erased_at IS NULL`, f.p.ID); got != 0 {
		t.Fatalf("%d entries have no erasure date after retirement", got)
	}
	// The withdrawn entry keeps its earlier date.
	var eraseAfter int64
	mustUpdate(t, f.db, func(tx *Tx) error {
		return tx.QueryRowContext(ctx, `SELECT erase_after FROM entries WHERE id = ?`, withdrawn).Scan(&eraseAfter)
	})
	if got, want := FromMillis(eraseAfter), withdrawnAt.Add(testRetention.Withdrawn); !got.Equal(want) {
		t.Fatalf("withdrawn erase_after=%v, want %v (retiring must not postpone it)", got, want)
	}
	// Signups are refused and nothing can be reissued.
	if _, err := f.db.Signup(ctx, SignupRequest{Slug: f.p.Slug, RequestKey: uuid.NewString(), Email: "late@example.com",
		NoticeVersion: 1, Permission: true}); ErrorCode(err) != ECONFLICT {
		t.Fatalf("signup after retirement: %v", err)
	}
	p = mustProgramByID(t, f.db, f.owner, f.p.ID)
	if _, err := f.db.RetireProgram(ctx, f.owner, p.ID, Retirement{ExpectedRevision: p.Revision, Confirm: p.Slug}); ErrorCode(err) != ECONFLICT {
		t.Fatalf("second retirement: %v", err)
	}
}

// startEraser runs the eraser with the store's checkpoint, as admit serve
// does without a replica, until the test ends.
func startEraser(t *testing.T, db *DB) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		db.RunEraser(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), db.Checkpoint)
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// waitUntilNoFileHolds waits up to a few seconds until neither the database
// file nor its WAL holds needle; control must stay in the database file.
func waitUntilNoFileHolds(t *testing.T, db *DB, needle, control string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var holding []string
		for _, path := range []string{db.Path, db.Path + "-wal"} {
			b, err := os.ReadFile(path)
			if os.IsNotExist(err) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte(needle)) {
				holding = append(holding, path)
			}
		}
		if len(holding) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the erased address is still in %s", strings.Join(holding, ", "))
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Control: the same check finds an address that was not erased.
	b, err := os.ReadFile(db.Path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(control)) {
		t.Fatal("the database file does not hold an address that was not erased: the check cannot see addresses")
	}
}

func TestErasure_RemovalLeavesTheDatabaseAndWALFilesWithoutAManualCheckpoint(t *testing.T) {
	sqliteOnly(t, "the database and WAL files")
	f := newLifecycleFixture(t)
	startEraser(t, f.db)
	ctx := context.Background()
	canary := "canary-7f3a9c@example.com"
	id, token := f.join(t, canary)
	f.join(t, "kept-1b2c@example.com")
	for i := 0; i < 8; i++ {
		f.join(t, uuid.NewString()[:8]+"@example.com")
	}
	if err := f.db.RemoveByToken(ctx, token); err != nil {
		t.Fatal(err)
	}
	if !f.erased(t, id) {
		t.Fatal("token removal did not erase")
	}
	waitUntilNoFileHolds(t, f.db, canary, "kept-1b2c@example.com")
}

func TestErasure_SweepLeavesTheDatabaseAndWALFilesWithoutAManualCheckpoint(t *testing.T) {
	sqliteOnly(t, "the database and WAL files")
	f := newLifecycleFixture(t)
	startEraser(t, f.db)
	ctx := context.Background()
	canary := "canary-swept-4d1e@example.com"
	id, _ := f.join(t, canary)
	f.join(t, "kept-9a8b@example.com")
	if _, err := f.db.WithdrawEntry(ctx, f.owner, f.p.ID, id, Decision{Reason: "applicant_request"}); err != nil {
		t.Fatal(err)
	}
	f.clock.Add(testRetention.Withdrawn + time.Minute)
	if n, err := f.db.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("sweep erased %d, %v; want 1", n, err)
	}
	waitUntilNoFileHolds(t, f.db, canary, "kept-9a8b@example.com")
}

func TestRunSweeper_ErasesDueEntriesAtStart(t *testing.T) {
	f := newLifecycleFixture(t)
	ctx := context.Background()
	id, _ := f.join(t, "due@example.com")
	if _, err := f.db.WithdrawEntry(ctx, f.owner, f.p.ID, id, Decision{Reason: "applicant_request"}); err != nil {
		t.Fatal(err)
	}
	f.clock.Add(testRetention.Withdrawn + time.Minute)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.db.RunSweeper(runCtx, time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	// The first sweep runs at start, not after the first interval.
	deadline := time.Now().Add(10 * time.Second)
	for !f.erased(t, id) {
		if time.Now().After(deadline) {
			t.Fatal("the sweeper did not erase a due entry at start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
}

// A withdrawal after the program's retirement keeps the earlier of the two
// erasure dates: the withdrawal's when it comes sooner, the retirement's
// when it would otherwise be postponed.
func TestRetiredProgram_WithdrawalNeverPostponesErasure(t *testing.T) {
	f := newLifecycleFixture(t)
	ctx := context.Background()
	soon, _ := f.join(t, "soon@example.com")
	late, _ := f.join(t, "late@example.com")
	f.retire(t)
	retiredAt := f.clock.Now()
	eraseAfter := func(id string) time.Time {
		var ms int64
		mustUpdate(t, f.db, func(tx *Tx) error {
			return tx.QueryRowContext(ctx, `SELECT erase_after FROM entries WHERE id = ?`, id).Scan(&ms)
		})
		return FromMillis(ms)
	}
	// testRetention: withdrawn 10 days, retired program 15 days.
	f.clock.Add(24 * time.Hour)
	if _, err := f.db.WithdrawEntry(ctx, f.owner, f.p.ID, soon, Decision{Reason: "applicant_request"}); err != nil {
		t.Fatal(err)
	}
	if got, want := eraseAfter(soon), f.clock.Now().Add(testRetention.Withdrawn); !got.Equal(want) {
		t.Errorf("withdrawn a day after retirement: erase_after=%v, want the withdrawal's %v", got, want)
	}
	f.clock.Add(9 * 24 * time.Hour)
	if _, err := f.db.WithdrawEntry(ctx, f.owner, f.p.ID, late, Decision{Reason: "applicant_request"}); err != nil {
		t.Fatal(err)
	}
	if got, want := eraseAfter(late), retiredAt.Add(testRetention.RetiredProgram); !got.Equal(want) {
		t.Errorf("withdrawn ten days after retirement: erase_after=%v, want the retirement's %v (never later)", got, want)
	}
}
