package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRetireAPI_ConfirmedRetirementClosesEverythingAndIsAuditedOnce(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	path := "/api/owner/programs/" + app.Demo.ID + "/retire"
	before := dbFingerprint(t, app.DB)

	// Wrong or missing confirmation, stale revision: refused, nothing changes.
	for _, tc := range []struct {
		body   string
		status int
	}{
		{fmt.Sprintf(`{"expectedRevision":%d,"confirm":"demo-typo"}`, app.Demo.Revision), http.StatusBadRequest},
		{fmt.Sprintf(`{"expectedRevision":%d}`, app.Demo.Revision), http.StatusBadRequest},
		{`{"confirm":"demo"}`, http.StatusBadRequest},
		{fmt.Sprintf(`{"expectedRevision":%d,"confirm":"demo"}`, app.Demo.Revision-1), http.StatusConflict},
	} {
		r := owner.PostJSON(t, "POST", path, tc.body)
		owWantStatus(t, tc.body, r, tc.status)
	}
	if after := dbFingerprint(t, app.DB); !reflect.DeepEqual(before, after) {
		t.Fatalf("refused retirements changed the database: %v → %v", before, after)
	}

	audit := owAuditCount(t, app)
	r := owner.PostJSON(t, "POST", path, fmt.Sprintf(`{"expectedRevision":%d,"confirm":"demo"}`, app.Demo.Revision))
	owWantStatus(t, "retire", r, http.StatusOK)
	var p struct {
		SignupOpen    bool    `json:"signupOpen"`
		AccessEnabled bool    `json:"accessEnabled"`
		RetiredAt     *string `json:"retiredAt"`
	}
	if err := json.Unmarshal([]byte(r.Body), &p); err != nil {
		t.Fatal(err)
	}
	if p.SignupOpen || p.AccessEnabled || p.RetiredAt == nil {
		t.Fatalf("retired program JSON: %s", r.Body)
	}
	if got := owAuditCount(t, app) - audit; got != 1 {
		t.Fatalf("retirement wrote %d audit events, want 1", got)
	}
	// The public side is closed at once.
	anon := app.NewClient(t)
	signup := `{"requestKey":"` + owKey() + `","email":"late@example.com","noticeVersion":1,"permission":true}`
	if r := anon.PostJSON(t, "POST", "/api/public/programs/demo/signups", signup); r.StatusCode != http.StatusConflict {
		t.Fatalf("signup after retirement: %d, want 409", r.StatusCode)
	}
	// Retiring twice is a conflict.
	again := owner.PostJSON(t, "POST", path, fmt.Sprintf(`{"expectedRevision":%d,"confirm":"demo"}`, app.Demo.Revision+1))
	owWantStatus(t, "second retirement", again, http.StatusConflict)
}

func TestRetireForm_AsksForConfirmationAndKeepsTheProgramUntilGiven(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	page := owner.Get(t, "/owner/programs/"+app.Demo.ID+"/settings")
	if !strings.Contains(page.Body, `data-testid="retire-form"`) {
		t.Fatal("program page has no retirement form")
	}
	form := url.Values{"csrf": {owner.CSRFToken}, "expectedRevision": {fmt.Sprint(app.Demo.Revision)}, "confirm": {"nope"}}
	r := owner.PostForm(t, "/owner/programs/"+app.Demo.ID+"/retire", form)
	if r.StatusCode != http.StatusBadRequest || !strings.Contains(r.Body, `data-testid="error-summary"`) ||
		!strings.Contains(r.Body, `href="#confirm-text"`) || !strings.Contains(r.Body, `value="nope"`) {
		t.Fatalf("wrong confirmation: %d", r.StatusCode)
	}
	if mustOwnerProgram(t, app, app.Demo.ID).RetiredAt != nil {
		t.Fatal("retired without confirmation")
	}
	form.Set("confirm", "demo")
	r = owner.PostForm(t, "/owner/programs/"+app.Demo.ID+"/retire", form)
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("confirmed retirement: %d", r.StatusCode)
	}
	if mustOwnerProgram(t, app, app.Demo.ID).RetiredAt == nil {
		t.Fatal("not retired")
	}
	if page := owner.Get(t, "/owner/programs/"+app.Demo.ID); !strings.Contains(page.Body, `data-testid="retired-banner"`) {
		t.Fatal("program page does not say it is retired")
	}
}

