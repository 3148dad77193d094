package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"admit/internal/testutil"
	"admit/store"

	"github.com/google/uuid"
)

// removalLinkPattern finds a removal link's token in a page.
var removalLinkPattern = regexp.MustCompile(`/manage/#([0-9a-f]{64})`)

// signupFormValues builds the form a browser would post for the demo notice.
func signupFormValues(requestKey, email string, noticeVersion int, permission bool) url.Values {
	v := url.Values{
		"requestKey":    {requestKey},
		"email":         {email},
		"noticeVersion": {strconv.Itoa(noticeVersion)},
		"website":       {""},
	}
	if permission {
		v.Set("permission", "yes")
	}
	if LowerLocalPart(email) != email {
		// The answer to the question about capitals: as typed.
		v.Set("case", "keep")
	}
	return v
}

// pageToken returns the single removal token a page shows, or "" for none.
// It fails the test if the page shows two different tokens.
func pageToken(tb testing.TB, body string) string {
	tb.Helper()
	var tok string
	for _, m := range removalLinkPattern.FindAllStringSubmatch(body, -1) {
		if tok != "" && m[1] != tok {
			tb.Fatalf("page shows two removal tokens %s and %s", tok, m[1])
		}
		tok = m[1]
	}
	if tok != "" && !strings.Contains(body, `data-testid="removal-token">`+tok+`<`) {
		tb.Fatalf("page links token %s but does not show it for pasting", tok)
	}
	return tok
}

// inputTag returns the <input …> tag with the given name attribute.
func inputTag(tb testing.TB, body, name string) string {
	tb.Helper()
	re := regexp.MustCompile(`<input[^>]*\sname="` + regexp.QuoteMeta(name) + `"[^>]*>`)
	tags := re.FindAllString(body, -1)
	if len(tags) != 1 {
		tb.Fatalf("page has %d inputs named %q, want 1", len(tags), name)
	}
	return tags[0]
}

// tagAttr returns an attribute's value in a tag ("" when absent).
func tagAttr(tag, name string) string {
	m := regexp.MustCompile(`\s` + regexp.QuoteMeta(name) + `="([^"]*)"`).FindStringSubmatch(tag)
	if m == nil {
		return ""
	}
	return m[1]
}

// formRequestKey returns the page form's requestKey, which must be a UUID.
func formRequestKey(tb testing.TB, body string) string {
	tb.Helper()
	key := tagAttr(inputTag(tb, body, "requestKey"), "value")
	if u, err := uuid.Parse(key); err != nil || u.String() != key {
		tb.Fatalf("requestKey %q is not a canonical UUID", key)
	}
	return key
}

// withoutDate returns a copy of h without the Date header and the
// request ID, which differ on every response.
func withoutDate(h http.Header) http.Header {
	c := h.Clone()
	c.Del("Date")
	c.Del("X-Request-ID")
	return c
}

// sameResponse fails the test unless two responses have the same status,
// headers apart from Date and the request ID (of one form in both), and body.
func sameResponse(tb testing.TB, what string, a, b *testResponse) {
	tb.Helper()
	if ia, ib := a.Header.Get("X-Request-ID"), b.Header.Get("X-Request-ID"); len(ia) != 16 || len(ib) != 16 {
		tb.Fatalf("%s: request IDs %q and %q, want two made by admit", what, ia, ib)
	}
	if a.StatusCode != b.StatusCode {
		tb.Fatalf("%s: status %d vs %d", what, a.StatusCode, b.StatusCode)
	}
	if ha, hb := withoutDate(a.Header), withoutDate(b.Header); !reflect.DeepEqual(ha, hb) {
		tb.Fatalf("%s: headers differ:\n%v\n%v", what, ha, hb)
	}
	if a.Body != b.Body {
		tb.Fatalf("%s: bodies differ:\n%s\n---\n%s", what, a.Body, b.Body)
	}
}

// mustPublishDemoNotice publishes the next notice version of the demo program.
func mustPublishDemoNotice(tb testing.TB, app *testApp) *store.Notice {
	tb.Helper()
	ctx := context.Background()
	p, err := app.DB.ProgramByID(ctx, demoOwner(app), app.Demo.ID)
	if err != nil {
		tb.Fatalf("read demo: %v", err)
	}
	n, err := app.DB.PublishNotice(ctx, demoOwner(app), p.ID, store.NewNotice{Purpose: p.Purpose,
		ContactText: "By hand, once, if you are selected.", RetentionText: "Until the program is retired."})
	if err != nil {
		tb.Fatalf("publish notice: %v", err)
	}
	return n
}

