package browsertest

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	adbrowser "admit/internal/browser"
	"admit/internal/identity"
	"admit/store"
)

// scriptModes are the two ways applicants' journeys are walked: with
// JavaScript off (every form is plain HTML) and on.
var scriptModes = []struct {
	name string
	opts []adbrowser.Option
}{{"javascript off", []adbrowser.Option{adbrowser.WithJavaScriptDisabled()}}, {"javascript on", nil}}

// onPhone sets a phone's viewport.
func onPhone(tb testing.TB, ctx context.Context) {
	tb.Helper()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(phoneWidth, phoneHeight, chromedp.EmulatePortrait,
		chromedp.EmulateMobile, chromedp.EmulateScale(2))); err != nil {
		tb.Fatalf("phone viewport: %v", err)
	}
}

// signInThroughForm fills the development sign-in form on the current page
// and submits it; it returns the document the browser lands on.
func signInThroughForm(tb testing.TB, ctx context.Context, email string) *network.Response {
	tb.Helper()
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`[data-testid="dev-sign-in"] input[name="email"]`), email)); err != nil {
		tb.Fatalf("type the email: %v", err)
	}
	return mustNavigate(tb, ctx, "sign in", chromedp.Click(chromedp.CSS(`[data-testid="dev-sign-in"] button[type="submit"]`)))
}

// waitFor reports whether script comes true within d, across page loads
// (an evaluation that fails while a page is replaced is tried again).

// mustEval runs a script that returns T.
func mustEval[T any](tb testing.TB, ctx context.Context, script string) T {
	tb.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](script))
	if err != nil {
		tb.Fatalf("evaluate %s: %v", script, err)
	}
	return v
}

func TestBrowser_MeShowsEachProgramsStateAndNextActionOnAPhone(t *testing.T) {
	t.Parallel()
	for _, mode := range scriptModes {
		t.Run(mode.name, func(t *testing.T) {
			app := MustStartApp(t)
			k := newAccessKit(app)
			const email = "a.rather.long.address.for.a.phone@example.com"
			beta := k.Program(t, "beta", "Beta text.")
			gamma := k.Program(t, "gamma", "Gamma text.")
			k.Grant(t, app.Demo, email, identity.DevUserID(email))
			k.Invite(t, beta, email, true)
			k.Entry(t, gamma, email)
			ctx := adbrowser.MustNew(t, mode.opts...)
			holdDevKey(t, ctx, app)
			onPhone(t, ctx)

			mustNavigate(t, ctx, "open /me signed out", chromedp.Navigate(app.URL+"/me"))
			signInThroughForm(t, ctx, email)
			if loc := mustEval[string](t, ctx, `location.pathname`); loc != "/me" {
				t.Fatalf("after sign-in at %s, want /me", loc)
			}
			mustFitWidth(t, ctx, "/me", phoneWidth)
			mustScreenshot(t, ctx, "me-cards-"+strings.ReplaceAll(mode.name, " ", "-"))

			// Each card: name, state in words, next step, then its action —
			// all inside the screen's width.
			for slug, action := range map[string]string{"demo": "open-private", "beta": "redeem-link", "gamma": "withdraw-link"} {
				card := `[data-testid="entry-card"][data-slug="` + slug + `"]`
				order := mustEval[string](t, ctx, `Array.from(document.querySelectorAll('`+card+` [data-testid]')).map(e => e.dataset.testid).join(",")`)
				if !strings.HasPrefix(order, "entry-state,entry-next,") || !strings.Contains(order, action) {
					t.Errorf("%s card reads %s: want state, next step, then %s", slug, order, action)
				}
				right := mustEval[float64](t, ctx, `document.querySelector('`+card+` [data-testid="`+action+`"]').getBoundingClientRect().right`)
				if right <= 0 || right > phoneWidth {
					t.Errorf("%s card's %s ends at %.0f px: off a %d px screen", slug, action, right, phoneWidth)
				}
			}
			if got := mustText(t, ctx, `[data-slug="beta"] [data-testid="entry-state"]`); got != "Invitation sent" {
				t.Errorf("invited state reads %q", got)
			}
			resp := mustNavigate(t, ctx, "follow Redeem your code", chromedp.Click(chromedp.CSS(`[data-slug="beta"] [data-testid="redeem-link"]`)))
			if !strings.HasSuffix(resp.URL, "/redeem") {
				t.Fatalf("Redeem your code led to %s", resp.URL)
			}
		})
	}
}

