package handlers

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"admit/handlers/admission"
	"admit/handlers/reqlog"
	"admit/handlers/secure"
	"admit/internal/identity"
	"admit/store"
	"admit/views"
)

// httpError is an error that belongs to the HTTP layer (size, type, origin,
// CSRF), as opposed to a store error code.
type httpError struct {
	status  int
	code    string
	message string
}

func (e *httpError) Error() string { return e.code + ": " + e.message }

var (
	errTooLarge     = &httpError{http.StatusRequestEntityTooLarge, "payload_too_large", "The request is larger than 32 KiB."}
	errContentType  = &httpError{http.StatusUnsupportedMediaType, "unsupported_media_type", "The request has the wrong content type."}
	errCrossOrigin  = &httpError{http.StatusForbidden, "forbidden", "This request came from another site and was refused."}
	errCSRF         = &httpError{http.StatusForbidden, "forbidden", "Your form expired. Reload the page and try again."}
	errNotFound     = &httpError{http.StatusNotFound, "not_found", "There is nothing here, or you do not have access to it."}
	errMethod       = &httpError{http.StatusMethodNotAllowed, "method_not_allowed", "That method is not allowed here."}
	errSignedOutAPI = &httpError{http.StatusUnauthorized, "unauthorized", "Sign in to continue."}
)

// invalid returns a 400 error with a message for the field at fault.
func invalid(message string) error { return store.Errorf(store.EINVALID, "%s", message) }

// statusFor is the one table from store error codes to HTTP status.
var statusFor = map[string]int{
	store.EINVALID:     http.StatusBadRequest,
	store.ENOTFOUND:    http.StatusNotFound,
	store.ECONFLICT:    http.StatusConflict,
	store.ERATELIMITED: http.StatusTooManyRequests,
	store.EFORBIDDEN:   http.StatusForbidden,
	store.EUNAVAILABLE: http.StatusServiceUnavailable,
	store.EINTERNAL:    http.StatusInternalServerError,
}

// titles are the generic page titles per status.
var titles = map[int]string{
	http.StatusBadRequest:            "Please check your input",
	http.StatusUnauthorized:          "Please sign in",
	http.StatusForbidden:             "Not allowed",
	http.StatusNotFound:              "Not found",
	http.StatusMethodNotAllowed:      "Not allowed",
	http.StatusRequestTimeout:        "Took too long to arrive",
	http.StatusConflict:              "Please reload",
	http.StatusRequestEntityTooLarge: "Too large",
	http.StatusUnsupportedMediaType:  "Unsupported request",
	http.StatusTooManyRequests:       "Please try again later",
	http.StatusServiceUnavailable:    "Temporarily unavailable",
	http.StatusInternalServerError:   "Something went wrong",
}

// fixedMessages are used for statuses whose message must not vary: a 404
// reads the same whether a thing is absent, foreign or revoked.
var fixedMessages = map[int]string{
	http.StatusNotFound:            errNotFound.message,
	http.StatusTooManyRequests:     "Too many requests right now. Please try again later.",
	http.StatusServiceUnavailable:  "We could not reach our sign-in provider. Nothing was changed. Please try again in a moment.",
	http.StatusInternalServerError: "Something went wrong on our side. Nothing was changed.",
	http.StatusUnauthorized:        "Sign in to continue.",
}

// classify turns any error into status, JSON code and person-readable message.
func classify(err error) (status int, code, message string) {
	var he *httpError
	switch {
	case errors.As(err, &he):
		status, code, message = he.status, he.code, he.message
	case errors.Is(err, identity.ErrSignedOut):
		status, code, message = http.StatusUnauthorized, "unauthorized", ""
	case errors.Is(err, identity.ErrIdentityUnavailable):
		status, code, message = http.StatusServiceUnavailable, store.EUNAVAILABLE, ""
	default:
		code = store.ErrorCode(err)
		status = statusFor[code]
		message = store.ErrorMessage(err)
	}
	if m, ok := fixedMessages[status]; ok && !errors.Is(err, store.ErrBusy) && !errors.Is(err, store.ErrNoSpace) {
		message = m
	}
	return status, code, message
}

// notSavedTitle and notSavedSignedOut answer an action sent after the
// session ended.
const (
	notSavedTitle     = "Not saved: please sign in"
	notSavedSignedOut = "Your session ended, so your last action was not saved. Sign in to go back to the page, then do it again."
)

// busyRetryWait is how long a client refused for load is asked to wait
// (busyRetryAfter, its Retry-After in seconds): a write refused because
// admit's writer is full (store.ErrBusy) or a signup that found no place.
const busyRetryWait = admission.RetryWait

var busyRetryAfter = strconv.Itoa(int(busyRetryWait / time.Second))

// A refusal for load has a page of its own: it is not the sign-in
// provider's 503, and it says when to try again.
const (
	busyTitle   = "Too busy right now"
	busyMessage = "We are receiving more requests than we can handle right now. Nothing was saved."
	// busyRetryWhen is when to try again, in words: Retry-After's second,
	// with the jitter a well-made client adds.
	busyRetryWhen = "in a few seconds"
)

// answerBusy prepares the answer to a write refused because the writer is
// full: a Retry-After, and the answer released at once. A refusal for
// load is decided before any work on the request's contents, so its
// timing tells nothing about them (the signup schedule need not hold it).
// It reports whether err is such a refusal.
func answerBusy(w http.ResponseWriter, err error) bool {
	if !errors.Is(err, store.ErrBusy) {
		return false
	}
	w.Header().Set("Retry-After", busyRetryAfter)
	admission.ReleaseNow(w)
	return true
}