// wantNoChange fails the test if any row of any table changed.
func wantNoChange(tb testing.TB, what string, app *testApp, before testutil.Fingerprint) {
	tb.Helper()
	if after := dbFingerprint(tb, app.DB); !sameRows(before, after) {
		tb.Fatalf("%s changed the database:%s", what, testutil.Describe(before, after))
	}
}

// networkAttempts is the total of every network counter's attempts.
func networkAttempts(tb testing.TB, app *testApp) int {
	tb.Helper()
	return appCount(tb, app, `SELECT coalesce(sum(attempts), 0) FROM network_counters`)
}

// wantOnlyAttemptsCounted fails the test unless the only change since
// before is n more attempts counted against the networks' hourly limits:
// a denied signup stores nothing but its counted attempt.
func wantOnlyAttemptsCounted(tb testing.TB, what string, app *testApp, before testutil.Fingerprint, attemptsBefore, n int) {
	tb.Helper()
	after := dbFingerprint(tb, app.DB)
	if changed := testutil.Changed(before, after); len(changed) > 1 || (len(changed) == 1 && changed[0] != "network_counters") {
		tb.Fatalf("%s changed more than the attempt counter:%s", what, testutil.Describe(before, after))
	}
	if got, want := networkAttempts(tb, app), attemptsBefore+n; got != want {
		tb.Fatalf("%s: network attempts=%d, want %d", what, got, want)
	}
}

func TestSignup_FormAndJSONAreAcceptedWithATokenShownOnce(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)

	// Form.
	key := formRequestKey(t, c.Get(t, signupPath).Body)
	form := signupFormValues(key, "form.person@example.com", 1, true)
	r := c.PostForm(t, signupPath, form)
	if got, want := r.StatusCode, http.StatusAccepted; got != want {
		t.Fatalf("form signup: status %d, want %d\n%s", got, want, r.Body)
	}
	if got, want := r.Header.Get("Cache-Control"), "private, no-store"; got != want {
		t.Errorf("form 202 Cache-Control=%q, want %q", got, want)
	}
	formToken := pageToken(t, r.Body)
	if formToken == "" {
		t.Fatalf("form 202 shows no /manage/#<token> link:\n%s", r.Body)
	}
	if !strings.Contains(r.Body, `href="`+app.URL+`/manage/#`+formToken+`"`) {
		t.Errorf("form 202 lacks the removal link %s/manage/#%s", app.URL, formToken)
	}
	// The replay shows none.
	r = c.PostForm(t, signupPath, form)
	if got, want := r.StatusCode, http.StatusAccepted; got != want {
		t.Fatalf("form replay: status %d, want %d", got, want)
	}
	if tok := pageToken(t, r.Body); tok != "" || strings.Contains(r.Body, "/manage/#") {
		t.Fatalf("form replay shows a removal link")
	}
	if !strings.Contains(r.Body, `data-testid="replay"`) {
		t.Errorf("form replay does not say the request was already received")
	}

	// JSON.
	jkey := uuid.NewString()
	body := signupJSONBody(jkey, "json.person@example.com", 1, true)
	r = c.PostJSON(t, "POST", signupAPI, body)
	if got, want := r.StatusCode, http.StatusAccepted; got != want {
		t.Fatalf("JSON signup: status %d, want %d\n%s", got, want, r.Body)
	}
	if got, want := r.Header.Get("Cache-Control"), "private, no-store"; got != want {
		t.Errorf("JSON 202 Cache-Control=%q, want %q", got, want)
	}
	var first map[string]string
	if err := json.Unmarshal([]byte(r.Body), &first); err != nil {
		t.Fatalf("JSON 202 body %q: %v", r.Body, err)
	}
	if got, want := first["status"], "received"; got != want {
		t.Errorf("status=%q, want %q", got, want)
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(first["removalToken"]) || len(first) != 2 {
		t.Fatalf("JSON 202 body %q, want {status, removalToken: 64 hex}", r.Body)
	}
	r = c.PostJSON(t, "POST", signupAPI, body)
	if got, want := r.StatusCode, http.StatusAccepted; got != want {
		t.Fatalf("JSON replay: status %d, want %d", got, want)
	}
	if got, want := r.Body, "{\"status\":\"received\"}\n"; got != want {
		t.Fatalf("JSON replay body %q, want %q (no token)", got, want)
	}
	if got, want := r.Header.Get("Cache-Control"), "private, no-store"; got != want {
		t.Errorf("JSON replay Cache-Control=%q, want %q", got, want)
	}

	// Both are stored, each token matches its own entry.
	for email, tok := range map[string]string{"form.person@example.com": formToken, "json.person@example.com": first["removalToken"]} {
		if n := appCount(t, app, `SELECT count(*) FROM entries WHERE email_key = ? AND removal_hash = ? AND state = 'waiting'`,
			email, store.HashRemovalToken(tok)); n != 1 {
			t.Errorf("%s: %d entries match its token, want 1", email, n)
		}
	}
}

