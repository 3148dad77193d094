package browsertest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"admit/internal/browser"
	"admit/store"
)

// Owner forms the server refuses, and owner actions sent after the session
// ended, in a real browser with JavaScript on (at a desktop width) and off
// (at a phone width). The owner signs in with the development form.

// ofMode is one way of looking at the console.
type ofMode struct {
	name  string
	js    bool
	width int64
}

var ofModes = []ofMode{{"js on, 1280 px", true, 1280}, {"js off, 390 px", false, phoneWidth}}

// ofBrowser is Chromium in mode, signed in as the demo owner.
func ofBrowser(tb testing.TB, app *testApp, m ofMode) context.Context {
	tb.Helper()
	var opts []browser.Option
	if !m.js {
		opts = append(opts, browser.WithJavaScriptDisabled())
	}
	ctx := browser.MustNew(tb, opts...)
	height := int64(800)
	if m.width < 800 {
		height = phoneHeight
	}
	if err := setView(ctx, a11yView{Scheme: "light", Width: m.width, Height: height}); err != nil {
		tb.Fatal(err)
	}
	a11ySignIn(tb, ctx, app, "owner@example.test")
	return ctx
}

// ofFill sets form fields by CSS selector: a checkbox with "on" or "off",
// anything else with its value.
func ofFill(tb testing.TB, ctx context.Context, fields ...[2]string) {
	tb.Helper()
	for _, f := range fields {
		js := fmt.Sprintf(`(() => {
			const el = document.querySelector(%s);
			if (!el) return false;
			if (el.type === "checkbox") el.checked = %s === "on";
			else el.value = %s;
			return true;
		})()`, jsString(f[0]), jsString(f[1]), jsString(f[1]))
		if !owEval[bool](tb, ctx, js) {
			tb.Fatalf("no field %s", f[0])
		}
	}
}

// ofWantSummaryFocused fails unless the error summary has focus, is on
// screen, and links its first message to the field with id field.
func ofWantSummaryFocused(tb testing.TB, ctx context.Context, field, message string) {
	tb.Helper()
	owWaitFor(tb, ctx, "focus on the error summary", `!!document.activeElement && document.activeElement.id === "error-summary"`)
	top := owEval[float64](tb, ctx, `document.getElementById("error-summary").getBoundingClientRect().top`)
	if inner := owEval[float64](tb, ctx, `innerHeight`); top < 0 || top >= inner {
		tb.Errorf("the error summary is at %.0f px, off the %.0f px screen", top, inner)
	}
	if got := owEval[string](tb, ctx, `document.querySelector("#error-summary a").getAttribute("href")`); got != "#"+field {
		tb.Errorf("the summary links to %q, want #%s", got, field)
	}
	if got := mustText(tb, ctx, "#error-summary"); !strings.Contains(got, message) {
		tb.Errorf("the summary says %q, want it to mention %q", got, message)
	}
	if n := owCountIn(tb, ctx, "#"+field); n != 1 {
		tb.Errorf("the linked field #%s is on the page %d times", field, n)
	}
}

func TestOwnerForm_RefusedSettingsSaveIsSummarisedAndNeverShownAsSaved(t *testing.T) {
	for _, m := range ofModes {
		t.Run(m.name, func(t *testing.T) {
			app := MustStartApp(t)
			// A new program is closed and has no notice: opening it is refused.
			p, err := app.DB.CreateProgram(context.Background(), ownerActorOf(app.OwnerID), store.NewProgram{
				WorkspaceID: app.Demo.WorkspaceID, Slug: "closed-beta", Name: "Closed beta", Purpose: "Testing the beta.",
				QueueCap: 1000, HourlyCap: 100, SeatCap: 50, MaxInvitationDays: 14})
			if err != nil {
				t.Fatal(err)
			}
			ctx := ofBrowser(t, app, m)
			a11yLoad(t, ctx, "open the program's settings", 200, chromedp.Navigate(app.URL+"/owner/programs/"+p.ID+"/settings"))
			ofFill(t, ctx, [2]string{"#signupOpen", "on"}, [2]string{"#settings-queueCap", "77"})
			a11yLoad(t, ctx, "save the settings", 409,
				chromedp.Click(chromedp.CSS(`[data-testid="settings-form"] button[type="submit"]`)))
			ofWantSummaryFocused(t, ctx, "signupOpen", "Publish a notice before opening signup")
			if got := mustText(t, ctx, "#error-summary"); !strings.Contains(got, "Nothing in this form was saved") {
				t.Errorf("the summary does not say nothing was saved: %q", got)
			}
			// What the owner chose is kept, and each change says what is saved.
			if got := owEval[string](t, ctx, `document.getElementById("settings-queueCap").value`); got != "77" {
				t.Errorf("queue cap shows %q, want the typed 77", got)
			}
			if got := mustText(t, ctx, "#unsaved-signupOpen"); !strings.Contains(got, "Not saved") || !strings.Contains(got, "closed") {
				t.Errorf("the signup switch is not marked as unsaved: %q", got)
			}
			if got := mustText(t, ctx, "#unsaved-queueCap"); !strings.Contains(got, "1000") {
				t.Errorf("the queue cap is not marked as unsaved with the saved 1000: %q", got)
			}
			if !owEval[bool](t, ctx, `document.getElementById("signupOpen").getAttribute("aria-describedby").includes("unsaved-signupOpen")`) {
				t.Error("the switch is not described by its unsaved mark")
			}
			if n := owCountIn(t, ctx, `[data-testid="unsaved"]`); n != 2 {
				t.Errorf("%d fields are marked unsaved, want 2 (the switch and the queue cap)", n)
			}
			saved := mustOwnerProgram(t, app, p.ID)
			if saved.SignupOpen || saved.QueueCap != 1000 {
				t.Fatalf("saved signupOpen=%v queueCap=%d after a refusal", saved.SignupOpen, saved.QueueCap)
			}
			ofScreenshot(t, ctx, "owner-settings-refused-"+ofShot(m))
		})
	}
}

