package handlers

import (
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

var programNav = regexp.MustCompile(`(?s)<nav aria-label="Program sections"[^>]*>.*?</nav>`)

// TestProgramPage_SectionsAreLinksWithTheirOwnURLs: every section of a
// program's console is a page of its own, titled by the section, whose
// navigation links every section as a plain link and marks itself; the
// overview holds the go-live checklist, each item a link to where it is
// done.
func TestProgramPage_SectionsAreLinksWithTheirOwnURLs(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	base := "/owner/programs/" + app.Demo.ID
	sections := []struct{ path, label, title string }{
		{base, "Overview", "Overview"},
		{base + "/entries", "Queue", "Queue"},
		{base + "/invitations", "Invitations", "Invitations"},
		{base + "/content", "Content", "Content"},
		{base + "/settings", "Settings", "Settings"},
		{base + "/events", "History", ""},
	}
	for _, sec := range sections {
		r := owner.Get(t, sec.path)
		owWantStatus(t, sec.label, r, http.StatusOK)
		body := html.UnescapeString(r.Body)
		if sec.title != "" && !strings.Contains(body, "<title>"+sec.title+" · admit demo · admit</title>") {
			t.Errorf("%s is not titled by its section", sec.path)
		}
		nav := programNav.FindString(body)
		if !strings.Contains(nav, `aria-current="page"><strong>`+sec.label+`</strong>`) {
			t.Errorf("%s: the navigation does not mark %s: %q", sec.path, sec.label, nav)
		}
		for _, other := range sections {
			if !strings.Contains(nav, `href="`+other.path+`"`) {
				t.Errorf("%s: the navigation lacks a link to %s", sec.path, other.path)
			}
		}
	}
	r := owner.Get(t, base)
	if n := strings.Count(r.Body, `data-testid="checklist-item"`); n != 5 {
		t.Fatalf("checklist items=%d, want 5", n)
	}
	for _, want := range []string{base + "/settings#notices-title", base + "/settings#settings-title",
		"/owner/workspaces/" + app.Demo.WorkspaceID, base + "/content#content-title"} {
		if !strings.Contains(r.Body, `href="`+want+`"`) {
			t.Errorf("the checklist does not link to %s", want)
		}
	}
	// The demo program is live: every step is done.
	if strings.Contains(r.Body, `data-done="false"`) {
		t.Errorf("the demo program's checklist has a step to do")
	}
	for _, gone := range []string{`data-testid="settings-form"`, `data-testid="content-form"`} {
		if strings.Contains(r.Body, gone) {
			t.Errorf("the overview still holds %s", gone)
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
