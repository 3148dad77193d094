package browsertest

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"admit/handlers"
	"admit/internal/browser"
	"admit/internal/oidcprovider"
	"admit/store"
	"admit/views"
)

// lookAndAudit audits the page the tab shows with axe-core in every view
// of a11yViews (light and dark, desktop and phone) and, when
// ADMIT_SCREENSHOTS is set, saves a screenshot of each view to
// /tmp/admit-<name>-<scheme>-<width>.png. A page loaded with JavaScript
// off stays as it was parsed; scripts are turned on only to run axe-core,
// then set back as they were.
func lookAndAudit(t *testing.T, ctx context.Context, axe, name string, noJS bool) {
	t.Helper()
	if err := setScriptsDisabled(ctx, false); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](axe)); err != nil {
		t.Fatalf("load axe-core into %s: %v", name, err)
	}
	for _, v := range a11yViews {
		if err := setView(ctx, v); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`document.activeElement && document.activeElement.blur()`)); err != nil {
			t.Fatal(err)
		}
		for _, f := range runAxe(t, ctx, v) {
			t.Errorf("%s [%s]: %s", name, v, f)
		}
		mustFitWidth(t, ctx, name, int(v.Width))
		if os.Getenv("ADMIT_SCREENSHOTS") != "" {
			js := map[bool]string{false: "js", true: "nojs"}[noJS]
			browser.Screenshot(t, ctx, filepath.Join(os.TempDir(),
				"admit-"+name+"-"+js+"-"+v.Scheme+"-"+strconv.Itoa(int(v.Width))+".png"))
		}
	}
	if err := setView(ctx, a11yViews[0]); err != nil {
		t.Fatal(err)
	}
	if err := setScriptsDisabled(ctx, noJS); err != nil {
		t.Fatal(err)
	}
}

// oidcSignInTo signs the tab in through the test provider as whoever the
// provider holds now, from the sign-in page returning to path.
func oidcSignInTo(t *testing.T, ctx context.Context, app *testApp, path string) {
	t.Helper()
	mustNavigate(t, ctx, "open sign-in", chromedp.Navigate(app.URL+"/sign-in?redirect_url="+strings.ReplaceAll(path, "/", "%2F")))
	resp := mustNavigate(t, ctx, "continue with the provider", chromedp.Click(chromedp.CSS(`[data-testid="oidc-sign-in"]`)))
	if resp.URL != app.URL+path {
		t.Fatalf("sign-in led to %s, want %s", resp.URL, path)
	}
}

