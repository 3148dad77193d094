package secure_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// crossSiteWrite is one write that the browser's fetch metadata, not the
// Origin, marks as coming from another site.
type crossSiteWrite struct {
	name string
	// prepare signs in as needed on a fresh app and returns the client
	// and the request.
	prepare func(t *testing.T, app *testApp) (c *testClient, method, path, ctype, body string, headers []string)
	// okStatus is the answer to the same request from the same origin.
	okStatus int
}

// ownerWithCSRF is the demo owner signed in, with the CSRF token header.
func ownerWithCSRF(t *testing.T, app *testApp) (*testClient, []string) {
	c := app.NewClient(t)
	c.SignIn(t, "owner@example.test")
	return c, []string{"X-CSRF-Token", c.CSRF(t)}
}

// contentRevision is the demo program's private content revision, read
// through the owner API.
func contentRevision(t *testing.T, c *testClient, app *testApp) int {
	t.Helper()
	var rev struct {
		Revision int `json:"revision"`
	}
	r := c.Get(t, "/api/owner/programs/"+app.Demo.ID+"/content")
	if err := json.Unmarshal([]byte(r.Body), &rev); r.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("GET content: %d %v", r.StatusCode, err)
	}
	return rev.Revision
}

// excerpt is the start of a response body, for a failure message.
func excerpt(body string) string {
	if len(body) > 200 {
		return body[:200] + "…"
	}
	return body
}

// crossSiteWrites covers docs/API.md's public writes and signed-in writes
// of each kind: JSON and forms, applicant and owner, POST, PATCH and PUT.
var crossSiteWrites = []crossSiteWrite{
	{"JSON signup", func(t *testing.T, app *testApp) (*testClient, string, string, string, string, []string) {
		return app.NewClient(t), "POST", signupAPI, "application/json", signupJSONBody(uuid.NewString(), "cs.json@example.com", app.Demo.CurrentNoticeVersion, true), nil
	}, http.StatusAccepted},
	{"form signup", func(t *testing.T, app *testApp) (*testClient, string, string, string, string, []string) {
		return app.NewClient(t), "POST", "/waitlist/demo", "application/x-www-form-urlencoded", url.Values{"email": {"cs.form@example.com"}, "permission": {"yes"},
			"noticeVersion": {itoa(app.Demo.CurrentNoticeVersion)}, "requestKey": {uuid.NewString()}}.Encode(), nil
	}, http.StatusAccepted},
	{"JSON removal", func(t *testing.T, app *testApp) (*testClient, string, string, string, string, []string) {
		c := app.NewClient(t)
		token := mustJoinDemo(t, c, "cs.leaver@example.com")
		return c, "POST", "/api/public/removals", "application/json", `{"token":"` + token + `"}`, nil
	}, http.StatusOK},
	{"form removal", func(t *testing.T, app *testApp) (*testClient, string, string, string, string, []string) {
		c := app.NewClient(t)
		token := mustJoinDemo(t, c, "cs.leaver@example.com")
		return c, "POST", "/manage/remove", "application/x-www-form-urlencoded", url.Values{"token": {token}}.Encode(), nil
	}, http.StatusOK},
	{"development sign-in", func(t *testing.T, app *testApp) (*testClient, string, string, string, string, []string) {
		return app.NewClient(t), "POST", "/dev/sign-in", "application/x-www-form-urlencoded",
			url.Values{"email": {"owner@example.test"}}.Encode(), nil
	}, http.StatusSeeOther},
	{"recipient withdrawal (JSON)", func(t *testing.T, app *testApp) (*testClient, string, string, string, string, []string) {
		mustInsertEntry(t, app.DB, app.Demo, "cs.applicant@example.com", "waiting")
		c := app.NewClient(t)
		c.SignIn(t, "cs.applicant@example.com")
		return c, "POST", "/api/me/waitlist/demo/withdraw", "application/json", `{}`, []string{"X-CSRF-Token", c.CSRF(t)}
	}, http.StatusOK},
	{"owner notice (JSON POST)", func(t *testing.T, app *testApp) (*testClient, string, string, string, string, []string) {
		c, h := ownerWithCSRF(t, app)
		body, _ := json.Marshal(map[string]string{"purpose": app.Demo.Purpose, "contactText": "By hand.", "retentionText": "Until the program ends."})
		return c, "POST", "/api/owner/programs/" + app.Demo.ID + "/notices", "application/json", string(body), h
	}, http.StatusCreated},
	{"owner settings (JSON PATCH)", func(t *testing.T, app *testApp) (*testClient, string, string, string, string, []string) {
		c, h := ownerWithCSRF(t, app)
		return c, "PATCH", "/api/owner/programs/" + app.Demo.ID, "application/json",
			`{"expectedRevision":` + itoa(int(app.Demo.Revision)) + `,"queueCap":5}`, h
	}, http.StatusOK},
	{"owner content (JSON PUT)", func(t *testing.T, app *testApp) (*testClient, string, string, string, string, []string) {
		c, h := ownerWithCSRF(t, app)
		return c, "PUT", "/api/owner/programs/" + app.Demo.ID + "/content", "application/json",
			`{"expectedRevision":` + itoa(contentRevision(t, c, app)) + `,"body":"Welcome."}`, h
	}, http.StatusOK},
	{"owner content (form)", func(t *testing.T, app *testApp) (*testClient, string, string, string, string, []string) {
		c, h := ownerWithCSRF(t, app)
		return c, "POST", "/owner/programs/" + app.Demo.ID + "/content", "application/x-www-form-urlencoded",
			url.Values{"body": {"Welcome."}, "csrf": {h[1]}, "expectedRevision": {itoa(contentRevision(t, c, app))}}.Encode(), nil
	}, http.StatusSeeOther},
	{"sign-out", func(t *testing.T, app *testApp) (*testClient, string, string, string, string, []string) {
		c, h := ownerWithCSRF(t, app)
		return c, "POST", "/sign-out", "application/x-www-form-urlencoded", url.Values{"csrf": {h[1]}}.Encode(), nil
	}, http.StatusSeeOther},
}

