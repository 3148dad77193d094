package handlers

import (
	"errors"
	"net/http"

	"admit/store"
)

// wantsBlock reports whether to answer with the htmx block only: an htmx
// request, but not htmx restoring a page from history, which needs it whole.
func wantsBlock(r *http.Request) bool {
	return isHTMX(r) && r.Header.Get("HX-History-Restore-Request") != "true"
}

// redirect answers a successful form post: 303 to the next page (PRG).
// htmx follows it with its own headers and swaps the block it gets.
func redirect(w http.ResponseWriter, r *http.Request, to string) error {
	http.Redirect(w, r, to, http.StatusSeeOther)
	return nil
}

// formFailure reports whether err is one a form shows in place, with the
// submitted values kept: 400 (invalid) and 409 (conflict). Anything else,
// including a body that could not be read as a form at all, goes to the
// error adapter.
func formFailure(err error) (status int, message string, ok bool) {
	status, _, message = classify(err)
	return status, message, !unreadableBody(err) && (status == http.StatusBadRequest || status == http.StatusConflict)
}

// unreadable is a form body that could not be read at all (wrong type, too
// large, malformed): the error adapter answers it, never the form.
type unreadable struct{ error }

func (e unreadable) Unwrap() error { return e.error }

// unreadableBody reports whether err is a form body that could not be read.
func unreadableBody(err error) bool {
	var u unreadable
	return errors.As(err, &u)
}

// readForm parses the urlencoded body and returns a reader of its fields.
// Each form handler's read function starts here.
func readForm(r *http.Request) (*formReader, error) {
	if err := parseForm(r); err != nil {
		return nil, unreadable{err}
	}
	return &formReader{r: r}, nil
}

// formReader reads single-valued fields of a parsed form, keeping the first
// error (a repeated field).
type formReader struct {
	r   *http.Request
	err error
}

func (f *formReader) get(name string) string {
	v, err := formValue(f.r, name)
	if err != nil && f.err == nil {
		f.err = err
	}
	return v
}

// decodeEmptyJSON accepts the empty object a body-less action takes: "{}",
// or no body at all. Any field is unknown, so 400.
func decodeEmptyJSON(r *http.Request) error {
	if r.ContentLength == 0 && r.Header.Get("Content-Type") == "" {
		return nil
	}
	var none struct{}
	return decodeJSON(r, &none)
}

// onField marks a store error as being about the named form field, so the
// form's error summary links to it. Other errors pass unchanged.
func onField(err error, field string) error {
	var e *store.Error
	if errors.As(err, &e) {
		return e.On(field)
	}
	return err
}
