package handlers

import (
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
