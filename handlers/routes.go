package handlers

import (
	"context"
	"net/http"
	"strings"

	"admit/assets"
	"admit/internal/identity"
	"admit/store"
)

// routes registers every route, grouped by who may call it
// (docs/ARCHITECTURE.md#a-request-start-to-finish): public routes; the recipient
// group (a session and a verified email, never a staff row); the owner group
// (a session and a current owner membership, checked on every request).
// Anything else is a generic 404.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()

	// Public: no identity required.
	mux.Handle("GET /{$}", s.h(s.handleHome))
	mux.Handle("GET /healthz", http.HandlerFunc(s.handleHealthz))
	mux.Handle("GET /readyz", http.HandlerFunc(s.handleReadyz))
	mux.Handle("GET /assets/", assets.Handler())
	mux.Handle("GET /waitlist/{slug}", s.h(s.handleWaitlist))
	// rule: a signup's answer leaves on a fixed schedule, so its timing does
	// not tell a listed address from a new one (docs/signup.md).
	mux.Handle("POST /waitlist/{slug}", onSchedule(s.opts.SignupAnswerDelay, s.h(s.handleWaitlistPost)))
	mux.Handle("GET /api/public/programs/{slug}", s.h(s.handlePublicProgramAPI))
	mux.Handle("POST /api/public/programs/{slug}/signups", onSchedule(s.opts.SignupAnswerDelay, s.h(s.handleSignupAPI)))
	mux.Handle("GET /manage/{$}", s.h(s.handleManage))
	mux.Handle("POST /manage/remove", s.h(s.handleRemovePost))
	mux.Handle("POST /api/public/removals", s.h(s.handleRemovalAPI))
	mux.Handle("GET /privacy", s.h(s.handlePrivacy))
	mux.Handle("GET /sign-in", s.h(s.handleSignIn))
	mux.Handle("POST /sign-out", s.h(s.handleSignOut))
	if _, ok := s.id.(identity.FormSignIn); ok {
		mux.Handle("POST /dev/sign-in", s.h(s.handleDevSignIn))
	}

	// Signed in, no email needed.
	mux.Handle("GET /api/csrf", s.authed(s.handleCSRF))

	// Recipient group: session + verified email, never a staff row.
	mux.Handle("GET /me", s.recipient(s.handleMe))
	mux.Handle("GET /api/me/waitlist/{slug}", s.recipient(s.handleMyEntryAPI))

	// Owner group: session + current owner membership on every request.
	mux.Handle("GET /owner", s.owner(s.handleOwnerHome))
	mux.Handle("GET /api/owner/workspaces", s.owner(s.handleOwnerWorkspacesAPI))
	mux.Handle("GET /api/owner/programs", s.owner(s.handleOwnerProgramsAPI))

	// Owner console and private-access routes, one file per area.
	s.ownerRoutes(mux)
	s.recipientRoutes(mux)

	// Deny by default: no fall-through between groups. A known path asked
	// with another method is 405 and names the methods it takes.
	mux.Handle("/", s.h(func(w http.ResponseWriter, r *http.Request) error {
		if allow := allowedMethods(mux, r); allow != "" {
			w.Header().Set("Allow", allow)
			return errMethod
		}
		return errNotFound
	}))

	return s.withSecurity(s.withOrigin(mux))
}

// routeMethods are the methods admit's routes use; HEAD comes with GET.
var routeMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// allowedMethods lists, for the Allow header, the methods some route other
// than the catch-all takes for r's path; "" when no route has the path.
func allowedMethods(mux *http.ServeMux, r *http.Request) string {
	var allow []string
	for _, m := range routeMethods {
		probe := *r
		probe.Method = m
		if _, pattern := mux.Handler(&probe); pattern != "" && pattern != "/" {
			allow = append(allow, m)
		}
	}
	return strings.Join(allow, ", ")
}

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

// ownerActor is the store actor for the owner making this request.
func ownerActor(r *http.Request) store.Actor {
	return store.Actor{Kind: store.ActorOwner, UserID: principalFrom(r.Context()).UserID}
}

// workspacesFrom returns the owner's current workspaces.
func workspacesFrom(ctx context.Context) []store.Workspace {
	ws, _ := ctx.Value(workspacesKey).([]store.Workspace)
	return ws
}
