package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"admit/internal/browser"
	"admit/internal/identity"
	"admit/store"
)

// The accessibility audit (docs/ACCESSIBILITY.md): every page a person can
// reach is opened in one headless Chromium, in light and dark colour schemes
// at a desktop and a phone width, and checked with axe-core against the WCAG
// 2.0, 2.1 and 2.2 A and AA rules; then it is walked with the Tab key.
//
// To audit a new page, append a row to a11yPages: who is signed in, how to
// prepare the state it shows, the path to open and, for a page that is the
// answer to a form, what to fill in and which button to press.

// axeVersion is the vendored axe-core in testdata/axe.
const axeVersion = "4.14.1"

// axeTags are the rule sets the audit runs: WCAG 2.0, 2.1 and 2.2, levels A
// and AA.
var axeTags = []string{"wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"}

// Who is signed in while a page is audited.
const (
	a11ySignedOut = ""
	a11yOwner     = "owner@example.test"
)

// a11yPage is one page of the audit.
type a11yPage struct {
	// Name names the page in failures.
	Name string
	// As is the email address signed in through the development sign-in
	// form, or a11ySignedOut.
	As string
	// Path prepares the state the page shows (through the store, as the
	// console or a signup would) and returns the path to open.
	Path func(tb testing.TB, e *a11yEnv) string
	// Fill sets form fields on the opened page, in order, before Submit.
	Fill []a11yField
	// Submit, when set, is the CSS selector of the button pressed on the
	// opened page; the page it answers with is the one audited.
	Submit string
	// Status is the audited document's HTTP status; 0 means 200.
	Status int64
	// NoJS audits the page with JavaScript off, as a visitor without it
	// sees it (<noscript> content, no htmx).
	NoJS bool
	// BeforeSubmit, when set, changes the state after the page was opened
	// and filled, before Submit: the answer to a form sent after the
	// world changed.
	BeforeSubmit func(tb testing.TB, app *testApp)
}

// a11yField sets one form control: a value typed into a field, or, for a
// checkbox or radio button, "on" to check it. A selector that names a
// <details> element, or an element inside one, opens it.
type a11yField struct {
	Selector, Value string
}

// a11yEnv is what a row's Path may use: the running app and the owner's
// store operations.
type a11yEnv struct {
	App *testApp
	Kit accessKit
	// Code is the invitation code a row's Path issued, typed where a
	// field's value is a11yCode.
	Code string
}

// a11yCode, as a field's value, stands for the code the row's Path issued.
const a11yCode = "{code}"

// a11yPath returns a fixed path.
func a11yPath(p string) func(testing.TB, *a11yEnv) string {
	return func(testing.TB, *a11yEnv) string { return p }
}

// a11yProgram creates an open program with content in the demo workspace.
func (e *a11yEnv) program(tb testing.TB, slug string) *store.Program {
	tb.Helper()
	return e.Kit.Program(tb, slug, "Welcome to the early access of "+slug+".\n\nThe private notes are below.")
}

// retire retires p as its owner, at its current revision; the background
// steps stay pending until FinishRetirements.
func (e *a11yEnv) retire(tb testing.TB, p *store.Program) {
	tb.Helper()
	cur, err := e.App.DB.ProgramByID(context.Background(), e.Kit.Owner, p.ID)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := e.App.DB.RetireProgram(context.Background(), e.Kit.Owner, p.ID,
		store.Retirement{ExpectedRevision: cur.Revision, Confirm: cur.Slug}); err != nil {
		tb.Fatalf("retire: %v", err)
	}
}

// a11yBusy fills the signups in progress while the writer is held, until
// the end of the row, so that the next signup is refused for load; it
// returns the signup page.
func a11yBusy(tb testing.TB, e *a11yEnv) string {
	tb.Helper()
	release := mustHoldWriter(tb, e.App)
	c := e.App.NewClient(tb)
	const n = store.DefaultSignupQueue + 16 // past any bound the limiter can have
	var answered atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := c.SendJSON("POST", "/api/public/programs/demo/signups",
				signupJSONBody(uuid.NewString(), fmt.Sprintf("crowd%d@example.com", i), 1, true))
			if err == nil && r.StatusCode == http.StatusServiceUnavailable {
				answered.Add(1)
			}
		}()
	}
	tb.Cleanup(func() { release(); wg.Wait() })
	eventually(tb, "the signups in progress to fill", func() bool {
		return int(answered.Load())+e.App.DB.SignupsWaiting() == n
	})
	return "/waitlist/demo"
}

