package handlers

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"admit/store"
)

// TestTeam_AddByAddressRemoveNeverTheLast: the Team page lists the
// workspace's owners; adding one by address makes a place that waits (and
// is audited); removing an owner refuses their next request and is
// audited with the acting owner's membership; the last owner is never
// removed and is offered no Remove button.
func TestTeam_AddByAddressRemoveNeverTheLast(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	second := app.NewClient(t)
	secondUser := second.SignIn(t, "second@example.test")
	if _, err := app.DB.AddOwner(context.Background(), store.Actor{Kind: store.ActorCLI}, store.DemoWorkspace, secondUser); err != nil {
		t.Fatal(err)
	}
	team := "/owner/workspaces/" + app.Demo.WorkspaceID + "/team"
	page := owner.Get(t, team)
	owWantStatus(t, "team page", page, http.StatusOK)
	if got := strings.Count(page.Body, `data-testid="team-member"`); got != 2 {
		t.Fatalf("members listed=%d, want 2", got)
	}
	if got := strings.Count(page.Body, `data-testid="remove-owner"`); got != 2 {
		t.Fatalf("remove buttons=%d, want 2", got)
	}

	r := owner.PostOwnerForm(t, team, map[string][]string{"email": {"not an address"}, "name": {""}})
	owWantStatus(t, "bad address", r, http.StatusBadRequest)
	r = owner.PostOwnerForm(t, team, map[string][]string{"email": {"nia@example.com"}, "name": {"Nia"}})
	owWantStatus(t, "add by address", r, http.StatusSeeOther)
	page = owner.Get(t, team)
	if !strings.Contains(page.Body, `data-testid="team-waiting"`) || !strings.Contains(page.Body, "nia@example.com") {
		t.Fatal("the added address is not listed as waiting")
	}
	if n := owCount(t, app, `SELECT count(*) FROM workspace_events WHERE event_type = 'owner_added' AND json_extract(details, '$.pending') = 1
		AND json_extract(details, '$.by') = ?`, staffIDOf(t, app, app.OwnerID)); n != 1 {
		t.Fatalf("pending owner_added events by the owner=%d, want 1", n)
	}

	secondID := staffIDOf(t, app, secondUser)
	owWantStatus(t, "remove confirmation", owner.Get(t, team+"/"+secondID+"/remove"), http.StatusOK)
	r = owner.PostOwnerForm(t, team+"/"+secondID+"/remove", nil)
	owWantStatus(t, "remove", r, http.StatusSeeOther)
	second.CSRF(t)
	owWantStatus(t, "the removed owner's next request", second.Get(t, "/api/owner/workspaces"), http.StatusNotFound)
	if n := owCount(t, app, `SELECT count(*) FROM workspace_events WHERE event_type = 'owner_removed' AND json_extract(details, '$.memberId') = ?
		AND json_extract(details, '$.by') = ?`, secondID, staffIDOf(t, app, app.OwnerID)); n != 1 {
		t.Fatalf("owner_removed events=%d, want 1", n)
	}
	page = owner.Get(t, team)
	if strings.Contains(page.Body, `data-testid="remove-owner"`) || !strings.Contains(page.Body, "former owner") {
		t.Fatal("the last owner is offered Remove, or the removed owner is not shown as former")
	}
	ownID := staffIDOf(t, app, app.OwnerID)
	r = owner.PostOwnerForm(t, team+"/"+ownID+"/remove", nil)
	owWantStatus(t, "remove the last owner", r, http.StatusConflict)
	if !strings.Contains(r.Body, "at least one owner") {
		t.Fatal("the refusal does not say why")
	}
	owWantStatus(t, "the last owner still owns", owner.Get(t, "/api/owner/workspaces"), http.StatusOK)
}
