package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"

	"admit/handlers/reqlog"
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
		sw := &sessionWriter{ResponseWriter: w, s: s}
		r = r.WithContext(context.WithValue(r.Context(), cookieStateKey{}, &sw.rs))
		sw.r = r
		next.ServeHTTP(sw, r)
		// A handler that wrote nothing is answered 200 by net/http after
		// this returns: its session is saved first.
		sw.commit()
	})
}

// sessionWriter saves the request's session before the first byte of the
// answer: its status line.
type sessionWriter struct {
	http.ResponseWriter
	s  *Server
	r  *http.Request
	rs requestCookieState
	// done is set once the session was saved or found unchanged; failed
	// when it could not be saved and the error answer was written instead.
	done, failed bool
}

// commit saves the session once and reports whether the handler's answer
// may go on. When the save fails it writes the error answer in its place,
// with the session as the request found it.
func (w *sessionWriter) commit() bool {
	if w.done {
		return !w.failed
	}
	w.done = true
	cookies, err := w.s.cookieStateCookies(&w.rs)
	if err == nil {
		for _, c := range cookies {
			w.Header().Add("Set-Cookie", c.String())
		}
		return true
	}
	w.failed = true
	// Nothing of the handler's answer goes out, its headers included: the
	// error answer has only what every answer has.
	h := w.Header()
	clear(h)
	w.s.securityHeaders(h)
	if id := reqlog.ID(w.r.Context()); id != "" {
		h.Set("X-Request-ID", id)
	}
	w.rs.now = w.rs.was
	w.s.writeError(w.ResponseWriter, w.r, fmt.Errorf("save session: %w", err))
	return false
}

func (w *sessionWriter) WriteHeader(code int) {
	if code >= http.StatusOK && !w.commit() {
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write drops the handler's body when the session could not be saved: the
// error answer went out instead.
func (w *sessionWriter) Write(b []byte) (int, error) {
	if !w.commit() {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// FlushError lets http.ResponseController flush, after the session is saved.
func (w *sessionWriter) FlushError() error {
	if !w.commit() {
		return nil
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *sessionWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

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