// a11yPages are the pages of the audit. Each row prepares its own state
// (its own program, its own applicant) so that rows do not depend on one
// another.
var a11yPages = []a11yPage{
	// Public pages.
	{Name: "start page", Path: a11yPath("/")},
	{Name: "waitlist page", Path: a11yPath("/waitlist/demo")},
	{Name: "waitlist page without JavaScript", Path: a11yPath("/waitlist/demo"), NoJS: true},
	{Name: "join form with errors", Path: a11yPath("/waitlist/demo"),
		Fill:   []a11yField{{"#email", "not an address"}},
		Submit: `#signup-form button[type="submit"]`, Status: 400},
	{Name: "join form, choice not ticked", Path: a11yPath("/waitlist/demo"),
		Fill:   []a11yField{{"#email", "jane@example.com"}},
		Submit: `#signup-form button[type="submit"]`, Status: 400},
	{Name: "request received, removal link shown once", Path: a11yPath("/waitlist/demo"),
		Fill:   []a11yField{{"#email", "joiner@example.com"}, {"#permission", "on"}},
		Submit: `#signup-form button[type="submit"]`},
	{Name: "waitlist full", Path: func(tb testing.TB, e *a11yEnv) string {
		p := a11yCapped(tb, e, "a11y-full-page", store.ProgramSettings{QueueCap: new(1)})
		e.Kit.Entry(tb, p, "first@example.com")
		return "/waitlist/" + p.Slug
	}},
	{Name: "start page with a full waitlist", Path: func(tb testing.TB, e *a11yEnv) string {
		p := a11yCapped(tb, e, "a11y-full-start", store.ProgramSettings{QueueCap: new(1)})
		e.Kit.Entry(tb, p, "first@example.com")
		return "/"
	}},
	{Name: "waitlist full (429)", Path: func(tb testing.TB, e *a11yEnv) string {
		return "/waitlist/" + a11yCapped(tb, e, "a11y-full", store.ProgramSettings{QueueCap: new(1)}).Slug
	},
		Fill: []a11yField{{"#email", "second@example.com"}, {"#permission", "on"}},
		// The last place is taken while the form is open.
		BeforeSubmit: func(tb testing.TB, app *testApp) {
			if _, err := app.DB.Signup(context.Background(), store.SignupRequest{Slug: "a11y-full", RequestKey: uuid.NewString(),
				Email: "first@example.com", NoticeVersion: 1, Permission: true}); err != nil {
				tb.Fatalf("fill the queue: %v", err)
			}
		},
		Submit: `#signup-form button[type="submit"]`, Status: 429},
	{Name: "hour's intake used up (429)", Path: func(tb testing.TB, e *a11yEnv) string {
		p := a11yCapped(tb, e, "a11y-intake", store.ProgramSettings{HourlyCap: new(1)})
		e.Kit.Entry(tb, p, "first@example.com")
		return "/waitlist/" + p.Slug
	},
		Fill:   []a11yField{{"#email", "second@example.com"}, {"#permission", "on"}},
		Submit: `#signup-form button[type="submit"]`, Status: 429},
	{Name: "signup refused for load (503)", Path: a11yBusy,
		Fill:   []a11yField{{"#email", "patient@example.com"}, {"#permission", "on"}},
		Submit: `#signup-form button[type="submit"]`, Status: 503},
	{Name: "request received, reloaded", Path: a11yPath("/waitlist/demo/received")},
	{Name: "privacy", Path: a11yPath("/privacy")},
	{Name: "manage (removal)", Path: a11yPath("/manage/")},
	{Name: "manage (removal) without JavaScript", Path: a11yPath("/manage/"), NoJS: true},
	{Name: "removal processed", Path: a11yPath("/manage/"),
		Fill:   []a11yField{{"#token", strings.Repeat("0", 64)}},
		Submit: `#remove-form button[type="submit"]`},
	{Name: "manage with a malformed token", Path: a11yPath("/manage/"),
		Fill:   []a11yField{{"#token", "not-a-token"}},
		Submit: `#remove-form button[type="submit"]`, Status: 400},
	{Name: "sign-in", Path: a11yPath("/sign-in")},
	{Name: "development sign-in link with another key", Path: a11yPath("/dev/sign-in?key=not-this-start-s-key"), Status: 403},
	{Name: "sign-in with an error", Path: a11yPath("/sign-in"),
		// The browser lets a double dot through; the address grammar does not.
		Fill:   []a11yField{{`[data-testid="dev-sign-in"] input[name="email"]`, "a..b@example.com"}},
		Submit: `[data-testid="dev-sign-in"] button[type="submit"]`, Status: 400},
	{Name: "redeem, signed out", Path: a11yPath("/redeem")},

	// Applicant and recipient pages.
	{Name: "my waitlists (/me)", As: "applicant@example.com", Path: func(tb testing.TB, e *a11yEnv) string {
		const email = "applicant@example.com"
		e.Kit.Entry(tb, e.App.Demo, email)
		e.Kit.Grant(tb, e.program(tb, "a11y-me-active"), email, identity.DevUserID(email))
		e.Kit.Invite(tb, e.program(tb, "a11y-me-invited"), email, true)
		p := e.program(tb, "a11y-me-declined")
		id := e.Kit.Entry(tb, p, email)
		if _, err := e.App.DB.DeclineEntry(context.Background(), e.Kit.Owner, p.ID, id, store.Decision{Reason: "capacity"}); err != nil {
			tb.Fatalf("decline: %v", err)
		}
		return "/me"
	}},
	{Name: "my waitlists, none yet", As: "newcomer@example.com", Path: a11yPath("/me")},
	{Name: "withdraw confirmation", As: "leaver@example.com", Path: func(tb testing.TB, e *a11yEnv) string {
		p := e.program(tb, "a11y-withdraw")
		e.Kit.Entry(tb, p, "leaver@example.com")
		return "/me/waitlist/" + p.Slug + "/withdraw"
	}},
	{Name: "signed in", As: "redeemer@example.com", Path: a11yPath("/sign-in?redirect_url=%2Fredeem")},
	{Name: "account", As: "redeemer@example.com", Path: a11yPath("/me/account")},
	{Name: "redeem, signed in", As: "redeemer@example.com", Path: a11yPath("/redeem")},
	{Name: "redeem with a wrong code", As: "redeemer@example.com", Path: a11yPath("/redeem"),
		Fill:   []a11yField{{"#code", strings.Repeat("Ab", 21) + "A"}},
		Submit: `#redeem-form button[type="submit"]`, Status: 404},
	{Name: "my waitlists, invitation being prepared", As: "prepared@example.com", Path: func(tb testing.TB, e *a11yEnv) string {
		e.Kit.Invite(tb, e.program(tb, "a11y-me-prepared"), "prepared@example.com", false)
		return "/me"
	}},
	{Name: "redeem a code whose send is not recorded", As: "early@example.com", Path: func(tb testing.TB, e *a11yEnv) string {
		inv := e.Kit.Invite(tb, e.program(tb, "a11y-redeem-early"), "early@example.com", false)
		e.Code = inv.Code
		return "/redeem"
	}, Fill: []a11yField{{"#code", a11yCode}}, Submit: `#redeem-form button[type="submit"]`, Status: 404},
	{Name: "private content", As: "reader@example.com", Path: func(tb testing.TB, e *a11yEnv) string {
		const email = "reader@example.com"
		p := e.program(tb, "a11y-private")
		e.Kit.Asset(tb, p, "map.png", "image/png", a11yPNG(tb))
		e.Kit.Grant(tb, p, email, identity.DevUserID(email))
		return "/early-access/" + p.Slug
	}},

	// Owner console.
	{Name: "owner home", As: a11yOwner, Path: a11yPath("/owner")},
	{Name: "owner home, create form with an error", As: a11yOwner, Path: a11yPath("/owner"),
		Fill:   []a11yField{{`[data-testid="create-program"]`, ""}, {"#name", "Second demo"}, {"#slug", "demo"}, {"#purpose", "A second demo."}},
		Submit: `[data-testid="create-program"] button[type="submit"]`, Status: 409},
	{Name: "program overview", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		return "/owner/programs/" + e.App.Demo.ID
	}},
	{Name: "program section: settings", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		return "/owner/programs/" + e.App.Demo.ID + "/settings"
	}},
	{Name: "program section: content", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		return "/owner/programs/" + e.App.Demo.ID + "/content"
	}},
	{Name: "program section: invitations", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		p := e.program(tb, "a11y-invitations")
		e.Kit.Invite(tb, p, "invited@example.com", false)
		e.Kit.Invite(tb, p, "sent@example.com", true)
		return "/owner/programs/" + p.ID + "/invitations"
	}},
	{Name: "workspace team", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		return "/owner/workspaces/" + e.App.Demo.WorkspaceID + "/team"
	}},
	{Name: "program page, queue full", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		p := a11yCapped(tb, e, "a11y-owner-full", store.ProgramSettings{QueueCap: new(1)})
		e.Kit.Entry(tb, p, "first@example.com")
		return "/owner/programs/" + p.ID
	}},
	{Name: "program page, the hour's intake used up", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		p := a11yCapped(tb, e, "a11y-owner-intake", store.ProgramSettings{HourlyCap: new(1)})
		e.Kit.Entry(tb, p, "first@example.com")
		return "/owner/programs/" + p.ID
	}},
	{Name: "owner home with a full program", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		p := a11yCapped(tb, e, "a11y-home-full", store.ProgramSettings{QueueCap: new(1)})
		e.Kit.Entry(tb, p, "first@example.com")
		return "/owner"
	}},
	{Name: "retired program page, retirement being finished", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		p := e.program(tb, "a11y-retired")
		e.Kit.Entry(tb, p, "waiting@example.com")
		e.retire(tb, p)
		return "/owner/programs/" + p.ID
	}},
	{Name: "retired program page, retirement finished", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		p := e.program(tb, "a11y-retired-done")
		e.Kit.Entry(tb, p, "waiting@example.com")
		e.retire(tb, p)
		if _, err := e.App.DB.FinishRetirements(context.Background()); err != nil {
			tb.Fatalf("finish the retirement: %v", err)
		}
		return "/owner/programs/" + p.ID
	}},
	{Name: "workspace settings", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		return "/owner/workspaces/" + e.App.Demo.WorkspaceID
	}},
	{Name: "workspace settings with an error", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		return "/owner/workspaces/" + e.App.Demo.WorkspaceID
	}, Fill: []a11yField{{"#contact", "http://not-https.example.com"}},
		Submit: `[data-testid="workspace-form"] button[type="submit"]`, Status: 400},
	{Name: "queue", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		p := e.program(tb, "a11y-queue")
		e.Kit.Entry(tb, p, "waiting@example.com")
		mustInsertEntry(tb, e.App.DB, p, "chosen@example.com", store.StateSelected)
		mustInsertEntry(tb, e.App.DB, p, "declined@example.com", store.StateDeclined)
		e.Kit.Invite(tb, p, "invited@example.com", false)
		e.Kit.Grant(tb, p, "active@example.com", identity.DevUserID("active@example.com"))
		return "/owner/programs/" + p.ID + "/entries"
	}},
	{Name: "entry, waiting", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		p := e.program(tb, "a11y-entry-waiting")
		return "/owner/programs/" + p.ID + "/entries/" + e.Kit.Entry(tb, p, "waiting@example.com")
	}},
	{Name: "entry with the same address in another letter case", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		p := e.program(tb, "a11y-entry-case")
		e.Kit.Entry(tb, p, "liam@example.com")
		return "/owner/programs/" + p.ID + "/entries/" + e.Kit.Entry(tb, p, "Liam@example.com")
	}},
	{Name: "entry, invited, send not recorded", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		p := e.program(tb, "a11y-entry-invited")
		return "/owner/programs/" + p.ID + "/entries/" + e.Kit.Invite(tb, p, "invited@example.com", false).EntryID
	}},
	{Name: "entry, active", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		p := e.program(tb, "a11y-entry-active")
		e.Kit.Grant(tb, p, "active@example.com", identity.DevUserID("active@example.com"))
		return "/owner/programs/" + p.ID + "/entries/" + a11yEntryID(tb, e, p, "active@example.com")
	}},
	{Name: "entry of a retired program, invited", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		p := e.program(tb, "a11y-entry-retired")
		id := e.Kit.Invite(tb, p, "invited@example.com", false).EntryID
		e.retire(tb, p)
		return "/owner/programs/" + p.ID + "/entries/" + id
	}},
	{Name: "queue of a retired program", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		p := e.program(tb, "a11y-queue-retired")
		e.Kit.Entry(tb, p, "waiting@example.com")
		e.retire(tb, p)
		return "/owner/programs/" + p.ID + "/entries"
	}},
	{Name: "invitation code page", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		p := e.program(tb, "a11y-issue")
		return "/owner/programs/" + p.ID + "/entries/" + mustInsertEntry(tb, e.App.DB, p, "chosen@example.com", store.StateSelected)
	}, Submit: `[data-testid="issue-form"] button[type="submit"]`},
	{Name: "queue search", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		p := e.program(tb, "a11y-search")
		e.Kit.Entry(tb, p, "waiting@example.com")
		e.Kit.Entry(tb, p, "wanda@example.com")
		return "/owner/programs/" + p.ID + "/entries?q=wa&choose=all"
	}},
	{Name: "bulk decline confirmation", As: a11yOwner, NoJS: true, Path: func(tb testing.TB, e *a11yEnv) string {
		p := e.program(tb, "a11y-bulk-decline")
		e.Kit.Entry(tb, p, "waiting@example.com")
		mustInsertEntry(tb, e.App.DB, p, "chosen@example.com", store.StateSelected)
		return "/owner/programs/" + p.ID + "/entries?choose=all"
	}, Submit: `[data-testid="bulk-decline-submit"]`},
	{Name: "decline confirmation", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		p := e.program(tb, "a11y-confirm-decline")
		return "/owner/programs/" + p.ID + "/entries/" + e.Kit.Entry(tb, p, "waiting@example.com") + "/decline"
	}},
	{Name: "withdraw confirmation (owner)", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		p := e.program(tb, "a11y-confirm-withdraw")
		return "/owner/programs/" + p.ID + "/entries/" + e.Kit.Entry(tb, p, "waiting@example.com") + "/withdraw"
	}},
	{Name: "revoke invitation confirmation", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		p := e.program(tb, "a11y-confirm-revoke")
		inv := e.Kit.Invite(tb, p, "invited@example.com", false)
		return "/owner/programs/" + p.ID + "/entries/" + inv.EntryID + "/invitations/" + inv.ID + "/revoke"
	}},
	{Name: "revoke access confirmation", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		p := e.program(tb, "a11y-confirm-grant")
		grant := e.Kit.Grant(tb, p, "active@example.com", identity.DevUserID("active@example.com"))
		return "/owner/programs/" + p.ID + "/entries/" + a11yEntryID(tb, e, p, "active@example.com") + "/grants/" + grant + "/revoke"
	}},
	{Name: "retire confirmation", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		return "/owner/programs/" + e.program(tb, "a11y-confirm-retire").ID + "/retire"
	}},
	{Name: "retire confirmation refused", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		return "/owner/programs/" + e.program(tb, "a11y-retire-refused").ID + "/retire"
	}, Fill: []a11yField{{"#confirm-text", "not-the-name"}}, Submit: `[data-testid="confirm-submit"]`, Status: 400},
	{Name: "settings refused, changes marked not saved", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		return "/owner/programs/" + e.program(tb, "a11y-settings-refused").ID + "/settings"
	}, Fill: []a11yField{{`[data-testid="settings-form"] input[name="expectedRevision"]`, "9999"}, {"#settings-queueCap", "77"}, {"#accessEnabled", "off"}},
		Submit: `[data-testid="settings-form"] button[type="submit"]`, Status: 409},
	{Name: "entry, record the send refused", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		p := e.program(tb, "a11y-delivery-refused")
		return "/owner/programs/" + p.ID + "/entries/" + e.Kit.Invite(tb, p, "invited@example.com", false).EntryID
	}, Fill: []a11yField{{"#channel", "chat"}, {"#reference", "sent to invited@example.com"}},
		Submit: `[data-testid="delivery-form"] button[type="submit"]`, Status: 400},
	{Name: "audit log", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		p := e.program(tb, "a11y-audit")
		e.Kit.Invite(tb, p, "invited@example.com", true)
		return "/owner/programs/" + p.ID + "/events"
	}},
	{Name: "audit log filtered by type and entry", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		p := e.program(tb, "a11y-audit-filtered")
		inv := e.Kit.Invite(tb, p, "invited@example.com", true)
		return "/owner/programs/" + p.ID + "/events?type=invite_issued&entry=" + inv.EntryID
	}},
	{Name: "audit log filter with an error", As: a11yOwner, Path: func(tb testing.TB, e *a11yEnv) string {
		return "/owner/programs/" + e.App.Demo.ID + "/events"
	}, Fill: []a11yField{{`[data-testid="filter-entry"]`, "nobody@example.com"}},
		Submit: `[data-testid="filter-submit"]`, Status: 400},
	{Name: "retired program's public page", Path: func(tb testing.TB, e *a11yEnv) string {
		p := e.program(tb, "a11y-retired-public")
		e.retire(tb, p)
		return "/waitlist/" + p.Slug
	}},

	// Error pages.
	{Name: "not found (404)", Path: a11yPath("/no-such-page"), Status: 404},
	{Name: "not found, signed in (404)", As: a11yOwner, Path: a11yPath("/owner/programs/no-such-program"), Status: 404},
	{Name: "method not allowed (405)", Path: a11yPath("/manage/remove"), Status: 405},
	{Name: "expired form (403)", As: a11yOwner, Path: a11yPath("/owner"),
		Fill:   []a11yField{{`#sign-out-form input[name="csrf"]`, "expired"}},
		Submit: `#sign-out-form button[type="submit"]`, Status: 403},
}

