package handlers

import (
	"net/http"
	"strings"

	"admit/views"
)

// receivedCookie carries a browser's accepted signup (cookieState.Received)
// from its POST to the page that shows it (POST → 303 → GET, docs/API.md#html-routes): the
// removal token rides server-sealed (signed and encrypted), never in a URL,
// lives minutes, is scoped to the waitlist pages and is cleared by the one
// GET that shows it. A reload or a restored tab re-posts nothing and finds
// the token gone.
const receivedCookie = "admit_received"

// receivedLifetime bounds how long an accepted signup waits for its page.
const receivedLifetime = 10 * 60 // seconds

// receivedState is what the received page needs from the POST.
type receivedState struct {
	Slug          string `json:"s"`
	NoticeVersion int    `json:"v"`
	// Token is empty on a same-key replay: its link was shown the first time.
	Token string `json:"t,omitempty"`
	// Email is the address as admitted, for the page to name: the one
	// the person typed (or chose), whether or not it was listed before.
	Email string `json:"e,omitempty"`
}

// wantsPage reports whether a form post came from a browser navigating
// (it accepts HTML), which gets the 303 to the page that shows the
// answer. Other clients keep the 202 page in the POST's answer.
func wantsPage(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}

// receivedPath is the page that shows a program's accepted signup.
func receivedPath(slug string) string { return "/waitlist/" + slug + "/received" }

// handleReceived shows a browser's accepted signup once: the removal link
// first, or on a replay that it was shown before. Without one (a reload,
// a restored tab) it says the link was shown and how to remove oneself by
// signing in instead.
func (s *Server) handleReceived(w http.ResponseWriter, r *http.Request) error {
	slug := r.PathValue("slug")
	noStore(w)
	st, ok := s.cookieState(r).takeReceived(slug)
	if !ok {
		p, _, err := s.db.PublicProgram(r.Context(), slug)
		if err != nil {
			return err
		}
		c := s.chrome(r, "Request received · "+p.Name)
		return s.render(w, r, http.StatusOK, c, views.ReceivedShown(c, views.ReceivedView{Slug: p.Slug, Name: p.Name,
			WorkspaceName: p.WorkspaceName, Purpose: p.Purpose, SignInURL: signInURL("/me")}))
	}
	q, err := s.quote(r.Context(), slug, st.NoticeVersion)
	if err != nil {
		return err
	}
	c := s.chrome(r, "Request received · "+q.Name)
	return s.render(w, r, http.StatusOK, c, views.Received(c, s.receivedView(q, st)))
}

// receivedView is the received page for an accepted signup.
func (s *Server) receivedView(q noticeQuote, st receivedState) views.ReceivedView {
	rv := views.ReceivedView{Slug: q.Slug, Name: q.Name, WorkspaceName: q.WorkspaceName, Purpose: q.Purpose,
		NoticeVersion: st.NoticeVersion, ContactText: q.ContactText, RetentionText: q.RetentionText, Email: st.Email}
	if st.Token != "" {
		rv.RemovalToken = st.Token
		rv.RemovalURL = s.removalURL(st.Token)
	}
	return rv
}
