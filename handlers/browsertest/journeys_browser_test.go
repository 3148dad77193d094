package browsertest

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"admit/internal/browser"
	"admit/internal/clerkfake"
	"admit/store"
)

// The full-waitlist and unsent-code journeys in a real browser, with
// JavaScript and without, each page looked at on a desktop and a phone.

// jrnWidths are the widths each changed page is shot at.
var jrnWidths = []struct {
	name          string
	width, height int64
	mobile        bool
}{{"desktop", 1280, 800, false}, {"phone", phoneW, phoneH, true}}

// jrnShoot takes a screenshot of the page at every width (ending on the
// phone's) and fails when the page scrolls sideways at one.
func jrnShoot(tb testing.TB, ctx context.Context, name string, js bool) {
	tb.Helper()
	mode := "js"
	if !js {
		mode = "nojs"
	}
	for _, w := range jrnWidths {
		opts := []chromedp.EmulateViewportOption{chromedp.EmulatePortrait}
		if w.mobile {
			opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateScale(2))
		}
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(w.width, w.height, opts...)); err != nil {
			tb.Fatalf("%s viewport: %v", w.name, err)
		}
		owWantFits(tb, ctx, name+" at "+w.name+" width", int(w.width))
		owScreenshot(tb, ctx, name+"-"+mode+"-"+w.name)
	}
}

// jrnBrowserAs starts Chromium signed in (Clerk mode) as userID.
func jrnBrowserAs(tb testing.TB, app *testApp, userID string, js bool) context.Context {
	tb.Helper()
	// Each journey keeps its browsers open through several steps of
	// another's: on a loaded machine that is longer than the default.
	opts := []browser.Option{browser.WithTimeout(5 * time.Minute)}
	if !js {
		opts = append(opts, browser.WithJavaScriptDisabled())
	}
	ctx := browser.MustNew(tb, opts...)
	if userID == "" {
		return ctx
	}
	if _, err := chromedp.Call(ctx, network.SetCookie, network.SetCookieParams{Name: "__session",
		Value: app.Clerk.Session(userID), URL: app.URL, Path: "/"}); err != nil {
		tb.Fatalf("set the session cookie: %v", err)
	}
	return ctx
}

// jrnSubmit presses a form's submit button and returns the status of the
// document it answers with.
func jrnSubmit(tb testing.TB, ctx context.Context, button string) int64 {
	tb.Helper()
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(button)))
	if err != nil {
		tb.Fatalf("submit %s: %v", button, err)
	}
	if resp == nil {
		tb.Fatalf("submit %s: no document response", button)
		return 0
	}
	return resp.Status
}

