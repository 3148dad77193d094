package handlers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"admit/handlers/admission"
	"admit/store"
	"admit/views"
)

// SignupBodyTimeout is how long a public signup's body may take to arrive,
// from the moment its handler starts (admission.BodyTimeout; docs/signup.md,
// "Slow bodies").
const SignupBodyTimeout = admission.BodyTimeout

// errSlowBody answers a signup whose body did not arrive within its
// deadline: nothing was read, so nothing was judged or stored.
var errSlowBody = &httpError{http.StatusRequestTimeout, "request_timeout",
	"Your form took too long to reach us, so it was not read. Nothing was saved. Please send it again."}

// newSignupIntake is the front of both signup routes (admission.Intake):
// the bound on signups in progress at most depth, and the refusals for
// load and for a slow body prepared from the generic error page of a
// signed-out visitor.
func (s *Server) newSignupIntake(depth int, dev bool) (*admission.Intake, error) {
	busy, err := newCannedAnswer(http.StatusServiceUnavailable, store.EUNAVAILABLE, busyTitle, busyMessage,
		busyRetryWhen, busyRetryAfter, dev)
	if err != nil {
		return nil, fmt.Errorf("handlers: the busy page: %w", err)
	}
	slow, err := newCannedAnswer(errSlowBody.status, errSlowBody.code, titles[errSlowBody.status],
		errSlowBody.message, "", "", dev)
	if err != nil {
		return nil, fmt.Errorf("handlers: the slow-body page: %w", err)
	}
	return &admission.Intake{
		Limiter:     admission.NewLimiter(depth, time.Now, admission.ProcessCPUMeter),
		BodyTimeout: s.opts.SignupBodyTimeout,
		Busy:        busy,
		SlowBody:    slow,
		Form:        answerForm,
		BodyError:   s.signupBodyError,
		AfterHold:   admission.AfterHoldTimer,
	}, nil
}

// signupBodyError answers a signup body the intake could not read: over
// the bound is 413, anything else 400.
func (s *Server) signupBodyError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, admission.ErrBodyTooLarge) {
		s.writeError(w, r, errTooLarge)
		return
	}
	s.writeError(w, r, invalid("The request body could not be read."))
}

// answerForm is which form an answer to r takes: JSON on the API, the
// block to htmx, else the page.
func answerForm(r *http.Request) admission.Form {
	switch {
	case isAPI(r):
		return admission.FormJSON
	case isHTMX(r):
		return admission.FormBlock
	}
	return admission.FormPage
}

// newCannedAnswer renders the answers for status with the generic error
// page of a signed-out visitor: a refusal does not look at the session.
func newCannedAnswer(status int, code, title, message, retryWhen, retryAfter string, devMode bool) (*admission.CannedAnswer, error) {
	v := views.ErrorView{Status: status, Title: title, Message: message, RequestID: admission.RequestIDSlot, RetryAfter: retryWhen}
	var page, block bytes.Buffer
	if err := views.ErrorPage(views.Chrome{Title: title, DevMode: devMode}, v).Render(context.Background(), &page); err != nil {
		return nil, err
	}
	if err := views.ErrorBlock(v).Render(context.Background(), &block); err != nil {
		return nil, err
	}
	json := []byte(`{"error":"` + code + `"}` + "\n")
	return admission.NewCannedAnswer(status, retryAfter, json, page.Bytes(), block.Bytes()), nil
}
