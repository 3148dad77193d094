package handlers

import (
	"net/http"

	"admit/internal/identity"
)

// signedInAs is the address the navigation and one's own pages show for
// p, and whether the provider has verified it: the verified address the
// recipient group fetched for this request, or else the unverified one it
// fetched, or the line the session caches for p's provider session, or a
// fresh lookup (cached for next time). A lookup that fails shows no
// address; it never fails the page.
func (s *Server) signedInAs(r *http.Request, p *identity.Principal) whoLine {
	cs := s.cookieState(r)
	if emails := emailsFrom(r.Context()); len(emails) > 0 {
		cs.Who = whoLine{ProviderSession: p.SessionID, Address: emails[0]}
		return cs.Who
	}
	if u := unverifiedFrom(r.Context()); u != "" {
		cs.Who = whoLine{ProviderSession: p.SessionID, Address: u, Unverified: true}
		return cs.Who
	}
	if cs.Who.ProviderSession == p.SessionID && cs.Who.Address != "" {
		return cs.Who
	}
	emails, unverified, err := s.addresses(r.Context(), p)
	switch {
	case err != nil:
		return whoLine{}
	case len(emails) > 0:
		cs.Who = whoLine{ProviderSession: p.SessionID, Address: emails[0]}
	case unverified != "":
		cs.Who = whoLine{ProviderSession: p.SessionID, Address: unverified, Unverified: true}
	default:
		return whoLine{}
	}
	return cs.Who
}
