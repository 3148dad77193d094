package handlers

import (
	"errors"
	"net/http"
	"net/url"

	"admit/internal/identity"
	"admit/store"
	"admit/views"
)

// handleSignIn shows the development form or mounts ClerkJS's sign-in. A
// visitor already signed in is offered the way on: redirect_url when it is
// a page of this site, otherwise their landing page. ClerkJS returns here
// after signing in and its script follows that way at once, so this one
// place decides where sign-in leads.
func (s *Server) handleSignIn(w http.ResponseWriter, r *http.Request) error {
	q, err := singleQuery(r.URL.RawQuery)
	if err != nil {
		return err
	}
	target, _ := returnTarget(q.Get("redirect_url"))
	noStore(w)
	if p, err := s.id.Authenticate(r); err == nil {
		if target == "" {
			target = s.landing(r.Context(), p.UserID)
		}
		c := s.chrome(r, "Signed in")
		if s.id.Mode() == identity.ModeClerk {
			// ClerkJS lands here after signing in; its script goes on.
			c.Clerk = s.clerkJS("continue", target)
		}
		return s.render(w, r, http.StatusOK, c, views.SignedIn(c, target))
	}
	c := s.chrome(r, "Sign in")
	v := views.SignInView{Dev: s.id.Mode() == identity.ModeDev, RedirectURL: target}
	// rule (docs/DEPLOY.md#development-mode): the development form is
	// offered only where it works, to a browser on this machine.
	v.DevElsewhere = v.Dev && !s.directLocal(r)
	if v.Dev && !v.DevElsewhere {
		v.DevLinkExample = "http://" + r.Host + "/dev/sign-in?key=…"
		if s.hasDevKey(r) {
			v.DevKey = views.DevKeyHeld
		}
	}
	if rs, ok := s.id.(identity.RedirectSignIn); ok {
		v.ProviderName = rs.ProviderName()
		v.StartURL = "/auth/start"
		if target != "" {
			v.StartURL += "?redirect_url=" + url.QueryEscape(target)
		}
	}
	if s.id.Mode() == identity.ModeClerk {
		c.Clerk = s.clerkJS("sign-in", signInURL(target))
	}
	return s.render(w, r, http.StatusOK, c, views.SignIn(c, v))
}

