// Package secure is the layer of admit's handler every request passes
// before routing: the security headers every answer carries, the recovery
// of a panicking handler, and the refusal of cross-origin writes
// (docs/ARCHITECTURE.md#a-request-start-to-finish, docs/API.md#headers).
package secure

import (
	"fmt"
	"net/http"
)

// BaseCSP is the Content-Security-Policy of every answer.
const BaseCSP = "default-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'; img-src 'self' data:"

// ClerkCSP widens BaseCSP to the Clerk Frontend API origin for pages that
// load ClerkJS (its components also need inline styles and blob workers).
func ClerkCSP(fapi string) string {
	return fmt.Sprintf("default-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'; "+
		"script-src 'self' %[1]s; connect-src 'self' %[1]s; frame-src 'self' %[1]s https://challenges.cloudflare.com; "+
		"img-src 'self' data: https://img.clerk.com; style-src 'self' 'unsafe-inline'; worker-src 'self' blob:", fapi)
}

// Headers sets the headers every answer carries; https adds
// Strict-Transport-Security.
func Headers(h http.Header, https bool) {
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", BaseCSP)
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	if https {
		h.Set("Strict-Transport-Security", "max-age=63072000; includeSubDomains")
	}
}

// Recovered is told about a panic of a handler under Layer: the value it
// panicked with, and whether the handler had already begun its answer.
type Recovered func(w http.ResponseWriter, r *http.Request, v any, answered bool)

// Layer sets the security headers on every response and recovers a
// panicking handler, handing the panic to recovered (which logs it and, if
// nothing was answered yet, answers 500). http.ErrAbortHandler is passed
// on, as net/http expects.
func Layer(https bool, recovered Recovered, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Headers(w.Header(), https)
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				recovered(rec, r, v, rec.wrote)
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

// IsUnsafe reports whether the method may change state.
func IsUnsafe(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// Origin rejects cross-origin writes before any handler runs, answering
// them with refuse: Go's CrossOriginProtection (Sec-Fetch-Site and Origin
// against Host), plus admit's rules (docs/API.md#headers) that an Origin
// header, when present, equals origin (the public URL's) exactly, and
// that a browser's word that a write is cross-site or same-site is final —
// Go lets a trusted Origin override it; admit does not.
func Origin(origin string, refuse http.Handler, next http.Handler) (http.Handler, error) {
	cop := http.NewCrossOriginProtection()
	if err := cop.AddTrustedOrigin(origin); err != nil {
		return nil, err
	}
	cop.SetDenyHandler(refuse)
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if IsUnsafe(r.Method) {
			// rule: only same-origin and user-initiated ("none") fetch
			// metadata may write, whatever the Origin says.
			if sfs := r.Header.Get("Sec-Fetch-Site"); sfs != "" && sfs != "same-origin" && sfs != "none" {
				refuse.ServeHTTP(w, r)
				return
			}
			// Under Referrer-Policy: no-referrer browsers send "Origin: null" on
			// same-origin form posts; Sec-Fetch-Site then vouches for the origin.
			if o := r.Header.Get("Origin"); o != "" && o != origin && !(o == "null" && r.Header.Get("Sec-Fetch-Site") == "same-origin") {
				refuse.ServeHTTP(w, r)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
	return cop.Handler(inner), nil
}