// TestBrowser_AnUnverifiedAddressIsNamedWithItsProviderAndWhatToDo signs a
// recipient in through a provider that has not verified their address:
// /redeem, the menu, a refused code, /me and /me/account name the
// address, say it is not verified, by whom, and what to do. Once the
// provider verifies it and the person signs in again, the whole pasted
// invitation message redeems.
func TestBrowser_AnUnverifiedAddressIsNamedWithItsProviderAndWhatToDo(t *testing.T) {
	axe := mustReadAxe(t)
	for _, mode := range scriptModes {
		t.Run(mode.name, func(t *testing.T) {
			noJS := mode.opts != nil
			app := mustOIDCApp(t)
			const email = "reader@example.com"
			inv := newAccessKit(app).Invite(t, app.Demo, email, true)
			ctx := browser.MustNew(t, mode.opts...)
			if err := setView(ctx, a11yViews[0]); err != nil {
				t.Fatal(err)
			}
			app.OIDC.SetUser(oidcprovider.User{Sub: oidcSub(email), Email: email, EmailVerified: oidcprovider.Unverified})
			oidcSignInTo(t, ctx, app, "/redeem")

			unverifiedShown := func(page string) {
				t.Helper()
				if got := mustText(t, ctx, `[data-testid="signed-in-address"]`); !strings.Contains(got, email) || !strings.Contains(got, "not verified") {
					t.Errorf("%s: the signed-in address reads %q", page, got)
				}
				got := mustText(t, ctx, `[data-testid="address-unverified"]`)
				for _, want := range []string{"Test ID has not verified this address", "verify the address with Test ID", "sign in again"} {
					if !strings.Contains(got, want) {
						t.Errorf("%s: the unverified notice %q lacks %q", page, got, want)
					}
				}
			}
			unverifiedShown("/redeem")
			openNavMenu(t, ctx)
			if got := mustText(t, ctx, `[data-testid="signed-in-as"]`); !strings.Contains(got, email) || !strings.Contains(got, "(not verified)") {
				t.Errorf("the menu reads %q, want the address marked not verified", got)
			}
			lookAndAudit(t, ctx, axe, "redeem-unverified", noJS)

			// The code is refused: the refusal names the address and lists
			// its possible reasons.
			if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("code"), inv.Code)); err != nil {
				t.Fatal(err)
			}
			recipientBrowserLoad(t, ctx, "redeem while unverified", 404, chromedp.Click(chromedp.CSS(`#redeem-form button[type="submit"]`)))
			if got := mustText(t, ctx, `[data-testid="code-error"]`); !strings.Contains(got, "signed in with, "+email) {
				t.Errorf("the refusal %q does not name %s", got, email)
			}
			reasons := mustText(t, ctx, `[data-testid="redeem-reasons"]`)
			for _, want := range []string{"exactly that spelling", "not verified with Test ID", "case-sensitive", "expired"} {
				if !strings.Contains(reasons, want) {
					t.Errorf("the reasons %q lack %q", reasons, want)
				}
			}
			if got := mustEval[string](t, ctx, `document.getElementById("code").value`); got != "" {
				t.Error("a refused code is shown again")
			}
			unverifiedShown("refused /redeem")
			lookAndAudit(t, ctx, axe, "redeem-denied", noJS)

			mustNavigate(t, ctx, "open /me", chromedp.Navigate(app.URL+"/me"))
			unverifiedShown("/me")
			if n := mustCount(t, ctx, `[data-testid="no-entries"]`); n != 0 {
				t.Error("/me says no verified address is on a waitlist while it has none")
			}
			lookAndAudit(t, ctx, axe, "me-unverified", noJS)
			mustNavigate(t, ctx, "open /me/account", chromedp.Navigate(app.URL+"/me/account"))
			unverifiedShown("/me/account")
			lookAndAudit(t, ctx, axe, "account-unverified", noJS)

			// Verified at the provider, signed out and in again: the whole
			// pasted message redeems.
			app.OIDC.SetUser(oidcprovider.User{Sub: oidcSub(email), Email: email, EmailVerified: oidcprovider.Verified})
			openNavMenu(t, ctx)
			mustNavigate(t, ctx, "sign out", chromedp.Click(chromedp.CSS(`#sign-out-form button[type="submit"]`)))
			oidcSignInTo(t, ctx, app, "/redeem")
			if n := mustCount(t, ctx, `[data-testid="address-unverified"]`); n != 0 {
				t.Error("a verified address is still called unverified")
			}
			if got := mustText(t, ctx, `[data-testid="signed-in-address"]`); !strings.Contains(got, email) {
				t.Errorf("the signed-in address reads %q", got)
			}
			message := "Hello,\nyou are invited to the demo. Your code:\n\n" + inv.Code + "\n\nRedeem it at " + app.URL + "/redeem within a week."
			if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("code"), message)); err != nil {
				t.Fatal(err)
			}
			resp := mustNavigate(t, ctx, "redeem the pasted message", chromedp.Click(chromedp.CSS(`#redeem-form button[type="submit"]`)))
			if !strings.HasSuffix(resp.URL, "/early-access/demo") {
				t.Fatalf("redeeming the pasted message led to %s", resp.URL)
			}
		})
	}
}