func TestSignup_NewAndDuplicateAddressGetIdenticalResponses(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	const listed = "Listed.Person@example.com"

	// The address joins once by form.
	first := c.PostForm(t, signupPath, signupFormValues(uuid.NewString(), listed, 1, true))
	firstToken := pageToken(t, first.Body)
	if first.StatusCode != http.StatusAccepted || firstToken == "" {
		t.Fatalf("first signup: status %d, token %q", first.StatusCode, firstToken)
	}
	entries := appCount(t, app, `SELECT count(*) FROM entries`)

	masked := func(r *testResponse, tok string) *testResponse {
		if tok == "" {
			t.Fatalf("response shows no token:\n%s", r.Body)
		}
		return &testResponse{StatusCode: r.StatusCode, Header: r.Header, Body: strings.ReplaceAll(r.Body, tok, "TOKEN")}
	}

	// Form: a new address and the listed one, each with a fresh key.
	fresh := c.PostForm(t, signupPath, signupFormValues(uuid.NewString(), "new.person@example.com", 1, true))
	dup := c.PostForm(t, signupPath, signupFormValues(uuid.NewString(), listed, 1, true))
	freshToken, dupToken := pageToken(t, fresh.Body), pageToken(t, dup.Body)
	if dupToken == firstToken {
		t.Fatal("the duplicate was shown the listed entry's real token")
	}
	sameResponse(t, "form: new vs duplicate", masked(fresh, freshToken), masked(dup, dupToken))
	sameResponse(t, "form: first signup vs duplicate", masked(first, firstToken), masked(dup, dupToken))

	// JSON: the same.
	jsonToken := func(r *testResponse) string {
		var v struct{ RemovalToken string }
		if err := json.Unmarshal([]byte(r.Body), &v); err != nil {
			t.Fatalf("body %q: %v", r.Body, err)
		}
		return v.RemovalToken
	}
	jfresh := c.PostJSON(t, "POST", signupAPI, signupJSONBody(uuid.NewString(), "new.json@example.com", 1, true))
	jdup := c.PostJSON(t, "POST", signupAPI, signupJSONBody(uuid.NewString(), listed, 1, true))
	if jfresh.StatusCode != http.StatusAccepted {
		t.Fatalf("JSON new: status %d", jfresh.StatusCode)
	}
	sameResponse(t, "JSON: new vs duplicate", masked(jfresh, jsonToken(jfresh)), masked(jdup, jsonToken(jdup)))

	// The duplicates stored no entry; their decoys remove nothing.
	if got, want := appCount(t, app, `SELECT count(*) FROM entries`), entries+2; got != want {
		t.Fatalf("entries=%d, want %d (two new addresses, no duplicate)", got, want)
	}
	for _, decoy := range []string{dupToken, jsonToken(jdup)} {
		if n := appCount(t, app, `SELECT count(*) FROM entries WHERE removal_hash = ?`, store.HashRemovalToken(decoy)); n != 0 {
			t.Fatal("a duplicate's token matches an entry")
		}
	}
}

