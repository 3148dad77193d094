package browsertest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"admit/internal/browser"
)

// The owner console in a real browser, in Clerk mode: the owner's session
// is a fake-Clerk __session cookie, exactly what ClerkJS would keep fresh.
// Clerk-mode pages also load ClerkJS from the Frontend API origin, which is
// unreachable here; the pages must work without it.

// owQueueFixture fills the demo queue with entries joined at different
// times and returns their IDs in join order.
func owQueueFixture(tb testing.TB, app *testApp) (waiting []string, declined string) {
	tb.Helper()
	start := app.Clock.Now()
	for i, email := range []string{"ada@example.com", "grace@example.com", "edsger@example.com"} {
		app.Clock.Set(start.Add(time.Duration(i) * time.Hour))
		waiting = append(waiting, mustInsertEntry(tb, app.DB, app.Demo, email, "waiting"))
	}
	app.Clock.Set(start.Add(4 * time.Hour))
	declined = mustInsertEntry(tb, app.DB, app.Demo, "declined@example.com", "declined")
	app.Clock.Set(start.Add(5 * time.Hour))
	return waiting, declined
}

// owBrowserAsOwner starts Chromium with the owner's Clerk session cookie.
func owBrowserAsOwner(tb testing.TB, app *testApp, opts ...browser.Option) context.Context {
	tb.Helper()
	ctx := browser.MustNew(tb, opts...)
	if _, err := chromedp.Call(ctx, network.SetCookie, network.SetCookieParams{Name: "__session",
		Value: app.Clerk.Session(app.OwnerID), URL: app.URL, Path: "/"}); err != nil {
		tb.Fatalf("set the session cookie: %v", err)
	}
	return ctx
}

// owLoad runs steps that load one document and fails unless it answers 200.
func owLoad(tb testing.TB, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) string {
	tb.Helper()
	resp, err := chromedp.RunResponse(ctx, steps...)
	if err != nil {
		tb.Fatalf("%s: %v", what, err)
	}
	if resp == nil || resp.Status != 200 {
		tb.Fatalf("%s: no 200 document response (%+v)", what, resp)
	}
	return resp.URL
}

// owEval evaluates a JavaScript expression in the page.
func owEval[T any](tb testing.TB, ctx context.Context, expr string) T {
	tb.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		tb.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// owCountIn counts the elements matching a CSS selector.
func owCountIn(tb testing.TB, ctx context.Context, selector string) int {
	tb.Helper()
	return owEval[int](tb, ctx, `document.querySelectorAll(`+jsQuote(selector)+`).length`)
}

func jsQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// owScreenshot keeps a screenshot in the test's temp dir and, with
// ADMIT_SCREENSHOTS set, in /tmp/admit-<name>.png.
func owScreenshot(tb testing.TB, ctx context.Context, name string) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), name+".png")
	if os.Getenv("ADMIT_SCREENSHOTS") != "" {
		path = filepath.Join(os.TempDir(), "admit-"+name+".png")
	}
	browser.Screenshot(tb, ctx, path)
}

// owWantFits fails when the page scrolls sideways at width.
func owWantFits(tb testing.TB, ctx context.Context, page string, width int) {
	tb.Helper()
	if got := owEval[int](tb, ctx, `document.documentElement.scrollWidth`); got > width {
		tb.Errorf("%s is %d px wide in a %d px viewport", page, got, width)
	}
}

