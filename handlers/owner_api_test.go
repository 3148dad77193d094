package handlers

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"admit/store"
)

// TestOwnerAPI_RevisionConflictChangesNothing: a PATCH at a stale revision
// is 409 and leaves the program exactly as it was.
func TestOwnerAPI_RevisionConflictChangesNothing(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	path := "/api/owner/programs/" + app.Demo.ID
	before := owner.Get(t, path)
	owWantStatus(t, "GET program", before, http.StatusOK)
	counts := dbFingerprint(t, app.DB)
	stale := itoa(int(app.Demo.Revision) - 1)
	r := owner.PostJSON(t, "PATCH", path, `{"expectedRevision":`+stale+`,"signupOpen":false,"queueCap":7,"seatCap":3}`)
	owWantStatus(t, "stale PATCH", r, http.StatusConflict)
	if got, want := r.Body, "{\"error\":\"conflict\"}\n"; got != want {
		t.Fatalf("body=%q, want %q", got, want)
	}
	if after := owner.Get(t, path); after.Body != before.Body {
		t.Fatalf("program changed:\nbefore %s\nafter  %s", before.Body, after.Body)
	}
	if !reflect.DeepEqual(counts, dbFingerprint(t, app.DB)) {
		t.Fatal("a stale PATCH wrote rows")
	}
	// The content revision is checked the same way.
	r = owner.PostJSON(t, "PUT", path+"/content", `{"expectedRevision":0,"body":"Overwrite."}`)
	owWantStatus(t, "stale PUT content", r, http.StatusConflict)
	if body, rev, err := app.DB.OwnerContent(context.Background(), ownerActorOf(app.OwnerID), app.Demo.ID); err != nil || rev != 1 || strings.Contains(body, "Overwrite") {
		t.Fatalf("content after a stale PUT: rev %d, %v", rev, err)
	}
}

// TestOwnerAPI_PolicyConflictsChangeNothing: opening signup without a
// notice, enabling access without content and a seat cap below the seats in
// use are each 409, and the program stays as it was.
func TestOwnerAPI_PolicyConflictsChangeNothing(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	ws := app.Demo.WorkspaceID
	r := owner.PostJSON(t, "POST", "/api/owner/programs", `{"workspaceId":"`+ws+`","slug":"policy-list","name":"Program policy-list","purpose":"Policy checks.","queueCap":10,"hourlyCap":10,"seatCap":2,"maxInvitationDays":3}`)
	owWantStatus(t, "create", r, http.StatusCreated)
	id := owStr(owDecode(t, r.Body)["id"])
	if _, err := app.DB.PublishNotice(context.Background(), ownerActorOf(app.OwnerID), id, store.NewNotice{
		Purpose: "Policy checks.", ContactText: "By hand.", RetentionText: "Until retired."}); err != nil {
		t.Fatal(err)
	}
	a := mustInsertEntry(t, app.DB, mustOwnerProgram(t, app, id), "pa@example.com", "selected")
	b := mustInsertEntry(t, app.DB, mustOwnerProgram(t, app, id), "pb@example.com", "selected")
	owIssue(t, app, id, a)
	owIssue(t, app, id, b)
	p := mustOwnerProgram(t, app, id) // after the signups, which open and close signup
	// A program without a notice cannot open; use a fresh one for that.
	r = owner.PostJSON(t, "POST", "/api/owner/programs", `{"workspaceId":"`+ws+`","slug":"no-notice","name":"Program no-notice","purpose":"No notice yet.","queueCap":10,"hourlyCap":10,"seatCap":2,"maxInvitationDays":3}`)
	owWantStatus(t, "create", r, http.StatusCreated)
	bare := owStr(owDecode(t, r.Body)["id"])

	for _, tc := range []struct{ name, id, body string }{
		{"open without a notice", bare, `{"expectedRevision":1,"signupOpen":true}`},
		{"access without content", id, `{"expectedRevision":` + itoa(int(p.Revision)) + `,"accessEnabled":true}`},
		{"seat cap below seats in use", id, `{"expectedRevision":` + itoa(int(p.Revision)) + `,"seatCap":1}`},
	} {
		path := "/api/owner/programs/" + tc.id
		before := owner.Get(t, path).Body
		counts := dbFingerprint(t, app.DB)
		r := owner.PostJSON(t, "PATCH", path, tc.body)
		owWantStatus(t, tc.name, r, http.StatusConflict)
		if after := owner.Get(t, path).Body; after != before {
			t.Fatalf("%s: program changed:\n%s\n%s", tc.name, before, after)
		}
		if !reflect.DeepEqual(counts, dbFingerprint(t, app.DB)) {
			t.Fatalf("%s: rows written", tc.name)
		}
	}
	// Lowering to exactly the seats in use is allowed and removes nobody.
	r = owner.PostJSON(t, "PATCH", "/api/owner/programs/"+id, `{"expectedRevision":`+itoa(int(p.Revision))+`,"seatCap":2,"queueCap":1}`)
	owWantStatus(t, "lower caps", r, http.StatusOK)
	if got := owCount(t, app, `SELECT count(*) FROM entries WHERE program_id = ? AND state = 'invited'`, id); got != 2 {
		t.Fatalf("invited entries after lowering caps=%d, want 2", got)
	}
}

