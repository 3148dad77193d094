package handlers

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strings"

	"admit/handlers/secure"
	"admit/internal/identity"
	"admit/views"

	"github.com/a-h/templ"
)

// chrome builds the page shell's view model for this request. It
// authenticates softly: a failure only means the visitor is shown as
// signed out. It writes nothing: what it takes from the cookie state (the
// confirmation, the mark of a shown code) or adds to it (the CSRF secret,
// the address shown) withCookieState saves.
func (s *Server) chrome(r *http.Request, title string) views.Chrome {
	c := views.Chrome{Title: title, DevMode: s.id.Mode() == identity.ModeDev, Path: r.URL.Path, Back: s.pageBack(r)}
	p := principalFrom(r.Context())
	if p == nil {
		if soft, err := s.id.Authenticate(r); err == nil {
			p = soft
		}
	}
	if p != nil {
		c.SignedIn = true
		s.cookieState(r).leaveCodePage(r.PathValue("invitationId"))
		c.CSRF = s.csrfToken(r, p)
		who := s.signedInAs(r, p)
		c.SignedInAs, c.AddressUnverified = who.Address, who.Unverified
		c.Provider = s.providerName()
		// The owner group already read the memberships for this request.
		if ws := workspacesFrom(r.Context()); len(ws) > 0 {
			c.IsOwner = true
		} else if owner, err := s.db.IsOwner(r.Context(), p.UserID); err == nil {
			c.IsOwner = owner
		}
	} else if r.URL.Path != "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		// The navigation's sign-in link comes back to this page.
		c.SignInURL = signInURL(r.URL.RequestURI())
	}
	// A block swapped in by htmx has no place for the message: it waits for
	// the next whole page.
	if !wantsBlock(r) {
		c.Flash = s.cookieState(r).takeNote()
	}
	if s.id.Mode() == identity.ModeClerk && p != nil {
		c.Clerk = s.clerkJS("", "")
	}
	if c.IsOwner {
		// rule: owners see on every page that writes are failing (one
		// atomic load while they succeed).
		ws := s.db.WriteStatus(r.Context())
		c.WritesFailing, c.DiskFull = ws.FailingSince, ws.DiskFull
	}
	return c
}

// clerkJS configures ClerkJS for a page.
func (s *Server) clerkJS(mount, redirect string) *views.ClerkJS {
	return &views.ClerkJS{
		PublishableKey: s.opts.ClerkPublishableKey,
		ScriptURL:      s.clerkFAPI + "/npm/@clerk/clerk-js@5/dist/clerk.browser.js",
		Mount:          mount,
		RedirectURL:    redirect,
	}
}

// render writes a page (or, for htmx, the block) with the given status.
// Pages that load ClerkJS get the CSP that allows its origin.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, c views.Chrome, page templ.Component) error {
	if c.Clerk != nil {
		w.Header().Set("Content-Security-Policy", secure.ClerkCSP(s.clerkFAPI))
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Vary", "HX-Request")
	if c.SignedIn {
		// The navigation shows the signed-in address.
		noStore(w)
	}
	if w.Header().Get("Cache-Control") == "" {
		w.Header().Set("Cache-Control", "private, no-cache")
	}
	w.WriteHeader(status)
	return page.Render(r.Context(), w)
}

// frontendAPIFromPublishableKey decodes the Clerk Frontend API origin from a
// publishable key (pk_test_… or pk_live_…: base64 of "host$").
func frontendAPIFromPublishableKey(pk string) (string, error) {
	bad := errors.New("CLERK_PUBLISHABLE_KEY is not a Clerk publishable key (pk_test_… or pk_live_…)")
	var enc string
	switch {
	case strings.HasPrefix(pk, "pk_test_"):
		enc = strings.TrimPrefix(pk, "pk_test_")
	case strings.HasPrefix(pk, "pk_live_"):
		enc = strings.TrimPrefix(pk, "pk_live_")
	default:
		return "", bad
	}
	raw, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(enc, "="))
	if err != nil {
		return "", bad
	}
	host := strings.TrimSuffix(string(raw), "$")
	if host == "" || strings.ContainsAny(host, "/ $\"'<>") {
		return "", bad
	}
	return "https://" + host, nil
}
