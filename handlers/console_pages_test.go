package handlers

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"admit/store"
)

var formTag = regexp.MustCompile(`<form[^>]*action="([^"]*)"`)

func TestRetiredProgram_PageIsReadOnlyWithDatesAndThePublicPageIsClosed(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	mustInsertEntry(t, app.DB, app.Demo, "ada@example.com", "waiting")
	app.Clock.Set(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	p := mustRetireDemo(t, app)

	// The program's sections, read together.
	var body strings.Builder
	for _, section := range []string{"", "/settings", "/content"} {
		sr := owner.Get(t, "/owner/programs/"+p.ID+section)
		owWantStatus(t, "program section "+section, sr, http.StatusOK)
		body.WriteString(sr.Body)
	}
	r := &testResponse{Body: body.String()}
	// The retired-program period (30 days by default) plus one sweep.
	erasedOn := p.RetiredAt.Add(store.DefaultRetention.RetiredProgram + store.SweepInterval).Format("2 Jan 2006")
	if want := "Retired on 29 Nov 2026</strong>, entries erased on " + erasedOn + "."; !strings.Contains(r.Body, want) {
		t.Fatalf("banner lacks %q:\n%s", want, owErrorBlock(t, r.Body))
	}
	for _, m := range formTag.FindAllStringSubmatch(r.Body, -1) {
		// Only sign-out remains: no form that edits the program.
		if m[1] != "/sign-out" {
			t.Errorf("retired program page has a form posting to %s", m[1])
		}
	}
	for _, gone := range []string{`data-testid="settings-form"`, `data-testid="notice-form"`, `data-testid="content-form"`,
		`data-testid="asset-form"`, `data-testid="retire-form"`} {
		if strings.Contains(r.Body, gone) {
			t.Errorf("retired program page has %s", gone)
		}
	}
	for _, kept := range []string{`data-testid="glance"`, `data-testid="notice-version"`, `data-testid="saved-private-content"`} {
		if !strings.Contains(r.Body, kept) {
			t.Errorf("retired program page lacks %s", kept)
		}
	}
	// The server refuses the writes the forms would have made.
	owWantStatus(t, "content after retirement",
		owner.PostJSON(t, "PUT", "/api/owner/programs/"+p.ID+"/content", `{"expectedRevision":1,"body":"Late."}`), http.StatusConflict)

	pub := app.NewClient(t).Get(t, "/waitlist/demo")
	owWantStatus(t, "public page", pub, http.StatusOK)
	if !strings.Contains(pub.Body, "This waitlist is closed.") || strings.Contains(pub.Body, "Join the waitlist") ||
		strings.Contains(pub.Body, `data-testid="signup-form"`) {
		t.Fatalf("retired public page:\n%s", owErrorBlock(t, pub.Body))
	}
}

func TestWorkspacePage_SetsTheNameAndContactShownOnPublicPages(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	page := "/owner/workspaces/" + app.Demo.WorkspaceID
	r := owner.Get(t, page)
	owWantStatus(t, "workspace page", r, http.StatusOK)
	if !strings.Contains(r.Body, `value="admit demo team"`) || !strings.Contains(r.Body, `value="privacy@example.test"`) {
		t.Fatal("the form does not show the saved values")
	}
	if home := owner.Get(t, "/owner"); !strings.Contains(home.Body, `href="`+page+`"`) {
		t.Fatal("the console does not link the workspace settings")
	}

	r = owner.PostOwnerForm(t, page, url.Values{"displayName": {"Acme Labs"}, "contact": {"mailto:privacy@acme.example"}})
	owWantStatus(t, "bad contact", r, http.StatusBadRequest)
	if !strings.Contains(r.Body, "must be an email address") || !strings.Contains(r.Body, `value="mailto:privacy@acme.example"`) {
		t.Fatal("bad contact: no message beside the kept value")
	}
	r = owner.PostOwnerForm(t, page, url.Values{"displayName": {"Acme Labs"}, "contact": {"privacy@acme.example"}})
	owWantStatus(t, "save", r, http.StatusSeeOther)
	if got := owLocation(r); got != page {
		t.Fatalf("Location %q", got)
	}
	if r := owner.Get(t, page); !strings.Contains(r.Body, "Workspace settings saved.") || !strings.Contains(r.Body, `value="Acme Labs"`) {
		t.Fatal("saved settings are not shown")
	}

	anon := app.NewClient(t)
	pub := anon.Get(t, "/waitlist/demo")
	for _, want := range []string{"<h1 data-testid=\"program-name\">admit demo</h1>", "Run by Acme Labs.",
		`href="mailto:privacy@acme.example"`} {
		if !strings.Contains(pub.Body, want) {
			t.Fatalf("signup page lacks %q", want)
		}
	}
	priv := anon.Get(t, "/privacy")
	if !strings.Contains(priv.Body, "run by Acme Labs.") || !strings.Contains(priv.Body, `href="mailto:privacy@acme.example"`) {
		t.Fatal("privacy page does not give the workspace's contact")
	}
	if home := anon.Get(t, "/"); !strings.Contains(home.Body, "<h2>admit demo</h2>") {
		t.Fatal("start page does not name the program")
	}
	foreign, _, _ := mustForeignOwner(t, app, "other-owner@example.com")
	owWantStatus(t, "foreign page", foreign.Get(t, page), http.StatusNotFound)
}

func TestProgramPage_ShowsTheProgramAtAGlance(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	mustInsertEntry(t, app.DB, app.Demo, "ada@example.com", "waiting")
	sel := mustInsertEntry(t, app.DB, app.Demo, "grace@example.com", "selected")
	owGrant(t, app, app.Demo.ID, sel, "grace@example.com", "user_grace")
	r := owner.Get(t, "/owner/programs/"+app.Demo.ID)
	owWantStatus(t, "program page", r, http.StatusOK)
	for _, want := range []string{
		`<h1 data-testid="program-name">admit demo</h1>`,
		`<title>Overview · admit demo · admit</title>`,
		`<dt>Waiting</dt><dd><a href="/owner/programs/` + app.Demo.ID + `/entries?state=waiting" aria-label="1 Waiting: open in the queue">1</a></dd>`,
		`<dt>Active</dt><dd>`,
		"<strong>49 left</strong> of 50",
		`role="img" aria-labelledby="chart-title chart-summary"`,
		"2 signups from 31 Oct to 29 Nov (UTC); the busiest day was 29 Nov with 2 signups.",
		`data-day="2026-11-29"><td>29 Nov 2026</td><td>2</td>`,
		`<th scope="row">Redeemed</th><td>1</td><td>50%</td>`,
	} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("program page lacks %q", want)
		}
	}
	if n := strings.Count(r.Body, `data-testid="chart-day"`); n != 30 {
		t.Errorf("the chart's table has %d days, want 30", n)
	}
	if strings.Contains(r.Body, "<script") && strings.Contains(r.Body, "chart") && strings.Contains(r.Body, "chart.js") {
		t.Error("the chart uses a script")
	}
}
