package handlers

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"admit/store"
)

// The owner API scenarios: every owner API route through its success and
// each of its errors, one test per resource. Each case starts its own app
// and builds the state it needs with its own fixture, so any case runs
// alone: go test ./handlers -run 'TestOwnerAPI_Invitations/issue:_no_free_seat'.

// ownerScenario is one request of an owner API scenario table. Tokens in
// braces ({demo}, {w1}…) in path, body and expectations are replaced by the
// values the case's fixture collected.
type ownerScenario struct {
	name string
	// fixture builds the state the request runs against (nothing beyond
	// the base fixture when nil).
	fixture func(t *testing.T, f *ownerAPIFixture)
	method  string
	path    string
	body    string
	// upload, when set, makes the body a multipart upload instead.
	upload func(t *testing.T, f *ownerAPIFixture) (ctype, body string)
	// ctype overrides the content type (default application/json with a body).
	ctype  string
	noCSRF bool
	status int
	has    []string
	hasNot []string
	// audit is how many audit events the request must add.
	audit int
	// after gets the decoded body to collect values.
	after func(t *testing.T, vars map[string]string, body map[string]any)
}

const notFoundJSON = `{"error":"not_found"}`

// ownerAPIFixture is one case's app, its signed-in owner and the values
// its request names.
type ownerAPIFixture struct {
	app   *testApp
	owner *testClient
	vars  map[string]string
}

// newOwnerAPIFixture starts an app with the demo program, seven entries on
// it (w1…w6 waiting, s1 selected) and a signed-in owner.
func newOwnerAPIFixture(t *testing.T) *ownerAPIFixture {
	t.Helper()
	app := MustStartApp(t)
	f := &ownerAPIFixture{app: app, owner: mustOwnerClient(t, app)}
	ctx := context.Background()
	ws, err := app.DB.OwnedWorkspaces(ctx, app.OwnerID)
	if err != nil || len(ws) != 1 {
		t.Fatalf("workspaces: %v %d", err, len(ws))
	}
	demo := app.Demo
	f.vars = map[string]string{
		"{demo}": demo.ID, "{ws}": ws[0].ID,
		"{absent}": "6f1d2c3b-4a59-4e8f-9d7c-1b2a3c4d5e6f",
		"{k1}":     owKey(), "{k2}": owKey(), "{k3}": owKey(), "{k4}": owKey(),
		"{week}": "2026-12-06T10:00:00Z", "{week2}": "2026-12-06T11:00:00Z",
	}
	for _, e := range []struct{ name, state string }{{"w1", "waiting"}, {"w2", "waiting"}, {"w3", "waiting"},
		{"w4", "waiting"}, {"w5", "waiting"}, {"w6", "waiting"}, {"s1", "selected"}} {
		f.vars["{"+e.name+"}"] = mustInsertEntry(t, app.DB, demo, e.name+"@example.com", e.state)
	}
	cur, err := app.DB.ProgramByID(ctx, ownerActorOf(app.OwnerID), demo.ID)
	if err != nil {
		t.Fatal(err)
	}
	f.vars["{demoRev}"] = itoa(int(cur.Revision))
	return f
}

// replacer replaces every token the fixture has collected.
func (f *ownerAPIFixture) replacer() *strings.Replacer {
	pairs := make([]string, 0, 2*len(f.vars))
	for k, v := range f.vars {
		pairs = append(pairs, k, v)
	}
	return strings.NewReplacer(pairs...)
}

// do makes a fixture request that must succeed (a step of the setup, not
// the case under test) and returns its decoded JSON body.
func (f *ownerAPIFixture) do(t *testing.T, method, path, body string) map[string]any {
	t.Helper()
	rep := f.replacer()
	ctype := ""
	if body != "" {
		ctype = "application/json"
	}
	resp := f.owner.Do(t, method, rep.Replace(path), ctype, strings.NewReader(rep.Replace(body)), "X-CSRF-Token", f.owner.CSRFToken)
	if resp.StatusCode >= 300 {
		t.Fatalf("fixture %s %s: status %d: %s", method, rep.Replace(path), resp.StatusCode, resp.Body)
	}
	return owDecode(t, resp.Body)
}

// collect stores the string at path in b as vars[key].
func collect(t *testing.T, vars map[string]string, key string, b map[string]any, path ...any) {
	t.Helper()
	if vars[key] = owStr(owPath(b, path...)); vars[key] == "" {
		t.Fatalf("no %v in the response", path)
	}
}

// created is an after hook that collects path as key.
func created(key string, path ...any) func(*testing.T, map[string]string, map[string]any) {
	return func(t *testing.T, vars map[string]string, b map[string]any) { collect(t, vars, key, b, path...) }
}

// The fixtures, each the state one group of cases runs against.

// betaCreated adds the program beta-list ({beta}, revision 1).
func betaCreated(t *testing.T, f *ownerAPIFixture) {
	b := f.do(t, "POST", "/api/owner/programs",
		`{"workspaceId":"{ws}","slug":"beta-list","name":"Program beta-list","purpose":"Beta access for early testers.","queueCap":100,"hourlyCap":10,"seatCap":5,"maxInvitationDays":7}`)
	collect(t, f.vars, "{beta}", b, "id")
}

