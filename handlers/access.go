package handlers

import (
	"context"
	"errors"
	"net/http"

	"admit/handlers/secure"
	"admit/internal/identity"
	"admit/store"
)

// authed requires a valid session (401 otherwise) and, for writes, the
// session-bound CSRF token.
func (s *Server) authed(fn handlerFunc) http.Handler {
	return s.h(func(w http.ResponseWriter, r *http.Request) error {
		p, err := s.authenticateWrite(r)
		if err != nil {
			return err
		}
		return fn(w, r.WithContext(context.WithValue(r.Context(), principalKey, p)))
	})
}

// authenticateWrite authenticates the request and, for a write, checks the
// CSRF token bound to that session.
func (s *Server) authenticateWrite(r *http.Request) (*identity.Principal, error) {
	p, err := s.id.Authenticate(r)
	if err != nil {
		return nil, err
	}
	if secure.IsUnsafe(r.Method) {
		if err := s.checkCSRF(r, p); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// recipient requires a session and fetches the user's currently verified
// addresses from the identity provider on every request: if it cannot be
// reached, 503 and nothing else happens. Writes need the CSRF token.
func (s *Server) recipient(fn handlerFunc) http.Handler { return s.recipientOr(fn, nil) }

// recipientOr is recipient whose form answers for itself when the identity
// provider cannot be reached: unavailable, when set, renders that 503 (the
// session and its CSRF token were checked; nothing was judged).
func (s *Server) recipientOr(fn, unavailable handlerFunc) http.Handler {
	return s.h(func(w http.ResponseWriter, r *http.Request) error {
		p, err := s.authenticateWrite(r)
		if err != nil {
			return err
		}
		emails, unverified, err := s.addresses(r.Context(), p)
		if errors.Is(err, identity.ErrSignedOut) {
			// The provider ended the session (tokens refused or no longer
			// refreshable): signed out, as for any ended session.
			return identity.ErrSignedOut
		}
		if err != nil {
			if unavailable != nil {
				noStore(w)
				return unavailable(w, r.WithContext(context.WithValue(r.Context(), principalKey, p)))
			}
			return identity.ErrIdentityUnavailable
		}
		noStore(w)
		ctx := context.WithValue(r.Context(), principalKey, p)
		ctx = context.WithValue(ctx, emailsKey, emails)
		ctx = context.WithValue(ctx, unverifiedKey, unverified)
		return fn(w, r.WithContext(ctx))
	})
}

// addresses fetches p's addresses from the identity provider: the
// verified ones, which alone match entries and invitations, normalized by
// signup's grammar (an address it rejects matches nothing), and the first
// address the provider has not verified, which is only ever shown to p
// (docs/API.md#signed-in-address). A provider that cannot tell verified
// from unverified gives only the verified list.
func (s *Server) addresses(ctx context.Context, p *identity.Principal) (emails []string, unverified string, err error) {
	var all []identity.Address
	if al, ok := s.id.(identity.AddressLister); ok {
		all, err = al.Addresses(ctx, p)
	} else {
		var raw []string
		raw, err = s.id.VerifiedEmails(ctx, p)
		for _, e := range raw {
			all = append(all, identity.Address{Email: e, Verified: true})
		}
	}
	if err != nil {
		return nil, "", err
	}
	for _, a := range all {
		n, err := store.NormalizeEmail(a.Email)
		switch {
		case err != nil:
		case a.Verified:
			emails = append(emails, n)
		case unverified == "":
			unverified = n
		}
	}
	return emails, unverified, nil
}

// owner requires a session and a current owner membership of an active
// workspace, read from the database on every request, so a removed owner is
// denied on their next request. A signed-in person who is not an owner gets
// the same 404 as for a path that does not exist. Writes need the CSRF token.
func (s *Server) owner(fn handlerFunc) http.Handler {
	return s.h(func(w http.ResponseWriter, r *http.Request) error {
		p, err := s.id.Authenticate(r)
		if err != nil {
			return err
		}
		if err := s.takeOwnerPlaces(r.Context(), p); err != nil {
			return err
		}
		ws, err := s.db.OwnedWorkspaces(r.Context(), p.UserID)
		if err != nil {
			return err
		}
		if len(ws) == 0 {
			return errNotFound
		}
		if secure.IsUnsafe(r.Method) {
			if err := s.checkCSRF(r, p); err != nil {
				return err
			}
		}
		noStore(w)
		ctx := context.WithValue(r.Context(), principalKey, p)
		ctx = context.WithValue(ctx, workspacesKey, ws)
		return fn(w, r.WithContext(ctx))
	})
}

// takeOwnerPlaces gives the signed-in person every owner place that waits
// for one of their addresses the identity provider says is verified
// (docs/console.md#team). Only while some place waits does it ask the
// provider; if the provider cannot be reached, an owner carries on as
// before and anyone else gets 503.
func (s *Server) takeOwnerPlaces(ctx context.Context, p *identity.Principal) error {
	open, err := s.db.HasOpenOwnerInvites(ctx)
	if err != nil || !open {
		return err
	}
	raw, err := s.id.VerifiedEmails(ctx, p)
	if err != nil {
		if owner, oerr := s.db.IsOwner(ctx, p.UserID); oerr == nil && owner {
			return nil
		}
		if errors.Is(err, identity.ErrSignedOut) {
			return identity.ErrSignedOut
		}
		return identity.ErrIdentityUnavailable
	}
	var emails []string
	for _, e := range raw {
		if n, err := store.NormalizeEmail(e); err == nil {
			emails = append(emails, n)
		}
	}
	_, err = s.db.ClaimOwnerInvites(ctx, p.UserID, emails)
	return err
}

// ownerActor is the store actor for the owner making this request.
func ownerActor(r *http.Request) store.Actor {
	return store.Actor{Kind: store.ActorOwner, UserID: principalFrom(r.Context()).UserID}
}

// workspacesFrom returns the owner's current workspaces.
func workspacesFrom(ctx context.Context) []store.Workspace {
	ws, _ := ctx.Value(workspacesKey).([]store.Workspace)
	return ws
}

// csrfToken returns the CSRF token bound to this browser's cookie state and
// the principal's provider session, making the cookie state's secret if
// needed.
func (s *Server) csrfToken(r *http.Request, p *identity.Principal) string {
	if p == nil {
		return ""
	}
	return s.csrf.Token(s.cookieState(r).csrfSecret(), p.SessionID)
}

// checkCSRF verifies the token from the X-CSRF-Token header or the csrf form
// field against this browser's cookie state and the provider session
// (secure.CSRF): a token minted for another browser or sign-in is 403.
func (s *Server) checkCSRF(r *http.Request, p *identity.Principal) error {
	got := r.Header.Get("X-CSRF-Token")
	if got == "" && mediaType(r) == "application/x-www-form-urlencoded" {
		if err := parseForm(r); err != nil {
			return err
		}
		v, err := formValue(r, "csrf")
		if err != nil {
			return err
		}
		got = v
	}
	if p == nil || !s.csrf.Verify(got, s.cookieState(r).CSRFSecret, p.SessionID) {
		return errCSRF
	}
	return nil
}
