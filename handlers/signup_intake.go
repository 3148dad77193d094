package handlers

import (
	"bytes"
	"context"
	"errors"
	"html"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"admit/handlers/admission"
	"admit/handlers/reqlog"
	"admit/views"
)

// SignupBodyTimeout is how long a public signup's body may take to arrive,
// from the moment its handler starts. A signup form or JSON body is a few
// hundred bytes, which a working connection delivers in one packet; a
// body still arriving after this is held back, by accident or on purpose,
// and is answered 408 (docs/signup.md, "Slow bodies").
const SignupBodyTimeout = 5 * time.Second

// errSlowBody answers a signup whose body did not arrive within its
// deadline: nothing was read, so nothing was judged or stored.
var errSlowBody = &httpError{http.StatusRequestTimeout, "request_timeout",
	"Your form took too long to reach us, so it was not read. Nothing was saved. Please send it again."}

// signupIntake is the front of both signup routes, in this order
// (docs/signup.md#order-of-admission):
//
//  1. the body is read whole (at most maxBody, else 413) under a deadline
//     of its own, SignupBodyTimeout: a body that does not arrive in time
//     is answered 408;
//  2. only then may the signup take a place among those in progress
//     (admission.Limiter); past the bound it is answered 503 at once;
//  3. then next (the answer schedule, the handler) runs with the body
//     already in memory.
//
// rule: a slow body never holds an in-progress place. Places are few (32
// when traffic is light); taken before the body, a few dozen connections
// sending a byte a second would refuse every real signup. Neither refusal
// reads the database or counts an attempt against the network's hourly
// limit, and both answers are prepared when the server starts (cannedAnswer):
// refusing costs no template, no session and no query.
func (s *Server) signupIntake(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := s.readSignupBody(w, r)
		switch {
		case errors.Is(err, errSlowBody):
			// The rest of the body may still trickle in: the connection is
			// not read again, lest those bytes be taken for a request
			// (net/http closes it after a failed read too; said here so
			// the answer tells the client).
			w.Header().Set("Connection", "close")
			s.slowBody.write(w, r)
			return
		case err != nil:
			s.writeError(w, r, err)
			return
		}
		done, ok := s.startSignup()
		if !ok {
			// The body is dropped here: a held refusal keeps no more of
			// the request than net/http does.
			s.refuseBusy(w, r)
			return
		}
		defer done()
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// refuseBusy answers a signup that found no place: the prepared 503, held
// first as long as the limiter's pace asks of a client that ignores
// Retry-After (admission.Limiter.Refuse). While refusals overall are paced
// (a flood) a held refusal on an HTTP/1 connection is parked
// (parkRefusal): it costs admit a timer and the connection, not a
// goroutine and a request. Otherwise the hold is a timer the handler
// waits on, ended early if the client goes away. The request log shows
// the hold: the line's duration includes it and held_ms says how much of
// it was the hold. A refusal the limiter cannot hold, as the most
// refusals it may hold are held already, leaves at once and closes its
// connection.
func (s *Server) refuseBusy(w http.ResponseWriter, r *http.Request) {
	rf := s.signups.Refuse(admission.ConnFrom(r.Context()))
	if rf.Hold > 0 {
		if rf.Flood && s.parkRefusal(w, r, rf) {
			return
		}
		start := time.Now()
		done := make(chan struct{})
		stop := s.afterHold(rf.Hold, func() { close(done) })
		select {
		case <-done:
		case <-r.Context().Done():
			stop()
		}
		rf.Sent()
		if info := reqlog.From(r.Context()); info != nil {
			info.Held = time.Since(start)
		}
	}
	if rf.CloseConn {
		w.Header().Set("Connection", "close")
	}
	s.busy.write(w, r)
}

// afterHoldTimer calls f once d has passed, on a timer, unless stop is
// called first: the Server's afterHold.
func afterHoldTimer(d time.Duration, f func()) (stop func() bool) {
	return time.AfterFunc(d, f).Stop
}

// readSignupBody reads r's body (already bounded by maxBody) under the
// signup body deadline, then lifts the deadline: the rest of the request
// is answered under the server's own timeouts. Over the bound is 413;
// past the deadline errSlowBody.
func (s *Server) readSignupBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	rc := http.NewResponseController(w)
	// A writer that cannot set deadlines (only in unit tests with a
	// recorder) reads without one.
	hasDeadline := rc.SetReadDeadline(time.Now().Add(s.opts.SignupBodyTimeout)) == nil
	b, err := io.ReadAll(r.Body)
	if hasDeadline && err == nil {
		// Lifted at once: a deadline left on the connection would fail the
		// server's own read after the body, which cancels the request's
		// context while its signup is still being admitted.
		_ = rc.SetReadDeadline(time.Time{})
	}
	var mbe *http.MaxBytesError
	var ne net.Error
	switch {
	case err == nil:
		return b, nil
	case errors.As(err, &mbe):
		return nil, errTooLarge
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return nil, errSlowBody
	}
	return nil, invalid("The request body could not be read.")
}

// cannedAnswer is an error answer prepared when the server starts, for
// refusals that must cost next to nothing: JSON, the page and the htmx
// block, each written as it stands. The request ID, which 5xx pages show,
// is the only part filled in per request.
type cannedAnswer struct {
	status     int
	retryAfter string
	json       []byte
	// page and block are split where the request ID goes (the second half
	// is empty when the page shows none).
	page, block [2][]byte
}

// requestIDSlot marks where a canned page shows the request ID.
const requestIDSlot = "REQUESTIDSLOT"

// newCannedAnswer renders the answers for status with the generic error
// page of a signed-out visitor: a refusal does not look at the session.
func newCannedAnswer(status int, code, title, message, retryWhen, retryAfter string, devMode bool) (*cannedAnswer, error) {
	a := &cannedAnswer{status: status, retryAfter: retryAfter, json: []byte(`{"error":"` + code + `"}` + "\n")}
	v := views.ErrorView{Status: status, Title: title, Message: message, RequestID: requestIDSlot, RetryAfter: retryWhen}
	var page, block bytes.Buffer
	if err := views.ErrorPage(views.Chrome{Title: title, DevMode: devMode}, v).Render(context.Background(), &page); err != nil {
		return nil, err
	}
	if err := views.ErrorBlock(v).Render(context.Background(), &block); err != nil {
		return nil, err
	}
	a.page[0], a.page[1], _ = bytes.Cut(page.Bytes(), []byte(requestIDSlot))
	a.block[0], a.block[1], _ = bytes.Cut(block.Bytes(), []byte(requestIDSlot))
	return a, nil
}

// write sends the answer: JSON on the API, else the page, or the block to
// htmx. It is never cached.
func (a *cannedAnswer) write(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "private, no-store")
	if a.retryAfter != "" {
		h.Set("Retry-After", a.retryAfter)
	}
	if isAPI(r) {
		h.Set("Content-Type", "application/json")
		w.WriteHeader(a.status)
		_, _ = w.Write(a.json)
		return
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Vary", "HX-Request")
	parts := a.page
	if isHTMX(r) {
		parts = a.block
	}
	w.WriteHeader(a.status)
	_, _ = w.Write(parts[0])
	if len(parts[1]) > 0 {
		// The ID is admit's own hex or a validated proxy ID; escaped anyway.
		_, _ = io.WriteString(w, html.EscapeString(reqlog.ID(r.Context())))
		_, _ = w.Write(parts[1])
	}
}
