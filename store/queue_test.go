package store

import (
	"context"
	"encoding/base64"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"admit/internal/testutil"
)

// queueRow is what the pagination test knows about one inserted entry.
type queueRow struct {
	id      string
	state   string
	created int64
}

// mustBulkEntries inserts n entries into the program in one transaction,
// with insertEntry alone: states cycle unevenly through every state, and
// join times repeat (several entries share an instant) and do not follow
// insertion order, so the ID tie-break is exercised. The rows lack what the
// store's operations write beside an entry (receipt, events, invitations
// and grants for the later states): it serves only the ten-thousand-entry
// test of the queue's read path; every other test builds entries with
// mustEntryVia.
func mustBulkEntries(tb testing.TB, db *DB, programID, noticeID string, n int, base time.Time) []queueRow {
	tb.Helper()
	rows := make([]queueRow, 0, n)
	mustUpdate(tb, db, func(tx *Tx) error {
		for i := 0; i < n; i++ {
			r := queueRow{id: uuid.NewString(), state: EntryStates[(i*i+i/3)%len(EntryStates)],
				created: Millis(base) + int64((i*7919)%(n/4+1))*1000}
			if err := insertEntry(context.Background(), tx, newEntry{ID: r.id, ProgramID: programID,
				Email: fmt.Sprintf("p%05d@example.test", i), NoticeID: noticeID, State: r.state, CreatedAt: r.created}); err != nil {
				return err
			}
			rows = append(rows, r)
		}
		return nil
	})
	return rows
}

// expectedQueue is the reference answer: the rows the filter admits, in
// (join time, ID) order.
func expectedQueue(rows []queueRow, f QueueFilter) []string {
	var sel []queueRow
	for _, r := range rows {
		if f.State != "" && r.state != f.State {
			continue
		}
		if !f.From.IsZero() && r.created < Millis(f.From) {
			continue
		}
		if !f.To.IsZero() && r.created >= Millis(f.To) {
			continue
		}
		sel = append(sel, r)
	}
	sort.Slice(sel, func(i, j int) bool {
		if sel[i].created != sel[j].created {
			return sel[i].created < sel[j].created
		}
		return sel[i].id < sel[j].id
	})
	ids := make([]string, len(sel))
	for i, r := range sel {
		ids[i] = r.id
	}
	return ids
}

// walkQueue follows NextCursor from the first page to the last and returns
// every ID seen, checking each page's size.
func walkQueue(tb testing.TB, db *DB, a Actor, programID string, f QueueFilter) []string {
	tb.Helper()
	limit := f.Limit
	if limit == 0 {
		limit = DefaultPageSize
	}
	var seen []string
	for pages := 0; ; pages++ {
		if pages > 20000 {
			tb.Fatal("pagination does not end")
		}
		page, err := db.Queue(context.Background(), a, programID, f)
		if err != nil {
			tb.Fatalf("queue %+v: %v", f, err)
		}
		if len(page.Entries) > limit {
			tb.Fatalf("page of %d entries, limit %d", len(page.Entries), limit)
		}
		for _, e := range page.Entries {
			seen = append(seen, e.ID)
		}
		if page.NextCursor == "" {
			return seen
		}
		if len(page.Entries) != limit {
			tb.Fatalf("a page before the last holds %d entries, want %d", len(page.Entries), limit)
		}
		f.Cursor = page.NextCursor
	}
}

