package browsertest

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"admit/store"
)

// TestSections_InBrowser: with JavaScript on (1280 px) and off (390 px),
// the sections are links that load their own pages; the queue's selection
// bar stays in view (sticky) and, with JavaScript, shows only once an
// entry is chosen; the Invitations section records several sends at once;
// every page passes the accessibility audit.
func TestSections_InBrowser(t *testing.T) {
	for _, m := range ofModes {
		t.Run(m.name, func(t *testing.T) {
			app := MustStartApp(t)
			for _, e := range []string{"ro@example.com", "sa@example.com"} {
				owIssue(t, app, app.Demo.ID, mustInsertEntry(t, app.DB, app.Demo, e, store.StateSelected))
			}
			mustInsertEntry(t, app.DB, app.Demo, "ty@example.com", store.StateWaiting)
			ctx := ofBrowser(t, app, m)
			base := app.URL + "/owner/programs/" + app.Demo.ID
			a11yLoad(t, ctx, "overview", 200, chromedp.Navigate(base))
			ofScreenshot(t, ctx, "overview-"+ofShot(m))
			ofAudit(t, ctx, m, "overview")
			for _, sec := range []string{"Queue", "Invitations", "Content", "Settings", "History", "Overview"} {
				a11yLoad(t, ctx, "open "+sec, 200, chromedp.Click(chromedp.Search(`//nav[@aria-label="Program sections"]//a[normalize-space(.)="`+sec+`"]`)))
				if got := mustText(t, ctx, `nav[aria-label="Program sections"] [aria-current="page"]`); got != sec {
					t.Fatalf("after following %s the current section is %q", sec, got)
				}
			}

			a11yLoad(t, ctx, "queue", 200, chromedp.Navigate(base+"/entries?state=waiting"))
			if got := owEval[string](t, ctx, `getComputedStyle(document.querySelector(".bulk-actions")).position`); got != "sticky" {
				t.Fatalf("the selection bar's position is %q, want sticky", got)
			}
			shown := `getComputedStyle(document.querySelector(".bulk-actions")).display !== "none"`
			if m.js {
				if owEval[bool](t, ctx, shown) {
					t.Fatal("with JavaScript the selection bar shows before anything is chosen")
				}
				if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="choose-entry"]`))); err != nil {
					t.Fatal(err)
				}
				owWaitFor(t, ctx, "the selection bar", shown)
			} else if !owEval[bool](t, ctx, shown) {
				t.Fatal("without JavaScript the selection bar is hidden")
			}
			ofScreenshot(t, ctx, "queue-selection-"+ofShot(m))

			a11yLoad(t, ctx, "invitations", 200, chromedp.Navigate(base+"/invitations"))
			ofAudit(t, ctx, m, "invitations section")
			owEval[bool](t, ctx, `(() => { document.querySelectorAll('[data-testid="choose-invitation"]').forEach(b => b.checked = true); return true })()`)
			ofFill(t, ctx, [2]string{"#bulk-channel", "sms"})
			a11yLoad(t, ctx, "record", 200, chromedp.Click(chromedp.CSS(`[data-testid="invitations-record-submit"]`)))
			if got := mustText(t, ctx, `[data-testid="flash"]`); !strings.Contains(got, "Recorded the send for 2") {
				t.Fatalf("flash %q", got)
			}
			ofScreenshot(t, ctx, "invitations-"+ofShot(m))
		})
	}
}
