package browsertest

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
			newAccessKit(app).Entry(t, app.Demo, email)
			ctx := adbrowser.MustNew(t, mode.opts...)
			holdDevKey(t, ctx, app)
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
			holdDevKey(t, ctx, app)
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
			if err := adbrowser.WaitFor(ctx, `document.querySelector('[data-testid="nav-menu"]').open`, browserWait); err != nil {
				t.Fatalf("the menu did not open: %v", err)
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

func TestBrowser_QueueBulkActionsStayInReachOnAPhoneAndEntriesLeadToTheirNeighbours(t *testing.T) {
	jsModes(t, func(t *testing.T, js bool) {
		app := MustStartApp(t, withClerk())
		emails := make([]string, 30)
		for i := range emails {
			emails[i] = "person" + string(rune('a'+i/10)) + string(rune('0'+i%10)) + "@example.com"
		}
		ids := owEntriesInOrder(t, app, "waiting", emails...)
		ctx := owBrowserMode(t, app, js)
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(phoneW, phoneH, chromedp.EmulatePortrait,
			chromedp.EmulateMobile, chromedp.EmulateScale(2))); err != nil {
			t.Fatalf("phone viewport: %v", err)
		}
		mode := map[bool]string{true: "js", false: "nojs"}[js]
		owLoad(t, ctx, "open the queue", chromedp.Navigate(app.URL+"/owner/programs/"+app.Demo.ID+"/entries?state=waiting"))
		inView := `(() => { const r = document.querySelector('[data-testid="bulk-submit"]').getBoundingClientRect();
			return r.height > 0 && r.top >= 0 && r.bottom <= innerHeight; })()`
		if h := owEval[float64](t, ctx, `document.documentElement.scrollHeight`); h < 3*phoneH {
			t.Fatalf("the queue is %.0f px long: too short to test", h)
		}
		// With JavaScript the bar shows once an entry is chosen.
		if js {
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="choose-entry"]`))); err != nil {
				t.Fatalf("choose an entry: %v", err)
			}
		}
		// Halfway down the cards, the bulk actions are on the screen.
		owEval[bool](t, ctx, `(window.scrollTo(0, document.querySelector('[data-testid="queue-row"]:nth-child(15)').getBoundingClientRect().top + scrollY - 200), true)`)
		owWaitFor(t, ctx, "the bulk actions on the screen mid-list", inView)
		if js {
			// The choice made to show the bar is taken back.
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="choose-entry"]`))); err != nil {
				t.Fatalf("unchoose the entry: %v", err)
			}
		}
		owWantFits(t, ctx, "queue", phoneW)

		box := `[data-testid="queue-row"][data-entry-id="` + ids[emails[14]] + `"] [data-testid="choose-entry"]`
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(box))); err != nil {
			t.Fatalf("choose an entry: %v", err)
		}
		if js {
			owWaitFor(t, ctx, "the count of chosen entries",
				`document.querySelector('[data-testid="bulk-count"]').textContent === "1 entry chosen" && !document.querySelector('[data-testid="bulk-count"]').hidden`)
		} else if !owEval[bool](t, ctx, `document.querySelector('[data-testid="bulk-count"]').hidden`) {
			t.Errorf("without JavaScript an empty count is shown")
		}
		owScreenshot(t, ctx, "queue-phone-bar-"+mode)
		if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`[data-testid="bulk-reason"]`), "meets_policy")); err != nil {
			t.Fatalf("choose a reason: %v", err)
		}
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="bulk-submit"]`))); err != nil {
			t.Fatalf("select the chosen: %v", err)
		}
		owWaitFor(t, ctx, "the selection", `!document.querySelector('[data-entry-id="`+ids[emails[14]]+`"]')`)
		if n := owCount(t, app, `SELECT count(*) FROM entries WHERE id = ? AND state = 'selected'`, ids[emails[14]]); n != 1 {
			t.Fatalf("the chosen entry was not selected")
		}

		// The entry page leads to the entries before and after it.
		owLoad(t, ctx, "open an entry", chromedp.Navigate(app.URL+"/owner/programs/"+app.Demo.ID+"/entries/"+ids[emails[5]]))
		if got := owEval[string](t, ctx, `document.querySelector('[data-testid="entry-prev"]').getAttribute('href')`); !strings.HasSuffix(got, ids[emails[4]]) {
			t.Errorf("previous entry leads to %s, want %s's entry", got, emails[4])
		}
		owScreenshot(t, ctx, "entry-phone-pager-"+mode)
		owLoad(t, ctx, "next entry", chromedp.Click(chromedp.CSS(`[data-testid="entry-next"]`)))
		if got := owEval[string](t, ctx, `location.pathname`); !strings.HasSuffix(got, ids[emails[6]]) {
			t.Errorf("next entry led to %s, want %s's entry", got, emails[6])
		}
		owLoad(t, ctx, "open the first entry", chromedp.Navigate(app.URL+"/owner/programs/"+app.Demo.ID+"/entries/"+ids[emails[0]]))
		if owCountIn(t, ctx, `[data-testid="entry-prev"]`) != 0 || owCountIn(t, ctx, `[data-testid="entry-next"]`) != 1 {
			t.Errorf("the first entry offers a previous entry, or no next one")
		}
	})
}
