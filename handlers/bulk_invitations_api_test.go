package handlers

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"admit/store"
)

// bulkIssueBody is a bulk issue's JSON body.
func bulkIssueBody(key, expiresAt string, entryIDs ...string) string {
	return `{"requestKey":"` + key + `","entryIds":["` + strings.Join(entryIDs, `","`) + `"],"expiresAt":"` + expiresAt + `"}`
}

// bulkDeliveryBody is a bulk delivery record's JSON body.
func bulkDeliveryBody(key, channel, reference string, invitationIDs ...string) string {
	return `{"requestKey":"` + key + `","invitationIds":["` + strings.Join(invitationIDs, `","`) + `"],"channel":"` + channel +
		`","reference":"` + reference + `"}`
}

// setSeatCap sets a program's seat cap as its owner.
func setSeatCap(tb testing.TB, app *testApp, p *store.Program, n int) {
	tb.Helper()
	cur := mustOwnerProgram(tb, app, p.ID)
	if _, err := app.DB.UpdateProgram(context.Background(), ownerActorOf(app.OwnerID), p.ID,
		store.ProgramSettings{ExpectedRevision: cur.Revision, SeatCap: &n}); err != nil {
		tb.Fatalf("seat cap %d: %v", n, err)
	}
}

// TestBulkInvitationsAPI_ThreeCodesOnceOneRecordOneRedeemed is the bulk
// path end to end: three selected entries get three distinct 43-character
// codes in one no-store answer; the replay names the same invitations
// without a code; one bulk record covers all three; a recipient redeems
// one; history has one event per invitation and per record.
func TestBulkInvitationsAPI_ThreeCodesOnceOneRecordOneRedeemed(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	emails := []string{"bulk-a@example.com", "bulk-b@example.com", "bulk-c@example.com"}
	var ids []string
	for _, e := range emails {
		ids = append(ids, mustInsertEntry(t, app.DB, app.Demo, e, store.StateSelected))
	}
	events := owAuditCount(t, app)
	path := "/api/owner/programs/" + app.Demo.ID + "/invitations"
	body := bulkIssueBody(owKey(), "2026-12-01T10:00:00Z", ids...)

	first := owner.PostJSON(t, "POST", path, body)
	owWantStatus(t, "bulk issue", first, http.StatusCreated)
	if got := first.Header.Get("Cache-Control"); got != "private, no-store" {
		t.Fatalf("Cache-Control=%q, want private, no-store", got)
	}
	invs, _ := owDecode(t, first.Body)["invitations"].([]any)
	if len(invs) != 3 {
		t.Fatalf("invitations=%d, want 3: %s", len(invs), first.Body)
	}
	codes := map[string]bool{}
	var invIDs, codeList []string
	for i, inv := range invs {
		code := owStr(owPath(inv, "code"))
		if len(code) != store.CodeLength || strings.ContainsAny(code, "+/=") {
			t.Fatalf("code %d %q is not 43 base64url characters", i, code)
		}
		codes[code] = true
		codeList = append(codeList, code)
		if got := owStr(owPath(inv, "entryId")); got != ids[i] {
			t.Fatalf("invitation %d entryId=%q, want %q (the request's order)", i, got, ids[i])
		}
		if got := owStr(owPath(inv, "expiresAt")); got != "2026-12-01T10:00:00Z" {
			t.Fatalf("expiresAt=%q", got)
		}
		if got := owStr(owPath(inv, "state")); got != "issued" {
			t.Fatalf("state=%q, want issued", got)
		}
		invIDs = append(invIDs, owStr(owPath(inv, "id")))
		if st := owEntryState(t, app, ids[i]); st != store.StateInvited {
			t.Fatalf("entry %d state=%s, want invited", i, st)
		}
	}
	if len(codes) != 3 {
		t.Fatalf("codes are not distinct: %v", codeList)
	}
	if got := owCount(t, app, `SELECT count(*) FROM audit_events WHERE event_type = 'invite_issued' AND json_extract(details, '$.batch') = 1`); got != 3 {
		t.Fatalf("batch invite_issued events=%d, want 3", got)
	}
	if got := owAuditCount(t, app) - events; got != 3 {
		t.Fatalf("events added by the bulk issue=%d, want 3", got)
	}

	replay := owner.PostJSON(t, "POST", path, body)
	owWantStatus(t, "replay", replay, http.StatusOK)
	if strings.Contains(replay.Body, `"code"`) {
		t.Fatalf("the replay shows codes: %s", replay.Body)
	}
	for i, id := range invIDs {
		if got := owStr(owPath(owDecode(t, replay.Body), "invitations", i, "id")); got != id {
			t.Fatalf("replay invitation %d=%q, want %q", i, got, id)
		}
	}
	if got := owAuditCount(t, app) - events; got != 3 {
		t.Fatalf("the replay changed history: %d events added, want 3", got)
	}
	logs := app.Logs.String()
	for _, c := range codeList {
		if strings.Contains(logs, c) || strings.Contains(replay.Body, c) {
			t.Fatal("a code is in the logs or the replay")
		}
		digest, _ := store.CodeDigest(c)
		if n := owCount(t, app, `SELECT count(*) FROM invitations WHERE code_digest = ?`, digest); n != 1 {
			t.Fatalf("invitations with the code's digest=%d, want 1", n)
		}
	}

	dpath := "/api/owner/programs/" + app.Demo.ID + "/delivery-records"
	dbody := bulkDeliveryBody(owKey(), "email", "spring-batch", invIDs...)
	rec := owner.PostJSON(t, "POST", dpath, dbody)
	owWantStatus(t, "bulk delivery record", rec, http.StatusOK)
	for i := range invIDs {
		d := owDecode(t, rec.Body)
		if owPath(d, "invitations", i, "deliveryRecordedAt") == nil || owStr(owPath(d, "invitations", i, "deliveryChannel")) != "email" ||
			owStr(owPath(d, "invitations", i, "deliveryReference")) != "spring-batch" {
			t.Fatalf("invitation %d not recorded: %s", i, rec.Body)
		}
	}
	owWantStatus(t, "bulk delivery replay", owner.PostJSON(t, "POST", dpath, dbody), http.StatusOK)
	if got := owCount(t, app, `SELECT count(*) FROM audit_events WHERE event_type = 'delivery_recorded'`); got != 3 {
		t.Fatalf("delivery_recorded events=%d, want 3", got)
	}

	recipient := app.NewClient(t)
	recipient.SignIn(t, emails[1])
	recipient.CSRF(t)
	red := recipient.PostJSON(t, "POST", "/api/me/invitations/redeem", redeemJSONBody(codeList[1]))
	owWantStatus(t, "redeem", red, http.StatusOK)
	if got := owStr(owDecode(t, red.Body)["state"]); got != "active" {
		t.Fatalf("redeemed state=%q, want active", got)
	}
	owWantNoAddressInAudit(t, app)
}

