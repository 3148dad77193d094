package handlers

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// ownerRouteCase is one owner route with a request that would succeed for
// the demo owner: valid body, real IDs. pattern is the route as registered.
type ownerRouteCase struct {
	pattern string
	method  string
	path    string
	ctype   string
	body    string
}

// ownerFixture is the demo program with an entry of every kind an owner
// route acts on.
type ownerFixture struct {
	program, workspace         string
	waiting, selected          string
	invited, invitation        string
	active, grant, grantInvite string
	recipientEmail             string
	recipientID                string
	// member is the demo owner's membership ID.
	member string
}

// mustOwnerFixture fills the demo program: a waiting and a selected entry,
// an invited one with a live invitation, and an active one whose grant
// belongs to recipientID.
func mustOwnerFixture(tb testing.TB, app *testApp, recipientEmail, recipientID string) ownerFixture {
	tb.Helper()
	f := ownerFixture{program: app.Demo.ID, workspace: app.Demo.WorkspaceID, recipientEmail: recipientEmail, recipientID: recipientID}
	f.waiting = mustInsertEntry(tb, app.DB, app.Demo, "waiting@example.com", "waiting")
	f.selected = mustInsertEntry(tb, app.DB, app.Demo, "selected@example.com", "selected")
	f.invited = mustInsertEntry(tb, app.DB, app.Demo, "invited@example.com", "selected")
	f.invitation = owIssue(tb, app, f.program, f.invited).Invitation.ID
	f.active = mustInsertEntry(tb, app.DB, app.Demo, recipientEmail, "selected")
	f.grantInvite, f.grant = owGrant(tb, app, f.program, f.active, recipientEmail, recipientID)
	f.member = staffIDOf(tb, app, app.OwnerID)
	return f
}

