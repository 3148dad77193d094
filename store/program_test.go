package store

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// auditDelta runs fn and returns how many audit_events rows it added.
func auditDelta(t *testing.T, db *DB, fn func()) int {
	t.Helper()
	before := mustCount(t, db, `SELECT count(*) FROM audit_events`)
	fn()
	return mustCount(t, db, `SELECT count(*) FROM audit_events`) - before
}

// wantUnchangedBy runs fn, a refused request, and fails the test if it
// changed any row of any table.
func wantUnchangedBy(t *testing.T, what string, db *DB, fn func()) {
	t.Helper()
	before := dbFingerprint(t, db)
	fn()
	wantUnchanged(t, what, db, before)
}

func wantErrorCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	if got := ErrorCode(err); got != code {
		t.Fatalf("%s: code=%q (%v), want %q", what, got, err, code)
	}
}

func mustProgramByID(t testing.TB, db *DB, a Actor, id string) *Program {
	t.Helper()
	p, err := db.ProgramByID(context.Background(), a, id)
	if err != nil {
		t.Fatalf("program %s: %v", id, err)
	}
	return p
}

func newTestProgram(w *Workspace, slug string) NewProgram {
	return NewProgram{WorkspaceID: w.ID, Slug: slug, Name: "Test " + slug, Purpose: testPurpose,
		QueueCap: 100, HourlyCap: 10, SeatCap: 5, MaxInvitationDays: 14}
}

func TestCreateProgram_StartsClosedAndAuditsOnce(t *testing.T) {
	db, clock := mustOpenDBWithClock(t)
	ctx := context.Background()
	a, w := mustOwner(t, db)
	clock.Add(time.Minute)

	var p *Program
	if got, want := auditDelta(t, db, func() { p = mustProgram(t, db, a, w, "starts-closed") }), 1; got != want {
		t.Fatalf("audit rows added=%d, want %d", got, want)
	}
	if p.SignupOpen || p.AccessEnabled || p.CurrentNoticeID != "" || p.HasContent {
		t.Fatalf("new program=%+v, want closed with no notice and no content", p)
	}
	if got, want := p.Revision, int64(1); got != want {
		t.Fatalf("revision=%d, want %d", got, want)
	}
	if got, want := p.CreatedAt, testEpoch.Add(time.Minute); !got.Equal(want) {
		t.Fatalf("created at %v, want the clock's %v", got, want)
	}
	var kind, actor, typ string
	var at int64
	err := db.View(ctx, func(tx *Tx) error {
		return tx.QueryRowContext(ctx, `SELECT actor_kind, actor_user_id, event_type, event_at FROM audit_events WHERE program_id = ?`,
			p.ID).Scan(&kind, &actor, &typ, &at)
	})
	if err != nil {
		t.Fatalf("read audit: %v", err)
	}
	if kind != "owner" || actor != a.UserID || typ != "program_created" || at != Millis(p.CreatedAt) {
		t.Fatalf("audit=(%s, %s, %s, %d), want (owner, %s, program_created, %d)", kind, actor, typ, at, a.UserID, Millis(p.CreatedAt))
	}
}

func TestCreateProgram_NonOwnerGetsNotFoundAndNoRow(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	_, w := mustOwner(t, db)
	stranger, _ := mustOwner(t, db)
	removed, _ := mustOwner(t, db)
	if _, err := db.AddOwner(ctx, Actor{Kind: ActorCLI}, w.Name, removed.UserID); err != nil {
		t.Fatalf("add: %v", err)
	}
	if err := db.RemoveOwner(ctx, Actor{Kind: ActorCLI}, w.Name, removed.UserID); err != nil {
		t.Fatalf("remove: %v", err)
	}

	for _, tc := range []struct {
		name  string
		actor Actor
	}{
		{"owner of another workspace", stranger},
		{"removed owner", removed},
		{"public", Actor{Kind: ActorPublic}},
		{"owner kind without user", Actor{Kind: ActorOwner}},
		{"system", Actor{Kind: ActorSystem, UserID: stranger.UserID}},
	} {
		wantUnchangedBy(t, tc.name, db, func() {
			_, err := db.CreateProgram(ctx, tc.actor, newTestProgram(w, "not-yours"))
			wantErrorCode(t, tc.name, err, ENOTFOUND)
		})
	}
	if n := mustCount(t, db, `SELECT count(*) FROM programs`); n != 0 {
		t.Fatalf("programs=%d, want 0", n)
	}
}

