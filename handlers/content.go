package handlers

import (
	"admit/store"
	"admit/views"
	"net/http"
	"strconv"
)

// readContentForm reads the private-content form.
func readContentForm(r *http.Request) (views.ContentForm, store.ContentEdit, error) {
	f, err := readForm(r)
	if err != nil {
		return views.ContentForm{}, store.ContentEdit{}, err
	}
	form := views.ContentForm{ExpectedRevision: f.get("expectedRevision"), Body: f.get("body")}
	edit := store.ContentEdit{Body: form.Body}
	if f.err != nil {
		return form, edit, f.err
	}
	edit.ExpectedRevision, err = store.FormRevision(form.ExpectedRevision)
	return form, edit, err
}

// handleContent is the private-content form.
func (s *Server) handleContent(w http.ResponseWriter, r *http.Request) error {
	form, edit, err := readContentForm(r)
	failed := func(err error) error {
		return s.rerenderProgram(w, r, err, func(v *views.ProgramPageView, msg string) {
			saved := v.Content
			form.Error = msg
			if store.ErrorCode(err) == store.ECONFLICT {
				// Keep the draft; show the saved text beside it and take its
				// revision, so saving again is a deliberate overwrite.
				form.Conflict, form.Saved, form.SavedRevision = true, saved.Saved, saved.SavedRevision
				form.ExpectedRevision = saved.ExpectedRevision
			}
			v.Content = form
		})
	}
	if err != nil {
		return failed(err)
	}
	rev, err := s.db.PutContent(r.Context(), ownerActor(r), r.PathValue("id"), edit)
	if err != nil {
		return failed(err)
	}
	s.cookieState(r).Flash = "Private content saved (revision " + strconv.FormatInt(rev, 10) + ")."
	return redirect(w, r, sectionURL(r.PathValue("id"), programSection(r)))
}

// putContentJSON is PUT …/content: the store's edit, with the expected
// revision (this field shadows the embedded one) told missing from 0.
type putContentJSON struct {
	store.ContentEdit
	ExpectedRevision *int64 `json:"expectedRevision"`
}

// handlePutContentAPI replaces the private content: 200 {revision}.
func (s *Server) handlePutContentAPI(w http.ResponseWriter, r *http.Request) error {
	var body putContentJSON
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	edit := body.ContentEdit
	var err error
	if edit.ExpectedRevision, err = store.RequireRevision(body.ExpectedRevision, "0 when there is no content yet"); err != nil {
		return err
	}
	rev, err := s.db.PutContent(r.Context(), ownerActor(r), r.PathValue("id"), edit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]int64{"revision": rev})
	return nil
}

// handleContentAPI returns the private content and its revision, which a
// PUT must name (0 and "" when none is written yet).
func (s *Server) handleContentAPI(w http.ResponseWriter, r *http.Request) error {
	body, rev, err := s.db.OwnerContent(r.Context(), ownerActor(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, contentJSON{Body: body, Revision: rev})
	return nil
}
