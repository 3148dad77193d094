package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestRetireAPI_ConfirmedRetirementClosesEverythingAndIsAuditedOnce(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	path := "/api/owner/programs/" + app.Demo.ID + "/retire"
	before := dbFingerprint(t, app.DB)

	// Wrong or missing confirmation, stale revision: refused, nothing changes.
	for _, tc := range []struct {
		body   string
		status int
	}{
		{fmt.Sprintf(`{"expectedRevision":%d,"confirm":"demo-typo"}`, app.Demo.Revision), http.StatusBadRequest},
		{fmt.Sprintf(`{"expectedRevision":%d}`, app.Demo.Revision), http.StatusBadRequest},
		{`{"confirm":"demo"}`, http.StatusBadRequest},
		{fmt.Sprintf(`{"expectedRevision":%d,"confirm":"demo"}`, app.Demo.Revision-1), http.StatusConflict},
	} {
		r := owner.PostJSON(t, "POST", path, tc.body)
		owWantStatus(t, tc.body, r, tc.status)
	}
	if after := dbFingerprint(t, app.DB); !reflect.DeepEqual(before, after) {
		t.Fatalf("refused retirements changed the database: %v → %v", before, after)
	}

	audit := owAuditCount(t, app)
	r := owner.PostJSON(t, "POST", path, fmt.Sprintf(`{"expectedRevision":%d,"confirm":"demo"}`, app.Demo.Revision))
	owWantStatus(t, "retire", r, http.StatusOK)
	var p struct {
		SignupOpen    bool    `json:"signupOpen"`
		AccessEnabled bool    `json:"accessEnabled"`
		RetiredAt     *string `json:"retiredAt"`
	}
	if err := json.Unmarshal([]byte(r.Body), &p); err != nil {
		t.Fatal(err)
	}
	if p.SignupOpen || p.AccessEnabled || p.RetiredAt == nil {
		t.Fatalf("retired program JSON: %s", r.Body)
	}
	if got := owAuditCount(t, app) - audit; got != 1 {
		t.Fatalf("retirement wrote %d audit events, want 1", got)
	}
	// The public side is closed at once.
	anon := app.NewClient(t)
	signup := `{"requestKey":"` + owKey() + `","email":"late@example.com","noticeVersion":1,"permission":true}`
	if r := anon.PostJSON(t, "POST", "/api/public/programs/demo/signups", signup); r.StatusCode != http.StatusConflict {
		t.Fatalf("signup after retirement: %d, want 409", r.StatusCode)
	}
	// Retiring twice is a conflict.
	again := owner.PostJSON(t, "POST", path, fmt.Sprintf(`{"expectedRevision":%d,"confirm":"demo"}`, app.Demo.Revision+1))
	owWantStatus(t, "second retirement", again, http.StatusConflict)
}

func TestRetireForm_AsksForConfirmationAndKeepsTheProgramUntilGiven(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	page := owner.Get(t, "/owner/programs/"+app.Demo.ID)
	if !strings.Contains(page.Body, `data-testid="retire-form"`) {
		t.Fatal("program page has no retirement form")
	}
	form := url.Values{"csrf": {owner.csrf}, "expectedRevision": {fmt.Sprint(app.Demo.Revision)}, "confirm": {"nope"}}
	r := owner.PostForm(t, "/owner/programs/"+app.Demo.ID+"/retire", form)
	if r.StatusCode != http.StatusBadRequest || !strings.Contains(r.Body, `data-testid="retire-error"`) {
		t.Fatalf("wrong confirmation: %d", r.StatusCode)
	}
	if mustOwnerProgram(t, app, app.Demo.ID).RetiredAt != nil {
		t.Fatal("retired without confirmation")
	}
	form.Set("confirm", "demo")
	r = owner.PostForm(t, "/owner/programs/"+app.Demo.ID+"/retire", form)
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("confirmed retirement: %d", r.StatusCode)
	}
	if mustOwnerProgram(t, app, app.Demo.ID).RetiredAt == nil {
		t.Fatal("not retired")
	}
	if page := owner.Get(t, "/owner/programs/"+app.Demo.ID); !strings.Contains(page.Body, `data-testid="retired-banner"`) {
		t.Fatal("program page does not say it is retired")
	}
}

func TestOwnerHome_ShowsTheLastSuccessfulBackupSync(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	if body := owner.Get(t, "/owner").Body; !strings.Contains(body, "Continuous backup is off") {
		t.Fatal("owner console does not say backup is off")
	}
	synced := time.Date(2026, 11, 29, 9, 58, 0, 0, time.UTC)
	app.Srv.opts.BackupStatus = func() (BackupStatus, error) {
		return BackupStatus{Replica: "file replica", LastSync: synced, Pending: true, Lag: 3 * time.Minute}, nil
	}
	body := owner.Get(t, "/owner").Body
	for _, want := range []string{"Replicating to file replica", "29 Nov 2026, 09:58 UTC", "3 minutes"} {
		if !strings.Contains(body, want) {
			t.Errorf("owner console lacks %q", want)
		}
	}
}

func TestOwnerHome_ShowsWhatTheRestoreDrillsFound(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	verified := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	failing := time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		status  BackupStatus
		want    []string
		notWant []string
	}{
		{"no drill yet", BackupStatus{Replica: "file replica"},
			[]string{"no restore drill has run"}, []string{"verified restorable", "NOT restorable"}},
		{"verified", BackupStatus{Replica: "file replica", VerifiedAt: verified},
			[]string{"Backup: last verified restorable at <strong>29 Nov 2026, 10:00 UTC"}, []string{"NOT restorable", "failed at"}},
		{"not restorable", BackupStatus{Replica: "file replica", VerifiedAt: verified, NotRestorableSince: failing, LastFailedDrill: failing},
			[]string{"Backup <strong>NOT restorable</strong> since 29 Nov 2026, 11:00 UTC", `role="alert"`}, []string{"last verified restorable"}},
		{"repaired", BackupStatus{Replica: "file replica", VerifiedAt: failing.Add(time.Minute), LastFailedDrill: failing},
			[]string{"last verified restorable at <strong>29 Nov 2026, 11:01 UTC", "An earlier drill failed at 29 Nov 2026, 11:00 UTC"}, []string{"NOT restorable"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app.Srv.opts.BackupStatus = func() (BackupStatus, error) { return tc.status, nil }
			body := owner.Get(t, "/owner").Body
			for _, want := range tc.want {
				if !strings.Contains(body, want) {
					t.Errorf("owner console lacks %q", want)
				}
			}
			for _, not := range tc.notWant {
				if strings.Contains(body, not) {
					t.Errorf("owner console says %q", not)
				}
			}
		})
	}
}
