package systemtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"admit/internal/testutil"
	"admit/views"

	"github.com/google/uuid"
)

// diskAnswer is one response, read whole.
type diskAnswer struct {
	status int
	header http.Header
	body   string
}

// sendOnce sends req and reads the whole answer; redirects are not followed.
func sendOnce(tb testing.TB, c *http.Client, req *http.Request) diskAnswer {
	tb.Helper()
	nc := *c
	nc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := nc.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("read %s: %v", req.URL.Path, err)
	}
	return diskAnswer{resp.StatusCode, resp.Header, string(b)}
}

func jsonPost(tb testing.TB, base, path string, v any) *http.Request {
	tb.Helper()
	b, _ := json.Marshal(v)
	req, err := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(b))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

func formPost(tb testing.TB, base, path string, v url.Values) *http.Request {
	tb.Helper()
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(v.Encode()))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return req
}

// untilRefused sends what try builds, up to 50 times, until it is answered
// 503, and returns that diskAnswer. Every diskAnswer before it must be ok: on a
// full disk a write may still fit in the WAL's existing room, but it is
// never a 500.
func untilRefused(tb testing.TB, what string, ok int, try func(i int) diskAnswer) diskAnswer {
	tb.Helper()
	for i := 0; i < 50; i++ {
		a := try(i)
		switch a.status {
		case http.StatusServiceUnavailable:
			return a
		case ok:
		default:
			tb.Fatalf("%s on a full disk: status=%d, want %d or 503; body %.300s", what, a.status, ok, a.body)
		}
	}
	tb.Fatalf("%s: 50 answered %d on a full disk, none 503", what, ok)
	return diskAnswer{}
}

// wantNoSpace checks a refusal for lack of space: 503, Retry-After,
// private and no-store, and nothing that says it was saved.
func wantNoSpace(tb testing.TB, what string, a diskAnswer) {
	tb.Helper()
	if got, want := a.status, http.StatusServiceUnavailable; got != want {
		tb.Fatalf("%s: status=%d, want %d", what, got, want)
	}
	if s, err := strconv.Atoi(a.header.Get("Retry-After")); err != nil || s < 1 {
		tb.Errorf("%s: Retry-After=%q, want whole seconds", what, a.header.Get("Retry-After"))
	}
	if got, want := a.header.Get("Cache-Control"), "private, no-store"; got != want {
		tb.Errorf("%s: Cache-Control=%q, want %q", what, got, want)
	}
}

// wantNoSpacePage checks the HTML refusal says that nothing was saved and
// to try again, not that something went wrong or a sign-in provider failed.
func wantNoSpacePage(tb testing.TB, what string, a diskAnswer) {
	tb.Helper()
	wantNoSpace(tb, what, a)
	for _, want := range []string{"cannot save", "Nothing was saved", "try again"} {
		if !strings.Contains(a.body, want) {
			tb.Errorf("%s: the page lacks %q:\n%.2000s", what, want, a.body)
		}
	}
	for _, not := range []string{"sign-in provider", "Something went wrong"} {
		if strings.Contains(a.body, not) {
			tb.Errorf("%s: the page says %q", what, not)
		}
	}
}

// wantNoSpaceJSON checks the JSON refusal is the contract's 503 code.
func wantNoSpaceJSON(tb testing.TB, what string, a diskAnswer) {
	tb.Helper()
	wantNoSpace(tb, what, a)
	if got, want := a.body, "{\"error\":\"unavailable\"}\n"; got != want {
		tb.Errorf("%s: body %q, want %q", what, got, want)
	}
}

var bannerTime = regexp.MustCompile(`The server cannot write: disk full since ([^.<]+)\.`)

