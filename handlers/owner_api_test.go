package handlers

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"admit/store"
)

// ownerScenario is one request of the owner API scenario table. Tokens in
// braces ({demo}, {w1}…) in path, body and expectations are replaced by the
// values the table has collected so far.
type ownerScenario struct {
	name   string
	method string
	path   string
	body   string
	// ctype overrides the content type (default application/json with a body).
	ctype  string
	noCSRF bool
	status int
	has    []string
	hasNot []string
	// audit is how many audit events the request must add.
	audit int
	// before runs first (setup that is not itself under test); after gets
	// the decoded body to collect values.
	before func(t *testing.T, vars map[string]string)
	after  func(t *testing.T, vars map[string]string, body map[string]any)
}

const notFoundJSON = `{"error":"not_found"}`

// TestOwnerAPI_ScenarioTable runs every owner API route through its success
// and each of its errors in one sequence, checking status, body, the number
// of audit events written, that a failed request wrote nothing, and at the
// end that no audit detail holds an address and that the invitation code
// appeared in exactly one response.
func TestOwnerAPI_ScenarioTable(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	demo := app.Demo
	ctx := context.Background()
	ws, err := app.DB.OwnedWorkspaces(ctx, app.OwnerID)
	if err != nil || len(ws) != 1 {
		t.Fatalf("workspaces: %v %d", err, len(ws))
	}
	vars := map[string]string{
		"{demo}": demo.ID, "{ws}": ws[0].ID, "{demoRev}": itoa(int(demo.Revision)),
		"{absent}": "6f1d2c3b-4a59-4e8f-9d7c-1b2a3c4d5e6f",
		"{w1}":     mustInsertEntry(t, app.DB, demo, "w1@example.com", "waiting"),
		"{w2}":     mustInsertEntry(t, app.DB, demo, "w2@example.com", "waiting"),
		"{w3}":     mustInsertEntry(t, app.DB, demo, "w3@example.com", "waiting"),
		"{w4}":     mustInsertEntry(t, app.DB, demo, "w4@example.com", "waiting"),
		"{w5}":     mustInsertEntry(t, app.DB, demo, "w5@example.com", "waiting"),
		"{w6}":     mustInsertEntry(t, app.DB, demo, "w6@example.com", "waiting"),
		"{s1}":     mustInsertEntry(t, app.DB, demo, "s1@example.com", "selected"),
		"{k1}":     owKey(), "{k2}": owKey(), "{k3}": owKey(), "{k4}": owKey(),
		"{week}": "2026-12-06T10:00:00Z", "{week2}": "2026-12-06T11:00:00Z",
	}
	pngType, pngBody := owMultipart(t, "chart.png", [2]string{"csrf", owner.csrf}, [2]string{"file", ownerPNG})
	txtType, txtBody := owMultipart(t, "notes.txt", [2]string{"file", "plain words, not an image"})
	bigType, bigBody := owMultipart(t, "big.png", [2]string{"file", ownerPNG + strings.Repeat("\x00", store.MaxAssetBytes)})
	created := func(key string, path ...any) func(*testing.T, map[string]string, map[string]any) {
		return func(t *testing.T, vars map[string]string, b map[string]any) {
			if vars[key] = owStr(owPath(b, path...)); vars[key] == "" {
				t.Fatalf("no %v in the response", path)
			}
		}
	}

	scenarios := []ownerScenario{
		// Workspaces and programs.
		{name: "list workspaces", method: "GET", path: "/api/owner/workspaces", status: 200, has: []string{`"id":"{ws}"`, `"name":"Demo workspace"`}},
		{name: "create program", method: "POST", path: "/api/owner/programs",
			body:   `{"workspaceId":"{ws}","slug":"beta-list","purpose":"Beta access for early testers.","queueCap":100,"hourlyCap":10,"seatCap":5,"maxInvitationDays":7}`,
			status: 201, audit: 1, after: created("{beta}", "id"),
			has: []string{`"slug":"beta-list"`, `"signupOpen":false`, `"accessEnabled":false`, `"currentNoticeVersion":null`, `"hasContent":false`, `"revision":1`, `"maxInvitationDays":7`, `"createdAt":"2026-11-29T10:00:00Z"`}},
		{name: "create: slug taken", method: "POST", path: "/api/owner/programs", status: 409, has: []string{`{"error":"conflict"}`},
			body: `{"workspaceId":"{ws}","slug":"beta-list","purpose":"Other.","queueCap":100,"hourlyCap":10,"seatCap":5,"maxInvitationDays":7}`},
		{name: "create: bad slug", method: "POST", path: "/api/owner/programs", status: 400, has: []string{`{"error":"invalid"}`},
			body: `{"workspaceId":"{ws}","slug":"No Spaces","purpose":"P.","queueCap":100,"hourlyCap":10,"seatCap":5,"maxInvitationDays":7}`},
		{name: "create: days out of bounds", method: "POST", path: "/api/owner/programs", status: 400,
			body: `{"workspaceId":"{ws}","slug":"days-list","purpose":"P.","queueCap":100,"hourlyCap":10,"seatCap":5,"maxInvitationDays":31}`},
		{name: "create: unknown field", method: "POST", path: "/api/owner/programs", status: 400,
			body: `{"workspaceId":"{ws}","slug":"x-list","purpose":"P.","queueCap":1,"hourlyCap":1,"seatCap":1,"maxInvitationDays":1,"open":true}`},
		{name: "create: foreign workspace", method: "POST", path: "/api/owner/programs", status: 404, has: []string{notFoundJSON},
			body: `{"workspaceId":"{absent}","slug":"y-list","purpose":"P.","queueCap":1,"hourlyCap":1,"seatCap":1,"maxInvitationDays":1}`},
		{name: "create: wrong content type", method: "POST", path: "/api/owner/programs", ctype: "text/plain", status: 415,
			body: `{"workspaceId":"{ws}"}`},
		{name: "create: no CSRF token", method: "POST", path: "/api/owner/programs", noCSRF: true, status: 403,
			body: `{"workspaceId":"{ws}","slug":"z-list","purpose":"P.","queueCap":1,"hourlyCap":1,"seatCap":1,"maxInvitationDays":1}`},
		{name: "list programs", method: "GET", path: "/api/owner/programs", status: 200, has: []string{`"slug":"demo"`, `"slug":"beta-list"`}},
		{name: "get program", method: "GET", path: "/api/owner/programs/{beta}", status: 200, has: []string{`"id":"{beta}"`, `"workspaceId":"{ws}"`}},
		{name: "get program: absent", method: "GET", path: "/api/owner/programs/{absent}", status: 404, has: []string{notFoundJSON}},
		{name: "get program: not a UUID", method: "GET", path: "/api/owner/programs/nope", status: 404, has: []string{notFoundJSON}},
		{name: "patch: seat cap", method: "PATCH", path: "/api/owner/programs/{beta}", body: `{"expectedRevision":1,"seatCap":10}`,
			status: 200, audit: 1, has: []string{`"seatCap":10`, `"revision":2`, `"queueCap":100`}},
		{name: "patch: stale revision", method: "PATCH", path: "/api/owner/programs/{beta}", body: `{"expectedRevision":1,"queueCap":50}`,
			status: 409, has: []string{`{"error":"conflict"}`}},
		{name: "patch: no revision", method: "PATCH", path: "/api/owner/programs/{beta}", body: `{"queueCap":50}`, status: 400},
		{name: "patch: unknown field", method: "PATCH", path: "/api/owner/programs/{beta}", body: `{"expectedRevision":2,"slug":"other"}`, status: 400},
		{name: "patch: duplicated field", method: "PATCH", path: "/api/owner/programs/{beta}", body: `{"expectedRevision":2,"seatCap":3,"seatCap":4}`, status: 400},
		{name: "patch: cap out of bounds", method: "PATCH", path: "/api/owner/programs/{beta}", body: `{"expectedRevision":2,"queueCap":0}`, status: 400},
		{name: "patch: open without a notice", method: "PATCH", path: "/api/owner/programs/{beta}", body: `{"expectedRevision":2,"signupOpen":true}`, status: 409},
		{name: "patch: access without content", method: "PATCH", path: "/api/owner/programs/{beta}", body: `{"expectedRevision":2,"accessEnabled":true}`, status: 409},
		{name: "patch: absent program", method: "PATCH", path: "/api/owner/programs/{absent}", body: `{"expectedRevision":1}`, status: 404, has: []string{notFoundJSON}},

		// Notices and content.
		{name: "notice: purpose mismatch", method: "POST", path: "/api/owner/programs/{beta}/notices", status: 409,
			body: `{"purpose":"Something else entirely.","contactText":"By hand.","retentionText":"Until retired."}`},
		{name: "notice: empty contact", method: "POST", path: "/api/owner/programs/{beta}/notices", status: 400,
			body: `{"purpose":"Beta access for early testers.","contactText":" ","retentionText":"Until retired."}`},
		{name: "notice: absent program", method: "POST", path: "/api/owner/programs/{absent}/notices", status: 404,
			body: `{"purpose":"Beta access for early testers.","contactText":"By hand.","retentionText":"Until retired."}`},
		{name: "notice: publish", method: "POST", path: "/api/owner/programs/{beta}/notices", status: 201, audit: 1,
			body: `{"purpose":"Beta access for early testers.","contactText":"By hand.","retentionText":"Until retired."}`,
			has:  []string{`"version":1`, `"purpose":"Beta access for early testers."`, `"contactText":"By hand."`, `"publishedAt":"2026-11-29T10:00:00Z"`}},
		{name: "patch: open with a notice", method: "PATCH", path: "/api/owner/programs/{beta}", body: `{"expectedRevision":3,"signupOpen":true}`,
			status: 200, audit: 1, has: []string{`"signupOpen":true`, `"currentNoticeVersion":1`, `"revision":4`}},
		{name: "content: none yet", method: "GET", path: "/api/owner/programs/{beta}/content", status: 200, has: []string{`{"body":"","revision":0}`}},
		{name: "content: wrong revision", method: "PUT", path: "/api/owner/programs/{beta}/content", body: `{"expectedRevision":1,"body":"Hello."}`, status: 409},
		{name: "content: no revision", method: "PUT", path: "/api/owner/programs/{beta}/content", body: `{"body":"Hello."}`, status: 400},
		{name: "content: empty body", method: "PUT", path: "/api/owner/programs/{beta}/content", body: `{"expectedRevision":0,"body":""}`, status: 400},
		{name: "content: absent program", method: "PUT", path: "/api/owner/programs/{absent}/content", body: `{"expectedRevision":0,"body":"Hello."}`, status: 404},
		{name: "content: write", method: "PUT", path: "/api/owner/programs/{beta}/content", body: `{"expectedRevision":0,"body":"Hello, testers."}`,
			status: 200, audit: 1, has: []string{`{"revision":1}`}},
		{name: "content: read back", method: "GET", path: "/api/owner/programs/{beta}/content", status: 200, has: []string{`{"body":"Hello, testers.","revision":1}`}},
		{name: "patch: access with content", method: "PATCH", path: "/api/owner/programs/{beta}", body: `{"expectedRevision":4,"accessEnabled":true}`,
			status: 200, audit: 1, has: []string{`"accessEnabled":true`, `"hasContent":true`}},

		// Assets.
		{name: "asset: upload", method: "POST", path: "/api/owner/programs/{beta}/assets", ctype: pngType, body: pngBody, status: 201, audit: 1,
			has: []string{`"name":"chart.png"`, `"contentType":"image/png"`, `"size":72`}},
		{name: "asset: not an image", method: "POST", path: "/api/owner/programs/{beta}/assets", ctype: txtType, body: txtBody, status: 400},
		{name: "asset: too large", method: "POST", path: "/api/owner/programs/{beta}/assets", ctype: bigType, body: bigBody, status: 413},
		{name: "asset: JSON is not an upload", method: "POST", path: "/api/owner/programs/{beta}/assets", body: `{}`, status: 415},
		{name: "asset: absent program", method: "POST", path: "/api/owner/programs/{absent}/assets", ctype: pngType, body: pngBody, status: 404},
		{name: "asset: list", method: "GET", path: "/api/owner/programs/{beta}/assets", status: 200, has: []string{`"name":"chart.png"`}, hasNot: []string{"PNG"}},

		// The queue.
		{name: "queue: all", method: "GET", path: "/api/owner/programs/{demo}/entries", status: 200,
			has: []string{`"id":"{w1}"`, `"email":"w1@example.com"`, `"state":"waiting"`, `"noticeVersion":1`, `"nextCursor":null`}},
		{name: "queue: first page", method: "GET", path: "/api/owner/programs/{demo}/entries?state=waiting&limit=2", status: 200,
			has: []string{`"id":"{w1}"`, `"id":"{w2}"`}, hasNot: []string{`"id":"{w3}"`, `"nextCursor":null`}, after: created("{cursor}", "nextCursor")},
		{name: "queue: next page", method: "GET", path: "/api/owner/programs/{demo}/entries?state=waiting&limit=2&cursor={cursor}", status: 200,
			has: []string{`"id":"{w3}"`, `"id":"{w4}"`}, hasNot: []string{`"id":"{w1}"`, `"id":"{s1}"`}},
		{name: "queue: state filter", method: "GET", path: "/api/owner/programs/{demo}/entries?state=selected", status: 200,
			has: []string{`"id":"{s1}"`}, hasNot: []string{`"id":"{w1}"`}},
		{name: "queue: time filter excludes", method: "GET", path: "/api/owner/programs/{demo}/entries?from=2026-11-29T10:00:01Z", status: 200, has: []string{`"entries":[]`}},
		{name: "queue: time filter includes", method: "GET", path: "/api/owner/programs/{demo}/entries?from=2026-11-29T10:00:00Z&to=2026-11-29T10:00:01Z", status: 200, has: []string{`"id":"{w1}"`}},
		{name: "queue: day filter", method: "GET", path: "/api/owner/programs/{demo}/entries?from=2026-11-29&to=2026-11-29", status: 200, has: []string{`"id":"{w1}"`}},
		{name: "queue: unknown state", method: "GET", path: "/api/owner/programs/{demo}/entries?state=pending", status: 400},
		{name: "queue: limit too large", method: "GET", path: "/api/owner/programs/{demo}/entries?limit=201", status: 400},
		{name: "queue: limit not a number", method: "GET", path: "/api/owner/programs/{demo}/entries?limit=ten", status: 400},
		{name: "queue: bad cursor", method: "GET", path: "/api/owner/programs/{demo}/entries?cursor=not-a-cursor", status: 400},
		{name: "queue: bad time", method: "GET", path: "/api/owner/programs/{demo}/entries?from=yesterday", status: 400},
		{name: "queue: reversed window", method: "GET", path: "/api/owner/programs/{demo}/entries?from=2026-11-30T00:00:00Z&to=2026-11-29T00:00:00Z", status: 400},
		{name: "queue: absent program", method: "GET", path: "/api/owner/programs/{absent}/entries", status: 404, has: []string{notFoundJSON}},

		// One entry.
		{name: "entry: detail", method: "GET", path: "/api/owner/programs/{demo}/entries/{w1}", status: 200,
			has: []string{`"entry":{"id":"{w1}","email":"w1@example.com","state":"waiting"`, `"permissionAt":"2026-11-29T10:00:00Z"`,
				`"notice":{"version":1`, `"invitations":[]`, `"grant":null`, `"events":[{"id":`, `"type":"signup","actorKind":"public"`}},
		{name: "entry: absent", method: "GET", path: "/api/owner/programs/{demo}/entries/{absent}", status: 404, has: []string{notFoundJSON}},
		{name: "entry: of another program", method: "GET", path: "/api/owner/programs/{beta}/entries/{w1}", status: 404, has: []string{notFoundJSON}},
		{name: "select", method: "POST", path: "/api/owner/programs/{demo}/entries/{w1}/select", body: `{"reason":"meets_policy"}`,
			status: 200, audit: 1, has: []string{`"id":"{w1}"`, `"state":"selected"`, `"updatedAt":"2026-11-29T10:00:00Z"`}},
		{name: "select: not waiting", method: "POST", path: "/api/owner/programs/{demo}/entries/{w1}/select", body: `{"reason":"meets_policy"}`, status: 409},
		{name: "select: unknown reason", method: "POST", path: "/api/owner/programs/{demo}/entries/{w2}/select", body: `{"reason":"because"}`, status: 400},
		{name: "select: no reason", method: "POST", path: "/api/owner/programs/{demo}/entries/{w2}/select", body: `{}`, status: 400},
		{name: "select: absent entry", method: "POST", path: "/api/owner/programs/{demo}/entries/{absent}/select", body: `{"reason":"meets_policy"}`, status: 404},
		{name: "select: entry of another program", method: "POST", path: "/api/owner/programs/{beta}/entries/{w2}/select", body: `{"reason":"meets_policy"}`, status: 404},
		{name: "decline", method: "POST", path: "/api/owner/programs/{demo}/entries/{w2}/decline", body: `{"reason":"capacity"}`,
			status: 200, audit: 1, has: []string{`"state":"declined"`}},
		{name: "decline: again", method: "POST", path: "/api/owner/programs/{demo}/entries/{w2}/decline", body: `{"reason":"capacity"}`, status: 409},
		{name: "decline: select reason", method: "POST", path: "/api/owner/programs/{demo}/entries/{w3}/decline", body: `{"reason":"meets_policy"}`, status: 400},
		{name: "withdraw: not the applicant's request", method: "POST", path: "/api/owner/programs/{demo}/entries/{w3}/withdraw", body: `{"reason":"other"}`, status: 400},
		{name: "withdraw", method: "POST", path: "/api/owner/programs/{demo}/entries/{w3}/withdraw", body: `{"reason":"applicant_request"}`,
			status: 200, audit: 1, has: []string{`"state":"withdrawn"`}},
		{name: "withdraw: repeated gives the same answer", method: "POST", path: "/api/owner/programs/{demo}/entries/{w3}/withdraw", body: `{"reason":"applicant_request"}`,
			status: 200, has: []string{`"state":"withdrawn"`}},
		{name: "bulk select", method: "POST", path: "/api/owner/programs/{demo}/entries/select", body: `{"entryIds":["{w4}","{w5}"],"reason":"priority_cohort"}`,
			status: 200, audit: 2, has: []string{`"id":"{w4}"`, `"id":"{w5}"`, `"state":"selected"`}, hasNot: []string{`"state":"waiting"`}},
		{name: "bulk select: one not waiting selects none", method: "POST", path: "/api/owner/programs/{demo}/entries/select", body: `{"entryIds":["{w6}","{w1}"],"reason":"priority_cohort"}`, status: 409},
		{name: "bulk select: nothing chosen", method: "POST", path: "/api/owner/programs/{demo}/entries/select", body: `{"entryIds":[],"reason":"priority_cohort"}`, status: 400},
		{name: "bulk select: no reason", method: "POST", path: "/api/owner/programs/{demo}/entries/select", body: `{"entryIds":["{w6}"]}`, status: 400},
		{name: "bulk select: absent program", method: "POST", path: "/api/owner/programs/{absent}/entries/select", body: `{"entryIds":["{w6}"],"reason":"meets_policy"}`, status: 404},
		{name: "entry: still waiting after the failed bulk", method: "GET", path: "/api/owner/programs/{demo}/entries/{w6}", status: 200, has: []string{`"state":"waiting"`}},

		// Invitations.
		{name: "issue", method: "POST", path: "/api/owner/programs/{demo}/entries/{s1}/invitations", body: `{"requestKey":"{k1}","expiresAt":"{week}"}`,
			status: 201, audit: 1, after: func(t *testing.T, vars map[string]string, b map[string]any) {
				created("{inv1}", "invitation", "id")(t, vars, b)
				created("{code}", "code")(t, vars, b)
			},
			has: []string{`"entryId":"{s1}"`, `"state":"issued"`, `"issuedAt":"2026-11-29T10:00:00Z"`, `"expiresAt":"{week}"`, `"deliveryRecordedAt":null`, `"deliveryChannel":null`, `"code":"`}},
		{name: "issue: same-key replay has no code", method: "POST", path: "/api/owner/programs/{demo}/entries/{s1}/invitations", body: `{"requestKey":"{k1}","expiresAt":"{week}"}`,
			status: 200, has: []string{`"id":"{inv1}"`, `"state":"issued"`}, hasNot: []string{`"code"`, "{code}"}},
		{name: "issue: same key, other expiry", method: "POST", path: "/api/owner/programs/{demo}/entries/{s1}/invitations", body: `{"requestKey":"{k1}","expiresAt":"{week2}"}`, status: 409},
		{name: "issue: live invitation exists", method: "POST", path: "/api/owner/programs/{demo}/entries/{s1}/invitations", body: `{"requestKey":"{k2}","expiresAt":"{week}"}`, status: 409},
		{name: "issue: entry waiting", method: "POST", path: "/api/owner/programs/{demo}/entries/{w6}/invitations", body: `{"requestKey":"{k2}","expiresAt":"{week}"}`, status: 409},
		{name: "issue: beyond the maximum days", method: "POST", path: "/api/owner/programs/{demo}/entries/{w4}/invitations", body: `{"requestKey":"{k2}","expiresAt":"2026-12-14T10:00:01Z"}`, status: 400},
		{name: "issue: in the past", method: "POST", path: "/api/owner/programs/{demo}/entries/{w4}/invitations", body: `{"requestKey":"{k2}","expiresAt":"2026-11-29T09:00:00Z"}`, status: 400},
		{name: "issue: malformed expiry", method: "POST", path: "/api/owner/programs/{demo}/entries/{w4}/invitations", body: `{"requestKey":"{k2}","expiresAt":"next week"}`, status: 400},
		{name: "issue: key not a UUID", method: "POST", path: "/api/owner/programs/{demo}/entries/{w4}/invitations", body: `{"requestKey":"abc","expiresAt":"{week}"}`, status: 400},
		{name: "issue: absent entry", method: "POST", path: "/api/owner/programs/{demo}/entries/{absent}/invitations", body: `{"requestKey":"{k2}","expiresAt":"{week}"}`, status: 404},
		{name: "delivery: record", method: "POST", path: "/api/owner/invitations/{inv1}/delivery-record", body: `{"requestKey":"{k3}","channel":"email","reference":"ticket 7"}`,
			status: 200, audit: 1, has: []string{`"id":"{inv1}"`, `"deliveryRecordedAt":"2026-11-29T10:00:00Z"`, `"deliveryChannel":"email"`, `"deliveryReference":"ticket 7"`}},
		{name: "delivery: same-key replay", method: "POST", path: "/api/owner/invitations/{inv1}/delivery-record", body: `{"requestKey":"{k3}","channel":"email","reference":"ticket 7"}`,
			status: 200, has: []string{`"deliveryChannel":"email"`}},
		{name: "delivery: same key, other channel", method: "POST", path: "/api/owner/invitations/{inv1}/delivery-record", body: `{"requestKey":"{k3}","channel":"sms"}`, status: 409},
		{name: "delivery: already recorded", method: "POST", path: "/api/owner/invitations/{inv1}/delivery-record", body: `{"requestKey":"{k4}","channel":"sms"}`, status: 409},
		{name: "delivery: no channel", method: "POST", path: "/api/owner/invitations/{inv1}/delivery-record", body: `{"requestKey":"{k4}","channel":""}`, status: 400},
		{name: "delivery: absent invitation", method: "POST", path: "/api/owner/invitations/{absent}/delivery-record", body: `{"requestKey":"{k4}","channel":"email"}`, status: 404, has: []string{notFoundJSON}},
		{name: "issue: a second seat", method: "POST", path: "/api/owner/programs/{demo}/entries/{w1}/invitations", body: `{"requestKey":"{k4}","expiresAt":"{week}"}`,
			status: 201, audit: 1, after: created("{inv2}", "invitation", "id")},
		{name: "patch: seat cap below the seats in use", method: "PATCH", path: "/api/owner/programs/{demo}", body: `{"expectedRevision":{demoRev},"seatCap":1}`, status: 409},
		{name: "patch: seat cap at the seats in use", method: "PATCH", path: "/api/owner/programs/{demo}", body: `{"expectedRevision":{demoRev},"seatCap":2}`,
			status: 200, audit: 1, has: []string{`"seatCap":2`}},
		{name: "issue: no free seat", method: "POST", path: "/api/owner/programs/{demo}/entries/{w4}/invitations", body: `{"requestKey":"` + owKey() + `","expiresAt":"{week}"}`, status: 409},
		{name: "revoke invitation: unknown field", method: "POST", path: "/api/owner/invitations/{inv2}/revoke", body: `{"why":"x"}`, status: 400},
		{name: "revoke invitation", method: "POST", path: "/api/owner/invitations/{inv2}/revoke", body: `{}`,
			status: 200, audit: 1, has: []string{`"id":"{inv2}"`, `"state":"revoked"`}},
		{name: "revoke invitation: again", method: "POST", path: "/api/owner/invitations/{inv2}/revoke", body: `{}`, status: 409},
		{name: "revoke invitation: absent", method: "POST", path: "/api/owner/invitations/{absent}/revoke", body: `{}`, status: 404, has: []string{notFoundJSON}},
		{name: "entry: selected again after revoke", method: "GET", path: "/api/owner/programs/{demo}/entries/{w1}", status: 200,
			has: []string{`"state":"selected"`, `"state":"revoked"`, `"type":"invite_revoked"`, `"actorKind":"owner"`}},
		{name: "revoke grant", method: "POST", path: "/api/owner/grants/{grant}/revoke", body: `{}`,
			before: func(t *testing.T, vars map[string]string) {
				red, err := app.DB.Redeem(ctx, "user_s1", []string{"s1@example.com"}, vars["{code}"])
				if err != nil {
					t.Fatalf("redeem: %v", err)
				}
				vars["{grant}"] = red.GrantID
			},
			status: 200, audit: 1, has: []string{`{"id":"{grant}","active":false,"revokedAt":"2026-11-29T10:00:00Z"}`}},
		{name: "revoke grant: again", method: "POST", path: "/api/owner/grants/{grant}/revoke", body: `{}`, status: 409},
		{name: "revoke grant: absent", method: "POST", path: "/api/owner/grants/{absent}/revoke", body: `{}`, status: 404, has: []string{notFoundJSON}},
		{name: "entry: grant revoked", method: "GET", path: "/api/owner/programs/{demo}/entries/{s1}", status: 200,
			has: []string{`"state":"revoked"`, `"grant":{"id":"{grant}","invitationId":"{inv1}","active":false`, `"type":"redeemed"`}, hasNot: []string{"user_s1", "{code}"}},

		// Audit log and export.
		{name: "events", method: "GET", path: "/api/owner/programs/{demo}/events", status: 200,
			has: []string{`"type":"grant_revoked"`, `"actorKind":"owner"`, `"details":{"grantId":"{grant}"}`, `"nextCursor":null`}, hasNot: []string{"@", "user_"}},
		{name: "events: first page", method: "GET", path: "/api/owner/programs/{demo}/events?limit=1", status: 200,
			has: []string{`"type":"grant_revoked"`}, hasNot: []string{`"nextCursor":null`}, after: created("{ecursor}", "nextCursor")},
		{name: "events: older page", method: "GET", path: "/api/owner/programs/{demo}/events?limit=1&cursor={ecursor}", status: 200,
			has: []string{`"type":"redeemed"`}, hasNot: []string{`"type":"grant_revoked"`}},
		{name: "events: bad cursor", method: "GET", path: "/api/owner/programs/{demo}/events?cursor=abc", status: 400},
		{name: "events: bad limit", method: "GET", path: "/api/owner/programs/{demo}/events?limit=500", status: 400},
		{name: "events: absent program", method: "GET", path: "/api/owner/programs/{absent}/events", status: 404, has: []string{notFoundJSON}},
		{name: "export", method: "GET", path: "/api/owner/programs/{demo}/export.csv", status: 200, audit: 1,
			has: []string{"id,email,state,created_at,updated_at,notice_version,permission_at\n", "{w1},w1@example.com,selected,2026-11-29T10:00:00Z"}},
		{name: "export: absent program", method: "GET", path: "/api/owner/programs/{absent}/export.csv", status: 404, has: []string{notFoundJSON}},
	}

	var bodies []string
	for _, sc := range scenarios {
		if sc.before != nil {
			sc.before(t, vars)
		}
		pairs := make([]string, 0, 2*len(vars))
		for k, v := range vars {
			pairs = append(pairs, k, v)
		}
		rep := strings.NewReplacer(pairs...)
		path, body := rep.Replace(sc.path), sc.body
		ctype := sc.ctype
		if ctype == "" && body != "" {
			ctype = "application/json"
		}
		if !strings.HasPrefix(ctype, "multipart/") {
			body = rep.Replace(body)
		}
		var headers []string
		if !sc.noCSRF {
			headers = []string{"X-CSRF-Token", owner.csrf}
		}
		countsBefore, auditBefore := dbFingerprint(t, app.DB), owAuditCount(t, app)
		resp := owner.Do(t, sc.method, path, ctype, strings.NewReader(body), headers...)
		bodies = append(bodies, resp.Body)
		if resp.StatusCode != sc.status {
			t.Fatalf("%s: %s %s: status %d, want %d; body %s", sc.name, sc.method, path, resp.StatusCode, sc.status, resp.Body)
		}
		for _, want := range sc.has {
			if want = rep.Replace(want); !strings.Contains(resp.Body, want) {
				t.Fatalf("%s: body lacks %q: %s", sc.name, want, resp.Body)
			}
		}
		for _, bad := range sc.hasNot {
			if bad = rep.Replace(bad); strings.Contains(resp.Body, bad) {
				t.Fatalf("%s: body holds %q: %s", sc.name, bad, resp.Body)
			}
		}
		if got, want := owAuditCount(t, app)-auditBefore, sc.audit; got != want {
			t.Fatalf("%s: audit events added=%d, want %d", sc.name, got, want)
		}
		if sc.status >= 400 && !reflect.DeepEqual(countsBefore, dbFingerprint(t, app.DB)) {
			t.Fatalf("%s: a refused request changed the database", sc.name)
		}
		if got := resp.Header.Get("Cache-Control"); got != "private, no-store" {
			t.Fatalf("%s: Cache-Control=%q, want private, no-store", sc.name, got)
		}
		if sc.after != nil && resp.StatusCode < 300 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			sc.after(t, vars, owDecode(t, resp.Body))
		}
	}

	owWantNoAddressInAudit(t, app)
	code := vars["{code}"]
	if len(code) != store.CodeLength {
		t.Fatalf("code %q is not %d characters", code, store.CodeLength)
	}
	shown := 0
	for _, b := range bodies {
		if strings.Contains(b, code) {
			shown++
		}
	}
	if shown != 1 {
		t.Fatalf("the invitation code appeared in %d responses, want exactly 1", shown)
	}
	if strings.Contains(app.Logs.String(), code) {
		t.Fatal("a log line holds the invitation code")
	}
}

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
	r := owner.PostJSON(t, "POST", "/api/owner/programs", `{"workspaceId":"`+ws+`","slug":"policy-list","purpose":"Policy checks.","queueCap":10,"hourlyCap":10,"seatCap":2,"maxInvitationDays":3}`)
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
	r = owner.PostJSON(t, "POST", "/api/owner/programs", `{"workspaceId":"`+ws+`","slug":"no-notice","purpose":"No notice yet.","queueCap":10,"hourlyCap":10,"seatCap":2,"maxInvitationDays":3}`)
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
	// The page says why and what to do instead, keeping the typed texts.
	page := owner.postOwnerForm(t, "/owner/programs/"+app.Demo.ID+"/notices", map[string][]string{
		"purpose": {"A different purpose."}, "contactText": {"Typed contact."}, "retentionText": {"Typed retention."}})
	owWantStatus(t, "form with mismatched purpose", page, http.StatusConflict)
	for _, want := range []string{"create a new program", "A different purpose.", "Typed contact.", "Typed retention."} {
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
	if n := owCount(t, app, `SELECT count(*) FROM invitations WHERE token_sha256 = ?`, digest); n != 1 {
		t.Fatalf("invitations stored with the code's digest=%d, want 1", n)
	}
}
