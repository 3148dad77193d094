package handlers

import (
	"net/http"
	"time"

	"admit/store"
	"admit/views"
)

// handleOwnerHome is the owner console's start page: the owner's programs
// with their counts by state, and the create-program form.
func (s *Server) handleOwnerHome(w http.ResponseWriter, r *http.Request) error {
	v, err := s.ownerHomeView(r)
	if err != nil {
		return err
	}
	v.Flash = s.cookieState(r).takeFlash()
	c := s.chrome(r, "Owner console")
	return s.render(w, r, http.StatusOK, c, views.OwnerHome(c, *v))
}

// ownerHomeView loads the owner's programs, each with its counts by state,
// and a create-program form with sensible defaults.
func (s *Server) ownerHomeView(r *http.Request) (*views.OwnerHomeView, error) {
	a := ownerActor(r)
	ps, err := s.db.OwnerPrograms(r.Context(), a)
	if err != nil {
		return nil, err
	}
	v := &views.OwnerHomeView{Create: views.ProgramForm{QueueCap: "1000", HourlyCap: "100", SeatCap: "50",
		MaxInvitationDays: "14"}}
	for _, ws := range workspacesFrom(r.Context()) {
		v.Workspaces = append(v.Workspaces, views.OwnerWorkspace{ID: ws.ID, Name: ws.Name, DisplayName: ws.DisplayName})
	}
	if len(v.Workspaces) > 0 {
		v.Create.WorkspaceID = v.Workspaces[0].ID
	}
	for _, p := range ps {
		counts, err := s.db.StateCounts(r.Context(), a, p.ID)
		if err != nil {
			return nil, err
		}
		v.Programs = append(v.Programs, views.OwnerProgramRow{ID: p.ID, Slug: p.Slug, Name: p.Name, Purpose: p.Purpose,
			SignupOpen: p.SignupOpen, Access: p.AccessEnabled, Occupied: p.Occupied, QueueCap: p.QueueCap,
			Retired: p.RetiredAt != nil, Limits: signupLimits(&p), Counts: stateCountsView(counts)})
	}
	v.Backup = s.backupView()
	return v, nil
}

// backupView reports the continuous backup for the owner console.
func (s *Server) backupView() views.BackupView {
	if s.db.Engine() == store.PostgreSQL {
		return views.BackupView{PostgreSQL: true}
	}
	if s.opts.BackupStatus == nil {
		return views.BackupView{}
	}
	st, err := s.opts.BackupStatus()
	b := views.BackupView{Configured: true, Replica: st.Replica, LastSync: st.LastSync,
		VerifiedAt: st.VerifiedAt, NotRestorableSince: st.NotRestorableSince, LastFailedDrill: st.LastFailedDrill}
	if st.Pending && st.Lag > 0 {
		b.Behind = views.Duration(st.Lag)
	}
	if err != nil {
		b.Error = "The backup status could not be read; see the server log."
	}
	return b
}

// workspaceJSON is the API's Workspace. Contact is null until an owner
// sets one.
type workspaceJSON struct {
	ID          string  `json:"id"`
	Name        string  `json:"name"`
	DisplayName string  `json:"displayName"`
	Contact     *string `json:"contact"`
}

func toWorkspaceJSON(ws *store.Workspace) workspaceJSON {
	return workspaceJSON{ID: ws.ID, Name: ws.Name, DisplayName: ws.DisplayName, Contact: nonEmpty(ws.Contact)}
}

// handleOwnerWorkspacesAPI lists the workspaces the caller currently owns.
func (s *Server) handleOwnerWorkspacesAPI(w http.ResponseWriter, r *http.Request) error {
	out := []workspaceJSON{}
	for _, ws := range workspacesFrom(r.Context()) {
		out = append(out, toWorkspaceJSON(&ws))
	}
	writeJSON(w, http.StatusOK, map[string]any{"workspaces": out})
	return nil
}

// handlePatchWorkspaceAPI changes a workspace's display name and privacy
// contact (PATCH /api/owner/workspaces/{id}): 200 Workspace.
func (s *Server) handlePatchWorkspaceAPI(w http.ResponseWriter, r *http.Request) error {
	var body store.WorkspaceSettings
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	ws, err := s.db.UpdateWorkspace(r.Context(), ownerActor(r), r.PathValue("id"), body)
	if err != nil {
		return err
	}
	s.forgetQuotes() // the display name may have changed
	writeJSON(w, http.StatusOK, toWorkspaceJSON(ws))
	return nil
}

// programJSON is the API's Program.
type programJSON struct {
	ID                   string `json:"id"`
	WorkspaceID          string `json:"workspaceId"`
	Slug                 string `json:"slug"`
	Name                 string `json:"name"`
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
	// RetiredAt is present only once the program is retired (docs/API.md#shapes).
	RetiredAt *string `json:"retiredAt,omitempty"`
}

func toProgramJSON(p *store.Program) programJSON {
	out := programJSON{ID: p.ID, WorkspaceID: p.WorkspaceID, Slug: p.Slug, Name: p.Name, Purpose: p.Purpose, SignupOpen: p.SignupOpen,
		AccessEnabled: p.AccessEnabled, QueueCap: p.QueueCap, HourlyCap: p.HourlyCap, SeatCap: p.SeatCap,
		MaxInvitationDays: p.MaxInvitationDays, Revision: p.Revision, HasContent: p.HasContent,
		CreatedAt: p.CreatedAt.UTC().Format(time.RFC3339)}
	if p.RetiredAt != nil {
		t := p.RetiredAt.UTC().Format(time.RFC3339)
		out.RetiredAt = &t
	}
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