// TestOwnerAPI_NoticePurposeMismatchIs409AndWritesNoNotice.
func TestOwnerAPI_NoticePurposeMismatchIs409AndWritesNoNotice(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	notices := owCount(t, app, `SELECT count(*) FROM notices`)
	r := owner.PostJSON(t, "POST", "/api/owner/programs/"+app.Demo.ID+"/notices",
		`{"purpose":"A different purpose.","contactText":"By hand.","retentionText":"Until retired."}`)
	owWantStatus(t, "mismatched purpose", r, http.StatusConflict)
	if got := owCount(t, app, `SELECT count(*) FROM notices`); got != notices {
		t.Fatalf("notices=%d, want %d", got, notices)
	}
	if p := mustOwnerProgram(t, app, app.Demo.ID); p.CurrentNoticeVersion != 1 || p.Revision != app.Demo.Revision {
		t.Fatalf("program after refused notice: version %d revision %d", p.CurrentNoticeVersion, p.Revision)
	}
	// The form no longer asks for the purpose; one posted from an older page
	// is still refused, and the page says why, keeping the typed texts.
	page := owner.PostOwnerForm(t, "/owner/programs/"+app.Demo.ID+"/notices", map[string][]string{
		"purpose": {"A different purpose."}, "contactText": {"Typed contact."}, "retentionText": {"Typed retention."}})
	owWantStatus(t, "form with mismatched purpose", page, http.StatusConflict)
	for _, want := range []string{"create a new program", "Typed contact.", "Typed retention."} {
		if !strings.Contains(page.Body, want) {
			t.Fatalf("re-rendered notice form lacks %q", want)
		}
	}
	if got := owCount(t, app, `SELECT count(*) FROM notices`); got != notices {
		t.Fatalf("notices after the form=%d, want %d", got, notices)
	}
}

// TestOwnerAPI_CodeIsShownOnceNoStoreAndNeverLogged: the 201 carries the
// code with Cache-Control private, no-store; the same-key replay carries
// none; the code is in no log line; only its digest is stored.
func TestOwnerAPI_CodeIsShownOnceNoStoreAndNeverLogged(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	e := mustInsertEntry(t, app.DB, app.Demo, "code@example.com", "selected")
	path := "/api/owner/programs/" + app.Demo.ID + "/entries/" + e + "/invitations"
	body := `{"requestKey":"` + owKey() + `","expiresAt":"2026-12-01T10:00:00Z"}`
	first := owner.PostJSON(t, "POST", path, body)
	owWantStatus(t, "issue", first, http.StatusCreated)
	if got := first.Header.Get("Cache-Control"); got != "private, no-store" {
		t.Fatalf("Cache-Control=%q", got)
	}
	code := owStr(owDecode(t, first.Body)["code"])
	if len(code) != store.CodeLength || strings.ContainsAny(code, "+/=") {
		t.Fatalf("code %q is not 43 base64url characters", code)
	}
	replay := owner.PostJSON(t, "POST", path, body)
	owWantStatus(t, "replay", replay, http.StatusOK)
	if strings.Contains(replay.Body, code) || strings.Contains(replay.Body, `"code"`) {
		t.Fatalf("replay shows a code: %s", replay.Body)
	}
	detail := owner.Get(t, "/api/owner/programs/"+app.Demo.ID+"/entries/"+e)
	if strings.Contains(detail.Body, code) {
		t.Fatal("the entry detail shows the code")
	}
	if strings.Contains(app.Logs.String(), code) {
		t.Fatal("a log line holds the code")
	}
	digest, _ := store.CodeDigest(code)
	if n := owCount(t, app, `SELECT count(*) FROM invitations WHERE code_digest = ?`, digest); n != 1 {
		t.Fatalf("invitations stored with the code's digest=%d, want 1", n)
	}
}
