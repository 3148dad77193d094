package store

import (
	"context"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"admit/migrations"
)

// statsDay returns the daily row for the UTC day of t.
func statsDay(t *testing.T, st *ProgramStats, day time.Time) int {
	t.Helper()
	want := day.UTC().Truncate(24 * time.Hour)
	for _, d := range st.Daily {
		if d.Day.Equal(want) {
			return d.Signups
		}
	}
	t.Fatalf("no daily row for %s in %v", want.Format(time.DateOnly), st.Daily)
	return 0
}

func mustStats(t *testing.T, db *DB, a Actor, programID string) *ProgramStats {
	t.Helper()
	st, err := db.ProgramStats(context.Background(), a, programID)
	if err != nil {
		t.Fatalf("stats: %v", err)
	}
	return st
}

func TestProgramStats_DailyCoversThirtyUTCDaysOldestFirstWithZeroDays(t *testing.T) {
	db, clock := mustOpenDBWithClock(t)
	sp := mustSignupProgram(t, db, "daily-stats", 1000, 1000)
	// testEpoch is 09:00 UTC. Two signups 40 days ago (outside the window),
	// three 29 days ago (the oldest day in it), one at 23:59 yesterday and
	// two today, one of them a duplicate that adds no entry.
	start := clock.Now()
	clock.Set(start.Add(-40 * 24 * time.Hour))
	mustSignup(t, db, sp.signupReq("old1@example.com"))
	mustSignup(t, db, sp.signupReq("old2@example.com"))
	clock.Set(start.Add(-29 * 24 * time.Hour))
	for _, e := range []string{"a@example.com", "b@example.com", "c@example.com"} {
		mustSignup(t, db, sp.signupReq(e))
	}
	yesterdayLate := start.Truncate(24 * time.Hour).Add(-time.Minute)
	clock.Set(yesterdayLate)
	mustSignup(t, db, sp.signupReq("late@example.com"))
	clock.Set(start)
	mustSignup(t, db, sp.signupReq("today@example.com"))
	mustSignup(t, db, sp.signupReq("a@example.com")) // duplicate: no new entry

	st := mustStats(t, db, sp.Owner, sp.Program.ID)
	if got, want := len(st.Daily), StatsDays; got != want {
		t.Fatalf("daily rows=%d, want %d", got, want)
	}
	first, last := st.Daily[0].Day, st.Daily[len(st.Daily)-1].Day
	if want := start.Truncate(24 * time.Hour); !last.Equal(want) {
		t.Fatalf("last day=%s, want today %s", last, want)
	}
	if want := start.Truncate(24*time.Hour).AddDate(0, 0, -29); !first.Equal(want) {
		t.Fatalf("first day=%s, want %s", first, want)
	}
	for i := 1; i < len(st.Daily); i++ {
		if got := st.Daily[i].Day.Sub(st.Daily[i-1].Day); got != 24*time.Hour {
			t.Fatalf("day %d follows the one before by %s, want one day", i, got)
		}
	}
	sum := 0
	for _, d := range st.Daily {
		sum += d.Signups
	}
	if got, want := sum, 5; got != want {
		t.Fatalf("signups in the window=%d, want %d (the two 40 days ago and the duplicate do not count): %v", got, want, st.Daily)
	}
	if got := statsDay(t, st, start.Add(-29*24*time.Hour)); got != 3 {
		t.Fatalf("oldest day=%d, want 3", got)
	}
	if got := statsDay(t, st, yesterdayLate); got != 1 {
		t.Fatalf("yesterday=%d, want 1", got)
	}
	if got := statsDay(t, st, start); got != 1 {
		t.Fatalf("today=%d, want 1", got)
	}
	// A day later the window moves: the oldest day of three drops out.
	clock.Set(start.Add(24 * time.Hour))
	st = mustStats(t, db, sp.Owner, sp.Program.ID)
	if got := st.Daily[0].Signups; got != 0 {
		t.Fatalf("after a day the oldest day=%d, want 0 (the three signups left the window)", got)
	}
}