func TestOwnerHome_ShowsTheLastSuccessfulBackupSync(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	if body := owner.Get(t, "/owner").Body; !strings.Contains(body, "Continuous backup is off") {
		t.Fatal("owner console does not say backup is off")
	}
	synced := time.Date(2026, 11, 29, 9, 58, 0, 0, time.UTC)
	srvOf(app).opts.BackupStatus = func() (BackupStatus, error) {
		return BackupStatus{Replica: "file replica", LastSync: synced, Pending: true, Lag: 3 * time.Minute}, nil
	}
	body := owner.Get(t, "/owner").Body
	for _, want := range []string{"Replicating to file replica", "29 Nov 2026, 09:58 UTC", "3 minutes"} {
		if !strings.Contains(body, want) {
			t.Errorf("owner console lacks %q", want)
		}
	}
}

func TestOwnerHome_ShowsWhatTheRestoreDrillsFound(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	verified := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	failing := time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		status  BackupStatus
		want    []string
		notWant []string
	}{
		{"no drill yet", BackupStatus{Replica: "file replica"},
			[]string{"no restore drill has run"}, []string{"verified restorable", "NOT restorable"}},
		{"verified", BackupStatus{Replica: "file replica", VerifiedAt: verified},
			[]string{"Backup: last verified restorable at <strong>29 Nov 2026, 10:00 UTC"}, []string{"NOT restorable", "failed at"}},
		{"not restorable", BackupStatus{Replica: "file replica", VerifiedAt: verified, NotRestorableSince: failing, LastFailedDrill: failing},
			[]string{"Backup <strong>NOT restorable</strong> since 29 Nov 2026, 11:00 UTC", `role="alert"`}, []string{"last verified restorable"}},
		{"repaired", BackupStatus{Replica: "file replica", VerifiedAt: failing.Add(time.Minute), LastFailedDrill: failing},
			[]string{"last verified restorable at <strong>29 Nov 2026, 11:01 UTC", "An earlier drill failed at 29 Nov 2026, 11:00 UTC"}, []string{"NOT restorable"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srvOf(app).opts.BackupStatus = func() (BackupStatus, error) { return tc.status, nil }
			body := owner.Get(t, "/owner").Body
			for _, want := range tc.want {
				if !strings.Contains(body, want) {
					t.Errorf("owner console lacks %q", want)
				}
			}
			for _, not := range tc.notWant {
				if strings.Contains(body, not) {
					t.Errorf("owner console says %q", not)
				}
			}
		})
	}
}

// pollRetirement asks for the program page's retirement block as htmx's
// polling does, and returns it.
func pollRetirement(tb testing.TB, owner *testClient, programID string) string {
	tb.Helper()
	r := owner.Get(tb, "/owner/programs/"+programID, "HX-Request", "true", "HX-Target", "retire-progress")
	owWantStatus(tb, "poll the retirement", r, http.StatusOK)
	if strings.Contains(r.Body, "<html") || !strings.Contains(r.Body, `id="retire-progress"`) {
		tb.Fatalf("the poll answered more or less than the block:\n%s", r.Body)
	}
	if cc := r.Header.Get("Cache-Control"); cc != "private, no-store" {
		tb.Fatalf("the poll's Cache-Control is %q, want private, no-store", cc)
	}
	return r.Body
}