// betaPatched is betaCreated with its seat cap raised (revision 2).
func betaPatched(t *testing.T, f *ownerAPIFixture) {
	betaCreated(t, f)
	f.do(t, "PATCH", "/api/owner/programs/{beta}", `{"expectedRevision":1,"seatCap":10}`)
}

// betaNoticed is betaPatched with its first notice (revision 3).
func betaNoticed(t *testing.T, f *ownerAPIFixture) {
	betaPatched(t, f)
	f.do(t, "POST", "/api/owner/programs/{beta}/notices",
		`{"purpose":"Beta access for early testers.","contactText":"By hand.","retentionText":"Until retired."}`)
}

// betaOpen is betaNoticed with signup open (revision 4).
func betaOpen(t *testing.T, f *ownerAPIFixture) {
	betaNoticed(t, f)
	f.do(t, "PATCH", "/api/owner/programs/{beta}", `{"expectedRevision":3,"signupOpen":true}`)
}

// betaWithContent is betaOpen with private content (content revision 1).
func betaWithContent(t *testing.T, f *ownerAPIFixture) {
	betaOpen(t, f)
	f.do(t, "PUT", "/api/owner/programs/{beta}/content", `{"expectedRevision":0,"body":"Hello, testers."}`)
}

// betaWithAsset is betaWithContent with access on and chart.png uploaded.
func betaWithAsset(t *testing.T, f *ownerAPIFixture) {
	betaWithContent(t, f)
	f.do(t, "PATCH", "/api/owner/programs/{beta}", `{"expectedRevision":4,"accessEnabled":true}`)
	ctype, body := pngUpload(t, f)
	resp := f.owner.Do(t, "POST", f.replacer().Replace("/api/owner/programs/{beta}/assets"), ctype, strings.NewReader(body),
		"X-CSRF-Token", f.owner.CSRFToken)
	if resp.StatusCode != 201 {
		t.Fatalf("fixture upload: status %d: %s", resp.StatusCode, resp.Body)
	}
}

// selected selects the entries named by keys ({w1}…).
func selected(keys ...string) func(t *testing.T, f *ownerAPIFixture) {
	return func(t *testing.T, f *ownerAPIFixture) {
		for _, k := range keys {
			f.do(t, "POST", "/api/owner/programs/{demo}/entries/"+k+"/select", `{"reason":"meets_policy"}`)
		}
	}
}

// s1Invited issues {inv1} to s1 with key {k1}, expiring at {week}; {code}
// is its code.
func s1Invited(t *testing.T, f *ownerAPIFixture) {
	b := f.do(t, "POST", "/api/owner/programs/{demo}/entries/{s1}/invitations", `{"requestKey":"{k1}","expiresAt":"{week}"}`)
	collect(t, f.vars, "{inv1}", b, "invitation", "id")
	collect(t, f.vars, "{code}", b, "code")
}

// s1Delivered is s1Invited with its delivery recorded under key {k3}.
func s1Delivered(t *testing.T, f *ownerAPIFixture) {
	s1Invited(t, f)
	f.do(t, "POST", "/api/owner/invitations/{inv1}/delivery-record", `{"requestKey":"{k3}","channel":"email","reference":"ticket 7"}`)
}

// twoSeatsUsed is s1 invited and w1 selected and invited ({inv2}).
func twoSeatsUsed(t *testing.T, f *ownerAPIFixture) {
	s1Invited(t, f)
	selected("{w1}")(t, f)
	b := f.do(t, "POST", "/api/owner/programs/{demo}/entries/{w1}/invitations", `{"requestKey":"{k4}","expiresAt":"{week}"}`)
	collect(t, f.vars, "{inv2}", b, "invitation", "id")
}

// inv2Revoked is twoSeatsUsed with w1's invitation revoked.
func inv2Revoked(t *testing.T, f *ownerAPIFixture) {
	twoSeatsUsed(t, f)
	f.do(t, "POST", "/api/owner/invitations/{inv2}/revoke", `{}`)
}

// s1Granted is s1Delivered with the code redeemed: {grant} is the grant.
func s1Granted(t *testing.T, f *ownerAPIFixture) {
	s1Delivered(t, f)
	red, err := f.app.DB.Redeem(context.Background(), "user_s1", []string{"s1@example.com"}, f.vars["{code}"])
	if err != nil {
		t.Fatalf("redeem: %v", err)
	}
	f.vars["{grant}"] = red.GrantID
}

// grantRevoked is s1Granted with the grant revoked.
func grantRevoked(t *testing.T, f *ownerAPIFixture) {
	s1Granted(t, f)
	f.do(t, "POST", "/api/owner/grants/{grant}/revoke", `{}`)
}

// The uploads, each with the fixture's owner's CSRF token where it needs one.

func pngUpload(t *testing.T, f *ownerAPIFixture) (string, string) {
	return owMultipart(t, "chart.png", [2]string{"csrf", f.owner.CSRFToken}, [2]string{"file", ownerPNG})
}

func txtUpload(t *testing.T, f *ownerAPIFixture) (string, string) {
	return owMultipart(t, "notes.txt", [2]string{"file", "plain words, not an image"})
}

func bigUpload(t *testing.T, f *ownerAPIFixture) (string, string) {
	return owMultipart(t, "big.png", [2]string{"file", ownerPNG + strings.Repeat("\x00", store.MaxAssetBytes)})
}

