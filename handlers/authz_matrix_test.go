package handlers

import (
	"bytes"
	"context"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"admit/assets"
	"admit/internal/identity"
	"admit/store"

	"github.com/google/uuid"
)

// The principals of the authorization matrix, in column order.
const (
	pAnon         = iota // signed out
	pNoEntry             // signed in, no entry anywhere
	pRecipientA          // entry and grant in program A (demo)
	pRecipientB          // entry and grant in program B (beta)
	pOtherOwner          // owner of another workspace
	pRemovedOwner        // was an owner of the demo workspace, removed
	pOwner               // current owner of the demo workspace
	principalCount
)

var principalNames = [principalCount]string{"anonymous", "signed-in without entry", "recipient A", "recipient B",
	"owner of another workspace", "removed owner", "owner"}

// bodyKind says how a matrix request carries its body and CSRF token.
type bodyKind int

const (
	noBody    bodyKind = iota
	jsonBody           // application/json, token in X-CSRF-Token
	formBody           // urlencoded, token in the csrf field
	multiBody          // multipart/form-data, token in the first part
)

// statuses is one expected status per principal.
type statuses [principalCount]int

// everyone is the same status for every principal.
func everyone(s int) statuses {
	var out statuses
	for i := range out {
		out[i] = s
	}
	return out
}

// anySignedIn is anon for the signed-out visitor and s for everyone else.
func anySignedIn(anon, s int) statuses {
	out := everyone(s)
	out[pAnon] = anon
	return out
}

// onlyThese is anon for the signed-out visitor, ok for the listed principals
// and 404 for every other signed-in one.
func onlyThese(anon, ok int, who ...int) statuses {
	out := anySignedIn(anon, http.StatusNotFound)
	for _, p := range who {
		out[p] = ok
	}
	return out
}

// matrixFixture is the state the matrix runs against: two programs in the
// demo workspace, one recipient with a grant in each, another workspace and
// its owner, a removed owner and the owner's objects to act on.
type matrixFixture struct {
	demo, beta              *store.Program
	queued                  string // a waiting demo entry
	gone                    string // a withdrawn demo entry
	pendingForm, pendingAPI issuedCode
	undelivered             issuedCode
	grantForm, grantAPI     string
	grantFormEntry          string
}