// TestBulkInvitationsAPI_AllOrNothing: a bulk issue refused for want of
// seats names how many are left, one refused for an entry that is not
// selected names that entry, a bulk record refused for one invitation
// names it; none of them changes anything.
func TestBulkInvitationsAPI_AllOrNothing(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	setSeatCap(t, app, app.Demo, 3)
	a := mustInsertEntry(t, app.DB, app.Demo, "aon-a@example.com", store.StateSelected)
	b := mustInsertEntry(t, app.DB, app.Demo, "aon-b@example.com", store.StateSelected)
	c := mustInsertEntry(t, app.DB, app.Demo, "aon-c@example.com", store.StateSelected)
	waiting := mustInsertEntry(t, app.DB, app.Demo, "aon-w@example.com", store.StateWaiting)
	d := mustInsertEntry(t, app.DB, app.Demo, "aon-d@example.com", store.StateSelected)
	taken := owIssue(t, app, app.Demo.ID, a) // one of the three seats
	before := dbFingerprint(t, app.DB)
	path := "/api/owner/programs/" + app.Demo.ID + "/invitations"
	expires := "2026-12-01T10:00:00Z"

	r := owner.PostJSON(t, "POST", path, bulkIssueBody(owKey(), expires, b, c, d))
	owWantStatus(t, "too few seats", r, http.StatusConflict)
	if got, want := strings.TrimSpace(r.Body), `{"error":"conflict","seatsLeft":2}`; got != want {
		t.Fatalf("body=%s, want %s", got, want)
	}
	if !sameRows(before, dbFingerprint(t, app.DB)) {
		t.Fatal("a bulk issue refused for seats changed the database")
	}

	r = owner.PostJSON(t, "POST", path, bulkIssueBody(owKey(), expires, b, waiting))
	owWantStatus(t, "an entry not selected", r, http.StatusConflict)
	if got, want := strings.TrimSpace(r.Body), `{"error":"conflict","entryId":"`+waiting+`"}`; got != want {
		t.Fatalf("body=%s, want %s", got, want)
	}
	if !sameRows(before, dbFingerprint(t, app.DB)) {
		t.Fatal("a refused bulk issue changed the database")
	}

	owWantStatus(t, "duplicate entry", owner.PostJSON(t, "POST", path, bulkIssueBody(owKey(), expires, b, b)), http.StatusBadRequest)
	owWantStatus(t, "no entries", owner.PostJSON(t, "POST", path, `{"requestKey":"`+owKey()+`","entryIds":[],"expiresAt":"`+expires+`"}`), http.StatusBadRequest)

	key := owKey()
	owWantStatus(t, "issue two", owner.PostJSON(t, "POST", path, bulkIssueBody(key, expires, b, c)), http.StatusCreated)
	owWantStatus(t, "same key, other entries", owner.PostJSON(t, "POST", path, bulkIssueBody(key, expires, c, b)), http.StatusConflict)

	// A record for two invitations, one of which already has one: neither
	// is recorded by the bulk request.
	var bInv string
	if err := app.DB.View(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRow(`SELECT id FROM invitations WHERE entry_id = ?`, b).Scan(&bInv)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := app.DB.RecordDelivery(context.Background(), ownerActorOf(app.OwnerID), bInv,
		store.DeliveryRecord{RequestKey: owKey(), Channel: "sms"}); err != nil {
		t.Fatal(err)
	}
	before = dbFingerprint(t, app.DB)
	r = owner.PostJSON(t, "POST", "/api/owner/programs/"+app.Demo.ID+"/delivery-records",
		bulkDeliveryBody(owKey(), "email", "", taken.Invitation.ID, bInv))
	owWantStatus(t, "one already recorded", r, http.StatusConflict)
	if got, want := strings.TrimSpace(r.Body), `{"error":"conflict","invitationId":"`+bInv+`"}`; got != want {
		t.Fatalf("body=%s, want %s", got, want)
	}
	if !sameRows(before, dbFingerprint(t, app.DB)) {
		t.Fatal("a refused bulk record changed the database")
	}

	// Another owner's program: the generic 404, naming nothing.
	other, _, _ := mustForeignOwner(t, app, "bulk-other@example.test")
	r = other.PostJSON(t, "POST", path, bulkIssueBody(owKey(), expires, c))
	owWantStatus(t, "foreign program", r, http.StatusNotFound)
	if strings.Contains(r.Body, c) {
		t.Fatal("the 404 names the entry")
	}
}

// TestBulkInvitationsAPI_ConcurrentIssuesNeverExceedSeats: twelve owners'
// requests of three entries each race for ten seats; exactly three
// requests win (nine seats), the other nine are refused whole with the
// seats left, and exactly nine invitations exist.
func TestBulkInvitationsAPI_ConcurrentIssuesNeverExceedSeats(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	setSeatCap(t, app, app.Demo, 10)
	const requests, per = 12, 3
	groups := make([][]string, requests)
	for g := range groups {
		for i := range per {
			groups[g] = append(groups[g], mustInsertEntry(t, app.DB, app.Demo, fmt.Sprintf("race-%d-%d@example.com", g, i), store.StateSelected))
		}
	}
	path := "/api/owner/programs/" + app.Demo.ID + "/invitations"
	statuses := make([]int, requests)
	bodies := make([]string, requests)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r, err := owner.SendJSON("POST", path, bulkIssueBody(owKey(), "2026-12-01T10:00:00Z", groups[g]...))
			if err != nil {
				t.Errorf("request %d: %v", g, err)
				return
			}
			statuses[g], bodies[g] = r.StatusCode, r.Body
		}()
	}
	close(start)
	wg.Wait()
	var won, refused int
	for g, st := range statuses {
		switch st {
		case http.StatusCreated:
			won++
		case http.StatusConflict:
			refused++
			if !strings.Contains(bodies[g], `"seatsLeft":1`) {
				t.Errorf("refusal %d=%s, want seatsLeft 1", g, bodies[g])
			}
		default:
			t.Errorf("request %d: status %d %s", g, st, bodies[g])
		}
	}
	if won != 3 || refused != 9 {
		t.Fatalf("won=%d refused=%d, want 3 and 9", won, refused)
	}
	if n := owCount(t, app, `SELECT count(*) FROM invitations WHERE program_id = ?`, app.Demo.ID); n != 9 {
		t.Fatalf("invitations=%d, want 9", n)
	}
	if n := owCount(t, app, `SELECT count(*) FROM entries WHERE program_id = ? AND state = 'invited'`, app.Demo.ID); n != 9 {
		t.Fatalf("invited entries=%d, want 9", n)
	}
}
