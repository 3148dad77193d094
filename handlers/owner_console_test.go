package handlers

import (
	"context"
	"encoding/csv"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"admit/store"
)

// TestOwnerConsole_PagesRenderForTheOwner: every console page answers 200
// with the security headers, no-store, Vary: HX-Request and its test IDs.
func TestOwnerConsole_PagesRenderForTheOwner(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	e := mustInsertEntry(t, app.DB, app.Demo, "page@example.com", "waiting")
	p := "/owner/programs/" + app.Demo.ID
	for _, tc := range []struct {
		path string
		ids  []string
	}{
		{"/owner", []string{"owner-programs", "create-program", "state-counts"}},
		{p, []string{"program-status", "checklist", "glance", "program-nav", "export-link"}},
		{p + "/settings", []string{"settings-form", "notice-form", "notice-version", "retire", "program-nav"}},
		{p + "/content", []string{"content-form", "asset-form", "program-nav"}},
		{p + "/invitations", []string{"program-nav"}},
		{p + "/entries", []string{"queue-block", "queue-filter", "bulk-select", "queue", "queue-row", "bulk-reason"}},
		{p + "/entries?state=waiting&from=2026-11-29&to=2026-11-29&limit=100", []string{"queue-row"}},
		{p + "/entries/" + e, []string{"entry-block", "entry-facts", "notice-snapshot", "entry-actions", "select-form", "decline-form", "withdraw-form", "invitations", "grant"}},
		{p + "/events", []string{"events", "event"}},
	} {
		r := owner.Get(t, tc.path)
		owWantStatus(t, tc.path, r, http.StatusOK)
		checkSecurityHeaders(t, tc.path, r)
		if got := r.Header.Get("Cache-Control"); got != "private, no-store" {
			t.Errorf("%s: Cache-Control=%q", tc.path, got)
		}
		if got := r.Header.Get("Vary"); got != "HX-Request" {
			t.Errorf("%s: Vary=%q", tc.path, got)
		}
		for _, id := range tc.ids {
			if !strings.Contains(r.Body, `data-testid="`+id+`"`) {
				t.Errorf("%s: no data-testid %q", tc.path, id)
			}
		}
		if !strings.Contains(r.Body, `name="csrf" value="`+owner.CSRFToken+`"`) && tc.path != p+"/events" && tc.path != p && tc.path != p+"/invitations" {
			t.Errorf("%s: forms lack the session's CSRF token", tc.path)
		}
	}
}

// TestOwnerConsole_HTMXGetsOnlyTheBlock: an htmx request for the queue or an
// entry gets the block alone; a plain request and an htmx history restore
// get the whole page.
func TestOwnerConsole_HTMXGetsOnlyTheBlock(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	e := mustInsertEntry(t, app.DB, app.Demo, "block@example.com", "waiting")
	for _, tc := range []struct{ path, block string }{
		{"/owner/programs/" + app.Demo.ID + "/entries?state=waiting", `<section id="queue-block"`},
		{"/owner/programs/" + app.Demo.ID + "/entries/" + e, `<section id="entry-block"`},
	} {
		block := owner.Get(t, tc.path, "HX-Request", "true")
		owWantStatus(t, tc.path+" (htmx)", block, http.StatusOK)
		if !strings.HasPrefix(block.Body, tc.block) || strings.Contains(block.Body, "<html") {
			t.Fatalf("%s: htmx answer is not the block alone: %.200s", tc.path, block.Body)
		}
		if got := block.Header.Get("Vary"); got != "HX-Request" {
			t.Fatalf("%s: Vary=%q", tc.path, got)
		}
		for _, h := range [][]string{nil, {"HX-Request", "true", "HX-History-Restore-Request", "true"}} {
			page := owner.Get(t, tc.path, h...)
			if !strings.HasPrefix(page.Body, "<!doctype html>") || !strings.Contains(page.Body, tc.block) {
				t.Fatalf("%s %v: not the whole page: %.200s", tc.path, h, page.Body)
			}
		}
	}
}

// htmlStep is one console form submission.
type htmlStep struct {
	name   string
	path   string
	form   url.Values
	status int
	// to is where a 303 leads; flash is what that page then says once.
	to    string
	flash string
	audit int
}