func TestFullWaitlist_BrowserShowsFullInPlaceOfTheFormAndA429WithNoRetryTime(t *testing.T) {
	jsModes(t, func(t *testing.T, js bool) {
		app := MustStartApp(t, withClerk())
		app.Clock.Set(time.Date(2026, 11, 29, 10, 37, 0, 0, time.UTC))
		ctx := jrnBrowserAs(t, app, "", js)

		// The form was loaded while there was room; the last place is
		// taken before it is sent.
		owLoad(t, ctx, "open the waitlist", chromedp.Navigate(app.URL+signupPath))
		if owCountIn(t, ctx, `#signup-form`) != 1 {
			t.Fatal("a waitlist with room does not offer the form")
		}
		fullDemo(t, app)
		if err := chromedp.Do(ctx,
			chromedp.SendKeys(chromedp.CSS(`#email`), "late@example.com"),
			chromedp.Click(chromedp.CSS(`#permission`)),
		); err != nil {
			t.Fatalf("fill the form: %v", err)
		}
		if got := jrnSubmit(t, ctx, `#signup-form button[type="submit"]`); got != http.StatusTooManyRequests {
			t.Fatalf("signup to a full queue answered %d, want 429", got)
		}
		summary := owEval[string](t, ctx, `document.querySelector('[data-testid="error-summary"]').textContent`)
		if !strings.Contains(summary, "This waitlist is full.") {
			t.Fatalf("the summary says %q", summary)
		}
		text := owEval[string](t, ctx, `document.body.innerText`)
		for _, no := range []string{"try again", "Try again", "after 11:00", "Too many"} {
			if strings.Contains(text, no) {
				t.Fatalf("the 429 page says %q:\n%s", no, text)
			}
		}
		if owCountIn(t, ctx, `#signup-form`) != 0 || owCountIn(t, ctx, `[data-testid="full"]`) != 1 {
			t.Fatal("the 429 page offers the form again instead of saying the waitlist is full")
		}
		if !owEval[bool](t, ctx, `document.activeElement && document.activeElement.id === "error-summary"`) {
			t.Error("the error summary does not have the focus")
		}
		jrnShoot(t, ctx, "full-429", js)

		// Any later visit says so in place of the form.
		owLoad(t, ctx, "open the full waitlist", chromedp.Navigate(app.URL+signupPath))
		if owCountIn(t, ctx, `#signup-form`) != 0 {
			t.Fatal("the full waitlist offers the form")
		}
		if got := owEval[string](t, ctx, `document.querySelector('[data-testid="full"]').textContent`); !strings.Contains(got, "This waitlist is full.") {
			t.Fatalf("the full notice reads %q", got)
		}
		jrnShoot(t, ctx, "full-waitlist", js)
		owLoad(t, ctx, "open the start page", chromedp.Navigate(app.URL+"/"))
		if owCountIn(t, ctx, `[data-testid="program-full"]`) != 1 || owCountIn(t, ctx, `a[role="button"][href="/waitlist/demo"]`) != 0 {
			t.Fatal("the start page offers to join the full waitlist")
		}
		jrnShoot(t, ctx, "full-home", js)

		// The owner sees why signups are refused, on the console and the
		// program's page; first the hour's intake, then the full queue.
		owner := jrnBrowserAs(t, app, app.OwnerID, js)
		mustSetDemo(t, app, func(s *store.ProgramSettings) { s.QueueCap = new(100); s.HourlyCap = new(1) })
		for _, page := range []string{"/owner", "/owner/programs/" + app.Demo.ID} {
			owLoad(t, owner, "open "+page, chromedp.Navigate(app.URL+page))
			if got := owEval[string](t, owner, `(document.querySelector('[data-testid="intake-used-up"]') || {}).textContent || ""`); got != "This hour's intake is used up until 11:00 UTC" {
				t.Fatalf("%s: the intake flag reads %q", page, got)
			}
			if owCountIn(t, owner, `[data-testid="queue-full"]`) != 0 {
				t.Fatalf("%s flags a full queue with room in it", page)
			}
		}
		mustSetDemo(t, app, func(s *store.ProgramSettings) { s.QueueCap = new(1) })
		for i, page := range []string{"/owner", "/owner/programs/" + app.Demo.ID} {
			owLoad(t, owner, "open "+page, chromedp.Navigate(app.URL+page))
			if got := owEval[string](t, owner, `(document.querySelector('[data-testid="queue-full"]') || {}).textContent || ""`); got != "Full: signups are refused" {
				t.Fatalf("%s: the full flag reads %q", page, got)
			}
			jrnShoot(t, owner, []string{"full-owner-home", "full-owner-program"}[i], js)
		}
	})
}

