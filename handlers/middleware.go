package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"

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
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Content-Security-Policy", baseCSP)
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		if s.isHTTPS() {
			h.Set("Strict-Transport-Security", "max-age=63072000; includeSubDomains")
		}
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

// noStore marks a response as private and never cached.
func noStore(w http.ResponseWriter) { w.Header().Set("Cache-Control", "private, no-store") }