func TestCreateProgram_DuplicateSlugConflicts(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	a, w := mustOwner(t, db)
	b, other := mustOwner(t, db)
	mustProgram(t, db, a, w, "taken")

	for _, tc := range []struct {
		name  string
		actor Actor
		w     *Workspace
	}{
		{"same workspace", a, w},
		{"another workspace", b, other},
	} {
		wantUnchangedBy(t, tc.name, db, func() {
			_, err := db.CreateProgram(ctx, tc.actor, newTestProgram(tc.w, "taken"))
			wantErrorCode(t, tc.name, err, ECONFLICT)
		})
	}
	if got, want := mustCount(t, db, `SELECT count(*) FROM programs`), 1; got != want {
		t.Fatalf("programs=%d, want %d", got, want)
	}
}

func TestCreateProgram_RejectsInvalidFields(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	a, w := mustOwner(t, db)
	for _, tc := range []struct {
		name   string
		mutate func(*NewProgram)
	}{
		{"uppercase slug", func(p *NewProgram) { p.Slug = "Upper" }},
		{"short slug", func(p *NewProgram) { p.Slug = "ab" }},
		{"blank purpose", func(p *NewProgram) { p.Purpose = "   " }},
		{"zero queue cap", func(p *NewProgram) { p.QueueCap = 0 }},
		{"huge hourly cap", func(p *NewProgram) { p.HourlyCap = 100001 }},
		{"zero seat cap", func(p *NewProgram) { p.SeatCap = 0 }},
		{"long invitations", func(p *NewProgram) { p.MaxInvitationDays = 31 }},
	} {
		np := newTestProgram(w, "valid-slug")
		tc.mutate(&np)
		_, err := db.CreateProgram(ctx, a, np)
		wantErrorCode(t, tc.name, err, EINVALID)
	}
	if n := mustCount(t, db, `SELECT count(*) FROM programs`); n != 0 {
		t.Fatalf("programs=%d, want 0", n)
	}
}

func TestPublishNotice_VersionsAreSequential(t *testing.T) {
	db, clock := mustOpenDBWithClock(t)
	a, w := mustOwner(t, db)
	p := mustProgram(t, db, a, w, "versions")

	var first, second *Notice
	if got, want := auditDelta(t, db, func() { first = mustNotice(t, db, a, p.ID) }), 1; got != want {
		t.Fatalf("audit rows for first notice=%d, want %d", got, want)
	}
	clock.Add(time.Hour)
	if got, want := auditDelta(t, db, func() { second = mustNotice(t, db, a, p.ID) }), 1; got != want {
		t.Fatalf("audit rows for second notice=%d, want %d", got, want)
	}
	if first.Version != 1 || second.Version != 2 {
		t.Fatalf("versions=%d,%d, want 1,2", first.Version, second.Version)
	}
	if got, want := second.PublishedAt, testEpoch.Add(time.Hour); !got.Equal(want) {
		t.Fatalf("published at %v, want %v", got, want)
	}
	got := mustProgramByID(t, db, a, p.ID)
	if got.CurrentNoticeID != second.ID || got.CurrentNoticeVersion != 2 {
		t.Fatalf("current notice=%s v%d, want %s v2", got.CurrentNoticeID, got.CurrentNoticeVersion, second.ID)
	}
	if got, want := got.Revision, p.Revision+2; got != want {
		t.Fatalf("revision=%d, want %d", got, want)
	}
	// Both versions stay, for the entries that chose under the first.
	if got, want := mustCount(t, db, `SELECT count(*) FROM notices WHERE program_id = ?`, p.ID), 2; got != want {
		t.Fatalf("notices=%d, want %d", got, want)
	}
	if got, want := mustCount(t, db, `SELECT count(*) FROM audit_events WHERE program_id = ? AND event_type = 'notice_published'
		AND details = '{"version":2}'`, p.ID), 1; got != want {
		t.Fatalf("notice_published v2 events=%d, want %d", got, want)
	}
}

