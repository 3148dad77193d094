package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"

	"admit/handlers/reqlog"
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

// baseCSP is the Content-Security-Policy of every page that does not load
// ClerkJS.
const baseCSP = "default-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'; img-src 'self' data:"

// clerkCSP widens baseCSP to the Clerk Frontend API origin for pages that
// load ClerkJS (its components also need inline styles and blob workers).
func clerkCSP(fapi string) string {
	return fmt.Sprintf("default-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'; "+
		"script-src 'self' %[1]s; connect-src 'self' %[1]s; frame-src 'self' %[1]s https://challenges.cloudflare.com; "+
		"img-src 'self' data: https://img.clerk.com; style-src 'self' 'unsafe-inline'; worker-src 'self' blob:", fapi)
}

// withSecurity sets the security headers on every response, recovers panics
// and logs one line per request with no personal data: the route pattern,
// never the path's values or the query string.
func (s *Server) withSecurity(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.securityHeaders(w.Header())
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.ErrorContext(r.Context(), "panic", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				if !rec.wrote {
					s.writeError(rec, r, errors.New("panic"))
				}
			}
		}()
		next.ServeHTTP(rec, r)
	})
}

// securityHeaders sets the headers every answer carries.
func (s *Server) securityHeaders(h http.Header) {
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", baseCSP)
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	if s.isHTTPS() {
		h.Set("Strict-Transport-Security", "max-age=63072000; includeSubDomains")
	}
}

// statusRecorder remembers whether a panicking handler already answered.
type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusRecorder) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

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

// isUnsafe reports whether the method may change state.
func isUnsafe(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// withOrigin rejects cross-origin writes before any handler runs: Go's
// CrossOriginProtection (Sec-Fetch-Site and Origin against Host), plus
// admit's rules (docs/API.md#headers) that an Origin header, when present,
// equals the public URL's origin exactly, and that a browser's word that a
// write is cross-site or same-site is final — Go lets a trusted Origin
// override it; admit does not.
func (s *Server) withOrigin(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	if err := cop.AddTrustedOrigin(s.origin); err != nil {
		panic(err) // the origin was validated at start
	}
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, errCrossOrigin)
	}))
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isUnsafe(r.Method) {
			// rule: only same-origin and user-initiated ("none") fetch
			// metadata may write, whatever the Origin says.
			if sfs := r.Header.Get("Sec-Fetch-Site"); sfs != "" && sfs != "same-origin" && sfs != "none" {
				s.writeError(w, r, errCrossOrigin)
				return
			}
			// Under Referrer-Policy: no-referrer browsers send "Origin: null" on
			// same-origin form posts; Sec-Fetch-Site then vouches for the origin.
			if o := r.Header.Get("Origin"); o != "" && o != s.origin && !(o == "null" && r.Header.Get("Sec-Fetch-Site") == "same-origin") {
				s.writeError(w, r, errCrossOrigin)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
	return cop.Handler(inner)
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
