package handlers

import (
	"net/http"
	"time"

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
		rows = append(rows, views.MyEntry{Slug: o.Slug, Purpose: o.Purpose, State: o.State, JoinedAt: o.JoinedAt,
			NoticeVersion: o.NoticeVersion, AccessEnabled: o.AccessEnabled})
	}
	c := s.chrome(w, r, "My waitlists")
	return s.render(w, r, http.StatusOK, c, views.Me(c, emails, rows))
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
