package handlers

import (
	"net/http"
	"strings"

	"admit/internal/identity"
	"admit/store"
)

// noteKey is the session flash key of the confirmations every page's shell
// shows (sign-out, withdrawal, redemption); the owner pages keep their own
// flashes under gorilla's default key.
const noteKey = "note"

// whoKey is the session value caching the address the navigation shows,
// as "<provider session ID> <address>": looked up once per provider session
// rather than from the identity provider on every page.
const whoKey = "who"

// setNote keeps a confirmation for the next whole page, whatever page the
// redirect leads to. Notes are fixed sentences naming at most a program,
// never personal data.
func (s *Server) setNote(w http.ResponseWriter, r *http.Request, msg string) {
	sess := s.session(r)
	sess.AddFlash(msg, noteKey)
	if err := sess.Save(r, w); err != nil {
		s.log.ErrorContext(r.Context(), "save note", "err", err)
	}
}

// takeNote returns and clears the pending confirmation, if any.
func (s *Server) takeNote(w http.ResponseWriter, r *http.Request) string {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return "" // no session, no note: nothing to decode
	}
	sess := s.session(r)
	fl := sess.Flashes(noteKey)
	if len(fl) == 0 {
		return ""
	}
	if err := sess.Save(r, w); err != nil {
		s.log.ErrorContext(r.Context(), "clear note", "err", err)
	}
	msg, _ := fl[len(fl)-1].(string)
	return msg
}

// signedInAs is the verified address the navigation shows for p: the one
// the recipient group fetched for this request, or the one cached for p's
// provider session, or a fresh lookup (cached for next time). A lookup that
// fails shows no address; it never fails the page.
func (s *Server) signedInAs(w http.ResponseWriter, r *http.Request, p *identity.Principal) string {
	sess := s.session(r)
	cached, _ := sess.Values[whoKey].(string)
	sid, addr, _ := strings.Cut(cached, " ")
	if emails := emailsFrom(r.Context()); len(emails) > 0 {
		if sid != p.SessionID || addr != emails[0] {
			s.cacheWho(w, r, p, emails[0])
		}
		return emails[0]
	}
	if sid == p.SessionID && addr != "" {
		return addr
	}
	raw, err := s.id.VerifiedEmails(r.Context(), p)
	if err != nil {
		return ""
	}
	for _, e := range raw {
		if n, err := store.NormalizeEmail(e); err == nil {
			s.cacheWho(w, r, p, n)
			return n
		}
	}
	return ""
}

// cacheWho remembers the address shown for p's provider session.
func (s *Server) cacheWho(w http.ResponseWriter, r *http.Request, p *identity.Principal, addr string) {
	sess := s.session(r)
	sess.Values[whoKey] = p.SessionID + " " + addr
	if err := sess.Save(r, w); err != nil {
		s.log.ErrorContext(r.Context(), "save session", "err", err)
	}
}
