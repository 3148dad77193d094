package handlers

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"admit/internal/clerkfake"
	"admit/store"
)

// TestHistoryAPI_TwoOwnersSelectionsCarryTheirMembershipIDs: two owners of
// one workspace each select an entry; the history JSON names each
// selection's actor by that owner's membership ID — two different IDs —
// and holds neither owner's identity-provider user ID. The history page
// names them from the team and, once one is removed, as a former owner.
func TestHistoryAPI_TwoOwnersSelectionsCarryTheirMembershipIDs(t *testing.T) {
	app := MustStartApp(t)
	first := mustOwnerClient(t, app)
	second := app.NewClient(t)
	secondUser := second.SignIn(t, "second-owner@example.test")
	if _, err := app.DB.AddOwner(context.Background(), store.Actor{Kind: store.ActorCLI}, store.DemoWorkspace, secondUser); err != nil {
		t.Fatal(err)
	}
	second.CSRF(t)
	a := mustInsertEntry(t, app.DB, app.Demo, "actor-a@example.com", store.StateWaiting)
	b := mustInsertEntry(t, app.DB, app.Demo, "actor-b@example.com", store.StateWaiting)
	base := "/api/owner/programs/" + app.Demo.ID
	owWantStatus(t, "first selects", first.PostJSON(t, "POST", base+"/entries/"+a+"/select", `{"reason":"meets_policy"}`), http.StatusOK)
	owWantStatus(t, "second selects", second.PostJSON(t, "POST", base+"/entries/"+b+"/select", `{"reason":"meets_policy"}`), http.StatusOK)

	page := first.Get(t, base+"/events")
	owWantStatus(t, "events", page, http.StatusOK)
	for _, userID := range []string{app.OwnerID, secondUser} {
		if strings.Contains(page.Body, userID) {
			t.Fatalf("history JSON holds an identity provider user ID: %s", page.Body)
		}
	}
	actorOf := map[string]string{}
	events, _ := owDecode(t, page.Body)["events"].([]any)
	for _, ev := range events {
		if owStr(owPath(ev, "type")) == "selected" {
			actorOf[owStr(owPath(ev, "entryId"))] = owStr(owPath(ev, "actorId"))
		}
		if owStr(owPath(ev, "actorKind")) != "owner" && owPath(ev, "actorId") != nil {
			t.Fatalf("a %s event carries an actorId", owStr(owPath(ev, "actorKind")))
		}
	}
	wantA, wantB := staffIDOf(t, app, app.OwnerID), staffIDOf(t, app, secondUser)
	if actorOf[a] != wantA || actorOf[b] != wantB || wantA == wantB {
		t.Fatalf("actors a=%q b=%q, want %q and %q (different)", actorOf[a], actorOf[b], wantA, wantB)
	}
	detail := first.Get(t, base+"/entries/"+b)
	if !strings.Contains(detail.Body, `"actorId":"`+wantB+`"`) || strings.Contains(detail.Body, secondUser) {
		t.Fatalf("entry detail events: %s", detail.Body)
	}

	html := first.Get(t, "/owner/programs/"+app.Demo.ID+"/events")
	owWantStatus(t, "history page", html, http.StatusOK)
	if !strings.Contains(html.Body, "Owner "+wantB[len(wantB)-4:]) {
		t.Fatalf("history page does not name the second owner from the team")
	}
	if err := app.DB.RemoveOwner(context.Background(), store.Actor{Kind: store.ActorCLI}, store.DemoWorkspace, secondUser); err != nil {
		t.Fatal(err)
	}
	html = first.Get(t, "/owner/programs/"+app.Demo.ID+"/events")
	if !strings.Contains(html.Body, "Owner "+wantB[len(wantB)-4:]+" (former owner)") {
		t.Fatalf("history page does not call the removed owner a former owner")
	}
	if strings.Contains(html.Body, "Owner "+wantA[len(wantA)-4:]+" (former owner)") {
		t.Fatal("the current owner is called a former owner")
	}
}

// TestOwnerByEmail_FirstVerifiedSignInTakesThePlace: an owner added by
// address (what `admit owner add --email` does) becomes an owner at the
// first sign-in whose address the identity provider says is verified —
// never one where it is unverified — once only, and not after the seven
// days the place waits.
func TestOwnerByEmail_FirstVerifiedSignInTakesThePlace(t *testing.T) {
	app := MustStartApp(t, withClerk())
	ctx := context.Background()
	cli := store.Actor{Kind: store.ActorCLI}
	if _, _, err := app.DB.AddOwnerByEmail(ctx, cli, "New team", "new-owner@example.com", "Ada"); err != nil {
		t.Fatal(err)
	}
	signedIn := func(userID string, email string, verified bool) *testClient {
		app.Clerk.SetUser(userID, clerkfake.Email{Address: email, Verified: verified})
		c := app.NewClient(t)
		c.SetClerkSession(t, userID)
		return c
	}
	staff := func(userID string) int {
		return owCount(t, app, `SELECT count(*) FROM staff_members WHERE user_id = ? AND active = 1`, userID)
	}

	unverified := signedIn("user_unverified", "new-owner@example.com", false)
	owWantStatus(t, "unverified address", unverified.Get(t, "/api/owner/workspaces"), http.StatusNotFound)
	if staff("user_unverified") != 0 {
		t.Fatal("an unverified address took the place")
	}

	verified := signedIn("user_verified", "new-owner@example.com", true)
	r := verified.Get(t, "/api/owner/workspaces")
	owWantStatus(t, "verified address", r, http.StatusOK)
	if !strings.Contains(r.Body, `"New team"`) || staff("user_verified") != 1 {
		t.Fatalf("the verified sign-in is not an owner of New team: %s", r.Body)
	}
	if n := owCount(t, app, `SELECT count(*) FROM staff_members WHERE user_id = 'user_verified' AND name = 'Ada' AND email = 'new-owner@example.com'`); n != 1 {
		t.Fatal("the new owner's membership lacks the name and address they were added by")
	}
	owWantStatus(t, "unverified, after the place was taken", unverified.Get(t, "/api/owner/workspaces"), http.StatusNotFound)
	again := signedIn("user_second_verified", "new-owner@example.com", true)
	owWantStatus(t, "a second verified account", again.Get(t, "/api/owner/workspaces"), http.StatusNotFound)
	if n := owCount(t, app, `SELECT count(*) FROM workspace_events WHERE event_type = 'owner_added' AND subject_user_id = 'user_verified'`); n != 1 {
		t.Fatalf("owner_added events for the new owner=%d, want 1", n)
	}

	if _, _, err := app.DB.AddOwnerByEmail(ctx, cli, "Late team", "late@example.com", ""); err != nil {
		t.Fatal(err)
	}
	app.Clock.Add(store.OwnerInviteLifetime)
	late := signedIn("user_late", "late@example.com", true)
	owWantStatus(t, "after seven days", late.Get(t, "/api/owner/workspaces"), http.StatusNotFound)
	if staff("user_late") != 0 {
		t.Fatal("an expired place was taken")
	}
}
