package store

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// searchKit is two programs of one owner, each with the same addresses
// signed up, so a search that leaked across programs would show it.
type searchKit struct {
	ownerKit
	other *Program
	// ids maps "program/address" to the entry ID.
	ids    map[string]string
	tokens map[string]string
}

func mustSearchKit(t *testing.T) searchKit {
	t.Helper()
	k := searchKit{ownerKit: mustOwnerKit(t, "search-a", 5), ids: map[string]string{}, tokens: map[string]string{}}
	np := newTestProgram(&Workspace{ID: k.p.WorkspaceID}, "search-b")
	other, err := k.db.CreateProgram(context.Background(), k.a, np)
	if err != nil {
		t.Fatal(err)
	}
	mustNotice(t, k.db, k.a, other.ID)
	k.other = mustSetProgram(t, k.db, k.a, other.ID, func(s *ProgramSettings) { s.SignupOpen = ptrTo(true) })
	k.p = mustSetProgram(t, k.db, k.a, k.p.ID, func(s *ProgramSettings) { s.SignupOpen = ptrTo(true) })
	for _, p := range []*Program{k.p, k.other} {
		for _, addr := range []string{"Alice.Smith@Example.com", "alina@example.org", "bob@example.com", "alfred@example.net"} {
			res := mustSignup(t, k.db, SignupRequest{Slug: p.Slug, RequestKey: uuid.NewString(), Email: addr,
				NoticeVersion: p.CurrentNoticeVersion, Permission: true})
			norm, _ := NormalizeEmail(addr)
			var id string
			mustUpdate(t, k.db, func(tx *Tx) error {
				return tx.QueryRowContext(context.Background(), `SELECT id FROM entries WHERE program_id = ? AND email_key = ?`,
					p.ID, norm).Scan(&id)
			})
			k.ids[p.Slug+"/"+norm] = id
			k.tokens[p.Slug+"/"+norm] = res.RemovalToken
		}
	}
	return k
}

// search runs a queue search and returns the addresses found, in order.
func (k searchKit) search(t *testing.T, f QueueFilter) []string {
	t.Helper()
	page, err := k.db.Queue(context.Background(), k.a, k.p.ID, f)
	if err != nil {
		t.Fatalf("search %+v: %v", f, err)
	}
	var out []string
	for _, e := range page.Entries {
		if e.ProgramID != k.p.ID || strings.Contains(e.Email, "erased") {
			t.Fatalf("search %q found an entry of another program", f.Query)
		}
		out = append(out, e.Email)
	}
	return out
}

func TestQueueSearch_ExactAddressIsNormalisedLikeSignup(t *testing.T) {
	k := mustSearchKit(t)
	for _, q := range []string{"Alice.Smith@Example.com", "  Alice.Smith@EXAMPLE.COM ", "Alice.Smith@example.com"} {
		if got := k.search(t, QueueFilter{Query: q}); !slices.Equal(got, []string{"Alice.Smith@example.com"}) {
			t.Errorf("search %q = %v, want exactly Alice.Smith@example.com", q, got)
		}
	}
	if got := k.search(t, QueueFilter{Query: "nobody@example.com"}); len(got) != 0 {
		t.Errorf("search for an unknown address = %v", got)
	}
	_, err := k.db.Queue(context.Background(), k.a, k.p.ID, QueueFilter{Query: "alice@"})
	wantErrorCode(t, "half an address", err, EINVALID)
	_, err = k.db.Queue(context.Background(), k.a, k.p.ID, QueueFilter{Query: "al ice"})
	wantErrorCode(t, "a space inside", err, EINVALID)
	_, err = k.db.Queue(context.Background(), k.a, k.p.ID, QueueFilter{Query: strings.Repeat("a", MaxSearchLength+1)})
	wantErrorCode(t, "too long", err, EINVALID)
}

