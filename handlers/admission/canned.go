package admission

import (
	"bytes"
	"html"
	"io"
	"net/http"

	"admit/handlers/reqlog"
)

// Form is which of its forms an answer takes.
type Form int

const (
	// FormPage is the whole HTML page.
	FormPage Form = iota
	// FormBlock is the HTML block htmx swaps in.
	FormBlock
	// FormJSON is the API's JSON.
	FormJSON
)

// RequestIDSlot marks where a canned page or block shows the request ID.
const RequestIDSlot = "REQUESTIDSLOT"

// CannedAnswer is an answer prepared when the server starts, for
// refusals that must cost next to nothing: JSON, the page and the htmx
// block, each written as it stands. The request ID, which 5xx pages show,
// is the only part filled in per request.
type CannedAnswer struct {
	status     int
	retryAfter string
	json       []byte
	// page and block are split where the request ID goes (the second half
	// is empty when the page shows none).
	page, block [2][]byte
}

// NewCannedAnswer prepares an answer of status with the Retry-After
// retryAfter ("" for none): json is its API body, page and block its HTML
// page and htmx block, RequestIDSlot where they show the request ID.
func NewCannedAnswer(status int, retryAfter string, json, page, block []byte) *CannedAnswer {
	a := &CannedAnswer{status: status, retryAfter: retryAfter, json: json}
	a.page[0], a.page[1], _ = bytes.Cut(page, []byte(RequestIDSlot))
	a.block[0], a.block[1], _ = bytes.Cut(block, []byte(RequestIDSlot))
	return a
}

// Write sends the answer in form f. It is never cached.
func (a *CannedAnswer) Write(w http.ResponseWriter, r *http.Request, f Form) {
	h := w.Header()
	h.Set("Cache-Control", "private, no-store")
	if a.retryAfter != "" {
		h.Set("Retry-After", a.retryAfter)
	}
	if f == FormJSON {
		h.Set("Content-Type", "application/json")
		w.WriteHeader(a.status)
		_, _ = w.Write(a.json)
		return
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Vary", "HX-Request")
	parts := a.page
	if f == FormBlock {
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