func TestOwnerForm_RefusedRecordTheSendIsSummarisedWithWhatWasTyped(t *testing.T) {
	for _, m := range ofModes {
		t.Run(m.name, func(t *testing.T) {
			app := MustStartApp(t)
			entryID := mustInsertEntry(t, app.DB, app.Demo, "sent@example.com", store.StateSelected)
			inv := owIssue(t, app, app.Demo.ID, entryID)
			ctx := ofBrowser(t, app, m)
			a11yLoad(t, ctx, "open the entry", 200, chromedp.Navigate(app.URL+"/owner/programs/"+app.Demo.ID+"/entries/"+entryID))
			// A reference holding an address is refused.
			ofFill(t, ctx, [2]string{"#channel", "chat"}, [2]string{"#reference", "told sent@example.com"})
			a11yLoad(t, ctx, "record the send", 400,
				chromedp.Click(chromedp.CSS(`[data-testid="delivery-form"] button[type="submit"]`)))
			ofWantSummaryFocused(t, ctx, "reference", "address")
			if got := owEval[string](t, ctx, `document.getElementById("reference").value`); got != "told sent@example.com" {
				t.Errorf("the reference shows %q, want what was typed", got)
			}
			if got := owEval[string](t, ctx, `document.getElementById("channel").value`); got != "chat" {
				t.Errorf("the channel shows %q, want chat", got)
			}
			if n := owCount(t, app, `SELECT count(*) FROM invitations WHERE id = ? AND delivery_recorded_at IS NOT NULL`, inv.Invitation.ID); n != 0 {
				t.Fatal("a refused send was recorded")
			}
			ofScreenshot(t, ctx, "owner-delivery-refused-"+ofShot(m))
		})
	}
}

