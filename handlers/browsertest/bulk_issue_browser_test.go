package browsertest

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"admit/store"
)

// TestBulkIssue_InBrowserCodesOnceThenOneRecord: in Chromium, with
// JavaScript on (1280 px) and off (390 px), the owner chooses the selected
// entries in the queue, presses "Issue invitations…", confirms one expiry
// (in a dialog with JavaScript, on a page without), and gets one page with
// every address and code; a refused record of the send keeps the codes on
// screen with JavaScript (only the form is replaced) and, without it,
// answers a page that says the codes cannot be shown again; a corrected
// record covers every invitation. Each page passes the accessibility
// audit.
func TestBulkIssue_InBrowserCodesOnceThenOneRecord(t *testing.T) {
	for _, m := range ofModes {
		t.Run(m.name, func(t *testing.T) {
			app := MustStartApp(t)
			for _, e := range []string{"ivy@example.com", "jo@example.com", "kai@example.com"} {
				mustInsertEntry(t, app.DB, app.Demo, e, store.StateSelected)
			}
			mustInsertEntry(t, app.DB, app.Demo, "lou@example.com", store.StateWaiting)
			ctx := ofBrowser(t, app, m)
			a11yLoad(t, ctx, "open the selected entries", 200,
				chromedp.Navigate(app.URL+"/owner/programs/"+app.Demo.ID+"/entries?state=selected"))
			owEval[bool](t, ctx, `(() => { document.querySelectorAll('input[name="entryIds"]').forEach(b => { b.checked = true; b.dispatchEvent(new Event("change", {bubbles: true})) }); return true })()`)
			press := chromedp.Click(chromedp.CSS(`[data-testid="bulk-issue-submit"]`))
			if m.js {
				if err := chromedp.Do(ctx, press); err != nil {
					t.Fatal(err)
				}
				owWaitFor(t, ctx, "the issue dialog", `!!document.querySelector('dialog[open] [data-confirm-kind="bulk-issue"]')`)
			} else {
				a11yLoad(t, ctx, "issue invitations", 200, press)
			}
			listed := mustText(t, ctx, `[data-testid="confirm-entries"]`)
			for _, e := range []string{"ivy@example.com", "jo@example.com", "kai@example.com"} {
				if !strings.Contains(listed, e) {
					t.Fatalf("the confirmation does not name %s: %q", e, listed)
				}
			}
			ofScreenshot(t, ctx, "bulk-issue-confirm-"+ofShot(m))
			a11yLoad(t, ctx, "confirm", 200, chromedp.Click(chromedp.CSS(`[data-testid="confirm-submit"]`)))
			if n := owCountIn(t, ctx, `[data-testid="code"]`); n != 3 {
				t.Fatalf("codes on the page=%d, want 3", n)
			}
			if n := owCount(t, app, `SELECT count(*) FROM invitations`); n != 3 {
				t.Fatalf("invitations=%d, want 3", n)
			}
			if !strings.Contains(mustText(t, ctx, `[data-testid="codes-not-again"]`), "before you record the send") {
				t.Fatal("the page does not warn before the record form")
			}
			ofScreenshot(t, ctx, "bulk-issue-codes-"+ofShot(m))
			ofAudit(t, ctx, m, "codes page")

			ofFill(t, ctx, [2]string{"#bulk-channel", "email"}, [2]string{"#bulk-reference", "to jo@example.com"})
			submit := chromedp.Click(chromedp.CSS(`[data-testid="bulk-delivery-submit"]`))
			if m.js {
				owEval[bool](t, ctx, `window.__samePage = true`)
				if err := chromedp.Do(ctx, submit); err != nil {
					t.Fatal(err)
				}
				owWaitFor(t, ctx, "the refused form in place", `!!document.querySelector('[data-testid="bulk-reference-error"]')`)
				if !owEval[bool](t, ctx, `window.__samePage === true`) || owCountIn(t, ctx, `[data-testid="code"]`) != 3 {
					t.Fatal("the refused record took the codes off the screen")
				}
				ofScreenshot(t, ctx, "bulk-delivery-refused-"+ofShot(m))
				ofAudit(t, ctx, m, "refused record, codes kept")
			} else {
				a11yLoad(t, ctx, "record refused", 400, submit)
				if !strings.Contains(mustText(t, ctx, `[data-testid="codes-not-again"]`), "cannot be shown again") {
					t.Fatal("the refused record's page does not say the codes cannot be shown again")
				}
				ofScreenshot(t, ctx, "bulk-delivery-refused-"+ofShot(m))
				ofAudit(t, ctx, m, "refused record page")
			}
			ofFill(t, ctx, [2]string{"#bulk-channel", "email"}, [2]string{"#bulk-reference", "spring batch"})
			if m.js {
				if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="bulk-delivery-submit"]`))); err != nil {
					t.Fatal(err)
				}
				owWaitFor(t, ctx, "the queue after the record", `!!document.querySelector('[data-testid="flash"]')`)
			} else {
				a11yLoad(t, ctx, "record", 200, chromedp.Click(chromedp.CSS(`[data-testid="bulk-delivery-submit"]`)))
			}
			if got := mustText(t, ctx, `[data-testid="flash"]`); !strings.Contains(got, "Recorded the send for 3") {
				t.Fatalf("flash %q", got)
			}
			if n := owCount(t, app, `SELECT count(*) FROM invitations WHERE delivery_reference = 'spring batch'`); n != 3 {
				t.Fatalf("recorded=%d, want 3", n)
			}
		})
	}
}