func TestPublishNotice_DifferentPurposeConflictsAndWritesNothing(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	a, w := mustOwner(t, db)
	stranger, _ := mustOwner(t, db)
	p := mustProgram(t, db, a, w, "purpose-bound")

	changed := testNotice
	changed.Purpose = "A different purpose altogether."
	added := auditDelta(t, db, func() {
		_, err := db.PublishNotice(ctx, a, p.ID, changed)
		wantErrorCode(t, "different purpose", err, ECONFLICT)
		_, err = db.PublishNotice(ctx, stranger, p.ID, testNotice)
		wantErrorCode(t, "foreign program", err, ENOTFOUND)
		_, err = db.PublishNotice(ctx, a, "not-a-uuid", testNotice)
		wantErrorCode(t, "malformed program ID", err, ENOTFOUND)
		blank := testNotice
		blank.ContactText = " "
		_, err = db.PublishNotice(ctx, a, p.ID, blank)
		wantErrorCode(t, "blank contact text", err, EINVALID)
	})
	if added != 0 {
		t.Fatalf("audit rows added=%d, want 0", added)
	}
	if n := mustCount(t, db, `SELECT count(*) FROM notices`); n != 0 {
		t.Fatalf("notices=%d, want 0", n)
	}
	if got := mustProgramByID(t, db, a, p.ID); got.CurrentNoticeID != "" || got.Revision != p.Revision {
		t.Fatalf("program=%+v, want no notice at revision %d", got, p.Revision)
	}
}

func TestUpdateProgram_StaleRevisionConflictsAndChangesNothing(t *testing.T) {
	db, clock := mustOpenDBWithClock(t)
	ctx := context.Background()
	a, w := mustOwner(t, db)
	p := mustProgram(t, db, a, w, "revisioned")

	fifty, seventy := 50, 70
	var updated *Program
	added := auditDelta(t, db, func() {
		var err error
		updated, err = db.UpdateProgram(ctx, a, p.ID, ProgramSettings{ExpectedRevision: p.Revision, QueueCap: &fifty})
		if err != nil {
			t.Fatalf("update: %v", err)
		}
	})
	if added != 1 {
		t.Fatalf("audit rows for update=%d, want 1", added)
	}
	if updated.QueueCap != 50 || updated.Revision != p.Revision+1 {
		t.Fatalf("updated=%+v, want queue cap 50 at revision %d", updated, p.Revision+1)
	}

	clock.Add(time.Hour)
	wantUnchangedBy(t, "a stale update", db, func() {
		_, err := db.UpdateProgram(ctx, a, p.ID, ProgramSettings{ExpectedRevision: p.Revision, QueueCap: &seventy})
		wantErrorCode(t, "stale revision", err, ECONFLICT)
	})
	got := mustProgramByID(t, db, a, p.ID)
	if got.QueueCap != 50 || got.Revision != updated.Revision || !got.UpdatedAt.Equal(updated.UpdatedAt) {
		t.Fatalf("after stale update: %+v, want %+v", got, updated)
	}

	stranger, _ := mustOwner(t, db)
	_, err := db.UpdateProgram(ctx, stranger, p.ID, ProgramSettings{ExpectedRevision: got.Revision, QueueCap: &seventy})
	wantErrorCode(t, "foreign program", err, ENOTFOUND)
	zero := 0
	_, err = db.UpdateProgram(ctx, a, p.ID, ProgramSettings{ExpectedRevision: got.Revision, SeatCap: &zero})
	wantErrorCode(t, "zero seat cap", err, EINVALID)
}

