package handlers

import (
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"admit/store"
)

// jsonKeys returns the sorted keys of a JSON object.
func jsonKeys(tb testing.TB, raw json.RawMessage) string {
	tb.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		tb.Fatalf("decode %s: %v", raw, err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

func TestProgramAPI_NameIsRequiredBoundedAndRenamable(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	ws := app.Demo.WorkspaceID
	body := func(name string) string {
		b, _ := json.Marshal(map[string]any{"workspaceId": ws, "slug": "named-list", "name": name, "purpose": "P.",
			"queueCap": 10, "hourlyCap": 10, "seatCap": 2, "maxInvitationDays": 3})
		return string(b)
	}
	missing := `{"workspaceId":"` + ws + `","slug":"named-list","purpose":"P.","queueCap":10,"hourlyCap":10,"seatCap":2,"maxInvitationDays":3}`
	for what, b := range map[string]string{"missing": missing, "blank": body("   "), "81 characters": body(strings.Repeat("n", 81))} {
		r := owner.PostJSON(t, "POST", "/api/owner/programs", b)
		owWantStatus(t, "name "+what, r, http.StatusBadRequest)
	}
	r := owner.PostJSON(t, "POST", "/api/owner/programs", body("  Spring beta  "))
	owWantStatus(t, "create", r, http.StatusCreated)
	var p map[string]any
	json.Unmarshal([]byte(r.Body), &p)
	if p["name"] != "Spring beta" || p["slug"] != "named-list" {
		t.Fatalf("created %v, want the trimmed name and the slug", p)
	}
	id := p["id"].(string)
	r = owner.PostJSON(t, "PATCH", "/api/owner/programs/"+id, `{"expectedRevision":1,"name":"Autumn beta"}`)
	owWantStatus(t, "rename", r, http.StatusOK)
	if got := owStr(owPath(owDecode(t, r.Body), "name")); got != "Autumn beta" {
		t.Fatalf("after rename name=%q", got)
	}
	r = owner.PostJSON(t, "PATCH", "/api/owner/programs/"+id, `{"expectedRevision":2,"name":""}`)
	owWantStatus(t, "rename to blank", r, http.StatusBadRequest)
	r = owner.PostJSON(t, "PATCH", "/api/owner/programs/"+id, `{"expectedRevision":1,"name":"Stale"}`)
	owWantStatus(t, "rename at a stale revision", r, http.StatusConflict)
	list := owner.Get(t, "/api/owner/programs")
	if !strings.Contains(list.Body, `"name":"Autumn beta"`) || !strings.Contains(list.Body, `"name":"admit demo"`) {
		t.Fatalf("program list lacks names: %s", list.Body)
	}
}

func TestWorkspaceAPI_DisplayNameAndContactReachThePublicProgram(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	r := owner.Get(t, "/api/owner/workspaces")
	var list struct{ Workspaces []json.RawMessage }
	json.Unmarshal([]byte(r.Body), &list)
	if len(list.Workspaces) != 1 || jsonKeys(t, list.Workspaces[0]) != "contact,displayName,id,name" {
		t.Fatalf("workspaces %s", r.Body)
	}
	path := "/api/owner/workspaces/" + app.Demo.WorkspaceID
	for what, b := range map[string]string{
		"http link":     `{"contact":"http://acme.example/privacy"}`,
		"not a contact": `{"contact":"call us"}`,
		"empty contact": `{"contact":""}`,
		"long name":     `{"displayName":"` + strings.Repeat("w", 81) + `"}`,
		"unknown field": `{"displayName":"Acme","website":"https://acme.example"}`,
	} {
		before := dbFingerprint(t, app.DB)
		owWantStatus(t, what, owner.PostJSON(t, "PATCH", path, b), http.StatusBadRequest)
		if !sameRows(before, dbFingerprint(t, app.DB)) {
			t.Fatalf("%s: a refused change changed the database", what)
		}
	}
	r = owner.PostJSON(t, "PATCH", path, `{"displayName":" Acme Labs ","contact":"https://acme.example/privacy"}`)
	owWantStatus(t, "patch", r, http.StatusOK)
	if got := jsonKeys(t, json.RawMessage(r.Body)); got != "contact,displayName,id,name" {
		t.Fatalf("workspace keys %s", got)
	}
	w := owDecode(t, r.Body)
	if w["displayName"] != "Acme Labs" || w["contact"] != "https://acme.example/privacy" || w["name"] != store.DemoWorkspace {
		t.Fatalf("workspace %v", w)
	}
	pub := owDecode(t, app.NewClient(t).Get(t, "/api/public/programs/demo").Body)
	if pub["name"] != "admit demo" || pub["displayName"] != "Acme Labs" || pub["contact"] != "https://acme.example/privacy" {
		t.Fatalf("public program %v", pub)
	}
	// Another owner cannot change it: the same 404 as no workspace at all.
	foreign, _, _ := mustForeignOwner(t, app, "other-owner@example.com")
	owWantStatus(t, "foreign patch", foreign.PostJSON(t, "PATCH", path, `{"displayName":"Taken"}`), http.StatusNotFound)
}

func TestStatsAPI_ShapeCountsSeatsAndThirtyDays(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	start := app.Clock.Now() // 2026-11-29 10:00 UTC
	app.Clock.Set(start.Add(-3 * 24 * time.Hour))
	mustInsertEntry(t, app.DB, app.Demo, "three-days-ago@example.com", "waiting")
	app.Clock.Set(start)
	mustInsertEntry(t, app.DB, app.Demo, "today-1@example.com", "selected")
	invited := mustInsertEntry(t, app.DB, app.Demo, "today-2@example.com", "selected")
	owIssue(t, app, app.Demo.ID, invited)
	mustInsertEntry(t, app.DB, app.Demo, "today-3@example.com", "declined")

	r := owner.Get(t, "/api/owner/programs/"+app.Demo.ID+"/stats")
	owWantStatus(t, "stats", r, http.StatusOK)
	if got := r.Header.Get("Cache-Control"); got != "private, no-store" {
		t.Fatalf("Cache-Control=%q", got)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.Body), &raw); err != nil {
		t.Fatal(err)
	}
	if got := jsonKeys(t, json.RawMessage(r.Body)); got != "counts,daily,seats" {
		t.Fatalf("stats keys %s", got)
	}
	if got := jsonKeys(t, raw["counts"]); got != "active,declined,invited,selected,waiting,withdrawn" {
		t.Fatalf("counts keys %s", got)
	}
	if got := jsonKeys(t, raw["seats"]); got != "cap,left,reserved,used" {
		t.Fatalf("seats keys %s", got)
	}
	var st struct {
		Counts map[string]int
		Seats  map[string]int
		Daily  []struct {
			Day     string
			Signups int
		}
	}
	json.Unmarshal([]byte(r.Body), &st)
	wantCounts := map[string]int{"waiting": 1, "selected": 1, "invited": 1, "active": 0, "declined": 1, "withdrawn": 0}
	for k, v := range wantCounts {
		if st.Counts[k] != v {
			t.Fatalf("counts %v, want %v", st.Counts, wantCounts)
		}
	}
	if want := map[string]int{"cap": 50, "used": 0, "reserved": 1, "left": 49}; !mapsEqual(st.Seats, want) {
		t.Fatalf("seats %v, want %v", st.Seats, want)
	}
	if len(st.Daily) != 30 || st.Daily[0].Day != "2026-10-31" || st.Daily[29].Day != "2026-11-29" {
		t.Fatalf("daily from %v to %v (%d days), want 2026-10-31 to 2026-11-29", st.Daily[0], st.Daily[len(st.Daily)-1], len(st.Daily))
	}
	for _, d := range st.Daily {
		want := map[string]int{"2026-11-26": 1, "2026-11-29": 3}[d.Day]
		if d.Signups != want {
			t.Fatalf("day %s signups=%d, want %d", d.Day, d.Signups, want)
		}
	}
	foreign, _, _ := mustForeignOwner(t, app, "other-owner@example.com")
	owWantStatus(t, "foreign stats", foreign.Get(t, "/api/owner/programs/"+app.Demo.ID+"/stats"), http.StatusNotFound)
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestEventsAPI_FiltersByTypeAndEntry(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	ada := mustInsertEntry(t, app.DB, app.Demo, "ada@example.com", "selected")
	mustInsertEntry(t, app.DB, app.Demo, "grace@example.com", "selected")
	base := "/api/owner/programs/" + app.Demo.ID + "/events"
	events := func(query string) []map[string]any {
		t.Helper()
		r := owner.Get(t, base+query)
		owWantStatus(t, query, r, http.StatusOK)
		var page struct{ Events []map[string]any }
		json.Unmarshal([]byte(r.Body), &page)
		return page.Events
	}
	if got := events("?type=selected"); len(got) != 2 || got[0]["type"] != "selected" || got[1]["type"] != "selected" {
		t.Fatalf("type filter: %v", got)
	}
	got := events("?entry=" + ada)
	if len(got) != 2 || got[0]["entryId"] != ada || got[1]["entryId"] != ada {
		t.Fatalf("entry filter: %v", got)
	}
	if got := events("?type=signup&entry=" + ada); len(got) != 1 {
		t.Fatalf("both filters: %v", got)
	}
	for _, q := range []string{"?type=nonsense", "?entry=ada@example.com", "?entry=" + ada + "&entry=" + ada, "?type=selected&type=declined"} {
		owWantStatus(t, q, owner.Get(t, base+q), http.StatusBadRequest)
	}
}

func TestEventsPage_FiltersKeepAddressesOutOfURLsAndDropEmptyOnes(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	ada := mustInsertEntry(t, app.DB, app.Demo, "ada@example.com", "selected")
	mustInsertEntry(t, app.DB, app.Demo, "grace@example.com", "declined")
	page := "/owner/programs/" + app.Demo.ID + "/events"

	// A plain GET form sends every field; empty ones leave the URL.
	r := owner.Get(t, page+"?type=selected&entry=")
	owWantStatus(t, "empty entry", r, http.StatusSeeOther)
	if got := owLocation(r); got != page+"?type=selected" {
		t.Fatalf("Location %q, want only the type", got)
	}
	r = owner.Get(t, page+"?type=&entry=")
	if got := owLocation(r); r.StatusCode != http.StatusSeeOther || got != page {
		t.Fatalf("all empty: %d %q, want 303 to the log itself", r.StatusCode, got)
	}

	// The filter form takes an address and answers with the entry's ID.
	r = owner.PostOwnerForm(t, page, url.Values{"type": {""}, "entry": {"ada@example.com"}})
	owWantStatus(t, "filter by address", r, http.StatusSeeOther)
	loc := owLocation(r)
	if loc != page+"?entry="+ada || strings.Contains(loc, "example.com") {
		t.Fatalf("Location %q, want the entry's ID and no address", loc)
	}
	r = owner.Get(t, loc)
	owWantStatus(t, "filtered page", r, http.StatusOK)
	if n := strings.Count(r.Body, `data-testid="event"`); n != 2 {
		t.Fatalf("Ada's history shows %d events, want 2 (joined, selected)", n)
	}
	for _, want := range []string{">Joined<", ">Selected<", "Owner&#39;s discretion", "ada@example.com", `data-testid="filter-clear"`} {
		if !strings.Contains(r.Body, want) {
			t.Fatalf("filtered page lacks %q", want)
		}
	}
	if strings.Contains(r.Body, "grace@example.com") {
		t.Fatal("another entry shows in Ada's history")
	}

	// By type, in words, with each entry named and linked.
	r = owner.PostOwnerForm(t, page, url.Values{"type": {"declined"}, "entry": {""}})
	if got := owLocation(r); got != page+"?type=declined" {
		t.Fatalf("type filter Location %q", got)
	}
	r = owner.Get(t, page+"?type=declined")
	if n := strings.Count(r.Body, `data-testid="event"`); n != 1 || !strings.Contains(r.Body, ">Declined<") ||
		!strings.Contains(r.Body, "grace@example.com") || !strings.Contains(r.Body, `<option value="declined" selected`) {
		t.Fatalf("type filter page shows %d events:\n%s", n, owErrorBlock(t, r.Body))
	}

	// An unknown address is said in place, and nothing reaches a URL.
	r = owner.PostOwnerForm(t, page, url.Values{"type": {""}, "entry": {"nobody@example.com"}})
	owWantStatus(t, "unknown address", r, http.StatusBadRequest)
	if !strings.Contains(r.Body, "No entry of this program has that ID or address.") || !strings.Contains(r.Body, `value="nobody@example.com"`) {
		t.Fatal("unknown address: no message beside the kept value")
	}
	owWantStatus(t, "bad type in the URL", owner.Get(t, page+"?type=nonsense"), http.StatusBadRequest)
}
