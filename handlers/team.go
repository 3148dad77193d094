package handlers

import (
	"net/http"
	"slices"

	"admit/store"
	"admit/views"
)

// teamView reads a workspace's Team page for the owner asking.
func (s *Server) teamView(r *http.Request, ws *store.Workspace) (views.TeamView, error) {
	t, err := s.db.WorkspaceTeam(r.Context(), ownerActor(r), ws.ID)
	if err != nil {
		return views.TeamView{}, err
	}
	v := views.TeamView{WorkspaceID: ws.ID, WorkspaceName: ws.DisplayName}
	active := 0
	for _, m := range t.Members {
		if m.Active {
			active++
		}
	}
	for _, m := range t.Members {
		v.Members = append(v.Members, views.TeamRow{ID: m.ID, Name: m.Name, Email: m.Email, Added: m.CreatedAt, Active: m.Active,
			You: m.You, LastActive: m.LastActiveAt, CanRemove: m.Active && active > 1})
	}
	for _, w := range t.Waiting {
		v.Waiting = append(v.Waiting, views.TeamWaitingRow{Email: w.Email, Name: w.Name, Expires: w.ExpiresAt})
	}
	return v, nil
}

// handleTeamPage is a workspace's Team page (docs/console.md#team).
func (s *Server) handleTeamPage(w http.ResponseWriter, r *http.Request) error {
	ws, err := ownedWorkspace(r)
	if err != nil {
		return err
	}
	v, err := s.teamView(r, ws)
	if err != nil {
		return err
	}
	v.Flash = s.cookieState(r).takeFlash()
	c := s.chrome(r, "Team · "+ws.DisplayName)
	return s.render(w, r, http.StatusOK, c, views.TeamPage(c, v))
}

// handleTeamAdd adds an owner by address: the place waits for the first
// sign-in with it verified. 303 back to the Team page.
func (s *Server) handleTeamAdd(w http.ResponseWriter, r *http.Request) error {
	ws, err := ownedWorkspace(r)
	if err != nil {
		return err
	}
	f, err := readForm(r)
	if err != nil {
		return err
	}
	form := views.TeamAddForm{Email: f.get("email"), Name: f.get("name")}
	if f.err == nil {
		_, err = s.db.InviteOwner(r.Context(), ownerActor(r), ws.ID, form.Email, form.Name)
	} else {
		err = f.err
	}
	if err != nil {
		status, msg, ok := formFailure(err)
		if !ok {
			return err
		}
		v, verr := s.teamView(r, ws)
		if verr != nil {
			return verr
		}
		form.Error = msg
		if store.ErrorField(err) == "name" {
			form.Field = "owner-name"
		}
		v.Form = form
		c := s.chrome(r, "Team · "+ws.DisplayName)
		return s.render(w, r, status, c, views.TeamPage(c, v))
	}
	s.cookieState(r).Flash = "Added. The first sign-in with that address, verified by the identity provider, within 7 days, becomes an owner."
	return redirect(w, r, views.OwnerURL("workspaces", ws.ID, "team"))
}

// teamMember finds the path's member on the Team page's view.
func (s *Server) teamMember(r *http.Request, ws *store.Workspace) (views.TeamRow, error) {
	v, err := s.teamView(r, ws)
	if err != nil {
		return views.TeamRow{}, err
	}
	i := slices.IndexFunc(v.Members, func(m views.TeamRow) bool { return m.ID == r.PathValue("memberId") })
	if i < 0 {
		return views.TeamRow{}, errNotFound
	}
	return v.Members[i], nil
}

// handleTeamRemoveConfirm asks before removing an owner (a page, or the
// dialog's body with JavaScript).
func (s *Server) handleTeamRemoveConfirm(w http.ResponseWriter, r *http.Request) error {
	ws, err := ownedWorkspace(r)
	if err != nil {
		return err
	}
	m, err := s.teamMember(r, ws)
	if err != nil {
		return err
	}
	v := views.TeamRemoveView{WorkspaceID: ws.ID, Member: m}
	c := s.chrome(r, "Remove an owner · "+ws.DisplayName)
	if wantsBlock(r) {
		return s.render(w, r, http.StatusOK, c, views.TeamRemoveBlock(c, v))
	}
	return s.render(w, r, http.StatusOK, c, views.TeamRemovePage(c, v))
}

// handleTeamRemove removes an owner, never the last one: 303 back to the
// Team page (or, for an owner who removed themselves, the console).
func (s *Server) handleTeamRemove(w http.ResponseWriter, r *http.Request) error {
	ws, err := ownedWorkspace(r)
	if err != nil {
		return err
	}
	m, err := s.teamMember(r, ws)
	if err != nil {
		return err
	}
	if _, err := readForm(r); err != nil {
		return err
	}
	if err := s.db.RemoveMember(r.Context(), ownerActor(r), ws.ID, m.ID); err != nil {
		status, msg, ok := formFailure(err)
		if !ok {
			return err
		}
		c := s.chrome(r, "Remove an owner · "+ws.DisplayName)
		return s.render(w, r, status, c, views.TeamRemovePage(c, views.TeamRemoveView{WorkspaceID: ws.ID, Member: m, Error: msg}))
	}
	s.cookieState(r).Flash = m.Label() + " is no longer an owner."
	if m.You {
		return redirect(w, r, "/owner")
	}
	return redirect(w, r, views.OwnerURL("workspaces", ws.ID, "team"))
}