// TestOwnerConsole_EveryFormRedirectsAndAuditsOnce: each console form, as a
// plain browser would send it, answers 303 to the next page (PRG), which
// then confirms it once; each writes exactly one audit event per change.
func TestOwnerConsole_EveryFormRedirectsAndAuditsOnce(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	ctx := context.Background()
	pid := app.Demo.ID
	p := "/owner/programs/" + pid
	w1 := mustInsertEntry(t, app.DB, app.Demo, "f1@example.com", "waiting")
	w2 := mustInsertEntry(t, app.DB, app.Demo, "f2@example.com", "waiting")
	w3 := mustInsertEntry(t, app.DB, app.Demo, "f3@example.com", "waiting")
	w4 := mustInsertEntry(t, app.DB, app.Demo, "f4@example.com", "waiting")
	active := mustInsertEntry(t, app.DB, app.Demo, "f5@example.com", "selected")
	_, grant := owGrant(t, app, pid, active, "f5@example.com", "user_f5")

	steps := []htmlStep{
		{"create program", "/owner/programs", url.Values{"workspaceId": {app.Demo.WorkspaceID}, "slug": {"html-list"}, "name": {"Typed name"},
			"purpose": {"Made in the console."}, "queueCap": {"10"}, "hourlyCap": {"5"}, "seatCap": {"3"}, "maxInvitationDays": {"7"}},
			303, "", "Program created", 1},
		{"settings", p + "/settings", url.Values{"expectedRevision": {itoa(int(app.Demo.Revision))}, "signupOpen": {"yes"},
			"queueCap": {"900"}, "hourlyCap": {"90"}, "seatCap": {"40"}}, 303, p + "/settings", "Settings saved", 1},
		{"notice", p + "/notices", url.Values{"purpose": {app0Purpose}, "contactText": {"By hand."}, "retentionText": {"Until retired."}},
			303, p + "/settings", "Notice version 2 published", 1},
		{"content", p + "/content", url.Values{"expectedRevision": {"1"}, "body": {"New private text."}}, 303, p + "/content", "revision 2", 1},
		{"bulk select", p + "/entries/select", url.Values{"entryIds": {w1, w2}, "reason": {"meets_policy"},
			"next": {p + "/entries?state=waiting"}}, 303, p + "/entries?state=waiting", "Selected 2 entries", 2},
		{"select", p + "/entries/" + w3 + "/select", url.Values{"reason": {"owner_discretion"}}, 303, p + "/entries/" + w3, "Entry selected", 1},
		{"decline", p + "/entries/" + w4 + "/decline", url.Values{"reason": {"not_eligible"}}, 303, p + "/entries/" + w4, "Entry declined", 1},
		{"withdraw", p + "/entries/" + w4 + "/withdraw", url.Values{"reason": {"applicant_request"}}, 303, p + "/entries/" + w4, "Entry withdrawn", 1},
		{"issue", p + "/entries/" + w3 + "/invitations", url.Values{"requestKey": {owKey()}, "expiresOn": {"2026-12-01"}, "time": {"09:30"}},
			303, "", "Invitation code for f3@example.com", 1},
	}
	for _, st := range steps {
		audit := owAuditCount(t, app)
		r := owner.PostOwnerForm(t, st.path, st.form)
		owWantStatus(t, st.name, r, st.status)
		if got := owAuditCount(t, app) - audit; got != st.audit {
			t.Fatalf("%s: audit events added=%d, want %d", st.name, got, st.audit)
		}
		if st.status != http.StatusSeeOther {
			continue
		}
		to := owLocation(r)
		if st.to != "" && to != st.to {
			t.Fatalf("%s: redirect to %q, want %q", st.name, to, st.to)
		}
		next := owner.Get(t, to)
		owWantStatus(t, st.name+": next page", next, http.StatusOK)
		if !strings.Contains(next.Body, st.flash) {
			t.Fatalf("%s: next page does not confirm %q", st.name, st.flash)
		}
		if again := owner.Get(t, to); strings.Contains(again.Body, `data-testid="flash"`) {
			t.Fatalf("%s: the confirmation shows twice", st.name)
		}
	}
	if got := owEntryState(t, app, w3); got != "invited" {
		t.Fatalf("issued entry is %q", got)
	}

	// The invitation forms act on the entry's own invitation.
	d, err := app.DB.EntryDetail(ctx, ownerActorOf(app.OwnerID), pid, w3)
	if err != nil || len(d.Invitations) != 1 {
		t.Fatalf("detail: %v", err)
	}
	inv := d.Invitations[0].ID
	invPath := p + "/entries/" + w3 + "/invitations/" + inv
	for _, st := range []htmlStep{
		{"record delivery", invPath + "/delivery-record", url.Values{"requestKey": {owKey()}, "channel": {"chat"}, "reference": {"chat 12"}},
			303, p + "/entries/" + w3, "Send recorded", 1},
		{"revoke invitation", invPath + "/revoke", url.Values{}, 303, p + "/entries/" + w3, "Invitation revoked", 1},
		{"revoke grant", p + "/entries/" + active + "/grants/" + grant + "/revoke", url.Values{}, 303, p + "/entries/" + active, "Access revoked", 1},
	} {
		audit := owAuditCount(t, app)
		r := owner.PostOwnerForm(t, st.path, st.form)
		owWantStatus(t, st.name, r, st.status)
		if got := owAuditCount(t, app) - audit; got != st.audit {
			t.Fatalf("%s: audit events added=%d, want %d", st.name, got, st.audit)
		}
		if got := owLocation(r); got != st.to {
			t.Fatalf("%s: redirect to %q, want %q", st.name, got, st.to)
		}
		if next := owner.Get(t, st.to); !strings.Contains(next.Body, st.flash) {
			t.Fatalf("%s: next page does not confirm %q", st.name, st.flash)
		}
	}
	// An invitation reached through another entry's path is not found.
	r := owner.PostOwnerForm(t, p+"/entries/"+w1+"/invitations/"+inv+"/revoke", url.Values{})
	owWantStatus(t, "revoke through another entry", r, http.StatusNotFound)
	owWantNoAddressInAudit(t, app)
}

