package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"

	"admit/handlers/reqlog"
	"admit/handlers/savefirst"
	"admit/handlers/secure"
	"admit/internal/identity"
)

// handlerFunc is a handler that returns its error to the one adapter.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// h adapts a handlerFunc: a returned error is rendered by writeError.
func (s *Server) h(fn handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := fn(w, r); err != nil {
			s.writeError(w, r, err)
		}
	})
}

// withSecurity sets the security headers on every response and recovers
// panics (secure.Layer): a panic is logged, and answered 500 when nothing
// was answered yet.
func (s *Server) withSecurity(next http.Handler) http.Handler {
	return secure.Layer(s.isHTTPS(), func(w http.ResponseWriter, r *http.Request, v any, answered bool) {
		s.log.ErrorContext(r.Context(), "panic", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		if !answered {
			s.writeError(w, r, errors.New("panic"))
		}
	}, next)
}

// securityHeaders sets the headers every answer carries.
func (s *Server) securityHeaders(h http.Header) { secure.Headers(h, s.isHTTPS()) }

// withCookieState gives each request its cookie state (Server.cookieState
// reads the cookies when a handler first asks, so a request that never asks
// reads none) and saves it once, as the answer's headers are about to leave,
// only if it changed: one Set-Cookie per cookie at most, none for a
// state left as it was. rule: a cookie state that cannot be saved is an error
// answer (500, no-store, nothing of the handler's answer), never an answer
// whose confirmation or one-time code silently did not persist.
func (s *Server) withCookieState(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs := &requestCookieState{}
		r = r.WithContext(context.WithValue(r.Context(), cookieStateKey{}, rs))
		savefirst.Serve(w, r, next, func() ([]*http.Cookie, error) { return s.cookieStateCookies(rs) },
			func(w http.ResponseWriter, r *http.Request, err error) {
				// The error answer has only what every answer has, and the
				// cookie state as the request found it.
				s.securityHeaders(w.Header())
				if id := reqlog.ID(r.Context()); id != "" {
					w.Header().Set("X-Request-ID", id)
				}
				rs.now = rs.was
				s.writeError(w, r, fmt.Errorf("save cookie state: %w", err))
			})
	})
}

// withOrigin rejects cross-origin writes before any handler runs
// (secure.Origin), with admit's 403.
func (s *Server) withOrigin(next http.Handler) http.Handler {
	h, err := secure.Origin(s.origin, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, errCrossOrigin)
	}), next)
	if err != nil {
		panic(err) // the origin was validated at start
	}
	return h
}

type ctxKey int

const (
	principalKey ctxKey = iota
	emailsKey
	unverifiedKey
	workspacesKey
)

// principalFrom returns the request's authenticated principal, or nil.
func principalFrom(ctx context.Context) *identity.Principal {
	p, _ := ctx.Value(principalKey).(*identity.Principal)
	return p
}

// emailsFrom returns the verified emails looked up for this request.
func emailsFrom(ctx context.Context) []string {
	e, _ := ctx.Value(emailsKey).([]string)
	return e
}

// unverifiedFrom returns the address the provider reported unverified for
// this request, if any.
func unverifiedFrom(ctx context.Context) string {
	u, _ := ctx.Value(unverifiedKey).(string)
	return u
}

// noStore marks a response as private and never cached.
func noStore(w http.ResponseWriter) { w.Header().Set("Cache-Control", "private, no-store") }