// ownerRouteCases lists every owner route with a request valid for the owner.
func ownerRouteCases(tb testing.TB, f ownerFixture, csrf string) []ownerRouteCase {
	tb.Helper()
	p := "/owner/programs/" + f.program
	ap := "/api/owner/programs/" + f.program
	form := func(kv ...string) string {
		v := url.Values{"csrf": {csrf}}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Add(kv[i], kv[i+1])
		}
		return v.Encode()
	}
	const fct = "application/x-www-form-urlencoded"
	const jct = "application/json"
	mpType, mpBody := owMultipart(tb, "logo.png", [2]string{"csrf", csrf}, [2]string{"file", ownerPNG})
	program := `{"workspaceId":"` + f.workspace + `","slug":"foreign-try","name":"Program foreign-try","purpose":"P.","queueCap":1,"hourlyCap":1,"seatCap":1,"maxInvitationDays":1}`
	return []ownerRouteCase{
		{"GET /owner", "GET", "/owner", "", ""},
		{"GET /api/owner/workspaces", "GET", "/api/owner/workspaces", "", ""},
		{"PATCH /api/owner/workspaces/{id}", "PATCH", "/api/owner/workspaces/" + f.workspace, jct, `{"displayName":"Renamed"}`},
		{"GET /owner/workspaces/{id}", "GET", "/owner/workspaces/" + f.workspace, "", ""},
		{"GET /owner/workspaces/{id}/team", "GET", "/owner/workspaces/" + f.workspace + "/team", "", ""},
		{"POST /owner/workspaces/{id}/team", "POST", "/owner/workspaces/" + f.workspace + "/team", fct, form("email", "new-owner@example.com", "name", "")},
		{"GET /owner/workspaces/{id}/team/{memberId}/remove", "GET", "/owner/workspaces/" + f.workspace + "/team/" + f.member + "/remove", "", ""},
		{"POST /owner/workspaces/{id}", "POST", "/owner/workspaces/" + f.workspace, fct,
			form("displayName", "Renamed", "contact", "privacy@example.com")},
		{"GET /api/owner/programs/{id}/stats", "GET", "/api/owner/programs/" + f.program + "/stats", "", ""},
		{"GET /api/owner/programs", "GET", "/api/owner/programs", "", ""},
		{"POST /owner/programs", "POST", "/owner/programs", fct, form("workspaceId", f.workspace, "slug", "foreign-try", "name", "Foreign try", "purpose", "P.",
			"queueCap", "1", "hourlyCap", "1", "seatCap", "1", "maxInvitationDays", "1")},
		{"GET /owner/programs/{id}", "GET", p, "", ""},
		{"GET /owner/programs/{id}/settings", "GET", p + "/settings", "", ""},
		{"GET /owner/programs/{id}/content", "GET", p + "/content", "", ""},
		{"GET /owner/programs/{id}/invitations", "GET", p + "/invitations", "", ""},
		{"POST /owner/programs/{id}/settings", "POST", p + "/settings", fct, form("expectedRevision", "3", "signupOpen", "yes",
			"queueCap", "5", "hourlyCap", "5", "seatCap", "5")},
		{"POST /owner/programs/{id}/notices", "POST", p + "/notices", fct, form("purpose", app0Purpose, "contactText", "C.", "retentionText", "R.")},
		{"POST /owner/programs/{id}/content", "POST", p + "/content", fct, form("expectedRevision", "1", "body", "Replaced.")},
		{"POST /owner/programs/{id}/assets", "POST", p + "/assets", mpType, mpBody},
		{"GET /owner/programs/{id}/events", "GET", p + "/events", "", ""},
		{"POST /owner/programs/{id}/events", "POST", p + "/events", fct, form("type", "selected", "entry", "waiting@example.com")},
		{"GET /owner/programs/{id}/export.csv", "GET", p + "/export.csv", "", ""},
		{"GET /owner/programs/{id}/entries", "GET", p + "/entries", "", ""},
		{"POST /owner/programs/{id}/entries/select", "POST", p + "/entries/select", fct, form("entryIds", f.waiting, "reason", "meets_policy")},
		{"GET /owner/programs/{id}/entries/{entryId}", "GET", p + "/entries/" + f.waiting, "", ""},
		{"GET /owner/programs/{id}/retire", "GET", p + "/retire", "", ""},
		{"GET /owner/programs/{id}/entries/{entryId}/decline", "GET", p + "/entries/" + f.waiting + "/decline", "", ""},
		{"GET /owner/programs/{id}/entries/{entryId}/withdraw", "GET", p + "/entries/" + f.waiting + "/withdraw", "", ""},
		{"GET /owner/programs/{id}/entries/{entryId}/invitations/{invitationId}", "GET",
			p + "/entries/" + f.invited + "/invitations/" + f.invitation, "", ""},
		{"GET /owner/programs/{id}/entries/{entryId}/invitations/{invitationId}/revoke", "GET",
			p + "/entries/" + f.invited + "/invitations/" + f.invitation + "/revoke", "", ""},
		{"GET /owner/programs/{id}/entries/{entryId}/grants/{grantId}/revoke", "GET",
			p + "/entries/" + f.active + "/grants/" + f.grant + "/revoke", "", ""},
		{"POST /owner/programs/{id}/entries/{entryId}/select", "POST", p + "/entries/" + f.waiting + "/select", fct, form("reason", "meets_policy")},
		{"POST /owner/programs/{id}/entries/{entryId}/decline", "POST", p + "/entries/" + f.waiting + "/decline", fct, form("reason", "capacity")},
		{"POST /owner/programs/{id}/entries/{entryId}/withdraw", "POST", p + "/entries/" + f.waiting + "/withdraw", fct, form("reason", "applicant_request")},
		{"POST /owner/programs/{id}/entries/decline", "POST", p + "/entries/decline", fct,
			form("entryIds", f.selected, "declineReason", "capacity", "confirmed", "yes")},
		{"POST /owner/programs/{id}/entries/{entryId}/invitations", "POST", p + "/entries/" + f.selected + "/invitations", fct,
			form("requestKey", owKey(), "expiresOn", "2026-12-01", "time", "10:00")},
		{"POST /owner/programs/{id}/entries/{entryId}/invitations/{invitationId}/delivery-record", "POST",
			p + "/entries/" + f.invited + "/invitations/" + f.invitation + "/delivery-record", fct, form("requestKey", owKey(), "channel", "email")},
		{"POST /owner/programs/{id}/entries/{entryId}/invitations/{invitationId}/revoke", "POST",
			p + "/entries/" + f.invited + "/invitations/" + f.invitation + "/revoke", fct, form()},
		{"POST /owner/programs/{id}/entries/{entryId}/grants/{grantId}/revoke", "POST",
			p + "/entries/" + f.active + "/grants/" + f.grant + "/revoke", fct, form()},
		// The demo owner is the workspace's only owner: removing them is 409.
		{"POST /owner/workspaces/{id}/team/{memberId}/remove", "POST", "/owner/workspaces/" + f.workspace + "/team/" + f.member + "/remove", fct, form()},
		{"POST /owner/programs/{id}/invitations", "POST", p + "/invitations", fct,
			form("entryIds", f.selected, "confirmed", "yes", "requestKey", owKey(), "expiresOn", "2026-12-01", "time", "10:00")},
		{"POST /owner/programs/{id}/invitations/sheet", "POST", p + "/invitations/sheet", fct,
			form("invitationIds", f.invitation, "codes", strings.Repeat("A", 43))},
		{"POST /owner/programs/{id}/delivery-records", "POST", p + "/delivery-records", fct,
			form("invitationIds", f.invitation, "requestKey", owKey(), "channel", "email")},
		{"POST /api/owner/programs/{id}/invitations", "POST", ap + "/invitations", jct,
			`{"requestKey":"` + owKey() + `","entryIds":["` + f.selected + `"],"expiresAt":"2026-12-01T10:00:00Z"}`},
		{"POST /api/owner/programs/{id}/delivery-records", "POST", ap + "/delivery-records", jct,
			`{"requestKey":"` + owKey() + `","invitationIds":["` + f.invitation + `"],"channel":"email","reference":""}`},
		{"POST /api/owner/programs", "POST", "/api/owner/programs", jct, program},
		{"GET /api/owner/programs/{id}", "GET", ap, "", ""},
		{"PATCH /api/owner/programs/{id}", "PATCH", ap, jct, `{"expectedRevision":3,"signupOpen":false}`},
		{"POST /api/owner/programs/{id}/notices", "POST", ap + "/notices", jct, `{"purpose":"` + app0Purpose + `","contactText":"C.","retentionText":"R."}`},
		{"GET /api/owner/programs/{id}/content", "GET", ap + "/content", "", ""},
		{"PUT /api/owner/programs/{id}/content", "PUT", ap + "/content", jct, `{"expectedRevision":1,"body":"Replaced."}`},
		{"GET /api/owner/programs/{id}/assets", "GET", ap + "/assets", "", ""},
		{"POST /api/owner/programs/{id}/assets", "POST", ap + "/assets", mpType, mpBody},
		{"GET /api/owner/programs/{id}/events", "GET", ap + "/events", "", ""},
		{"GET /api/owner/programs/{id}/export.csv", "GET", ap + "/export.csv", "", ""},
		{"GET /api/owner/programs/{id}/entries", "GET", ap + "/entries", "", ""},
		{"POST /api/owner/programs/{id}/entries/select", "POST", ap + "/entries/select", jct, `{"entryIds":["` + f.waiting + `"],"reason":"meets_policy"}`},
		{"POST /api/owner/programs/{id}/entries/decline", "POST", ap + "/entries/decline", jct, `{"entryIds":["` + f.selected + `"],"reason":"capacity"}`},
		{"GET /api/owner/programs/{id}/entries/{entryId}", "GET", ap + "/entries/" + f.waiting, "", ""},
		{"POST /api/owner/programs/{id}/entries/{entryId}/select", "POST", ap + "/entries/" + f.waiting + "/select", jct, `{"reason":"meets_policy"}`},
		{"POST /api/owner/programs/{id}/entries/{entryId}/decline", "POST", ap + "/entries/" + f.waiting + "/decline", jct, `{"reason":"capacity"}`},
		{"POST /api/owner/programs/{id}/entries/{entryId}/withdraw", "POST", ap + "/entries/" + f.waiting + "/withdraw", jct, `{"reason":"applicant_request"}`},
		{"POST /api/owner/programs/{id}/entries/{entryId}/invitations", "POST", ap + "/entries/" + f.selected + "/invitations", jct,
			`{"requestKey":"` + owKey() + `","expiresAt":"2026-12-01T10:00:00Z"}`},
		{"POST /api/owner/invitations/{id}/delivery-record", "POST", "/api/owner/invitations/" + f.invitation + "/delivery-record", jct,
			`{"requestKey":"` + owKey() + `","channel":"email"}`},
		{"POST /api/owner/invitations/{id}/revoke", "POST", "/api/owner/invitations/" + f.invitation + "/revoke", jct, `{}`},
		{"POST /api/owner/grants/{id}/revoke", "POST", "/api/owner/grants/" + f.grant + "/revoke", jct, `{}`},
		// Retiring ends the program: these stay last.
		{"POST /owner/programs/{id}/retire", "POST", p + "/retire", fct, form("expectedRevision", "3", "confirm", "demo")},
		{"POST /api/owner/programs/{id}/retire", "POST", ap + "/retire", jct, `{"expectedRevision":3,"confirm":"demo"}`},
	}
}

