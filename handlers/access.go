package handlers

import (
	"context"
	"errors"
	"net/http"

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
	if isUnsafe(r.Method) {
		if err := s.checkCSRF(r, p); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// recipient requires a session and fetches the user's currently verified
// addresses from the identity provider on every request: if it cannot be
// reached, 503 and nothing else happens. Writes need the CSRF token.
func (s *Server) recipient(fn handlerFunc) http.Handler {
	return s.h(func(w http.ResponseWriter, r *http.Request) error {
		p, err := s.authenticateWrite(r)
		if err != nil {
			return err
		}
		raw, err := s.id.VerifiedEmails(r.Context(), p)
		if errors.Is(err, identity.ErrSignedOut) {
			// The provider ended the session (tokens refused or no longer
			// refreshable): signed out, as for any ended session.
			return identity.ErrSignedOut
		}
		if err != nil {
			return identity.ErrIdentityUnavailable
		}
		// The same grammar as signup: an address it rejects matches no entry.
		var emails []string
		for _, e := range raw {
			if n, err := store.NormalizeEmail(e); err == nil {
				emails = append(emails, n)
			}
		}
		noStore(w)
		ctx := context.WithValue(r.Context(), principalKey, p)
		ctx = context.WithValue(ctx, emailsKey, emails)
		return fn(w, r.WithContext(ctx))
	})
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
		if isUnsafe(r.Method) {
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