func TestQueueSearch_WholeAddressMatchesThePartBeforeTheAtInAnyCase(t *testing.T) {
	k := mustSearchKit(t)
	ctx := context.Background()
	// The local part is kept as typed at signup, so Alice.Smith@ and
	// alice.smith@ are two entries; a search for either address finds both,
	// in address order, and only within the program.
	mustSignup(t, k.db, SignupRequest{Slug: k.p.Slug, RequestKey: uuid.NewString(), Email: "alice.smith@example.com",
		NoticeVersion: k.p.CurrentNoticeVersion, Permission: true})
	want := []string{"Alice.Smith@example.com", "alice.smith@example.com"}
	for _, q := range []string{"alice.smith@example.com", "ALICE.SMITH@example.com", " Alice.Smith@Example.COM "} {
		if got := k.search(t, QueueFilter{Query: q}); !slices.Equal(got, want) {
			t.Errorf("search %q = %v, want %v", q, got, want)
		}
	}
	if got := k.search(t, QueueFilter{Query: "alice.smith@example.com", State: StateWaiting}); !slices.Equal(got, want) {
		t.Errorf("waiting search = %v, want %v", got, want)
	}
	if got := k.search(t, QueueFilter{Query: "alice.smith@example.org"}); len(got) != 0 {
		t.Errorf("another domain = %v, want none", got)
	}
	// One a page, forward: both, each once.
	first, err := k.db.Queue(ctx, k.a, k.p.ID, QueueFilter{Query: "alice.smith@example.com", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Entries) != 1 || first.NextCursor == "" {
		t.Fatalf("first page %+v", first)
	}
	second, err := k.db.Queue(ctx, k.a, k.p.ID, QueueFilter{Query: "alice.smith@example.com", Limit: 1, Cursor: first.NextCursor})
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Entries) != 1 || second.NextCursor != "" || second.Entries[0].Email != want[1] {
		t.Fatalf("second page %+v", second)
	}
}

func TestQueueSearch_LocalPartPrefixInAnyCaseWithinTheProgram(t *testing.T) {
	k := mustSearchKit(t)
	cases := map[string][]string{
		"al":      {"alfred@example.net", "Alice.Smith@example.com", "alina@example.org"},
		"AL":      {"alfred@example.net", "Alice.Smith@example.com", "alina@example.org"},
		"ali":     {"Alice.Smith@example.com", "alina@example.org"},
		"alice.s": {"Alice.Smith@example.com"},
		"b":       {"bob@example.com"},
		"z":       nil,
		// The domain is not searched by prefix.
		"example": nil,
	}
	for q, want := range cases {
		if got := k.search(t, QueueFilter{Query: q}); !slices.Equal(got, want) {
			t.Errorf("search %q = %v, want %v", q, got, want)
		}
	}
}

func TestQueueSearch_CombinesWithStateAndPages(t *testing.T) {
	k := mustSearchKit(t)
	ctx := context.Background()
	if _, err := k.db.SelectEntry(ctx, k.a, k.p.ID, k.ids["search-a/alina@example.org"], Decision{Reason: "meets_policy"}); err != nil {
		t.Fatal(err)
	}
	if got := k.search(t, QueueFilter{Query: "al", State: StateSelected}); !slices.Equal(got, []string{"alina@example.org"}) {
		t.Errorf("selected al* = %v", got)
	}
	if got := k.search(t, QueueFilter{Query: "al", State: StateWaiting}); !slices.Equal(got, []string{"alfred@example.net", "Alice.Smith@example.com"}) {
		t.Errorf("waiting al* = %v", got)
	}
	// One entry a page, in address order: forward through the three
	// matches, then back.
	var seen []string
	f := QueueFilter{Query: "al", Limit: 1}
	var pages []*QueuePage
	for {
		page, err := k.db.Queue(ctx, k.a, k.p.ID, f)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, page)
		for _, e := range page.Entries {
			seen = append(seen, e.Email)
		}
		if page.NextCursor == "" {
			break
		}
		f.Cursor = page.NextCursor
	}
	if want := []string{"alfred@example.net", "Alice.Smith@example.com", "alina@example.org"}; !slices.Equal(seen, want) {
		t.Fatalf("paged search = %v, want %v", seen, want)
	}
	if pages[0].PrevCursor != "" {
		t.Error("the first page has a previous page")
	}
	back, err := k.db.Queue(ctx, k.a, k.p.ID, QueueFilter{Query: "al", Limit: 1, Before: pages[2].PrevCursor})
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Entries) != 1 || back.Entries[0].Email != "Alice.Smith@example.com" || back.PrevCursor == "" || back.NextCursor == "" {
		t.Fatalf("previous of the last page = %+v", back)
	}
	first, err := k.db.Queue(ctx, k.a, k.p.ID, QueueFilter{Query: "al", Limit: 1, Before: back.PrevCursor})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Entries) != 1 || first.Entries[0].Email != "alfred@example.net" || first.PrevCursor != "" {
		t.Fatalf("previous of the middle page = %+v (the first page has no previous)", first)
	}
}