func TestBrowser_SignInReturnsToThePageAndActionsConfirm(t *testing.T) {
	t.Parallel()
	for _, mode := range scriptModes {
		t.Run(mode.name, func(t *testing.T) {
			app := MustStartApp(t)
			const email = "returning@example.com"
			k := newAccessKit(app)
			k.Entry(t, app.Demo, email)
			ctx := adbrowser.MustNew(t, mode.opts...)
			holdDevKey(t, ctx, app)
			onPhone(t, ctx)

			// From the privacy page, sign in and come back to it.
			mustNavigate(t, ctx, "open /privacy", chromedp.Navigate(app.URL+"/privacy"))
			resp := mustNavigate(t, ctx, "click Sign in", chromedp.Click(chromedp.CSS(`[data-testid="nav-sign-in"]`)))
			if want := app.URL + "/sign-in?redirect_url=" + url.QueryEscape("/privacy"); resp.URL != want {
				t.Fatalf("Sign in led to %s, want %s", resp.URL, want)
			}
			resp = signInThroughForm(t, ctx, email)
			if want := app.URL + "/privacy"; resp.URL != want {
				t.Fatalf("after sign-in at %s, want %s", resp.URL, want)
			}
			openNavMenu(t, ctx)
			if got := mustText(t, ctx, `[data-testid="signed-in-as"]`); !strings.Contains(got, email) {
				t.Fatalf("the navigation says %q, want the signed-in address", got)
			}
			mustFitWidth(t, ctx, "/privacy signed in", phoneWidth)

			// Withdraw: the confirmation survives the redirect, once.
			mustNavigate(t, ctx, "open /me", chromedp.Navigate(app.URL+"/me"))
			mustNavigate(t, ctx, "click Withdraw", chromedp.Click(chromedp.CSS(`[data-slug="demo"] [data-testid="withdraw-link"]`)))
			mustNavigate(t, ctx, "confirm", chromedp.Click(chromedp.CSS(`[data-testid="withdraw-form"] button`)))
			if got := mustText(t, ctx, `[data-testid="flash-message"]`); !strings.Contains(got, "You have withdrawn") {
				t.Fatalf("after withdrawing the page says %q", got)
			}
			mustNavigate(t, ctx, "reload /me", chromedp.Reload())
			if n := mustCount(t, ctx, `[data-testid="flash-message"]`); n != 0 {
				t.Fatal("the confirmation shows again after a reload")
			}

			// Sign out: said on the start page, once.
			openNavMenu(t, ctx)
			resp = mustNavigate(t, ctx, "sign out", chromedp.Click(chromedp.CSS(`#sign-out-form button`)))
			if resp.URL != app.URL+"/" {
				t.Fatalf("sign-out led to %s", resp.URL)
			}
			if got := mustText(t, ctx, `[data-testid="flash-message"]`); got != "You are signed out." {
				t.Fatalf("after signing out the page says %q", got)
			}
			if n := mustCount(t, ctx, `[data-testid="signed-in-as"]`); n != 0 {
				t.Fatal("signed out, the navigation still names an address")
			}
			mustScreenshot(t, ctx, "signed-out-"+strings.ReplaceAll(mode.name, " ", "-"))
		})
	}
}