func TestUpdateProgram_OpeningSignupNeedsANotice(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	a, w := mustOwner(t, db)
	p := mustProgram(t, db, a, w, "needs-notice")
	yes := true

	wantUnchangedBy(t, "opening without a notice", db, func() {
		_, err := db.UpdateProgram(ctx, a, p.ID, ProgramSettings{ExpectedRevision: p.Revision, SignupOpen: &yes})
		wantErrorCode(t, "open without notice", err, ECONFLICT)
	})
	if got := mustProgramByID(t, db, a, p.ID); got.SignupOpen {
		t.Fatal("signup opened without a notice")
	}

	mustNotice(t, db, a, p.ID)
	p = mustProgramByID(t, db, a, p.ID)
	got, err := db.UpdateProgram(ctx, a, p.ID, ProgramSettings{ExpectedRevision: p.Revision, SignupOpen: &yes})
	if err != nil {
		t.Fatalf("open with notice: %v", err)
	}
	if !got.SignupOpen {
		t.Fatal("signup still closed after opening with a notice")
	}
}

func TestUpdateProgram_EnablingAccessNeedsContent(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	a, w := mustOwner(t, db)
	p := mustProgram(t, db, a, w, "needs-content")
	yes := true

	wantUnchangedBy(t, "enabling access without content", db, func() {
		_, err := db.UpdateProgram(ctx, a, p.ID, ProgramSettings{ExpectedRevision: p.Revision, AccessEnabled: &yes})
		wantErrorCode(t, "access without content", err, ECONFLICT)
	})
	if got := mustProgramByID(t, db, a, p.ID); got.AccessEnabled {
		t.Fatal("access enabled without content")
	}

	if _, err := db.PutContent(ctx, a, p.ID, ContentEdit{ExpectedRevision: 0, Body: "The private page."}); err != nil {
		t.Fatalf("put content: %v", err)
	}
	p = mustProgramByID(t, db, a, p.ID)
	got, err := db.UpdateProgram(ctx, a, p.ID, ProgramSettings{ExpectedRevision: p.Revision, AccessEnabled: &yes})
	if err != nil {
		t.Fatalf("enable with content: %v", err)
	}
	if !got.AccessEnabled || !got.HasContent {
		t.Fatalf("program=%+v, want access enabled with content", got)
	}
}

func TestPutContent_RevisionConflict(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	a, w := mustOwner(t, db)
	stranger, _ := mustOwner(t, db)
	p := mustProgram(t, db, a, w, "content-revisions")
	body := func() string {
		var b string
		err := db.View(ctx, func(tx *Tx) error {
			return tx.QueryRowContext(ctx, `SELECT body FROM early_access_content WHERE program_id = ?`, p.ID).Scan(&b)
		})
		if err != nil {
			t.Fatalf("read body: %v", err)
		}
		return b
	}

	for i, tc := range []struct {
		expected      int64
		body          string
		wantRev       int64
		wantErrorCode string
	}{
		{1, "Too new.", 0, ECONFLICT},
		{0, "First.", 1, ""},
		{0, "Stale create.", 0, ECONFLICT},
		{1, "Second.", 2, ""},
		{1, "Stale edit.", 0, ECONFLICT},
		{2, "", 0, EINVALID},
	} {
		var rev int64
		var err error
		before := dbFingerprint(t, db)
		added := auditDelta(t, db, func() {
			rev, err = db.PutContent(ctx, a, p.ID, ContentEdit{ExpectedRevision: tc.expected, Body: tc.body})
		})
		wantErrorCode(t, tc.body, err, tc.wantErrorCode)
		if tc.wantErrorCode != "" {
			wantUnchanged(t, fmt.Sprintf("step %d, a refused content write", i), db, before)
			continue
		}
		if rev != tc.wantRev || added != 1 {
			t.Fatalf("step %d: revision=%d audit rows=%d, want %d and 1", i, rev, added, tc.wantRev)
		}
	}
	if got, want := body(), "Second."; got != want {
		t.Fatalf("body=%q, want %q", got, want)
	}
	_, err := db.PutContent(ctx, stranger, p.ID, ContentEdit{ExpectedRevision: 2, Body: "Hijack."})
	wantErrorCode(t, "foreign program", err, ENOTFOUND)
	if got, want := body(), "Second."; got != want {
		t.Fatalf("body after foreign write=%q, want %q", got, want)
	}
}