func TestQueueSearch_NeverMatchesErasedEntries(t *testing.T) {
	k := mustSearchKit(t)
	ctx := context.Background()
	if err := k.db.RemoveByToken(ctx, k.tokens["search-a/alina@example.org"]); err != nil {
		t.Fatal(err)
	}
	erasedID := k.ids["search-a/alina@example.org"]
	var key string
	mustUpdate(t, k.db, func(tx *Tx) error {
		return tx.QueryRowContext(ctx, `SELECT email_key FROM entries WHERE id = ? AND erased_at IS NOT NULL`, erasedID).Scan(&key)
	})
	if !strings.HasPrefix(key, "erased") {
		t.Fatalf("the erased entry's key is %q; this test searches for its tombstone's start", key)
	}
	for _, q := range []string{"alina@example.org", "alin", "erased", "ERASED"} {
		page, err := k.db.Queue(ctx, k.a, k.p.ID, QueueFilter{Query: q})
		if err != nil {
			t.Fatalf("search %q: %v", q, err)
		}
		for _, e := range page.Entries {
			if e.ID == erasedID {
				t.Errorf("search %q found the erased entry", q)
			}
		}
	}
	// The other program's alina is not erased and still found there.
	page, err := k.db.Queue(ctx, k.a, k.other.ID, QueueFilter{Query: "alina@example.org"})
	if err != nil || len(page.Entries) != 1 {
		t.Fatalf("other program's alina: %+v %v", page, err)
	}
}