func TestSignup_ConflictRerendersTheFormWithAFreshKey(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)

	// A key rebound to another address.
	key := uuid.NewString()
	if r := c.PostForm(t, signupPath, signupFormValues(key, "first@example.com", 1, true)); r.StatusCode != http.StatusAccepted {
		t.Fatalf("first: status %d", r.StatusCode)
	}
	before := dbFingerprint(t, app.DB)
	r := c.PostForm(t, signupPath, signupFormValues(key, "second@example.com", 1, true))
	if got, want := r.StatusCode, http.StatusConflict; got != want {
		t.Fatalf("rebound key: status %d, want %d", got, want)
	}
	if !strings.Contains(r.Body, `data-testid="signup-form"`) || !strings.Contains(r.Body, `data-testid="form-message"`) {
		t.Fatalf("409 does not re-render the form with a message:\n%s", r.Body)
	}
	if got := formRequestKey(t, r.Body); got == key {
		t.Fatalf("409 form reuses the submitted key %s, want a fresh one", key)
	}
	if got := r.Header.Get("Cache-Control"); got != "private, no-store" {
		t.Errorf("409 Cache-Control=%q", got)
	}
	wantNoChange(t, "a rebound key", app, before)

	// An outdated notice: the form comes back with the current one.
	n2 := mustPublishDemoNotice(t, app)
	stale := uuid.NewString()
	r = c.PostForm(t, signupPath, signupFormValues(stale, "reader@example.com", 1, true))
	if got, want := r.StatusCode, http.StatusConflict; got != want {
		t.Fatalf("outdated notice: status %d, want %d", got, want)
	}
	if got := formRequestKey(t, r.Body); got == stale {
		t.Fatal("409 form reuses the submitted key")
	}
	if got, want := tagAttr(inputTag(t, r.Body, "noticeVersion"), "value"), strconv.Itoa(n2.Version); got != want {
		t.Fatalf("409 form noticeVersion=%s, want the current %s", got, want)
	}
	if n := appCount(t, app, `SELECT count(*) FROM entries WHERE email_key = 'reader@example.com'`); n != 0 {
		t.Fatal("an outdated notice created an entry")
	}

	// JSON answers the generic code.
	r = c.PostJSON(t, "POST", signupAPI, signupJSONBody(uuid.NewString(), "reader@example.com", 1, true))
	if r.StatusCode != http.StatusConflict || r.Body != "{\"error\":\"conflict\"}\n" {
		t.Fatalf("JSON outdated notice: %d %q, want 409 conflict", r.StatusCode, r.Body)
	}
}

func TestSignup_FullCapSays429TryLaterAndIsTheSameForKnownAndUnknown(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	mustSetDemo(t, app, func(s *store.ProgramSettings) { s.HourlyCap = settingPtr(1) })
	if r := c.PostJSON(t, "POST", signupAPI, signupJSONBody(uuid.NewString(), "known@example.com", 1, true)); r.StatusCode != http.StatusAccepted {
		t.Fatalf("filling signup: status %d", r.StatusCode)
	}
	before, attempts := dbFingerprint(t, app.DB), networkAttempts(t, app)

	var jsonBodies, pages []string
	for _, email := range []string{"known@example.com", "unknown@example.com"} {
		r := c.PostJSON(t, "POST", signupAPI, signupJSONBody(uuid.NewString(), email, 1, true))
		if got, want := r.StatusCode, http.StatusTooManyRequests; got != want {
			t.Fatalf("JSON %s: status %d, want %d", email, got, want)
		}
		jsonBodies = append(jsonBodies, r.Body)

		key := uuid.NewString()
		r = c.PostForm(t, signupPath, signupFormValues(key, email, 1, true))
		if got, want := r.StatusCode, http.StatusTooManyRequests; got != want {
			t.Fatalf("form %s: status %d, want %d", email, got, want)
		}
		if !strings.Contains(strings.ToLower(r.Body), "try again later") {
			t.Fatalf("429 page does not say to try later:\n%s", r.Body)
		}
		if got := formRequestKey(t, r.Body); got == key {
			t.Fatal("429 form reuses the submitted key")
		}
		page := strings.ReplaceAll(r.Body, formRequestKey(t, r.Body), "KEY")
		pages = append(pages, strings.ReplaceAll(page, email, "EMAIL"))
	}
	if jsonBodies[0] != jsonBodies[1] || jsonBodies[0] != "{\"error\":\"rate_limited\"}\n" {
		t.Fatalf("JSON 429 bodies %q, want both {\"error\":\"rate_limited\"}", jsonBodies)
	}
	if pages[0] != pages[1] {
		t.Fatalf("429 pages differ between a known and an unknown address:\n%s\n---\n%s", pages[0], pages[1])
	}
	// Each denial counted its attempt (two JSON, two forms) and stored
	// nothing else: no receipt, entry, event or hour increment.
	wantOnlyAttemptsCounted(t, "denied signups", app, before, attempts, 4)
}

