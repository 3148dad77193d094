package handlers

import (
	"net/http"

	"admit/store"
	"admit/views"
)

// retireJSON is POST /api/owner/programs/{id}/retire: the store's
// retirement, with the expected revision (this field shadows the embedded
// one) told missing from 0.
type retireJSON struct {
	store.Retirement
	ExpectedRevision *int64 `json:"expectedRevision"`
}

// handleRetireAPI retires a program: 200 Program, with retiredAt set, as
// soon as the retirement has taken effect; the entries are dated for
// erasure in the background (the store's retirer).
func (s *Server) handleRetireAPI(w http.ResponseWriter, r *http.Request) error {
	var body retireJSON
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	ret := body.Retirement
	var err error
	if ret.ExpectedRevision, err = store.RequireRevision(body.ExpectedRevision, ""); err != nil {
		return err
	}
	p, err := s.db.RetireProgram(r.Context(), ownerActor(r), r.PathValue("id"), ret)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toProgramJSON(p))
	return nil
}

// readRetireForm reads the retirement form into the same input as the
// JSON route.
func readRetireForm(r *http.Request) (store.Retirement, error) {
	f, err := readForm(r)
	if err != nil {
		return store.Retirement{}, err
	}
	rev := f.get("expectedRevision")
	ret := store.Retirement{Confirm: f.get("confirm")}
	if f.err != nil {
		return ret, f.err
	}
	ret.ExpectedRevision, err = store.FormRevision(rev)
	return ret, err
}

// handleRetire is the retirement form on the program page.
func (s *Server) handleRetire(w http.ResponseWriter, r *http.Request) error {
	ret, err := readRetireForm(r)
	// A refusal answers the confirmation again, with the error summary on
	// top and what was typed kept.
	failed := func(err error) error {
		status, msg, ok := formFailure(err)
		if !ok {
			return err
		}
		v, lerr := s.retireConfirmView(r)
		if lerr != nil {
			return lerr
		}
		v.Error, v.ErrorField, v.Typed = msg, store.ErrorField(err), ret.Confirm
		return s.renderConfirmStatus(w, r, status, v)
	}
	if err != nil {
		return failed(err)
	}
	if _, err := s.db.RetireProgram(r.Context(), ownerActor(r), r.PathValue("id"), ret); err != nil {
		return failed(err)
	}
	// The bookkeeping goes on in the background; the page shows how far.
	s.cookieState(r).Flash = "The program is retired: signup is closed and access is off. Its entries are now being scheduled for erasure; the progress is shown below."
	return redirect(w, r, views.OwnerURL("programs", r.PathValue("id")))
}