// TestBrowser_RedeemSaysCodesAreCaseSensitiveAndKeepsTheCodeWhenTheProviderIsDown
// types a code in the wrong letter case (refused as such, not as a wrong
// length), then sends the right code while the provider is down: the 503
// form holds the code, and sending it again once the provider is back
// redeems it.
func TestBrowser_RedeemSaysCodesAreCaseSensitiveAndKeepsTheCodeWhenTheProviderIsDown(t *testing.T) {
	axe := mustReadAxe(t)
	for _, mode := range scriptModes {
		t.Run(mode.name, func(t *testing.T) {
			noJS := mode.opts != nil
			app := mustOIDCApp(t)
			const email = "cased@example.com"
			inv := newAccessKit(app).Invite(t, app.Demo, email, true)
			ctx := browser.MustNew(t, mode.opts...)
			if err := setView(ctx, a11yViews[0]); err != nil {
				t.Fatal(err)
			}
			app.OIDC.SetUser(oidcprovider.User{Sub: oidcSub(email), Email: email, EmailVerified: oidcprovider.Verified})
			oidcSignInTo(t, ctx, app, "/redeem")

			for _, wrong := range []string{strings.ToLower(inv.Code), strings.ToUpper(inv.Code)} {
				if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("code"), wrong)); err != nil {
					t.Fatal(err)
				}
				recipientBrowserLoad(t, ctx, "redeem in the wrong case", 400, chromedp.Click(chromedp.CSS(`#redeem-form button[type="submit"]`)))
				got := mustText(t, ctx, `[data-testid="code-error"]`)
				if !strings.Contains(got, "case-sensitive") || strings.Contains(got, "exactly 43 characters") {
					t.Errorf("a code in the wrong case is refused with %q", got)
				}
			}
			lookAndAudit(t, ctx, axe, "redeem-case", noJS)

			app.OIDC.SetDown(true)
			if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("code"), inv.Code)); err != nil {
				t.Fatal(err)
			}
			resp := recipientBrowserLoad(t, ctx, "redeem while the provider is down", 503, chromedp.Click(chromedp.CSS(`#redeem-form button[type="submit"]`)))
			if got := resp.Headers["Retry-After"]; got == nil || got == "" {
				t.Error("the 503 has no Retry-After")
			}
			if got := mustEval[string](t, ctx, `document.getElementById("code").value`); got != inv.Code {
				t.Errorf("the 503 form holds %q, want the code sent", got)
			}
			if got := mustText(t, ctx, `[data-testid="error-summary"]`); !strings.Contains(got, "not checked") {
				t.Errorf("the 503 form says %q", got)
			}
			lookAndAudit(t, ctx, axe, "redeem-unavailable", noJS)
			app.OIDC.SetDown(false)
			resp = mustNavigate(t, ctx, "send it again", chromedp.Click(chromedp.CSS(`#redeem-form button[type="submit"]`)))
			if !strings.HasSuffix(resp.URL, "/early-access/demo") {
				t.Fatalf("sending the kept code again led to %s", resp.URL)
			}
		})
	}
}

