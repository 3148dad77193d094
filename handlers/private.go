package handlers

import (
	"net/http"
	"strconv"

	"admit/store"
	"admit/views"
)

// denyPrivate turns every failed private read into the one generic 404
// (absent, foreign, revoked, unverified, gate off: never says which). Only
// an unexpected error stays an error.
func denyPrivate(err error) error {
	if store.ErrorCode(err) == store.EINTERNAL {
		return err
	}
	return errNotFound
}

// handlePrivatePage shows a program's private content to a recipient who
// passes the access gate for the program named by the slug. The content is
// the owner's text, rendered escaped, in paragraphs split on blank lines.
func (s *Server) handlePrivatePage(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	pc, err := s.db.ReadPrivateContent(ctx, r.PathValue("slug"), principalFrom(ctx).UserID, emailsFrom(ctx))
	if err != nil {
		return denyPrivate(err)
	}
	v := views.PrivateView{Slug: pc.Slug, Name: pc.Name, Purpose: pc.Purpose, Paragraphs: views.Paragraphs(pc.Body),
		Revision: pc.Revision, UpdatedAt: pc.UpdatedAt}
	for _, a := range pc.Assets {
		v.Assets = append(v.Assets, views.PrivateAsset{Name: a.Name, URL: privateAssetPath(pc.Slug, a.Name),
			ContentType: a.ContentType, Size: a.Size})
	}
	c := s.chrome(r, pc.Name+" · early access")
	return s.render(w, r, http.StatusOK, c, views.Private(c, v))
}

// privateAssetPath is the URL of a program's private asset. Slug and name
// are validated by the store (letters, digits, '.', '_' and '-' only), so
// they need no escaping.
func privateAssetPath(slug, name string) string {
	return "/early-access/" + slug + "/assets/" + name
}

// privateJSON is the API's private content.
type privateJSON struct {
	Program  string `json:"program"`
	Body     string `json:"body"`
	Revision int64  `json:"revision"`
}

// handlePrivateAPI returns a program's private content as JSON, behind the
// same gate as the page.
func (s *Server) handlePrivateAPI(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	pc, err := s.db.ReadPrivateContent(ctx, r.PathValue("slug"), principalFrom(ctx).UserID, emailsFrom(ctx))
	if err != nil {
		return denyPrivate(err)
	}
	writeJSON(w, http.StatusOK, privateJSON{Program: pc.Slug, Body: pc.Body, Revision: pc.Revision})
	return nil
}

// Private asset response policy. Assets are served only behind the access
// gate of their own program, never from the public /assets/ bundle:
//
//   - Content-Type is the stored type (checked at upload against a fixed
//     list) and X-Content-Type-Options: nosniff, so a browser never
//     reinterprets the bytes as HTML or script;
//   - Cache-Control: private, no-store, so no shared or disk cache keeps a
//     copy after access ends;
//   - images are Content-Disposition: inline, so the private page can show
//     them;
//   - PDFs are Content-Disposition: attachment: a PDF viewer is a rich
//     document environment, and Chromium refuses to render a PDF under a CSP
//     sandbox, so a download is the one behaviour that works with the
//     sandbox on;
//   - every asset carries a CSP with sandbox and default-src 'none' (a PDF or
//     image opened as a document runs no script and has no origin), and
//     Cross-Origin-Resource-Policy: same-origin, so another site cannot
//     embed it.
const (
	assetImageCSP = "sandbox; default-src 'none'; img-src 'self'; frame-ancestors 'none'"
	assetPDFCSP   = "sandbox; default-src 'none'; frame-ancestors 'none'"
)

// handlePrivateAsset serves a private asset of the program named by the
// slug, behind the same gate as its content.
func (s *Server) handlePrivateAsset(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	a, err := s.db.ReadPrivateAsset(ctx, r.PathValue("slug"), r.PathValue("name"), principalFrom(ctx).UserID, emailsFrom(ctx))
	if err != nil {
		return denyPrivate(err)
	}
	h := w.Header()
	h.Set("Content-Type", a.ContentType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "private, no-store")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Content-Length", strconv.Itoa(len(a.Data)))
	if a.ContentType == "application/pdf" {
		h.Set("Content-Disposition", `attachment; filename="`+a.Name+`"`)
		h.Set("Content-Security-Policy", assetPDFCSP)
	} else {
		h.Set("Content-Disposition", `inline; filename="`+a.Name+`"`)
		h.Set("Content-Security-Policy", assetImageCSP)
	}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(a.Data)
	}
	return nil
}
