package handlers

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"admit/store"

	"github.com/google/uuid"
)

// mustJoinDemo signs email up for the demo program through the JSON API and
// returns its removal token.
func mustJoinDemo(tb testing.TB, c *testClient, email string) string {
	tb.Helper()
	r := c.PostJSON(tb, "POST", signupAPI, signupJSONBody(uuid.NewString(), email, 1, true))
	if r.StatusCode != http.StatusAccepted {
		tb.Fatalf("join %s: status %d %s", email, r.StatusCode, r.Body)
	}
	var v struct {
		RemovalToken string `json:"removalToken"`
	}
	if err := json.Unmarshal([]byte(r.Body), &v); err != nil || len(v.RemovalToken) != 64 {
		tb.Fatalf("join body %q: %v", r.Body, err)
	}
	return v.RemovalToken
}

// removedEntry is what removal changes on an entry.
type removedEntry struct {
	ID, Email, State string
	ErasedAt         sql.NullInt64
	HasHash          bool
}

// mustEntryByID reads an entry by its ID.
func mustEntryByID(tb testing.TB, app *testApp, id string) removedEntry {
	tb.Helper()
	var e removedEntry
	err := app.DB.View(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRow(`SELECT id, email_key, state, erased_at, removal_hash IS NOT NULL FROM entries WHERE id = ?`, id).
			Scan(&e.ID, &e.Email, &e.State, &e.ErasedAt, &e.HasHash)
	})
	if err != nil {
		tb.Fatalf("read entry %s: %v", id, err)
	}
	return e
}

// mustEntryIDByEmail returns the ID of the entry holding email.
func mustEntryIDByEmail(tb testing.TB, app *testApp, email string) string {
	tb.Helper()
	var id string
	err := app.DB.View(context.Background(), func(tx *store.Tx) error {
		return tx.QueryRow(`SELECT id FROM entries WHERE email_key = ?`, email).Scan(&id)
	})
	if err != nil {
		tb.Fatalf("find entry of %s: %v", email, err)
	}
	return id
}

// wantErased fails unless the entry is withdrawn with its email erased.
func wantErased(tb testing.TB, app *testApp, id, email string) {
	tb.Helper()
	e := mustEntryByID(tb, app, id)
	if e.Email == email || strings.Contains(e.Email, "@") || e.HasHash || !e.ErasedAt.Valid || e.State != store.StateWithdrawn {
		tb.Fatalf("entry after removal %+v, want withdrawn, erased, no removal hash", e)
	}
	if n := appCount(tb, app, `SELECT count(*) FROM entries WHERE email_key = ?`, email); n != 0 {
		tb.Fatalf("%d entries still hold %s", n, email)
	}
}

func TestRemoval_FormAnswersTheSameWhetherOrNotTheTokenMatched(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	const email = "form.leaver@example.com"
	token := mustJoinDemo(t, c, email)
	id := mustEntryIDByEmail(t, app, email)
	unknown := strings.Repeat("ab", 32)

	// The page a visitor without JavaScript uses has the paste field.
	page := c.Get(t, "/manage/")
	if page.StatusCode != http.StatusOK || !strings.Contains(page.Body, `action="/manage/remove"`) ||
		tagAttr(inputTag(t, page.Body, "token"), "value") != "" {
		t.Fatalf("GET /manage/: %d, want the removal form with an empty token field", page.StatusCode)
	}
	if got := page.Header.Get("Cache-Control"); got != "private, no-store" {
		t.Errorf("GET /manage/ Cache-Control=%q", got)
	}

	miss := c.PostForm(t, "/manage/remove", url.Values{"token": {unknown}})
	if got, want := miss.StatusCode, http.StatusOK; got != want {
		t.Fatalf("unknown token: status %d, want %d", got, want)
	}
	if !strings.Contains(miss.Body, "Removal processed") {
		t.Fatalf("unknown token page lacks the confirmation:\n%s", miss.Body)
	}
	if e := mustEntryByID(t, app, id); e.Email != email || e.State != store.StateWaiting {
		t.Fatalf("an unknown token changed the entry: %+v", e)
	}

	hit := c.PostForm(t, "/manage/remove", url.Values{"token": {token}})
	sameResponse(t, "matching vs unknown token", hit, miss)
	if got := hit.Header.Get("Cache-Control"); got != "private, no-store" {
		t.Errorf("removal Cache-Control=%q, want private, no-store", got)
	}
	wantErased(t, app, id, email)

	events := appCount(t, app, `SELECT count(*) FROM audit_events`)
	again := c.PostForm(t, "/manage/remove", url.Values{"token": {token}})
	sameResponse(t, "second removal vs first", again, hit)
	if got := appCount(t, app, `SELECT count(*) FROM audit_events`); got != events {
		t.Fatalf("a second removal added %d audit events", got-events)
	}
}