// Every write that fails because the disk is full — signups by form and
// JSON, removals by form and JSON, the owner's CSV export (it records an
// audit event) — answers 503 with Retry-After, never 500; the owner
// console says since when the server cannot write, and stops saying it
// once space is freed and a write succeeds.
func TestDiskFull_WritesAnswer503WithRetryAfterAndTheConsoleShowsSince(t *testing.T) {
	disk, fill := testutil.MustFullDisk(t)
	data := filepath.Join(disk, "data")
	srv := MustRunServe(t, map[string]string{
		"ADMIT_ADDR":                 "127.0.0.1:0",
		"ADMIT_DATA":                 data,
		"ADMIT_NETWORK_HOURLY_LIMIT": "100000",
	})
	c := &http.Client{Timeout: 10 * time.Second}
	owner, _ := ownerAPI(t, srv.URL, srv.DevLink)
	version := demoNoticeVersion(t, c, srv.URL)
	var programID string
	if err := openReadOnly(t, filepath.Join(data, "admit.db")).QueryRow(`SELECT id FROM programs WHERE public_slug = 'demo'`).Scan(&programID); err != nil {
		t.Fatalf("find the demo program: %v", err)
	}
	// Removal tokens to use once the disk is full.
	var tokens []string
	for i := range 40 {
		code, r := postSignup(t, c, srv.URL, uuid.NewString(), fmt.Sprintf("keep%d@example.test", i), version)
		if code != http.StatusAccepted || r.RemovalToken == "" {
			t.Fatalf("signup %d: status=%d", i, code)
		}
		tokens = append(tokens, r.RemovalToken)
	}
	if a := sendOnce(t, owner, mustGetRequest(t, srv.URL+"/owner")); a.status != http.StatusOK || strings.Contains(a.body, "write-failure-banner") {
		t.Fatalf("GET /owner before the disk is full: status=%d, banner shown: %v", a.status, strings.Contains(a.body, "write-failure-banner"))
	}

	fill()
	filled := time.Now()
	a := untilRefused(t, "JSON signup", http.StatusAccepted, func(i int) diskAnswer {
		return sendOnce(t, c, jsonPost(t, srv.URL, "/api/public/programs/demo/signups", map[string]any{
			"requestKey": uuid.NewString(), "email": fmt.Sprintf("json%d@example.test", i), "noticeVersion": version, "permission": true}))
	})
	wantNoSpaceJSON(t, "JSON signup", a)
	refused := time.Now()

	a = untilRefused(t, "form signup", http.StatusSeeOther, func(i int) diskAnswer {
		return sendOnce(t, c, formPost(t, srv.URL, "/waitlist/demo", url.Values{"requestKey": {uuid.NewString()},
			"email": {fmt.Sprintf("form%d@example.test", i)}, "noticeVersion": {strconv.Itoa(version)}, "permission": {"yes"}}))
	})
	wantNoSpacePage(t, "form signup", a)
	if !strings.Contains(a.body, `value="form`) {
		t.Errorf("form signup: the form is not shown again with the submitted address")
	}

	next := 0
	token := func() string { next++; return tokens[next-1] }
	a = untilRefused(t, "JSON removal", http.StatusOK, func(int) diskAnswer {
		return sendOnce(t, c, jsonPost(t, srv.URL, "/api/public/removals", map[string]string{"token": token()}))
	})
	wantNoSpaceJSON(t, "JSON removal", a)
	a = untilRefused(t, "form removal", http.StatusOK, func(int) diskAnswer {
		return sendOnce(t, c, formPost(t, srv.URL, "/manage/remove", url.Values{"token": {token()}}))
	})
	wantNoSpacePage(t, "form removal", a)

	a = untilRefused(t, "CSV export", http.StatusOK, func(int) diskAnswer {
		return sendOnce(t, owner, mustGetRequest(t, srv.URL+"/owner/programs/"+programID+"/export.csv"))
	})
	wantNoSpacePage(t, "CSV export", a)
	a = untilRefused(t, "CSV export (API)", http.StatusOK, func(int) diskAnswer {
		return sendOnce(t, owner, mustGetRequest(t, srv.URL+"/api/owner/programs/"+programID+"/export.csv"))
	})
	wantNoSpaceJSON(t, "CSV export (API)", a)

	// The console says since when, the time of the first failure.
	a = sendOnce(t, owner, mustGetRequest(t, srv.URL+"/owner"))
	m := bannerTime.FindStringSubmatch(a.body)
	if a.status != http.StatusOK || m == nil {
		t.Fatalf("GET /owner on a full disk: status=%d, no disk-full banner:\n%.3000s", a.status, a.body)
	}
	if m[1] != views.When(filled) && m[1] != views.When(refused) {
		t.Errorf("the banner says disk full since %q, want the first failure's time, between %s and %s",
			m[1], views.When(filled), views.When(refused))
	}
	// Not for applicants.
	if a := sendOnce(t, c, mustGetRequest(t, srv.URL+"/waitlist/demo")); strings.Contains(a.body, "write-failure-banner") {
		t.Error("an applicant's page shows the write failure banner")
	}
	if strings.Contains(srv.Stderr.String(), "@") {
		t.Error("the server log holds an '@' (an email address?)")
	}

	// Space is freed: a write succeeds and the banner goes.
	if err := os.Remove(filepath.Join(disk, "filler")); err != nil {
		t.Fatal(err)
	}
	if code, _ := postSignup(t, c, srv.URL, uuid.NewString(), "after@example.test", version); code != http.StatusAccepted {
		t.Fatalf("signup after space was freed: status=%d", code)
	}
	if a := sendOnce(t, owner, mustGetRequest(t, srv.URL+"/owner")); a.status != http.StatusOK || strings.Contains(a.body, "write-failure-banner") {
		t.Fatalf("GET /owner after a write succeeded: status=%d, banner still shown", a.status)
	}
}

func mustGetRequest(tb testing.TB, u string) *http.Request {
	tb.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return req
}
