package apptest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"admit/internal/oidcprovider"
	"admit/store"
)

// OwnerActor is an owner actor for userID.
func OwnerActor(userID string) store.Actor {
	return store.Actor{Kind: store.ActorOwner, UserID: userID}
}

// Count runs a counting query on the app's database.
func Count(tb testing.TB, app *App, query string, args ...any) int {
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

// AuditCount is the number of audit events.
func AuditCount(tb testing.TB, app *App) int {
	tb.Helper()
	return Count(tb, app, `SELECT count(*) FROM audit_events`)
}

// OwnerProgram reads a program as the demo owner.
func OwnerProgram(tb testing.TB, app *App, id string) *store.Program {
	tb.Helper()
	p, err := app.DB.ProgramByID(context.Background(), OwnerActor(app.OwnerID), id)
	if err != nil {
		tb.Fatalf("program %s: %v", id, err)
	}
	return p
}

// EntryState reads an entry's state directly.
func EntryState(tb testing.TB, app *App, entryID string) string {
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

// Issue issues an invitation as the demo owner, expiring in a day.
func Issue(tb testing.TB, app *App, programID, entryID string) *store.IssueResult {
	tb.Helper()
	res, err := app.DB.IssueInvitation(context.Background(), OwnerActor(app.OwnerID), programID, entryID,
		store.NewInvitation{RequestKey: RequestKey(), ExpiresAt: app.Clock.Now().Add(24 * time.Hour)})
	if err != nil {
		tb.Fatalf("issue: %v", err)
	}
	return res
}

// Grant issues, records and redeems an invitation for an entry, as the
// given recipient, and returns the grant ID.
func Grant(tb testing.TB, app *App, programID, entryID, email, userID string) (invitationID, grantID string) {
	tb.Helper()
	ctx := context.Background()
	res := Issue(tb, app, programID, entryID)
	if _, err := app.DB.RecordDelivery(ctx, OwnerActor(app.OwnerID), res.Invitation.ID, store.DeliveryRecord{RequestKey: RequestKey(), Channel: "email"}); err != nil {
		tb.Fatalf("record delivery: %v", err)
	}
	red, err := app.DB.Redeem(ctx, userID, []string{email}, res.Code)
	if err != nil {
		tb.Fatalf("redeem: %v", err)
	}
	return res.Invitation.ID, red.GrantID
}

// RequestKey returns a fresh canonical request key.
func RequestKey() string { return uuid.NewString() }

// PostOwnerForm sends a form with the client's CSRF token.
func (c *Client) PostOwnerForm(tb testing.TB, path string, form map[string][]string, headers ...string) *Response {
	tb.Helper()
	vals := make(map[string][]string, len(form)+1)
	for k, v := range form {
		vals[k] = v
	}
	vals["csrf"] = []string{c.CSRFToken}
	return c.PostForm(tb, path, vals, headers...)
}

// AccessKit prepares invitations, grants and programs through the store's
// audited operations, as the owner console would, so recipient tests start
// from a real state.
type AccessKit struct {
	App   *App
	Owner store.Actor
}

// NewAccessKit acts as the demo workspace's owner.
func NewAccessKit(app *App) AccessKit {
	return AccessKit{App: app, Owner: store.Actor{Kind: store.ActorOwner, UserID: app.OwnerID}}
}

// IssuedCode is an issued invitation and its once-shown code.
type IssuedCode struct {
	Code    string
	EntryID string
	ID      string
}

// program creates another program in the demo workspace with a notice,
// the given private content, open signup and access enabled.
func (k AccessKit) Program(tb testing.TB, slug, body string) *store.Program {
	tb.Helper()
	ctx := context.Background()
	db := k.App.DB
	p, err := db.CreateProgram(ctx, k.Owner, store.NewProgram{WorkspaceID: k.App.Demo.WorkspaceID, Slug: slug, Name: "Redeem " + slug,
		Purpose: "Early access to " + slug + ", invited by hand.", QueueCap: 100, HourlyCap: 100, SeatCap: 20, MaxInvitationDays: 14})
	if err != nil {
		tb.Fatalf("create program %s: %v", slug, err)
	}
	if _, err := db.PublishNotice(ctx, k.Owner, p.ID, store.NewNotice{Purpose: p.Purpose,
		ContactText: "One code by hand if selected.", RetentionText: "Until the program is retired."}); err != nil {
		tb.Fatalf("publish notice: %v", err)
	}
	if _, err := db.PutContent(ctx, k.Owner, p.ID, store.ContentEdit{ExpectedRevision: 0, Body: body}); err != nil {
		tb.Fatalf("put content: %v", err)
	}
	if p, err = db.ProgramByID(ctx, k.Owner, p.ID); err != nil {
		tb.Fatal(err)
	}
	yes := true
	p, err = db.UpdateProgram(ctx, k.Owner, p.ID, store.ProgramSettings{ExpectedRevision: p.Revision, SignupOpen: &yes, AccessEnabled: &yes})
	if err != nil {
		tb.Fatalf("open program: %v", err)
	}
	return p
}

// asset stores a private asset of the program.
func (k AccessKit) Asset(tb testing.TB, p *store.Program, name, contentType string, data []byte) {
	tb.Helper()
	if err := k.App.DB.PutAsset(context.Background(), k.Owner, p.ID, name, contentType, data); err != nil {
		tb.Fatalf("put asset: %v", err)
	}
}

// entry signs email up for the program through the public signup and
// returns the entry ID.
func (k AccessKit) Entry(tb testing.TB, p *store.Program, email string) string {
	tb.Helper()
	ctx := context.Background()
	if _, err := k.App.DB.Signup(ctx, store.SignupRequest{Slug: p.Slug, RequestKey: uuid.NewString(), Email: email,
		NoticeVersion: p.CurrentNoticeVersion, Permission: true}); err != nil {
		tb.Fatalf("signup: %v", err)
	}
	var id string
	err := k.App.DB.View(ctx, func(tx *store.Tx) error {
		return tx.QueryRow(`SELECT id FROM entries WHERE program_id = ? AND email_key = ?`, p.ID, email).Scan(&id)
	})
	if err != nil {
		tb.Fatalf("find entry: %v", err)
	}
	return id
}

// invite signs email up, selects the entry and issues a code that expires
// in seven days; with deliver it records the owner's send as well.
func (k AccessKit) Invite(tb testing.TB, p *store.Program, email string, deliver bool) IssuedCode {
	tb.Helper()
	ctx := context.Background()
	entryID := k.Entry(tb, p, email)
	if _, err := k.App.DB.SelectEntry(ctx, k.Owner, p.ID, entryID, store.Decision{Reason: "meets_policy"}); err != nil {
		tb.Fatalf("select: %v", err)
	}
	res, err := k.App.DB.IssueInvitation(ctx, k.Owner, p.ID, entryID, store.NewInvitation{RequestKey: uuid.NewString(), ExpiresAt: k.App.Clock.Now().Add(7 * 24 * time.Hour)})
	if err != nil {
		tb.Fatalf("issue: %v", err)
	}
	if res.Code == "" {
		tb.Fatal("issue returned no code")
	}
	if deliver {
		if _, err := k.App.DB.RecordDelivery(ctx, k.Owner, res.Invitation.ID, store.DeliveryRecord{RequestKey: uuid.NewString(), Channel: "email"}); err != nil {
			tb.Fatalf("record delivery: %v", err)
		}
	}
	return IssuedCode{Code: res.Code, EntryID: entryID, ID: res.Invitation.ID}
}

// grant invites email with a recorded send and redeems the code as userID
// in the store; it returns the grant ID.
func (k AccessKit) Grant(tb testing.TB, p *store.Program, email, userID string) string {
	tb.Helper()
	inv := k.Invite(tb, p, email, true)
	red, err := k.App.DB.Redeem(context.Background(), userID, []string{email}, inv.Code)
	if err != nil {
		tb.Fatalf("redeem: %v", err)
	}
	return red.GrantID
}

// revokeGrant ends a grant as the owner.
func (k AccessKit) RevokeGrant(tb testing.TB, grantID string) {
	tb.Helper()
	if _, err := k.App.DB.RevokeGrant(context.Background(), k.Owner, grantID); err != nil {
		tb.Fatalf("revoke grant: %v", err)
	}
}

// RedeemForm posts the redemption form with the client's CSRF token.
func (c *Client) RedeemForm(tb testing.TB, code string) *Response {
	tb.Helper()
	return c.PostForm(tb, "/redeem", url.Values{"csrf": {c.CSRFToken}, "code": {code}})
}

// SignupJSONBody is the JSON signup body.
func SignupJSONBody(requestKey, email string, noticeVersion int, permission bool) string {
	b, _ := json.Marshal(map[string]any{"requestKey": requestKey, "email": email,
		"noticeVersion": noticeVersion, "permission": permission})
	return string(b)
}

// DemoOwner is the demo program's owner as a store actor.
func DemoOwner(app *App) store.Actor {
	return store.Actor{Kind: store.ActorOwner, UserID: app.OwnerID}
}

// SetDemo changes the demo program's settings at its current revision.
func SetDemo(tb testing.TB, app *App, set func(*store.ProgramSettings)) {
	tb.Helper()
	ctx := context.Background()
	p, err := app.DB.ProgramByID(ctx, DemoOwner(app), app.Demo.ID)
	if err != nil {
		tb.Fatalf("read demo: %v", err)
	}
	s := store.ProgramSettings{ExpectedRevision: p.Revision}
	set(&s)
	if _, err := app.DB.UpdateProgram(ctx, DemoOwner(app), app.Demo.ID, s); err != nil {
		tb.Fatalf("update demo: %v", err)
	}
}

// StartOIDC starts admit in OpenID Connect mode against a fresh real
// provider.
func StartOIDC(t *testing.T, opts ...Option) *App {
	t.Helper()
	return Start(t, append([]Option{WithOIDC(oidcprovider.Start(t))}, opts...)...)
}

// SessionCount counts the rows of the sessions table.
func SessionCount(t *testing.T, app *App) int {
	t.Helper()
	return Count(t, app, `SELECT count(*) FROM sessions`)
}

func ParseURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// SelectedEntry signs email up for the demo program and selects it, both
// through the store's own operations, and returns the entry ID.
func SelectedEntry(tb testing.TB, app *App, email string) string {
	tb.Helper()
	ctx := context.Background()
	if _, err := app.DB.Signup(ctx, store.SignupRequest{Slug: app.Demo.Slug, RequestKey: RequestKey(), Email: email,
		NoticeVersion: app.Demo.CurrentNoticeVersion, Permission: true}); err != nil {
		tb.Fatalf("signup: %v", err)
	}
	var id string
	if err := app.DB.View(ctx, func(tx *store.Tx) error {
		return tx.QueryRow(`SELECT id FROM entries WHERE email_key = ?`, email).Scan(&id)
	}); err != nil {
		tb.Fatalf("find entry: %v", err)
	}
	if _, err := app.DB.SelectEntry(ctx, OwnerActor(app.OwnerID), app.Demo.ID, id, store.Decision{Reason: "meets_policy"}); err != nil {
		tb.Fatalf("select: %v", err)
	}
	return id
}

// RetireDemo retires the demo program as its owner would.
func RetireDemo(tb testing.TB, app *App) *store.Program {
	tb.Helper()
	p := OwnerProgram(tb, app, app.Demo.ID)
	p, err := app.DB.RetireProgram(context.Background(), OwnerActor(app.OwnerID), p.ID,
		store.Retirement{ExpectedRevision: p.Revision, Confirm: p.Slug})
	if err != nil {
		tb.Fatalf("retire: %v", err)
	}
	return p
}

// HoldWriter takes the app's database writer with a transaction that
// writes nothing, until release is called: every write waits meanwhile.
func HoldWriter(tb testing.TB, app *App) (release func()) {
	tb.Helper()
	held, free, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- app.DB.Update(context.Background(), func(*store.Tx) error {
			close(held)
			<-free
			return nil
		})
	}()
	select {
	case <-held:
	case err := <-done:
		tb.Fatalf("hold the writer: %v", err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			close(free)
			if err := <-done; err != nil {
				tb.Errorf("the held transaction: %v", err)
			}
		})
	}
	tb.Cleanup(release)
	return release
}