func TestBrowser_AnHtmxActionAfterTheSessionEndedReturnsToItsPage(t *testing.T) {
	t.Parallel()
	app := MustStartApp(t)
	entryID := mustInsertEntry(t, app.DB, app.Demo, "queued@example.com", store.StateWaiting)
	entryPage := "/owner/programs/" + app.Demo.ID + "/entries/" + entryID
	ctx := adbrowser.MustNew(t)
	holdDevKey(t, ctx, app)

	mustNavigate(t, ctx, "open the entry signed out", chromedp.Navigate(app.URL+entryPage))
	signInThroughForm(t, ctx, "owner@example.test")
	if loc := mustEval[string](t, ctx, `location.pathname`); loc != entryPage {
		t.Fatalf("after sign-in at %s, want the entry page", loc)
	}
	if got := mustEval[string](t, ctx, `typeof window.htmx`); got != "object" {
		t.Fatalf("typeof htmx=%q: JavaScript is not on", got)
	}
	// The session ends (cookie gone) while the page stays open.
	if _, err := chromedp.Call(ctx, network.DeleteCookies, network.DeleteCookiesParams{Name: "admit_dev", URL: app.URL}); err != nil {
		t.Fatalf("end the session: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`#select-reason`), "owner_discretion")); err != nil {
		t.Fatalf("choose a reason: %v", err)
	}
	resp := mustNavigate(t, ctx, "select through htmx", chromedp.Click(chromedp.CSS(`[data-testid="select-form"] button[type="submit"]`)))
	if want := app.URL + "/sign-in?redirect_url=" + url.QueryEscape(entryPage); resp.URL != want {
		t.Fatalf("the signed-out htmx action led to %s, want %s", resp.URL, want)
	}
	resp = signInThroughForm(t, ctx, "owner@example.test")
	if want := app.URL + entryPage; resp.URL != want {
		t.Fatalf("after sign-in at %s, want back on the entry page %s", resp.URL, want)
	}
	if n := appCount(t, app, `SELECT count(*) FROM entries WHERE id = ? AND state = 'waiting'`, entryID); n != 1 {
		t.Fatal("the signed-out action changed the entry")
	}
}

// joinInBrowser submits the demo signup form like a person and returns the
// link the received page shows.
func joinInBrowser(tb testing.TB, ctx context.Context, app *testApp, email string) string {
	tb.Helper()
	token, link := joinDemoInBrowser(tb, ctx, app, email)
	if !strings.HasSuffix(link, token) {
		tb.Fatalf("link %s does not end in its token", link)
	}
	return link
}

func TestBrowser_RemovalLinkIsShownOnceWithACopyButton(t *testing.T) {
	t.Parallel()
	for _, mode := range scriptModes {
		t.Run(mode.name, func(t *testing.T) {
			app := MustStartApp(t)
			ctx := adbrowser.MustNew(t, mode.opts...)
			jsOn := mode.opts == nil
			if jsOn {
				if _, err := chromedp.Call(ctx, browser.SetPermission, browser.SetPermissionParams{
					Permission: &browser.PermissionDescriptor{Name: "clipboard-write"}, Setting: browser.PermissionSettingGranted, Origin: app.URL,
					BrowserContextID: chromedp.FromContext(ctx).BrowserContextID}); err != nil {
					t.Fatalf("allow the clipboard: %v", err)
				}
				if _, err := chromedp.Call(ctx, browser.SetPermission, browser.SetPermissionParams{
					Permission: &browser.PermissionDescriptor{Name: "clipboard-read"}, Setting: browser.PermissionSettingGranted, Origin: app.URL,
					BrowserContextID: chromedp.FromContext(ctx).BrowserContextID}); err != nil {
					t.Fatalf("allow reading the clipboard: %v", err)
				}
			}
			onPhone(t, ctx)
			link := joinInBrowser(t, ctx, app, "keeper@example.com")
			token := link[strings.LastIndexByte(link, '#')+1:]
			mustFitWidth(t, ctx, "the received page", phoneWidth)

			visible := mustEval[bool](t, ctx, `(function () { var b = document.getElementById("copy-removal"); return !!b && !b.hidden && b.offsetWidth > 0; })()`)
			if visible != jsOn {
				t.Fatalf("copy button visible=%v with %s", visible, mode.name)
			}
			if jsOn {
				if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("copy-removal"))); err != nil {
					t.Fatalf("click copy: %v", err)
				}
				if err := adbrowser.WaitFor(ctx, `document.getElementById("copy-status").textContent !== ""`, browserWait); err != nil {
					t.Fatal(err)
				}
				if said := mustEval[string](t, ctx, `document.getElementById("copy-status").textContent`); !strings.HasPrefix(said, "Copied.") {
					t.Fatalf("after copying the page says %q", said)
				}
				copied, err := chromedp.Run(ctx, chromedp.Evaluate[string](`navigator.clipboard.readText()`, chromedp.EvalAwaitPromise))
				if err != nil || copied != link {
					t.Fatalf("the clipboard holds %q (%v), want the link", copied, err)
				}
			}

			// Reload: shown once, then only how to leave by signing in.
			mustNavigate(t, ctx, "reload the received page", chromedp.Reload())
			if n := mustCount(t, ctx, `[data-testid="link-shown"]`); n != 1 {
				t.Fatal("the reloaded page does not say the link was shown")
			}
			if html := mustEval[string](t, ctx, `document.documentElement.outerHTML`); strings.Contains(html, token) {
				t.Fatal("the reloaded page still holds the token")
			}
			hist, err := chromedp.Run(ctx, chromedp.NavigationEntries())
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range hist.Entries {
				if strings.Contains(e.URL, token) {
					t.Fatalf("history entry %s holds the token", e.URL)
				}
			}
			if n := appCount(t, app, `SELECT count(*) FROM entries WHERE email_key = 'keeper@example.com'`); n != 1 {
				t.Fatalf("entries=%d after the reload, want 1", n)
			}
		})
	}
}

