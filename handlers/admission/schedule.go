package admission

import (
	"context"
	"net/http"
	"runtime"
	"sync/atomic"
	"time"
)

// AnswerDelay is when a signup's answer is released by default, counted
// from the moment its handler starts, once the intake has read its body: no
// signup answer leaves earlier. A new
// address costs more work than one already listed (an entry, its indexes,
// the hour's intake and an audit event against a receipt alone), which
// timing would otherwise reveal although the bodies are identical
// (docs/signup.md, "Timing"). Answers that take longer leave when ready.
// The delay is well above the slower path's usual time on one request at a
// time, and below a signup's time under load, where the commit shared by
// concurrent signups already hides each one's own work.
const AnswerDelay = 5 * time.Millisecond

// Schedule holds the answers of both signup routes (OnSchedule) and
// counts those in progress, which decides how the last moments before a
// release are waited out.
type Schedule struct {
	delay      time.Duration
	inProgress atomic.Int64
}

// NewSchedule is a schedule that releases answers delay after their
// request reached it.
func NewSchedule(delay time.Duration) *Schedule { return &Schedule{delay: delay} }

// OnSchedule holds every answer of next until delay after the request
// reached it, whatever the answer (a 202, a refusal or an error).
func (sch *Schedule) OnSchedule(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sch.inProgress.Add(1)
		defer sch.inProgress.Add(-1)
		next.ServeHTTP(&heldWriter{ResponseWriter: w, ctx: r.Context(), release: time.Now().Add(sch.delay), sch: sch}, r)
	})
}

// heldWriter delays the first byte of a response (its status line) until
// release. Headers may be set before; nothing reaches the client earlier.
type heldWriter struct {
	http.ResponseWriter
	ctx     context.Context
	release time.Time
	sch     *Schedule
	waited  bool
	// spin is the stretch before the release that wait chose to yield
	// through in a loop (releaseSpin or none); yields counts the loop's
	// turns.
	spin   time.Duration
	yields int
}

// releaseSpin is how long before release a held answer stops sleeping and
// starts yielding in a loop, when it is the only signup in progress:
// waking from a sleep takes longer the longer the process was idle, so a
// sleep alone would release the cheaper path's answers measurably later
// than the other's. While other signups are in progress the process is not
// idle and a sleep wakes on time; a spin there would only take a core from
// them (2% of a signup's CPU at 32 clients: docs/PERFORMANCE.md#counted-once-per-commit).
const releaseSpin = time.Millisecond

// spinWindow is how long before a release an answer yields in a loop
// instead of sleeping: releaseSpin while it is the only signup in progress,
// none beside others.
func (sch *Schedule) spinWindow() time.Duration {
	if sch.inProgress.Load() > 1 {
		return 0
	}
	return releaseSpin
}

// wait holds the answer until release, once, or until the client goes away.
func (w *heldWriter) wait() {
	if w.waited {
		return
	}
	w.waited = true
	w.spin = w.sch.spinWindow()
	if d := time.Until(w.release) - w.spin; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-w.ctx.Done():
			t.Stop()
			return
		}
	}
	for time.Now().Before(w.release) && w.ctx.Err() == nil {
		w.yields++
		runtime.Gosched()
	}
}

func (w *heldWriter) WriteHeader(code int) {
	w.wait()
	w.ResponseWriter.WriteHeader(code)
}

func (w *heldWriter) Write(b []byte) (int, error) {
	w.wait()
	return w.ResponseWriter.Write(b)
}

// ReleaseNow lets the answer being written to w leave at once, if w is
// held by OnSchedule.
func ReleaseNow(w http.ResponseWriter) {
	if hw, ok := w.(*heldWriter); ok {
		hw.waited = true
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *heldWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ScheduledRelease is the release time of the schedule's writer under w,
// if there is one.
func ScheduledRelease(w http.ResponseWriter) (time.Time, bool) {
	for {
		switch v := w.(type) {
		case *heldWriter:
			return v.release, true
		case interface{ Unwrap() http.ResponseWriter }:
			w = v.Unwrap()
		default:
			return time.Time{}, false
		}
	}
}
