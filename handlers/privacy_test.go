package handlers

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"admit/store"
	"admit/views"

	"github.com/google/uuid"
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
	srv, err := New(Options{PublicURL: u, Keys: srvOf(app).opts.Keys, BackupRetention: 72 * time.Hour}, app.DB, app.Dev)
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

// retentionRow returns the cells of the privacy page's retention row id.
func retentionRow(tb testing.TB, body, id string) []string {
	tb.Helper()
	m := regexp.MustCompile(`(?s)<tr data-testid="retention-`+regexp.QuoteMeta(id)+`">(.*?)</tr>`).FindAllStringSubmatch(body, -1)
	if len(m) != 1 {
		tb.Fatalf("the privacy page has %d retention rows %q, want 1", len(m), id)
	}
	var cells []string
	for _, c := range regexp.MustCompile(`(?s)<td>(.*?)</td>`).FindAllStringSubmatch(m[0][1], -1) {
		cells = append(cells, strings.TrimSpace(c[1]))
	}
	if len(cells) != 3 {
		tb.Fatalf("retention row %q has %d cells, want 3", id, len(cells))
	}
	return cells
}

// Each row of the retention table states its own state's period: with a
// different period for every state, each row names its state, the period
// the store applies to it, and that period plus the sweep.
func TestPrivacyPage_EachRetentionRowShowsItsOwnStatesPeriod(t *testing.T) {
	const day = 24 * time.Hour
	app := MustStartApp(t, withRetention(store.Retention{Withdrawn: 7 * day, Declined: 45 * day,
		Revoked: 12 * day, RetiredProgram: 90 * day}))
	page := app.NewClient(t).Get(t, "/privacy")
	if page.StatusCode != http.StatusOK {
		t.Fatalf("GET /privacy: %d", page.StatusCode)
	}
	for _, want := range []struct {
		id, state, kept, everywhere string
	}{
		{"active", "waiting, selected, invited or active", "until you withdraw or remove it, or the program is retired; then up to 90 days", "retirement + 91 days"},
		{"withdrawn", "withdrawn (", "7 days", "8 days"},
		{"removed", "removed with your private link", "erased at once", "5 minutes"},
		{"declined", "declined", "45 days", "46 days"},
		{"revoked", "access revoked", "12 days", "13 days"},
	} {
		got := retentionRow(t, page.Body, want.id)
		if !strings.HasPrefix(got[0], want.state) || got[1] != want.kept || got[2] != want.everywhere {
			t.Errorf("row %s: %q, want a state starting %q, kept %q, gone everywhere within %q", want.id, got, want.state, want.kept, want.everywhere)
		}
	}
}

// The privacy page states how long a request's receipt is kept, from the
// store's own constant, and when it is gone from every copy: the receipt's
// lifetime, then the sweep, then the backups.
func TestPrivacyPage_StatesHowLongARequestReceiptIsKept(t *testing.T) {
	app := MustStartApp(t)
	u, _ := url.Parse(app.URL)
	for _, backup := range []time.Duration{0, 72 * time.Hour} {
		srv, err := New(Options{PublicURL: u, Keys: srvOf(app).opts.Keys, BackupRetention: backup}, app.DB, app.Dev)
		if err != nil {
			t.Fatal(err)
		}
		rec := newRecorder()
		srv.ServeHTTP(rec, mustRequest(t, "GET", app.URL+"/privacy"))
		body := rec.Body.String()
		i := strings.Index(body, `data-testid="kept-receipt"`)
		if i < 0 {
			t.Fatal("the list of what is kept does not name the request receipt")
		}
		item := body[i:]
		item = item[:strings.Index(item, "</li>")]
		for _, want := range []string{
			"kept for " + views.Duration(store.ReceiptLifetime) + " after your request",
			"even if you remove your entry sooner",
			"gone from every copy within " + views.Duration(store.ReceiptLifetime+store.SweepInterval+backup),
		} {
			if !strings.Contains(item, want) {
				t.Errorf("backups kept %v: the receipt item lacks %q: %s", backup, want, item)
			}
		}
	}
}

// Over HTTP, with the injectable clock: a same-key replay just before the
// receipt's lifetime ends answers the same as before, after a sweep; at
// the end of its lifetime the sweep deletes it.
func TestReceipt_ReplayAnswersWithinItsLifetimeAndTheSweepDeletesItAfter(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	body := signupJSONBody(uuid.NewString(), "receipt@example.com", 1, true)
	t0 := app.Clock.Now()
	if r := c.PostJSON(t, "POST", signupAPI, body); r.StatusCode != http.StatusAccepted {
		t.Fatalf("signup: %d", r.StatusCode)
	}
	ctx := context.Background()
	app.Clock.Set(t0.Add(store.ReceiptLifetime - time.Millisecond))
	if _, err := app.DB.Sweep(ctx); err != nil {
		t.Fatalf("sweep: %v", err)
	}
	if r := c.PostJSON(t, "POST", signupAPI, body); r.StatusCode != http.StatusAccepted || r.Body != "{\"status\":\"received\"}\n" {
		t.Fatalf("replay within the receipt's lifetime: %d %q, want the stored 202", r.StatusCode, r.Body)
	}
	if n := appCount(t, app, `SELECT count(*) FROM signup_receipts`); n != 1 {
		t.Fatalf("receipts within their lifetime=%d, want 1", n)
	}
	app.Clock.Set(t0.Add(store.ReceiptLifetime))
	if _, err := app.DB.Sweep(ctx); err != nil {
		t.Fatalf("sweep: %v", err)
	}
	if n := appCount(t, app, `SELECT count(*) FROM signup_receipts`); n != 0 {
		t.Fatalf("receipts after their lifetime=%d, want 0", n)
	}
}

// The privacy page says what the team keeps of an owner and for how long,
// from the store's own constant.
func TestPrivacyPage_StatesWhatTheTeamKeepsOfAnOwner(t *testing.T) {
	app := MustStartApp(t)
	r := app.NewClient(t).Get(t, "/privacy")
	m := regexp.MustCompile(`(?s)<p data-testid="owner-data">(.*?)</p>`).FindStringSubmatch(r.Body)
	if m == nil {
		t.Fatal("the privacy page has no paragraph about owners")
	}
	for _, want := range []string{"sign-in address", "removed from the team your address is deleted",
		"expires after " + views.Duration(store.OwnerInviteLifetime)} {
		if !strings.Contains(m[1], want) {
			t.Errorf("the owners' paragraph lacks %q:\n%s", want, m[1])
		}
	}
}
