package handlers

import (
	"net/http"

	"admit/store"
	"admit/views"
)

// ownedWorkspace returns the workspace at {id} among the caller's current
// workspaces; anything else is the generic 404.
func ownedWorkspace(r *http.Request) (*store.Workspace, error) {
	for _, ws := range workspacesFrom(r.Context()) {
		if ws.ID == r.PathValue("id") {
			return &ws, nil
		}
	}
	return nil, errNotFound
}

// workspaceView is the settings page with the form filled from the saved
// values.
func workspaceView(ws *store.Workspace) views.WorkspaceView {
	return views.WorkspaceView{ID: ws.ID, Name: ws.Name, SavedDisplayName: ws.DisplayName, SavedContact: ws.Contact,
		Form: views.WorkspaceForm{DisplayName: ws.DisplayName, Contact: ws.Contact}}
}

// handleWorkspacePage shows a workspace's display name and privacy contact.
func (s *Server) handleWorkspacePage(w http.ResponseWriter, r *http.Request) error {
	ws, err := ownedWorkspace(r)
	if err != nil {
		return err
	}
	v := workspaceView(ws)
	v.Flash = s.cookieState(r).takeFlash()
	c := s.chrome(r, "Workspace settings · "+ws.DisplayName)
	return s.render(w, r, http.StatusOK, c, views.WorkspacePage(c, v))
}

// handleWorkspaceSettings is the workspace settings form.
func (s *Server) handleWorkspaceSettings(w http.ResponseWriter, r *http.Request) error {
	ws, err := ownedWorkspace(r)
	if err != nil {
		return err
	}
	f, err := readForm(r)
	if err != nil {
		return err
	}
	form := views.WorkspaceForm{DisplayName: f.get("displayName"), Contact: f.get("contact")}
	if f.err == nil {
		display, contact := form.DisplayName, form.Contact
		_, err = s.db.UpdateWorkspace(r.Context(), ownerActor(r), ws.ID,
			store.WorkspaceSettings{DisplayName: &display, Contact: &contact})
		s.forgetQuotes() // the display name may have changed
	} else {
		err = f.err
	}
	if err != nil {
		status, msg, ok := formFailure(err)
		if !ok {
			return err
		}
		v := workspaceView(ws)
		form.Error, form.Field = msg, store.ErrorField(err)
		v.Form = form
		c := s.chrome(r, "Workspace settings · "+ws.DisplayName)
		return s.render(w, r, status, c, views.WorkspacePage(c, v))
	}
	s.cookieState(r).Flash = "Workspace settings saved."
	return redirect(w, r, views.OwnerURL("workspaces", ws.ID))
}