func TestBrowser_OwnerFiltersAndSelectsWithHTMX(t *testing.T) {
	t.Parallel()
	app := MustStartApp(t, withClerk())
	waiting, declined := owQueueFixture(t, app)
	ctx := owBrowserAsOwner(t, app)
	queue := app.URL + "/owner/programs/" + app.Demo.ID + "/entries"

	owLoad(t, ctx, "open the queue", chromedp.Navigate(queue))
	if got := owEval[string](t, ctx, `typeof window.htmx`); got != "object" {
		t.Fatalf("typeof htmx=%q: htmx did not load", got)
	}
	if got, want := owCountIn(t, ctx, `[data-testid="queue-row"]`), 4; got != want {
		t.Fatalf("queue rows=%d, want %d", got, want)
	}
	// A full navigation would drop this marker; an htmx swap keeps it.
	owEval[bool](t, ctx, `window.__ownerMarker = true`)

	// Filter to waiting entries: htmx swaps the block and pushes the URL.
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`[data-testid="tab-waiting"]`)),
	); err != nil {
		t.Fatalf("filter: %v", err)
	}
	if err := browser.WaitFor(ctx, `location.search.includes("state=waiting") &&
		document.querySelectorAll('[data-testid="queue-row"]').length === 3`, browserWait); err != nil {
		t.Fatalf("the filtered queue never appeared (url %s): %v", owEval[string](t, ctx, `location.href`), err)
	}
	if got := owCountIn(t, ctx, `[data-testid="queue-row"][data-entry-id="`+declined+`"]`); got != 0 {
		t.Fatal("the declined entry is still listed under the waiting filter")
	}
	if !owEval[bool](t, ctx, `window.__ownerMarker === true`) {
		t.Fatal("filtering reloaded the page instead of swapping the block")
	}

	// Choose one entry and select it with a reason: one swap, no navigation.
	// htmx settles the swapped block after the swap itself; a click before
	// then can land on a checkbox about to be replaced.
	if err := browser.WaitFor(ctx, `!document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling, .htmx-added')`, browserWait); err != nil {
		t.Fatalf("the filtered block never settled: %v", err)
	}
	target := waiting[1]
	box := `input[name="entryIds"][value="` + target + `"]`
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(box))); err != nil {
		t.Fatalf("choose an entry: %v", err)
	}
	if err := browser.WaitFor(ctx, `!!document.querySelector('`+box+`:checked')`, browserWait); err != nil {
		t.Fatalf("the chosen entry's box is not checked: %v", err)
	}
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`[data-testid="bulk-reason"]`), "priority_cohort"),
		chromedp.Click(chromedp.CSS(`[data-testid="bulk-submit"]`)),
	); err != nil {
		t.Fatalf("bulk select: %v", err)
	}
	if err := browser.WaitFor(ctx, `(function () {
		var f = document.querySelector('[data-testid="flash"]');
		return !!f && f.textContent.includes("Selected 1 entry") &&
			document.querySelectorAll('[data-testid="queue-row"]').length === 2;
	})()`, browserWait); err != nil {
		t.Fatalf("the selection never showed (flash %q, %d rows): %v",
			owEval[string](t, ctx, `(document.querySelector('[data-testid="flash"]') || {}).textContent || ""`),
			owCountIn(t, ctx, `[data-testid="queue-row"]`), err)
	}
	if !owEval[bool](t, ctx, `window.__ownerMarker === true`) {
		t.Fatal("selecting reloaded the page instead of swapping the block")
	}
	if got, want := owEntryState(t, app, target), "selected"; got != want {
		t.Fatalf("entry state=%q, want %q", got, want)
	}
	for _, other := range []string{waiting[0], waiting[2]} {
		if got := owEntryState(t, app, other); got != "waiting" {
			t.Fatalf("an entry that was not chosen is %q", got)
		}
	}
	owScreenshot(t, ctx, "owner-queue-htmx")

	// The pushed URL is a real page: loading it shows the same filter.
	owLoad(t, ctx, "reload the filtered queue", chromedp.Reload())
	if got := owEval[string](t, ctx, `document.querySelector('[aria-current="page"][data-testid^="tab-"]').dataset.testid`); got != "tab-waiting" {
		t.Fatalf("after reload the current state tab is %q", got)
	}

	// On an entry's page declining asks first, in a dialog, then the
	// confirmed form leads back to the entry.
	owLoad(t, ctx, "open an entry", chromedp.Navigate(app.URL+"/owner/programs/"+app.Demo.ID+"/entries/"+waiting[0]))
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="decline-start"]`))); err != nil {
		t.Fatalf("decline: %v", err)
	}
	owWaitFor(t, ctx, "the decline dialog", `!!document.querySelector('dialog[open] #confirm-reason')`)
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`dialog[open] #confirm-reason`), "capacity")); err != nil {
		t.Fatalf("choose a reason: %v", err)
	}
	owLoad(t, ctx, "confirm the decline", chromedp.Click(chromedp.CSS(`dialog[open] [data-testid="confirm-submit"]`)))
	if err := browser.WaitFor(ctx, `(function () {
		var s = document.querySelector('#entry-block [data-testid="entry-state"]');
		return !!s && s.textContent === "declined" && !!document.querySelector('#entry-block [data-testid="flash"]');
	})()`, browserWait); err != nil {
		t.Fatalf("the declined state never showed: %v", err)
	}
	if got, want := owEntryState(t, app, waiting[0]), "declined"; got != want {
		t.Fatalf("entry state=%q, want %q", got, want)
	}
	owScreenshot(t, ctx, "owner-entry-htmx")
}