// TestBrowser_ASignedInApplicantSeesTheirEntryOnTheWaitlistPage opens the
// waitlist page signed in with an address that has an entry there: the
// page shows its status and leads to /me instead of the form, waiting and
// then withdrawn (with the date it may join again). A visitor signed in
// with another address, and an anonymous one, see the form as before.
func TestBrowser_ASignedInApplicantSeesTheirEntryOnTheWaitlistPage(t *testing.T) {
	axe := mustReadAxe(t)
	for _, mode := range scriptModes {
		t.Run(mode.name, func(t *testing.T) {
			noJS := mode.opts != nil
			app := MustStartApp(t)
			const email = "Waiting@example.test"
			newAccessKit(app).Entry(t, app.Demo, email)
			ctx := browser.MustNew(t, mode.opts...)
			holdDevKey(t, ctx, app)
			if err := setView(ctx, a11yViews[0]); err != nil {
				t.Fatal(err)
			}
			page := app.URL + "/waitlist/demo"

			mustNavigate(t, ctx, "open the waitlist signed out", chromedp.Navigate(page))
			if got := mustCount(t, ctx, `[data-testid="signup-form"]`); got != 1 {
				t.Fatalf("an anonymous visitor sees %d forms", got)
			}
			if got := mustCount(t, ctx, `[data-testid="own-entry"]`); got != 0 {
				t.Fatal("an anonymous visitor sees an entry")
			}

			mustNavigate(t, ctx, "open sign-in", chromedp.Navigate(app.URL+"/sign-in?redirect_url=%2Fwaitlist%2Fdemo"))
			signInThroughForm(t, ctx, email)
			mustNavigate(t, ctx, "open the waitlist signed in", chromedp.Navigate(page))
			if got := mustCount(t, ctx, `[data-testid="signup-form"]`); got != 0 {
				t.Fatal("the form is offered to an applicant already on the list")
			}
			if got := mustEval[string](t, ctx, `document.querySelector('[data-testid="own-entry"] [data-testid="entry-state"]').dataset.state`); got != "waiting" {
				t.Fatalf("the entry's state reads %q, want waiting", got)
			}
			own := mustText(t, ctx, `[data-testid="own-entry"]`)
			joined := views.Day(app.Clock.Now())
			for _, want := range []string{email, "On the waitlist", "joined on " + joined} {
				if !strings.Contains(own, want) {
					t.Errorf("the entry reads %q: want %q", own, want)
				}
			}
			lookAndAudit(t, ctx, axe, "waitlist-own-waiting", noJS)
			resp := mustNavigate(t, ctx, "follow the link to /me", chromedp.Click(chromedp.CSS(`[data-testid="own-entry-me"]`)))
			if resp.URL != app.URL+"/me" {
				t.Fatalf("the link led to %s", resp.URL)
			}

			// Withdrawn: the page says so, and when the address may join again.
			mustNavigate(t, ctx, "click Withdraw", chromedp.Click(chromedp.CSS(`[data-slug="demo"] [data-testid="withdraw-link"]`)))
			mustNavigate(t, ctx, "confirm", chromedp.Click(chromedp.CSS(`[data-testid="withdraw-form"] button`)))
			var eraseAfter int64
			if err := app.DB.View(t.Context(), func(tx *store.Tx) error {
				return tx.QueryRow(`SELECT erase_after FROM entries WHERE program_id = ? AND email_key = ?`, app.Demo.ID, email).Scan(&eraseAfter)
			}); err != nil {
				t.Fatal(err)
			}
			mustNavigate(t, ctx, "open the waitlist withdrawn", chromedp.Navigate(page))
			if got := mustCount(t, ctx, `[data-testid="signup-form"]`); got != 0 {
				t.Fatal("the form is offered to a withdrawn applicant before they may join again")
			}
			next := mustText(t, ctx, `[data-testid="own-entry"] [data-testid="entry-next"]`)
			if want := "cannot join it again until the address is erased on " + views.Day(store.FromMillis(eraseAfter)); !strings.Contains(next, want) {
				t.Errorf("the withdrawn entry says %q: want %q", next, want)
			}
			lookAndAudit(t, ctx, axe, "waitlist-own-withdrawn", noJS)

			// Another address sees the form.
			openNavMenu(t, ctx)
			mustNavigate(t, ctx, "sign out", chromedp.Click(chromedp.CSS(`#sign-out-form button[type="submit"]`)))
			mustNavigate(t, ctx, "open sign-in", chromedp.Navigate(app.URL+"/sign-in?redirect_url=%2Fwaitlist%2Fdemo"))
			signInThroughForm(t, ctx, "waiting@example.test")
			mustNavigate(t, ctx, "open the waitlist as another address", chromedp.Navigate(page))
			if got := mustCount(t, ctx, `[data-testid="signup-form"]`); got != 1 {
				t.Fatalf("a visitor signed in without an entry sees %d forms", got)
			}
			if got := mustCount(t, ctx, `[data-testid="own-entry"]`); got != 0 {
				t.Fatal("another address's entry is shown")
			}
		})
	}
}