// TestOwnerConsole_RefusedFormsKeepTheInput: a 400 or 409 shows the same
// form again with the message and everything the owner typed.
func TestOwnerConsole_RefusedFormsKeepTheInput(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	pid := app.Demo.ID
	p := "/owner/programs/" + pid
	w := mustInsertEntry(t, app.DB, app.Demo, "keep@example.com", "waiting")
	sel := mustInsertEntry(t, app.DB, app.Demo, "keep2@example.com", "selected")
	rev := itoa(int(app.Demo.Revision))
	// Change the program behind the form's back, for the conflicts.
	if _, err := app.DB.PutContent(context.Background(), ownerActorOf(app.OwnerID), pid, store.ContentEdit{ExpectedRevision: 1, Body: "Saved by someone else."}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name   string
		path   string
		form   url.Values
		status int
		has    []string
	}{
		{"create: bad slug", "/owner/programs", url.Values{"workspaceId": {app.Demo.WorkspaceID}, "slug": {"Bad Slug"}, "name": {"Typed name"},
			"purpose": {"Typed purpose text."}, "queueCap": {"10"}, "hourlyCap": {"5"}, "seatCap": {"3"}, "maxInvitationDays": {"7"}},
			400, []string{"3–60 lowercase", `value="Bad Slug"`, "Typed purpose text.", `value="7"`, "<details open"}},
		{"create: slug taken", "/owner/programs", url.Values{"workspaceId": {app.Demo.WorkspaceID}, "slug": {"demo"}, "name": {"Typed name"},
			"purpose": {"Another."}, "queueCap": {"10"}, "hourlyCap": {"5"}, "seatCap": {"3"}, "maxInvitationDays": {"7"}},
			409, []string{"already uses that address name", `value="demo"`}},
		{"create: cap not a number", "/owner/programs", url.Values{"workspaceId": {app.Demo.WorkspaceID}, "slug": {"ok-slug"}, "name": {"Typed name"},
			"purpose": {"P."}, "queueCap": {"lots"}, "hourlyCap": {"5"}, "seatCap": {"3"}, "maxInvitationDays": {"7"}},
			400, []string{"queue cap must be a whole number", `value="lots"`}},
		{"settings: stale revision", p + "/settings", url.Values{"expectedRevision": {itoa(int(app.Demo.Revision) - 1)},
			"queueCap": {"321"}, "hourlyCap": {"54"}, "seatCap": {"7"}},
			409, []string{"changed since you loaded it", `value="321"`, `value="54"`, `name="expectedRevision" value="` + rev + `"`}},
		{"settings: seat cap zero", p + "/settings", url.Values{"expectedRevision": {rev}, "queueCap": {"10"}, "hourlyCap": {"5"}, "seatCap": {"0"}},
			400, []string{"seat cap must be between 1 and 100000", `value="0"`}},
		{"content: conflict", p + "/content", url.Values{"expectedRevision": {"1"}, "body": {"My unsaved draft."}},
			409, []string{"changed since you loaded it", "My unsaved draft.", "Saved by someone else.", `data-testid="saved-content"`, `name="expectedRevision" value="2"`}},
		{"content: empty", p + "/content", url.Values{"expectedRevision": {"2"}, "body": {"  "}}, 400, []string{"1–20000 characters"}},
		{"bulk select: no reason", p + "/entries/select", url.Values{"entryIds": {w}, "reason": {""}, "next": {p + "/entries?state=waiting"}},
			400, []string{"Choose a reason for selecting", `value="` + w + `" checked`, `aria-current="page" data-testid="tab-waiting"`}},
		{"decline: select reason", p + "/entries/" + w + "/decline", url.Values{"reason": {"meets_policy"}},
			400, []string{"Choose a reason for declining", `data-confirm-kind="decline"`, `href="#confirm-reason"`}},
		{"issue: beyond the maximum", p + "/entries/" + sel + "/invitations", url.Values{"requestKey": {"0d6c5e1a-1b2c-4d3e-8f40-5a6b7c8d9e0f"},
			"expiresOn": {"2026-12-30"}, "time": {"10:00"}},
			400, []string{"within 14 days", `value="2026-12-30"`, `value="0d6c5e1a-1b2c-4d3e-8f40-5a6b7c8d9e0f"`}},
	} {
		counts := dbFingerprint(t, app.DB)
		r := owner.PostOwnerForm(t, tc.path, tc.form)
		owWantStatus(t, tc.name, r, tc.status)
		for _, want := range tc.has {
			if !strings.Contains(r.Body, want) {
				t.Fatalf("%s: re-rendered page lacks %q", tc.name, want)
			}
		}
		if !strings.Contains(r.Body, `data-testid="error-summary"`) {
			t.Fatalf("%s: no error summary shown", tc.name)
		}
		if !sameRows(counts, dbFingerprint(t, app.DB)) {
			t.Fatalf("%s: a refused form wrote rows", tc.name)
		}
	}

	// An upload that is not an image or PDF shows the message on the page.
	ct, body := owMultipart(t, "notes.txt", [2]string{"csrf", owner.CSRFToken}, [2]string{"file", "just text"})
	r := owner.Do(t, "POST", p+"/assets", ct, strings.NewReader(body))
	owWantStatus(t, "text upload", r, http.StatusBadRequest)
	if !strings.Contains(r.Body, "PNG, JPEG, GIF or WebP image, or a PDF") {
		t.Fatal("the upload error is not shown")
	}
}