func TestOwnerForm_RefusedRetirementIsAnsweredOnItsConfirmation(t *testing.T) {
	for _, m := range ofModes {
		t.Run(m.name, func(t *testing.T) {
			app := MustStartApp(t)
			ctx := ofBrowser(t, app, m)
			a11yLoad(t, ctx, "open the program's settings", 200, chromedp.Navigate(app.URL+"/owner/programs/"+app.Demo.ID+"/settings"))
			submit := `[data-testid="confirm-submit"]`
			if m.js {
				// The confirmation opens in a dialog.
				if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="retire-start"]`))); err != nil {
					t.Fatal(err)
				}
				owWaitFor(t, ctx, "the retirement dialog", `!!document.querySelector('dialog[open] [data-testid="confirm-text"]')`)
				submit = `dialog[open] ` + submit
			} else {
				a11yLoad(t, ctx, "ask to retire", 200, chromedp.Click(chromedp.CSS(`[data-testid="retire-start"]`)))
			}
			ofFill(t, ctx, [2]string{`[data-testid="confirm-text"]`, "demo-typo"})
			a11yLoad(t, ctx, "retire with the wrong name", 400, chromedp.Click(chromedp.CSS(submit)))
			ofWantSummaryFocused(t, ctx, "confirm-text", "Type the program's address name exactly")
			if got := owEval[string](t, ctx, `document.getElementById("confirm-text").value`); got != "demo-typo" {
				t.Errorf("the confirmation shows %q, want what was typed", got)
			}
			if got := owEval[string](t, ctx, `document.getElementById("confirm-text").getAttribute("aria-invalid")`); got != "true" {
				t.Errorf("the confirmation field is not marked invalid (%q)", got)
			}
			if mustOwnerProgram(t, app, app.Demo.ID).RetiredAt != nil {
				t.Fatal("retired after a wrong confirmation")
			}
			ofScreenshot(t, ctx, "owner-retire-refused-"+ofShot(m))
		})
	}
}

func TestOwnerForm_RefusedSelectionIsSwappedInPlaceWithTheSummaryFocused(t *testing.T) {
	for _, m := range ofModes {
		t.Run(m.name, func(t *testing.T) {
			app := MustStartApp(t)
			entryID := mustInsertEntry(t, app.DB, app.Demo, "chosen@example.com", store.StateWaiting)
			ctx := ofBrowser(t, app, m)
			a11yLoad(t, ctx, "open the entry", 200, chromedp.Navigate(app.URL+"/owner/programs/"+app.Demo.ID+"/entries/"+entryID))
			ofFill(t, ctx, [2]string{"#select-reason", "meets_policy"})
			// Someone else selects the entry while the page is open.
			if _, err := app.DB.SelectEntry(context.Background(), ownerActorOf(app.OwnerID), app.Demo.ID, entryID,
				store.Decision{Reason: "priority_cohort"}); err != nil {
				t.Fatal(err)
			}
			press := chromedp.Click(chromedp.CSS(`[data-testid="select-form"] button[type="submit"]`))
			if m.js {
				owEval[bool](t, ctx, `window.__samePage = true`)
				if err := chromedp.Do(ctx, press); err != nil {
					t.Fatal(err)
				}
			} else {
				a11yLoad(t, ctx, "select", 409, press)
			}
			ofWantSummaryFocused(t, ctx, "decide-title", "")
			if m.js && !owEval[bool](t, ctx, `window.__samePage === true`) {
				t.Error("the refusal loaded a new page instead of swapping the entry in place")
			}
			if got := owEntryState(t, app, entryID); got != store.StateSelected {
				t.Fatalf("entry state %q", got)
			}
			ofScreenshot(t, ctx, "owner-select-refused-"+ofShot(m))
		})
	}
}

func TestSessionEnded_FormPostWithoutJavaScriptReturnsToItsPageNotSaved(t *testing.T) {
	app := MustStartApp(t)
	entryID := mustInsertEntry(t, app.DB, app.Demo, "waiting@example.com", store.StateWaiting)
	m := ofMode{"js off, 390 px", false, phoneWidth}
	ctx := ofBrowser(t, app, m)
	queue := "/owner/programs/" + app.Demo.ID + "/entries?state=waiting"
	a11yLoad(t, ctx, "open the queue", 200, chromedp.Navigate(app.URL+queue))
	ofFill(t, ctx, [2]string{`input[name="entryIds"][value="` + entryID + `"]`, "on"}, [2]string{"#bulk-reason", "meets_policy"})
	ofEndSession(t, ctx, app)
	a11yLoad(t, ctx, "select after the session ended", 401, chromedp.Click(chromedp.CSS(`[data-testid="bulk-submit"]`)))
	if got := mustText(t, ctx, `[data-testid="error"]`); !strings.Contains(got, "was not saved") {
		t.Errorf("the page does not say the action was not saved: %q", got)
	}
	href := owEval[string](t, ctx, `document.querySelector('[data-testid="error-sign-in"]').getAttribute("href")`)
	if want := "/sign-in?redirect_url=" + url.QueryEscape(queue); href != want {
		t.Errorf("sign-in link %q, want %q", href, want)
	}
	ofAudit(t, ctx, m, "the 401 page of an action after the session ended")
	ofScreenshot(t, ctx, "session-ended-nojs")
	a11yLoad(t, ctx, "follow the sign-in link", 200, chromedp.Click(chromedp.CSS(`[data-testid="error-sign-in"]`)))
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`[data-testid="dev-sign-in"] input[name="email"]`), "owner@example.test")); err != nil {
		t.Fatal(err)
	}
	a11yLoad(t, ctx, "sign in again", 200, chromedp.Click(chromedp.CSS(`[data-testid="dev-sign-in"] button[type="submit"]`)))
	if got := owEval[string](t, ctx, `location.pathname + location.search`); got != queue {
		t.Errorf("sign-in returned to %q, want the queue page %q", got, queue)
	}
	if got := owEntryState(t, app, entryID); got != store.StateWaiting {
		t.Fatalf("the entry is %q: something was applied", got)
	}
	if strings.Contains(app.Logs.String(), "waiting@example.com") {
		t.Fatal("the log holds the address")
	}
}

func TestSessionEnded_HTMXActionSaysNotSavedAndReturnsToThePage(t *testing.T) {
	app := MustStartApp(t)
	entryID := mustInsertEntry(t, app.DB, app.Demo, "waiting@example.com", store.StateWaiting)
	m := ofMode{"js on, 1280 px", true, 1280}
	ctx := ofBrowser(t, app, m)
	entryPage := "/owner/programs/" + app.Demo.ID + "/entries/" + entryID
	a11yLoad(t, ctx, "open the entry", 200, chromedp.Navigate(app.URL+entryPage))
	ofFill(t, ctx, [2]string{"#select-reason", "meets_policy"})
	ofEndSession(t, ctx, app)
	a11yLoad(t, ctx, "select after the session ended", 200,
		chromedp.Click(chromedp.CSS(`[data-testid="select-form"] button[type="submit"]`)))
	if got := owEval[string](t, ctx, `location.pathname + location.search`); got != "/sign-in?redirect_url="+url.QueryEscape(entryPage) {
		t.Fatalf("htmx led to %q", got)
	}
	if got := mustText(t, ctx, `[data-testid="flash-message"]`); !strings.Contains(got, "was not saved") {
		t.Errorf("the sign-in page says %q, want that the action was not saved", got)
	}
	ofAudit(t, ctx, m, "the sign-in page saying the action was not saved")
	ofScreenshot(t, ctx, "session-ended-htmx")
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`[data-testid="dev-sign-in"] input[name="email"]`), "owner@example.test")); err != nil {
		t.Fatal(err)
	}
	a11yLoad(t, ctx, "sign in again", 200, chromedp.Click(chromedp.CSS(`[data-testid="dev-sign-in"] button[type="submit"]`)))
	if got := owEval[string](t, ctx, `location.pathname`); got != entryPage {
		t.Errorf("sign-in returned to %q, want the entry page", got)
	}
	if n := owCountIn(t, ctx, `[data-testid="flash-message"]`); n != 0 {
		t.Error("the note shows again after signing in")
	}
	if got := owEntryState(t, app, entryID); got != store.StateWaiting {
		t.Fatalf("the entry is %q: something was applied", got)
	}
}

// ofAudit runs the accessibility audit (axe-core, as a11y_browser_test.go
// does for every page) on the page as it is, in a11yViews; pages reached
// only mid-journey are audited here. The view and scripts are then set
// back to mode m.
func ofAudit(tb testing.TB, ctx context.Context, m ofMode, what string) {
	tb.Helper()
	if err := setScriptsDisabled(ctx, false); err != nil {
		tb.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](mustReadAxe(tb))); err != nil {
		tb.Fatalf("load axe-core: %v", err)
	}
	for _, v := range a11yViews {
		if err := setView(ctx, v); err != nil {
			tb.Fatal(err)
		}
		for _, f := range runAxe(tb, ctx, v) {
			tb.Errorf("%s [%s]: %s", what, v, f)
		}
	}
	height := int64(800)
	if m.width < 800 {
		height = phoneHeight
	}
	if err := setView(ctx, a11yView{Scheme: "light", Width: m.width, Height: height}); err != nil {
		tb.Fatal(err)
	}
	if err := setScriptsDisabled(ctx, !m.js); err != nil {
		tb.Fatal(err)
	}
}

// ofEndSession ends the development session as an expiry would: the
// identity cookie goes; admit's own session cookie stays.
func ofEndSession(tb testing.TB, ctx context.Context, app *testApp) {
	tb.Helper()
	if _, err := chromedp.Call(ctx, network.DeleteCookies, network.DeleteCookiesParams{Name: "admit_dev", URL: app.URL}); err != nil {
		tb.Fatalf("end the session: %v", err)
	}
}

// ofScreenshot keeps what the owner sees (the viewport, where focus
// went) in the test's temp dir and, with ADMIT_SCREENSHOTS set, in
// /tmp/admit-<name>.png.
func ofScreenshot(tb testing.TB, ctx context.Context, name string) {
	tb.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		tb.Fatalf("screenshot: %v", err)
	}
	dir := tb.TempDir()
	if os.Getenv("ADMIT_SCREENSHOTS") != "" {
		dir = os.TempDir()
	}
	if err := os.WriteFile(filepath.Join(dir, "admit-"+name+".png"), png, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// ofShot names a screenshot for a mode.
func ofShot(m ofMode) string {
	js := "js"
	if !m.js {
		js = "nojs"
	}
	return fmt.Sprintf("%s-%d", js, m.width)
}