// TestBrowser_TheRemovalResultSaysWhatALinkCanHaveDone joins twice with one
// address and uses the second signup's link, which removes nothing: the
// result promises nothing a link cannot have done, says that only the
// first signup's link removes, and leads to /me, where a signed-in
// applicant can withdraw. The entry is still there.
func TestBrowser_TheRemovalResultSaysWhatALinkCanHaveDone(t *testing.T) {
	axe := mustReadAxe(t)
	for _, mode := range scriptModes {
		t.Run(mode.name, func(t *testing.T) {
			noJS := mode.opts != nil
			app := MustStartApp(t)
			ctx := browser.MustNew(t, mode.opts...)
			if err := setView(ctx, a11yViews[0]); err != nil {
				t.Fatal(err)
			}
			const email = "twice@example.com"
			joinInBrowser(t, ctx, app, email)
			second := joinInBrowser(t, ctx, app, email)

			mustNavigate(t, ctx, "open the second link", chromedp.Navigate(second))
			if noJS {
				if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("token"), second)); err != nil {
					t.Fatal(err)
				}
			} else if err := browser.WaitFor(ctx, `document.getElementById("token").value !== ""`, browserWait); err != nil {
				t.Fatalf("the script never filled the token: %v", err)
			}
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#remove-form button[type="submit"]`)),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="removed"]`))); err != nil {
				t.Fatalf("remove: %v", err)
			}
			text := mustText(t, ctx, `[data-testid="removed"]`)
			for _, want := range []string{"If this link was the one shown when your address first joined",
				"only the first signup of an address gets one that removes", "the entry stays", "My waitlists"} {
				if !strings.Contains(text, want) {
					t.Errorf("the removal result %q lacks %q", text, want)
				}
			}
			if strings.Contains(text, "nothing else you need to do") {
				t.Error("the removal result still promises there is nothing else to do")
			}
			if got := mustEval[string](t, ctx, `document.querySelector('[data-testid="removed-me-link"]').getAttribute("href")`); got != "/me" {
				t.Errorf("the removal result links to %q, want /me", got)
			}
			var state string
			if err := app.DB.View(t.Context(), func(tx *store.Tx) error {
				return tx.QueryRow(`SELECT state FROM entries WHERE program_id = ? AND email_key = ?`, app.Demo.ID, email).Scan(&state)
			}); err != nil || state != "waiting" {
				t.Fatalf("the entry after the second link: %q %v, want waiting", state, err)
			}
			lookAndAudit(t, ctx, axe, "removed", noJS)
		})
	}
}

// TestBrowser_AnEmptyAddressAndAnUntickedChoiceAreBothReported submits the
// signup form with neither: both fields are marked invalid and the
// summary lists both, each leading to its field.
func TestBrowser_AnEmptyAddressAndAnUntickedChoiceAreBothReported(t *testing.T) {
	axe := mustReadAxe(t)
	for _, mode := range scriptModes {
		t.Run(mode.name, func(t *testing.T) {
			noJS := mode.opts != nil
			app := MustStartApp(t)
			ctx := browser.MustNew(t, mode.opts...)
			if err := setView(ctx, a11yViews[0]); err != nil {
				t.Fatal(err)
			}
			mustNavigate(t, ctx, "open the waitlist", chromedp.Navigate(app.URL+"/waitlist/demo"))
			signupBrowserLoad(t, ctx, "submit nothing", 400, chromedp.Click(chromedp.CSS(`#signup-form button[type="submit"]`)))
			for _, id := range []string{"email", "permission"} {
				if got := mustEval[string](t, ctx, `document.getElementById("`+id+`").getAttribute("aria-invalid") || ""`); got != "true" {
					t.Errorf("#%s aria-invalid=%q, want true", id, got)
				}
				if got := mustCount(t, ctx, `#error-summary a[href="#`+id+`"]`); got != 1 {
					t.Errorf("the summary links to #%s %d times, want once", id, got)
				}
				if got := mustCount(t, ctx, `#`+id+`-error`); got != 1 {
					t.Errorf("#%s has %d messages beside it, want one", id, got)
				}
			}
			if got := mustText(t, ctx, `#error-summary-title`); !strings.Contains(got, "2") && !strings.Contains(strings.ToLower(got), "two") {
				t.Errorf("the summary's title %q does not count two problems", got)
			}
			lookAndAudit(t, ctx, axe, "signup-two-errors", noJS)
		})
	}
}

// submitToBeAsked sends the signup form expecting a question (selector)
// before anything is stored: without JavaScript on the page the server
// answers with, with JavaScript inline, without leaving the page.
func submitToBeAsked(t *testing.T, ctx context.Context, app *testApp, noJS bool, selector string) {
	t.Helper()
	entries := owCount(t, app, `SELECT count(*) FROM entries`)
	if noJS {
		mustNavigate(t, ctx, "submit", chromedp.Click(chromedp.CSS(`#signup-form button[type="submit"]`)))
	} else {
		if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.__stay = 1`),
			chromedp.Click(chromedp.CSS(`#signup-form button[type="submit"]`))); err != nil {
			t.Fatal(err)
		}
		if err := browser.WaitFor(ctx, `!!document.querySelector(`+jsString(selector)+`)`, browserWait); err != nil {
			t.Fatalf("the question %s never appeared inline: %v", selector, err)
		}
		if !mustEval[bool](t, ctx, `window.__stay === 1`) {
			t.Fatal("the page was left: the question was not asked inline")
		}
	}
	if got := owCount(t, app, `SELECT count(*) FROM entries`); got != entries {
		t.Fatalf("entries %d → %d before the question was answered", entries, got)
	}
}