func TestProgramStats_CountsSeatsAndFunnelAreExact(t *testing.T) {
	db, clock := mustOpenDBWithClock(t)
	ctx := context.Background()
	sp := mustSignupProgram(t, db, "glance", 1000, 1000)
	ids := map[string]string{}
	for _, e := range []string{"w1@example.com", "w2@example.com", "s1@example.com", "i1@example.com", "i2@example.com",
		"r1@example.com", "d1@example.com", "x1@example.com", "reissue@example.com"} {
		mustSignup(t, db, sp.signupReq(e))
		ids[e] = mustEntrySnapshot(t, db, sp.Program.ID, e).ID
	}
	selectIt := func(e string) {
		t.Helper()
		if _, err := db.SelectEntry(ctx, sp.Owner, sp.Program.ID, ids[e], Decision{Reason: "meets_policy"}); err != nil {
			t.Fatalf("select %s: %v", e, err)
		}
	}
	issue := func(e string, d time.Duration) string {
		t.Helper()
		res, err := db.IssueInvitation(ctx, sp.Owner, sp.Program.ID, ids[e], NewInvitation{RequestKey: uuid.NewString(), ExpiresAt: clock.Now().Add(d)})
		if err != nil {
			t.Fatalf("issue %s: %v", e, err)
		}
		return res.Invitation.ID
	}
	selectIt("s1@example.com")
	selectIt("i1@example.com")
	issue("i1@example.com", 48*time.Hour)
	selectIt("i2@example.com")
	issue("i2@example.com", time.Hour) // expires below: no longer reserves a seat
	mustRedeemedGrant(t, db, sp, ids["r1@example.com"], "r1@example.com", "user_r1")
	if _, err := db.DeclineEntry(ctx, sp.Owner, sp.Program.ID, ids["d1@example.com"], Decision{Reason: "capacity"}); err != nil {
		t.Fatalf("decline: %v", err)
	}
	if _, err := db.WithdrawEntry(ctx, sp.Owner, sp.Program.ID, ids["x1@example.com"], Decision{Reason: "applicant_request"}); err != nil {
		t.Fatalf("withdraw: %v", err)
	}
	// Selected, invited, the invitation revoked, invited again: one entry
	// counts once at each step.
	selectIt("reissue@example.com")
	first := issue("reissue@example.com", 48*time.Hour)
	if _, err := db.RevokeInvitation(ctx, sp.Owner, first); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	issue("reissue@example.com", 48*time.Hour)
	clock.Add(2 * time.Hour)

	st := mustStats(t, db, sp.Owner, sp.Program.ID)
	wantCounts := map[string]int{StateWaiting: 2, StateSelected: 1, StateInvited: 3, StateActive: 1,
		StateDeclined: 1, StateWithdrawn: 1, StateRevoked: 0}
	for s, n := range wantCounts {
		if got := st.Counts[s]; got != n {
			t.Errorf("count %s=%d, want %d", s, got, n)
		}
	}
	// Cap 5: one active grant; i1 and the reissued invitation are live, i2's expired.
	if got, want := st.Seats, (Seats{Cap: 5, Used: 1, Reserved: 2, Left: 2}); got != want {
		t.Errorf("seats=%+v, want %+v", got, want)
	}
	if got, want := st.Funnel, (Funnel{Joined: 9, Selected: 5, Invited: 4, Redeemed: 1}); got != want {
		t.Errorf("funnel=%+v, want %+v", got, want)
	}
}

