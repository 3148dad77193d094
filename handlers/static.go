package handlers

import (
	"net/http"

	"admit/assets"
)

// handleAsset serves admit's own files under their versioned names; any
// other path under /assets/ is the styled 404 page every unknown path
// gets (never cached: the name may exist after the next deploy).
func (s *Server) handleAsset(w http.ResponseWriter, r *http.Request) error {
	if !assets.Exists(r.URL.Path) {
		return errNotFound
	}
	assets.Handler().ServeHTTP(w, r)
	return nil
}

// faviconMaxAge is how long a browser may keep /favicon.ico: a day, as its
// name cannot change when the icon does.
const faviconMaxAge = "public, max-age=86400"

// handleFavicon answers the /favicon.ico browsers ask for by themselves
// with the site icon (an SVG, which browsers take by its content type);
// pages link the versioned icon.
func handleFavicon(w http.ResponseWriter, r *http.Request) {
	ct, body := assets.Favicon()
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", faviconMaxAge)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(body)
}