func TestQueue_CursorPaginationVisitsTenThousandEntriesOnceInOrderUnderEveryFilter(t *testing.T) {
	db := MustOpenDB(t)
	a, w := mustOwner(t, db)
	p := mustProgram(t, db, a, w, "ten-thousand")
	n := mustNotice(t, db, a, p.ID)
	base := testEpoch.Add(-30 * 24 * time.Hour)
	rows := mustBulkEntries(t, db, p.ID, n.ID, 10000, base)
	if got := mustCount(t, db, `SELECT count(*) FROM entries WHERE program_id = ?`, p.ID); got != 10000 {
		t.Fatalf("entries=%d, want 10000", got)
	}

	from, to := base.Add(500*time.Second), base.Add(1800*time.Second)
	filters := []QueueFilter{
		{},
		{Limit: MaxPageSize},
		{Limit: 37},
		{From: from},
		{To: to, Limit: 113},
		{From: from, To: to, Limit: 64},
	}
	for _, st := range EntryStates {
		filters = append(filters, QueueFilter{State: st, Limit: 97}, QueueFilter{State: st, From: from, To: to, Limit: 29})
	}
	for _, f := range filters {
		want := expectedQueue(rows, f)
		if len(want) == 0 {
			t.Fatalf("filter %+v admits nothing: the fixture does not exercise it", f)
		}
		got := walkQueue(t, db, a, p.ID, f)
		seen := make(map[string]int, len(got))
		for _, id := range got {
			seen[id]++
			if seen[id] > 1 {
				t.Fatalf("filter %+v: entry %s visited twice", f, id)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("filter %+v: visited %d entries, want %d", f, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("filter %+v: position %d is %s, want %s (order by join time, then ID)", f, i, got[i], want[i])
			}
		}
	}
}

func TestQueue_EntriesJoiningDuringPagingAreVisitedOnce(t *testing.T) {
	db, clock := mustOpenDBWithClock(t)
	a, w := mustOwner(t, db)
	np := newTestProgram(w, "arrivals")
	np.QueueCap, np.HourlyCap = 1000, 1000
	p, err := db.CreateProgram(context.Background(), a, np)
	if err != nil {
		t.Fatal(err)
	}
	mustNotice(t, db, a, p.ID)
	mustSetProgram(t, db, a, p.ID, func(s *ProgramSettings) { s.SignupOpen = ptrTo(true) })
	// 500 signups over the past hour, several sharing each instant.
	start := clock.Now()
	var rows []string
	for i := range 500 {
		clock.Set(start.Add(-time.Hour + time.Duration(i/4)*time.Second))
		rows = append(rows, mustEntryVia(t, db, a, p.ID, StateWaiting))
	}
	clock.Set(start)
	first, err := db.Queue(context.Background(), a, p.ID, QueueFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	// New entries arrive after the first page, later than every other.
	clock.Add(time.Minute)
	var arrived []string
	for i := 0; i < 5; i++ {
		arrived = append(arrived, mustEntryVia(t, db, a, p.ID, StateWaiting))
	}
	seen := map[string]int{}
	for _, e := range first.Entries {
		seen[e.ID]++
	}
	for _, id := range walkQueue(t, db, a, p.ID, QueueFilter{Limit: 100, Cursor: first.NextCursor}) {
		seen[id]++
	}
	if got, want := len(seen), len(rows)+len(arrived); got != want {
		t.Fatalf("distinct entries visited=%d, want %d", got, want)
	}
	for id, c := range seen {
		if c != 1 {
			t.Fatalf("entry %s visited %d times", id, c)
		}
	}
	for _, id := range arrived {
		if seen[id] != 1 {
			t.Fatalf("new entry %s not visited", id)
		}
	}
}

var cursorShape = regexp.MustCompile(`^[0-9]+\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func TestQueue_CursorHoldsOnlyAnInstantAndAnID(t *testing.T) {
	db := MustOpenDB(t)
	a, w := mustOwner(t, db)
	p := mustProgram(t, db, a, w, "cursor-shape")
	mustNotice(t, db, a, p.ID)
	mustSetProgram(t, db, a, p.ID, func(s *ProgramSettings) { s.SignupOpen = ptrTo(true) })
	for range 10 {
		mustEntryVia(t, db, a, p.ID, StateWaiting)
	}
	page, err := db.Queue(context.Background(), a, p.ID, QueueFilter{Limit: 3, State: ""})
	if err != nil || page.NextCursor == "" {
		t.Fatalf("queue: %v, cursor %q", err, page.NextCursor)
	}
	raw, err := base64.RawURLEncoding.DecodeString(page.NextCursor)
	if err != nil {
		t.Fatalf("cursor is not base64url: %v", err)
	}
	last := page.Entries[len(page.Entries)-1]
	if got, want := string(raw), fmt.Sprintf("%d.%s", Millis(last.CreatedAt), last.ID); got != want || !cursorShape.MatchString(got) {
		t.Fatalf("cursor holds %q, want %q", got, want)
	}
	if strings.Contains(string(raw), "@") {
		t.Fatal("cursor holds an address")
	}
}

func TestQueue_RejectsBadFiltersAndForeignOwners(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	a, w := mustOwner(t, db)
	stranger, _ := mustOwner(t, db)
	p := mustProgram(t, db, a, w, "bad-filters")
	for _, tc := range []struct {
		name string
		f    QueueFilter
		code string
	}{
		{"unknown state", QueueFilter{State: "pending"}, EINVALID},
		{"limit too large", QueueFilter{Limit: MaxPageSize + 1}, EINVALID},
		{"negative limit", QueueFilter{Limit: -1}, EINVALID},
		{"cursor not base64", QueueFilter{Cursor: "%%%"}, EINVALID},
		{"cursor without an ID", QueueFilter{Cursor: base64.RawURLEncoding.EncodeToString([]byte("123.nope"))}, EINVALID},
		{"empty window", QueueFilter{From: testEpoch, To: testEpoch}, EINVALID},
	} {
		_, err := db.Queue(ctx, a, p.ID, tc.f)
		wantErrorCode(t, tc.name, err, tc.code)
	}
	_, err := db.Queue(ctx, stranger, p.ID, QueueFilter{})
	wantErrorCode(t, "foreign owner", err, ENOTFOUND)
	_, err = db.StateCounts(ctx, stranger, p.ID)
	wantErrorCode(t, "foreign owner counts", err, ENOTFOUND)
}

// ownerKit is a program with a notice, for the transition tests.
type ownerKit struct {
	db     *DB
	clock  *testutil.Clock
	a      Actor
	p      *Program
	notice *Notice
}

func mustOwnerKit(t *testing.T, slug string, seats int) ownerKit {
	t.Helper()
	db, clock := mustOpenDBWithClock(t)
	a, w := mustOwner(t, db)
	np := newTestProgram(w, slug)
	np.SeatCap = seats
	p, err := db.CreateProgram(context.Background(), a, np)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	n := mustNotice(t, db, a, p.ID)
	return ownerKit{db: db, clock: clock, a: a, p: mustProgramByID(t, db, a, p.ID), notice: n}
}

func (k ownerKit) entry(t *testing.T, state string) string {
	t.Helper()
	return mustEntryVia(t, k.db, k.a, k.p.ID, state)
}

func (k ownerKit) state(t *testing.T, entryID string) string {
	t.Helper()
	var s string
	err := k.db.View(context.Background(), func(tx *Tx) error {
		return tx.QueryRowContext(context.Background(), `SELECT state FROM entries WHERE id = ?`, entryID).Scan(&s)
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSelectEntries_AllOrNoneWithOneAuditEventEach(t *testing.T) {
	k := mustOwnerKit(t, "bulk-select", 5)
	ctx := context.Background()
	w1, w2, sel := k.entry(t, StateWaiting), k.entry(t, StateWaiting), k.entry(t, StateSelected)

	wantUnchangedBy(t, "a refused bulk select", k.db, func() {
		_, err := k.db.SelectEntries(ctx, k.a, k.p.ID, Selection{EntryIDs: []string{w1, sel, w2}, Reason: "meets_policy"})
		wantErrorCode(t, "one not waiting", err, ECONFLICT)
	})
	if k.state(t, w1) != StateWaiting || k.state(t, w2) != StateWaiting {
		t.Fatal("a refused bulk select changed an entry")
	}
	var out []Entry
	if got := auditDelta(t, k.db, func() {
		var err error
		out, err = k.db.SelectEntries(ctx, k.a, k.p.ID, Selection{EntryIDs: []string{w1, w2, w1}, Reason: "priority_cohort"})
		if err != nil {
			t.Fatal(err)
		}
	}); got != 2 {
		t.Fatalf("audit events=%d, want one per entry (2)", got)
	}
	if len(out) != 2 || out[0].State != StateSelected || out[1].State != StateSelected {
		t.Fatalf("read-back %+v", out)
	}
	if n := mustCount(t, k.db, `SELECT count(*) FROM audit_events WHERE event_type = 'selected'
		AND `+jsonField("reason")+` = 'priority_cohort' AND `+jsonField("from")+` = 'waiting'`); n != 2 {
		t.Fatalf("selected events with reason and prior state=%d, want 2", n)
	}
	_, err := k.db.SelectEntries(ctx, k.a, k.p.ID, Selection{EntryIDs: nil, Reason: "meets_policy"})
	wantErrorCode(t, "nothing chosen", err, EINVALID)
	_, err = k.db.SelectEntries(ctx, k.a, k.p.ID, Selection{EntryIDs: []string{w1}, Reason: "free text"})
	wantErrorCode(t, "unknown reason", err, EINVALID)
}

func TestDeclineEntry_RefusedWithAnIssuedInvitation(t *testing.T) {
	k := mustOwnerKit(t, "decline-rules", 5)
	ctx := context.Background()
	e := k.entry(t, StateSelected)
	if _, err := k.db.IssueInvitation(ctx, k.a, k.p.ID, e, NewInvitation{RequestKey: uuid.NewString(), ExpiresAt: k.clock.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	_, err := k.db.DeclineEntry(ctx, k.a, k.p.ID, e, Decision{Reason: "capacity"})
	wantErrorCode(t, "decline an invited entry", err, ECONFLICT)
	w := k.entry(t, StateWaiting)
	if got := auditDelta(t, k.db, func() {
		d, err := k.db.DeclineEntry(ctx, k.a, k.p.ID, w, Decision{Reason: "not_eligible"})
		if err != nil || d.State != StateDeclined || d.EraseAfter == nil {
			t.Fatalf("decline: %+v %v (a declined address is scheduled for erasure)", d, err)
		}
	}); got != 1 {
		t.Fatalf("audit events=%d, want 1", got)
	}
}

func TestWithdrawEntry_RevokesInvitationAndGrantAtOnceAndRepeatsQuietly(t *testing.T) {
	k := mustOwnerKit(t, "withdraw-all", 5)
	ctx := context.Background()
	e := k.entry(t, StateSelected)
	res, err := k.db.IssueInvitation(ctx, k.a, k.p.ID, e, NewInvitation{RequestKey: uuid.NewString(), ExpiresAt: k.clock.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	var email string
	mustUpdate(t, k.db, func(tx *Tx) error {
		return tx.QueryRowContext(ctx, `SELECT email_key FROM entries WHERE id = ?`, e).Scan(&email)
	})
	if _, err := k.db.RecordDelivery(ctx, k.a, res.Invitation.ID, DeliveryRecord{RequestKey: uuid.NewString(), Channel: "email"}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.db.Redeem(ctx, "user_withdraw", []string{email}, res.Code); err != nil {
		t.Fatalf("redeem: %v", err)
	}
	if got := auditDelta(t, k.db, func() {
		out, err := k.db.WithdrawEntry(ctx, k.a, k.p.ID, e, Decision{Reason: "applicant_request"})
		if err != nil || out.State != StateWithdrawn {
			t.Fatalf("withdraw: %+v %v", out, err)
		}
	}); got != 2 {
		t.Fatalf("audit events=%d, want 2 (grant revoked, withdrawn)", got)
	}
	if n := mustCount(t, k.db, `SELECT count(*) FROM grants WHERE entry_id = ? AND active = 1`, e); n != 0 {
		t.Fatal("the grant is still active after withdrawal")
	}
	wantUnchangedBy(t, "a repeated withdrawal", k.db, func() {
		out, err := k.db.WithdrawEntry(ctx, k.a, k.p.ID, e, Decision{Reason: "applicant_request"})
		if err != nil || out.State != StateWithdrawn {
			t.Fatalf("repeat: %+v %v", out, err)
		}
	})
	_, err = k.db.WithdrawEntry(ctx, k.a, k.p.ID, e, Decision{Reason: "owner_discretion"})
	wantErrorCode(t, "withdraw without the applicant's request", err, EINVALID)
}

func TestOwnerOperations_ForeignOwnerSeesNothingAndChangesNothing(t *testing.T) {
	k := mustOwnerKit(t, "foreign-ops", 5)
	ctx := context.Background()
	stranger, _ := mustOwner(t, k.db)
	w := k.entry(t, StateWaiting)
	before := mustCount(t, k.db, `SELECT count(*) FROM audit_events`)
	checks := map[string]error{}
	_, checks["detail"] = k.db.EntryDetail(ctx, stranger, k.p.ID, w)
	_, checks["select"] = k.db.SelectEntry(ctx, stranger, k.p.ID, w, Decision{Reason: "meets_policy"})
	_, checks["bulk"] = k.db.SelectEntries(ctx, stranger, k.p.ID, Selection{EntryIDs: []string{w}, Reason: "meets_policy"})
	_, checks["decline"] = k.db.DeclineEntry(ctx, stranger, k.p.ID, w, Decision{Reason: "capacity"})
	_, checks["withdraw"] = k.db.WithdrawEntry(ctx, stranger, k.p.ID, w, Decision{Reason: "applicant_request"})
	_, checks["events"] = k.db.ProgramEvents(ctx, stranger, k.p.ID, "", 0)
	checks["export"] = k.db.ExportQueue(ctx, stranger, k.p.ID, func(Entry) error { return nil })
	_, _, checks["content"] = k.db.OwnerContent(ctx, stranger, k.p.ID)
	_, checks["notices"] = k.db.ProgramNotices(ctx, stranger, k.p.ID)
	_, checks["assets"] = k.db.ListAssets(ctx, stranger, k.p.ID)
	for name, err := range checks {
		wantErrorCode(t, name, err, ENOTFOUND)
	}
	if got := mustCount(t, k.db, `SELECT count(*) FROM audit_events`); got != before || k.state(t, w) != StateWaiting {
		t.Fatal("a foreign owner changed something")
	}
}

// The export's audit event counts exactly the rows it streams (erased
// entries included), and it reads that count from the state counters: its
// write transaction does not read the entries table, so the write lock is
// held as briefly at a million entries as at ten.
func TestExportQueue_RowCountFromTheCountersMatchesTheRowsStreamed(t *testing.T) {
	k := mustOwnerKit(t, "export-count", 5)
	ctx := context.Background()
	for _, st := range []string{StateWaiting, StateWaiting, StateSelected, StateDeclined, StateWithdrawn} {
		k.entry(t, st)
	}
	erased := k.entry(t, StateWaiting)
	if err := k.db.Update(ctx, func(tx *Tx) error {
		return eraseEntry(ctx, tx, k.p.ID, erased, Actor{Kind: ActorSystem}, "retention")
	}); err != nil {
		t.Fatal(err)
	}
	streamed := 0
	if err := k.db.ExportQueue(ctx, k.a, k.p.ID, func(Entry) error { streamed++; return nil }); err != nil {
		t.Fatal(err)
	}
	var details string
	if err := k.db.View(ctx, func(tx *Tx) error {
		return tx.QueryRowContext(ctx, `SELECT details FROM audit_events WHERE program_id = ? AND event_type = ?
			ORDER BY id DESC LIMIT 1`, k.p.ID, string(EventQueueExported)).Scan(&details)
	}); err != nil {
		t.Fatal(err)
	}
	if streamed != 6 || details != `{"rows":6}` {
		t.Errorf("streamed %d rows, recorded %s; want 6 and {\"rows\":6}", streamed, details)
	}
	sqliteOnly(t, "SQLite's query plans")
	plan := mustQueryPlan(t, k.db, exportCountSQL, k.p.ID)
	for _, step := range plan {
		if strings.Contains(step, "entries ") || strings.HasSuffix(step, "entries") {
			t.Errorf("the export's count reads the entries table: %q", step)
		}
	}
	if len(plan) == 0 {
		t.Error("no query plan")
	}
}

// Only a waiting entry can be selected: a selected, declined or withdrawn
// one is a conflict, alone or among others, and nothing changes.
func TestSelectEntry_OnlyAWaitingEntryCanBeSelected(t *testing.T) {
	db := MustOpenDB(t)
	a, w := mustOwner(t, db)
	p := mustProgram(t, db, a, w, "only-waiting")
	mustNotice(t, db, a, p.ID)
	for _, state := range []string{StateSelected, StateDeclined, StateWithdrawn} {
		t.Run(state, func(t *testing.T) {
			id := mustEntryVia(t, db, a, p.ID, state)
			waiting := mustEntryVia(t, db, a, p.ID, StateWaiting)
			before := dbFingerprint(t, db)
			_, err := db.SelectEntry(context.Background(), a, p.ID, id, Decision{Reason: "owner_discretion"})
			wantCode(t, "select a "+state+" entry", err, ECONFLICT)
			_, err = db.SelectEntries(context.Background(), a, p.ID, Selection{EntryIDs: []string{waiting, id}, Reason: "owner_discretion"})
			wantCode(t, "select a "+state+" entry with a waiting one", err, ECONFLICT)
			wantUnchanged(t, "selecting a "+state+" entry", db, before)
		})
	}
}
