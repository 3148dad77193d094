package handlers

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"admit/internal/testutil"
	"admit/store"
)

// startLoggedServer serves app's database and identity through a second
// Server whose log is JSON lines in the returned buffer.
func startLoggedServer(tb testing.TB, app *testApp, db *store.DB, requestIDHeader string) (*httptest.Server, *testutil.SyncBuffer) {
	tb.Helper()
	logs := &testutil.SyncBuffer{}
	ts := httptest.NewUnstartedServer(nil)
	u, _ := url.Parse("http://" + ts.Listener.Addr().String())
	srv, err := New(Options{PublicURL: u, Keys: srvOf(app).opts.Keys, RequestIDHeader: requestIDHeader,
		Logger: slog.New(slog.NewJSONHandler(logs, nil))}, db, app.Dev)
	if err != nil {
		tb.Fatal(err)
	}
	ts.Config.Handler = srv
	ts.Start()
	tb.Cleanup(ts.Close)
	return ts, logs
}

// logLines decodes the JSON log lines with the given message.
func logLines(tb testing.TB, logs string, msg string) []map[string]any {
	tb.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			tb.Fatalf("log line is not JSON: %q", sc.Text())
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

func send(tb testing.TB, method, u, body string, headers ...string) *http.Response {
	tb.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, u, err)
	}
	resp.Body.Close()
	return resp
}

func TestAccessLog_OneLinePerRequestWithRoutePatternAndNothingPersonal(t *testing.T) {
	app := MustStartApp(t)
	ts, logs := startLoggedServer(t, app, app.DB, "")
	reqs := []struct {
		method, path, body string
		headers            []string
		route              string
	}{
		{"GET", "/waitlist/demo?email=alice%40example.com&token=tok_secret123", "", nil, "GET /waitlist/{slug}"},
		{"POST", "/api/public/programs/demo/signups", `{"email":"bob@example.com"}`, []string{"Content-Type", "application/json"}, "POST /api/public/programs/{slug}/signups"},
		{"POST", "/waitlist/demo", "email=carol%40example.com", []string{"Content-Type", "application/x-www-form-urlencoded", "Origin", "https://evil.example"}, "POST /waitlist/{slug}"},
		{"GET", "/no-such/dave@example.com", "", nil, "/"},
		{"GET", "//waitlist/erin@example.com", "", nil, "GET /waitlist/{slug}"},
		{"GET", "/manage?token=frank@example.com", "", nil, "GET /manage/{$}"},
		{"PROPFIND", "/me", "", nil, "/"},
		{"GET", "/healthz", "", nil, "GET /healthz"},
	}
	var ids []string
	for _, rq := range reqs {
		resp := send(t, rq.method, ts.URL+rq.path, rq.body, rq.headers...)
		id := resp.Header.Get("X-Request-ID")
		if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(id) {
			t.Fatalf("%s %s: X-Request-ID=%q, want 16 hex digits", rq.method, rq.path, id)
		}
		ids = append(ids, id)
	}
	lines := logLines(t, logs.String(), "request")
	if len(lines) != len(reqs) {
		t.Fatalf("%d access-log lines for %d requests:\n%s", len(lines), len(reqs), logs)
	}
	for i, l := range lines {
		rq := reqs[i]
		if l["route"] != rq.route || l["request_id"] != ids[i] {
			t.Errorf("%s %s: logged route %v, id %v; want %q, %q", rq.method, rq.path, l["route"], l["request_id"], rq.route, ids[i])
		}
		for _, k := range []string{"method", "status", "duration_ms", "bytes"} {
			if _, ok := l[k]; !ok {
				t.Errorf("%s %s: access line lacks %s: %v", rq.method, rq.path, k, l)
			}
		}
	}
	if lines[0]["status"] != float64(200) || lines[0]["bytes"].(float64) < 100 || lines[6]["method"] != "OTHER" {
		t.Errorf("first line %v, PROPFIND line %v", lines[0], lines[6])
	}
	for _, secret := range []string{"example.com", "tok_secret", "alice", "bob", "carol", "dave", "erin", "frank", "PROPFIND"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log carries %q:\n%s", secret, logs)
		}
	}
}

func TestRequestID_ProxyHeaderIsBelievedOnlyWhenTrustedAndWellFormed(t *testing.T) {
	app := MustStartApp(t)
	untrusted, _ := startLoggedServer(t, app, app.DB, "")
	if got := send(t, "GET", untrusted.URL+"/healthz", "", "X-Request-ID", "abc123").Header.Get("X-Request-ID"); got == "abc123" || len(got) != 16 {
		t.Errorf("without ADMIT_REQUEST_ID_HEADER the client's ID was kept: %q", got)
	}
	trusted, logs := startLoggedServer(t, app, app.DB, "X-Request-ID")
	if got := send(t, "GET", trusted.URL+"/healthz", "", "X-Request-ID", "7f3c9a2e-41b0-4d6e-9a53-0c2b1f8e6d47").Header.Get("X-Request-ID"); got != "7f3c9a2e-41b0-4d6e-9a53-0c2b1f8e6d47" {
		t.Errorf("the trusted proxy's ID was replaced by %q", got)
	}
	for _, bad := range []string{"grace@example.com", "a b", strings.Repeat("x", 65), "id\"=1"} {
		if got := send(t, "GET", trusted.URL+"/healthz", "", "X-Request-ID", bad).Header.Get("X-Request-ID"); got == bad || len(got) != 16 {
			t.Errorf("malformed proxy ID %q answered as %q, want a new one", bad, got)
		}
	}
	if strings.Contains(logs.String(), "grace") {
		t.Errorf("a malformed request ID reached the log:\n%s", logs)
	}
}

func TestServerErrorShowsTheRequestIDOnThePageAndInTheLog(t *testing.T) {
	app := MustStartApp(t)
	broken, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "admit.db"), store.Options{BindingKey: testKey(120)})
	if err != nil {
		t.Fatal(err)
	}
	broken.Close() // every query now fails: the home page answers 500
	ts, logs := startLoggedServer(t, app, broken, "")
	for _, hx := range []bool{false, true} {
		req, _ := http.NewRequest("GET", ts.URL+"/", nil)
		if hx {
			req.Header.Set("HX-Request", "true")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		id := resp.Header.Get("X-Request-ID")
		if resp.StatusCode != 500 || id == "" || !strings.Contains(string(body), `<code data-testid="request-id">`+id+`</code>`) {
			t.Fatalf("htmx=%v: status %d, X-Request-ID %q, page does not show it:\n%s", hx, resp.StatusCode, id, body)
		}
		var failed bool
		for _, l := range logLines(t, logs.String(), "request failed") {
			failed = failed || l["request_id"] == id
		}
		if !failed {
			t.Fatalf("no error line carries request_id %s:\n%s", id, logs)
		}
	}
	// A 404 page has no reference to quote.
	ok, _ := startLoggedServer(t, app, app.DB, "")
	resp, err := http.Get(ok.URL + "/no-such")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), "request-id") {
		t.Errorf("a 404 page shows a request ID:\n%s", body)
	}
}