// handleDevSignIn signs in with any well-formed address (development only)
// and goes on like handleSignIn. A request from anywhere but this machine,
// directly, gets the site's 404 before its form is read.
func (s *Server) handleDevSignIn(w http.ResponseWriter, r *http.Request) error {
	// rule (docs/DEPLOY.md#development-mode): never through a proxy, never
	// for another host name.
	if !s.directLocal(r) {
		return errNotFound
	}
	// rule (docs/DEPLOY.md#development-mode): and never without the key
	// admit printed on its console, which no page shows.
	if !s.hasDevKey(r) {
		return s.devKeyRefused(w, r, views.DevKeyMissing)
	}
	dev := s.id.(identity.FormSignIn)
	if err := parseForm(r); err != nil {
		return err
	}
	email, err := formValue(r, "email")
	if err != nil {
		return err
	}
	redirect, err := formValue(r, "redirect_url")
	if err != nil {
		return err
	}
	target, _ := returnTarget(redirect)
	norm, err := store.NormalizeEmail(email)
	if err != nil {
		c := s.chrome(r, "Sign in")
		noStore(w)
		return s.render(w, r, http.StatusBadRequest, c, views.SignIn(c, views.SignInView{
			Dev: true, DevKey: views.DevKeyHeld, RedirectURL: target, Email: email, Error: store.ErrorMessage(err)}))
	}
	p, err := dev.SignIn(w, r, norm)
	if err != nil {
		return err
	}
	s.cookieState(r).newIdentity()
	if target == "" {
		target = s.landing(r.Context(), p.UserID)
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
	return nil
}

// handleSignOut ends the session on the server, so a copy of its cookie
// is refused from now on, and says so on the start page (or goes on to the
// provider's own sign-out). It needs the CSRF token of a signed-in session;
// a visitor who is already signed out is simply sent home.
func (s *Server) handleSignOut(w http.ResponseWriter, r *http.Request) error {
	p, err := s.id.Authenticate(r)
	if err == nil {
		if err := s.checkCSRF(r, p); err != nil {
			return err
		}
	} else {
		p = nil // whatever the cookies hold is cleared
	}
	next, err := s.id.SignOut(w, r, p)
	if err != nil && p != nil {
		// rule (docs/ARCHITECTURE.md#sessions): the browser is signed out
		// whatever the server could write; a session the server could not
		// end is said plainly.
		return s.signOutIncomplete(w, r, err)
	}
	// A request whose cookie named no live session had nothing to end.
	return s.signedOut(w, r, p != nil, next, "You are signed out.")
}

// handleSignOutEverywhere ends every session of the signed-in person, on
// every device, this one included.
func (s *Server) handleSignOutEverywhere(w http.ResponseWriter, r *http.Request) error {
	p := principalFrom(r.Context())
	if err := s.id.SignOutEverywhere(w, r, p); err != nil {
		return err
	}
	return s.signedOut(w, r, true, "", "You are signed out everywhere.")
}

// signedOut clears what this browser holds for the sign-in and redirects
// to next, or home with the note.
func (s *Server) signedOut(w http.ResponseWriter, r *http.Request, wasIn bool, next, note string) error {
	// Clerk mode: the page's script signs out of Clerk first; clearing the
	// session cookie here also ends it for a visitor without JavaScript.
	if s.id.Mode() == identity.ModeClerk {
		http.SetCookie(w, &http.Cookie{Name: "__session", Value: "", Path: "/", MaxAge: -1, HttpOnly: false,
			Secure: s.isHTTPS(), SameSite: http.SameSiteLaxMode})
	}
	// admit's own cookie state starts over empty (no CSRF secret, no address),
	// holding only the confirmation.
	cs := s.cookieState(r)
	cs.signOut()
	if wasIn && next == "" {
		cs.Note = note
	}
	noStore(w)
	if next != "" {
		// RP-initiated logout is offered as a link: a form's redirect to
		// the provider would break the CSP's form-action 'self'.
		c := s.chrome(r, "Signed out")
		c.Flash = note
		return s.render(w, r, http.StatusOK, c, views.SignedOut(c, views.SignedOutView{
			ProviderName: s.providerName(), ProviderURL: next}))
	}
	http.Redirect(w, r, "/", http.StatusSeeOther)
	return nil
}

// handleAccount shows the signed-in person their account: the user ID an
// owner passes to `admit owner add --user`, and the ways to sign out.
func (s *Server) handleAccount(w http.ResponseWriter, r *http.Request) error {
	p := principalFrom(r.Context())
	noStore(w)
	c := s.chrome(r, "Your account")
	return s.render(w, r, http.StatusOK, c, views.Account(c, views.AccountView{UserID: p.UserID, Provider: s.providerName()}))
}

// providerName names the identity provider for people.
func (s *Server) providerName() string {
	switch s.id.Mode() {
	case identity.ModeClerk:
		return "Clerk"
	case identity.ModeDev:
		return "development sign-in"
	case identity.ModeOIDC:
		if rs, ok := s.id.(identity.RedirectSignIn); ok {
			return rs.ProviderName()
		}
	}
	return s.id.Mode().String()
}

// handleCSRF returns the session-bound CSRF token for API clients.
func (s *Server) handleCSRF(w http.ResponseWriter, r *http.Request) error {
	p := principalFrom(r.Context())
	noStore(w)
	writeJSON(w, http.StatusOK, map[string]string{"csrfToken": s.csrfToken(r, p)})
	return nil
}

// handleOIDCStart sends the browser to the OpenID Connect provider, with
// where to go on afterwards (a page of this site) sealed in the sign-in
// cookie. Before the provider has been discovered, or while it does not
// answer, it is admit's own 503 page saying sign-in is unavailable for now.
func (s *Server) handleOIDCStart(w http.ResponseWriter, r *http.Request) error {
	rs := s.id.(identity.RedirectSignIn)
	q, err := singleQuery(r.URL.RawQuery)
	if err != nil {
		return err
	}
	target, _ := returnTarget(q.Get("redirect_url"))
	to, err := rs.StartSignIn(w, r, target)
	if errors.Is(err, identity.ErrIdentityUnavailable) {
		// admit's own page says so; the browser is not sent to a host
		// that does not answer.
		noStore(w)
		w.Header().Set("Retry-After", identityRetryAfter)
		retry := "/auth/start"
		if target != "" {
			retry += "?redirect_url=" + url.QueryEscape(target)
		}
		c := s.chrome(r, "Sign-in is unavailable for now")
		return s.render(w, r, http.StatusServiceUnavailable, c, views.SignInUnavailable(c,
			views.SignInUnavailableView{ProviderName: rs.ProviderName(), RetryURL: retry}))
	}
	if err != nil {
		return err
	}
	noStore(w)
	http.Redirect(w, r, to, http.StatusSeeOther)
	return nil
}

// handleOIDCCallback completes a sign-in at the provider. Every failure
// (wrong or replayed state, a refused code, a token that does not verify,
// an error from the provider) is a page that says so and starts no
// session.
func (s *Server) handleOIDCCallback(w http.ResponseWriter, r *http.Request) error {
	rs := s.id.(identity.RedirectSignIn)
	noStore(w)
	p, target, err := rs.FinishSignIn(w, r)
	if sie, ok := errors.AsType[*identity.SignInError](err); ok {
		c := s.chrome(r, "Sign-in failed")
		return s.render(w, r, http.StatusBadRequest, c, views.SignInFailed(c, views.SignInFailedView{
			Reason: sie.Reason, ProviderName: rs.ProviderName()}))
	}
	if err != nil {
		return err
	}
	s.cookieState(r).newIdentity()
	if target, _ = returnTarget(target); target == "" {
		target = s.landing(r.Context(), p.UserID)
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
	return nil
}
