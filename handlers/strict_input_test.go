package handlers

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/google/uuid"
)

// wantJSONError checks a status and the contract's JSON error body.
func wantJSONError(tb testing.TB, what string, r *testResponse, status int, code string) {
	tb.Helper()
	if r.StatusCode != status {
		tb.Fatalf("%s: status %d, want %d (%s)", what, r.StatusCode, status, r.Body)
	}
	if got, want := strings.TrimSpace(r.Body), `{"error":"`+code+`"}`; got != want {
		tb.Fatalf("%s: body %s, want %s", what, got, want)
	}
}

// TestQuery_PageSizesOutOfRangeAre400: every page size outside 1–200 —
// 0 included, which once meant the default — is 400 on the owner's lists,
// JSON and HTML; the bounds themselves are accepted.
func TestQuery_PageSizesOutOfRangeAre400(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	p := app.Demo.ID
	for _, base := range []string{
		"/api/owner/programs/" + p + "/entries",
		"/api/owner/programs/" + p + "/events",
		"/owner/programs/" + p + "/entries",
		"/owner/programs/" + p + "/events",
	} {
		for _, limit := range []string{"0", "-1", "201", "ten", "1.5", "00"} {
			r := owner.Get(t, base+"?limit="+limit)
			if strings.HasPrefix(base, "/api/") {
				wantJSONError(t, base+"?limit="+limit, r, http.StatusBadRequest, "invalid")
			} else if r.StatusCode != http.StatusBadRequest {
				t.Fatalf("%s?limit=%s: status %d, want 400", base, limit, r.StatusCode)
			}
		}
		for _, limit := range []string{"", "1", "200"} {
			r := owner.Get(t, base+"?limit="+limit)
			if limit == "" && base == "/owner/programs/"+p+"/entries" {
				// The queue's address carries only the filters that are set.
				if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != base {
					t.Fatalf("%s?limit=: status %d to %q, want 303 to %s", base, r.StatusCode, r.Header.Get("Location"), base)
				}
				continue
			}
			if r.StatusCode != http.StatusOK {
				t.Fatalf("%s?limit=%s: status %d, want 200 (%s)", base, limit, r.StatusCode, r.Body)
			}
		}
	}
}

// TestQuery_RepeatedParameterIs400: a query names each parameter at most
// once; a second copy is refused, never resolved to one of them.
func TestQuery_RepeatedParameterIs400(t *testing.T) {
	app := MustStartApp(t)
	owner := mustOwnerClient(t, app)
	p := app.Demo.ID
	for _, path := range []string{
		"/api/owner/programs/" + p + "/entries?state=waiting&state=selected",
		"/api/owner/programs/" + p + "/entries?state=waiting&limit=5&limit=6",
		"/api/owner/programs/" + p + "/entries?cursor=a&cursor=b",
		"/api/owner/programs/" + p + "/entries?from=2026-01-01&from=2026-01-02",
		"/api/owner/programs/" + p + "/events?limit=1&limit=1",
		"/api/owner/programs/" + p + "/events?cursor=&cursor=",
	} {
		wantJSONError(t, path, owner.Get(t, path), http.StatusBadRequest, "invalid")
	}
	for _, path := range []string{
		"/owner/programs/" + p + "/entries?state=waiting&state=selected",
		"/owner/programs/" + p + "/events?limit=2&limit=3",
		"/sign-in?redirect_url=/owner&redirect_url=/me",
	} {
		if r := owner.Get(t, path); r.StatusCode != http.StatusBadRequest {
			t.Fatalf("%s: status %d, want 400", path, r.StatusCode)
		}
	}
	// One copy of each is fine.
	path := "/api/owner/programs/" + p + "/entries?state=waiting&limit=5"
	if r := owner.Get(t, path); r.StatusCode != http.StatusOK {
		t.Fatalf("%s: status %d, want 200", path, r.StatusCode)
	}
}

// utf16Body encodes s as UTF-16LE, as a client declaring charset=utf-16
// would send it.
func utf16Body(s string) []byte {
	var b bytes.Buffer
	for _, u := range utf16.Encode([]rune(s)) {
		b.WriteByte(byte(u))
		b.WriteByte(byte(u >> 8))
	}
	return b.Bytes()
}