func TestBrowser_RemovalByTheLinkLeavesNothingBehindAfterBack(t *testing.T) {
	t.Parallel()
	for _, mode := range scriptModes {
		t.Run(mode.name, func(t *testing.T) {
			app := MustStartApp(t)
			ctx := adbrowser.MustNew(t, mode.opts...)
			jsOn := mode.opts == nil
			const email = "leaver@example.com"
			link := joinInBrowser(t, ctx, app, email)

			mustNavigate(t, ctx, "open the private link", chromedp.Navigate(link))
			explained := mustEval[bool](t, ctx, `(function () { var n = document.querySelector('[data-testid="manage-noscript"]'); return !!n && n.offsetHeight > 0; })()`)
			if explained == jsOn {
				t.Fatalf("the no-script explanation shown=%v with %s", explained, mode.name)
			}
			if !jsOn {
				// Without JavaScript the person pastes the whole link.
				if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("token"), link)); err != nil {
					t.Fatalf("paste the link: %v", err)
				}
			} else if err := adbrowser.WaitFor(ctx, `document.getElementById("token").value !== ""`, browserWait); err != nil {
				t.Fatalf("the script never filled the token: %v", err)
			}
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#remove-form button[type="submit"]`)),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="removed"]`))); err != nil {
				t.Fatalf("remove: %v", err)
			}
			wantEntryErasedByBrowser(t, app, email)

			// Back: the form is there again, empty.
			goBack(t, ctx)
			if err := adbrowser.WaitFor(ctx, `location.pathname === "/manage/" && document.readyState === "complete" && !!document.getElementById("token")`, browserWait); err != nil {
				t.Fatalf("Back did not return to the removal page: %v", err)
			}
			time.Sleep(300 * time.Millisecond) // let any script or form restoration run
			if v := mustEval[string](t, ctx, `document.getElementById("token").value`); v != "" {
				t.Fatalf("after Back the token field holds %q", v)
			}
		})
	}
}

func TestBrowser_FormErrorsSummaryTakesFocusAndLeadsToTheField(t *testing.T) {
	t.Parallel()
	for _, mode := range scriptModes {
		t.Run(mode.name, func(t *testing.T) {
			app := MustStartApp(t)
			ctx := adbrowser.MustNew(t, mode.opts...)
			onPhone(t, ctx)
			mustNavigate(t, ctx, "open the waitlist", chromedp.Navigate(app.URL+"/waitlist/demo"))
			if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("email"), "jane@example.com")); err != nil {
				t.Fatal(err)
			}
			signupBrowserLoad(t, ctx, "submit without ticking", 400, chromedp.Click(chromedp.CSS(`#signup-form button[type="submit"]`)))
			// The browser applies autofocus when it next renders the page,
			// which can be just after the load event.
			if err := adbrowser.WaitFor(ctx, `!!document.activeElement && document.activeElement.id === "error-summary"`, browserWait); err != nil {
				t.Fatalf("focus is on %q, want the error summary", mustEval[string](t, ctx, `document.activeElement && document.activeElement.id`))
			}
			// The unticked choice's message looks like the address's.
			color := func(sel string) string {
				return mustEval[string](t, ctx, `getComputedStyle(document.querySelector('`+sel+`')).color`)
			}
			permission := color(`#permission-error`)
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#error-summary a[href="#permission"]`))); err != nil {
				t.Fatal(err)
			}
			if got := mustEval[string](t, ctx, `document.activeElement && document.activeElement.id`); got != "permission" {
				t.Fatalf("the summary's link moved focus to %q, want the checkbox", got)
			}
			mustFitWidth(t, ctx, "the form with errors", phoneWidth)

			if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.ID("email"), "jane@@example.com"), chromedp.Click(chromedp.ID("permission"))); err != nil {
				t.Fatal(err)
			}
			signupBrowserLoad(t, ctx, "submit a bad address", 400, chromedp.Click(chromedp.CSS(`#signup-form button[type="submit"]`)))
			if got := color(`#email-error`); got != permission {
				t.Fatalf("the address's message is %s, the choice's %s: they should look alike", got, permission)
			}
		})
	}
}

