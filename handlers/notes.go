package handlers

import (
	"net/http"

	"admit/internal/identity"
	"admit/store"
)

// signedInAs is the verified address the navigation shows for p: the one
// the recipient group fetched for this request, or the one the session
// caches for p's provider session, or a fresh lookup (cached for next
// time). A lookup that fails shows no address; it never fails the page.
func (s *Server) signedInAs(r *http.Request, p *identity.Principal) string {
	sess := s.session(r)
	if emails := emailsFrom(r.Context()); len(emails) > 0 {
		sess.Who = whoLine{ProviderSession: p.SessionID, Address: emails[0]}
		return emails[0]
	}
	if sess.Who.ProviderSession == p.SessionID && sess.Who.Address != "" {
		return sess.Who.Address
	}
	raw, err := s.id.VerifiedEmails(r.Context(), p)
	if err != nil {
		return ""
	}
	for _, e := range raw {
		if n, err := store.NormalizeEmail(e); err == nil {
			sess.Who = whoLine{ProviderSession: p.SessionID, Address: n}
			return n
		}
	}
	return ""
}