// a11yCapped creates an open program with the given caps (at its
// current revision).
func a11yCapped(tb testing.TB, e *a11yEnv, slug string, caps store.ProgramSettings) *store.Program {
	tb.Helper()
	p := e.program(tb, slug)
	caps.ExpectedRevision = p.Revision
	p, err := e.App.DB.UpdateProgram(context.Background(), e.Kit.Owner, p.ID, caps)
	if err != nil {
		tb.Fatalf("cap %s: %v", slug, err)
	}
	return p
}

// a11yPNG is a small PNG image, for a private file.
func a11yPNG(tb testing.TB) []byte {
	tb.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		tb.Fatalf("encode PNG: %v", err)
	}
	return b.Bytes()
}

// a11yEntryID finds the entry of email in program p.
func a11yEntryID(tb testing.TB, e *a11yEnv, p *store.Program, email string) string {
	tb.Helper()
	var id string
	if err := e.App.DB.View(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRow(`SELECT id FROM entries WHERE program_id = ? AND email_key = ?`, p.ID, email).Scan(&id)
	}); err != nil {
		tb.Fatalf("find the entry of %s: %v", email, err)
	}
	return id
}

// a11yView is one rendering the audit checks: a colour scheme at a width.
type a11yView struct {
	Scheme        string
	Width, Height int64
	// Keyboard walks the page with Tab in this view.
	Keyboard bool
	// ColourOnly runs only axeColourRules in this view.
	ColourOnly bool
}