func TestUnsentCode_BrowserJourneyFromIssueToRecordedSend(t *testing.T) {
	jsModes(t, func(t *testing.T, js bool) {
		app := MustStartApp(t, withClerk())
		const email = "unsent@example.com"
		entryID := dlSelectedEntry(t, app, email)
		recipientID := "user_unsent"
		app.Clerk.SetUser(recipientID, clerkfake.Email{Address: email, Verified: true})
		entry := app.URL + "/owner/programs/" + app.Demo.ID + "/entries/" + entryID
		owner := jrnBrowserAs(t, app, app.OwnerID, js)

		// The issue step: the code page shows the code and, on the same
		// page, the form to record its send.
		owLoad(t, owner, "open the entry", chromedp.Navigate(entry))
		owLoad(t, owner, "issue", chromedp.Click(chromedp.CSS(`[data-testid="issue-submit"]`)))
		code := strings.TrimSpace(owEval[string](t, owner, `document.querySelector('[data-testid="invitation-code"]').textContent`))
		if len(code) != 43 {
			t.Fatalf("code %q", code)
		}
		if owCountIn(t, owner, `[data-testid="issued"] [data-testid="delivery-form"] #channel`) != 1 ||
			owCountIn(t, owner, `[data-testid="issued"] [data-testid="delivery-form"] #reference`) != 1 {
			t.Fatal("the code page does not offer to record the send")
		}
		if msg := owEval[string](t, owner, `document.querySelector('[data-testid="invitation-message"]').value`); !strings.Contains(msg, app.Demo.WorkspaceName+" invites you to the early access of "+app.Demo.Name+".") {
			t.Errorf("the message does not name the program and who runs it:\n%s", msg)
		}
		if owCountIn(t, owner, `[data-testid="record-next"] a[href="#delivery-form"]`) != 1 {
			t.Error("the code page does not lead on to recording the send")
		}
		jrnShoot(t, owner, "unsent-code-page", js)

		// The queue and the entry flag the missing send.
		owLoad(t, owner, "open the queue", chromedp.Navigate(app.URL+"/owner/programs/"+app.Demo.ID+"/entries"))
		row := `[data-testid="queue-row"][data-entry-id="` + entryID + `"]`
		if got := owEval[string](t, owner, `(document.querySelector('`+row+` [data-testid="send-not-recorded"]') || {}).textContent || ""`); got != "code issued — send not recorded" {
			t.Fatalf("the queue row's flag reads %q", got)
		}
		jrnShoot(t, owner, "unsent-queue", js)
		owLoad(t, owner, "open the entry", chromedp.Navigate(entry))
		if got := owEval[string](t, owner, `(document.querySelector('[data-testid="send-not-recorded"]') || {}).getAttribute("href")`); got != "#delivery-form" {
			t.Fatalf("the entry's flag leads to %q, want the delivery form", got)
		}
		jrnShoot(t, owner, "unsent-entry", js)

		// The recipient is told the truth: not sent yet, and the code not
		// active yet.
		me := jrnBrowserAs(t, app, recipientID, js)
		owLoad(t, me, "open /me", chromedp.Navigate(app.URL+"/me"))
		card := owEval[string](t, me, `document.querySelector('[data-testid="entry-card"][data-slug="demo"]').innerText`)
		if !strings.Contains(card, "Invitation being prepared") || strings.Contains(card, "Invitation sent") || strings.Contains(card, "has been sent") {
			t.Fatalf("/me card before the send:\n%s", card)
		}
		if owCountIn(t, me, `[data-testid="redeem-link"]`) != 0 {
			t.Fatal("/me offers to redeem a code that cannot work yet")
		}
		jrnShoot(t, me, "unsent-me", js)
		owLoad(t, me, "open /redeem", chromedp.Navigate(app.URL+"/redeem"))
		if err := chromedp.Do(me, chromedp.SendKeys(chromedp.CSS(`#code`), code)); err != nil {
			t.Fatal(err)
		}
		if got := jrnSubmit(t, me, `#redeem-form button[type="submit"]`); got != http.StatusNotFound {
			t.Fatalf("redeeming the unsent code answered %d, want 404", got)
		}
		if got := owEval[string](t, me, `document.body.innerText`); !strings.Contains(got, "This code is not active yet") || strings.Contains(got, code) {
			t.Fatalf("the redeem page after an unsent code:\n%s", got)
		}
		jrnShoot(t, me, "unsent-redeem", js)

		// The owner follows the flag to the form and records the send.
		if err := chromedp.Do(owner,
			chromedp.SetValue(chromedp.CSS(`#channel`), store.ChannelEmail),
			chromedp.SendKeys(chromedp.CSS(`#reference`), "ticket 42"),
		); err != nil {
			t.Fatal(err)
		}
		owLoad(t, owner, "record the send", chromedp.Click(chromedp.CSS(`[data-testid="delivery-form"] button[type="submit"]`)))
		if owCountIn(t, owner, `[data-testid="send-not-recorded"]`) != 0 {
			t.Fatal("the entry still flags the send after it was recorded")
		}

		// Now it is sent, and the code works.
		owLoad(t, me, "open /me", chromedp.Navigate(app.URL+"/me"))
		if got := owEval[string](t, me, `document.querySelector('[data-slug="demo"] [data-testid="entry-state"]').textContent`); got != "Invitation sent" {
			t.Fatalf("/me after the send says %q", got)
		}
		owLoad(t, me, "follow Redeem your code", chromedp.Click(chromedp.CSS(`[data-slug="demo"] [data-testid="redeem-link"]`)))
		if err := chromedp.Do(me, chromedp.SendKeys(chromedp.CSS(`#code`), code)); err != nil {
			t.Fatal(err)
		}
		owLoad(t, me, "redeem", chromedp.Click(chromedp.CSS(`#redeem-form button[type="submit"]`)))
		if loc := owEval[string](t, me, `location.pathname`); loc != "/early-access/demo" {
			t.Fatalf("after redeeming at %s", loc)
		}
	})
}
