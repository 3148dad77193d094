package handlers

import (
	"net/http"
	"net/url"

	"admit/internal/identity"
	"admit/store"
	"admit/views"
)

func urlQueryEscape(s string) string { return url.QueryEscape(s) }

// redirectTarget reads redirect_url, allowing only local paths.
func redirectTarget(v string) string {
	if safeRedirect(v) {
		return v
	}
	return "/"
}

// handleSignIn shows the development form or mounts ClerkJS's sign-in.
func (s *Server) handleSignIn(w http.ResponseWriter, r *http.Request) error {
	q, err := singleQuery(r.URL.RawQuery)
	if err != nil {
		return err
	}
	redirect := redirectTarget(q.Get("redirect_url"))
	c := s.chrome(w, r, "Sign in")
	v := views.SignInView{Dev: s.id.Mode() == identity.ModeDev, RedirectURL: redirect}
	if s.id.Mode() == identity.ModeClerk {
		c.Clerk = s.clerkJS("sign-in", redirect)
	}
	noStore(w)
	return s.render(w, r, http.StatusOK, c, views.SignIn(c, v))
}

// handleDevSignIn signs in with any well-formed address (development only).
func (s *Server) handleDevSignIn(w http.ResponseWriter, r *http.Request) error {
	dev := s.id.(identity.FormSignIn)
	if err := parseForm(r); err != nil {
		return err
	}
	email, err := formValue(r, "email")
	if err != nil {
		return err
	}
	redirect, _ := formValue(r, "redirect_url")
	redirect = redirectTarget(redirect)
	norm, err := store.NormalizeEmail(email)
	if err != nil {
		c := s.chrome(w, r, "Sign in")
		noStore(w)
		return s.render(w, r, http.StatusBadRequest, c, views.SignIn(c, views.SignInView{
			Dev: true, RedirectURL: redirect, Email: email, Error: store.ErrorMessage(err)}))
	}
	if err := dev.SignIn(w, norm); err != nil {
		return err
	}
	// A new identity gets a new CSRF secret.
	sess := s.session(r)
	delete(sess.Values, "csrf")
	if err := sess.Save(r, w); err != nil {
		return err
	}
	http.Redirect(w, r, redirect, http.StatusSeeOther)
	return nil
}

// handleSignOut ends the session. It needs the CSRF token of a signed-in
// session; a visitor who is already signed out is simply sent home.
func (s *Server) handleSignOut(w http.ResponseWriter, r *http.Request) error {
	if p, err := s.id.Authenticate(r); err == nil {
		if err := s.checkCSRF(r, p); err != nil {
			return err
		}
	}
	if dev, ok := s.id.(identity.FormSignIn); ok {
		dev.SignOut(w)
	}
	// Clerk mode: the page's script signs out of Clerk first; clearing the
	// session cookie here also ends it for a visitor without JavaScript.
	http.SetCookie(w, &http.Cookie{Name: "__session", Value: "", Path: "/", MaxAge: -1, HttpOnly: false,
		Secure: s.isHTTPS(), SameSite: http.SameSiteLaxMode})
	sess := s.session(r)
	sess.Options.MaxAge = -1
	if err := sess.Save(r, w); err != nil {
		return err
	}
	http.Redirect(w, r, "/", http.StatusSeeOther)
	return nil
}

// handleCSRF returns the session-bound CSRF token for API clients.
func (s *Server) handleCSRF(w http.ResponseWriter, r *http.Request) error {
	p := principalFrom(r.Context())
	noStore(w)
	writeJSON(w, http.StatusOK, map[string]string{"csrfToken": s.csrfToken(w, r, p)})
	return nil
}
