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

	"admit/handlers"
	"admit/internal/browser"
	"admit/store"
)

// browserWait bounds a browser test's wait for a condition on its page
// (browser.WaitFor): a
// guard against a condition that never comes, not a time it is expected to
// take, so it is long enough for a machine loaded many times over (a pass
// returns as soon as the condition holds). A failure names the condition.
const browserWait = 2 * time.Minute

// phoneWidth and phoneHeight are a common phone viewport in CSS pixels.
const phoneWidth, phoneHeight = 390, 844

// mustNavigate runs steps that cause one page load (a navigation, a link
// click, a form submission) and fails unless the document loads with 200.
func mustNavigate(tb testing.TB, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) *network.Response {
	tb.Helper()
	resp, err := chromedp.RunResponse(ctx, steps...)
	if err != nil {
		tb.Fatalf("%s: %v", what, err)
	}
	if resp == nil {
		tb.Fatalf("%s: no document response", what)
		return nil
	}
	if got, want := resp.Status, int64(200); got != want {
		tb.Fatalf("%s: %s answered %d, want %d", what, resp.URL, got, want)
	}
	return resp
}

// holdDevKey gives the tab's browser the development sign-in key, as
// opening the link admit prints at start does (TestBrowser_DevSignIn-
// WithoutJavaScriptReachesOwnerConsole opens the link itself).
func holdDevKey(tb testing.TB, ctx context.Context, app *testApp) {
	tb.Helper()
	if _, err := chromedp.Call(ctx, network.SetCookie, network.SetCookieParams{Name: handlers.DevKeyCookie, Value: app.DevKey,
		URL: app.URL, Path: "/", HTTPOnly: new(true), SameSite: network.CookieSameSiteStrict}); err != nil {
		tb.Fatalf("hold the development sign-in key: %v", err)
	}
}

// mustCount returns how many elements match a CSS selector.
func mustCount(tb testing.TB, ctx context.Context, selector string) int {
	tb.Helper()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+jsString(selector)+`).length`))
	if err != nil {
		tb.Fatalf("count %s: %v", selector, err)
	}
	return n
}

// mustText returns the visible text of the first element matching selector.
func mustText(tb testing.TB, ctx context.Context, selector string) string {
	tb.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(selector)))
	if err != nil {
		tb.Fatalf("text of %s: %v", selector, err)
	}
	return s
}

// openNavMenu opens the signed-in navigation's menu when it is folded, as
// on a phone, so that its links can be read and followed.
func openNavMenu(tb testing.TB, ctx context.Context) {
	tb.Helper()
	folded, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
		const m = document.querySelector('[data-testid="nav-menu"]');
		return !!m && !m.open && m.querySelector('summary').getBoundingClientRect().width > 0;
	})()`))
	if err != nil {
		tb.Fatalf("find the menu: %v", err)
	}
	if !folded {
		return
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="nav-menu-button"]`))); err != nil {
		tb.Fatalf("open the menu: %v", err)
	}
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// mustScreenshot saves a full-page PNG into the test's temp dir and, when
// ADMIT_SCREENSHOTS is set, a copy to /tmp/admit-<name>.png to look at.
func mustScreenshot(tb testing.TB, ctx context.Context, name string) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), name+".png")
	browser.Screenshot(tb, ctx, path)
	if os.Getenv("ADMIT_SCREENSHOTS") == "" {
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	out := filepath.Join(os.TempDir(), "admit-"+name+".png")
	if err := os.WriteFile(out, b, 0o644); err != nil {
		tb.Fatalf("copy screenshot: %v", err)
	}
	tb.Logf("screenshot: %s", out)
}

// mustFitWidth fails when the page scrolls sideways at the current width.
func mustFitWidth(tb testing.TB, ctx context.Context, page string, width int) {
	tb.Helper()
	got, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
	if err != nil {
		tb.Fatalf("%s: scroll width: %v", page, err)
	}
	if got > width {
		tb.Errorf("%s is %d px wide at a %d px viewport: it scrolls sideways on a phone", page, got, width)
	}
}

