package handlers

import (
	"time"

	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	adbrowser "admit/internal/browser"
)

// dangerBackground is the owner console's danger button colour
// (assets/admit.css, button.danger).
const dangerBackground = "rgb(180, 35, 24)"

func TestBrowser_ApplicantsIrreversibleButtonsAreDangerAndStatesAreWords(t *testing.T) {
	for _, mode := range scriptModes {
		t.Run(mode.name, func(t *testing.T) {
			app := MustStartApp(t)
			const email = "leaver@example.com"
			newAccessKit(app).entry(t, app.Demo, email)
			ctx := adbrowser.MustNew(t, mode.opts...)
			onPhone(t, ctx)

			mustNavigate(t, ctx, "open the withdraw page", chromedp.Navigate(app.URL+"/me/waitlist/demo/withdraw"))
			signInThroughForm(t, ctx, email)
			if loc := mustEval[string](t, ctx, `location.pathname`); loc != "/me/waitlist/demo/withdraw" {
				t.Fatalf("after sign-in at %s, want the withdraw page", loc)
			}
			if got, want := mustText(t, ctx, `[data-testid="entry-state"]`), "On the waitlist"; got != want {
				t.Errorf("the confirmation says the entry is %q, want %q", got, want)
			}
			if got := mustEval[string](t, ctx, `getComputedStyle(document.querySelector('[data-testid="withdraw-form"] button')).backgroundColor`); got != dangerBackground {
				t.Errorf("the withdraw button is %s, want the danger colour %s", got, dangerBackground)
			}
			mustScreenshot(t, ctx, "withdraw-confirm-"+strings.ReplaceAll(mode.name, " ", "-"))
			mustNavigate(t, ctx, "withdraw", chromedp.Click(chromedp.CSS(`[data-testid="withdraw-form"] button`)))
			if got := mustText(t, ctx, `[data-slug="demo"] [data-testid="entry-state"]`); got != "Withdrawn" {
				t.Errorf("after withdrawing /me says %q", got)
			}

			mustNavigate(t, ctx, "open the removal page", chromedp.Navigate(app.URL+"/manage/"))
			if got := mustEval[string](t, ctx, `getComputedStyle(document.querySelector('[data-testid="remove-form"] button')).backgroundColor`); got != dangerBackground {
				t.Errorf("the remove button is %s, want the danger colour %s", got, dangerBackground)
			}
			mustScreenshot(t, ctx, "manage-"+strings.ReplaceAll(mode.name, " ", "-"))
		})
	}
}

func TestBrowser_SignedInNavigationIsOneRowOnAPhone(t *testing.T) {
	for _, mode := range scriptModes {
		t.Run(mode.name, func(t *testing.T) {
			app := MustStartApp(t)
			ctx := adbrowser.MustNew(t, mode.opts...)
			name := strings.ReplaceAll(mode.name, " ", "-")

			// Wide: every link stands in the row, no menu button.
			if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
				t.Fatal(err)
			}
			mustNavigate(t, ctx, "open sign-in", chromedp.Navigate(app.URL+"/sign-in?redirect_url=%2Fme"))
			signInThroughForm(t, ctx, "owner@example.test")
			for _, sel := range []string{`header a[href="/owner"]`, `header a[href="/me"]`, `header a[href="/redeem"]`, `#sign-out-form button`} {
				if !mustEval[bool](t, ctx, `(() => { const r = document.querySelector(`+jsString(sel)+`).getBoundingClientRect(); return r.width > 0 && r.top < 120 })()`) {
					t.Errorf("at 1280 px %s is not shown in the header row", sel)
				}
			}
			if mustEval[bool](t, ctx, `document.querySelector('[data-testid="nav-menu-button"]').getBoundingClientRect().width > 0`) {
				t.Errorf("at 1280 px the menu button is shown")
			}
			mustScreenshot(t, ctx, "nav-wide-"+name)

			// Phone: one row, main right below it; the menu opens and leads on.
			onPhone(t, ctx)
			mustNavigate(t, ctx, "reload /me", chromedp.Navigate(app.URL+"/me"))
			navH := mustEval[float64](t, ctx, `document.querySelector('header nav').getBoundingClientRect().height`)
			brandH := mustEval[float64](t, ctx, `document.querySelector('header nav > ul').getBoundingClientRect().height`)
			if navH > brandH+8 {
				t.Errorf("the signed-in navigation is %.0f px high on a phone, its first row %.0f px: it takes more than one row", navH, brandH)
			}
			if top := mustEval[float64](t, ctx, `document.querySelector('main').getBoundingClientRect().top`); top > 150 {
				t.Errorf("main starts at %.0f px on a phone", top)
			}
			mustFitWidth(t, ctx, "/me", phoneWidth)
			mustScreenshot(t, ctx, "nav-phone-closed-"+name)
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="nav-menu-button"]`))); err != nil {
				t.Fatalf("open the menu: %v", err)
			}
			if !waitFor(ctx, `document.querySelector('[data-testid="nav-menu"]').open`, 5*time.Second) {
				t.Fatal("the menu did not open")
			}
			if got := mustText(t, ctx, `[data-testid="signed-in-as"]`); !strings.Contains(got, "owner@example.test") {
				t.Errorf("the open menu says %q, want who is signed in", got)
			}
			mustFitWidth(t, ctx, "/me with the menu open", phoneWidth)
			mustScreenshot(t, ctx, "nav-phone-open-"+name)
			resp := mustNavigate(t, ctx, "follow Redeem a code", chromedp.Click(chromedp.CSS(`header a[href="/redeem"]`)))
			if !strings.HasSuffix(resp.URL, "/redeem") {
				t.Errorf("the menu's Redeem link led to %s", resp.URL)
			}
		})
	}
}