// TestOwnerConsole_UploadFormCarriesItsCSRFTokenWithoutJavaScript: a plain
// multipart form sends the token as its first field; without it, 403.
func TestOwnerConsole_UploadFormCarriesItsCSRFTokenWithoutJavaScript(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	p := "/owner/programs/" + app.Demo.ID + "/assets"
	ct, body := owMultipart(t, "photo.png", [2]string{"name", "photo.png"}, [2]string{"file", ownerPNG})
	owWantStatus(t, "no token", owner.Do(t, "POST", p, ct, strings.NewReader(body)), http.StatusForbidden)
	ct, body = owMultipart(t, "photo.png", [2]string{"csrf", "forged"}, [2]string{"file", ownerPNG})
	owWantStatus(t, "wrong token", owner.Do(t, "POST", p, ct, strings.NewReader(body)), http.StatusForbidden)
	if n := owCount(t, app, `SELECT count(*) FROM private_assets`); n != 0 {
		t.Fatalf("assets stored without a token: %d", n)
	}
	ct, body = owMultipart(t, "My Photo (1).png", [2]string{"csrf", owner.CSRFToken}, [2]string{"file", ownerPNG})
	r := owner.Do(t, "POST", p, ct, strings.NewReader(body))
	owWantStatus(t, "upload", r, http.StatusSeeOther)
	var name, ctype string
	if err := app.DB.View(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRow(`SELECT name, content_type FROM private_assets`).Scan(&name, &ctype)
	}); err != nil {
		t.Fatal(err)
	}
	if name != "My-Photo--1-.png" || ctype != "image/png" {
		t.Fatalf("stored asset %q %q", name, ctype)
	}
	if page := owner.Get(t, owLocation(r)); !strings.Contains(page.Body, "My-Photo--1-.png") || !strings.Contains(page.Body, "uploaded") {
		t.Fatal("the program page does not list the upload")
	}
}