// TestBrowser_CapitalsInTheAddressAreAskedAboutOnce signs up with capitals
// before the @: the form asks once, naming both spellings; "small
// letters" stores the lower-case one, "as typed" keeps the capitals, and
// the owner's entry page marks the address kept with capitals. The hint
// above the field is short.
func TestBrowser_CapitalsInTheAddressAreAskedAboutOnce(t *testing.T) {
	axe := mustReadAxe(t)
	for _, mode := range scriptModes {
		t.Run(mode.name, func(t *testing.T) {
			noJS := mode.opts != nil
			app := MustStartApp(t)
			ctx := browser.MustNew(t, mode.opts...)
			holdDevKey(t, ctx, app)
			if err := setView(ctx, a11yViews[0]); err != nil {
				t.Fatal(err)
			}
			join := func(typed, answer string) {
				t.Helper()
				mustNavigate(t, ctx, "open the waitlist", chromedp.Navigate(app.URL+"/waitlist/demo"))
				if words := len(strings.Fields(mustText(t, ctx, `#email-help`))); words > 15 {
					t.Errorf("the address hint has %d words, want a short one", words)
				}
				if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("email"), typed), chromedp.Click(chromedp.ID("permission"))); err != nil {
					t.Fatal(err)
				}
				submitToBeAsked(t, ctx, app, noJS, `[data-testid="case-question"]`)
				if got := mustCount(t, ctx, `[data-testid="case-question"]`); got != 1 {
					t.Fatalf("%s: the form did not ask about capitals", typed)
				}
				q := mustText(t, ctx, `[data-testid="case-question"]`)
				for _, want := range []string{typed, handlers.LowerLocalPart(typed), "works only for a sign-in whose address is spelled exactly the same way"} {
					if !strings.Contains(q, want) {
						t.Errorf("the question %q lacks %q", q, want)
					}
				}
				if answer == "lower" {
					lookAndAudit(t, ctx, axe, "signup-case-question", noJS)
				}
				if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("case-"+answer))); err != nil {
					t.Fatal(err)
				}
				resp := mustNavigate(t, ctx, "send again", chromedp.Click(chromedp.CSS(`#signup-form button[type="submit"]`)))
				if resp.URL != app.URL+"/waitlist/demo/received" {
					t.Fatalf("%s: answering led to %s", typed, resp.URL)
				}
			}
			join("Cap@example.com", "lower")
			join("Keep.Me@example.com", "keep")
			entryID := func(email string) string {
				var id string
				if err := app.DB.View(t.Context(), func(tx *store.Tx) error {
					return tx.QueryRow(`SELECT id FROM entries WHERE program_id = ? AND email_key = ?`, app.Demo.ID, email).Scan(&id)
				}); err != nil {
					t.Fatalf("no entry %s: %v", email, err)
				}
				return id
			}
			lower, kept := entryID("cap@example.com"), entryID("Keep.Me@example.com")
			if n := owCount(t, app, `SELECT count(*) FROM entries WHERE email_key = 'Cap@example.com'`); n != 0 {
				t.Error("the address was stored as typed after choosing small letters")
			}

			mustNavigate(t, ctx, "open sign-in", chromedp.Navigate(app.URL+"/sign-in"))
			signInThroughForm(t, ctx, "owner@example.test")
			mustNavigate(t, ctx, "open the kept entry", chromedp.Navigate(app.URL+"/owner/programs/"+app.Demo.ID+"/entries/"+kept))
			if got := mustCount(t, ctx, `[data-testid="address-capitals"]`); got != 1 {
				t.Error("the owner's entry page does not mark an address kept with capitals")
			}
			lookAndAudit(t, ctx, axe, "owner-entry-capitals", noJS)
			mustNavigate(t, ctx, "open the lower-case entry", chromedp.Navigate(app.URL+"/owner/programs/"+app.Demo.ID+"/entries/"+lower))
			if got := mustCount(t, ctx, `[data-testid="address-capitals"]`); got != 0 {
				t.Error("the owner's entry page marks an address without capitals")
			}
		})
	}
}