func TestRemoval_APIAnswersTheSameWhetherOrNotTheTokenMatched(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	const email = "api.leaver@example.com"
	token := mustJoinDemo(t, c, email)
	id := mustEntryIDByEmail(t, app, email)
	body := func(tok string) string { return `{"token":"` + tok + `"}` }

	miss := c.PostJSON(t, "POST", "/api/public/removals", body(strings.Repeat("0", 64)))
	if miss.StatusCode != http.StatusOK || miss.Body != "{\"status\":\"processed\"}\n" {
		t.Fatalf("unknown token: %d %q, want 200 processed", miss.StatusCode, miss.Body)
	}
	if e := mustEntryByID(t, app, id); e.Email != email {
		t.Fatalf("an unknown token changed the entry: %+v", e)
	}
	hit := c.PostJSON(t, "POST", "/api/public/removals", body(token))
	sameResponse(t, "matching vs unknown token", hit, miss)
	wantErased(t, app, id, email)
	again := c.PostJSON(t, "POST", "/api/public/removals", body(token))
	sameResponse(t, "second removal vs first", again, hit)
	if got := hit.Header.Get("Cache-Control"); got != "private, no-store" {
		t.Errorf("removal Cache-Control=%q, want private, no-store", got)
	}

	// Removal erased the address: the same person may join again.
	mustJoinDemo(t, c, email)
}

func TestRemoval_MalformedTokenIs400(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	mustJoinDemo(t, c, "stays@example.com")
	before := dbFingerprint(t, app.DB)
	for _, tc := range []struct {
		name, token string
		form        bool
	}{
		{"empty", "", true},
		{"short", strings.Repeat("a", 63), true},
		{"long", strings.Repeat("a", 65), true},
		{"not hex", strings.Repeat("g", 64), true},
		// The form takes a pasted link (TestRemoval_FormTakesThePastedLink);
		// the JSON API takes the token only.
		{"with the link around it", "/manage/#" + strings.Repeat("a", 64), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.PostJSON(t, "POST", "/api/public/removals", `{"token":"`+tc.token+`"}`)
			if r.StatusCode != http.StatusBadRequest || r.Body != "{\"error\":\"invalid\"}\n" {
				t.Fatalf("API: %d %q, want 400 invalid", r.StatusCode, r.Body)
			}
			if !tc.form {
				return
			}
			r = c.PostForm(t, "/manage/remove", url.Values{"token": {tc.token}})
			if got, want := r.StatusCode, http.StatusBadRequest; got != want {
				t.Fatalf("form: status %d, want %d", got, want)
			}
			if !strings.Contains(r.Body, `data-testid="token-error"`) || !strings.Contains(r.Body, `id="remove-form"`) {
				t.Fatalf("form 400 does not show the form with the token message:\n%s", r.Body)
			}
		})
	}
	// Other shape errors.
	if r := c.PostJSON(t, "POST", "/api/public/removals", `{"token":"`+strings.Repeat("a", 64)+`","email":"x@example.com"}`); r.StatusCode != http.StatusBadRequest {
		t.Errorf("unknown field: status %d, want 400", r.StatusCode)
	}
	if r := c.PostForm(t, "/api/public/removals", url.Values{"token": {strings.Repeat("a", 64)}}); r.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("form body on the API: status %d, want 415", r.StatusCode)
	}
	if r := c.PostJSON(t, "POST", "/manage/remove", `{"token":"`+strings.Repeat("a", 64)+`"}`); r.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("JSON on the form route: status %d, want 415", r.StatusCode)
	}
	wantNoChange(t, "malformed removals", app, before)
}
