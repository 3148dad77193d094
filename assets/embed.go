// Package assets embeds admit's static files and serves them under
// content-hashed names, so they can be cached forever and never go stale.
//
// Vendored files (no CDN; re-vendor with `npm pack` in a temp dir and copy):
//
//   - htmx.min.js: htmx.org 2.0.11, dist/htmx.min.js
//     (npm pack htmx.org@2.0.11; tarball sha256 165a2655…add408e). Licence
//     htmx.LICENSE (0BSD).
//   - pico.classless.min.css: @picocss/pico 2.1.1, css/pico.classless.min.css
//     (npm pack @picocss/pico@2.1.1; tarball sha256 4affbb56…00a8cd24).
//     Licence pico.LICENSE (MIT). The classless build is used because admit's
//     pages are semantic HTML (docs/ARCHITECTURE.md#packages): body >
//     header/main/footer are laid out as centred containers and forms,
//     tables, nav and article are styled
//     without any class. Pico's class components (.grid, .container, button
//     variants) are not available; admit.css adds the few classes needed.
//
// Own files: admit.css (dev banner, notice, secret, state badges, table
// wrapper, visually-hidden, htmx indicator), manage.js (the removal page's
// fragment-to-form script, docs/API.md#removal), received.js (the copy
// button beside a new signup's removal link), clerk.js and favicon.svg.
//
// Pages must set <meta name="htmx-config" content='{"includeIndicatorStyles":false}'>
// because htmx otherwise injects an inline <style>, which the CSP blocks;
// admit.css carries the equivalent rules.
package assets

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

// Prefix is the URL path under which Handler serves the assets. Mount the
// handler on it without stripping it: mux.Handle("GET "+assets.Prefix, assets.Handler()).
const Prefix = "/assets/"

// cacheForever is sent with every versioned asset: the name changes whenever
// the bytes do, so a cached copy can never be stale.
const cacheForever = "public, max-age=31536000, immutable"

//go:embed *.js *.css *.svg *.LICENSE
var files embed.FS

// contentTypes maps each served extension to its Content-Type. An embedded file
// with any other extension makes the package panic at init.
var contentTypes = map[string]string{
	".js":      "text/javascript; charset=utf-8",
	".css":     "text/css; charset=utf-8",
	".svg":     "image/svg+xml",
	".LICENSE": "text/plain; charset=utf-8",
}

// asset is one embedded file with its versioned URL path.
type asset struct {
	urlPath     string
	contentType string
	etag        string
	body        []byte
}

// catalog holds the embedded files, keyed by logical name and by versioned
// URL path. It is built once at init and never modified.
type catalog struct {
	byName map[string]*asset
	byPath map[string]*asset
}

var embedded = mustLoad(files)

// mustLoad reads every embedded file and computes its versioned path.
func mustLoad(fsys fs.FS) *catalog {
	c := &catalog{byName: map[string]*asset{}, byPath: map[string]*asset{}}
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		panic(fmt.Sprintf("assets: read embedded files: %v", err))
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		name := e.Name()
		ct, ok := contentTypes[path.Ext(name)]
		if !ok {
			panic(fmt.Sprintf("assets: no content type for %q", name))
		}
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			panic(fmt.Sprintf("assets: read %q: %v", name, err))
		}
		sum := sha256.Sum256(body)
		a := &asset{
			urlPath:     versionedPath(name, body),
			contentType: ct,
			etag:        `"` + hex.EncodeToString(sum[:]) + `"`,
			body:        body,
		}
		c.byName[name] = a
		c.byPath[a.urlPath] = a
	}
	return c
}

// versionedPath returns the URL path for name with the first 8 hex digits of
// the SHA-256 of body inserted before the extension:
// "htmx.min.js" -> "/assets/htmx.min.0123abcd.js".
func versionedPath(name string, body []byte) string {
	sum := sha256.Sum256(body)
	ext := path.Ext(name)
	return Prefix + strings.TrimSuffix(name, ext) + "." + hex.EncodeToString(sum[:4]) + ext
}

// Path returns the versioned URL path of the embedded file with the logical
// name (e.g. "htmx.min.js", "pico.classless.min.css", "admit.css",
// "manage.js"). The result is stable for given file contents and changes when
// they change.
//
// Path panics when name is not an embedded file: a typo in a template then
// fails the first test that renders it, rather than shipping a page that
// loads nothing.
func Path(name string) string {
	a, ok := embedded.byName[name]
	if !ok {
		panic(fmt.Sprintf("assets: unknown asset %q", name))
	}
	return a.urlPath
}

// Exists reports whether urlPath is the versioned path of an embedded file,
// so that a caller can answer any other path under Prefix with its own 404.
func Exists(urlPath string) bool {
	_, ok := embedded.byPath[urlPath]
	return ok
}

// Favicon is the site icon (favicon.svg) for the unversioned /favicon.ico
// that browsers ask for on their own.
func Favicon() (contentType string, body []byte) {
	a := embedded.byName["favicon.svg"]
	return a.contentType, a.body
}

// Handler serves the embedded files at their versioned paths (see Path) for
// GET and HEAD, with the right Content-Type, nosniff, and immutable caching
// for a year. Any other path under Prefix, including an unversioned or stale
// name, is 404 and not cached. It expects the full request path, so mount it
// on Prefix without http.StripPrefix.
func Handler() http.Handler {
	return http.HandlerFunc(serve)
}

func serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	a, ok := embedded.byPath[r.URL.Path]
	if !ok {
		// A stale name may exist in the next deploy: do not let anyone cache the 404.
		h.Set("Cache-Control", "no-store")
		http.NotFound(w, r)
		return
	}
	h.Set("Content-Type", a.contentType)
	h.Set("Cache-Control", cacheForever)
	h.Set("ETag", a.etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}
