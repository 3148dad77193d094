package handlers

import (
	"encoding/csv"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"admit/store"
)

// codeCells finds the codes a bulk codes page shows.
var codeCells = regexp.MustCompile(`data-testid="code">([A-Za-z0-9_-]{43})<`)

// TestBulkIssuePages_ConfirmShowOnceSheetAndRecord is the console's bulk
// issue without a browser: the queue's chosen entries → a confirmation
// that changes nothing → one no-store page with every address and code
// once (a resend shows none) → a formula-safe CSV sheet made from the
// page's codes (a wrong code is 404) → one record of the send for all; a
// refused record answers only the form with htmx, and without it a page
// that says the codes cannot be shown again. No code is ever logged.
func TestBulkIssuePages_ConfirmShowOnceSheetAndRecord(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	emails := []string{"=sum@example.com", "ann@example.com", "-dash@example.com"}
	var ids []string
	for _, e := range emails {
		ids = append(ids, mustInsertEntry(t, app.DB, app.Demo, e, store.StateSelected))
	}
	base := "/owner/programs/" + app.Demo.ID
	before := owCount(t, app, `SELECT count(*) FROM invitations`)

	confirm := owner.PostOwnerForm(t, base+"/invitations", map[string][]string{"entryIds": ids})
	owWantStatus(t, "confirmation", confirm, http.StatusOK)
	for _, e := range emails {
		if !strings.Contains(confirm.Body, e) {
			t.Fatalf("the confirmation does not name %s", e)
		}
	}
	if n := owCount(t, app, `SELECT count(*) FROM invitations`); n != before {
		t.Fatal("the confirmation issued something")
	}
	key := regexp.MustCompile(`name="requestKey" value="([0-9a-f-]{36})"`).FindStringSubmatch(confirm.Body)
	expires := regexp.MustCompile(`name="expiresOn"[^>]*value="([0-9-]{10})"`).FindStringSubmatch(confirm.Body)
	timeOfDay := regexp.MustCompile(`name="time" value="([0-9:]{5})"`).FindStringSubmatch(confirm.Body)
	if key == nil || expires == nil || timeOfDay == nil {
		t.Fatalf("confirmation form lacks its fields:\n%s", confirm.Body)
	}
	form := map[string][]string{"entryIds": ids, "confirmed": {"yes"}, "requestKey": {key[1]}, "expiresOn": {expires[1]}, "time": {timeOfDay[1]}}

	page := owner.PostOwnerForm(t, base+"/invitations", form)
	owWantStatus(t, "codes page", page, http.StatusOK)
	if got := page.Header.Get("Cache-Control"); got != "private, no-store" {
		t.Fatalf("Cache-Control=%q", got)
	}
	found := codeCells.FindAllStringSubmatch(page.Body, -1)
	if len(found) != 3 {
		t.Fatalf("codes shown=%d, want 3", len(found))
	}
	var codes []string
	for _, m := range found {
		codes = append(codes, m[1])
	}
	invIDs := regexp.MustCompile(`data-testid="code-row" data-invitation-id="([0-9a-f-]{36})"`).FindAllStringSubmatch(page.Body, -1)
	if len(invIDs) != 3 || !strings.Contains(page.Body, `data-testid="codes-not-again"`) {
		t.Fatal("the codes page lacks its rows or its warning before the record form")
	}
	var invitations []string
	for _, m := range invIDs {
		invitations = append(invitations, m[1])
	}

	resend := owner.PostOwnerForm(t, base+"/invitations", form)
	owWantStatus(t, "resent confirmation", resend, http.StatusOK)
	if codeCells.MatchString(resend.Body) || !strings.Contains(resend.Body, `data-testid="issue-replay"`) {
		t.Fatal("a resent confirmation shows codes")
	}
	if n := owCount(t, app, `SELECT count(*) FROM invitations`); n != before+3 {
		t.Fatalf("invitations=%d, want %d", n-before, 3)
	}

	sheet := owner.PostOwnerForm(t, base+"/invitations/sheet", map[string][]string{"invitationIds": invitations, "codes": codes})
	owWantStatus(t, "sheet", sheet, http.StatusOK)
	if sheet.Header.Get("Cache-Control") != "private, no-store" || !strings.HasPrefix(sheet.Header.Get("Content-Type"), "text/csv") {
		t.Fatalf("sheet headers %v", sheet.Header)
	}
	rows, err := csv.NewReader(strings.NewReader(sheet.Body)).ReadAll()
	if err != nil || len(rows) != 4 {
		t.Fatalf("sheet rows=%d err=%v", len(rows), err)
	}
	if strings.Join(rows[0], ",") != "email,code,expires_at,redeem_url" {
		t.Fatalf("header %v", rows[0])
	}
	for i, row := range rows[1:] {
		wantEmail := emails[i]
		if strings.ContainsAny(wantEmail[:1], "=+-@") {
			wantEmail = "'" + wantEmail
		}
		if row[0] != wantEmail || row[1] != codes[i] || row[3] != app.URL+"/redeem" || !strings.HasSuffix(row[2], "Z") {
			t.Fatalf("sheet row %d = %v", i, row)
		}
	}
	wrong := append([]string{}, codes...)
	wrong[1] = codes[0]
	owWantStatus(t, "sheet with a wrong code", owner.PostOwnerForm(t, base+"/invitations/sheet",
		map[string][]string{"invitationIds": invitations, "codes": wrong}), http.StatusNotFound)

	record := func(channel, reference string, headers ...string) *testResponse {
		return owner.PostOwnerForm(t, base+"/delivery-records", map[string][]string{"invitationIds": invitations,
			"requestKey": {owKey()}, "channel": {channel}, "reference": {reference}}, headers...)
	}
	r := record("email", "sent to ann@example.com", "HX-Request", "true")
	owWantStatus(t, "refused record with htmx", r, http.StatusBadRequest)
	if !strings.HasPrefix(strings.TrimSpace(r.Body), `<form`) || strings.Contains(r.Body, "<html") {
		t.Fatalf("htmx refusal is not the form alone:\n%.300s", r.Body)
	}
	r = record("email", "sent to ann@example.com")
	owWantStatus(t, "refused record without htmx", r, http.StatusBadRequest)
	if !strings.Contains(r.Body, "The codes cannot be shown again") || codeCells.MatchString(r.Body) {
		t.Fatal("the refused record's page does not say the codes cannot be shown again")
	}
	r = record("email", "spring batch")
	owWantStatus(t, "record", r, http.StatusSeeOther)
	if n := owCount(t, app, `SELECT count(*) FROM invitations WHERE delivery_recorded_at IS NOT NULL AND delivery_reference = 'spring batch'`); n != 3 {
		t.Fatalf("recorded=%d, want 3", n)
	}
	logs := app.Logs.String()
	for _, c := range codes {
		if strings.Contains(logs, c) {
			t.Fatal("a code is in the logs")
		}
	}
}

// TestBulkIssuePages_OnlySelectedEntriesAreOffered: choosing a waiting
// entry answers the queue with the reason, before any confirmation.
func TestBulkIssuePages_OnlySelectedEntriesAreOffered(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	sel := mustInsertEntry(t, app.DB, app.Demo, "sel@example.com", store.StateSelected)
	wait := mustInsertEntry(t, app.DB, app.Demo, "wait@example.com", store.StateWaiting)
	r := owner.PostOwnerForm(t, "/owner/programs/"+app.Demo.ID+"/invitations", map[string][]string{"entryIds": {sel, wait}})
	owWantStatus(t, "a waiting entry chosen", r, http.StatusConflict)
	if !strings.Contains(r.Body, "wait@example.com is waiting") || strings.Contains(r.Body, `data-confirm-kind="bulk-issue"`) {
		t.Fatalf("the queue does not name the waiting entry:\n%.400s", r.Body)
	}
}
