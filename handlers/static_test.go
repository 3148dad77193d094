package handlers

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

func TestFavicon_LinkedFromEveryPageAndAnsweredAtFaviconICO(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	home := c.Get(t, "/")
	m := regexp.MustCompile(`<link rel="icon" href="(/assets/favicon\.[0-9a-f]{8}\.svg)" type="image/svg\+xml">`).FindStringSubmatch(home.Body)
	if m == nil {
		t.Fatal("the page links no SVG icon")
	}
	linked := c.Get(t, m[1])
	if linked.StatusCode != http.StatusOK || linked.Header.Get("Content-Type") != "image/svg+xml" || !strings.HasPrefix(linked.Body, "<svg") {
		t.Fatalf("linked icon: %d %q", linked.StatusCode, linked.Header.Get("Content-Type"))
	}
	ico := c.Get(t, "/favicon.ico")
	if ico.StatusCode != http.StatusOK || ico.Header.Get("Content-Type") != "image/svg+xml" || ico.Body != linked.Body {
		t.Fatalf("/favicon.ico: %d %q, want the same SVG icon", ico.StatusCode, ico.Header.Get("Content-Type"))
	}
	if got := ico.Header.Get("Cache-Control"); got != faviconMaxAge {
		t.Errorf("/favicon.ico Cache-Control %q, want %q", got, faviconMaxAge)
	}
}

func TestAssets_UnknownPathsGetTheStyledNotFoundPage(t *testing.T) {
	app := MustStartApp(t)
	c := app.NewClient(t)
	missing := c.Get(t, "/no-such-page")
	for _, path := range []string{"/assets/nope.css", "/assets/admit.css", "/assets/admit.00000000.css", "/assets/", "/assets/a/b.js"} {
		r := c.Get(t, path)
		if r.StatusCode != http.StatusNotFound {
			t.Fatalf("%s: %d, want 404", path, r.StatusCode)
		}
		if r.Body != missing.Body {
			t.Errorf("%s: the 404 is not the page every unknown path gets", path)
		}
		if !strings.Contains(r.Body, `data-testid="error"`) || !strings.Contains(r.Body, `rel="stylesheet"`) {
			t.Errorf("%s: the 404 is not a styled page", path)
		}
		if got := r.Header.Get("Cache-Control"); got != "private, no-store" {
			t.Errorf("%s: Cache-Control %q, want it never cached", path, got)
		}
	}
}

// TestScripts_HtmxLoadsOnlyOnOwnersPages: the owner console swaps blocks
// with htmx; applicants' pages, signed out or in, load neither htmx, its
// configuration nor owner.js, and say nothing of them.
func TestScripts_HtmxLoadsOnlyOnOwnersPages(t *testing.T) {
	app := MustStartApp(t)
	htmx := regexp.MustCompile(`<script src="(/assets/htmx\.min\.[0-9a-f]{8}\.js)" defer></script>`)
	console := []string{`name="htmx-config"`, `/assets/owner.`, `hx-headers=`}

	visitor := app.NewClient(t)
	applicant := app.NewClient(t)
	applicant.SignIn(t, "applicant@example.test")
	for _, tc := range []struct {
		who  string
		c    *testClient
		path string
	}{
		{"signed out", visitor, "/"},
		{"signed out", visitor, "/waitlist/demo"},
		{"signed out", visitor, "/privacy"},
		{"signed out", visitor, "/manage/"},
		{"signed in", applicant, "/"},
		{"signed in", applicant, "/me"},
		{"signed in", applicant, "/redeem"},
	} {
		page := tc.c.Get(t, tc.path)
		if page.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: status %d", tc.who, tc.path, page.StatusCode)
		}
		if strings.Contains(page.Body, "htmx") || strings.Contains(page.Body, "hx-") {
			t.Errorf("%s %s: the page mentions htmx:\n%s", tc.who, tc.path, page.Body)
		}
		for _, s := range console {
			if strings.Contains(page.Body, s) {
				t.Errorf("%s %s: the page has %s", tc.who, tc.path, s)
			}
		}
	}

	owner := mustOwnerClient(t, app)
	for _, path := range []string{"/owner", "/owner/programs/" + app.Demo.ID + "/entries", "/waitlist/demo"} {
		page := owner.Get(t, path)
		m := htmx.FindStringSubmatch(page.Body)
		if page.StatusCode != http.StatusOK || m == nil {
			t.Fatalf("owner %s: status %d, htmx script %v", path, page.StatusCode, m)
		}
		for _, s := range console {
			if !strings.Contains(page.Body, s) {
				t.Errorf("owner %s: the page lacks %s", path, s)
			}
		}
		if got := owner.Get(t, m[1]); got.StatusCode != http.StatusOK || !strings.Contains(got.Body, `version:"2.0.11"`) {
			t.Errorf("owner %s: %s answered %d", path, m[1], got.StatusCode)
		}
	}
}