// TestBrowser_ALikelyMistypedDomainIsHintedAndTheReceivedPageNamesTheAddress
// signs up with a well-known domain mistyped: before anything is sent to
// the list the form asks "did you mean …?", keeping the address as typed
// unless the person chooses the suggestion; the received page names the
// address admitted, which no URL holds.
func TestBrowser_ALikelyMistypedDomainIsHintedAndTheReceivedPageNamesTheAddress(t *testing.T) {
	axe := mustReadAxe(t)
	for _, mode := range scriptModes {
		t.Run(mode.name, func(t *testing.T) {
			noJS := mode.opts != nil
			app := MustStartApp(t)
			ctx := browser.MustNew(t, mode.opts...)
			if err := setView(ctx, a11yViews[0]); err != nil {
				t.Fatal(err)
			}
			join := func(typed, answer, admitted string) {
				t.Helper()
				mustNavigate(t, ctx, "open the waitlist", chromedp.Navigate(app.URL+"/waitlist/demo"))
				if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("email"), typed), chromedp.Click(chromedp.ID("permission"))); err != nil {
					t.Fatal(err)
				}
				submitToBeAsked(t, ctx, app, noJS, `[data-testid="domain-question"]`)
				if got := mustCount(t, ctx, `[data-testid="domain-question"]`); got != 1 {
					t.Fatalf("%s: the form offers no hint", typed)
				}
				q := mustText(t, ctx, `[data-testid="domain-question"]`)
				for _, want := range []string{"Did you mean gmail.com?", typed, "Nothing is changed unless you choose it"} {
					if !strings.Contains(q, want) {
						t.Errorf("the hint %q lacks %q", q, want)
					}
				}
				if got := mustEval[bool](t, ctx, `document.getElementById("domain-keep").checked`); !got {
					t.Error("the hint's default is not the address as typed")
				}
				if answer == "keep" {
					lookAndAudit(t, ctx, axe, "signup-domain-hint", noJS)
				}
				if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("domain-"+answer))); err != nil {
					t.Fatal(err)
				}
				resp := mustNavigate(t, ctx, "send again", chromedp.Click(chromedp.CSS(`#signup-form button[type="submit"]`)))
				if resp.URL != app.URL+"/waitlist/demo/received" {
					t.Fatalf("%s: answering led to %s", typed, resp.URL)
				}
				if got := mustText(t, ctx, `[data-testid="received-address"]`); got != admitted {
					t.Errorf("the received page names %q, want %q", got, admitted)
				}
				if n := owCount(t, app, `SELECT count(*) FROM entries WHERE email_key = ?`, admitted); n != 1 {
					t.Errorf("entries for %s=%d, want 1", admitted, n)
				}
				if answer == "keep" {
					lookAndAudit(t, ctx, axe, "received-address", noJS)
				}
			}
			join("ada@gmial.con", "keep", "ada@gmial.con")
			join("bob@gmial.com", "suggested", "bob@gmail.com")
		})
	}
}

