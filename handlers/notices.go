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

// handlePublishNotice is the publish-notice form. The form does not ask for
// the purpose: every notice of a program states the program's own purpose
// (docs/API.md), so it is taken from the program. A posted purpose (a page
// from before the form stopped asking) is still checked by the store.
func (s *Server) handlePublishNotice(w http.ResponseWriter, r *http.Request) error {
	ctx, a, id := r.Context(), ownerActor(r), r.PathValue("id")
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
	if nn.Purpose == "" {
		p, err := s.db.ProgramByID(ctx, a, id)
		if err != nil {
			return err
		}
		nn.Purpose = p.Purpose
	}
	n, err := s.db.PublishNotice(ctx, a, id, nn)
	if err != nil {
		return failed(err)
	}
	p, err := s.db.ProgramByID(ctx, a, id)
	if err != nil {
		return err
	}
	s.cookieState(r).Flash = publishedNote(n.Version, p)
	return redirect(w, r, sectionURL(id, views.SectionSettings))
}

// publishedNote confirms a published notice and says who sees it: new
// signups only while signup is open; otherwise what is still needed.
func publishedNote(version int, p *store.Program) string {
	done := "Notice version " + strconv.Itoa(version) + " published. "
	switch {
	case p.RetiredAt != nil:
		return done + "The program is retired: signup stays closed."
	case !p.SignupOpen:
		return done + "Signup is still closed: to let people join, switch on “Signup open” under Settings and save. They will see this notice."
	}
	return done + "New signups see it from now on."
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