func (v a11yView) String() string { return fmt.Sprintf("%s, %d px", v.Scheme, v.Width) }

// a11yViews: light and dark at a desktop and a phone width. Every rule runs
// in the light views; a colour scheme changes colours only, so the dark
// views run the rules about colour (axeColourRules), which saves a third of
// the audit's time. The keyboard walk runs once per width, in each scheme
// once.
var a11yViews = []a11yView{
	{Scheme: "light", Width: 1280, Height: 800, Keyboard: true},
	{Scheme: "dark", Width: 1280, Height: 800, ColourOnly: true},
	{Scheme: "light", Width: phoneWidth, Height: phoneHeight},
	{Scheme: "dark", Width: phoneWidth, Height: phoneHeight, Keyboard: true, ColourOnly: true},
}

// axeColourRules are the rules of axeTags whose outcome depends on colours.
var axeColourRules = []string{"color-contrast", "link-in-text-block"}

// a11yLanes is how many tabs audit the rows side by side, each with an app
// of its own; row i goes to lane i mod a11yLanes.
const a11yLanes = 3

// Budgets of the audit's steps. Each only bounds a step that never ends, and
// names the step when it runs out; a row of four views takes a few seconds
// on a quiet machine and under a minute on a machine loaded many times over.
const (
	// a11yLoadBudget bounds one page load: a navigation or a form sent.
	a11yLoadBudget = 2 * time.Minute
	// a11yAxeBudget bounds one run of axe-core on a page in one view.
	a11yAxeBudget = 2 * time.Minute
	// a11yRowBudget is each row's share of its lane's deadline.
	a11yRowBudget = 5 * time.Minute
)

