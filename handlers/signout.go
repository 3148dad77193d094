package handlers

import (
	"net/http"

	"admit/handlers/reqlog"
	"admit/internal/identity"
	"admit/views"
)

// signOutIncomplete answers a sign-out whose session the server could not
// end (its write failed even with the reserve that session endings keep,
// docs/ARCHITECTURE.md#sessions): what this browser holds is cleared all
// the same — the session cookie, which the identity cleared before
// writing, Clerk's cookie and admit's own cookie state — and a 503 page says
// plainly that the session did not end on the server.
func (s *Server) signOutIncomplete(w http.ResponseWriter, r *http.Request, err error) error {
	s.log.ErrorContext(r.Context(), "sign-out could not end the session", "method", r.Method, "route", r.Pattern, "err", err)
	if s.id.Mode() == identity.ModeClerk {
		http.SetCookie(w, &http.Cookie{Name: "__session", Value: "", Path: "/", MaxAge: -1, HttpOnly: false,
			Secure: s.isHTTPS(), SameSite: http.SameSiteLaxMode})
	}
	s.cookieState(r).signOut()
	noStore(w)
	diskFull := answerNoSpace(w, err)
	// Not s.chrome: the request's cookie still names a live row, and the
	// page is for a visitor who is signed out here.
	c := views.Chrome{Title: "Signed out in this browser only", DevMode: s.id.Mode() == identity.ModeDev, Path: r.URL.Path}
	return s.render(w, r, http.StatusServiceUnavailable, c, views.SignOutIncomplete(c, views.SignOutIncompleteView{
		DiskFull: diskFull, RequestID: reqlog.ID(r.Context())}))
}
