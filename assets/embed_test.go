package assets

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
)

// served are the logical names the pages use; each must be embedded.
var served = []string{"htmx.min.js", "pico.classless.min.css", "admit.css", "manage.js", "htmx.LICENSE", "pico.LICENSE"}

// get requests path from Handler.
func get(tb testing.TB, method, path string, header http.Header) *http.Response {
	tb.Helper()
	req := httptest.NewRequest(method, path, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, req)
	return rec.Result()
}

func TestHandler_VersionedPathServesBytesImmutable(t *testing.T) {
	for _, name := range served {
		t.Run(name, func(t *testing.T) {
			want, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			resp := get(t, http.MethodGet, Path(name), nil)
			body, _ := io.ReadAll(resp.Body)
			if got, want := resp.StatusCode, http.StatusOK; got != want {
				t.Fatalf("status=%d, want %d", got, want)
			}
			if !bytes.Equal(body, want) {
				t.Fatalf("body differs from %s (%d bytes, want %d)", name, len(body), len(want))
			}
			if got, want := resp.Header.Get("Cache-Control"), "public, max-age=31536000, immutable"; got != want {
				t.Errorf("Cache-Control=%q, want %q", got, want)
			}
			if got, want := resp.Header.Get("X-Content-Type-Options"), "nosniff"; got != want {
				t.Errorf("X-Content-Type-Options=%q, want %q", got, want)
			}
			if resp.Header.Get("ETag") == "" {
				t.Error("no ETag")
			}
		})
	}
}

func TestHandler_ContentTypes(t *testing.T) {
	for name, want := range map[string]string{
		"htmx.min.js":            "text/javascript; charset=utf-8",
		"manage.js":              "text/javascript; charset=utf-8",
		"pico.classless.min.css": "text/css; charset=utf-8",
		"admit.css":              "text/css; charset=utf-8",
		"pico.LICENSE":           "text/plain; charset=utf-8",
	} {
		resp := get(t, http.MethodGet, Path(name), nil)
		if got := resp.Header.Get("Content-Type"); got != want {
			t.Errorf("%s: Content-Type=%q, want %q", name, got, want)
		}
	}
}

func TestHandler_UnversionedStaleAndUnknownAre404(t *testing.T) {
	current := Path("htmx.min.js")
	stale := strings.Replace(current, current[len("/assets/htmx.min."):len("/assets/htmx.min.")+8], "00000000", 1)
	if stale == current {
		t.Fatalf("stale path equals current %q", current)
	}
	for _, path := range []string{
		"/assets/htmx.min.js", // unversioned
		stale,                 // an earlier build's name
		"/assets/",
		"/assets/embed.go",
		"/assets/nope.00000000.js",
		strings.TrimPrefix(current, "/assets"), // prefix stripped by mistake
	} {
		resp := get(t, http.MethodGet, path, nil)
		if got, want := resp.StatusCode, http.StatusNotFound; got != want {
			t.Errorf("GET %s: status=%d, want %d", path, got, want)
		}
		if got := resp.Header.Get("Cache-Control"); strings.Contains(got, "immutable") || got != "no-store" {
			t.Errorf("GET %s: Cache-Control=%q, want no-store", path, got)
		}
	}
}

func TestHandler_HeadAndConditionalGet(t *testing.T) {
	path := Path("admit.css")
	head := get(t, http.MethodHead, path, nil)
	if got, want := head.StatusCode, http.StatusOK; got != want {
		t.Fatalf("HEAD status=%d, want %d", got, want)
	}
	if b, _ := io.ReadAll(head.Body); len(b) != 0 {
		t.Fatalf("HEAD body has %d bytes, want 0", len(b))
	}
	etag := head.Header.Get("ETag")
	resp := get(t, http.MethodGet, path, http.Header{"If-None-Match": {etag}})
	if got, want := resp.StatusCode, http.StatusNotModified; got != want {
		t.Fatalf("conditional GET status=%d, want %d", got, want)
	}
}

func TestHandler_RejectsWrites(t *testing.T) {
	resp := get(t, http.MethodPost, Path("admit.css"), nil)
	if got, want := resp.StatusCode, http.StatusMethodNotAllowed; got != want {
		t.Fatalf("status=%d, want %d", got, want)
	}
}

func TestPath_FormatAndStable(t *testing.T) {
	pattern := regexp.MustCompile(`^/assets/htmx\.min\.[0-9a-f]{8}\.js$`)
	first := Path("htmx.min.js")
	if !pattern.MatchString(first) {
		t.Fatalf("Path=%q, want match for %s", first, pattern)
	}
	if got := Path("htmx.min.js"); got != first {
		t.Fatalf("Path changed between calls: %q then %q", first, got)
	}
	body, err := os.ReadFile("htmx.min.js")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := first, versionedPath("htmx.min.js", body); got != want {
		t.Fatalf("Path=%q, want hash of the file on disk %q", got, want)
	}
}

func TestVersionedPath_ChangesWithContent(t *testing.T) {
	a := versionedPath("admit.css", []byte("body{}"))
	b := versionedPath("admit.css", []byte("body{color:red}"))
	if a == b {
		t.Fatalf("same path %q for different content", a)
	}
	if got := versionedPath("admit.css", []byte("body{}")); got != a {
		t.Fatalf("same content gave %q then %q", a, got)
	}
	// The hash goes before the extension.
	if !regexp.MustCompile(`^/assets/admit\.[0-9a-f]{8}\.css$`).MatchString(a) {
		t.Fatalf("versionedPath=%q, want /assets/admit.<8 hex>.css", a)
	}
}

func TestPath_PanicsOnUnknownName(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Path of an unknown name did not panic")
		}
	}()
	Path("htmx.js")
}

func TestVendored_PinnedVersions(t *testing.T) {
	for name, marker := range map[string]string{
		"htmx.min.js":            `version:"2.0.11"`,
		"pico.classless.min.css": "Pico CSS ✨ v2.1.1",
	} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(marker)) {
			t.Errorf("%s does not contain %q: wrong vendored version", name, marker)
		}
	}
}

func TestAdmitCSS_HasRulesPagesRelyOn(t *testing.T) {
	b, err := os.ReadFile("admit.css")
	if err != nil {
		t.Fatal(err)
	}
	for _, sel := range []string{
		".dev-banner", ".notice", ".secret", ".table-scroll", ".visually-hidden",
		".htmx-indicator", ".htmx-request .htmx-indicator",
		".badge.state-waiting", ".badge.state-selected", ".badge.state-invited",
		".badge.state-active", ".badge.state-declined", ".badge.state-withdrawn",
		".badge.state-revoked",
	} {
		if !bytes.Contains(b, []byte(sel)) {
			t.Errorf("admit.css has no rule for %s", sel)
		}
	}
}
