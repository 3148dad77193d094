package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// rule (docs/API.md#names): a program's name, a workspace's display name
// and its contact link refuse control characters and characters that do
// not show as themselves, through the owner's forms and the JSON API
// alike: 400, nothing stored, and on the page the message names the field
// and the character, linked to the field.
func TestPublicNames_InvisibleCharactersAre400WithTheFieldsError(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	p, err := app.DB.ProgramByID(context.Background(), ownerActorOf(app.OwnerID), app.Demo.ID)
	if err != nil {
		t.Fatal(err)
	}
	ws := p.WorkspaceID
	for _, c := range []struct {
		r    rune
		kind string
	}{
		{0x0000, "a control character"},
		{0x0009, "a control character"},
		{0x202E, "a text-direction control"},
		{0xFEFF, "an invisible character"},
		{0x200B, "an invisible character"},
		{0x200C, "an invisible character"},
		{0x200D, "an invisible character"},
		{0x2060, "an invisible character"},
	} {
		text := "Spring" + string(c.r) + "beta"
		link := "https://acme.example/" + text
		code := fmt.Sprintf("U+%04X", c.r)
		jsonOf := func(v map[string]any) string {
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		for _, tc := range []struct {
			name, method, path string
			form               url.Values // a form's fields, or nil for JSON
			json               string
			anchor, subject    string
		}{
			{name: "create form", method: "POST", path: "/owner/programs", form: url.Values{"workspaceId": {ws}, "slug": {"fresh-list"},
				"name": {text}, "purpose": {"P."}, "queueCap": {"10"}, "hourlyCap": {"5"}, "seatCap": {"3"}, "maxInvitationDays": {"7"}},
				anchor: "#name", subject: "The program name"},
			{name: "settings form", method: "POST", path: "/owner/programs/" + p.ID + "/settings", form: url.Values{
				"expectedRevision": {itoa(int(p.Revision))}, "name": {text}, "queueCap": {itoa(p.QueueCap)},
				"hourlyCap": {itoa(p.HourlyCap)}, "seatCap": {itoa(p.SeatCap)}},
				anchor: "#program-name", subject: "The program name"},
			{name: "workspace form, name", method: "POST", path: "/owner/workspaces/" + ws, form: url.Values{
				"displayName": {text}, "contact": {"privacy@example.com"}},
				anchor: "#displayName", subject: "The workspace name people see"},
			{name: "workspace form, contact", method: "POST", path: "/owner/workspaces/" + ws, form: url.Values{
				"displayName": {"Acme"}, "contact": {link}},
				anchor: "#contact", subject: "The privacy contact"},
			{name: "create JSON", method: "POST", path: "/api/owner/programs", json: jsonOf(map[string]any{"workspaceId": ws,
				"slug": "fresh-list", "name": text, "purpose": "P.", "queueCap": 10, "hourlyCap": 5, "seatCap": 3, "maxInvitationDays": 7})},
			{name: "PATCH program JSON", method: "PATCH", path: "/api/owner/programs/" + p.ID,
				json: jsonOf(map[string]any{"expectedRevision": p.Revision, "name": text})},
			{name: "PATCH workspace JSON, name", method: "PATCH", path: "/api/owner/workspaces/" + ws,
				json: jsonOf(map[string]any{"displayName": text})},
			{name: "PATCH workspace JSON, contact", method: "PATCH", path: "/api/owner/workspaces/" + ws,
				json: jsonOf(map[string]any{"contact": link})},
		} {
			what := tc.name + " with " + code
			before := dbFingerprint(t, app.DB)
			if tc.form == nil {
				r := owner.PostJSON(t, tc.method, tc.path, tc.json)
				owWantStatus(t, what, r, http.StatusBadRequest)
				if body := strings.TrimSpace(r.Body); body != `{"error":"invalid"}` {
					t.Errorf("%s: body %s, want the invalid error", what, body)
				}
			} else {
				r := owner.PostOwnerForm(t, tc.path, tc.form)
				owWantStatus(t, what, r, http.StatusBadRequest)
				msg := tc.subject + " must not contain line breaks, control characters or invisible characters; it contains " +
					c.kind + " (" + code + ")."
				if want := `<a href="` + tc.anchor + `">` + msg + `</a>`; !strings.Contains(r.Body, want) {
					t.Errorf("%s: the page's error summary lacks %s", what, want)
				}
			}
			if !sameRows(before, dbFingerprint(t, app.DB)) {
				t.Errorf("%s: a refused name changed the database", what)
			}
		}
	}
}