func TestBrowser_FaviconStyledAssetNotFoundAndOneLineBanner(t *testing.T) {
	t.Parallel()
	app := MustStartApp(t)
	ctx := adbrowser.MustNew(t)
	onPhone(t, ctx)
	mustNavigate(t, ctx, "open /", chromedp.Navigate(app.URL+"/"))
	if h := mustEval[float64](t, ctx, `(function () {
		var b = document.querySelector('[data-testid="dev-banner"]');
		return b.getBoundingClientRect().height / parseFloat(getComputedStyle(b).lineHeight);
	})()`); h > 1.9 {
		t.Errorf("the development banner is %.1f lines tall on a phone, want one", h)
	}
	icon := mustEval[string](t, ctx, `(function () { var l = document.querySelector('link[rel="icon"]'); return l ? l.href : ""; })()`)
	if !strings.Contains(icon, "/assets/favicon.") {
		t.Fatalf("icon link %q", icon)
	}
	loaded, err := chromedp.Run(ctx, chromedp.Evaluate[int](`fetch(`+jsString(icon)+`).then(r => r.ok ? r.headers.get("content-type") === "image/svg+xml" ? 1 : 2 : 0)`, chromedp.EvalAwaitPromise))
	if err != nil || loaded != 1 {
		t.Fatalf("the icon does not load as SVG: %d %v", loaded, err)
	}

	resp, err := chromedp.RunResponse(ctx, chromedp.Navigate(app.URL+"/assets/no-such-file.css"))
	if err != nil || resp.Status != 404 {
		t.Fatalf("unknown asset: %v %v", resp, err)
	}
	if got := mustText(t, ctx, `[data-testid="error"] h1`); got != "Not found" {
		t.Fatalf("unknown asset page h1=%q", got)
	}
	if n := mustEval[int](t, ctx, `document.styleSheets.length`); n < 2 {
		t.Fatalf("the 404 page has %d stylesheets: not styled", n)
	}
	mustFitWidth(t, ctx, "the asset 404", phoneWidth)
}

// TestBrowser_PrivacyTableSplitsNoWordOnAPhone: the retention table wraps
// its sentences at word boundaries on a phone and fits the screen; no word
// ("retirement", "minutes") is broken across two lines.
func TestBrowser_PrivacyTableSplitsNoWordOnAPhone(t *testing.T) {
	t.Parallel()
	for _, mode := range scriptModes {
		t.Run(mode.name, func(t *testing.T) {
			app := MustStartApp(t)
			ctx := adbrowser.MustNew(t, mode.opts...)
			onPhone(t, ctx)
			mustNavigate(t, ctx, "open /privacy", chromedp.Navigate(app.URL+"/privacy"))
			mustFitWidth(t, ctx, "/privacy", phoneWidth)
			// Every word of every cell: a word on two lines has two boxes.
			split := mustEval[[]string](t, ctx, `(() => {
				const out = [];
				for (const cell of document.querySelectorAll('[data-testid="retention"] th, [data-testid="retention"] td')) {
					const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
					for (let n = walker.nextNode(); n; n = walker.nextNode()) {
						for (const m of n.data.matchAll(/\S+/g)) {
							const r = document.createRange();
							r.setStart(n, m.index);
							r.setEnd(n, m.index + m[0].length);
							if (r.getClientRects().length > 1) out.push(m[0]);
						}
					}
				}
				return out;
			})()`)
			if len(split) > 0 {
				t.Fatalf("words broken across lines at %d px: %q", phoneWidth, split)
			}
			if n := mustCount(t, ctx, `[data-testid="retention"] td`); n < 10 {
				t.Fatalf("the retention table has %d cells", n)
			}
		})
	}
}
