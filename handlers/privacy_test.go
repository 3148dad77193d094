package handlers

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"admit/store"
)

func TestPrivacyPage_IsComputedFromTheRetentionSettings(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	page := c.Get(t, "/privacy")
	if page.StatusCode != http.StatusOK {
		t.Fatalf("GET /privacy: %d", page.StatusCode)
	}
	checkSecurityHeaders(t, "/privacy", page)
	// Defaults: 30 days kept, plus the 5-minute sweep rounds up to 31 days.
	for _, want := range []string{"30 days", "31 days", "no continuous backup"} {
		if !strings.Contains(page.Body, want) {
			t.Errorf("default privacy page lacks %q", want)
		}
	}

	other := MustStartApp(t, withRetention(store.Retention{Withdrawn: 7 * 24 * time.Hour, Declined: 45 * 24 * time.Hour,
		Revoked: 12 * 24 * time.Hour, RetiredProgram: 90 * 24 * time.Hour}))
	changed := other.NewClient(t).Get(t, "/privacy").Body
	for _, want := range []string{"7 days", "45 days", "12 days", "90 days", "8 days", "46 days"} {
		if !strings.Contains(changed, want) {
			t.Errorf("privacy page after changing retention lacks %q", want)
		}
	}
	if strings.Contains(changed, "30 days") {
		t.Error("privacy page still states the old 30-day period")
	}
}

func TestPrivacyPage_CountsBackupCopies(t *testing.T) {
	app := MustStartApp(t)
	u, _ := url.Parse(app.URL)
	srv, err := New(Options{PublicURL: u, Keys: app.Srv.opts.Keys, BackupRetention: 72 * time.Hour}, app.DB, app.Dev)
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	srv.ServeHTTP(rec, mustRequest(t, "GET", app.URL+"/privacy"))
	body := rec.Body.String()
	// 30 days live + 5 minutes sweep + 3 days of backups → within 34 days.
	for _, want := range []string{"backs up its database continuously", "3 days", "34 days"} {
		if !strings.Contains(body, want) {
			t.Errorf("privacy page with backups lacks %q", want)
		}
	}
}

// The privacy page's list of what is kept names the attempt a refused
// signup leaves behind, and that nothing else of it is kept.
func TestPrivacyPage_ListsTheAttemptARefusedSignupKeeps(t *testing.T) {
	app := MustStartApp(t)
	page := app.NewClient(t).Get(t, "/privacy")
	if page.StatusCode != http.StatusOK {
		t.Fatalf("GET /privacy: %d", page.StatusCode)
	}
	i := strings.Index(page.Body, `data-testid="kept-attempt"`)
	if i < 0 {
		t.Fatal("the list of what is kept does not name the counted attempt")
	}
	item := page.Body[i:]
	item = item[:strings.Index(item, "</li>")]
	for _, want := range []string{"One counted attempt", "refused", "keeps nothing else", "counts nothing"} {
		if !strings.Contains(item, want) {
			t.Errorf("the counted-attempt item lacks %q: %s", want, item)
		}
	}
}