func TestSignup_InvalidFieldRerendersWithItsMessage(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	before := dbFingerprint(t, app.DB)

	for _, tc := range []struct {
		name       string
		email      string
		permission bool
		errTestID  string
		otherID    string
	}{
		{"bad email", "jane@@example.com", true, "email-error", "permission-error"},
		{"email with inner space", "jane doe@example.com", true, "email-error", "permission-error"},
		{"missing choice", "jane@example.com", false, "permission-error", "email-error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := uuid.NewString()
			r := c.PostForm(t, signupPath, signupFormValues(key, tc.email, 1, tc.permission))
			if got, want := r.StatusCode, http.StatusBadRequest; got != want {
				t.Fatalf("status %d, want %d", got, want)
			}
			if !strings.Contains(r.Body, `data-testid="`+tc.errTestID+`"`) {
				t.Fatalf("page lacks %s:\n%s", tc.errTestID, r.Body)
			}
			if strings.Contains(r.Body, `data-testid="`+tc.otherID+`"`) {
				t.Fatalf("page shows %s for a %s", tc.otherID, tc.name)
			}
			if got, want := tagAttr(inputTag(t, r.Body, "email"), "value"), tc.email; got != want {
				t.Fatalf("email field=%q, want what was typed %q", got, want)
			}
			if strings.Contains(inputTag(t, r.Body, "permission"), " checked") != tc.permission {
				t.Fatalf("checkbox state not kept: %s", inputTag(t, r.Body, "permission"))
			}
			if got := r.Header.Get("Cache-Control"); got != "private, no-store" {
				t.Errorf("400 Cache-Control=%q", got)
			}
		})
	}
	// JSON: permission false is 400 too.
	r := c.PostJSON(t, "POST", signupAPI, signupJSONBody(uuid.NewString(), "jane@example.com", 1, false))
	if r.StatusCode != http.StatusBadRequest || r.Body != "{\"error\":\"invalid\"}\n" {
		t.Fatalf("JSON without permission: %d %q, want 400 invalid", r.StatusCode, r.Body)
	}
	wantNoChange(t, "invalid signups", app, before)
}

func TestSignup_HoneypotFilledIs400AndStoresNothing(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	before := dbFingerprint(t, app.DB)
	form := signupFormValues(uuid.NewString(), "bot@example.com", 1, true)
	form.Set("website", "https://spam.example")
	r := c.PostForm(t, signupPath, form)
	if got, want := r.StatusCode, http.StatusBadRequest; got != want {
		t.Fatalf("status %d, want %d", got, want)
	}
	if pageToken(t, r.Body) != "" {
		t.Fatal("a honeypot submission was shown a removal link")
	}
	wantNoChange(t, "a honeypot submission", app, before)
}

func TestSignup_NetworkLimitIs429(t *testing.T) {
	app := MustStartApp(t, withNetworkLimit(3))
	c := app.NewClient(t)
	for i := range 3 {
		r := c.PostJSON(t, "POST", signupAPI, signupJSONBody(uuid.NewString(), fmt.Sprintf("net%d@example.com", i), 1, true))
		if r.StatusCode != http.StatusAccepted {
			t.Fatalf("signup %d: status %d, want 202", i+1, r.StatusCode)
		}
	}
	before := dbFingerprint(t, app.DB)
	r := c.PostJSON(t, "POST", signupAPI, signupJSONBody(uuid.NewString(), "net4@example.com", 1, true))
	if r.StatusCode != http.StatusTooManyRequests || r.Body != "{\"error\":\"rate_limited\"}\n" {
		t.Fatalf("4th JSON signup: %d %q, want 429 rate_limited", r.StatusCode, r.Body)
	}
	r = c.PostForm(t, signupPath, signupFormValues(uuid.NewString(), "net5@example.com", 1, true))
	if r.StatusCode != http.StatusTooManyRequests || !strings.Contains(strings.ToLower(r.Body), "try again later") {
		t.Fatalf("5th form signup: %d, want 429 with try again later", r.StatusCode)
	}
	// Over the limit nothing is stored, not even the attempt.
	wantNoChange(t, "network-limited signups", app, before)
	// The next UTC hour has a fresh allowance.
	app.Clock.Add(time.Hour)
	r = c.PostJSON(t, "POST", signupAPI, signupJSONBody(uuid.NewString(), "net6@example.com", 1, true))
	if r.StatusCode != http.StatusAccepted {
		t.Fatalf("signup in the next hour: status %d, want 202", r.StatusCode)
	}
}