var codePattern = regexp.MustCompile(`data-testid="invitation-code">([A-Za-z0-9_-]{43})<`)

// TestOwnerConsole_IssueShowsTheCodeOnceThenOnlyThatItWasIssued: the issue
// form renders the code directly, no-store; submitting the same form again
// shows that it was issued, never the code; no page or log shows it later.
func TestOwnerConsole_IssueShowsTheCodeOnceThenOnlyThatItWasIssued(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	e := mustInsertEntry(t, app.DB, app.Demo, "once@example.com", "selected")
	entry := "/owner/programs/" + app.Demo.ID + "/entries/" + e
	page := owner.Get(t, entry)
	key := regexp.MustCompile(`name="requestKey" value="([0-9a-f-]{36})"`).FindStringSubmatch(page.Body)
	day := regexp.MustCompile(`name="expiresOn"[^>]*value="([0-9-]{10})"`).FindStringSubmatch(page.Body)
	clock := regexp.MustCompile(`name="time" value="([0-9:]{5})"`).FindStringSubmatch(page.Body)
	if key == nil || day == nil || clock == nil {
		t.Fatalf("issue form fields missing: %v %v %v", key, day, clock)
	}
	if got, want := day[1], "2026-12-13"; got != want {
		t.Fatalf("default expiry day %q, want the maximum %q", got, want)
	}
	form := url.Values{"requestKey": {key[1]}, "expiresOn": {day[1]}, "time": {clock[1]}}
	// The form answers 303 to the invitation's code page: the code is in
	// neither the Location nor the body of the redirect.
	posted := owner.PostOwnerForm(t, entry+"/invitations", form)
	owWantStatus(t, "issue", posted, http.StatusSeeOther)
	codePage := owLocation(posted)
	if !regexp.MustCompile(`^` + regexp.QuoteMeta(entry) + `/invitations/[0-9a-f-]{36}$`).MatchString(codePage) {
		t.Fatalf("issue led to %q, want the invitation's code page", codePage)
	}
	first := owner.Get(t, codePage)
	owWantStatus(t, "code page", first, http.StatusOK)
	m := codePattern.FindStringSubmatch(first.Body)
	if m == nil {
		t.Fatalf("no code on the code page: %.400s", first.Body)
	}
	code := m[1]
	if strings.Contains(posted.Body, code) || strings.Contains(codePage, code) {
		t.Fatal("the redirect carries the code")
	}
	if got := first.Header.Get("Cache-Control"); got != "private, no-store" {
		t.Fatalf("Cache-Control=%q", got)
	}
	for _, want := range []string{`class="secret"`, "shown only this once", `data-testid="delivery-claim"`, "not a delivery receipt",
		`data-testid="redeem-url">` + app.URL + `/redeem<`, "3. Enter this code: " + code, "Sign in with this email address: once@example.com"} {
		if !strings.Contains(first.Body, want) {
			t.Fatalf("code page lacks %q", want)
		}
	}
	// A reload says the code was shown and offers revoke-and-reissue.
	reload := owner.Get(t, codePage)
	owWantStatus(t, "code page again", reload, http.StatusOK)
	if strings.Contains(reload.Body, code) || !strings.Contains(reload.Body, `data-testid="issue-replay"`) ||
		!strings.Contains(reload.Body, `data-testid="revoke-reissue"`) {
		t.Fatal("a reload of the code page shows the code, or no notice and no way to reissue")
	}
	// The same form sent again leads to the same page, without the code.
	again := owner.PostOwnerForm(t, entry+"/invitations", form)
	owWantStatus(t, "same form again", again, http.StatusSeeOther)
	if owLocation(again) != codePage {
		t.Fatalf("the repeated form led to %q, want %q", owLocation(again), codePage)
	}
	if body := owner.Get(t, codePage).Body; strings.Contains(body, code) || !strings.Contains(body, `data-testid="issue-replay"`) {
		t.Fatal("the repeated form's page shows the code or no replay notice")
	}
	for _, path := range []string{entry, "/owner/programs/" + app.Demo.ID + "/events", "/api/owner/programs/" + app.Demo.ID + "/entries/" + e} {
		if strings.Contains(owner.Get(t, path).Body, code) {
			t.Fatalf("%s shows the code", path)
		}
	}
	if strings.Contains(app.Logs.String(), code) {
		t.Fatal("a log line holds the code")
	}
	if n := owCount(t, app, `SELECT count(*) FROM invitations WHERE entry_id = ?`, e); n != 1 {
		t.Fatalf("invitations=%d, want 1", n)
	}
}

