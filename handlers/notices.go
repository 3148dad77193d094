package handlers

import (
	"admit/store"
	"admit/views"
	"net/http"
	"strconv"
)

// readNoticeForm reads the publish-notice form.
func readNoticeForm(r *http.Request) (views.NoticeForm, store.NewNotice, error) {
	f, err := readForm(r)
	if err != nil {
		return views.NoticeForm{}, store.NewNotice{}, err
	}
	form := views.NoticeForm{Purpose: f.get("purpose"), ContactText: f.get("contactText"), RetentionText: f.get("retentionText")}
	return form, store.NewNotice{Purpose: form.Purpose, ContactText: form.ContactText, RetentionText: form.RetentionText}, f.err
}

// handlePublishNotice is the publish-notice form.
func (s *Server) handlePublishNotice(w http.ResponseWriter, r *http.Request) error {
	form, nn, err := readNoticeForm(r)
	failed := func(err error) error {
		return s.rerenderProgram(w, r, err, func(v *views.ProgramPageView, msg string) {
			form.Error = msg
			// The notice's inputs are named like the JSON fields; only the
			// purpose has an id of its own on the program page.
			if form.Field = store.ErrorField(err); form.Field == "purpose" {
				form.Field = "notice-purpose"
			}
			v.Notice = form
		})
	}
	if err != nil {
		return failed(err)
	}
	n, err := s.db.PublishNotice(r.Context(), ownerActor(r), r.PathValue("id"), nn)
	if err != nil {
		return failed(err)
	}
	s.setFlash(w, r, "Notice version "+strconv.Itoa(n.Version)+" published; new signups see it from now on.")
	return redirect(w, r, views.OwnerURL("programs", r.PathValue("id")))
}

// handlePublishNoticeAPI publishes the next notice version from the store's
// own input: 201 notice.
func (s *Server) handlePublishNoticeAPI(w http.ResponseWriter, r *http.Request) error {
	var nn store.NewNotice
	if err := decodeJSON(r, &nn); err != nil {
		return err
	}
	n, err := s.db.PublishNotice(r.Context(), ownerActor(r), r.PathValue("id"), nn)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toNoticeJSON(n))
	return nil
}
