package handlers

import (
	"net/http"

	"admit/handlers/reqlog"
)

// withRequestLog is the outermost layer (reqlog.Middleware): the request
// ID and the one access-log line, named by the route's pattern.
func (s *Server) withRequestLog(mux *http.ServeMux, next http.Handler) http.Handler {
	o := reqlog.Options{Log: s.log, TrustedHeader: s.opts.RequestIDHeader,
		Route: func(r *http.Request) string { return s.routePattern(mux, r) }}
	if s.opts.Requests != nil {
		o.Observe = s.opts.Requests.Request
	}
	return reqlog.Middleware(o, next)
}

// routePattern is the pattern of the route that serves r, from the mux's
// own table — also for a request refused before its handler ran (a foreign
// Origin, a body over its bound) — or "unmatched". Only a registered
// pattern is returned: for a path it would redirect (a double slash, a
// missing trailing slash) the mux names the cleaned path itself, which may
// carry anything a client typed.
func (s *Server) routePattern(mux *http.ServeMux, r *http.Request) string {
	if _, p := mux.Handler(r); s.patterns[p] {
		return p
	}
	return "unmatched"
}
