package handlers

import (
	"context"
	"log/slog"
	"net/http"
	"time"
)

// withRequestLog is the outermost layer: it gives the request its ID
// (returned in X-Request-ID and shown on 5xx pages so a person can quote
// it), and when the response is done writes one access-log line — method,
// route pattern, status, duration, bytes, request ID, and held_ms when
// the answer was held on purpose (a paced refusal; the duration includes
// the hold). A parked answer's line is written when it leaves. Nothing personal: the route is the pattern
// (/waitlist/{slug}), never the path's values or the query string, and an
// unknown method is logged as OTHER.
func (s *Server) withRequestLog(mux *http.ServeMux, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &requestInfo{id: s.requestID(r)}
		w.Header().Set("X-Request-ID", info.id)
		r = r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, info))
		rec := &accessRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)

		// The line keeps the request's context, not the request: a parked
		// answer's line would otherwise keep its body's buffer.
		route, method, ctx := s.routePattern(mux, r), logMethod(r.Method), r.Context()
		line := func(status int, bytes int64, held time.Duration) {
			took := time.Since(start)
			attrs := [6]slog.Attr{slog.String("method", method), slog.String("route", route),
				slog.Int("status", status), slog.Float64("duration_ms", millis(took)), slog.Int64("bytes", bytes)}
			n := 5
			if held > 0 {
				attrs[n], n = slog.Float64("held_ms", millis(held)), n+1
			}
			s.log.LogAttrs(ctx, slog.LevelInfo, "request", attrs[:n]...)
			if s.opts.Requests != nil {
				s.opts.Requests.Request(method, route, status, took)
			}
		}
		if info.parked != nil {
			info.parked(line)
			return
		}
		line(rec.status, rec.bytes, info.held)
	})
}

// millis is d in milliseconds, to the microsecond.
func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

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

// logMethod is the method for logs and metric labels: one of the fixed
// HTTP methods, or OTHER.
func logMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "OTHER"
}

// accessRecorder remembers the status and counts the body bytes written.
type accessRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
	bytes  int64
}

func (w *accessRecorder) WriteHeader(code int) {
	if !w.wrote && code >= 200 {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *accessRecorder) Write(b []byte) (int, error) {
	w.wrote = true
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *accessRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
