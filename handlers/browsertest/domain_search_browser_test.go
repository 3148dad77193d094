package browsertest

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"admit/store"
)

// TestQueueSearch_ByDomainAndRefusedBesideTheBox: in a browser, with
// JavaScript on and off, a domain search lists that domain's entries; a
// refused search keeps the queue page, says why beside the search box with
// the box marked invalid, and passes the accessibility audit.
func TestQueueSearch_ByDomainAndRefusedBesideTheBox(t *testing.T) {
	for _, m := range ofModes {
		t.Run(m.name, func(t *testing.T) {
			app := MustStartApp(t)
			mustInsertEntry(t, app.DB, app.Demo, "ada@uni.edu", store.StateWaiting)
			mustInsertEntry(t, app.DB, app.Demo, "bo@sub.uni.edu", store.StateWaiting)
			ctx := ofBrowser(t, app, m)
			queue := app.URL + "/owner/programs/" + app.Demo.ID + "/entries"
			a11yLoad(t, ctx, "open the queue", 200, chromedp.Navigate(queue))

			search := func(q string, status int64) {
				t.Helper()
				ofFill(t, ctx, [2]string{"#filter-q", q})
				press := chromedp.Click(chromedp.CSS(`[data-testid="filter-submit"]`))
				if m.js {
					owEval[bool](t, ctx, `window.__samePage = true`)
					if err := chromedp.Do(ctx, press); err != nil {
						t.Fatal(err)
					}
					owWaitFor(t, ctx, "the search's answer", `document.querySelector("#filter-q") && document.querySelector("#filter-q").value === `+jsString(q)+
						` && new URL(location.href).searchParams.get("q") === `+jsString(q))
				} else {
					a11yLoad(t, ctx, "search "+q, status, press)
				}
			}

			search("uni.edu", 200)
			owWaitFor(t, ctx, "one entry listed", `document.querySelectorAll('[data-testid="queue-row"], [data-testid="entry-row"]').length === 1 || document.body.innerText.includes("ada@uni.edu")`)
			if body := owEval[string](t, ctx, `document.body.innerText`); !strings.Contains(body, "ada@uni.edu") || strings.Contains(body, "bo@sub.uni.edu") {
				t.Fatalf("domain search lists the wrong entries:\n%s", body)
			}

			search("@uni..edu", 400)
			owWaitFor(t, ctx, "the error beside the box", `!!document.querySelector('[data-testid="filter-q-error"]')`)
			if got := mustText(t, ctx, `[data-testid="filter-q-error"]`); !strings.Contains(got, "a domain") {
				t.Fatalf("error beside the box says %q", got)
			}
			if got := owEval[string](t, ctx, `document.querySelector("#filter-q").getAttribute("aria-invalid")`); got != "true" {
				t.Fatalf("the search box is not marked invalid (%q)", got)
			}
			if !strings.Contains(owEval[string](t, ctx, `location.pathname`), "/owner/programs/"+app.Demo.ID+"/entries") {
				t.Fatal("the refused search left the queue page")
			}
			if m.js && !owEval[bool](t, ctx, `window.__samePage === true`) {
				t.Error("the refused search loaded a new page instead of swapping the queue in place")
			}
			ofScreenshot(t, ctx, "queue-search-refused-"+ofShot(m))
			ofAudit(t, ctx, m, "refused search")
		})
	}
}
