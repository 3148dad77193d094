package handlers

import (
	"admit/store"
	"admit/views"
	"net/http"
	"strconv"
)

// newNoticeJSON is POST …/notices.
type newNoticeJSON struct {
	Purpose       string `json:"purpose"`
	ContactText   string `json:"contactText"`
	RetentionText string `json:"retentionText"`
}

// handlePublishNotice is the publish-notice form.
func (s *Server) handlePublishNotice(w http.ResponseWriter, r *http.Request) error {
	if err := parseForm(r); err != nil {
		return err
	}
	f := &formReader{r: r}
	form := views.NoticeForm{Purpose: f.get("purpose"), ContactText: f.get("contactText"), RetentionText: f.get("retentionText")}
	err := f.err
	var n *store.Notice
	if err == nil {
		n, err = s.db.PublishNotice(r.Context(), ownerActor(r), r.PathValue("id"), store.NewNotice{Purpose: form.Purpose,
			ContactText: form.ContactText, RetentionText: form.RetentionText})
	}
	if err != nil {
		return s.rerenderProgram(w, r, err, func(v *views.ProgramPageView, msg string) {
			form.Error = msg
			v.Notice = form
		})
	}
	s.setFlash(w, r, "Notice version "+strconv.Itoa(n.Version)+" published; new signups see it from now on.")
	return redirect(w, r, views.OwnerURL("programs", r.PathValue("id")))
}

// handlePublishNoticeAPI publishes the next notice version: 201 notice.
func (s *Server) handlePublishNoticeAPI(w http.ResponseWriter, r *http.Request) error {
	var body newNoticeJSON
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	n, err := s.db.PublishNotice(r.Context(), ownerActor(r), r.PathValue("id"), store.NewNotice{Purpose: body.Purpose,
		ContactText: body.ContactText, RetentionText: body.RetentionText})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toNoticeJSON(n))
	return nil
}
