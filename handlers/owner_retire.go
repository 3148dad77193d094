package handlers

import (
	"net/http"

	"admit/store"
	"admit/views"
)

// retireJSON is POST /api/owner/programs/{id}/retire. Confirm must repeat
// the program's slug: retiring cannot be undone.
type retireJSON struct {
	ExpectedRevision *int64 `json:"expectedRevision"`
	Confirm          string `json:"confirm"`
}

// retire checks the confirmation against the program and retires it.
func (s *Server) retire(r *http.Request, expectedRevision int64, confirm string) (*store.Program, error) {
	a := ownerActor(r)
	p, err := s.db.ProgramByID(r.Context(), a, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	if err := store.CheckRetireConfirmation(confirm, p.Slug); err != nil {
		return nil, err
	}
	return s.db.RetireProgram(r.Context(), a, p.ID, expectedRevision)
}

// handleRetireAPI retires a program: 200 Program, with retiredAt set.
func (s *Server) handleRetireAPI(w http.ResponseWriter, r *http.Request) error {
	var body retireJSON
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	rev, err := store.RequireRevision(body.ExpectedRevision, "")
	if err != nil {
		return err
	}
	p, err := s.retire(r, rev, body.Confirm)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toProgramJSON(p))
	return nil
}

// readRetireForm reads the retirement form into the same input as the
// JSON route.
func readRetireForm(r *http.Request) (retireJSON, error) {
	f, err := readForm(r)
	if err != nil {
		return retireJSON{}, err
	}
	rev, confirm := f.get("expectedRevision"), f.get("confirm")
	in := retireJSON{Confirm: confirm}
	if f.err != nil {
		return in, f.err
	}
	n, err := store.FormRevision(rev)
	in.ExpectedRevision = &n
	return in, err
}

// handleRetire is the retirement form on the program page.
func (s *Server) handleRetire(w http.ResponseWriter, r *http.Request) error {
	in, err := readRetireForm(r)
	failed := func(err error) error {
		return s.rerenderProgram(w, r, err, func(v *views.ProgramPageView, msg string) {
			v.RetireError = msg
		})
	}
	if err != nil {
		return failed(err)
	}
	if _, err := s.retire(r, *in.ExpectedRevision, in.Confirm); err != nil {
		return failed(err)
	}
	s.setFlash(w, r, "The program is retired. Its entries' addresses will be erased on schedule.")
	return redirect(w, r, views.OwnerURL("programs", r.PathValue("id")))
}
