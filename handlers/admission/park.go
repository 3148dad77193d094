package admission

import (
	"bytes"
	"net"
	"net/http"
	"strconv"
	"time"

	"admit/handlers/reqlog"
)

// parkWriteTimeout bounds the write of a parked refusal: a client that
// does not take a few hundred bytes in this time has gone.
const parkWriteTimeout = 5 * time.Second

// park holds a paced refusal without its request: the answer is
// prepared now (the headers the layers above set, the prepared 503 and
// Connection: close), the HTTP/1 connection is taken from net/http
// (hijacked) and, when rf's hold is over (and not before the answer
// schedule's release), a timer writes the answer, closes the connection
// and writes the request's log line. Meanwhile admit keeps the
// connection, the timer and the answer's headers, about a kilobyte, not
// the goroutines, buffers and request net/http keeps for a request in
// progress, about 8 KB more on top of the connection's own 18 KB, all of
// whose stacks every garbage collection scans
// (docs/PERFORMANCE.md#paced-refusals). The connection is closed, not
// handed back: a client that ignores Retry-After also pays a new
// connection. A parked refusal is not let go early if its client goes
// away; its write then fails. It reports false, having done nothing,
// when the connection cannot be taken (HTTP/2, or a writer that does not
// reach net/http's).
func (in *Intake) park(w http.ResponseWriter, r *http.Request, rf Refusal) bool {
	info := reqlog.From(r.Context())
	if info == nil || r.ProtoMajor != 1 {
		return false
	}
	start := time.Now()
	at := start.Add(rf.Hold)
	if release, ok := ScheduledRelease(w); ok && release.After(at) {
		at = release
	}
	a := &parkedAnswer{header: w.Header().Clone(), status: http.StatusOK}
	a.header.Set("Connection", "close")
	in.Busy.Write(a, r, in.Form(r))
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	info.Parked = func(line reqlog.Line) {
		in.AfterHold(time.Until(at), func() {
			held := time.Since(start)
			rf.Sent()
			line(a.status, int64(a.size()), held)
			_ = conn.SetWriteDeadline(time.Now().Add(parkWriteTimeout))
			_, _ = a.bytes().WriteTo(conn)
			_ = conn.Close()
		})
	}
	return true
}

// parkedAnswer is a parked refusal's answer, written by a CannedAnswer
// and kept to be sent later: its status, headers and the body's parts.
// It keeps the slices it is given, which CannedAnswer never changes, and
// copies strings (the request ID).
type parkedAnswer struct {
	header http.Header
	status int
	body   [][]byte
}

func (a *parkedAnswer) Header() http.Header { return a.header }

func (a *parkedAnswer) WriteHeader(code int) { a.status = code }

func (a *parkedAnswer) Write(b []byte) (int, error) {
	a.body = append(a.body, b)
	return len(b), nil
}

func (a *parkedAnswer) WriteString(s string) (int, error) { return a.Write([]byte(s)) }

// size is the body's length.
func (a *parkedAnswer) size() int {
	n := 0
	for _, b := range a.body {
		n += len(b)
	}
	return n
}

// bytes is the whole HTTP/1.1 response, the status line and headers
// first, ready for one write.
func (a *parkedAnswer) bytes() *net.Buffers {
	var head bytes.Buffer
	head.WriteString("HTTP/1.1 " + strconv.Itoa(a.status) + " " + http.StatusText(a.status) + "\r\n")
	a.header.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	a.header.Set("Content-Length", strconv.Itoa(a.size()))
	_ = a.header.Write(&head)
	head.WriteString("\r\n")
	bufs := make(net.Buffers, 0, 1+len(a.body))
	bufs = append(bufs, head.Bytes())
	bufs = append(bufs, a.body...)
	return &bufs
}
