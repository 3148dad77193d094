package handlers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"time"
)

// requestInfo is what admit knows about a request for its log line and
// metrics; withRequestLog puts it in the request's context.
type requestInfo struct {
	// id is the request ID: the trusted proxy's, or one admit made.
	id string
	// held is how long the answer was deliberately held before it was
	// sent (a paced refusal for load), part of the request's duration.
	held time.Duration
	// parked, set by a handler that leaves its answer to be sent after it
	// returns (Server.parkRefusal), is given the request's log line to
	// write once that answer leaves, instead of when the handler returns.
	parked func(line logLine)
}

// logLine writes a request's access-log line and records its metrics,
// for an answer with status and a body of bytes, held as long as held.
type logLine func(status int, bytes int64, held time.Duration)

type requestInfoKey struct{}

// requestInfoFrom returns the request's info, or nil outside withRequestLog.
func requestInfoFrom(ctx context.Context) *requestInfo {
	info, _ := ctx.Value(requestInfoKey{}).(*requestInfo)
	return info
}

// requestIDFrom returns the request's ID, or "".
func requestIDFrom(ctx context.Context) string {
	if info := requestInfoFrom(ctx); info != nil {
		return info.id
	}
	return ""
}

// requestID is the ID the trusted proxy header (Options.RequestIDHeader)
// carries when it is well formed, else a new random one. A client's own
// X-Request-ID is never believed without that header: it would let anyone
// write what they like into the log.
func (s *Server) requestID(r *http.Request) string {
	if s.opts.RequestIDHeader != "" {
		if v := r.Header.Get(s.opts.RequestIDHeader); validRequestID(v) {
			return v
		}
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// validRequestID accepts what proxies generate (hex, UUIDs, base64url) and
// nothing that could carry an address or break a log line: 1 to 64 of
// A-Z a-z 0-9 - _.
func validRequestID(v string) bool {
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

// requestIDLogHandler adds the request ID to every record logged with a
// request's context, so an error line and the access line of one request
// share it.
type requestIDLogHandler struct{ slog.Handler }

func (h requestIDLogHandler) Handle(ctx context.Context, rec slog.Record) error {
	if id := requestIDFrom(ctx); id != "" {
		rec.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, rec)
}

func (h requestIDLogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestIDLogHandler{h.Handler.WithAttrs(attrs)}
}

func (h requestIDLogHandler) WithGroup(name string) slog.Handler {
	return requestIDLogHandler{h.Handler.WithGroup(name)}
}