func TestBrowser_OwnerFiltersAndSelectsWithoutJavaScript(t *testing.T) {
	t.Parallel()
	app := MustStartApp(t, withClerk())
	waiting, declined := owQueueFixture(t, app)
	ctx := owBrowserAsOwner(t, app, browser.WithJavaScriptDisabled())
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(phoneW, phoneH, chromedp.EmulatePortrait,
		chromedp.EmulateMobile, chromedp.EmulateScale(2))); err != nil {
		t.Fatalf("phone viewport: %v", err)
	}

	owLoad(t, ctx, "open the console", chromedp.Navigate(app.URL+"/owner"))
	if got := owEval[string](t, ctx, `typeof window.htmx`); got != "undefined" {
		t.Fatalf("typeof htmx=%q: scripts ran, JavaScript is not off", got)
	}
	owWantFits(t, ctx, "/owner", phoneW)
	owScreenshot(t, ctx, "owner-home")
	owLoad(t, ctx, "follow the queue link",
		chromedp.Click(chromedp.CSS(`[data-program-id="`+app.Demo.ID+`"] a[href$="/entries"]`)))
	if got, want := owCountIn(t, ctx, `[data-testid="queue-row"]`), 4; got != want {
		t.Fatalf("queue rows=%d, want %d", got, want)
	}

	// The state tabs are plain links.
	url := owLoad(t, ctx, "follow the waiting tab", chromedp.Click(chromedp.CSS(`[data-testid="tab-waiting"]`)))
	if !strings.Contains(url, "state=waiting") {
		t.Fatalf("filter led to %s", url)
	}
	if got, want := owCountIn(t, ctx, `[data-testid="queue-row"]`), 3; got != want {
		t.Fatalf("filtered rows=%d, want %d", got, want)
	}
	if owCountIn(t, ctx, `[data-entry-id="`+declined+`"]`) != 0 {
		t.Fatal("the declined entry is listed under the waiting filter")
	}
	owWantFits(t, ctx, "the queue", phoneW)

	// Selecting is a plain POST form that redirects back to this page.
	target := waiting[0]
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`input[name="entryIds"][value="`+target+`"]`)),
		chromedp.SetValue(chromedp.CSS(`[data-testid="bulk-reason"]`), "meets_policy"),
	); err != nil {
		t.Fatalf("choose: %v", err)
	}
	url = owLoad(t, ctx, "submit the selection", chromedp.Click(chromedp.CSS(`[data-testid="bulk-submit"]`)))
	if !strings.Contains(url, "/entries?") || !strings.Contains(url, "state=waiting") {
		t.Fatalf("selection led to %s, want the same filtered queue", url)
	}
	if got := owEval[string](t, ctx, `document.querySelector('[data-testid="flash"]').textContent`); !strings.Contains(got, "Selected 1 entry") {
		t.Fatalf("flash %q", got)
	}
	if got, want := owCountIn(t, ctx, `[data-testid="queue-row"]`), 2; got != want {
		t.Fatalf("rows after selecting=%d, want %d", got, want)
	}
	if got, want := owEntryState(t, app, target), "selected"; got != want {
		t.Fatalf("entry state=%q, want %q", got, want)
	}
	owScreenshot(t, ctx, "owner-queue-nojs")

	// The entry's page shows the notice it joined under, then issues a code.
	owLoad(t, ctx, "open the entry", chromedp.Navigate(app.URL+"/owner/programs/"+app.Demo.ID+"/entries/"+target))
	if got := owEval[string](t, ctx, `document.querySelector('[data-testid="notice-snapshot"]').textContent`); !strings.Contains(got, "Version 1") {
		t.Fatalf("notice snapshot %q", got)
	}
	owWantFits(t, ctx, "the entry page", phoneW)
	owScreenshot(t, ctx, "owner-entry")
	owLoad(t, ctx, "issue a code", chromedp.Click(chromedp.CSS(`[data-testid="issue-submit"]`)))
	code := owEval[string](t, ctx, `document.querySelector('[data-testid="invitation-code"]').textContent`)
	if len(strings.TrimSpace(code)) != 43 {
		t.Fatalf("code %q is not 43 characters", code)
	}
	owWantFits(t, ctx, "the code page", phoneW)
	owScreenshot(t, ctx, "owner-issued")

	// The settings and audit pages read on a phone too.
	for _, page := range []string{"", "/events"} {
		owLoad(t, ctx, "open "+page, chromedp.Navigate(app.URL+"/owner/programs/"+app.Demo.ID+page))
		owWantFits(t, ctx, "the program page "+page, phoneW)
	}
	owScreenshot(t, ctx, "owner-events")
	owLoad(t, ctx, "open settings", chromedp.Navigate(app.URL+"/owner/programs/"+app.Demo.ID))
	owScreenshot(t, ctx, "owner-program")
}

// owWaitFor polls a JavaScript condition until it holds (browserWait at
// most: a pass returns as soon as it holds).
func owWaitFor(tb testing.TB, ctx context.Context, what, cond string) {
	tb.Helper()
	if err := browser.WaitFor(ctx, cond, browserWait); err != nil {
		// Where the page is, to tell a dialog that never opened from a
		// fallback to the confirmation page.
		at, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + " (" + document.title + ")"`))
		tb.Fatalf("%s never showed on %s: %v", what, at, err)
	}
}

// phoneW and phoneH are a phone viewport in CSS pixels.
const phoneW, phoneH = 390, 844