func TestRetireForm_AnswersAtTheCommitAndThePageFollowsTheRetirementToItsEnd(t *testing.T) {
	// Two entries a step, and no retirer: the test runs each step.
	app := MustStartApp(t, withRetireChunk(2))
	owner := mustOwnerClient(t, app)
	for i := range 5 {
		mustInsertEntry(t, app.DB, app.Demo, fmt.Sprintf("entry%d@example.com", i), "waiting")
	}
	page := "/owner/programs/" + app.Demo.ID
	rev := mustOwnerProgram(t, app, app.Demo.ID).Revision
	r := owner.PostOwnerForm(t, page+"/retire", url.Values{"expectedRevision": {fmt.Sprint(rev)}, "confirm": {"demo"}})
	owWantStatus(t, "retire", r, http.StatusSeeOther)
	if got := owLocation(r); got != page {
		t.Fatalf("retirement redirects to %q, want the program page", got)
	}
	// The answer came before any step ran.
	if p := mustOwnerProgram(t, app, app.Demo.ID); p.RetiredAt == nil || !p.Retirement.Pending || p.Retirement.Done != 0 {
		t.Fatalf("after the answer: retired at %v, progress %+v; want retired with every step still to run", p.RetiredAt, p.Retirement)
	}

	body := owner.Get(t, page).Body
	for _, want := range []string{
		"The program is retired: signup is closed and access is off. Its entries are now being scheduled for erasure; the progress is shown below.",
		`data-state="pending"`,
		"Finishing the retirement: 0 of 5 entries scheduled for erasure.",
		`hx-get="` + page + `" hx-trigger="every 2s" hx-swap="outerHTML"`,
		`<progress value="0" max="5"`,
		`<a href="` + page + `" data-testid="retire-refresh">Refresh</a>`,
		`data-testid="retired-banner"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("program page while the retirement is pending lacks %q", want)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	ctx := context.Background()
	for _, want := range []string{"2 of 5", "4 of 5"} {
		if done, err := app.DB.StepRetirement(ctx, app.Demo.ID); err != nil || done {
			t.Fatalf("step: done=%v err=%v, want a step with more to do", done, err)
		}
		block := pollRetirement(t, owner, app.Demo.ID)
		if !strings.Contains(block, "Finishing the retirement: "+want+" entries scheduled for erasure.") || !strings.Contains(block, `hx-trigger="every 2s"`) {
			t.Fatalf("poll after a step lacks %q or its next poll:\n%s", want, block)
		}
	}
	if done, err := app.DB.StepRetirement(ctx, app.Demo.ID); err != nil || !done {
		t.Fatalf("last step: done=%v err=%v", done, err)
	}
	// The finished block stops the polling and says when the addresses go,
	// the date the banner gives.
	p := mustOwnerProgram(t, app, app.Demo.ID)
	erasedOn := p.EntriesErasedBy.Format("2 Jan 2006")
	doneText := "The retirement is finished: all 5 entries are scheduled for erasure, and their addresses will be erased on " + erasedOn + "."
	block := pollRetirement(t, owner, app.Demo.ID)
	if strings.Contains(block, "hx-trigger") || !strings.Contains(block, doneText) || !strings.Contains(block, `data-state="done"`) {
		t.Fatalf("poll once finished:\n%s", block)
	}
	body = owner.Get(t, page).Body
	if !strings.Contains(body, doneText) || strings.Contains(body, "hx-trigger") || !strings.Contains(body, "entries erased on "+erasedOn+".") {
		t.Fatalf("program page once finished lacks the finished block or the banner's date:\n%s", owErrorBlock(t, body))
	}
}

func TestRetireAPI_AnswersTheProgramAtTheCommitWithTheBookkeepingStillPending(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	sel := mustInsertEntry(t, app.DB, app.Demo, "grace@example.com", "selected")
	owGrant(t, app, app.Demo.ID, sel, "grace@example.com", "user_grace")
	path := "/api/owner/programs/" + app.Demo.ID
	rev := mustOwnerProgram(t, app, app.Demo.ID).Revision
	r := owner.PostJSON(t, "POST", path+"/retire", fmt.Sprintf(`{"expectedRevision":%d,"confirm":"demo"}`, rev))
	owWantStatus(t, "retire", r, http.StatusOK)
	// The same Program JSON as GET answers: the same fields, retiredAt set.
	before := owner.Get(t, path)
	owWantStatus(t, "program", before, http.StatusOK)
	var got, was map[string]any
	if err := json.Unmarshal([]byte(r.Body), &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(before.Body), &was); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(was))) {
		t.Fatalf("retire answered the fields %v, want the Program's %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(was)))
	}
	if got["retiredAt"] == nil {
		t.Fatalf("retire answered %s, want retiredAt set", r.Body)
	}
	// Answered before the steps: the grant is still to revoke, and nobody
	// gets in meanwhile.
	if p := mustOwnerProgram(t, app, app.Demo.ID); !p.Retirement.Pending {
		t.Fatal("the retirement's steps ran before the API answered")
	}
	if _, err := app.DB.FinishRetirements(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p := mustOwnerProgram(t, app, app.Demo.ID); p.Retirement.Pending || p.Retirement.Done != p.Retirement.Total || p.Retirement.Total != 1 {
		t.Fatalf("after the retirer: progress %+v, want finished with 1 of 1", p.Retirement)
	}
}

func TestRetiredProgram_EntryActionsAnswerConflictWithTheReason(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	waiting := mustInsertEntry(t, app.DB, app.Demo, "ada@example.com", "waiting")
	selected := mustInsertEntry(t, app.DB, app.Demo, "grace@example.com", "selected")
	active := mustInsertEntry(t, app.DB, app.Demo, "edsger@example.com", "selected")
	_, grant := owGrant(t, app, app.Demo.ID, active, "edsger@example.com", "user_edsger")
	invited := mustInsertEntry(t, app.DB, app.Demo, "barbara@example.com", "selected")
	invitation := owIssue(t, app, app.Demo.ID, invited).Invitation.ID
	mustRetireDemo(t, app) // pending: the grant and the invitation are still to revoke
	base := "/api/owner/programs/" + app.Demo.ID + "/entries/"
	before := dbFingerprint(t, app.DB)
	for _, tc := range []struct{ name, path, body string }{
		{"select", base + waiting + "/select", `{"reason":"meets_policy"}`},
		{"bulk select", base + "select", `{"entryIds":["` + waiting + `"],"reason":"meets_policy"}`},
		{"decline", base + selected + "/decline", `{"reason":"capacity"}`},
		{"bulk decline", base + "decline", `{"entryIds":["` + waiting + `","` + selected + `"],"reason":"capacity"}`},
		{"issue", base + selected + "/invitations", `{"requestKey":"` + owKey() + `","expiresAt":"` +
			app.Clock.Now().Add(24*time.Hour).UTC().Format(time.RFC3339) + `"}`},
		{"record a send", "/api/owner/invitations/" + invitation + "/delivery-record", `{"requestKey":"` + owKey() + `","channel":"email"}`},
		{"revoke the invitation", "/api/owner/invitations/" + invitation + "/revoke", `{}`},
		{"revoke the access", "/api/owner/grants/" + grant + "/revoke", `{}`},
	} {
		r := owner.PostJSON(t, "POST", tc.path, tc.body)
		owWantStatus(t, tc.name, r, http.StatusConflict)
	}
	if after := dbFingerprint(t, app.DB); !reflect.DeepEqual(before, after) {
		t.Fatalf("refused entry actions changed the database: %v → %v", before, after)
	}
	// The JSON error is a code; the form's answer says why.
	r := owner.PostOwnerForm(t, "/owner/programs/"+app.Demo.ID+"/entries/"+waiting+"/select", url.Values{"reason": {"meets_policy"}})
	owWantStatus(t, "select form", r, http.StatusConflict)
	if !strings.Contains(r.Body, "This program is retired: its entries, invitations and access can no longer be changed.") {
		t.Fatalf("select form's answer does not say why:\n%.2000s", r.Body)
	}
}

