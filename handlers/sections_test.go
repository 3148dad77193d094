package handlers

import (
	"net/http"
	"strings"
	"testing"

	"admit/store"
)

// TestInvitationsSection_ListsStatesAndRecordsSeveralSends: the
// Invitations section lists every invitation with its state, offers a
// choice only for live ones with no recorded send, and records the send of
// several at once (a refusal shows the section again with the reason).
func TestInvitationsSection_ListsStatesAndRecordsSeveralSends(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	var invs []string
	for _, e := range []string{"one@example.com", "two@example.com", "three@example.com"} {
		invs = append(invs, owIssue(t, app, app.Demo.ID, mustInsertEntry(t, app.DB, app.Demo, e, store.StateSelected)).Invitation.ID)
	}
	if _, err := app.DB.RevokeInvitation(t.Context(), ownerActorOf(app.OwnerID), invs[2]); err != nil {
		t.Fatal(err)
	}
	path := "/owner/programs/" + app.Demo.ID + "/invitations"
	page := owner.Get(t, path)
	owWantStatus(t, "invitations", page, http.StatusOK)
	if n := strings.Count(page.Body, `data-testid="invitation-row"`); n != 3 {
		t.Fatalf("rows=%d, want 3", n)
	}
	if n := strings.Count(page.Body, `data-testid="choose-invitation"`); n != 2 {
		t.Fatalf("choosable=%d, want the 2 live ones", n)
	}
	if !strings.Contains(page.Body, `data-state="revoked"`) {
		t.Fatal("the revoked invitation's state is not shown")
	}
	post := func(ids []string) *testResponse {
		return owner.PostOwnerForm(t, "/owner/programs/"+app.Demo.ID+"/delivery-records", map[string][]string{"from": {"invitations"},
			"invitationIds": ids, "requestKey": {owKey()}, "channel": {"chat"}, "reference": {""}})
	}
	r := post(nil)
	owWantStatus(t, "nothing chosen", r, http.StatusBadRequest)
	if !strings.Contains(r.Body, "Choose the invitations") || !strings.Contains(r.Body, `data-testid="invitations"`) {
		t.Fatal("the refusal does not show the section again with the reason")
	}
	r = post(invs[:2])
	owWantStatus(t, "record two", r, http.StatusSeeOther)
	if owLocation(r) != path {
		t.Fatalf("redirect to %q, want %q", owLocation(r), path)
	}
	if n := owCount(t, app, `SELECT count(*) FROM invitations WHERE delivery_channel = 'chat'`); n != 2 {
		t.Fatalf("recorded=%d, want 2", n)
	}
	if page = owner.Get(t, path); strings.Contains(page.Body, `data-testid="choose-invitation"`) {
		t.Fatal("a recorded invitation is still offered")
	}
}