// runOwnerScenarios runs each case as its own subtest on its own fixture,
// checking status, body, the number of audit events written, that a failed
// request wrote nothing, that no audit detail holds an address, and that
// an invitation code is never in a log line nor in any response but the
// one that issued it.
func runOwnerScenarios(t *testing.T, scenarios []ownerScenario) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			f := newOwnerAPIFixture(t)
			if sc.fixture != nil {
				sc.fixture(t, f)
			}
			runOwnerScenario(t, f, sc)
		})
	}
}

func runOwnerScenario(t *testing.T, f *ownerAPIFixture, sc ownerScenario) {
	t.Helper()
	app, rep := f.app, f.replacer()
	path, body, ctype := rep.Replace(sc.path), rep.Replace(sc.body), sc.ctype
	if sc.upload != nil {
		ctype, body = sc.upload(t, f)
	}
	if ctype == "" && body != "" {
		ctype = "application/json"
	}
	var headers []string
	if !sc.noCSRF {
		headers = []string{"X-CSRF-Token", f.owner.CSRFToken}
	}
	codeBefore := f.vars["{code}"]
	countsBefore, auditBefore := dbFingerprint(t, app.DB), owAuditCount(t, app)
	resp := f.owner.Do(t, sc.method, path, ctype, strings.NewReader(body), headers...)
	if resp.StatusCode != sc.status {
		t.Fatalf("%s %s: status %d, want %d; body %s", sc.method, path, resp.StatusCode, sc.status, resp.Body)
	}
	for _, want := range sc.has {
		if want = rep.Replace(want); !strings.Contains(resp.Body, want) {
			t.Fatalf("body lacks %q: %s", want, resp.Body)
		}
	}
	for _, bad := range sc.hasNot {
		if bad = rep.Replace(bad); strings.Contains(resp.Body, bad) {
			t.Fatalf("body holds %q: %s", bad, resp.Body)
		}
	}
	if got, want := owAuditCount(t, app)-auditBefore, sc.audit; got != want {
		t.Fatalf("audit events added=%d, want %d", got, want)
	}
	if sc.status >= 400 && !reflect.DeepEqual(countsBefore, dbFingerprint(t, app.DB)) {
		t.Fatal("a refused request changed the database")
	}
	if got := resp.Header.Get("Cache-Control"); got != "private, no-store" {
		t.Fatalf("Cache-Control=%q, want private, no-store", got)
	}
	if sc.after != nil && resp.StatusCode < 300 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		sc.after(t, f.vars, owDecode(t, resp.Body))
	}
	owWantNoAddressInAudit(t, app)
	if codeBefore != "" && strings.Contains(resp.Body, codeBefore) {
		t.Fatal("the response repeats an invitation code issued before it")
	}
	if code := f.vars["{code}"]; code != "" {
		if len(code) != store.CodeLength {
			t.Fatalf("code %q is not %d characters", code, store.CodeLength)
		}
		if strings.Contains(app.Logs.String(), code) {
			t.Fatal("a log line holds the invitation code")
		}
	}
}

