// Package savefirst saves what a request changed — admit's cookie state —
// once, just before the first byte of its answer leaves, so that an answer
// is never sent whose confirmation or one-time code did not persist
// (docs/ARCHITECTURE.md#a-request-start-to-finish).
package savefirst

import "net/http"

// Serve serves r with next, calling save once before the answer's status
// line leaves (or after next returns, when it wrote nothing) and adding
// the cookies it returns. When save fails, nothing of next's answer goes
// out, its headers included: failed answers instead, on the emptied
// headers, and what next writes afterwards is dropped.
func Serve(w http.ResponseWriter, r *http.Request, next http.Handler,
	save func() ([]*http.Cookie, error), failed func(w http.ResponseWriter, r *http.Request, err error)) {
	sw := &writer{ResponseWriter: w, r: r, save: save, failed: failed}
	next.ServeHTTP(sw, r)
	// A handler that wrote nothing is answered 200 by net/http after this
	// returns: what it changed is saved first.
	sw.commit()
}

// writer saves before the first byte of the answer: its status line.
type writer struct {
	http.ResponseWriter
	r      *http.Request
	save   func() ([]*http.Cookie, error)
	failed func(w http.ResponseWriter, r *http.Request, err error)
	// done is set once saved; refused when the save failed and the
	// failure's answer was written instead.
	done, refused bool
}

// commit saves once and reports whether the handler's answer may go on.
func (w *writer) commit() bool {
	if w.done {
		return !w.refused
	}
	w.done = true
	cookies, err := w.save()
	if err == nil {
		for _, c := range cookies {
			w.Header().Add("Set-Cookie", c.String())
		}
		return true
	}
	w.refused = true
	clear(w.Header())
	w.failed(w.ResponseWriter, w.r, err)
	return false
}

func (w *writer) WriteHeader(code int) {
	if code >= http.StatusOK && !w.commit() {
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write drops the handler's body when the save failed: the failure's
// answer went out instead.
func (w *writer) Write(b []byte) (int, error) {
	if !w.commit() {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// FlushError lets http.ResponseController flush, after the save.
func (w *writer) FlushError() error {
	if !w.commit() {
		return nil
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }
