package browsertest

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"admit/handlers"
	"admit/internal/browser"
)

// tokenPattern is a removal token: 64 lowercase hex characters.
var tokenPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// signupBrowserLoad runs steps that cause one page load (a navigation, a
// click on a link or a submit button) and fails unless the new document
// answers want.
func signupBrowserLoad(tb testing.TB, ctx context.Context, what string, want int64, steps ...chromedp.Action[chromedp.Void]) *network.Response {
	tb.Helper()
	resp, err := chromedp.RunResponse(ctx, steps...)
	if err != nil {
		tb.Fatalf("%s: %v", what, err)
	}
	if resp == nil {
		tb.Fatalf("%s: no document response", what)
		return nil
	}
	if resp.Status != want {
		tb.Fatalf("%s: %s answered %d, want %d", what, resp.URL, resp.Status, want)
	}
	return resp
}

// signupBrowserText returns the text of the first element matching selector.
func signupBrowserText(tb testing.TB, ctx context.Context, selector string) string {
	tb.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(selector)))
	if err != nil {
		tb.Fatalf("text of %s: %v", selector, err)
	}
	return strings.TrimSpace(s)
}

// joinDemoInBrowser fills and submits the demo signup form like a person
// (type the address, tick the box, click the button) and returns the token
// and link the 202 page shows.
func joinDemoInBrowser(tb testing.TB, ctx context.Context, app *testApp, email string) (token, link string) {
	tb.Helper()
	signupBrowserLoad(tb, ctx, "open the waitlist", 200, chromedp.Navigate(app.URL+"/waitlist/demo"))
	checked, err := chromedp.Run(ctx, chromedp.JavascriptAttribute[bool](chromedp.ID("permission"), "checked"))
	if err != nil || checked {
		tb.Fatalf("the choice box is ticked before the person ticks it (%v)", err)
	}
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.ID("email"), email),
		chromedp.Click(chromedp.ID("permission")),
	); err != nil {
		tb.Fatalf("fill the form: %v", err)
	}
	if handlers.LowerLocalPart(email) != email {
		// Capitals before the @ are asked about once (inline when scripts
		// run, on a page of its own otherwise): kept as typed.
		scripts, err := browser.ScriptsRun(ctx)
		if err != nil {
			tb.Fatal(err)
		}
		if scripts {
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#signup-form button[type="submit"]`))); err != nil {
				tb.Fatal(err)
			}
			if err := browser.WaitFor(ctx, `!!document.getElementById("case-keep")`, browserWait); err != nil {
				tb.Fatalf("the question about capitals never appeared: %v", err)
			}
		} else {
			signupBrowserLoad(tb, ctx, "submit the signup form", 200,
				chromedp.Click(chromedp.CSS(`#signup-form button[type="submit"]`)))
		}
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("case-keep"))); err != nil {
			tb.Fatalf("keep the address as typed: %v", err)
		}
	}
	// POST → 303 → GET: the page that shows the link is a plain GET.
	resp := signupBrowserLoad(tb, ctx, "submit the signup form", 200,
		chromedp.Click(chromedp.CSS(`#signup-form button[type="submit"]`)))
	if got, want := resp.URL, app.URL+"/waitlist/demo/received"; got != want {
		tb.Fatalf("after joining the browser is at %s, want %s", got, want)
	}
	if h1 := signupBrowserText(tb, ctx, "h1"); h1 != "Request received" {
		tb.Fatalf("after joining h1=%q, want %q", h1, "Request received")
	}
	token = signupBrowserText(tb, ctx, `[data-testid="removal-token"]`)
	if !tokenPattern.MatchString(token) {
		tb.Fatalf("shown token %q is not 64 lowercase hex", token)
	}
	href, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(`[data-testid="removal-link"]`), "href"))
	if err != nil || !href.Exists {
		tb.Fatalf("removal link: %v", err)
	}
	if got, want := href.Value, app.URL+"/manage/#"+token; got != want {
		tb.Fatalf("removal link %q, want %q", got, want)
	}
	if got := signupBrowserText(tb, ctx, `[data-testid="removal-link"]`); got != href.Value {
		tb.Fatalf("removal link text %q, want the link itself %q", got, href.Value)
	}
	return token, href.Value
}