func TestOwnerAPI_Programs(t *testing.T) {
	runOwnerScenarios(t, []ownerScenario{
		{name: "list workspaces", method: "GET", path: "/api/owner/workspaces", status: 200, has: []string{`"id":"{ws}"`, `"name":"Demo workspace"`}},
		{name: "create program", method: "POST", path: "/api/owner/programs",
			body:   `{"workspaceId":"{ws}","slug":"beta-list","name":"Program beta-list","purpose":"Beta access for early testers.","queueCap":100,"hourlyCap":10,"seatCap":5,"maxInvitationDays":7}`,
			status: 201, audit: 1, after: created("{beta}", "id"),
			has: []string{`"slug":"beta-list"`, `"signupOpen":false`, `"accessEnabled":false`, `"currentNoticeVersion":null`, `"hasContent":false`, `"revision":1`, `"maxInvitationDays":7`, `"createdAt":"2026-11-29T10:00:00Z"`}},
		{name: "create: slug taken", fixture: betaCreated, method: "POST", path: "/api/owner/programs", status: 409, has: []string{`{"error":"conflict"}`},
			body: `{"workspaceId":"{ws}","slug":"beta-list","name":"Program beta-list","purpose":"Other.","queueCap":100,"hourlyCap":10,"seatCap":5,"maxInvitationDays":7}`},
		{name: "create: bad slug", method: "POST", path: "/api/owner/programs", status: 400, has: []string{`{"error":"invalid"}`},
			body: `{"workspaceId":"{ws}","slug":"No Spaces","name":"Program No Spaces","purpose":"P.","queueCap":100,"hourlyCap":10,"seatCap":5,"maxInvitationDays":7}`},
		{name: "create: days out of bounds", method: "POST", path: "/api/owner/programs", status: 400,
			body: `{"workspaceId":"{ws}","slug":"days-list","name":"Program days-list","purpose":"P.","queueCap":100,"hourlyCap":10,"seatCap":5,"maxInvitationDays":31}`},
		{name: "create: unknown field", method: "POST", path: "/api/owner/programs", status: 400,
			body: `{"workspaceId":"{ws}","slug":"x-list","name":"Program x-list","purpose":"P.","queueCap":1,"hourlyCap":1,"seatCap":1,"maxInvitationDays":1,"open":true}`},
		{name: "create: foreign workspace", method: "POST", path: "/api/owner/programs", status: 404, has: []string{notFoundJSON},
			body: `{"workspaceId":"{absent}","slug":"y-list","name":"Program y-list","purpose":"P.","queueCap":1,"hourlyCap":1,"seatCap":1,"maxInvitationDays":1}`},
		{name: "create: wrong content type", method: "POST", path: "/api/owner/programs", ctype: "text/plain", status: 415,
			body: `{"workspaceId":"{ws}"}`},
		{name: "create: no CSRF token", method: "POST", path: "/api/owner/programs", noCSRF: true, status: 403,
			body: `{"workspaceId":"{ws}","slug":"z-list","name":"Program z-list","purpose":"P.","queueCap":1,"hourlyCap":1,"seatCap":1,"maxInvitationDays":1}`},
		{name: "list programs", fixture: betaCreated, method: "GET", path: "/api/owner/programs", status: 200, has: []string{`"slug":"demo"`, `"slug":"beta-list"`}},
		{name: "get program", fixture: betaCreated, method: "GET", path: "/api/owner/programs/{beta}", status: 200, has: []string{`"id":"{beta}"`, `"workspaceId":"{ws}"`}},
		{name: "get program: absent", method: "GET", path: "/api/owner/programs/{absent}", status: 404, has: []string{notFoundJSON}},
		{name: "get program: not a UUID", method: "GET", path: "/api/owner/programs/nope", status: 404, has: []string{notFoundJSON}},
		{name: "patch: seat cap", fixture: betaCreated, method: "PATCH", path: "/api/owner/programs/{beta}", body: `{"expectedRevision":1,"seatCap":10}`,
			status: 200, audit: 1, has: []string{`"seatCap":10`, `"revision":2`, `"queueCap":100`}},
		{name: "patch: stale revision", fixture: betaPatched, method: "PATCH", path: "/api/owner/programs/{beta}", body: `{"expectedRevision":1,"queueCap":50}`,
			status: 409, has: []string{`{"error":"conflict"}`}},
		{name: "patch: no revision", fixture: betaPatched, method: "PATCH", path: "/api/owner/programs/{beta}", body: `{"queueCap":50}`, status: 400},
		{name: "patch: unknown field", fixture: betaPatched, method: "PATCH", path: "/api/owner/programs/{beta}", body: `{"expectedRevision":2,"slug":"other"}`, status: 400},
		{name: "patch: duplicated field", fixture: betaPatched, method: "PATCH", path: "/api/owner/programs/{beta}", body: `{"expectedRevision":2,"seatCap":3,"seatCap":4}`, status: 400},
		{name: "patch: cap out of bounds", fixture: betaPatched, method: "PATCH", path: "/api/owner/programs/{beta}", body: `{"expectedRevision":2,"queueCap":0}`, status: 400},
		{name: "patch: open without a notice", fixture: betaPatched, method: "PATCH", path: "/api/owner/programs/{beta}", body: `{"expectedRevision":2,"signupOpen":true}`, status: 409},
		{name: "patch: access without content", fixture: betaPatched, method: "PATCH", path: "/api/owner/programs/{beta}", body: `{"expectedRevision":2,"accessEnabled":true}`, status: 409},
		{name: "patch: absent program", method: "PATCH", path: "/api/owner/programs/{absent}", body: `{"expectedRevision":1}`, status: 404, has: []string{notFoundJSON}},
		{name: "patch: open with a notice", fixture: betaNoticed, method: "PATCH", path: "/api/owner/programs/{beta}", body: `{"expectedRevision":3,"signupOpen":true}`,
			status: 200, audit: 1, has: []string{`"signupOpen":true`, `"currentNoticeVersion":1`, `"revision":4`}},
		{name: "patch: access with content", fixture: betaWithContent, method: "PATCH", path: "/api/owner/programs/{beta}", body: `{"expectedRevision":4,"accessEnabled":true}`,
			status: 200, audit: 1, has: []string{`"accessEnabled":true`, `"hasContent":true`}},
		{name: "patch: seat cap below the seats in use", fixture: twoSeatsUsed, method: "PATCH", path: "/api/owner/programs/{demo}", body: `{"expectedRevision":{demoRev},"seatCap":1}`, status: 409},
		{name: "patch: seat cap at the seats in use", fixture: twoSeatsUsed, method: "PATCH", path: "/api/owner/programs/{demo}", body: `{"expectedRevision":{demoRev},"seatCap":2}`,
			status: 200, audit: 1, has: []string{`"seatCap":2`}},
	})
}

func TestOwnerAPI_Notices(t *testing.T) {
	runOwnerScenarios(t, []ownerScenario{
		{name: "notice: purpose mismatch", fixture: betaPatched, method: "POST", path: "/api/owner/programs/{beta}/notices", status: 409,
			body: `{"purpose":"Something else entirely.","contactText":"By hand.","retentionText":"Until retired."}`},
		{name: "notice: empty contact", fixture: betaPatched, method: "POST", path: "/api/owner/programs/{beta}/notices", status: 400,
			body: `{"purpose":"Beta access for early testers.","contactText":" ","retentionText":"Until retired."}`},
		{name: "notice: absent program", method: "POST", path: "/api/owner/programs/{absent}/notices", status: 404,
			body: `{"purpose":"Beta access for early testers.","contactText":"By hand.","retentionText":"Until retired."}`},
		{name: "notice: publish", fixture: betaPatched, method: "POST", path: "/api/owner/programs/{beta}/notices", status: 201, audit: 1,
			body: `{"purpose":"Beta access for early testers.","contactText":"By hand.","retentionText":"Until retired."}`,
			has:  []string{`"version":1`, `"purpose":"Beta access for early testers."`, `"contactText":"By hand."`, `"publishedAt":"2026-11-29T10:00:00Z"`}},
	})
}