// app0Purpose is the demo program's purpose (store.SeedDemo).
const app0Purpose = "Early access to the admit demo: we will invite people from this list, in small groups, to try the demo before it is public."

var routePattern = regexp.MustCompile(`mux\.Handle\("([A-Z]+ /(?:api/)?owner[^"]*)"`)

// TestOwnerRouteCases_CoverEveryRegisteredOwnerRoute keeps the access tests
// honest: every owner route registered in the source has a case.
func TestOwnerRouteCases_CoverEveryRegisteredOwnerRoute(t *testing.T) {
	var registered []string
	for _, file := range []string{"routes.go"} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range routePattern.FindAllStringSubmatch(string(src), -1) {
			registered = append(registered, m[1])
		}
	}
	var listed []string
	for _, c := range ownerRouteCases(t, ownerFixture{}, "") {
		listed = append(listed, c.pattern)
	}
	sort.Strings(registered)
	sort.Strings(listed)
	if len(registered) < 40 {
		t.Fatalf("found only %d owner routes in the source: the pattern no longer matches", len(registered))
	}
	if !reflect.DeepEqual(registered, listed) {
		t.Fatalf("owner routes and test cases differ:\nregistered %q\nlisted     %q", registered, listed)
	}
}

// sendRouteCase sends one case as client c.
func sendRouteCase(tb testing.TB, c *testClient, rc ownerRouteCase) *testResponse {
	tb.Helper()
	var headers []string
	if c.CSRFToken != "" && rc.method != "GET" {
		headers = []string{"X-CSRF-Token", c.CSRFToken}
	}
	return c.Do(tb, rc.method, rc.path, rc.ctype, strings.NewReader(rc.body), headers...)
}

