package handlers

import (
	"fmt"
	"html"
	"net/http"
	"strings"
	"testing"

	"admit/store"
)

func TestInvitationText_NamesTheProgramAndTheWorkspaceNotTheSlug(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	// A name that does not contain the slug, so that either is told apart.
	if r := owner.PostJSON(t, "PATCH", "/api/owner/programs/"+app.Demo.ID,
		fmt.Sprintf(`{"expectedRevision":%d,"name":"Nimbus beta"}`, app.Demo.Revision)); r.StatusCode != http.StatusOK {
		t.Fatalf("rename: status %d", r.StatusCode)
	}
	entryID := dlSelectedEntry(t, app, "reader@example.com")
	entry := "/owner/programs/" + app.Demo.ID + "/entries/" + entryID

	r := owner.PostOwnerForm(t, entry+"/invitations", map[string][]string{
		"requestKey": {owKey()}, "expiresOn": {"2026-12-01"}, "time": {"10:00"}})
	if got, want := r.StatusCode, http.StatusSeeOther; got != want {
		t.Fatalf("issue: status %d, want %d: %s", got, want, r.Body)
	}
	page := owner.Get(t, r.Header.Get("Location"))
	body := html.UnescapeString(page.Body)
	if want := "admit demo team invites you to the early access of Nimbus beta."; !strings.Contains(body, want) {
		t.Errorf("the invitation text lacks %q", want)
	}
	if strings.Contains(body, "invited to "+store.DemoSlug) {
		t.Errorf("the invitation text names the program by its slug")
	}

	// Every page title names the program, never its address.
	for _, path := range []string{
		r.Header.Get("Location"),
		entry,
		"/owner/programs/" + app.Demo.ID + "/entries",
		entry + "/withdraw",
	} {
		body := html.UnescapeString(owner.Get(t, path).Body)
		start, end := strings.Index(body, "<title>"), strings.Index(body, "</title>")
		if start < 0 || end < start {
			t.Fatalf("%s has no title", path)
		}
		title := body[start:end]
		if !strings.Contains(title, "Nimbus beta") || strings.Contains(title, store.DemoSlug) {
			t.Errorf("%s is titled %q: want the program's name, not its slug", path, title)
		}
	}
}