func TestProgramStats_SeatsLeftNeverBelowZeroAndForeignIsNotFound(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	sp := mustSignupProgram(t, db, "seat-floor", 100, 100)
	for _, e := range []string{"g1@example.com", "g2@example.com"} {
		mustSignup(t, db, sp.signupReq(e))
		mustRedeemedGrant(t, db, sp, mustEntrySnapshot(t, db, sp.Program.ID, e).ID, e, "user_"+e[:2])
	}
	// The cap was lowered under the grants directly in SQL: the page must
	// still say none are left, not a negative number.
	mustUpdate(t, db, func(tx *Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE programs SET seat_cap = 1 WHERE id = ?`, sp.Program.ID)
		return err
	})
	st := mustStats(t, db, sp.Owner, sp.Program.ID)
	if got, want := st.Seats, (Seats{Cap: 1, Used: 2, Reserved: 0, Left: 0}); got != want {
		t.Fatalf("seats=%+v, want %+v", got, want)
	}
	other, _ := mustOwner(t, db)
	_, err := db.ProgramStats(ctx, other, sp.Program.ID)
	wantCode(t, "foreign owner", err, ENOTFOUND)
}

func TestProgramFunnel_MigrationCountsExistingHistory(t *testing.T) {
	db := MustOpenDB(t)
	sp := mustSignupProgram(t, db, "funnel-backfill", 100, 100)
	for _, e := range []string{"a@example.com", "b@example.com", "c@example.com"} {
		mustSignup(t, db, sp.signupReq(e))
	}
	b := mustEntrySnapshot(t, db, sp.Program.ID, "b@example.com").ID
	mustRedeemedGrant(t, db, sp, b, "b@example.com", "user_b")
	before := mustStats(t, db, sp.Owner, sp.Program.ID).Funnel
	// Recount from history as the migration does, and compare.
	mustUpdate(t, db, func(tx *Tx) error {
		_, err := tx.ExecContext(context.Background(), `DELETE FROM program_funnel`)
		return err
	})
	mustUpdate(t, db, func(tx *Tx) error {
		_, err := tx.ExecContext(context.Background(), funnelBackfillSQL(t))
		return err
	})
	after := mustStats(t, db, sp.Owner, sp.Program.ID).Funnel
	if want := (Funnel{Joined: 3, Selected: 1, Invited: 1, Redeemed: 1}); before != want || after != want {
		t.Fatalf("funnel as counted=%+v, recounted from history=%+v, want %+v", before, after, want)
	}
}

// funnelBackfillSQL is the migration's recount statement, read from the
// migration file itself so the test checks what ships.
func funnelBackfillSQL(t *testing.T) string {
	t.Helper()
	b, err := fs.ReadFile(migrations.FS, "00008_program_funnel.sql")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	start := strings.Index(s, "INSERT INTO program_funnel")
	end := strings.Index(s[start:], ";")
	if start < 0 || end < 0 {
		t.Fatal("no backfill statement in the migration")
	}
	return s[start : start+end]
}

func TestEventTypes_ListsEveryRegisteredTypeOnce(t *testing.T) {
	if got, want := len(EventTypes), len(eventRegistry); got != want {
		t.Fatalf("EventTypes has %d types, the registry %d", got, want)
	}
	seen := map[string]bool{}
	for _, et := range EventTypes {
		if _, ok := detailsByType[et]; !ok || seen[et] {
			t.Fatalf("EventTypes lists %q, which is not registered once", et)
		}
		seen[et] = true
	}
}

func TestFilteredEvents_ByTypeAndEntryWithAddressesUntilErased(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	sp := mustSignupProgram(t, db, "history-filter", 100, 100)
	ids := map[string]string{}
	tokens := map[string]string{}
	for _, e := range []string{"ada@example.com", "grace@example.com", "edsger@example.com"} {
		tokens[e] = mustSignup(t, db, sp.signupReq(e)).RemovalToken
		ids[e] = mustEntrySnapshot(t, db, sp.Program.ID, e).ID
	}
	for _, e := range []string{"ada@example.com", "grace@example.com"} {
		if _, err := db.SelectEntry(ctx, sp.Owner, sp.Program.ID, ids[e], Decision{Reason: "meets_policy"}); err != nil {
			t.Fatal(err)
		}
	}
	// Edsger leaves with the private link: the address is erased at once.
	if err := db.RemoveByToken(ctx, tokens["edsger@example.com"]); err != nil {
		t.Fatal(err)
	}

	page, err := db.FilteredEvents(ctx, sp.Owner, sp.Program.ID, EventFilter{Type: string(EventSelected)})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(page.Events); got != 2 {
		t.Fatalf("selected events=%d, want 2", got)
	}
	for _, ev := range page.Events {
		if ev.Type != string(EventSelected) || ev.EntryEmail == "" {
			t.Fatalf("event %+v: want a selection naming its entry's address", ev)
		}
	}
	// Ada's history: signup and selection, newest first, one per page.
	f := EventFilter{EntryID: ids["ada@example.com"], Limit: 1}
	var types []string
	for {
		page, err := db.FilteredEvents(ctx, sp.Owner, sp.Program.ID, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range page.Events {
			if ev.EntryID != ids["ada@example.com"] || ev.EntryEmail != "ada@example.com" {
				t.Fatalf("event %+v in Ada's history", ev)
			}
			types = append(types, ev.Type)
		}
		if page.NextCursor == "" {
			break
		}
		f.Cursor = page.NextCursor
	}
	if got, want := strings.Join(types, ","), "selected,signup"; got != want {
		t.Fatalf("Ada's history=%s, want %s", got, want)
	}
	// The erased entry's history names no address, and is found by ID only.
	page, err = db.FilteredEvents(ctx, sp.Owner, sp.Program.ID, EventFilter{EntryID: ids["edsger@example.com"]})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Events) == 0 {
		t.Fatal("the erased entry has no history")
	}
	for _, ev := range page.Events {
		if ev.EntryEmail != "" || strings.Contains(ev.EntryEmail, "edsger") {
			t.Fatalf("erased entry's event carries %q", ev.EntryEmail)
		}
	}
	if id, err := db.EntryIDFor(ctx, sp.Owner, sp.Program.ID, " Grace@EXAMPLE.com "); err == nil {
		t.Fatalf("a different local part found entry %s", id)
	}
	if id, err := db.EntryIDFor(ctx, sp.Owner, sp.Program.ID, "grace@EXAMPLE.com"); err != nil || id != ids["grace@example.com"] {
		t.Fatalf("by address: %q, %v", id, err)
	}
	_, err = db.EntryIDFor(ctx, sp.Owner, sp.Program.ID, "edsger@example.com")
	wantCode(t, "an erased address", err, EINVALID)
	if id, err := db.EntryIDFor(ctx, sp.Owner, sp.Program.ID, strings.ToUpper(ids["edsger@example.com"])); err != nil || id != ids["edsger@example.com"] {
		t.Fatalf("erased entry by ID: %q, %v", id, err)
	}
	for _, bad := range []EventFilter{{Type: "nonsense"}, {EntryID: "ada@example.com"}, {EntryID: "1234"}} {
		_, err := db.FilteredEvents(ctx, sp.Owner, sp.Program.ID, bad)
		wantCode(t, "filter "+bad.Type+bad.EntryID, err, EINVALID)
	}
	other, _ := mustOwner(t, db)
	_, err = db.EntryIDFor(ctx, other, sp.Program.ID, "grace@example.com")
	wantCode(t, "a foreign owner looking up an address", err, ENOTFOUND)
}