// TestOwnerRoutes_SameNotFoundForRecipientNonOwnerAndForeignOwner: on every
// owner route, GET and POST alike, a signed-in person who owns nothing, a
// recipient holding a grant of the program, and the owner of another
// workspace each get the 404 of a path that does not exist — and nothing
// changes.
func TestOwnerRoutes_SameNotFoundForRecipientNonOwnerAndForeignOwner(t *testing.T) {
	app := MustStartApp(t)
	recipient := app.NewClient(t)
	rid := recipient.SignIn(t, "rcpt@example.com")
	recipient.CSRF(t)
	f := mustOwnerFixture(t, app, "rcpt@example.com", rid)
	nobody := app.NewClient(t)
	nobody.SignIn(t, "nobody@example.com")
	nobody.CSRF(t)
	foreign, _, _ := mustForeignOwner(t, app, "other-owner@example.com")

	demoBefore := mustOwnerProgram(t, app, f.program)
	counts, audit := dbFingerprint(t, app.DB), owAuditCount(t, app)
	for _, who := range []struct {
		name  string
		c     *testClient
		owner bool // owns some workspace, so the console itself answers
	}{
		{"non-owner", nobody, false},
		{"recipient", recipient, false},
		{"owner of another workspace", foreign, true},
	} {
		missingAPI := who.c.Get(t, "/api/owner/no-such-route")
		missingHTML := who.c.Get(t, "/owner/no-such-page")
		owWantStatus(t, who.name+" missing API path", missingAPI, http.StatusNotFound)
		owWantStatus(t, who.name+" missing page", missingHTML, http.StatusNotFound)
		for _, rc := range ownerRouteCases(t, f, who.c.CSRFToken) {
			// The console's own listings answer an owner of any workspace;
			// what they list is checked in the next test.
			if who.owner && (rc.pattern == "GET /owner" || rc.pattern == "GET /api/owner/workspaces" || rc.pattern == "GET /api/owner/programs") {
				continue
			}
			r := sendRouteCase(t, who.c, rc)
			what := who.name + " " + rc.pattern
			owWantStatus(t, what, r, http.StatusNotFound)
			if isAPIPath(rc.path) {
				if r.Body != missingAPI.Body {
					t.Fatalf("%s: body %q, want the missing path's %q", what, r.Body, missingAPI.Body)
				}
			} else if got, want := owErrorBlock(t, r.Body), owErrorBlock(t, missingHTML.Body); got != want {
				t.Fatalf("%s: error block\n%s\nwant\n%s", what, got, want)
			}
			if got := r.Header.Get("Cache-Control"); got != "private, no-store" {
				t.Fatalf("%s: Cache-Control=%q", what, got)
			}
		}
	}
	if !reflect.DeepEqual(counts, dbFingerprint(t, app.DB)) || owAuditCount(t, app) != audit {
		t.Fatal("requests refused with 404 changed the database")
	}
	if after := mustOwnerProgram(t, app, f.program); !reflect.DeepEqual(after, demoBefore) {
		t.Fatalf("program changed:\n%+v\n%+v", demoBefore, after)
	}
	// The fixture's requests do succeed for the owner: the 404s above are
	// about who asks, not about the requests.
	owner := mustOwnerClient(t, app)
	for _, rc := range ownerRouteCases(t, f, owner.CSRFToken) {
		if rc.pattern == "POST /owner/programs/{id}/entries/{entryId}/select" {
			break // the cases after this one act on the same entries in turn
		}
		if r := sendRouteCase(t, owner, rc); r.StatusCode >= 400 {
			t.Fatalf("owner %s: status %d: %.300s", rc.pattern, r.StatusCode, r.Body)
		}
	}
}