// TestA11y_EveryPageHasNoWCAGViolationsAndWorksByKeyboard audits every row
// of a11yPages in every view.
func TestA11y_EveryPageHasNoWCAGViolationsAndWorksByKeyboard(t *testing.T) {
	t.Parallel()
	axe := mustReadAxe(t)
	start := time.Now()
	// Where the time goes, for the log line at the end (summed over lanes).
	var mu sync.Mutex
	var reaching, auditing, walking time.Duration
	timed := func(d *time.Duration, f func()) {
		t0 := time.Now()
		f()
		mu.Lock()
		*d += time.Since(t0)
		mu.Unlock()
	}
	// The lanes run in parallel; t.Run returns when all have ended.
	t.Run("lanes", func(t *testing.T) {
		for lane := range a11yLanes {
			var rows []a11yPage
			for i := lane; i < len(a11yPages); i += a11yLanes {
				rows = append(rows, a11yPages[i])
			}
			t.Run(fmt.Sprintf("lane %d", lane+1), func(t *testing.T) {
				t.Parallel()
				app := MustStartApp(t)
				env := &a11yEnv{App: app, Kit: newAccessKit(app)}
				ctx := browser.MustNew(t, browser.WithTimeout(time.Duration(len(rows))*a11yRowBudget))
				holdDevKey(t, ctx, app)
				signedInAs := a11ySignedOut
				for _, pg := range rows {
					t.Run(pg.Name, func(t *testing.T) {
						if pg.As != signedInAs {
							a11ySignIn(t, ctx, app, pg.As)
							signedInAs = pg.As
						}
						a11yAuditRow(t, ctx, axe, env, pg, timed, &reaching, &auditing, &walking)
					})
				}
			})
		}
	})
	t.Logf("audited %d pages in %d views in %v in %d lanes: reaching them %v, axe-core %v, keyboard walks %v",
		len(a11yPages), len(a11yViews), time.Since(start).Round(time.Millisecond), a11yLanes,
		reaching.Round(time.Millisecond), auditing.Round(time.Millisecond), walking.Round(time.Millisecond))
}

// a11yAuditRow prepares the row's state, opens its page and audits it in
// every view, adding the time spent to reaching, auditing and walking.
func a11yAuditRow(t *testing.T, ctx context.Context, axe string, env *a11yEnv, pg a11yPage,
	timed func(*time.Duration, func()), reaching, auditing, walking *time.Duration) {
	t.Helper()
	p := pg.Path(t, env)
	if err := setScriptsDisabled(ctx, pg.NoJS); err != nil {
		t.Fatal(err)
	}
	timed(reaching, func() { a11yReach(t, ctx, env, pg, p) })
	// axe-core and the keyboard walk are scripts: with the page loaded as a
	// visitor without JavaScript sees it, scripts are turned back on to
	// audit it. The document stays as it was parsed (<noscript> content
	// shown, the page's own scripts not run).
	if err := setScriptsDisabled(ctx, false); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](axe)); err != nil {
		t.Fatalf("load axe-core into %s: %v", p, err)
	}
	for _, v := range a11yViews {
		if err := setView(ctx, v); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		var violations []string
		timed(auditing, func() { violations = runAxe(t, ctx, v) })
		for _, f := range violations {
			t.Errorf("%s [%s]: %s", pg.Name, v, f)
		}
		if dir := os.Getenv("ADMIT_A11Y_SHOTS"); dir != "" {
			browser.Screenshot(t, ctx, filepath.Join(dir, a11yFileName(pg.Name)+"-"+v.Scheme+"-"+strconv.Itoa(int(v.Width))+".png"))
		}
		if v.Keyboard {
			var problems []string
			timed(walking, func() { problems = walkKeyboard(t, ctx) })
			for _, f := range problems {
				t.Errorf("%s [%s]: keyboard: %s", pg.Name, v, f)
			}
		}
	}
	if t.Failed() {
		mustScreenshot(t, ctx, "a11y-"+a11yFileName(pg.Name))
	}
}