// TestOwnerConsole_LapsedInvitationReadsExpiredByTheStoreClock: once the
// store's clock passes the expiry, the entry page shows the invitation as
// expired and offers a new one, which then issues.
func TestOwnerConsole_LapsedInvitationReadsExpiredByTheStoreClock(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	e := mustInsertEntry(t, app.DB, app.Demo, "lapse@example.com", "selected")
	res := owIssue(t, app, app.Demo.ID, e)
	entry := "/owner/programs/" + app.Demo.ID + "/entries/" + e
	if body := owner.Get(t, entry).Body; strings.Contains(body, `data-testid="issue-form"`) || !strings.Contains(body, `data-state="issued"`) {
		t.Fatal("a live invitation: the page offers a new one or does not show it issued")
	}
	app.Clock.Set(res.Invitation.ExpiresAt.Add(-time.Millisecond))
	if body := owner.Get(t, entry).Body; !strings.Contains(body, `data-state="issued"`) {
		t.Fatal("one millisecond before expiry the invitation is not issued")
	}
	app.Clock.Set(res.Invitation.ExpiresAt)
	body := owner.Get(t, entry).Body
	if !strings.Contains(body, `data-state="expired"`) || !strings.Contains(body, `data-testid="issue-form"`) {
		t.Fatal("at expiry the page does not show it expired with a new issue form")
	}
	r := owner.PostJSON(t, "POST", "/api/owner/programs/"+app.Demo.ID+"/entries/"+e+"/invitations",
		`{"requestKey":"`+owKey()+`","expiresAt":"`+res.Invitation.ExpiresAt.Add(time.Hour).Format(time.RFC3339)+`"}`)
	owWantStatus(t, "reissue after expiry", r, http.StatusCreated)
	if n := owCount(t, app, `SELECT count(*) FROM audit_events WHERE entry_id = ? AND event_type = 'invite_expired'`, e); n != 1 {
		t.Fatalf("invite_expired events=%d, want 1", n)
	}
}

// TestOwnerExport_OwnerOnlyNoStoreAndAuditedWithoutPersonalData.
func TestOwnerExport_OwnerOnlyNoStoreAndAuditedWithoutPersonalData(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	mustInsertEntry(t, app.DB, app.Demo, "csv@example.com", "waiting")
	mustInsertEntry(t, app.DB, app.Demo, "=cmd@example.com", "selected")
	path := "/owner/programs/" + app.Demo.ID + "/export.csv"

	nobody := app.NewClient(t)
	nobody.SignIn(t, "nobody@example.com")
	foreign, _, _ := mustForeignOwner(t, app, "foreign@example.com")
	audit := owAuditCount(t, app)
	for name, c := range map[string]*testClient{"anonymous": app.NewClient(t), "non-owner": nobody, "foreign owner": foreign} {
		r := c.Get(t, path)
		if r.StatusCode == http.StatusOK || strings.Contains(r.Body, "csv@example.com") {
			t.Fatalf("%s got the export: %d", name, r.StatusCode)
		}
	}
	if owAuditCount(t, app) != audit {
		t.Fatal("a refused export was audited")
	}

	r := owner.Get(t, path)
	owWantStatus(t, "export", r, http.StatusOK)
	if got := r.Header.Get("Cache-Control"); got != "private, no-store" {
		t.Fatalf("Cache-Control=%q", got)
	}
	if got := r.Header.Get("Content-Type"); got != "text/csv; charset=utf-8" {
		t.Fatalf("Content-Type=%q", got)
	}
	if got := r.Header.Get("Content-Disposition"); got != `attachment; filename="demo-queue.csv"` {
		t.Fatalf("Content-Disposition=%q", got)
	}
	rows, err := csv.NewReader(strings.NewReader(r.Body)).ReadAll()
	if err != nil {
		t.Fatalf("parse CSV: %v", err)
	}
	if got, want := len(rows), 3; got != want {
		t.Fatalf("rows=%d, want %d (header and two entries)", got, want)
	}
	if rows[1][1] != "csv@example.com" || rows[2][1] != "'=cmd@example.com" {
		t.Fatalf("email cells %q %q: want the address, and a formula neutralized", rows[1][1], rows[2][1])
	}
	if got := owAuditCount(t, app) - audit; got != 1 {
		t.Fatalf("audit events added=%d, want 1", got)
	}
	var typ, details string
	if err := app.DB.View(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRow(`SELECT event_type, details FROM audit_events ORDER BY id DESC LIMIT 1`).Scan(&typ, &details)
	}); err != nil {
		t.Fatal(err)
	}
	if typ != "queue_exported" || details != `{"rows":2}` {
		t.Fatalf("export event %s %s, want queue_exported {\"rows\":2}", typ, details)
	}
	owWantNoAddressInAudit(t, app)
	if strings.Contains(app.Logs.String(), "csv@example.com") {
		t.Fatal("a log line holds an exported address")
	}
}

