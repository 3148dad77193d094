package handlers

import (
	"net/http"
	"time"

	"admit/store"
	"admit/views"
)

// handleMe lists the signed-in person's own entries.
func (s *Server) handleMe(w http.ResponseWriter, r *http.Request) error {
	emails := emailsFrom(r.Context())
	own, err := s.db.OwnEntries(r.Context(), emails)
	if err != nil {
		return err
	}
	rows := make([]views.MyEntry, 0, len(own))
	for _, o := range own {
		rows = append(rows, myEntry(o, s.db.Now()))
	}
	c := s.chrome(r, "My waitlists")
	return s.render(w, r, http.StatusOK, c, views.Me(c, emails, rows))
}

// myEntry is the view of one's own entry.
func myEntry(o store.OwnEntry, now time.Time) views.MyEntry {
	return views.MyEntry{Slug: o.Slug, Name: o.Name, Purpose: o.Purpose, State: o.State, JoinedAt: o.JoinedAt,
		NoticeVersion: o.NoticeVersion, AccessEnabled: o.AccessEnabled, InvitationSent: o.InvitationSent, EraseAfter: o.EraseAfter, Retired: o.Retired, Now: now}
}

// myEntryJSON is the API's view of one's own entry.
type myEntryJSON struct {
	Program       string `json:"program"`
	State         string `json:"state"`
	JoinedAt      string `json:"joinedAt"`
	NoticeVersion int    `json:"noticeVersion"`
}

// handleMyEntryAPI returns the caller's own entry in one program.
func (s *Server) handleMyEntryAPI(w http.ResponseWriter, r *http.Request) error {
	e, err := s.db.OwnEntry(r.Context(), r.PathValue("slug"), emailsFrom(r.Context()))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, myEntryJSON{Program: e.Slug, State: e.State,
		JoinedAt: e.JoinedAt.UTC().Format(time.RFC3339), NoticeVersion: e.NoticeVersion})
	return nil
}

// ownEntryOr404 maps a failed own-entry lookup to the generic 404: no match
// says nothing about whether the program or an entry exists.
func ownEntryOr404(err error) error {
	if store.ErrorCode(err) == store.EINTERNAL {
		return err
	}
	return errNotFound
}

// handleWithdrawConfirm asks the signed-in applicant to confirm withdrawing
// their own entry in one program. Nothing changes until the form is posted.
func (s *Server) handleWithdrawConfirm(w http.ResponseWriter, r *http.Request) error {
	e, err := s.db.OwnEntry(r.Context(), r.PathValue("slug"), emailsFrom(r.Context()))
	if err != nil {
		return ownEntryOr404(err)
	}
	c := s.chrome(r, "Withdraw from "+e.Name)
	return s.render(w, r, http.StatusOK, c, views.WithdrawConfirm(c, views.WithdrawView{Slug: e.Slug, Name: e.Name, Purpose: e.Purpose, State: e.State}))
}

// handleWithdrawPost withdraws the signed-in applicant's own entry (form,
// CSRF-checked by the recipient group) and returns to /me (303). Any issued
// invitation and active grant end in the same transaction; repeating it
// gives the same withdrawn answer.
func (s *Server) handleWithdrawPost(w http.ResponseWriter, r *http.Request) error {
	p := principalFrom(r.Context())
	e, err := s.db.WithdrawOwn(r.Context(), r.PathValue("slug"), p.UserID, emailsFrom(r.Context()))
	if err != nil {
		return ownEntryOr404(err)
	}
	s.cookieState(r).Note = withdrawnNote(e.Name)
	http.Redirect(w, r, "/me", http.StatusSeeOther)
	return nil
}

// withdrawnNote confirms a withdrawal on the next page.
func withdrawnNote(program string) string {
	return "You have withdrawn from “" + program + "”. Any invitation or access it had has ended."
}

// withdrawJSON is the API's answer to a withdrawal.
type withdrawJSON struct {
	Program string `json:"program"`
	State   string `json:"state"`
}

// decodeEmptyObject accepts an empty body or exactly the JSON object {}:
// a body with any field is 400, a non-JSON body 415.
func decodeEmptyObject(r *http.Request) error {
	b, err := readBody(r)
	if err != nil || len(b) == 0 {
		return err
	}
	if mediaType(r) != "application/json" {
		return errContentType
	}
	var v struct{}
	return decodeStrict(b, &v)
}

// handleWithdrawAPI withdraws the caller's own entry: 200 {program, state}.
func (s *Server) handleWithdrawAPI(w http.ResponseWriter, r *http.Request) error {
	if err := decodeEmptyObject(r); err != nil {
		return err
	}
	p := principalFrom(r.Context())
	e, err := s.db.WithdrawOwn(r.Context(), r.PathValue("slug"), p.UserID, emailsFrom(r.Context()))
	if err != nil {
		return ownEntryOr404(err)
	}
	writeJSON(w, http.StatusOK, withdrawJSON{Program: e.Slug, State: e.State})
	return nil
}
