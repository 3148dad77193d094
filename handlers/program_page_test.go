package handlers

import (
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

var (
	menuLink   = regexp.MustCompile(`<a href="#([a-z-]+)">`)
	pageMenu   = regexp.MustCompile(`(?s)<nav aria-label="On this page"[^>]*>.*?</nav>`)
	programNav = regexp.MustCompile(`(?s)<nav aria-label="Program pages"[^>]*>.*?</nav>`)
)

func TestProgramPage_IsTitledOverviewWithAnInPageMenu(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	r := owner.Get(t, "/owner/programs/"+app.Demo.ID)
	owWantStatus(t, "program page", r, http.StatusOK)
	body := html.UnescapeString(r.Body)
	if !strings.Contains(body, "<title>Overview · admit demo · admit</title>") {
		t.Errorf("the program page is not titled as its overview")
	}
	nav := programNav.FindString(body)
	if !strings.Contains(nav, `aria-current="page"><strong>Overview</strong>`) || strings.Contains(nav, ">Settings<") {
		t.Errorf("the program's navigation names this page %q, want Overview", nav)
	}
	menu := pageMenu.FindString(body)
	if menu == "" {
		t.Fatal("the program page has no in-page menu")
	}
	links := menuLink.FindAllStringSubmatch(menu, -1)
	if len(links) < 6 {
		t.Errorf("the in-page menu has %d links, want every section", len(links))
	}
	for _, l := range links {
		if !strings.Contains(body, `id="`+l[1]+`"`) {
			t.Errorf("the in-page menu links to #%s, which is not on the page", l[1])
		}
	}
	for _, want := range []string{"settings-title", "notices-title", "content-title", "assets-title", "retire-title"} {
		if !strings.Contains(menu, `href="#`+want+`"`) {
			t.Errorf("the in-page menu lacks #%s", want)
		}
	}
}

func TestProgramPage_EmptyChartSaysZeroAndTheFunnelSaysEver(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	r := owner.Get(t, "/owner/programs/"+app.Demo.ID)
	owWantStatus(t, "program page", r, http.StatusOK)
	if want := `data-testid="chart-ymax">0</span>`; !strings.Contains(r.Body, want) {
		t.Errorf("the empty chart's axis does not read 0")
	}

	mustInsertEntry(t, app.DB, app.Demo, "ada@example.com", "waiting")
	sel := mustInsertEntry(t, app.DB, app.Demo, "grace@example.com", "selected")
	owGrant(t, app, app.Demo.ID, sel, "grace@example.com", "user_grace")
	r = owner.Get(t, "/owner/programs/"+app.Demo.ID)
	body := html.UnescapeString(r.Body)
	if want := `data-testid="chart-ymax">2</span>`; !strings.Contains(body, want) {
		t.Errorf("the chart's axis does not read the busiest day's 2")
	}
	// Grace was selected and now has access: the tiles say "Selected 0"
	// now, the funnel "Ever selected 1"; each says which it counts.
	for _, want := range []string{
		`<h3 id="counts-title" class="glance-counts-title">Entries by state now</h3>`,
		`<dt>Selected</dt><dd><a href="/owner/programs/` + app.Demo.ID + `/entries?state=selected" aria-label="0 Selected: open in the queue">0</a>`,
		`<th scope="row">Ever selected</th><td>1</td>`,
		"Entries that ever reached each step, whatever their state is now",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("program page lacks %q", want)
		}
	}
	if strings.Contains(body, `<th scope="row">Selected</th>`) {
		t.Errorf("the funnel's step reads as the count of selected entries")
	}
}

func TestRetiredProgram_ShowsNoEntryAsWaiting(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	mustInsertEntry(t, app.DB, app.Demo, "ada@example.com", "waiting")
	mustInsertEntry(t, app.DB, app.Demo, "bob@example.com", "waiting")
	app.Clock.Set(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	p := mustRetireDemo(t, app)

	page := html.UnescapeString(owner.Get(t, "/owner/programs/"+p.ID).Body)
	if !strings.Contains(page, `data-testid="retired-counts"`) || !strings.Contains(page, "<strong>2 entries</strong>, none of them waiting any more") {
		t.Errorf("the retired program's page does not count its entries as retired")
	}
	if strings.Contains(page, `data-testid="glance-counts"`) || strings.Contains(page, `<dt>Waiting</dt>`) {
		t.Errorf("the retired program's page still shows entries as waiting")
	}
	home := html.UnescapeString(owner.Get(t, "/owner").Body)
	if !strings.Contains(home, "2 entries, retired") {
		t.Errorf("the console's start page does not count the retired program's entries as retired")
	}
	if strings.Contains(home, "waiting 2") {
		t.Errorf("the console's start page still says waiting 2 for a retired program")
	}
}
