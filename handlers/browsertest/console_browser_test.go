package browsertest

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The owner console's program page, retired programs and audit filters in
// a real browser, with JavaScript on and off.

// owText is the trimmed text of the first element matching selector.
func owText(tb testing.TB, ctx context.Context, selector string) string {
	tb.Helper()
	return strings.TrimSpace(owEval[string](tb, ctx, `(document.querySelector(`+jsQuote(selector)+`)||{}).textContent||""`))
}

func TestBrowser_ProgramPageShowsNameCountsAndChartWithItsTable(t *testing.T) {
	t.Parallel()
	jsModes(t, func(t *testing.T, js bool) {
		app := MustStartApp(t, withClerk())
		mustInsertEntry(t, app.DB, app.Demo, "ada@example.com", "waiting")
		mustInsertEntry(t, app.DB, app.Demo, "grace@example.com", "selected")
		ctx := owBrowserMode(t, app, js)
		owLoad(t, ctx, "open the program page", chromedp.Navigate(app.URL+"/owner/programs/"+app.Demo.ID))
		if got := owText(t, ctx, `[data-testid="program-name"]`); got != "admit demo" {
			t.Fatalf("heading %q, want the program's name", got)
		}
		if got := owEval[string](t, ctx, `document.title`); !strings.HasPrefix(got, "Overview · admit demo") {
			t.Fatalf("title %q", got)
		}
		for state, want := range map[string]string{"waiting": "1", "selected": "1", "invited": "0"} {
			if got := owText(t, ctx, `.glance-counts [data-state="`+state+`"] dd`); got != want {
				t.Fatalf("%s count %q, want %s", state, got, want)
			}
		}
		// The chart is drawn (one bar a day, today's taller than nothing)
		// and named by its caption and summary.
		if got := owCountIn(t, ctx, `[data-testid="signup-chart"] svg rect.chart-bar`); got != 30 {
			t.Fatalf("chart bars=%d, want 30", got)
		}
		if h := owEval[float64](t, ctx, `document.querySelector('[data-testid="signup-chart"] svg').getBoundingClientRect().height`); h < 100 {
			t.Fatalf("chart is %.0f px high", h)
		}
		if got := owEval[string](t, ctx, `document.querySelector('[data-testid="signup-chart"] svg').getAttribute('aria-labelledby')`); got != "chart-title chart-summary" {
			t.Fatalf("chart labelled by %q", got)
		}
		if got := owText(t, ctx, `#chart-summary`); !strings.HasPrefix(got, "2 signups from") {
			t.Fatalf("chart summary %q", got)
		}
		// Its text alternative opens as a table, script or not.
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-testid="chart-table"] summary`))); err != nil {
			t.Fatal(err)
		}
		if !owEval[bool](t, ctx, `document.querySelector('[data-testid="chart-table"]').open`) {
			t.Fatal("the table did not open")
		}
		if got := owCountIn(t, ctx, `[data-testid="chart-day"]`); got != 30 {
			t.Fatalf("table rows=%d, want 30", got)
		}
		if got := owText(t, ctx, `[data-testid="chart-day"]:last-child td:last-child`); got != "2" {
			t.Fatalf("today's row says %q signups, want 2", got)
		}
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(phoneW, phoneH, chromedp.EmulateMobile)); err != nil {
			t.Fatal(err)
		}
		owWantFits(t, ctx, "the program page", phoneW)
		// The signed-in navigation takes a few short rows, not a third of
		// the screen (it took about 250 px before its phone layout).
		if h := owEval[float64](t, ctx, `document.querySelector('header').getBoundingClientRect().height`); h > 180 {
			t.Errorf("the header is %.0f px tall on a %d px phone, want at most 180", h, phoneW)
		}
		owScreenshot(t, ctx, "console-program")
	})
}

func TestBrowser_RetiredProgramHasNoEditingFormsAndItsPublicPageIsClosed(t *testing.T) {
	t.Parallel()
	jsModes(t, func(t *testing.T, js bool) {
		app := MustStartApp(t, withClerk())
		for _, email := range []string{"ada@example.com", "grace@example.com", "edsger@example.com"} {
			mustInsertEntry(t, app.DB, app.Demo, email, "waiting")
		}
		mustRetireDemo(t, app) // no retirer runs here: the retirement stays pending
		ctx := owBrowserMode(t, app, js)
		page := app.URL + "/owner/programs/" + app.Demo.ID
		owLoad(t, ctx, "open the program page", chromedp.Navigate(page))
		if got := owText(t, ctx, `[data-testid="retired-banner"]`); !strings.HasPrefix(got, "Retired on 29 Nov 2026, entries erased on 29 Dec 2026.") {
			t.Fatalf("banner %q", got)
		}
		if n := owCountIn(t, ctx, `main form, main input, main textarea, main select`); n != 0 {
			t.Fatalf("retired program page has %d form controls", n)
		}
		// The retirement's progress, polled by htmx or refreshed by hand.
		if got := owText(t, ctx, `[data-testid="retire-progress-text"]`); got != "Finishing the retirement: 0 of 3 entries scheduled for erasure." {
			t.Fatalf("progress %q", got)
		}
		if got, want := owCountIn(t, ctx, `[data-testid="retire-refresh"]`), map[bool]int{true: 0, false: 1}[js]; got != want {
			t.Fatalf("%d Refresh links with JavaScript %v, want %d", got, js, want)
		}
		owWantFits(t, ctx, "the retired program page", 1280)
		owScreenshot(t, ctx, "console-retiring")
		if _, err := app.DB.FinishRetirements(context.Background()); err != nil {
			t.Fatal(err)
		}
		if js {
			owWaitFor(t, ctx, "the finished retirement, polled", `document.querySelector('[data-testid="retire-progress"]').dataset.state === "done"`)
		} else {
			owLoad(t, ctx, "refresh", chromedp.Click(chromedp.CSS(`[data-testid="retire-refresh"]`)))
		}
		if got := owText(t, ctx, `[data-testid="retire-progress-text"]`); got != "The retirement is finished: all 3 entries are scheduled for erasure, and their addresses will be erased on 29 Dec 2026." {
			t.Fatalf("finished retirement says %q", got)
		}
		owScreenshot(t, ctx, "console-retired")
		owLoad(t, ctx, "open the public page", chromedp.Navigate(app.URL+"/waitlist/demo"))
		if got := owText(t, ctx, `[data-testid="closed"]`); !strings.HasPrefix(got, "This waitlist is closed.") {
			t.Fatalf("public page says %q", got)
		}
		if body := owText(t, ctx, "main"); strings.Contains(body, "Join the waitlist") {
			t.Fatal("the retired program's page still says Join the waitlist")
		}
		if n := owCountIn(t, ctx, `main form`); n != 0 {
			t.Fatalf("retired public page has %d forms", n)
		}
		owScreenshot(t, ctx, "console-retired-public")
	})
}

func TestBrowser_AuditLogFiltersByTypeAndEntry(t *testing.T) {
	t.Parallel()
	jsModes(t, func(t *testing.T, js bool) {
		app := MustStartApp(t, withClerk())
		ada := mustInsertEntry(t, app.DB, app.Demo, "ada@example.com", "selected")
		mustInsertEntry(t, app.DB, app.Demo, "grace@example.com", "declined")
		ctx := owBrowserMode(t, app, js)
		events := app.URL + "/owner/programs/" + app.Demo.ID + "/events"
		owLoad(t, ctx, "open the audit log", chromedp.Navigate(events))

		// By type: the URL carries only the type.
		url := owLoad(t, ctx, "filter by type",
			chromedp.SetValue(chromedp.CSS(`[data-testid="filter-type"]`), "declined"),
			chromedp.Click(chromedp.CSS(`[data-testid="filter-submit"]`)))
		if want := events + "?type=declined"; url != want {
			t.Fatalf("filtered to %s, want %s", url, want)
		}
		if got := owCountIn(t, ctx, `[data-testid="event"]`); got != 1 {
			t.Fatalf("declined events=%d, want 1", got)
		}
		if got := owText(t, ctx, `[data-testid="event-label"]`); got != "Declined" {
			t.Fatalf("event named %q", got)
		}
		if got := owText(t, ctx, `[data-testid="event-entry"]`); got != "grace@example.com" {
			t.Fatalf("entry named %q", got)
		}

		// By entry, typed as an address: the URL carries the entry's ID.
		url = owLoad(t, ctx, "filter by entry",
			chromedp.SetValue(chromedp.CSS(`[data-testid="filter-type"]`), ""),
			chromedp.SetValue(chromedp.CSS(`[data-testid="filter-entry"]`), "ada@example.com"),
			chromedp.Click(chromedp.CSS(`[data-testid="filter-submit"]`)))
		if want := events + "?entry=" + ada; url != want {
			t.Fatalf("filtered to %s, want %s", url, want)
		}
		labels := owEval[[]string](t, ctx, `[...document.querySelectorAll('[data-testid="event-label"]')].map(e => e.textContent.trim())`)
		if strings.Join(labels, ",") != "Selected,Joined" {
			t.Fatalf("Ada's history %v, want Selected,Joined", labels)
		}
		// Clearing the filters is a plain link back to the whole log.
		url = owLoad(t, ctx, "clear", chromedp.Click(chromedp.CSS(`[data-testid="filter-clear"]`)))
		if url != events {
			t.Fatalf("cleared to %s", url)
		}
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(phoneW, phoneH, chromedp.EmulateMobile)); err != nil {
			t.Fatal(err)
		}
		owWantFits(t, ctx, "the audit log", phoneW)
		owScreenshot(t, ctx, "console-events")
	})
}