// TestBrowser_ARetiredProgramSaysItHasEndedAndOffersNothing retires a
// program in which a recipient has access: /me says "This program has
// ended" at the top of its card, with how long until the address is
// erased, and offers no action; the public page says "closed" before the
// notice.
func TestBrowser_ARetiredProgramSaysItHasEndedAndOffersNothing(t *testing.T) {
	axe := mustReadAxe(t)
	for _, mode := range scriptModes {
		t.Run(mode.name, func(t *testing.T) {
			noJS := mode.opts != nil
			app := MustStartApp(t)
			env := &a11yEnv{App: app, Kit: newAccessKit(app)}
			p := env.program(t, "ended")
			const email = "reader@example.com"
			env.Kit.Grant(t, p, email, "user_reader")
			env.retire(t, p)
			// The retirement's steps run: every entry gets its erasure date.
			if _, err := app.DB.FinishRetirements(t.Context()); err != nil {
				t.Fatal(err)
			}
			ctx := browser.MustNew(t, mode.opts...)
			holdDevKey(t, ctx, app)
			if err := setView(ctx, a11yViews[0]); err != nil {
				t.Fatal(err)
			}

			mustNavigate(t, ctx, "open the public page", chromedp.Navigate(app.URL+"/waitlist/ended"))
			if !mustEval[bool](t, ctx, `(() => {
				const closed = document.querySelector('[data-testid="closed"]'), notice = document.querySelector('[data-testid="notice"]');
				return !!closed && !!notice && !!(closed.compareDocumentPosition(notice) & Node.DOCUMENT_POSITION_FOLLOWING);
			})()`) {
				t.Error("the retired program's page does not say it is closed before the notice")
			}
			if got := mustCount(t, ctx, `[data-testid="closed"]`); got != 1 {
				t.Errorf("the page says closed %d times, want once", got)
			}
			lookAndAudit(t, ctx, axe, "waitlist-retired", noJS)

			mustNavigate(t, ctx, "open sign-in", chromedp.Navigate(app.URL+"/sign-in?redirect_url=%2Fme"))
			signInThroughForm(t, ctx, email)
			card := `[data-slug="ended"]`
			if got := mustText(t, ctx, card+` header`); !strings.HasPrefix(strings.TrimSpace(strings.TrimPrefix(got, p.Name)), "This program has ended") {
				t.Errorf("the card's top reads %q, want the program named, then that it has ended", got)
			}
			for _, action := range []string{"withdraw-link", "open-private", "redeem-link"} {
				if got := mustCount(t, ctx, card+` [data-testid="`+action+`"]`); got != 0 {
					t.Errorf("the ended program's card offers %s", action)
				}
			}
			next := mustText(t, ctx, card+` [data-testid="entry-next"]`)
			if !strings.Contains(next, "nothing you need to do") || !strings.Contains(next, "(in ") {
				t.Errorf("the ended card says %q: want nothing to do and how long until erasure", next)
			}
			if strings.Contains(next, "ended your access") {
				t.Errorf("the ended card still blames the owner for ending access: %q", next)
			}
			lookAndAudit(t, ctx, axe, "me-retired", noJS)
		})
	}
}

// TestBrowser_SignInSaysItIsUnavailableWhileTheProviderIsDown starts an
// OpenID Connect sign-in while the provider does not answer: admit's own
// page says sign-in is unavailable for now (503, Retry-After) instead of
// sending the browser away; once the provider is back, its retry link
// signs in.
func TestBrowser_SignInSaysItIsUnavailableWhileTheProviderIsDown(t *testing.T) {
	axe := mustReadAxe(t)
	for _, mode := range scriptModes {
		t.Run(mode.name, func(t *testing.T) {
			noJS := mode.opts != nil
			app := mustOIDCApp(t)
			ctx := browser.MustNew(t, mode.opts...)
			if err := setView(ctx, a11yViews[0]); err != nil {
				t.Fatal(err)
			}
			const email = "later@example.com"
			app.OIDC.SetUser(oidcprovider.User{Sub: oidcSub(email), Email: email, EmailVerified: oidcprovider.Verified})
			mustNavigate(t, ctx, "open sign-in", chromedp.Navigate(app.URL+"/sign-in?redirect_url=%2Fme"))
			app.OIDC.SetDown(true)
			resp := recipientBrowserLoad(t, ctx, "continue while the provider is down", 503,
				chromedp.Click(chromedp.CSS(`[data-testid="oidc-sign-in"]`)))
			if !strings.HasPrefix(resp.URL, app.URL+"/auth/start") {
				t.Fatalf("the browser was sent to %s", resp.URL)
			}
			if got := resp.Headers["Retry-After"]; got == nil || got == "" {
				t.Error("the 503 has no Retry-After")
			}
			if got := mustText(t, ctx, `h1`); got != "Sign-in is unavailable for now" {
				t.Errorf("h1=%q", got)
			}
			if got := mustText(t, ctx, `[data-testid="sign-in-unavailable"]`); !strings.Contains(got, "Test ID") {
				t.Errorf("the page does not name the provider: %q", got)
			}
			lookAndAudit(t, ctx, axe, "sign-in-unavailable", noJS)
			app.OIDC.SetDown(false)
			resp = mustNavigate(t, ctx, "try again", chromedp.Click(chromedp.CSS(`[data-testid="sign-in-retry"]`)))
			if resp.URL != app.URL+"/me" {
				t.Fatalf("trying again led to %s, want /me", resp.URL)
			}
		})
	}
}
