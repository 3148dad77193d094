package handlers

import (
	"net/http"
	"time"

	"admit/store"
	"admit/views"
)

// handleOwnerHome is the owner console's start page.
func (s *Server) handleOwnerHome(w http.ResponseWriter, r *http.Request) error {
	ps, err := s.db.OwnerPrograms(r.Context(), ownerActor(r))
	if err != nil {
		return err
	}
	v := views.OwnerHomeView{}
	for _, ws := range workspacesFrom(r.Context()) {
		v.Workspaces = append(v.Workspaces, ws.Name)
	}
	for _, p := range ps {
		v.Programs = append(v.Programs, views.OwnerProgramRow{ID: p.ID, Slug: p.Slug, Purpose: p.Purpose,
			SignupOpen: p.SignupOpen, Access: p.AccessEnabled, Occupied: p.Occupied, QueueCap: p.QueueCap,
			Retired: p.RetiredAt != nil})
	}
	c := s.chrome(w, r, "Owner console")
	return s.render(w, r, http.StatusOK, c, views.OwnerHome(c, v))
}

type workspaceJSON struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// handleOwnerWorkspacesAPI lists the workspaces the caller currently owns.
func (s *Server) handleOwnerWorkspacesAPI(w http.ResponseWriter, r *http.Request) error {
	out := []workspaceJSON{}
	for _, ws := range workspacesFrom(r.Context()) {
		out = append(out, workspaceJSON{ID: ws.ID, Name: ws.Name})
	}
	writeJSON(w, http.StatusOK, map[string]any{"workspaces": out})
	return nil
}

// programJSON is the API's Program.
type programJSON struct {
	ID                   string `json:"id"`
	WorkspaceID          string `json:"workspaceId"`
	Slug                 string `json:"slug"`
	Purpose              string `json:"purpose"`
	SignupOpen           bool   `json:"signupOpen"`
	AccessEnabled        bool   `json:"accessEnabled"`
	QueueCap             int    `json:"queueCap"`
	HourlyCap            int    `json:"hourlyCap"`
	SeatCap              int    `json:"seatCap"`
	MaxInvitationDays    int    `json:"maxInvitationDays"`
	Revision             int64  `json:"revision"`
	CurrentNoticeVersion *int   `json:"currentNoticeVersion"`
	HasContent           bool   `json:"hasContent"`
	CreatedAt            string `json:"createdAt"`
}

func toProgramJSON(p *store.Program) programJSON {
	out := programJSON{ID: p.ID, WorkspaceID: p.WorkspaceID, Slug: p.Slug, Purpose: p.Purpose, SignupOpen: p.SignupOpen,
		AccessEnabled: p.AccessEnabled, QueueCap: p.QueueCap, HourlyCap: p.HourlyCap, SeatCap: p.SeatCap,
		MaxInvitationDays: p.MaxInvitationDays, Revision: p.Revision, HasContent: p.HasContent,
		CreatedAt: p.CreatedAt.UTC().Format(time.RFC3339)}
	if p.CurrentNoticeVersion > 0 {
		v := p.CurrentNoticeVersion
		out.CurrentNoticeVersion = &v
	}
	return out
}

// handleOwnerProgramsAPI lists the caller's programs.
func (s *Server) handleOwnerProgramsAPI(w http.ResponseWriter, r *http.Request) error {
	ps, err := s.db.OwnerPrograms(r.Context(), ownerActor(r))
	if err != nil {
		return err
	}
	out := make([]programJSON, 0, len(ps))
	for i := range ps {
		out = append(out, toProgramJSON(&ps[i]))
	}
	writeJSON(w, http.StatusOK, map[string]any{"programs": out})
	return nil
}