func TestOwnerAPI_Content(t *testing.T) {
	runOwnerScenarios(t, []ownerScenario{
		{name: "content: none yet", fixture: betaOpen, method: "GET", path: "/api/owner/programs/{beta}/content", status: 200, has: []string{`{"body":"","revision":0}`}},
		{name: "content: wrong revision", fixture: betaOpen, method: "PUT", path: "/api/owner/programs/{beta}/content", body: `{"expectedRevision":1,"body":"Hello."}`, status: 409},
		{name: "content: no revision", fixture: betaOpen, method: "PUT", path: "/api/owner/programs/{beta}/content", body: `{"body":"Hello."}`, status: 400},
		{name: "content: empty body", fixture: betaOpen, method: "PUT", path: "/api/owner/programs/{beta}/content", body: `{"expectedRevision":0,"body":""}`, status: 400},
		{name: "content: absent program", method: "PUT", path: "/api/owner/programs/{absent}/content", body: `{"expectedRevision":0,"body":"Hello."}`, status: 404},
		{name: "content: write", fixture: betaOpen, method: "PUT", path: "/api/owner/programs/{beta}/content", body: `{"expectedRevision":0,"body":"Hello, testers."}`,
			status: 200, audit: 1, has: []string{`{"revision":1}`}},
		{name: "content: read back", fixture: betaWithContent, method: "GET", path: "/api/owner/programs/{beta}/content", status: 200, has: []string{`{"body":"Hello, testers.","revision":1}`}},
	})
}

// betaAccess is betaWithContent with access on: the state assets are
// uploaded in.
func betaAccess(t *testing.T, f *ownerAPIFixture) {
	betaWithContent(t, f)
	f.do(t, "PATCH", "/api/owner/programs/{beta}", `{"expectedRevision":4,"accessEnabled":true}`)
}

func TestOwnerAPI_Assets(t *testing.T) {
	runOwnerScenarios(t, []ownerScenario{
		{name: "asset: upload", fixture: betaAccess, method: "POST", path: "/api/owner/programs/{beta}/assets", upload: pngUpload, status: 201, audit: 1,
			has: []string{`"name":"chart.png"`, `"contentType":"image/png"`, `"size":72`}},
		{name: "asset: not an image", fixture: betaAccess, method: "POST", path: "/api/owner/programs/{beta}/assets", upload: txtUpload, status: 400},
		{name: "asset: too large", fixture: betaAccess, method: "POST", path: "/api/owner/programs/{beta}/assets", upload: bigUpload, status: 413},
		{name: "asset: JSON is not an upload", fixture: betaAccess, method: "POST", path: "/api/owner/programs/{beta}/assets", body: `{}`, status: 415},
		{name: "asset: absent program", method: "POST", path: "/api/owner/programs/{absent}/assets", upload: pngUpload, status: 404},
		{name: "asset: list", fixture: betaWithAsset, method: "GET", path: "/api/owner/programs/{beta}/assets", status: 200, has: []string{`"name":"chart.png"`}, hasNot: []string{"PNG"}},
	})
}

// queueFirstPage reads the first page of two waiting entries: {cursor}
// points past it.
func queueFirstPage(t *testing.T, f *ownerAPIFixture) {
	b := f.do(t, "GET", "/api/owner/programs/{demo}/entries?state=waiting&limit=2", "")
	collect(t, f.vars, "{cursor}", b, "nextCursor")
}