func TestProgramMutations_AuditOnceWithoutPersonalData(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	// An email-shaped user ID: it may be recorded as the actor, never in details.
	owner := Actor{Kind: ActorOwner, UserID: "owner@example.test"}
	w, err := db.AddOwner(ctx, Actor{Kind: ActorCLI}, "Audited", owner.UserID)
	if err != nil {
		t.Fatalf("add owner: %v", err)
	}
	var p *Program
	yes := true
	steps := []struct {
		name string
		do   func() error
	}{
		{"create", func() (err error) { p, err = db.CreateProgram(ctx, owner, newTestProgram(w, "audited")); return err }},
		{"notice", func() error { _, err := db.PublishNotice(ctx, owner, p.ID, testNotice); return err }},
		{"content", func() error {
			_, err := db.PutContent(ctx, owner, p.ID, ContentEdit{ExpectedRevision: 0, Body: "Private."})
			return err
		}},
		{"open", func() error {
			cur := mustProgramByID(t, db, owner, p.ID)
			_, err := db.UpdateProgram(ctx, owner, p.ID, ProgramSettings{ExpectedRevision: cur.Revision, SignupOpen: &yes, AccessEnabled: &yes})
			return err
		}},
	}
	for _, s := range steps {
		var err error
		if got, want := auditDelta(t, db, func() { err = s.do() }), 1; got != want {
			t.Fatalf("%s: audit rows=%d, want %d", s.name, got, want)
		}
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	if got, want := mustCount(t, db, `SELECT count(*) FROM audit_events WHERE actor_user_id = ?`, owner.UserID), len(steps); got != want {
		t.Fatalf("events by the owner=%d, want %d", got, want)
	}
	if n := mustCount(t, db, `SELECT count(*) FROM audit_events WHERE details LIKE '%@%'`); n != 0 {
		t.Fatalf("%d audit events hold an address in their details", n)
	}
}

func TestSeedDemo_SeedsOnceAnOpenProgram(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	const ownerID = "owner@example.test"

	seeded, err := db.SeedDemo(ctx, ownerID)
	if err != nil || !seeded {
		t.Fatalf("first seed=(%t, %v), want (true, nil)", seeded, err)
	}
	seeded, err = db.SeedDemo(ctx, ownerID)
	if err != nil || seeded {
		t.Fatalf("second seed=(%t, %v), want (false, nil)", seeded, err)
	}
	if got, want := mustCount(t, db, `SELECT count(*) FROM programs`), 1; got != want {
		t.Fatalf("programs=%d, want %d", got, want)
	}

	p, n, err := db.PublicProgram(ctx, DemoSlug)
	if err != nil {
		t.Fatalf("public demo program: %v", err)
	}
	if !p.SignupOpen || !p.AccessEnabled || !p.HasContent {
		t.Fatalf("demo=%+v, want open with access and content", p)
	}
	if n.Version != 1 || n.Purpose != p.Purpose {
		t.Fatalf("demo notice=%+v, want version 1 stating the program's purpose", n)
	}
	owned, err := db.OwnedWorkspaces(ctx, ownerID)
	if err != nil || len(owned) != 1 || owned[0].Name != DemoWorkspace || owned[0].ID != p.WorkspaceID {
		t.Fatalf("owned=(%+v, %v), want the demo workspace", owned, err)
	}
	open, err := db.OpenPrograms(ctx)
	if err != nil || len(open) != 1 || open[0].Slug != DemoSlug {
		t.Fatalf("open programs=(%+v, %v), want the demo", open, err)
	}
	if n := mustCount(t, db, `SELECT count(*) FROM audit_events WHERE details LIKE '%@%'`); n != 0 {
		t.Fatalf("%d audit events hold an address in their details", n)
	}
}

func TestSeedDemo_DoesNothingWhenAWorkspaceExists(t *testing.T) {
	db := MustOpenDB(t)
	mustOwner(t, db)
	seeded, err := db.SeedDemo(context.Background(), "owner@example.test")
	if err != nil || seeded {
		t.Fatalf("seed=(%t, %v), want (false, nil)", seeded, err)
	}
	if n := mustCount(t, db, `SELECT count(*) FROM programs`); n != 0 {
		t.Fatalf("programs=%d, want 0", n)
	}
}

func TestProgramPage_ReadsEverythingThePageShowsForItsOwnerOnly(t *testing.T) {
	f := mustAccessFixture(t)
	ctx := context.Background()
	p := f.program(t, "page", "Private text.")
	f.asset(t, p, "guide.png", "image/png", []byte("read me"))
	mustEntryVia(t, f.db, f.owner, p.ID, StateWaiting)
	mustEntryVia(t, f.db, f.owner, p.ID, StateSelected)

	pg, err := f.db.ProgramPage(ctx, f.owner, p.ID)
	if err != nil {
		t.Fatalf("ProgramPage: %v", err)
	}
	wantProgram := mustProgramByID(t, f.db, f.owner, p.ID)
	if !reflect.DeepEqual(pg.Program, wantProgram) {
		t.Errorf("program:\n got %+v\nwant %+v", pg.Program, wantProgram)
	}
	if got, want := pg.Counts, map[string]int{StateWaiting: 1, StateSelected: 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("counts=%v, want %v", got, want)
	}
	notices, err := f.db.ProgramNotices(ctx, f.owner, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(pg.Notices) != 1 || !reflect.DeepEqual(pg.Notices, notices) {
		t.Errorf("notices:\n got %+v\nwant %+v (one)", pg.Notices, notices)
	}
	if got, want := pg.Content, "Private text."; got != want || pg.ContentRevision != 1 {
		t.Errorf("content=%q revision %d, want %q revision 1", got, pg.ContentRevision, want)
	}
	if len(pg.Assets) != 1 || pg.Assets[0].Name != "guide.png" || pg.Assets[0].Size != len("read me") {
		t.Errorf("assets=%+v, want guide.png of %d bytes", pg.Assets, len("read me"))
	}

	other, _ := mustOwner(t, f.db)
	if _, err := f.db.ProgramPage(ctx, other, p.ID); ErrorCode(err) != ENOTFOUND {
		t.Errorf("another workspace's owner: err=%v, want %s", err, ENOTFOUND)
	}
}

func TestSlugFromName_MakesAValidAddressNameOrNone(t *testing.T) {
	for name, want := range map[string]string{
		"Nimbus Beta!":             "nimbus-beta",
		"  Early -- access 2027 ":  "early-access-2027",
		"Café Olé":                 "caf-ol",
		"ab":                       "",
		"¡¿!":                      "",
		strings.Repeat("abc ", 30): strings.TrimRight(strings.Repeat("abc-", 15), "-"),
	} {
		got := SlugFromName(name)
		if got != want {
			t.Errorf("SlugFromName(%q) = %q, want %q", name, got, want)
		}
		if got != "" && !ValidSlug(got) {
			t.Errorf("SlugFromName(%q) = %q is not a valid address name", name, got)
		}
	}
}