func TestSignup_NoRawIPInTheDatabaseFile(t *testing.T) {
	app := MustStartApp(t, withNetworkLimit(2))
	c := app.NewClient(t)
	c.PostForm(t, signupPath, signupFormValues(uuid.NewString(), "ip1@example.com", 1, true))
	c.PostJSON(t, "POST", signupAPI, signupJSONBody(uuid.NewString(), "ip2@example.com", 1, true))
	if r := c.PostJSON(t, "POST", signupAPI, signupJSONBody(uuid.NewString(), "ip3@example.com", 1, true)); r.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("3rd signup: status %d, want 429", r.StatusCode)
	}
	if n := appCount(t, app, `SELECT count(*) FROM network_counters`); n == 0 {
		t.Fatal("no network counter was stored: the limit was not exercised")
	}
	var all []byte
	for _, suffix := range []string{"", "-wal", "-shm"} {
		b, err := os.ReadFile(app.DB.Path + suffix)
		if err != nil && !os.IsNotExist(err) {
			t.Fatalf("read %s: %v", filepath.Base(app.DB.Path+suffix), err)
		}
		all = append(all, b...)
	}
	if len(all) == 0 {
		t.Fatal("read no database bytes")
	}
	for _, needle := range []string{"127.0.0.1", "127.0.0.", "::1"} {
		if bytes.Contains(all, []byte(needle)) {
			t.Fatalf("the database files contain %q", needle)
		}
	}
	if !bytes.Contains(all, []byte("ip1@example.com")) {
		t.Fatal("sanity: the database files do not contain a stored address, so the scan proves nothing")
	}
}

func TestSignup_RequestShapeErrors(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	before := dbFingerprint(t, app.DB)
	validJSON := signupJSONBody(uuid.NewString(), "shape@example.com", 1, true)
	validForm := signupFormValues(uuid.NewString(), "shape@example.com", 1, true).Encode()
	big := strings.Repeat("a", 40<<10)
	// chunked hides the length, so the server must count the bytes itself.
	chunked := func(s string) io.Reader { return io.MultiReader(strings.NewReader(s)) }

	for _, tc := range []struct {
		name, path, contentType string
		body                    io.Reader
		status                  int
		jsonCode                string
	}{
		{"form type on the JSON route", signupAPI, "application/x-www-form-urlencoded", strings.NewReader(validForm), 415, "unsupported_media_type"},
		{"no type on the JSON route", signupAPI, "", strings.NewReader(validJSON), 415, "unsupported_media_type"},
		{"JSON on the form route", signupPath, "application/json", strings.NewReader(validJSON), 415, ""},
		{"multipart on the form route", signupPath, "multipart/form-data; boundary=x", strings.NewReader(validForm), 415, ""},
		{"40 KiB JSON", signupAPI, "application/json", strings.NewReader(`{"email":"` + big + `"}`), 413, "payload_too_large"},
		{"40 KiB JSON chunked", signupAPI, "application/json", chunked(`{"email":"` + big + `"}`), 413, "payload_too_large"},
		{"40 KiB form", signupPath, "application/x-www-form-urlencoded", strings.NewReader("email=" + big), 413, ""},
		{"40 KiB form chunked", signupPath, "application/x-www-form-urlencoded", chunked("email=" + big), 413, ""},
		{"unknown JSON field", signupAPI, "application/json", strings.NewReader(strings.TrimSuffix(validJSON, "}") + `,"name":"Jane"}`), 400, "invalid"},
		{"duplicated JSON field", signupAPI, "application/json", strings.NewReader(strings.TrimSuffix(validJSON, "}") + `,"email":"other@example.com"}`), 400, "invalid"},
		{"trailing JSON data", signupAPI, "application/json", strings.NewReader(validJSON + `{}`), 400, "invalid"},
		{"permission as a string", signupAPI, "application/json", strings.NewReader(strings.Replace(validJSON, `"permission":true`, `"permission":"true"`, 1)), 400, "invalid"},
		{"request key not a UUID", signupAPI, "application/json", strings.NewReader(signupJSONBody("not-a-uuid", "shape@example.com", 1, true)), 400, "invalid"},
		{"repeated form field", signupPath, "application/x-www-form-urlencoded", strings.NewReader(validForm + "&email=other%40example.com"), 400, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.Do(t, "POST", tc.path, tc.contentType, tc.body)
			if r.StatusCode != tc.status {
				t.Fatalf("status %d, want %d\n%s", r.StatusCode, tc.status, r.Body)
			}
			if tc.jsonCode != "" {
				if got, want := r.Body, `{"error":"`+tc.jsonCode+"\"}\n"; got != want {
					t.Fatalf("body %q, want %q", got, want)
				}
			}
		})
	}
	wantNoChange(t, "malformed requests", app, before)
}