// wantWriteRefused runs tc on a fresh app: sent with the Host and headers
// refusal gives, the request is 403 and changes nothing; then the same
// request from the public origin, same-origin by its fetch metadata, does
// what it asks — so the refusal was the origin rule's, nothing else's.
func wantWriteRefused(t *testing.T, tc crossSiteWrite, refusal func(app *testApp) (host string, headers []string)) {
	t.Helper()
	app := MustStartApp(t)
	c, method, path, ctype, body, headers := tc.prepare(t, app)
	before := dbFingerprint(t, app.DB)
	host, extra := refusal(app)
	r := c.SendHost(t, method, path, host, ctype, body, append(extra, headers...)...)
	if got, want := r.StatusCode, http.StatusForbidden; got != want {
		t.Fatalf("%s %s with Host %q and %q: status %d, want %d", method, path, host, extra, got, want)
	}
	if got := r.Header.Get("Cache-Control"); got != "private, no-store" {
		t.Errorf("Cache-Control=%q, want private, no-store", got)
	}
	wantNoChange(t, "a refused write", app, before)
	ok := append([]string{"Origin", app.URL, "Sec-Fetch-Site", "same-origin"}, headers...)
	if r := c.SendHost(t, method, path, "", ctype, body, ok...); r.StatusCode != tc.okStatus {
		t.Fatalf("same-origin %s %s: status %d, want %d; body %s", method, path, r.StatusCode, tc.okStatus, excerpt(r.Body))
	}
}

func TestOrigin_CrossSiteFetchMetadataIsRefusedEvenWithThePublicOrigin(t *testing.T) {
	for _, tc := range crossSiteWrites {
		for _, site := range []string{"cross-site", "same-site"} {
			t.Run(tc.name+"/"+site, func(t *testing.T) {
				// The Origin is exactly the public URL: Go's own check trusts
				// it; the browser's Sec-Fetch-Site must still win.
				wantWriteRefused(t, tc, func(app *testApp) (string, []string) {
					return "", []string{"Origin", app.URL, "Sec-Fetch-Site", site}
				})
			})
		}
	}
}

func TestOrigin_DifferingOnlyInSchemeOrPortIsRefused(t *testing.T) {
	// The request's Host matches each Origin's host, so only admit's exact
	// comparison with the public URL can refuse it: Go's check compares the
	// Origin's host with Host, never the scheme, and a proxy passes on the
	// Host it was sent.
	for _, tc := range crossSiteWrites {
		t.Run(tc.name+"/scheme", func(t *testing.T) {
			wantWriteRefused(t, tc, func(app *testApp) (string, []string) {
				return "", []string{"Origin", strings.Replace(app.URL, "http://", "https://", 1)}
			})
		})
		t.Run(tc.name+"/port", func(t *testing.T) {
			wantWriteRefused(t, tc, func(app *testApp) (string, []string) {
				other := "127.0.0.1:1"
				if strings.HasSuffix(app.URL, ":1") {
					other = "127.0.0.1:2"
				}
				return other, []string{"Origin", "http://" + other}
			})
		})
	}
}