// TestQueueSearch_UsesAnIndexAt100kEntries proves with EXPLAIN QUERY PLAN
// that every form of search reads entries through an index, never a scan
// of the table or of the program's whole queue, with 100,000 entries in
// the program.
func TestQueueSearch_UsesAnIndexAt100kEntries(t *testing.T) {
	sqliteOnly(t, "SQLite's query plans")
	k := mustOwnerKit(t, "search-plan", 5)
	mustSeedEntries(t, k.db, k.p.ID, k.notice.ID, 100_000)
	cursor := encodeSearchCursor(uuid.NewString())
	// A search without a state reads one range of the state index
	// per state, each in address order, and merges them.
	const stateSearch = "entries_state_search_idx (program_id=? AND state=? AND <expr>>? AND <expr><?)"
	cases := []struct {
		name   string
		f      QueueFilter
		index  string
		ranges int
	}{
		// A whole address is one lowercased address: the same ranges, each
		// as narrow as that address.
		{"exact", QueueFilter{Query: "Seed-000042@example.test"}, stateSearch, len(EntryStates)},
		{"exact in a state", QueueFilter{Query: "seed-000042@example.test", State: StateWaiting}, stateSearch, 1},
		{"exact after a cursor", QueueFilter{Query: "seed-000042@example.test", Cursor: cursor}, stateSearch, len(EntryStates)},
		{"prefix", QueueFilter{Query: "seed-0001"}, stateSearch, len(EntryStates)},
		{"prefix of every entry", QueueFilter{Query: "s"}, stateSearch, len(EntryStates)},
		{"prefix in a state", QueueFilter{Query: "Seed-0001", State: StateWaiting}, stateSearch, 1},
		{"prefix after a cursor", QueueFilter{Query: "seed", Cursor: cursor}, stateSearch, len(EntryStates)},
		{"prefix before a cursor", QueueFilter{Query: "seed", Before: cursor}, stateSearch, len(EntryStates)},
		{"prefix in a state after a cursor", QueueFilter{Query: "seed", State: StateSelected, Cursor: cursor}, stateSearch, 1},
	}
	for _, c := range cases {
		c.f.Limit = DefaultPageSize
		q, args, err := queueQuery(k.db.Engine(), k.p.ID, c.f, func(string) (string, error) { return "seed-050000@example.test", nil })
		if err != nil {
			t.Fatal(err)
		}
		plan := mustQueryPlan(t, k.db, q, args...)
		var entriesSteps []string
		for _, step := range plan {
			if strings.HasPrefix(step, "SCAN e") || strings.HasPrefix(step, "SEARCH e ") {
				entriesSteps = append(entriesSteps, step)
			}
		}
		if len(entriesSteps) != c.ranges {
			t.Errorf("%s: entries are read in %d steps, want %d\nplan: %q", c.name, len(entriesSteps), c.ranges, plan)
		}
		for _, step := range entriesSteps {
			if !strings.HasPrefix(step, "SEARCH e USING INDEX ") || !strings.HasSuffix(step, c.index) {
				t.Errorf("%s: entries are read by %q, want a search of the index %s\nplan: %q", c.name, step, c.index, plan)
			}
		}
		// The index gives the order: no step collects every match to sort
		// it, so a page stops after its own rows.
		for _, step := range plan {
			if strings.HasPrefix(step, "SCAN ") {
				t.Errorf("%s: the plan scans a table (%q)\nplan: %q", c.name, step, plan)
			}
			if strings.Contains(step, "TEMP B-TREE") {
				t.Errorf("%s: the plan sorts its matches (%q)\nplan: %q", c.name, step, plan)
			}
		}
	}
	// A deep position in a search that matches every entry continues right
	// after that entry, and going back ends right before it.
	ctx := context.Background()
	var mid Entry
	mustUpdate(t, k.db, func(tx *Tx) error {
		e, err := scanEntry(tx.QueryRowContext(ctx, `SELECT `+entryColumns+entryFrom+`WHERE e.email_key = 'seed-050000@example.test'`))
		if e != nil {
			mid = *e
		}
		return err
	})
	after, err := k.db.Queue(ctx, k.a, k.p.ID, QueueFilter{Query: "Seed", Cursor: encodeSearchCursor(mid.ID), Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	before, err := k.db.Queue(ctx, k.a, k.p.ID, QueueFilter{Query: "Seed", Before: encodeSearchCursor(mid.ID), Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range append(before.Entries, after.Entries...) {
		got = append(got, e.Email)
	}
	if want := []string{"seed-049998@example.test", "seed-049999@example.test", "seed-050001@example.test",
		"seed-050002@example.test", "seed-050003@example.test"}; !slices.Equal(got, want) {
		t.Fatalf("around seed-050000: %v, want %v", got, want)
	}

	// And the search finds what it should among the 100,000.
	page, err := k.db.Queue(ctx, k.a, k.p.ID, QueueFilter{Query: "SEED-00012"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != 10 || page.Entries[0].Email != "seed-000120@example.test" || page.Entries[9].Email != "seed-000129@example.test" {
		t.Fatalf("prefix seed-00012 found %d entries, first %+v", len(page.Entries), page.Entries)
	}
}

// mustQueryPlan is the detail column of EXPLAIN QUERY PLAN for q.
func mustQueryPlan(t *testing.T, db *DB, q string, args ...any) []string {
	t.Helper()
	var plan []string
	mustUpdate(t, db, func(tx *Tx) error {
		rows, err := tx.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				return err
			}
			plan = append(plan, detail)
		}
		return rows.Err()
	})
	return plan
}

// TestOwnEntries_SeeksEachProgramsIndexAt100kEntries proves that a signed-in
// applicant's entries are found program by program through the unique
// (program_id, email_key) index, with no scan of entries, with 100,000
// entries in one program and none in another; and that they are found.
func TestOwnEntries_SeeksEachProgramsIndexAt100kEntries(t *testing.T) {
	sqliteOnly(t, "SQLite's query plans")
	k := mustOwnerKit(t, "own-plan", 5)
	mustSeedEntries(t, k.db, k.p.ID, k.notice.ID, 100_000)
	other, err := k.db.CreateProgram(context.Background(), k.a, NewProgram{WorkspaceID: k.p.WorkspaceID, Slug: "own-plan-other",
		Name: "Other", Purpose: testPurpose, QueueCap: 100, HourlyCap: 10, SeatCap: 5, MaxInvitationDays: 14})
	if err != nil {
		t.Fatal(err)
	}
	mustNotice(t, k.db, k.a, other.ID)
	emails := []string{"seed-000042@example.test", "seed-099999@example.test"}
	for _, oneProgram := range []bool{false, true} {
		args := []any{}
		if oneProgram {
			args = append(args, "own-plan")
		}
		plan := mustQueryPlan(t, k.db, ownEntriesQuery(k.db.Engine(), len(emails), oneProgram), append(args, emails[0], emails[1])...)
		var seeks int
		for _, step := range plan {
			if strings.HasPrefix(step, "SCAN e") || strings.HasPrefix(step, "SCAN entries") {
				t.Errorf("one program %v: the plan scans entries (%q)\nplan: %q", oneProgram, step, plan)
			}
			if strings.HasPrefix(step, "SEARCH e USING INDEX ") && strings.HasSuffix(step, "(program_id=? AND email_key=?)") {
				seeks++
			}
		}
		if seeks != 1 {
			t.Errorf("one program %v: %d searches of entries by program and address, want 1\nplan: %q", oneProgram, seeks, plan)
		}
	}
	own, err := k.db.OwnEntries(context.Background(), emails)
	if err != nil || len(own) != 2 || own[0].ProgramID != k.p.ID || own[1].ProgramID != k.p.ID {
		t.Fatalf("own entries: %+v %v", own, err)
	}
	one, err := k.db.OwnEntry(context.Background(), "own-plan", emails[1:])
	if err != nil || one.ProgramID != k.p.ID {
		t.Fatalf("own entry: %+v %v", one, err)
	}
	if _, err := k.db.OwnEntry(context.Background(), "own-plan-other", emails); ErrorCode(err) != ENOTFOUND {
		t.Fatalf("own entry in the other program: %v, want not found", err)
	}
}

func TestDeclineEntries_AllOrNoneWithOneAuditEventEach(t *testing.T) {
	k := mustOwnerKit(t, "bulk-decline", 5)
	ctx := context.Background()
	w1, w2, sel, gone := k.entry(t, StateWaiting), k.entry(t, StateWaiting), k.entry(t, StateSelected), k.entry(t, StateWithdrawn)

	wantUnchangedBy(t, "a refused bulk decline", k.db, func() {
		_, err := k.db.DeclineEntries(ctx, k.a, k.p.ID, Selection{EntryIDs: []string{w1, gone, w2}, Reason: "capacity"})
		wantErrorCode(t, "one withdrawn", err, ECONFLICT)
	})
	invited := k.entry(t, StateSelected)
	if _, err := k.db.IssueInvitation(ctx, k.a, k.p.ID, invited, NewInvitation{RequestKey: uuid.NewString(), ExpiresAt: k.clock.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	wantUnchangedBy(t, "a bulk decline with an invited entry", k.db, func() {
		_, err := k.db.DeclineEntries(ctx, k.a, k.p.ID, Selection{EntryIDs: []string{w1, invited}, Reason: "capacity"})
		wantErrorCode(t, "one invited", err, ECONFLICT)
	})
	var out []Entry
	if got := auditDelta(t, k.db, func() {
		var err error
		out, err = k.db.DeclineEntries(ctx, k.a, k.p.ID, Selection{EntryIDs: []string{w1, sel, w2, w1}, Reason: "not_eligible"})
		if err != nil {
			t.Fatal(err)
		}
	}); got != 3 {
		t.Fatalf("audit events=%d, want one per entry (3)", got)
	}
	if len(out) != 3 {
		t.Fatalf("read-back %+v", out)
	}
	for _, e := range out {
		if e.State != StateDeclined || e.EraseAfter == nil {
			t.Fatalf("declined entry %+v (declined and scheduled for erasure)", e)
		}
	}
	if n := mustCount(t, k.db, `SELECT count(*) FROM audit_events WHERE event_type = 'declined'
		AND `+jsonField("reason")+` = 'not_eligible' AND `+testEngine.pick(`json_extract(details, '$.batch') = 1`, `(details::json->>'batch') = 'true'`)+``); n != 3 {
		t.Fatalf("declined batch events with the reason=%d, want 3", n)
	}
	_, err := k.db.DeclineEntries(ctx, k.a, k.p.ID, Selection{EntryIDs: nil, Reason: "capacity"})
	wantErrorCode(t, "nothing chosen", err, EINVALID)
	_, err = k.db.DeclineEntries(ctx, k.a, k.p.ID, Selection{EntryIDs: []string{w1}, Reason: "meets_policy"})
	wantErrorCode(t, "a select reason", err, EINVALID)
	stranger, _ := mustOwner(t, k.db)
	_, err = k.db.DeclineEntries(ctx, stranger, k.p.ID, Selection{EntryIDs: []string{k.entry(t, StateWaiting)}, Reason: "capacity"})
	wantErrorCode(t, "a foreign owner", err, ENOTFOUND)
}