// wantEntryErasedByBrowser fails unless the address's entry was erased.
func wantEntryErasedByBrowser(tb testing.TB, app *testApp, email string) {
	tb.Helper()
	if n := appCount(tb, app, `SELECT count(*) FROM entries WHERE email_key = ?`, email); n != 0 {
		tb.Fatalf("%d entries still hold %s", n, email)
	}
	if n := appCount(tb, app, `SELECT count(*) FROM entries WHERE erased_at IS NOT NULL AND state = 'withdrawn'
		AND removal_hash IS NULL AND email_key NOT LIKE '%@%'`); n != 1 {
		tb.Fatalf("erased entries=%d, want 1", n)
	}
}

func TestBrowser_WithoutJavaScriptJoinAndRemoveByPastingTheToken(t *testing.T) {
	t.Parallel()
	app := MustStartApp(t)
	ctx := browser.MustNew(t, browser.WithJavaScriptDisabled())
	const email = "No.Script@example.com"

	token, _ := joinDemoInBrowser(t, ctx, app, email)
	if run, err := browser.ScriptsRun(ctx); err != nil || run {
		t.Fatalf("scripts run=%v (%v): JavaScript is not off", run, err)
	}
	if n := appCount(t, app, `SELECT count(*) FROM entries WHERE email_key = ? AND state = 'waiting'`, email); n != 1 {
		t.Fatalf("entries for %s=%d, want 1 (local part kept as typed)", email, n)
	}

	// Go to the removal page the 202 page names, paste, submit.
	signupBrowserLoad(t, ctx, "follow the removal page link", 200, chromedp.Click(chromedp.CSS(`[data-testid="removal"] a[href="/manage/"]`)))
	if got, err := chromedp.Run(ctx, chromedp.Value(chromedp.ID("token"))); err != nil || got != "" {
		t.Fatalf("token field=%q (%v), want empty without JavaScript", got, err)
	}
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("token"), token)); err != nil {
		t.Fatalf("paste the token: %v", err)
	}
	signupBrowserLoad(t, ctx, "submit the removal form", 200,
		chromedp.Click(chromedp.CSS(`#remove-form button[type="submit"]`)))
	if h1 := signupBrowserText(t, ctx, "h1"); h1 != "Removal processed" {
		t.Fatalf("after removal h1=%q, want %q", h1, "Removal processed")
	}
	wantEntryErasedByBrowser(t, app, email)
}

func TestBrowser_WithJavaScriptRemoveThroughTheFragmentLink(t *testing.T) {
	t.Parallel()
	app := MustStartApp(t)
	ctx := browser.MustNew(t)
	const email = "with.script@example.com"

	token, link := joinDemoInBrowser(t, ctx, app, email)
	if run, err := browser.ScriptsRun(ctx); err != nil || !run {
		t.Fatalf("scripts run=%v (%v): JavaScript is not on", run, err)
	}

	// Follow the private link: manage.js copies the fragment into the form.
	signupBrowserLoad(t, ctx, "follow the removal link", 200,
		chromedp.Click(chromedp.CSS(`[data-testid="removal-link"]`)))
	if loc, err := chromedp.Run(ctx, chromedp.Location()); err != nil || loc != link {
		t.Fatalf("at %q (%v), want the removal link %q", loc, err, link)
	}
	if err := browser.WaitFor(ctx, `document.querySelector('#remove-form input[name="token"]').value !== ""`, browserWait); err != nil {
		t.Fatalf("manage.js never filled the token field: %v", err)
	}
	filled, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#remove-form input[name="token"]').value`))
	if err != nil {
		t.Fatal(err)
	}
	if filled != token {
		t.Fatalf("token field=%q, want the fragment's token %q", filled, token)
	}

	// Not signupBrowserLoad: manage.js clears the fragment on submit, a
	// same-document navigation that RunResponse would take for the load.
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#remove-form button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="removed"]`)),
	); err != nil {
		t.Fatalf("submit the removal form: %v", err)
	}
	if h1 := signupBrowserText(t, ctx, "h1"); h1 != "Removal processed" {
		t.Fatalf("after removal h1=%q, want %q", h1, "Removal processed")
	}
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(loc, token) {
		t.Fatalf("the address bar still holds the token: %s", loc)
	}
	// Nor does any history entry: Back must not lead to the token.
	hist, err := chromedp.Run(ctx, chromedp.NavigationEntries())
	if err != nil {
		t.Fatalf("history: %v", err)
	}
	sawManage := false
	for _, e := range hist.Entries {
		if strings.Contains(e.URL, token) {
			t.Fatalf("history entry %q still holds the token", e.URL)
		}
		sawManage = sawManage || strings.HasSuffix(e.URL, "/manage/")
	}
	if !sawManage {
		t.Fatalf("history %v lacks the removal page", hist.Entries)
	}
	wantEntryErasedByBrowser(t, app, email)
}
