package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"net/textproto"
	"regexp"
	"strings"
	"testing"
	"time"

	"admit/store"

	"github.com/google/uuid"
)

// mustOwnerClient signs the demo owner in and fetches the CSRF token.
func mustOwnerClient(tb testing.TB, app *testApp) *testClient {
	tb.Helper()
	c := app.NewClient(tb)
	c.SignIn(tb, "owner@example.test")
	c.CSRF(tb)
	return c
}

// ownerActorOf is an owner actor for userID.
func ownerActorOf(userID string) store.Actor {
	return store.Actor{Kind: store.ActorOwner, UserID: userID}
}

// mustForeignOwner makes email's user the owner of a second workspace and
// returns a signed-in client for them (with a CSRF token), the workspace
// and the user ID.
func mustForeignOwner(tb testing.TB, app *testApp, email string) (*testClient, *store.Workspace, string) {
	tb.Helper()
	c := app.NewClient(tb)
	id := c.SignIn(tb, email)
	w, err := app.DB.AddOwner(context.Background(), store.Actor{Kind: store.ActorCLI}, "Second workspace", id)
	if err != nil {
		tb.Fatalf("add second owner: %v", err)
	}
	c.CSRF(tb)
	return c, w, id
}

// owCount runs a counting query on the app's database.
func owCount(tb testing.TB, app *testApp, query string, args ...any) int {
	tb.Helper()
	var n int
	err := app.DB.View(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRow(query, args...).Scan(&n)
	})
	if err != nil {
		tb.Fatalf("count %q: %v", query, err)
	}
	return n
}

// owAuditCount is the number of audit events.
func owAuditCount(tb testing.TB, app *testApp) int {
	tb.Helper()
	return owCount(tb, app, `SELECT count(*) FROM audit_events`)
}

// owWantNoAddressInAudit fails if any audit detail holds an address.
func owWantNoAddressInAudit(tb testing.TB, app *testApp) {
	tb.Helper()
	if n := owCount(tb, app, `SELECT count(*) FROM audit_events WHERE details LIKE '%@%'`); n != 0 {
		tb.Fatalf("%d audit events hold an '@' in their details", n)
	}
}

// owDecode decodes a JSON response body into a generic value.
func owDecode(tb testing.TB, body string) map[string]any {
	tb.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		tb.Fatalf("decode %q: %v", body, err)
	}
	return v
}

// owPath walks a decoded JSON value by object keys and array indexes.
func owPath(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

// owStr returns a decoded JSON string, or "".
func owStr(v any) string {
	s, _ := v.(string)
	return s
}

// mustOwnerProgram reads a program as the demo owner.
func mustOwnerProgram(tb testing.TB, app *testApp, id string) *store.Program {
	tb.Helper()
	p, err := app.DB.ProgramByID(context.Background(), ownerActorOf(app.OwnerID), id)
	if err != nil {
		tb.Fatalf("program %s: %v", id, err)
	}
	return p
}

// owEntryState reads an entry's state directly.
func owEntryState(tb testing.TB, app *testApp, entryID string) string {
	tb.Helper()
	var s string
	err := app.DB.View(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRow(`SELECT state FROM entries WHERE id = ?`, entryID).Scan(&s)
	})
	if err != nil {
		tb.Fatalf("entry %s: %v", entryID, err)
	}
	return s
}

// owIssue issues an invitation as the demo owner, expiring in a day.
func owIssue(tb testing.TB, app *testApp, programID, entryID string) *store.IssueResult {
	tb.Helper()
	res, err := app.DB.IssueInvitation(context.Background(), ownerActorOf(app.OwnerID), programID, entryID,
		store.NewInvitation{RequestKey: owKey(), ExpiresAt: app.Clock.Now().Add(24 * time.Hour)})
	if err != nil {
		tb.Fatalf("issue: %v", err)
	}
	return res
}

// owGrant issues, records and redeems an invitation for an entry, as the
// given recipient, and returns the grant ID.
func owGrant(tb testing.TB, app *testApp, programID, entryID, email, userID string) (invitationID, grantID string) {
	tb.Helper()
	ctx := context.Background()
	res := owIssue(tb, app, programID, entryID)
	if _, err := app.DB.RecordDelivery(ctx, ownerActorOf(app.OwnerID), res.Invitation.ID, store.DeliveryRecord{RequestKey: owKey(), Channel: "email"}); err != nil {
		tb.Fatalf("record delivery: %v", err)
	}
	red, err := app.DB.Redeem(ctx, userID, []string{email}, res.Code)
	if err != nil {
		tb.Fatalf("redeem: %v", err)
	}
	return res.Invitation.ID, red.GrantID
}

// owKey returns a fresh canonical request key.
func owKey() string { return uuid.NewString() }

// owMultipart builds a multipart/form-data body from ordered fields; a
// field named "file" is sent as a file part with the given file name.
func owMultipart(tb testing.TB, filename string, fields ...[2]string) (string, string) {
	tb.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, f := range fields {
		if f[0] == "file" {
			h := textproto.MIMEHeader{}
			h.Set("Content-Disposition", `form-data; name="file"; filename="`+filename+`"`)
			h.Set("Content-Type", "application/octet-stream")
			w, err := mw.CreatePart(h)
			if err != nil {
				tb.Fatal(err)
			}
			w.Write([]byte(f[1]))
			continue
		}
		if err := mw.WriteField(f[0], f[1]); err != nil {
			tb.Fatal(err)
		}
	}
	if err := mw.Close(); err != nil {
		tb.Fatal(err)
	}
	return mw.FormDataContentType(), buf.String()
}

// ownerPNG is a minimal PNG signature followed by padding: enough for
// http.DetectContentType.
var ownerPNG = "\x89PNG\r\n\x1a\n" + strings.Repeat("\x00", 64)

var owErrorBlockPattern = regexp.MustCompile(`(?s)<section class="error".*?</section>`)

// owErrorBlock is the error section of an HTML error page: the part that must
// read the same whoever asks.
func owErrorBlock(tb testing.TB, body string) string {
	tb.Helper()
	b := owErrorBlockPattern.FindString(body)
	if b == "" {
		tb.Fatalf("no error block in %q", body)
	}
	return b
}

// owWantStatus fails unless the response has the wanted status.
func owWantStatus(tb testing.TB, what string, r *testResponse, want int) {
	tb.Helper()
	if r.StatusCode != want {
		tb.Fatalf("%s: status %d, want %d; body %.600s", what, r.StatusCode, want, r.Body)
	}
}

// postOwnerForm sends a form with the client's CSRF token.
func (c *testClient) postOwnerForm(tb testing.TB, path string, form map[string][]string, headers ...string) *testResponse {
	tb.Helper()
	vals := make(map[string][]string, len(form)+1)
	for k, v := range form {
		vals[k] = v
	}
	vals["csrf"] = []string{c.csrf}
	return c.PostForm(tb, path, vals, headers...)
}

// owLocation is a redirect's target.
func owLocation(r *testResponse) string { return r.Header.Get("Location") }
