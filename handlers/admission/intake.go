package admission

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"admit/handlers/reqlog"
)

// BodyTimeout is how long a public signup's body may take to arrive, from
// the moment its handler starts. A signup form or JSON body is a few
// hundred bytes, which a working connection delivers in one packet; a
// body still arriving after this is held back, by accident or on purpose,
// and is answered 408 (docs/signup.md, "Slow bodies").
const BodyTimeout = 5 * time.Second

// The body errors the intake leaves to Intake.BodyError: nothing was
// judged or stored.
var (
	// ErrBodyTooLarge is a body over the bound the route set
	// (http.MaxBytesReader).
	ErrBodyTooLarge = errors.New("admission: the body is over its bound")
	// ErrUnreadableBody is a body whose read failed otherwise than by
	// its deadline.
	ErrUnreadableBody = errors.New("admission: the body could not be read")
)

// Intake is the front of both signup routes (Wrap). Its fields are set
// once, before it serves; tests may replace Limiter and AfterHold before
// the first request.
type Intake struct {
	// Limiter bounds the signups in progress.
	Limiter *Limiter
	// BodyTimeout is how long a body may take to arrive (BodyTimeout when
	// the server's options say nothing).
	BodyTimeout time.Duration
	// Busy is the refusal for load (503), SlowBody the answer to a body
	// that did not arrive in time (408), both prepared at start.
	Busy, SlowBody *CannedAnswer
	// Form is which form an answer to r takes: JSON, the page or the
	// htmx block.
	Form func(r *http.Request) Form
	// BodyError answers a body the intake could not read
	// (ErrBodyTooLarge, ErrUnreadableBody).
	BodyError func(w http.ResponseWriter, r *http.Request, err error)
	// AfterHold calls f when a paced refusal's hold of d is over, unless
	// stopped first: AfterHoldTimer, which tests may replace to hold
	// refusals until they let them go.
	AfterHold func(d time.Duration, f func()) (stop func() bool)
}

// errSlowBody is a body that did not arrive within its deadline.
var errSlowBody = errors.New("admission: the body did not arrive in time")

// Wrap puts the intake in front of next, in this order
// (docs/signup.md#order-of-admission):
//
//  1. the body is read whole (at most the route's bound, else 413) under
//     a deadline of its own, BodyTimeout: a body that does not arrive in
//     time is answered 408;
//  2. only then may the signup take a place among those in progress
//     (Limiter); past the bound it is answered 503 (refuseBusy);
//  3. then next (the answer schedule, the handler) runs with the body
//     already in memory.
//
// rule: a slow body never holds an in-progress place. Places are few (32
// when traffic is light); taken before the body, a few dozen connections
// sending a byte a second would refuse every real signup. Neither refusal
// reads the database or counts an attempt against the network's hourly
// limit, and both answers are prepared when the server starts
// (CannedAnswer): refusing costs no template, no session and no query.
func (in *Intake) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := in.readBody(w, r)
		switch {
		case errors.Is(err, errSlowBody):
			// The rest of the body may still trickle in: the connection is
			// not read again, lest those bytes be taken for a request
			// (net/http closes it after a failed read too; said here so
			// the answer tells the client).
			w.Header().Set("Connection", "close")
			in.SlowBody.Write(w, r, in.Form(r))
			return
		case err != nil:
			in.BodyError(w, r, err)
			return
		}
		done, ok := in.Limiter.Start()
		if !ok {
			// The body is dropped here: a held refusal keeps no more of
			// the request than net/http does.
			in.refuseBusy(w, r)
			return
		}
		defer done()
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// refuseBusy answers a signup that found no place: the prepared 503, held
// first as long as the limiter's pace asks of a client that ignores
// Retry-After (Limiter.Refuse). While refusals overall are paced (a
// flood) a held refusal on an HTTP/1 connection is parked (park): it
// costs admit a timer and the connection, not a goroutine and a request.
// Otherwise the hold is a timer the handler waits on, ended early if the
// client goes away. The request log shows the hold: the line's duration
// includes it and held_ms says how much of it was the hold. A refusal the
// limiter cannot hold, as the most refusals it may hold are held already,
// leaves at once and closes its connection.
func (in *Intake) refuseBusy(w http.ResponseWriter, r *http.Request) {
	rf := in.Limiter.Refuse(ConnFrom(r.Context()))
	if rf.Hold > 0 {
		if rf.Flood && in.park(w, r, rf) {
			return
		}
		start := time.Now()
		done := make(chan struct{})
		stop := in.AfterHold(rf.Hold, func() { close(done) })
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
	in.Busy.Write(w, r, in.Form(r))
}

// AfterHoldTimer calls f once d has passed, on a timer, unless stop is
// called first: the Intake's AfterHold.
func AfterHoldTimer(d time.Duration, f func()) (stop func() bool) {
	return time.AfterFunc(d, f).Stop
}

// readBody reads r's body (already bounded by the route) under the
// intake's body deadline, then lifts the deadline: the rest of the
// request is answered under the server's own timeouts. Over the bound is
// ErrBodyTooLarge; past the deadline errSlowBody.
func (in *Intake) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	rc := http.NewResponseController(w)
	// A writer that cannot set deadlines (only in unit tests with a
	// recorder) reads without one.
	hasDeadline := rc.SetReadDeadline(time.Now().Add(in.BodyTimeout)) == nil
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
		return nil, ErrBodyTooLarge
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return nil, errSlowBody
	}
	return nil, ErrUnreadableBody
}