func isAPIPath(p string) bool { return strings.HasPrefix(p, "/api/") }

// TestOwnerRoutes_AnonymousIsSignedOut: without a session every owner route
// is 401 for the API and a sign-in redirect for pages.
func TestOwnerRoutes_AnonymousIsSignedOut(t *testing.T) {
	app := MustStartApp(t)
	anon := app.NewClient(t)
	f := ownerFixture{program: app.Demo.ID, workspace: app.Demo.WorkspaceID, waiting: owKey(), selected: owKey(),
		invited: owKey(), invitation: owKey(), active: owKey(), grant: owKey(), member: owKey()}
	counts := dbFingerprint(t, app.DB)
	for _, rc := range ownerRouteCases(t, f, "") {
		r := sendRouteCase(t, anon, rc)
		switch {
		case isAPIPath(rc.path):
			owWantStatus(t, "anonymous "+rc.pattern, r, http.StatusUnauthorized)
			if r.Body != "{\"error\":\"unauthorized\"}\n" {
				t.Fatalf("anonymous %s: body %q", rc.pattern, r.Body)
			}
		case rc.method == "GET":
			owWantStatus(t, "anonymous "+rc.pattern, r, http.StatusSeeOther)
			if !strings.HasPrefix(owLocation(r), "/sign-in?redirect_url=") {
				t.Fatalf("anonymous %s: Location %q", rc.pattern, owLocation(r))
			}
		default:
			owWantStatus(t, "anonymous "+rc.pattern, r, http.StatusUnauthorized)
		}
	}
	if !reflect.DeepEqual(counts, dbFingerprint(t, app.DB)) {
		t.Fatal("anonymous requests changed the database")
	}
}

// TestOwnerRoutes_SecondWorkspaceOwnerSeesOnlyTheirOwn: the owner of a
// second workspace lists only their own programs, and the first owner
// cannot see or change theirs either.
func TestOwnerRoutes_SecondWorkspaceOwnerSeesOnlyTheirOwn(t *testing.T) {
	app := MustStartApp(t)
	foreign, w, secondID := mustForeignOwner(t, app, "second@example.com")
	r := foreign.PostJSON(t, "POST", "/api/owner/programs", `{"workspaceId":"`+w.ID+`","slug":"second-list","name":"Program second-list","purpose":"Second.","queueCap":5,"hourlyCap":5,"seatCap":5,"maxInvitationDays":5}`)
	owWantStatus(t, "second owner creates", r, http.StatusCreated)
	second := owStr(owDecode(t, r.Body)["id"])

	list := foreign.Get(t, "/api/owner/programs")
	if !strings.Contains(list.Body, second) || strings.Contains(list.Body, app.Demo.ID) || strings.Contains(list.Body, `"slug":"demo"`) {
		t.Fatalf("second owner's list: %s", list.Body)
	}
	if ws := foreign.Get(t, "/api/owner/workspaces").Body; strings.Contains(ws, app.Demo.WorkspaceID) || !strings.Contains(ws, w.ID) {
		t.Fatalf("second owner's workspaces: %s", ws)
	}
	if home := foreign.Get(t, "/owner").Body; strings.Contains(home, app.Demo.ID) || !strings.Contains(home, second) {
		t.Fatal("the second owner's console lists the first's program or not their own")
	}

	// And the other way round.
	owner := mustOwnerClient(t, app)
	if list := owner.Get(t, "/api/owner/programs").Body; strings.Contains(list, second) {
		t.Fatalf("first owner sees the second's program: %s", list)
	}
	for _, path := range []string{"/api/owner/programs/" + second, "/api/owner/programs/" + second + "/entries", "/owner/programs/" + second} {
		owWantStatus(t, "first owner GET "+path, owner.Get(t, path), http.StatusNotFound)
	}
	r = owner.PostJSON(t, "PATCH", "/api/owner/programs/"+second, `{"expectedRevision":1,"seatCap":1}`)
	owWantStatus(t, "first owner PATCH", r, http.StatusNotFound)
	if p, err := app.DB.ProgramByID(context.Background(), ownerActorOf(secondID), second); err != nil || p.SeatCap != 5 {
		t.Fatalf("second program after a foreign PATCH: %+v %v", p, err)
	}
}