// a11yFileName turns a page's name into a file name.
func a11yFileName(name string) string {
	return strings.NewReplacer(" ", "-", "/", "", "(", "", ")", "", ",", "").Replace(name)
}

// mustReadAxe returns the vendored axe-core source, checking its version.
func mustReadAxe(tb testing.TB) string {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "axe", "axe.min.js"))
	if err != nil {
		tb.Fatalf("read axe-core: %v", err)
	}
	if !strings.HasPrefix(string(b), "/*! axe v"+axeVersion+"\n") {
		tb.Fatalf("testdata/axe/axe.min.js is not axe-core %s", axeVersion)
	}
	return string(b)
}

// a11ySignIn signs the browser out and, unless email is a11ySignedOut, in
// again as email through the development sign-in form.
func a11ySignIn(tb testing.TB, ctx context.Context, app *testApp, email string) {
	tb.Helper()
	// The cookies of this tab's browser context only: other tests' tabs
	// share the browser.
	if _, err := chromedp.CallBrowser(ctx, storage.ClearCookies,
		storage.ClearCookiesParams{BrowserContextID: chromedp.FromContext(ctx).BrowserContextID}); err != nil {
		tb.Fatalf("sign out: %v", err)
	}
	// The person at this machine opened the console's link before.
	holdDevKey(tb, ctx, app)
	if email == a11ySignedOut {
		return
	}
	mustNavigate(tb, ctx, "open /sign-in", chromedp.Navigate(app.URL+"/sign-in"))
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`[data-testid="dev-sign-in"] input[name="email"]`), email)); err != nil {
		tb.Fatalf("type the email: %v", err)
	}
	mustNavigate(tb, ctx, "sign in as "+email, chromedp.Click(chromedp.CSS(`[data-testid="dev-sign-in"] button[type="submit"]`)))
	if got, want := mustCount(tb, ctx, `#sign-out-form`), 1; got != want {
		tb.Fatalf("sign-out forms after signing in as %s=%d, want %d", email, got, want)
	}
}

// a11yReach opens the row's page: the path, then the form it fills and
// submits, if any. It fails unless the audited document has the row's
// status.
func a11yReach(tb testing.TB, ctx context.Context, env *a11yEnv, pg a11yPage, p string) {
	tb.Helper()
	app := env.App
	want := pg.Status
	if want == 0 {
		want = 200
	}
	openWant := want
	if pg.Submit != "" {
		openWant = 200
	}
	a11yLoad(tb, ctx, "open "+p, openWant, chromedp.Navigate(app.URL+p))
	if pg.Submit == "" {
		return
	}
	for _, f := range pg.Fill {
		if f.Value == a11yCode {
			f.Value = env.Code
		}
		js := fmt.Sprintf(`(() => {
			const el = document.querySelector(%s);
			if (!el) return false;
			for (let d = el.closest("details"); d; d = d.parentElement.closest("details")) d.open = true;
			if (el.tagName === "DETAILS") return true;
			if (el.type === "checkbox" || el.type === "radio") el.checked = %s === "on";
			else el.value = %s;
			return true;
		})()`, jsString(f.Selector), jsString(f.Value), jsString(f.Value))
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		if err != nil || !ok {
			tb.Fatalf("fill %s: found=%v %v", f.Selector, ok, err)
		}
	}
	if pg.BeforeSubmit != nil {
		pg.BeforeSubmit(tb, app)
	}
	a11yLoad(tb, ctx, "press "+pg.Submit, want, chromedp.Click(chromedp.CSS(pg.Submit)))
}

// a11yLoad runs steps that load one document and fails unless it answers
// want.
func a11yLoad(tb testing.TB, ctx context.Context, what string, want int64, steps ...chromedp.Action[chromedp.Void]) {
	tb.Helper()
	// A press that loads nothing (a form the browser refuses to send)
	// fails here instead of waiting out the test's deadline.
	loadCtx, cancel := context.WithTimeout(ctx, a11yLoadBudget)
	defer cancel()
	resp, err := chromedp.RunResponse(loadCtx, steps...)
	if errors.Is(err, context.DeadlineExceeded) {
		tb.Fatalf("%s: no document loaded within %v", what, a11yLoadBudget)
	}
	if err != nil {
		tb.Fatalf("%s: %v", what, err)
	}
	if resp == nil {
		tb.Fatalf("%s: no document response", what)
		return
	}
	if resp.Status != want {
		tb.Fatalf("%s: %s answered %d, want %d", what, resp.URL, resp.Status, want)
	}
}

// setScriptsDisabled turns the tab's script execution off or on.
func setScriptsDisabled(ctx context.Context, off bool) error {
	if _, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled,
		emulation.SetScriptExecutionDisabledParams{Value: off}); err != nil {
		return fmt.Errorf("set script execution disabled=%v: %w", off, err)
	}
	return nil
}

// setView sizes the viewport and emulates the colour scheme, with reduced
// motion so that no transition is caught halfway between two colours.
func setView(ctx context.Context, v a11yView) error {
	opts := []chromedp.EmulateViewportOption{chromedp.EmulatePortrait}
	if v.Width < 800 {
		opts = append(opts, chromedp.EmulateMobile)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(v.Width, v.Height, opts...)); err != nil {
		return fmt.Errorf("viewport: %w", err)
	}
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{
			{Name: "prefers-color-scheme", Value: v.Scheme},
			{Name: "prefers-reduced-motion", Value: "reduce"},
		},
	}); err != nil {
		return fmt.Errorf("colour scheme: %w", err)
	}
	scheme, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`matchMedia("(prefers-color-scheme: `+v.Scheme+`)").matches`))
	if err != nil || !scheme {
		return fmt.Errorf("the page does not see prefers-color-scheme %s (%v)", v.Scheme, err)
	}
	return nil
}