// TestContentType_CharsetOtherThanUTF8Is415: bodies are UTF-8; a request
// that declares another charset is refused with 415 and stores nothing,
// whether its bytes happen to read as UTF-8 or not.
func TestContentType_CharsetOtherThanUTF8Is415(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	body := func() string {
		return signupJSONBody(uuid.NewString(), "charset@example.com", app.Demo.CurrentNoticeVersion, true)
	}
	before := dbFingerprint(t, app.DB)
	for _, ct := range []string{
		"application/json; charset=utf-16",
		"application/json; charset=UTF-16LE",
		"application/json; charset=iso-8859-1",
		"application/json; charset=us-ascii",
		"application/json; charset=",
	} {
		r := c.Do(t, "POST", signupAPI, ct, strings.NewReader(body()))
		wantJSONError(t, ct, r, http.StatusUnsupportedMediaType, "unsupported_media_type")
	}
	r := c.Do(t, "POST", signupAPI, "application/json; charset=utf-16", bytes.NewReader(utf16Body(body())))
	wantJSONError(t, "UTF-16 bytes", r, http.StatusUnsupportedMediaType, "unsupported_media_type")
	// The form too.
	form := signupFormValues(uuid.NewString(), "charset@example.com", app.Demo.CurrentNoticeVersion, true)
	r = c.Do(t, "POST", signupPath, "application/x-www-form-urlencoded; charset=iso-8859-1", strings.NewReader(form.Encode()))
	if r.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("form with charset=iso-8859-1: status %d, want 415", r.StatusCode)
	}
	if !sameRows(before, dbFingerprint(t, app.DB)) {
		t.Fatal("a refused request changed the database")
	}
	// UTF-8, however spelled, is accepted.
	for _, ct := range []string{"application/json; charset=utf-8", "application/json; charset=UTF-8"} {
		if r := c.Do(t, "POST", signupAPI, ct, strings.NewReader(body())); r.StatusCode != http.StatusAccepted {
			t.Fatalf("%s: status %d, want 202 (%s)", ct, r.StatusCode, r.Body)
		}
	}
}

// TestRoutes_WrongMethodIs405WithAllow: a known path asked with a method it
// does not take is 405 naming the methods it does, JSON on the API and a
// page elsewhere; an unknown path stays 404 without Allow.
func TestRoutes_WrongMethodIs405WithAllow(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	owner := mustOwnerClient(t, app)
	p := app.Demo.ID
	for _, tc := range []struct {
		client       *testClient
		method, path string
		allow        string
	}{
		{c, "DELETE", "/api/public/programs/demo", "GET, HEAD"},
		{c, "GET", signupAPI, "POST"},
		{c, "PUT", signupAPI, "POST"},
		{c, "GET", "/api/public/removals", "POST"},
		{c, "DELETE", "/api/owner/programs", "GET, HEAD, POST"},
		{owner, "DELETE", "/api/owner/programs", "GET, HEAD, POST"},
		{owner, "PUT", "/api/owner/programs/" + p, "GET, HEAD, PATCH"},
		{owner, "POST", "/api/owner/programs/" + p + "/entries", "GET, HEAD"},
	} {
		r := tc.client.Do(t, tc.method, tc.path, "application/json", strings.NewReader(`{}`))
		what := tc.method + " " + tc.path
		wantJSONError(t, what, r, http.StatusMethodNotAllowed, "method_not_allowed")
		if got := r.Header.Get("Allow"); got != tc.allow {
			t.Fatalf("%s: Allow %q, want %q", what, got, tc.allow)
		}
	}
	for _, tc := range []struct{ method, path, allow string }{
		{"PUT", signupPath, "GET, HEAD, POST"},
		{"DELETE", "/privacy", "GET, HEAD"},
		{"GET", "/manage/remove", "POST"},
	} {
		r := c.Do(t, tc.method, tc.path, "", nil)
		what := tc.method + " " + tc.path
		if r.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("%s: status %d, want 405", what, r.StatusCode)
		}
		if got := r.Header.Get("Allow"); got != tc.allow {
			t.Fatalf("%s: Allow %q, want %q", what, got, tc.allow)
		}
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
			t.Fatalf("%s: Content-Type %q, want a page", what, ct)
		}
	}
	for _, path := range []string{"/nope", "/api/nope", "/api/public/programs/demo/nope"} {
		r := c.Do(t, "DELETE", path, "", nil)
		if r.StatusCode != http.StatusNotFound || r.Header.Get("Allow") != "" {
			t.Fatalf("DELETE %s: status %d Allow %q, want 404 without Allow", path, r.StatusCode, r.Header.Get("Allow"))
		}
	}
}