func mustMatrixFixture(t *testing.T, app *testApp) matrixFixture {
	t.Helper()
	ctx := context.Background()
	k := newAccessKit(app)
	f := matrixFixture{demo: app.Demo}
	f.beta = k.Program(t, "beta", "Beta launch notes.")
	k.Asset(t, f.demo, "shot.png", "image/png", pngBytes)
	k.Asset(t, f.beta, "shot.png", "image/png", pngBytes)
	k.Grant(t, f.demo, "reader-a@example.com", identity.DevUserID("reader-a@example.com"))
	k.Grant(t, f.beta, "reader-b@example.com", identity.DevUserID("reader-b@example.com"))

	f.queued = k.Entry(t, f.demo, "queued@example.com")
	f.gone = k.Entry(t, f.demo, "gone@example.com")
	if _, err := app.DB.WithdrawOwn(ctx, "demo", identity.DevUserID("gone@example.com"), []string{"gone@example.com"}); err != nil {
		t.Fatal(err)
	}
	f.pendingForm = k.Invite(t, f.demo, "pending-form@example.com", true)
	f.pendingAPI = k.Invite(t, f.demo, "pending-api@example.com", true)
	f.undelivered = k.Invite(t, f.demo, "undelivered@example.com", false)
	f.grantFormEntry = k.Entry(t, f.demo, "granted-form@example.com")
	f.grantForm = mustGrantEntry(t, k, f.demo, f.grantFormEntry, "granted-form@example.com")
	f.grantAPI = k.Grant(t, f.demo, "granted-api@example.com", identity.DevUserID("granted-api@example.com"))

	other := identity.DevUserID("other-owner@example.test")
	w, err := app.DB.AddOwner(ctx, store.Actor{Kind: store.ActorCLI}, "Other workspace", other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.DB.CreateProgram(ctx, store.Actor{Kind: store.ActorOwner, UserID: other}, store.NewProgram{
		WorkspaceID: w.ID, Slug: "other-program", Name: "Other program", Purpose: "Another workspace's program.",
		QueueCap: 10, HourlyCap: 10, SeatCap: 1, MaxInvitationDays: 7}); err != nil {
		t.Fatal(err)
	}
	former := identity.DevUserID("former-owner@example.test")
	if _, err := app.DB.AddOwner(ctx, store.Actor{Kind: store.ActorCLI}, store.DemoWorkspace, former); err != nil {
		t.Fatal(err)
	}
	if err := app.DB.RemoveOwner(ctx, store.Actor{Kind: store.ActorCLI}, store.DemoWorkspace, former); err != nil {
		t.Fatal(err)
	}
	return f
}

// mustGrantEntry selects, invites and redeems an existing entry.
func mustGrantEntry(t *testing.T, k accessKit, p *store.Program, entryID, email string) string {
	t.Helper()
	ctx := context.Background()
	if _, err := k.App.DB.SelectEntry(ctx, k.Owner, p.ID, entryID, store.Decision{Reason: "meets_policy"}); err != nil {
		t.Fatal(err)
	}
	res, err := k.App.DB.IssueInvitation(ctx, k.Owner, p.ID, entryID, store.NewInvitation{RequestKey: uuid.NewString(), ExpiresAt: k.App.Clock.Now().Add(48 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.App.DB.RecordDelivery(ctx, k.Owner, res.Invitation.ID, store.DeliveryRecord{RequestKey: uuid.NewString(), Channel: "sms"}); err != nil {
		t.Fatal(err)
	}
	red, err := k.App.DB.Redeem(ctx, identity.DevUserID(email), []string{email}, res.Code)
	if err != nil {
		t.Fatal(err)
	}
	return red.GrantID
}

// matrixRoute is one row: a request and the expected status per principal.
type matrixRoute struct {
	method, path string
	kind         bodyKind
	body         string
	want         statuses
}

// TestAuthorizationMatrix is the one table of who may call what: every
// route of the app (public, recipient, owner, and unmatched paths) against
// seven principals. Writes carry the principal's own valid CSRF token, so
// the table tests authorization; a first pass sends every write that gets
// past authorization again without a valid token (none, or another
// session's), which must be 403 and change nothing. Owner HTML writes use input
// refused after authorization (400); owner API writes are valid requests
// that reach the ownership check and then conflict (409) or act on objects
// made for them (revocations, a delivery record, a new program, an
// upload). The owner is the last column, so those acts come after every
// other principal was refused. Rows that change a principal's own state
// (withdrawal, sign-out) come last.
func TestAuthorizationMatrix(t *testing.T) {
	app := MustStartApp(t)
	f := mustMatrixFixture(t, app)
	demo, beta := f.demo.ID, f.beta.ID
	entry := "/owner/programs/" + demo + "/entries/" + f.queued
	// The API rows act on a withdrawn entry: valid requests that the owner
	// may make but that change nothing (409, or the same withdrawn answer).
	apiEntry := "/api/owner/programs/" + demo + "/entries/" + f.gone
	expires := app.Clock.Now().Add(24 * time.Hour).Format(time.RFC3339)
	createBody := `{"workspaceId":"` + f.demo.WorkspaceID + `","slug":"matrix-new","name":"Program matrix-new","purpose":"Created by the matrix.",` +
		`"queueCap":5,"hourlyCap":5,"seatCap":1,"maxInvitationDays":7}`
	code := unknownCode(t)

	const (
		ok, see, bad, unauth, missing, conflict = http.StatusOK, http.StatusSeeOther,
			http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusConflict
	)
	recipA, recipB := []int{pRecipientA}, []int{pRecipientB}
	owners := []int{pOtherOwner, pOwner}

	routes := []matrixRoute{
		// Public.
		{"GET", "/", noBody, "", everyone(ok)},
		{"GET", "/healthz", noBody, "", everyone(ok)},
		{"GET", "/readyz", noBody, "", everyone(ok)},
		{"GET", assets.Path("admit.css"), noBody, "", everyone(ok)},
		{"GET", "/waitlist/demo", noBody, "", everyone(ok)},
		{"GET", "/api/public/programs/demo", noBody, "", everyone(ok)},
		{"GET", "/manage/", noBody, "", everyone(ok)},
		{"GET", "/privacy", noBody, "", everyone(ok)},
		{"GET", "/sign-in", noBody, "", everyone(ok)},
		{"GET", "/redeem", noBody, "", everyone(ok)},
		{"POST", "/waitlist/demo", formBody, "email=not-an-address", everyone(bad)},
		{"POST", "/api/public/programs/demo/signups", jsonBody, `{}`, everyone(bad)},
		{"POST", "/manage/remove", formBody, "token=short", everyone(bad)},
		{"POST", "/api/public/removals", jsonBody, `{"token":"short"}`, everyone(bad)},
		{"POST", "/dev/sign-in", formBody, "email=not-an-address", everyone(bad)},

		// Signed in, no email needed.
		{"GET", "/api/csrf", noBody, "", anySignedIn(unauth, ok)},
		{"GET", "/me/account", noBody, "", anySignedIn(see, ok)},

		// Recipient group: own entries, redemption, private content.
		{"GET", "/me", noBody, "", anySignedIn(see, ok)},
		{"GET", "/api/me/waitlist/demo", noBody, "", onlyThese(unauth, ok, recipA...)},
		{"GET", "/api/me/waitlist/beta", noBody, "", onlyThese(unauth, ok, recipB...)},
		{"GET", "/me/waitlist/demo/withdraw", noBody, "", onlyThese(see, ok, recipA...)},
		{"GET", "/me/waitlist/beta/withdraw", noBody, "", onlyThese(see, ok, recipB...)},
		{"POST", "/redeem", formBody, "code=" + code, anySignedIn(unauth, missing)},
		{"POST", "/api/me/invitations/redeem", jsonBody, redeemJSONBody(code), anySignedIn(unauth, missing)},
		{"GET", "/early-access/demo", noBody, "", onlyThese(see, ok, recipA...)},
		{"GET", "/api/me/early-access/demo", noBody, "", onlyThese(unauth, ok, recipA...)},
		{"GET", "/early-access/demo/assets/shot.png", noBody, "", onlyThese(see, ok, recipA...)},
		{"GET", "/early-access/beta", noBody, "", onlyThese(see, ok, recipB...)},
		{"GET", "/api/me/early-access/beta", noBody, "", onlyThese(unauth, ok, recipB...)},
		{"GET", "/early-access/beta/assets/shot.png", noBody, "", onlyThese(see, ok, recipB...)},
		{"GET", "/early-access/other-program", noBody, "", onlyThese(see, ok)},

		// Owner group: HTML console.
		{"GET", "/owner", noBody, "", onlyThese(see, ok, owners...)},
		{"GET", "/owner/programs/" + demo, noBody, "", onlyThese(see, ok, pOwner)},
		{"GET", "/owner/programs/" + beta, noBody, "", onlyThese(see, ok, pOwner)},
		{"GET", "/owner/programs/" + demo + "/events", noBody, "", onlyThese(see, ok, pOwner)},
		{"POST", "/owner/programs/" + demo + "/events", formBody, "type=nonsense", onlyThese(unauth, bad, pOwner)},
		{"GET", "/owner/workspaces/" + f.demo.WorkspaceID, noBody, "", onlyThese(see, ok, pOwner)},
		{"POST", "/owner/workspaces/" + f.demo.WorkspaceID, formBody, "displayName=", onlyThese(unauth, bad, pOwner)},
		{"GET", "/owner/programs/" + demo + "/export.csv", noBody, "", onlyThese(see, ok, pOwner)},
		{"GET", "/owner/programs/" + demo + "/entries", noBody, "", onlyThese(see, ok, pOwner)},
		{"GET", entry, noBody, "", onlyThese(see, ok, pOwner)},
		{"GET", "/owner/programs/" + demo + "/retire", noBody, "", onlyThese(see, ok, pOwner)},
		{"GET", entry + "/decline", noBody, "", onlyThese(see, ok, pOwner)},
		{"GET", entry + "/withdraw", noBody, "", onlyThese(see, ok, pOwner)},
		{"GET", "/owner/programs/" + demo + "/entries/" + f.pendingForm.EntryID + "/invitations/" + f.pendingForm.ID, noBody, "", onlyThese(see, ok, pOwner)},
		{"GET", "/owner/programs/" + demo + "/entries/" + f.pendingForm.EntryID + "/invitations/" + f.pendingForm.ID + "/revoke", noBody, "", onlyThese(see, ok, pOwner)},
		{"GET", "/owner/programs/" + demo + "/entries/" + f.grantFormEntry + "/grants/" + f.grantForm + "/revoke", noBody, "", onlyThese(see, ok, pOwner)},
		{"POST", "/owner/programs", formBody, "slug=", onlyThese(unauth, bad, owners...)},
		{"POST", "/owner/programs/" + demo + "/settings", formBody, "queueCap=0", onlyThese(unauth, bad, pOwner)},
		{"POST", "/owner/programs/" + demo + "/notices", formBody, "purpose=", onlyThese(unauth, bad, pOwner)},
		{"POST", "/owner/programs/" + demo + "/content", formBody, "body=", onlyThese(unauth, bad, pOwner)},
		{"POST", "/owner/programs/" + demo + "/assets", multiBody, "", onlyThese(unauth, see, pOwner)},
		{"POST", "/owner/programs/" + demo + "/entries/select", formBody, "reason=none", onlyThese(unauth, bad, pOwner)},
		{"POST", "/owner/programs/" + demo + "/entries/decline", formBody, "declineReason=none", onlyThese(unauth, bad, pOwner)},
		{"POST", entry + "/select", formBody, "reason=none", onlyThese(unauth, bad, pOwner)},
		{"POST", entry + "/decline", formBody, "reason=none", onlyThese(unauth, bad, pOwner)},
		{"POST", entry + "/withdraw", formBody, "reason=none", onlyThese(unauth, bad, pOwner)},
		{"POST", entry + "/invitations", formBody, "requestKey=nope", onlyThese(unauth, bad, pOwner)},
		{"POST", "/owner/programs/" + demo + "/entries/" + f.undelivered.EntryID + "/invitations/" + f.undelivered.ID + "/delivery-record",
			formBody, "channel=", onlyThese(unauth, bad, pOwner)},
		{"POST", "/owner/programs/" + demo + "/entries/" + f.pendingForm.EntryID + "/invitations/" + f.pendingForm.ID + "/revoke",
			formBody, "", onlyThese(unauth, see, pOwner)},
		{"POST", "/owner/programs/" + demo + "/entries/" + f.grantFormEntry + "/grants/" + f.grantForm + "/revoke",
			formBody, "", onlyThese(unauth, see, pOwner)},

		// Owner group: JSON API.
		{"GET", "/api/owner/workspaces", noBody, "", onlyThese(unauth, ok, owners...)},
		{"GET", "/api/owner/programs", noBody, "", onlyThese(unauth, ok, owners...)},
		{"GET", "/api/owner/programs/" + demo, noBody, "", onlyThese(unauth, ok, pOwner)},
		{"GET", "/api/owner/programs/" + beta, noBody, "", onlyThese(unauth, ok, pOwner)},
		{"GET", "/api/owner/programs/" + demo + "/content", noBody, "", onlyThese(unauth, ok, pOwner)},
		{"GET", "/api/owner/programs/" + demo + "/assets", noBody, "", onlyThese(unauth, ok, pOwner)},
		{"GET", "/api/owner/programs/" + demo + "/events", noBody, "", onlyThese(unauth, ok, pOwner)},
		{"GET", "/api/owner/programs/" + demo + "/stats", noBody, "", onlyThese(unauth, ok, pOwner)},
		{"PATCH", "/api/owner/workspaces/" + f.demo.WorkspaceID, jsonBody, `{"displayName":"Matrix team"}`, onlyThese(unauth, ok, pOwner)},
		{"GET", "/api/owner/programs/" + demo + "/export.csv", noBody, "", onlyThese(unauth, ok, pOwner)},
		{"GET", "/api/owner/programs/" + demo + "/entries", noBody, "", onlyThese(unauth, ok, pOwner)},
		{"GET", apiEntry, noBody, "", onlyThese(unauth, ok, pOwner)},
		{"POST", "/api/owner/programs", jsonBody, `{}`, onlyThese(unauth, bad, owners...)},
		{"POST", "/api/owner/programs", jsonBody, createBody, onlyThese(unauth, http.StatusCreated, pOwner)},
		{"PATCH", "/api/owner/programs/" + demo, jsonBody, `{"expectedRevision":0,"queueCap":5}`, onlyThese(unauth, conflict, pOwner)},
		{"POST", "/api/owner/programs/" + demo + "/notices", jsonBody,
			`{"purpose":"Another purpose.","contactText":"By hand.","retentionText":"A while."}`, onlyThese(unauth, conflict, pOwner)},
		{"PUT", "/api/owner/programs/" + demo + "/content", jsonBody, `{"expectedRevision":0,"body":"Overwrite?"}`, onlyThese(unauth, conflict, pOwner)},
		{"POST", "/api/owner/programs/" + demo + "/assets", multiBody, "", onlyThese(unauth, http.StatusCreated, pOwner)},
		{"POST", "/api/owner/programs/" + demo + "/entries/select", jsonBody,
			`{"entryIds":["` + f.gone + `"],"reason":"meets_policy"}`, onlyThese(unauth, conflict, pOwner)},
		{"POST", "/api/owner/programs/" + demo + "/entries/decline", jsonBody,
			`{"entryIds":["` + f.gone + `"],"reason":"capacity"}`, onlyThese(unauth, conflict, pOwner)},
		{"POST", apiEntry + "/select", jsonBody, `{"reason":"meets_policy"}`, onlyThese(unauth, conflict, pOwner)},
		{"POST", apiEntry + "/decline", jsonBody, `{"reason":"other"}`, onlyThese(unauth, conflict, pOwner)},
		{"POST", apiEntry + "/withdraw", jsonBody, `{"reason":"applicant_request"}`, onlyThese(unauth, ok, pOwner)},
		{"POST", apiEntry + "/invitations", jsonBody, `{"requestKey":"` + uuid.NewString() + `","expiresAt":"` + expires + `"}`,
			onlyThese(unauth, conflict, pOwner)},
		{"POST", "/api/owner/invitations/" + f.undelivered.ID + "/delivery-record", jsonBody,
			`{"requestKey":"` + uuid.NewString() + `","channel":"sms"}`, onlyThese(unauth, ok, pOwner)},
		// The send was recorded by the row above: a bulk record of it again is 409.
		{"POST", "/api/owner/programs/" + demo + "/delivery-records", jsonBody,
			`{"requestKey":"` + uuid.NewString() + `","invitationIds":["` + f.undelivered.ID + `"],"channel":"sms","reference":""}`,
			onlyThese(unauth, conflict, pOwner)},
		{"POST", "/api/owner/programs/" + demo + "/invitations", jsonBody,
			`{"requestKey":"` + uuid.NewString() + `","entryIds":["` + f.gone + `"],"expiresAt":"` + expires + `"}`,
			onlyThese(unauth, conflict, pOwner)},
		{"POST", "/api/owner/invitations/" + f.pendingAPI.ID + "/revoke", jsonBody, `{}`, onlyThese(unauth, ok, pOwner)},
		{"POST", "/api/owner/grants/" + f.grantAPI + "/revoke", jsonBody, `{}`, onlyThese(unauth, ok, pOwner)},

		// Unmatched paths deny by default, whoever asks.
		{"GET", "/no-such-page", noBody, "", everyone(missing)},
		{"GET", "/api/owner/no-such-route", noBody, "", everyone(missing)},
		{"GET", "/owner/no-such-page", noBody, "", everyone(missing)},
		{"GET", "/api/me/no-such-route", noBody, "", everyone(missing)},
		{"POST", "/api/me/no-such-route", jsonBody, `{}`, everyone(missing)},
		{"GET", "/early-access/demo/no-such-route", noBody, "", everyone(missing)},

		// Last: rows that change the caller's own state.
		{"POST", "/me/waitlist/demo/withdraw", formBody, "", onlyThese(unauth, see, recipA...)},
		{"POST", "/api/me/waitlist/demo/withdraw", jsonBody, `{}`, onlyThese(unauth, ok, recipA...)},
		{"POST", "/me/waitlist/beta/withdraw", formBody, "", onlyThese(unauth, see, recipB...)},
		{"POST", "/api/me/waitlist/beta/withdraw", jsonBody, `{}`, onlyThese(unauth, ok, recipB...)},
		{"POST", "/me/account/sign-out-everywhere", formBody, "", anySignedIn(unauth, see)},
		{"POST", "/sign-out", formBody, "", everyone(see)},
	}

	emails := [principalCount]string{"", "visitor@example.com", "reader-a@example.com", "reader-b@example.com",
		"other-owner@example.test", "former-owner@example.test", "owner@example.test"}
	var clients [principalCount]*testClient
	var notFoundPage [principalCount]string
	for p := range clients {
		clients[p] = app.NewClient(t)
		if emails[p] != "" {
			clients[p].SignIn(t, emails[p])
			clients[p].CSRF(t)
		}
		notFoundPage[p] = clients[p].Get(t, "/no-such-page").Body
	}

	// Every write of a signed-in principal that the table lets through to a
	// handler (any status but 401 and 404) is refused with 403 when its
	// CSRF token is missing or is another session's, and changes nothing.
	// Public writes (the same answer for everyone) need no token.
	// This pass runs first: nothing it sends may act.
	before := dbFingerprint(t, app.DB)
	for _, rt := range routes {
		if rt.method == "GET" || rt.want == everyone(rt.want[pAnon]) {
			continue
		}
		for p, c := range clients {
			if p == pAnon || rt.want[p] == unauth || rt.want[p] == missing {
				continue
			}
			other := clients[pNoEntry]
			if p == pNoEntry {
				other = clients[pRecipientA]
			}
			for _, tok := range []struct{ name, csrf string }{{"no CSRF token", ""}, {"another session's CSRF token", other.CSRFToken}} {
				own := c.CSRFToken
				c.CSRFToken = tok.csrf
				r := matrixRequest(t, c, rt)
				c.CSRFToken = own
				if r.StatusCode != http.StatusForbidden {
					t.Errorf("%s %s as %s with %s: status=%d, want 403", rt.method, rt.path, principalNames[p], tok.name, r.StatusCode)
				}
			}
		}
	}
	if after := dbFingerprint(t, app.DB); !sameRows(after, before) {
		t.Fatalf("writes without a valid CSRF token changed the database")
	}

	for _, rt := range routes {
		for p, c := range clients {
			r := matrixRequest(t, c, rt)
			who := principalNames[p]
			if got, want := r.StatusCode, rt.want[p]; got != want {
				t.Errorf("%s %s as %s: status=%d, want %d", rt.method, rt.path, who, got, want)
				continue
			}
			api := strings.HasPrefix(rt.path, "/api/")
			switch {
			case r.StatusCode == missing && api && r.Body != deniedJSON:
				t.Errorf("%s %s as %s: 404 body %q, want %q", rt.method, rt.path, who, r.Body, deniedJSON)
			case r.StatusCode == missing && !api && rt.method == "GET" && r.Body != notFoundPage[p]:
				t.Errorf("%s %s as %s: the 404 page differs from an unmatched path's", rt.method, rt.path, who)
			case r.StatusCode == unauth && api && r.Body != "{\"error\":\"unauthorized\"}\n":
				t.Errorf("%s %s as %s: 401 body %q", rt.method, rt.path, who, r.Body)
			case r.StatusCode == see && p == pAnon && rt.method == "GET" &&
				r.Header.Get("Location") != "/sign-in?redirect_url="+url.QueryEscape(rt.path):
				t.Errorf("%s %s as %s: Location %q, want sign-in and back", rt.method, rt.path, who, r.Header.Get("Location"))
			}
		}
	}
}

// matrixRequest sends one matrix row's request as the client, with the
// client's own CSRF token on writes.
func matrixRequest(t *testing.T, c *testClient, rt matrixRoute) *testResponse {
	t.Helper()
	switch rt.kind {
	case jsonBody:
		return c.PostJSON(t, rt.method, rt.path, rt.body)
	case formBody:
		form, err := url.ParseQuery(rt.body)
		if err != nil {
			t.Fatal(err)
		}
		if c.CSRFToken != "" {
			form.Set("csrf", c.CSRFToken)
		}
		return c.Do(t, rt.method, rt.path, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
	case multiBody:
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		if c.CSRFToken != "" {
			if err := mw.WriteField("csrf", c.CSRFToken); err != nil {
				t.Fatal(err)
			}
		}
		fw, err := mw.CreateFormFile("file", "matrix.png")
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(pngBytes)
		mw.Close()
		return c.Do(t, rt.method, rt.path, mw.FormDataContentType(), &buf)
	}
	return c.Do(t, rt.method, rt.path, "", nil)
}