// noSpaceRetryAfter is the Retry-After, in seconds, of a write that failed
// because the disk is full (store.ErrNoSpace): room comes back when the
// operator frees some, not in a second.
const noSpaceRetryAfter = "60"

// A write that failed for lack of space has a page of its own: nothing was
// saved, and the same request may be sent again later.
const (
	noSpaceTitle     = "Cannot save right now"
	noSpaceRetryWhen = "in a few minutes"
)

// answerNoSpace sets the Retry-After of a write that failed because the
// disk is full, and reports whether err is one.
func answerNoSpace(w http.ResponseWriter, err error) bool {
	if !errors.Is(err, store.ErrNoSpace) {
		return false
	}
	w.Header().Set("Retry-After", noSpaceRetryAfter)
	return true
}

// identityRetryAfter is the Retry-After, in seconds, of a 503 because the
// sign-in provider could not be reached (identity.ErrIdentityUnavailable),
// and identityRetryWhen the same in words. A provider back from a hiccup
// answers again within seconds; admit's own discovery retries back off to
// half a minute.
const (
	identityRetryAfter         = "30"
	identityRetryWhen          = "in half a minute"
	identityUnavailableMessage = "We could not reach our sign-in provider. Nothing was changed."
)

// writeError is the one error adapter: it logs internal errors (never
// personal data) and renders JSON, an htmx block or a full page.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, code, message := classify(err)
	noSpace := answerNoSpace(w, err)
	if status >= 500 && status != http.StatusServiceUnavailable || noSpace {
		s.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "route", r.Pattern, "err", err)
	}
	w.Header().Set("Cache-Control", "private, no-store")
	title, retry := titles[status], ""
	if answerBusy(w, err) {
		title, message, retry = busyTitle, busyMessage, busyRetryWhen
	}
	if noSpace {
		title, retry = noSpaceTitle, noSpaceRetryWhen
	}
	if errors.Is(err, identity.ErrIdentityUnavailable) {
		// rule (docs/API.md#headers): every 503 says when to try again;
		// the page says it once, in the retry line.
		w.Header().Set("Retry-After", identityRetryAfter)
		message, retry = identityUnavailableMessage, identityRetryWhen
	}
	switch {
	case errors.Is(err, store.ErrQueueFull):
		// The page names no time: a full queue frees no place on the hour.
		// The header stays, as on every 429 (docs/API.md), as a hint.
		title, message = "This waitlist is full", store.ErrorMessage(err)
		s.setRetryAfter(w)
	case status == http.StatusTooManyRequests:
		retry = s.setRetryAfter(w)
	}
	if isAPI(r) {
		writeJSON(w, status, apiError(code, err))
		return
	}
	// rule (docs/API.md#sign-in-and-the-way-back): sign-in returns to the
	// page the person was on, never to a POST-only URL.
	signIn := ""
	if status == http.StatusUnauthorized {
		signIn = signInURL(s.returnPath(r))
	}
	if status == http.StatusServiceUnavailable && r.URL.Path == "/auth/callback" {
		// rule (docs/API.md#headers): the callback's URL works once (its
		// flow cookie is spent), so trying again starts the sign-in over.
		signIn = "/sign-in"
	}
	if status == http.StatusUnauthorized && r.Method == http.MethodGet && !isHTMX(r) {
		http.Redirect(w, r, signIn, http.StatusSeeOther)
		return
	}
	// rule: an action refused because the session ended says it was not
	// saved — on this page without JavaScript, and with htmx on the
	// sign-in page it leads to — and sign-in only returns to the page:
	// nothing is sent again.
	if status == http.StatusUnauthorized && secure.IsUnsafe(r.Method) {
		title, message = notSavedTitle, notSavedSignedOut
	}
	if status == http.StatusUnauthorized && isHTMX(r) {
		if secure.IsUnsafe(r.Method) {
			s.cookieState(r).Note = notSavedSignedOut
		}
		w.Header().Set("HX-Redirect", signIn)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Vary", "HX-Request")
	if isHTMX(r) {
		w.WriteHeader(status)
		_ = views.ErrorBlock(views.ErrorView{Status: status, Title: title, Message: message,
			RequestID: reqlog.ID(r.Context()), SignInURL: signIn, RetryAfter: retry}).Render(r.Context(), w)
		return
	}
	c := s.chrome(r, title)
	// rule: an error page is the same whatever path was asked (a 404 must
	// not differ between absent and foreign), so its navigation carries no
	// way back; a 401 has its own sign-in link.
	c.SignInURL = ""
	w.WriteHeader(status)
	_ = views.ErrorPage(c, views.ErrorView{Status: status, Title: title, Message: message,
		RequestID: reqlog.ID(r.Context()), SignInURL: signIn, RetryAfter: retry}).Render(r.Context(), w)
}

// writeJSON writes v as a JSON response with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	_ = enc.Encode(v)
}

// apiErrorJSON is a JSON error: the generic code and, for a refused bulk
// request only, what the client needs to correct it
// (docs/API.md#bulk-invitations).
type apiErrorJSON struct {
	Error        string `json:"error"`
	SeatsLeft    *int   `json:"seatsLeft,omitempty"`
	EntryID      string `json:"entryId,omitempty"`
	InvitationID string `json:"invitationId,omitempty"`
}

func apiError(code string, err error) apiErrorJSON {
	out := apiErrorJSON{Error: code}
	var e *store.Error
	if errors.As(err, &e) {
		out.SeatsLeft, out.EntryID, out.InvitationID = e.SeatsLeft, e.EntryID, e.InvitationID
	}
	return out
}