func TestWaitlistPage_FormHasUntickedChoiceNoticeVersionFreshKeyAndHoneypot(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	first := c.Get(t, signupPath)
	if got, want := first.StatusCode, http.StatusOK; got != want {
		t.Fatalf("status %d, want %d", got, want)
	}
	if got, want := first.Header.Get("Cache-Control"), "private, no-store"; got != want {
		t.Errorf("Cache-Control=%q, want %q (the form holds a one-time key)", got, want)
	}
	box := inputTag(t, first.Body, "permission")
	if tagAttr(box, "type") != "checkbox" || strings.Contains(box, "checked") {
		t.Fatalf("permission input %s, want an unticked checkbox", box)
	}
	notice := inputTag(t, first.Body, "noticeVersion")
	if tagAttr(notice, "type") != "hidden" || tagAttr(notice, "value") != strconv.Itoa(app.Demo.CurrentNoticeVersion) {
		t.Fatalf("noticeVersion input %s, want hidden with value %d", notice, app.Demo.CurrentNoticeVersion)
	}
	if tagAttr(inputTag(t, first.Body, "requestKey"), "type") != "hidden" {
		t.Fatal("requestKey is not a hidden field")
	}
	honeypot := inputTag(t, first.Body, "website")
	if tagAttr(honeypot, "value") != "" || tagAttr(honeypot, "tabindex") != "-1" {
		t.Fatalf("honeypot %s, want an empty field out of the tab order", honeypot)
	}
	if tagAttr(inputTag(t, first.Body, "email"), "value") != "" {
		t.Fatal("email field is prefilled")
	}
	// The notice a person reads is on the page.
	n, err := app.DB.ProgramByID(context.Background(), demoOwner(app), app.Demo.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(first.Body, n.Purpose) {
		t.Error("page lacks the program purpose")
	}
	for _, testid := range []string{`data-testid="notice"`, `data-testid="signup-form"`, `action="/waitlist/demo"`, `method="post"`} {
		if !strings.Contains(first.Body, testid) {
			t.Errorf("page lacks %s", testid)
		}
	}
	second := c.Get(t, signupPath)
	if k1, k2 := formRequestKey(t, first.Body), formRequestKey(t, second.Body); k1 == k2 {
		t.Fatalf("two loads share the request key %s", k1)
	}
}

func TestHome_ListsTheOpenDemoProgram(t *testing.T) {
	app := MustStartApp(t)
	r := app.NewClient(t).Get(t, "/")
	if r.StatusCode != http.StatusOK {
		t.Fatalf("status %d", r.StatusCode)
	}
	if !strings.Contains(r.Body, `href="/waitlist/demo"`) || !strings.Contains(r.Body, app.Demo.Purpose) {
		t.Fatalf("home page does not list the demo program:\n%s", r.Body)
	}
	// Closed, it is no longer listed.
	mustSetDemo(t, app, func(s *store.ProgramSettings) { s.SignupOpen = settingPtr(false) })
	if r := app.NewClient(t).Get(t, "/"); strings.Contains(r.Body, `href="/waitlist/demo"`) {
		t.Fatal("home page lists a closed program")
	}
}

func TestPublicProgramAPI_MatchesTheDesignShape(t *testing.T) {
	app := MustStartApp(t)
	r := app.NewClient(t).Get(t, "/api/public/programs/demo")
	if got, want := r.StatusCode, http.StatusOK; got != want {
		t.Fatalf("status %d, want %d", got, want)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.Body), &raw); err != nil {
		t.Fatalf("body %q: %v", r.Body, err)
	}
	keys := func(m map[string]json.RawMessage) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		return out
	}
	wantKeys := func(what string, m map[string]json.RawMessage, want ...string) {
		t.Helper()
		if len(m) != len(want) {
			t.Fatalf("%s keys %v, want %v", what, keys(m), want)
		}
		for _, k := range want {
			if _, ok := m[k]; !ok {
				t.Fatalf("%s keys %v, want %v", what, keys(m), want)
			}
		}
	}
	wantKeys("program", raw, "slug", "name", "purpose", "signupOpen", "notice", "displayName", "contact")
	var notice map[string]json.RawMessage
	if err := json.Unmarshal(raw["notice"], &notice); err != nil {
		t.Fatalf("notice: %v", err)
	}
	wantKeys("notice", notice, "version", "purpose", "contactText", "retentionText", "publishedAt")

	var v struct {
		Slug       string `json:"slug"`
		Purpose    string `json:"purpose"`
		SignupOpen bool   `json:"signupOpen"`
		Notice     struct {
			Version       int    `json:"version"`
			Purpose       string `json:"purpose"`
			ContactText   string `json:"contactText"`
			RetentionText string `json:"retentionText"`
			PublishedAt   string `json:"publishedAt"`
		} `json:"notice"`
	}
	if err := json.Unmarshal([]byte(r.Body), &v); err != nil {
		t.Fatal(err)
	}
	if v.Slug != "demo" || v.Purpose != app.Demo.Purpose || !v.SignupOpen || v.Notice.Version != app.Demo.CurrentNoticeVersion ||
		v.Notice.Purpose != app.Demo.Purpose || v.Notice.ContactText == "" || v.Notice.RetentionText == "" {
		t.Fatalf("program %+v does not match the demo", v)
	}
	at, err := time.Parse(time.RFC3339, v.Notice.PublishedAt)
	if err != nil || !strings.HasSuffix(v.Notice.PublishedAt, "Z") {
		t.Fatalf("publishedAt %q is not RFC 3339 UTC: %v", v.Notice.PublishedAt, err)
	}
	if !at.Equal(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)) {
		t.Fatalf("publishedAt=%v, want the seed instant", at)
	}
}