func TestBrowser_DevSignInWithoutJavaScriptReachesOwnerConsole(t *testing.T) {
	t.Parallel()
	app := MustStartApp(t)
	ctx := browser.MustNew(t, browser.WithJavaScriptDisabled())
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(phoneWidth, phoneHeight, chromedp.EmulatePortrait,
		chromedp.EmulateMobile, chromedp.EmulateScale(2))); err != nil {
		t.Fatalf("phone viewport: %v", err)
	}

	// Signed out: the start page warns that this is development and lists
	// the demo program.
	mustNavigate(t, ctx, "open /", chromedp.Navigate(app.URL+"/"))
	if run, err := browser.ScriptsRun(ctx); err != nil || run {
		t.Fatalf("scripts run=%v (%v): JavaScript is not off", run, err)
	}
	if banner := mustText(t, ctx, `[data-testid="dev-banner"]`); !strings.Contains(banner, "Development mode") {
		t.Fatalf("development banner text %q", banner)
	}
	if got, want := mustCount(t, ctx, `[data-testid="programs"] a[href="/waitlist/demo"]`), 1; got != want {
		t.Fatalf("demo program links=%d, want %d", got, want)
	}
	if got, want := mustCount(t, ctx, `a[href="/owner"]`), 0; got != want {
		t.Fatalf("owner console links while signed out=%d, want %d", got, want)
	}
	mustFitWidth(t, ctx, "/", phoneWidth)
	mustScreenshot(t, ctx, "home")

	// Without the console's link, the sign-in page says where it is and
	// offers no form.
	resp := mustNavigate(t, ctx, "click Sign in", chromedp.Click(chromedp.CSS(`header a[href="/sign-in"]`)))
	if !strings.HasSuffix(resp.URL, "/sign-in") {
		t.Fatalf("Sign in led to %s", resp.URL)
	}
	if got, want := mustCount(t, ctx, `[data-testid="dev-sign-in"]`), 0; got != want {
		t.Fatalf("sign-in forms before the console's link was opened=%d, want %d", got, want)
	}
	if got := mustText(t, ctx, `[data-testid="dev-sign-in-needs-link"]`); !strings.Contains(got, "development sign-in:") {
		t.Fatalf("the sign-in page does not say where the link is: %q", got)
	}
	mustScreenshot(t, ctx, "dev-sign-in-needs-link")
	ofAudit(t, ctx, ofMode{"js off, 390 px", false, phoneWidth}, "the sign-in page before the console's link was opened")

	// Opening the link admit printed leads to the form, the key gone from
	// the address bar. Then a real form submission, no script involved.
	resp = mustNavigate(t, ctx, "open the console's link", chromedp.Navigate(app.DevLink()))
	if got, want := resp.URL, app.URL+"/sign-in"; got != want {
		t.Fatalf("the console's link led to %s, want %s", got, want)
	}
	if html := mustText(t, ctx, "html"); strings.Contains(html, app.DevKey) {
		t.Fatal("the sign-in page shows the key")
	}
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`[data-testid="dev-sign-in"] input[name="email"]`), "owner@example.test")); err != nil {
		t.Fatalf("type the email: %v", err)
	}
	resp = mustNavigate(t, ctx, "submit the sign-in form",
		chromedp.Click(chromedp.CSS(`[data-testid="dev-sign-in"] button[type="submit"]`)))
	// From the start page's sign-in link, an owner lands on the console.
	if got, want := resp.URL, app.URL+"/owner"; got != want {
		t.Fatalf("after sign-in the browser is at %s, want %s", got, want)
	}
	if got, want := mustCount(t, ctx, `#sign-out-form`), 1; got != want {
		t.Fatalf("sign-out forms=%d, want %d: not signed in", got, want)
	}
	openNavMenu(t, ctx)
	if got := mustText(t, ctx, `a[href="/owner"]`); got != "Owner console" {
		t.Fatalf("owner link text %q, want %q", got, "Owner console")
	}

	// The owner console lists the demo program.
	resp = mustNavigate(t, ctx, "click Owner console", chromedp.Click(chromedp.CSS(`a[href="/owner"]`)))
	if !strings.HasSuffix(resp.URL, "/owner") {
		t.Fatalf("Owner console led to %s", resp.URL)
	}
	if h1 := mustText(t, ctx, `h1`); h1 != "Owner console" {
		t.Fatalf("h1=%q, want %q", h1, "Owner console")
	}
	row := mustText(t, ctx, `[data-testid="owner-programs"] tbody tr`)
	for _, want := range []string{store.DemoSlug, "open", "enabled"} {
		if !strings.Contains(row, want) {
			t.Errorf("demo program row %q lacks %q", row, want)
		}
	}
	if banner := mustText(t, ctx, `[data-testid="dev-banner"]`); !strings.Contains(banner, "Development mode") {
		t.Errorf("no development banner on /owner: %q", banner)
	}
	mustFitWidth(t, ctx, "/owner", phoneWidth)
	mustScreenshot(t, ctx, "owner")
}