func TestOwnerAPI_Queue(t *testing.T) {
	runOwnerScenarios(t, []ownerScenario{
		{name: "queue: all", method: "GET", path: "/api/owner/programs/{demo}/entries", status: 200,
			has: []string{`"id":"{w1}"`, `"email":"w1@example.com"`, `"state":"waiting"`, `"noticeVersion":1`, `"nextCursor":null`}},
		{name: "queue: first page", method: "GET", path: "/api/owner/programs/{demo}/entries?state=waiting&limit=2", status: 200,
			has: []string{`"id":"{w1}"`, `"id":"{w2}"`}, hasNot: []string{`"id":"{w3}"`, `"nextCursor":null`}, after: created("{cursor}", "nextCursor")},
		{name: "queue: next page", fixture: queueFirstPage, method: "GET", path: "/api/owner/programs/{demo}/entries?state=waiting&limit=2&cursor={cursor}", status: 200,
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
	})
}

// w2Declined declines w2.
func w2Declined(t *testing.T, f *ownerAPIFixture) {
	f.do(t, "POST", "/api/owner/programs/{demo}/entries/{w2}/decline", `{"reason":"capacity"}`)
}

// w3Withdrawn withdraws w3 at the applicant's request.
func w3Withdrawn(t *testing.T, f *ownerAPIFixture) {
	f.do(t, "POST", "/api/owner/programs/{demo}/entries/{w3}/withdraw", `{"reason":"applicant_request"}`)
}

// bulkSelectFailed selects w1, then asks to select w6 and w1 together,
// which selects neither.
func bulkSelectFailed(t *testing.T, f *ownerAPIFixture) {
	selected("{w1}")(t, f)
	rep := f.replacer()
	resp := f.owner.Do(t, "POST", rep.Replace("/api/owner/programs/{demo}/entries/select"), "application/json",
		strings.NewReader(rep.Replace(`{"entryIds":["{w6}","{w1}"],"reason":"priority_cohort"}`)), "X-CSRF-Token", f.owner.CSRFToken)
	if resp.StatusCode != 409 {
		t.Fatalf("fixture bulk select: status %d, want 409: %s", resp.StatusCode, resp.Body)
	}
}

func TestOwnerAPI_Entries(t *testing.T) {
	runOwnerScenarios(t, []ownerScenario{
		{name: "entry: detail", method: "GET", path: "/api/owner/programs/{demo}/entries/{w1}", status: 200,
			has: []string{`"entry":{"id":"{w1}","email":"w1@example.com","state":"waiting"`, `"permissionAt":"2026-11-29T10:00:00Z"`,
				`"notice":{"version":1`, `"invitations":[]`, `"grant":null`, `"events":[{"id":`, `"type":"signup","actorKind":"public"`}},
		{name: "entry: absent", method: "GET", path: "/api/owner/programs/{demo}/entries/{absent}", status: 404, has: []string{notFoundJSON}},
		{name: "entry: of another program", fixture: betaCreated, method: "GET", path: "/api/owner/programs/{beta}/entries/{w1}", status: 404, has: []string{notFoundJSON}},
		{name: "select", method: "POST", path: "/api/owner/programs/{demo}/entries/{w1}/select", body: `{"reason":"meets_policy"}`,
			status: 200, audit: 1, has: []string{`"id":"{w1}"`, `"state":"selected"`, `"updatedAt":"2026-11-29T10:00:00Z"`}},
		{name: "select: not waiting", fixture: selected("{w1}"), method: "POST", path: "/api/owner/programs/{demo}/entries/{w1}/select", body: `{"reason":"meets_policy"}`, status: 409},
		{name: "select: unknown reason", method: "POST", path: "/api/owner/programs/{demo}/entries/{w2}/select", body: `{"reason":"because"}`, status: 400},
		{name: "select: no reason", method: "POST", path: "/api/owner/programs/{demo}/entries/{w2}/select", body: `{}`, status: 400},
		{name: "select: absent entry", method: "POST", path: "/api/owner/programs/{demo}/entries/{absent}/select", body: `{"reason":"meets_policy"}`, status: 404},
		{name: "select: entry of another program", fixture: betaCreated, method: "POST", path: "/api/owner/programs/{beta}/entries/{w2}/select", body: `{"reason":"meets_policy"}`, status: 404},
		{name: "decline", method: "POST", path: "/api/owner/programs/{demo}/entries/{w2}/decline", body: `{"reason":"capacity"}`,
			status: 200, audit: 1, has: []string{`"state":"declined"`}},
		{name: "decline: again", fixture: w2Declined, method: "POST", path: "/api/owner/programs/{demo}/entries/{w2}/decline", body: `{"reason":"capacity"}`, status: 409},
		{name: "decline: select reason", method: "POST", path: "/api/owner/programs/{demo}/entries/{w3}/decline", body: `{"reason":"meets_policy"}`, status: 400},
		{name: "withdraw: not the applicant's request", method: "POST", path: "/api/owner/programs/{demo}/entries/{w3}/withdraw", body: `{"reason":"other"}`, status: 400},
		{name: "withdraw", method: "POST", path: "/api/owner/programs/{demo}/entries/{w3}/withdraw", body: `{"reason":"applicant_request"}`,
			status: 200, audit: 1, has: []string{`"state":"withdrawn"`}},
		{name: "withdraw: repeated gives the same answer", fixture: w3Withdrawn, method: "POST", path: "/api/owner/programs/{demo}/entries/{w3}/withdraw", body: `{"reason":"applicant_request"}`,
			status: 200, has: []string{`"state":"withdrawn"`}},
		{name: "bulk select", method: "POST", path: "/api/owner/programs/{demo}/entries/select", body: `{"entryIds":["{w4}","{w5}"],"reason":"priority_cohort"}`,
			status: 200, audit: 2, has: []string{`"id":"{w4}"`, `"id":"{w5}"`, `"state":"selected"`}, hasNot: []string{`"state":"waiting"`}},
		{name: "bulk select: one not waiting selects none", fixture: selected("{w1}"), method: "POST", path: "/api/owner/programs/{demo}/entries/select", body: `{"entryIds":["{w6}","{w1}"],"reason":"priority_cohort"}`, status: 409},
		{name: "bulk select: nothing chosen", method: "POST", path: "/api/owner/programs/{demo}/entries/select", body: `{"entryIds":[],"reason":"priority_cohort"}`, status: 400},
		{name: "bulk select: no reason", method: "POST", path: "/api/owner/programs/{demo}/entries/select", body: `{"entryIds":["{w6}"]}`, status: 400},
		{name: "bulk select: absent program", method: "POST", path: "/api/owner/programs/{absent}/entries/select", body: `{"entryIds":["{w6}"],"reason":"meets_policy"}`, status: 404},
		{name: "entry: still waiting after the failed bulk", fixture: bulkSelectFailed, method: "GET", path: "/api/owner/programs/{demo}/entries/{w6}", status: 200, has: []string{`"state":"waiting"`}},
	})
}

func TestOwnerAPI_Invitations(t *testing.T) {
	w4Selected := selected("{w4}")
	runOwnerScenarios(t, []ownerScenario{
		{name: "issue", method: "POST", path: "/api/owner/programs/{demo}/entries/{s1}/invitations", body: `{"requestKey":"{k1}","expiresAt":"{week}"}`,
			status: 201, audit: 1, after: func(t *testing.T, vars map[string]string, b map[string]any) {
				created("{inv1}", "invitation", "id")(t, vars, b)
				created("{code}", "code")(t, vars, b)
			},
			has: []string{`"entryId":"{s1}"`, `"state":"issued"`, `"issuedAt":"2026-11-29T10:00:00Z"`, `"expiresAt":"{week}"`, `"deliveryRecordedAt":null`, `"deliveryChannel":null`, `"code":"`}},
		{name: "issue: same-key replay has no code", fixture: s1Invited, method: "POST", path: "/api/owner/programs/{demo}/entries/{s1}/invitations", body: `{"requestKey":"{k1}","expiresAt":"{week}"}`,
			status: 200, has: []string{`"id":"{inv1}"`, `"state":"issued"`}, hasNot: []string{`"code"`, "{code}"}},
		{name: "issue: same key, other expiry", fixture: s1Invited, method: "POST", path: "/api/owner/programs/{demo}/entries/{s1}/invitations", body: `{"requestKey":"{k1}","expiresAt":"{week2}"}`, status: 409},
		{name: "issue: live invitation exists", fixture: s1Invited, method: "POST", path: "/api/owner/programs/{demo}/entries/{s1}/invitations", body: `{"requestKey":"{k2}","expiresAt":"{week}"}`, status: 409},
		{name: "issue: entry waiting", method: "POST", path: "/api/owner/programs/{demo}/entries/{w6}/invitations", body: `{"requestKey":"{k2}","expiresAt":"{week}"}`, status: 409},
		{name: "issue: beyond the maximum days", fixture: w4Selected, method: "POST", path: "/api/owner/programs/{demo}/entries/{w4}/invitations", body: `{"requestKey":"{k2}","expiresAt":"2026-12-14T10:00:01Z"}`, status: 400},
		{name: "issue: in the past", fixture: w4Selected, method: "POST", path: "/api/owner/programs/{demo}/entries/{w4}/invitations", body: `{"requestKey":"{k2}","expiresAt":"2026-11-29T09:00:00Z"}`, status: 400},
		{name: "issue: malformed expiry", fixture: w4Selected, method: "POST", path: "/api/owner/programs/{demo}/entries/{w4}/invitations", body: `{"requestKey":"{k2}","expiresAt":"next week"}`, status: 400},
		{name: "issue: key not a UUID", fixture: w4Selected, method: "POST", path: "/api/owner/programs/{demo}/entries/{w4}/invitations", body: `{"requestKey":"abc","expiresAt":"{week}"}`, status: 400},
		{name: "issue: absent entry", method: "POST", path: "/api/owner/programs/{demo}/entries/{absent}/invitations", body: `{"requestKey":"{k2}","expiresAt":"{week}"}`, status: 404},
		{name: "delivery: record", fixture: s1Invited, method: "POST", path: "/api/owner/invitations/{inv1}/delivery-record", body: `{"requestKey":"{k3}","channel":"email","reference":"ticket 7"}`,
			status: 200, audit: 1, has: []string{`"id":"{inv1}"`, `"deliveryRecordedAt":"2026-11-29T10:00:00Z"`, `"deliveryChannel":"email"`, `"deliveryReference":"ticket 7"`}},
		{name: "delivery: same-key replay", fixture: s1Delivered, method: "POST", path: "/api/owner/invitations/{inv1}/delivery-record", body: `{"requestKey":"{k3}","channel":"email","reference":"ticket 7"}`,
			status: 200, has: []string{`"deliveryChannel":"email"`}},
		{name: "delivery: same key, other channel", fixture: s1Delivered, method: "POST", path: "/api/owner/invitations/{inv1}/delivery-record", body: `{"requestKey":"{k3}","channel":"sms"}`, status: 409},
		{name: "delivery: already recorded", fixture: s1Delivered, method: "POST", path: "/api/owner/invitations/{inv1}/delivery-record", body: `{"requestKey":"{k4}","channel":"sms"}`, status: 409},
		{name: "delivery: no channel", fixture: s1Invited, method: "POST", path: "/api/owner/invitations/{inv1}/delivery-record", body: `{"requestKey":"{k4}","channel":""}`, status: 400},
		{name: "delivery: absent invitation", method: "POST", path: "/api/owner/invitations/{absent}/delivery-record", body: `{"requestKey":"{k4}","channel":"email"}`, status: 404, has: []string{notFoundJSON}},
		{name: "issue: a second seat", fixture: func(t *testing.T, f *ownerAPIFixture) { s1Delivered(t, f); selected("{w1}")(t, f) },
			method: "POST", path: "/api/owner/programs/{demo}/entries/{w1}/invitations", body: `{"requestKey":"{k4}","expiresAt":"{week}"}`,
			status: 201, audit: 1, after: created("{inv2}", "invitation", "id")},
		{name: "issue: no free seat", fixture: func(t *testing.T, f *ownerAPIFixture) {
			twoSeatsUsed(t, f)
			f.do(t, "PATCH", "/api/owner/programs/{demo}", `{"expectedRevision":{demoRev},"seatCap":2}`)
			w4Selected(t, f)
		}, method: "POST", path: "/api/owner/programs/{demo}/entries/{w4}/invitations", body: `{"requestKey":"` + owKey() + `","expiresAt":"{week}"}`, status: 409},
		{name: "revoke invitation: unknown field", fixture: twoSeatsUsed, method: "POST", path: "/api/owner/invitations/{inv2}/revoke", body: `{"why":"x"}`, status: 400},
		{name: "revoke invitation", fixture: twoSeatsUsed, method: "POST", path: "/api/owner/invitations/{inv2}/revoke", body: `{}`,
			status: 200, audit: 1, has: []string{`"id":"{inv2}"`, `"state":"revoked"`}},
		{name: "revoke invitation: again", fixture: inv2Revoked, method: "POST", path: "/api/owner/invitations/{inv2}/revoke", body: `{}`, status: 409},
		{name: "revoke invitation: absent", method: "POST", path: "/api/owner/invitations/{absent}/revoke", body: `{}`, status: 404, has: []string{notFoundJSON}},
		{name: "entry: selected again after revoke", fixture: inv2Revoked, method: "GET", path: "/api/owner/programs/{demo}/entries/{w1}", status: 200,
			has: []string{`"state":"selected"`, `"state":"revoked"`, `"type":"invite_revoked"`, `"actorKind":"owner"`}},
	})
}

func TestOwnerAPI_Grants(t *testing.T) {
	runOwnerScenarios(t, []ownerScenario{
		{name: "revoke grant", fixture: s1Granted, method: "POST", path: "/api/owner/grants/{grant}/revoke", body: `{}`,
			status: 200, audit: 1, has: []string{`{"id":"{grant}","active":false,"revokedAt":"2026-11-29T10:00:00Z"}`}},
		{name: "revoke grant: again", fixture: grantRevoked, method: "POST", path: "/api/owner/grants/{grant}/revoke", body: `{}`, status: 409},
		{name: "revoke grant: absent", method: "POST", path: "/api/owner/grants/{absent}/revoke", body: `{}`, status: 404, has: []string{notFoundJSON}},
		{name: "entry: grant revoked", fixture: grantRevoked, method: "GET", path: "/api/owner/programs/{demo}/entries/{s1}", status: 200,
			has: []string{`"state":"revoked"`, `"grant":{"id":"{grant}","invitationId":"{inv1}","active":false`, `"type":"redeemed"`}, hasNot: []string{"user_s1", "{code}"}},
	})
}

// eventsFirstPage is grantRevoked with the newest event read: {ecursor}
// points past it.
func eventsFirstPage(t *testing.T, f *ownerAPIFixture) {
	grantRevoked(t, f)
	b := f.do(t, "GET", "/api/owner/programs/{demo}/events?limit=1", "")
	collect(t, f.vars, "{ecursor}", b, "nextCursor")
}

func TestOwnerAPI_EventsAndExport(t *testing.T) {
	runOwnerScenarios(t, []ownerScenario{
		{name: "events", fixture: grantRevoked, method: "GET", path: "/api/owner/programs/{demo}/events", status: 200,
			has: []string{`"type":"grant_revoked"`, `"actorKind":"owner"`, `"details":{"grantId":"{grant}"}`, `"nextCursor":null`}, hasNot: []string{"@", "user_"}},
		{name: "events: first page", fixture: grantRevoked, method: "GET", path: "/api/owner/programs/{demo}/events?limit=1", status: 200,
			has: []string{`"type":"grant_revoked"`}, hasNot: []string{`"nextCursor":null`}, after: created("{ecursor}", "nextCursor")},
		{name: "events: older page", fixture: eventsFirstPage, method: "GET", path: "/api/owner/programs/{demo}/events?limit=1&cursor={ecursor}", status: 200,
			has: []string{`"type":"redeemed"`}, hasNot: []string{`"type":"grant_revoked"`}},
		{name: "events: bad cursor", method: "GET", path: "/api/owner/programs/{demo}/events?cursor=abc", status: 400},
		{name: "events: bad limit", method: "GET", path: "/api/owner/programs/{demo}/events?limit=500", status: 400},
		{name: "events: absent program", method: "GET", path: "/api/owner/programs/{absent}/events", status: 404, has: []string{notFoundJSON}},
		{name: "export", fixture: selected("{w1}"), method: "GET", path: "/api/owner/programs/{demo}/export.csv", status: 200, audit: 1,
			has: []string{"id,email,state,created_at,updated_at,notice_version,permission_at\n", "{w1},w1@example.com,selected,2026-11-29T10:00:00Z"}},
		{name: "export: absent program", method: "GET", path: "/api/owner/programs/{absent}/export.csv", status: 404, has: []string{notFoundJSON}},
	})
}
