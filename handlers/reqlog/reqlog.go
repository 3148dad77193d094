// Package reqlog gives each request admit serves its request ID and writes
// its one access-log line: the outermost layer of admit's handler
// (docs/ARCHITECTURE.md#a-request-start-to-finish). Nothing personal is
// logged: the route is the pattern, never the path's values or the query
// string.
package reqlog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"time"
)

// Info is what admit knows about a request for its log line and metrics;
// Middleware puts it in the request's context.
type Info struct {
	// ID is the request ID: the trusted proxy's, or one admit made.
	ID string
	// Held is how long the answer was deliberately held before it was
	// sent (a paced refusal for load), part of the request's duration.
	Held time.Duration
	// Parked, set by a handler that leaves its answer to be sent after it
	// returns (a parked refusal), is given the request's log line to write
	// once that answer leaves, instead of when the handler returns.
	Parked func(line Line)
}

// Line writes a request's access-log line and records its metrics, for an
// answer with status and a body of bytes, held as long as held.
type Line func(status int, bytes int64, held time.Duration)

type infoKey struct{}

// From returns the request's info, or nil outside Middleware.
func From(ctx context.Context) *Info {
	info, _ := ctx.Value(infoKey{}).(*Info)
	return info
}

// ID returns the request's ID, or "".
func ID(ctx context.Context) string {
	if info := From(ctx); info != nil {
		return info.ID
	}
	return ""
}

// Options are what Middleware needs besides the handler it wraps.
type Options struct {
	// Log receives the access-log lines.
	Log *slog.Logger
	// TrustedHeader names a trusted proxy header carrying the request ID
	// (ADMIT_REQUEST_ID_HEADER); empty: admit makes every ID.
	TrustedHeader string
	// Route names the route pattern that serves a request.
	Route func(*http.Request) string
	// Observe, when set, is told about every request (metrics).
	Observe func(method, route string, status int, took time.Duration)
}

// Middleware is the outermost layer: it gives the request its ID
// (returned in X-Request-ID and shown on 5xx pages so a person can quote
// it), and when the response is done writes one access-log line — method,
// route pattern, status, duration, bytes, request ID, and held_ms when the
// answer was held on purpose (a paced refusal; the duration includes the
// hold). A parked answer's line is written when it leaves. An unknown
// method is logged as OTHER.
func Middleware(o Options, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &Info{ID: NewID(r, o.TrustedHeader)}
		w.Header().Set("X-Request-ID", info.ID)
		r = r.WithContext(context.WithValue(r.Context(), infoKey{}, info))
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)

		// The line keeps the request's context, not the request: a parked
		// answer's line would otherwise keep its body's buffer.
		route, method, ctx := o.Route(r), Method(r.Method), r.Context()
		line := func(status int, bytes int64, held time.Duration) {
			took := time.Since(start)
			attrs := [6]slog.Attr{slog.String("method", method), slog.String("route", route),
				slog.Int("status", status), slog.Float64("duration_ms", millis(took)), slog.Int64("bytes", bytes)}
			n := 5
			if held > 0 {
				attrs[n], n = slog.Float64("held_ms", millis(held)), n+1
			}
			o.Log.LogAttrs(ctx, slog.LevelInfo, "request", attrs[:n]...)
			if o.Observe != nil {
				o.Observe(method, route, status, took)
			}
		}
		if info.Parked != nil {
			info.Parked(line)
			return
		}
		line(rec.status, rec.bytes, info.Held)
	})
}

// millis is d in milliseconds, to the microsecond.
func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Method is the method for logs and metric labels: one of the fixed HTTP
// methods, or OTHER.
func Method(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "OTHER"
}

// recorder remembers the status and counts the body bytes written.
type recorder struct {
	http.ResponseWriter
	status int
	wrote  bool
	bytes  int64
}

func (w *recorder) WriteHeader(code int) {
	if !w.wrote && code >= 200 {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(b []byte) (int, error) {
	w.wrote = true
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// NewID is the ID the trusted proxy header carries when it is well formed,
// else a new random one. A client's own X-Request-ID is never believed
// without that header: it would let anyone write what they like into the
// log.
func NewID(r *http.Request, trustedHeader string) string {
	if trustedHeader != "" {
		if v := r.Header.Get(trustedHeader); validID(v) {
			return v
		}
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// validID accepts what proxies generate (hex, UUIDs, base64url) and
// nothing that could carry an address or break a log line: 1 to 64 of
// A-Z a-z 0-9 - _.
func validID(v string) bool {
	if v == "" || len(v) > 64 {
		return false
	}
	for _, c := range []byte(v) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// LogHandler adds the request ID to every record logged with a request's
// context, so an error line and the access line of one request share it.
type LogHandler struct{ slog.Handler }

// Handle adds the request ID, when the context has one.
func (h LogHandler) Handle(ctx context.Context, rec slog.Record) error {
	if id := ID(ctx); id != "" {
		rec.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, rec)
}

// WithAttrs keeps adding the request ID under the new attributes.
func (h LogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return LogHandler{h.Handler.WithAttrs(attrs)}
}

// WithGroup keeps adding the request ID under the new group.
func (h LogHandler) WithGroup(name string) slog.Handler {
	return LogHandler{h.Handler.WithGroup(name)}
}