// mustJSON encodes v as JSON.
func mustJSON(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// axeViolation is one failed axe-core rule on a page.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target  string `json:"target"`
		HTML    string `json:"html"`
		Summary string `json:"summary"`
	} `json:"nodes"`
}

// runAxe runs axe-core on the page in its current view, v, and describes
// each violation: the rule, and each element by its selector and markup.
func runAxe(tb testing.TB, ctx context.Context, v a11yView) []string {
	tb.Helper()
	view := v.String()
	runOnly := `{type: "tag", values: ` + mustJSON(tb, axeTags) + `}`
	if v.ColourOnly {
		runOnly = `{type: "rule", values: ` + mustJSON(tb, axeColourRules) + `}`
	}
	js := `axe.run(document, {runOnly: ` + runOnly + `, resultTypes: ["violations"]})
		.then(r => r.violations.map(v => ({id: v.id, impact: v.impact || "", help: v.help,
			nodes: v.nodes.map(n => ({target: JSON.stringify(n.target), html: n.html, summary: n.failureSummary || ""}))})))`
	runCtx, cancel := context.WithTimeout(ctx, a11yAxeBudget)
	defer cancel()
	vs, err := chromedp.Run(runCtx, chromedp.Evaluate[[]axeViolation](js, chromedp.EvalAwaitPromise))
	if errors.Is(err, context.DeadlineExceeded) {
		tb.Fatalf("axe-core did not finish its run [%s] within %v", view, a11yAxeBudget)
	}
	if err != nil {
		tb.Fatalf("run axe-core [%s]: %v", view, err)
	}
	var out []string
	for _, v := range vs {
		for _, n := range v.Nodes {
			out = append(out, fmt.Sprintf("rule %s (%s): %s\n\telement %s\n\t%s\n\t%s",
				v.ID, v.Impact, v.Help, n.Target, n.HTML, strings.ReplaceAll(n.Summary, "\n", "\n\t")))
		}
	}
	return out
}

// keyboardProbe lists the page's interactive elements and numbers them in
// document order, then focuses the first, so that Tab starts from it.
const keyboardProbe = `(() => {
	const sel = 'a[href], area[href], button, input, select, textarea, summary, iframe, [tabindex], [contenteditable]';
	const seenRadio = new Set();
	const list = [...document.querySelectorAll(sel)].filter(el => {
		if (el.disabled || el.tabIndex < 0 || el.type === "hidden") return false;
		if (el.closest("[inert]")) return false;
		if (!el.checkVisibility({visibilityProperty: true, opacityProperty: false})) return false;
		if (el.tagName === "SUMMARY" && el.parentElement.tagName === "DETAILS" && el.parentElement.querySelector(":scope > summary") !== el) return false;
		if (el.type === "radio" && el.name) {
			const group = (el.form ? el.form.id : "") + "/" + el.name;
			if (seenRadio.has(group)) return false;
			seenRadio.add(group);
		}
		return true;
	});
	window.__a11yList = list;
	list.forEach((el, i) => { el.__a11yIndex = i; });
	const positive = list.filter(el => el.tabIndex > 0).map(el => el.outerHTML.slice(0, 160));
	if (list.length) list[0].focus();
	window.__a11yPrev = list[0] || null;
	window.__a11yVisited = new Set();
	return {count: list.length, positive};
})()`

// keyboardStep describes the element Tab moved focus to.
const keyboardStep = `(() => {
	const el = document.activeElement;
	if (!el || el === document.body || el === document.documentElement) return {done: true};
	const cs = getComputedStyle(el);
	const seen = c => c && c !== "transparent" && !/rgba\([^)]*,\s*0\)$/.test(c);
	const outline = cs.outlineStyle !== "none" && parseFloat(cs.outlineWidth) >= 1 && seen(cs.outlineColor);
	// A box-shadow is visible when one of its shadows has a colour and
	// a spread or blur.
	const shadow = cs.boxShadow !== "none" && cs.boxShadow.split(/,(?![^(]*\))/).some(s => {
		const colour = (s.match(/rgba?\([^)]*\)/) || ["transparent"])[0];
		const lengths = (s.replace(/rgba?\([^)]*\)/, "").match(/-?[\d.]+px/g) || []).map(parseFloat);
		return seen(colour) && lengths.slice(2).some(n => n > 0);
	});
	// The first box of the element: a link that wraps has one per line.
	const r = el.getClientRects()[0] || el.getBoundingClientRect();
	// The part of that box on screen: inside the window and inside every
	// ancestor that clips (a table that scrolls sideways). Its centre must
	// show the element, not something drawn over it.
	let obscured = "";
	if (r.width > 0 && r.height > 0) {
		let box = {l: r.left, t: r.top, r: r.right, b: r.bottom};
		const clip = q => { box = {l: Math.max(box.l, q.left), t: Math.max(box.t, q.top), r: Math.min(box.r, q.right), b: Math.min(box.b, q.bottom)}; };
		clip({left: 0, top: 0, right: innerWidth, bottom: innerHeight});
		for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
			const s = getComputedStyle(a);
			if (s.overflowX !== "visible" || s.overflowY !== "visible") clip(a.getBoundingClientRect());
		}
		if (box.r - box.l < 1 || box.b - box.t < 1) {
			obscured = "the edge of the window or of its scroll region: it is out of view";
		} else {
			const hit = document.elementFromPoint((box.l + box.r) / 2, (box.t + box.b) / 2);
			if (hit && hit !== el && !el.contains(hit) && !(el.labels && [...el.labels].some(l => l.contains(hit)))) obscured = hit.outerHTML.slice(0, 80);
		}
	}
	const prev = window.__a11yPrev;
	const backwards = !!prev && prev !== el && !!(el.compareDocumentPosition(prev) & Node.DOCUMENT_POSITION_FOLLOWING);
	const first = window.__a11yList[0] === el;
	window.__a11yPrev = el;
	if (el.__a11yIndex !== undefined) window.__a11yVisited.add(el.__a11yIndex);
	return {done: false, first, backwards, visible: outline || shadow, obscured,
		html: el.outerHTML.slice(0, 160), prev: prev ? prev.outerHTML.slice(0, 80) : ""};
})()`

