package handlers

import (
	"admit/store"
	"admit/views"
	"net/http"
	"strconv"
	"strings"
)

// putContentJSON is PUT …/content; expectedRevision is 0 when there is none yet.
type putContentJSON struct {
	ExpectedRevision *int64 `json:"expectedRevision"`
	Body             string `json:"body"`
}

// handleContent is the private-content form.
func (s *Server) handleContent(w http.ResponseWriter, r *http.Request) error {
	if err := parseForm(r); err != nil {
		return err
	}
	f := &formReader{r: r}
	form := views.ContentForm{ExpectedRevision: f.get("expectedRevision"), Body: f.get("body")}
	err := f.err
	var rev int64
	if err == nil {
		if rev, err = strconv.ParseInt(strings.TrimSpace(form.ExpectedRevision), 10, 64); err != nil {
			err = invalid("This form is missing its revision. Reload the page and try again.")
		}
	}
	if err == nil {
		rev, err = s.db.PutContent(r.Context(), ownerActor(r), r.PathValue("id"), rev, form.Body)
	}
	if err != nil {
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
	s.setFlash(w, r, "Private content saved (revision "+strconv.FormatInt(rev, 10)+").")
	return redirect(w, r, views.OwnerURL("programs", r.PathValue("id")))
}

// handlePutContentAPI replaces the private content: 200 {revision}.
func (s *Server) handlePutContentAPI(w http.ResponseWriter, r *http.Request) error {
	var body putContentJSON
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	if body.ExpectedRevision == nil {
		return invalid("expectedRevision is required (0 when there is no content yet).")
	}
	rev, err := s.db.PutContent(r.Context(), ownerActor(r), r.PathValue("id"), *body.ExpectedRevision, body.Body)
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