var hrefPattern = func(testID string) *regexp.Regexp {
	return regexp.MustCompile(`href="([^"]+)"[^>]*data-testid="` + testID + `"`)
}

// owFollow returns the decoded href of the link with the test ID, or "".
func owFollow(body, testID string) string {
	m := hrefPattern(testID).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return strings.ReplaceAll(m[1], "&amp;", "&")
}

// TestOwnerConsole_QueueAndAuditLogPageByPlainLinks: the queue's "Next
// page" and the audit log's "Older events" are real links that keep the
// filters, visit every row once and end.
func TestOwnerConsole_QueueAndAuditLogPageByPlainLinks(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	want := map[string]bool{}
	for i := 0; i < 7; i++ {
		app.Clock.Add(time.Minute)
		want[mustInsertEntry(t, app.DB, app.Demo, "page"+itoa(i)+"@example.com", "waiting")] = true
	}
	mustInsertEntry(t, app.DB, app.Demo, "other@example.com", "declined")
	rowID := regexp.MustCompile(`data-testid="queue-row" data-entry-id="([0-9a-f-]{36})"`)

	path := "/owner/programs/" + app.Demo.ID + "/entries?state=waiting&limit=3"
	seen := map[string]int{}
	pages := 0
	for path != "" {
		pages++
		r := owner.Get(t, path)
		owWantStatus(t, path, r, http.StatusOK)
		for _, m := range rowID.FindAllStringSubmatch(r.Body, -1) {
			seen[m[1]]++
		}
		if pages > 1 && owFollow(r.Body, "queue-first") != "/owner/programs/"+app.Demo.ID+"/entries?limit=3&state=waiting" {
			t.Fatalf("page %d: first-page link %q", pages, owFollow(r.Body, "queue-first"))
		}
		path = owFollow(r.Body, "queue-next")
		if path != "" && (!strings.Contains(path, "state=waiting") || !strings.Contains(path, "limit=3") || !strings.Contains(path, "cursor=")) {
			t.Fatalf("next link %q drops the filter", path)
		}
	}
	if pages != 3 || len(seen) != len(want) {
		t.Fatalf("%d pages, %d entries, want 3 pages and %d entries", pages, len(seen), len(want))
	}
	for id, n := range seen {
		if !want[id] || n != 1 {
			t.Fatalf("entry %s seen %d times (wanted %v)", id, n, want[id])
		}
	}

	events := "/owner/programs/" + app.Demo.ID + "/events?limit=2"
	total := owCount(t, app, `SELECT count(*) FROM audit_events WHERE program_id = ?`, app.Demo.ID)
	got := 0
	for events != "" {
		r := owner.Get(t, events)
		owWantStatus(t, events, r, http.StatusOK)
		got += strings.Count(r.Body, `data-testid="event"`)
		events = owFollow(r.Body, "events-next")
	}
	if got != total {
		t.Fatalf("audit log pages showed %d events, want %d", got, total)
	}
}