// keyboardMissed lists the interactive elements Tab never reached.
const keyboardMissed = `window.__a11yList.filter((el, i) => !window.__a11yVisited.has(i)).map(el => el.outerHTML.slice(0, 160))`

// walkKeyboard tabs through the page from its first interactive element
// until focus leaves the page or comes back to the start. It reports an
// element that never gets focus, a focus that moves backwards in the
// document, a focused element with no visible outline or box-shadow, and
// one hidden under another element.
func walkKeyboard(tb testing.TB, ctx context.Context) []string {
	tb.Helper()
	type probe struct {
		Count    int      `json:"count"`
		Positive []string `json:"positive"`
	}
	pr, err := chromedp.Run(ctx, chromedp.Evaluate[probe](keyboardProbe))
	if err != nil {
		tb.Fatalf("list interactive elements: %v", err)
	}
	var out []string
	for _, h := range pr.Positive {
		out = append(out, "a positive tabindex changes the tab order: "+h)
	}
	type step struct {
		Done      bool   `json:"done"`
		First     bool   `json:"first"`
		Backwards bool   `json:"backwards"`
		Visible   bool   `json:"visible"`
		Obscured  string `json:"obscured"`
		HTML      string `json:"html"`
		Prev      string `json:"prev"`
	}
	// Room for every element, scrollable regions Chromium adds as tab
	// stops, and the way back to the start. Tab from the last element
	// leaves the page; the next one comes back to the first.
	outside := 0
	for i := 0; i < pr.Count+20 && outside < 3; i++ {
		if err := chromedp.Do(ctx, chromedp.KeyEvent("\t")); err != nil {
			tb.Fatalf("press Tab: %v", err)
		}
		s, err := chromedp.Run(ctx, chromedp.Evaluate[step](keyboardStep))
		if err != nil {
			tb.Fatalf("read the focus: %v", err)
		}
		if s.Done {
			outside++
			continue
		}
		outside = 0
		if !s.Visible {
			out = append(out, "no visible focus (outline or box-shadow) on "+s.HTML)
		}
		if s.Obscured != "" {
			out = append(out, "focused element "+s.HTML+" is hidden under "+s.Obscured)
		}
		if s.First {
			break
		}
		if s.Backwards {
			out = append(out, fmt.Sprintf("focus moves backwards in the page: from %s to %s", s.Prev, s.HTML))
		}
	}
	missed, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](keyboardMissed))
	if err != nil {
		tb.Fatalf("list unreached elements: %v", err)
	}
	for _, h := range missed {
		out = append(out, "Tab never reaches "+h)
	}
	return out
}

// a11yBadPage breaks one rule of each kind the audit checks: faint text, an
// unlabelled field, a button whose focus cannot be seen, a positive
// tabindex and a link covered by a fixed box.
const a11yBadPage = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Broken on purpose</title>
<style>
.faint { color: #bbb; background: #fff; }
#hidden-focus:focus, #hidden-focus:focus-visible { outline: none; box-shadow: none; }
.cover { position: fixed; top: 0; left: 0; width: 100%; height: 50vh; background: #fff; }
</style></head>
<body><main>
<h1>Broken on purpose</h1>
<a href="#top" id="covered">Covered link</a>
<div class="cover"></div>
<p class="faint">Text too faint to read.</p>
<input type="text" name="nolabel">
<button id="hidden-focus" type="button">No focus ring</button>
<a href="#x" tabindex="2">Jumps the queue</a>
</main></body></html>`

// TestA11y_AuditReportsEachKindOfProblem runs the audit's own checks on
// a11yBadPage, so that a check that stopped finding anything would fail
// here instead of passing every page.
func TestA11y_AuditReportsEachKindOfProblem(t *testing.T) {
	t.Parallel()
	axe := mustReadAxe(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, a11yBadPage)
	}))
	t.Cleanup(srv.Close)
	ctx := browser.MustNew(t)
	a11yLoad(t, ctx, "open the broken page", 200, chromedp.Navigate(srv.URL))
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](axe)); err != nil {
		t.Fatalf("load axe-core: %v", err)
	}
	if err := setView(ctx, a11yView{Scheme: "light", Width: 1280, Height: 800}); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(append(runAxe(t, ctx, a11yView{Scheme: "light", Width: 1280, Height: 800}), walkKeyboard(t, ctx)...), "\n")
	for _, want := range []string{
		"rule color-contrast", `<p class="faint">`,
		"rule label", `name="nolabel"`,
		"no visible focus (outline or box-shadow) on " + `<button id="hidden-focus"`,
		"a positive tabindex changes the tab order",
		`focused element <a href="#top" id="covered">Covered link</a> is hidden under <div class="cover">`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the audit did not report %q; it reported:\n%s", want, got)
		}
	}
	// A view that runs the colour rules only still finds faint text, and
	// runs no other rule.
	dark := a11yView{Scheme: "dark", Width: 1280, Height: 800, ColourOnly: true}
	if err := setView(ctx, dark); err != nil {
		t.Fatal(err)
	}
	colour := strings.Join(runAxe(t, ctx, dark), "\n")
	if !strings.Contains(colour, "rule color-contrast") {
		t.Errorf("the colour-only run did not report the faint text; it reported:\n%s", colour)
	}
	if strings.Contains(colour, "rule label") {
		t.Errorf("the colour-only run ran the other rules too:\n%s", colour)
	}
}