// Eventually polls cond until it holds, failing the test after 10 s.
func Eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// FillDemo caps the demo queue at one place and fills it.
func FillDemo(tb testing.TB, app *App) {
	tb.Helper()
	SetDemo(tb, app, func(s *store.ProgramSettings) { s.QueueCap = new(1) })
	NewAccessKit(app).Entry(tb, app.Demo, "listed@example.com")
}

// SendHost is Send with the request's Host header set to host (the
// client's own when empty), as a reverse proxy or a hand-written request
// may send it.
func (c *Client) SendHost(tb testing.TB, method, path, host, contentType, body string, headers ...string) *Response {
	tb.Helper()
	req, err := http.NewRequest(method, c.App.URL+path, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.Client.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return &Response{StatusCode: resp.StatusCode, Header: resp.Header, Body: string(b)}
}

// SignupPath is the demo program's public waitlist page, and SignupAPI its
// JSON signup route.
const (
	SignupPath = "/waitlist/demo"
	SignupAPI  = "/api/public/programs/demo/signups"
)

// StaffID reads the demo workspace's membership ID of userID.
func StaffID(tb testing.TB, app *App, userID string) string {
	tb.Helper()
	var id string
	if err := app.DB.View(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRow(`SELECT id FROM staff_members WHERE workspace_id = ? AND user_id = ?`,
			app.Demo.WorkspaceID, userID).Scan(&id)
	}); err != nil {
		tb.Fatalf("staff ID: %v", err)
	}
	return id
}
