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