func TestRetiredProgram_EntryAndQueuePagesOfferOnlyWithdrawal(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	waiting := mustInsertEntry(t, app.DB, app.Demo, "ada@example.com", "waiting")
	active := mustInsertEntry(t, app.DB, app.Demo, "edsger@example.com", "selected")
	owGrant(t, app, app.Demo.ID, active, "edsger@example.com", "user_edsger")
	invited := mustInsertEntry(t, app.DB, app.Demo, "barbara@example.com", "selected")
	owIssue(t, app, app.Demo.ID, invited)
	entry := func(id string) string { return "/owner/programs/" + app.Demo.ID + "/entries/" + id }
	// Before retiring, each page offers its actions.
	for id, want := range map[string]string{waiting: entry(waiting) + "/select", active: `data-testid="revoke-grant-start"`,
		invited: `data-testid="revoke-invitation-start"`} {
		if body := owner.Get(t, entry(id)).Body; !strings.Contains(body, want) {
			t.Fatalf("before retiring, %s lacks %s", entry(id), want)
		}
	}
	mustRetireDemo(t, app) // pending: the grant and the invitation are still to revoke
	for _, id := range []string{waiting, active, invited} {
		r := owner.Get(t, entry(id))
		owWantStatus(t, "entry page", r, http.StatusOK)
		for _, gone := range []string{`action="` + entry(id) + `/select"`, `data-testid="decline-start"`, `data-testid="revoke-grant-start"`,
			`data-testid="revoke-invitation-start"`, `data-testid="issue-form"`, `data-testid="delivery-form"`} {
			if strings.Contains(r.Body, gone) {
				t.Errorf("retired program's entry page %s offers %s", entry(id), gone)
			}
		}
		for _, kept := range []string{`data-testid="retired-entry"`, `data-testid="withdraw-start"`} {
			if !strings.Contains(r.Body, kept) {
				t.Errorf("retired program's entry page %s lacks %s", entry(id), kept)
			}
		}
	}
	q := owner.Get(t, "/owner/programs/"+app.Demo.ID+"/entries")
	owWantStatus(t, "queue", q, http.StatusOK)
	for _, gone := range []string{`name="entryIds"`, `data-testid="bulk-select"`, `data-testid="bulk-decline"`, `data-testid="choose-all"`} {
		if strings.Contains(q.Body, gone) {
			t.Errorf("retired program's queue offers %s", gone)
		}
	}
	if !strings.Contains(q.Body, `data-testid="retired-banner"`) || strings.Count(q.Body, `data-testid="queue-row"`) != 3 {
		t.Error("retired program's queue does not list its entries under the retired banner")
	}
}