func TestPublicRoutes_UnknownSlugIs404(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	for _, slug := range []string{"no-such-program", "Demo", "x"} {
		if r := c.Get(t, "/waitlist/"+slug); r.StatusCode != http.StatusNotFound {
			t.Errorf("GET /waitlist/%s: status %d, want 404", slug, r.StatusCode)
		}
		if r := c.Get(t, "/api/public/programs/"+slug); r.StatusCode != http.StatusNotFound || r.Body != "{\"error\":\"not_found\"}\n" {
			t.Errorf("GET /api/public/programs/%s: %d %q, want 404 not_found", slug, r.StatusCode, r.Body)
		}
		if r := c.PostJSON(t, "POST", "/api/public/programs/"+slug+"/signups",
			signupJSONBody(uuid.NewString(), "lost@example.com", 1, true)); r.StatusCode != http.StatusNotFound {
			t.Errorf("POST signups to %s: status %d, want 404", slug, r.StatusCode)
		}
		if r := c.PostForm(t, "/waitlist/"+slug, signupFormValues(uuid.NewString(), "lost@example.com", 1, true)); r.StatusCode != http.StatusNotFound {
			t.Errorf("POST /waitlist/%s: status %d, want 404", slug, r.StatusCode)
		}
	}
	if n := appCount(t, app, `SELECT count(*) FROM entries`); n != 0 {
		t.Fatalf("entries=%d after signups to unknown programs", n)
	}
}

// settingPtr returns a pointer to v.
func settingPtr[T any](v T) *T { return &v }

// TestSignup_FormKeysAreFreshAndTimeOrdered: every signup form carries a
// new request key, a version 7 UUID, later than the one before it, so
// that the receipts of form signups are written in key order.
func TestSignup_FormKeysAreFreshAndTimeOrdered(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	var last string
	for i := range 5 {
		page := c.Get(t, signupPath)
		key := formRequestKey(t, page.Body)
		u, err := uuid.Parse(key)
		if err != nil || u.Version() != 7 || u.String() != key {
			t.Fatalf("form %d: request key %q (%v), want a canonical version 7 UUID", i, key, err)
		}
		if key <= last {
			t.Fatalf("form %d: request key %s after %s, want a later one", i, key, last)
		}
		last = key
	}
	// The key is accepted like any other.
	if r := c.PostForm(t, signupPath, signupFormValues(last, "v7@example.com", 1, true)); r.StatusCode != http.StatusAccepted {
		t.Fatalf("signup with the form's key: status %d", r.StatusCode)
	}
}
