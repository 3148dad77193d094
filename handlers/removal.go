package handlers

import (
	"net/http"
	"strings"

	"admit/store"
	"admit/views"
)

// handleManage shows the removal form. The token never reaches the server
// in a URL: manage.js copies it from the fragment into the form.
func (s *Server) handleManage(w http.ResponseWriter, r *http.Request) error {
	noStore(w)
	c := s.chrome(w, r, "Remove my entry")
	return s.render(w, r, http.StatusOK, c, views.Manage(c, views.ManageView{}))
}

// handleRemovePost removes an entry by token (form). The answer is the same
// whether or not the token matched.
func (s *Server) handleRemovePost(w http.ResponseWriter, r *http.Request) error {
	if err := parseForm(r); err != nil {
		return err
	}
	tok, err := formValue(r, "token")
	if err != nil {
		return err
	}
	tok = strings.ToLower(strings.TrimSpace(tok))
	noStore(w)
	if err := store.CheckRemovalToken(tok); err != nil {
		c := s.chrome(w, r, "Remove my entry")
		return s.render(w, r, http.StatusBadRequest, c, views.Manage(c, views.ManageView{Error: store.ErrorMessage(err)}))
	}
	if err := s.db.RemoveByToken(r.Context(), tok); err != nil {
		return err
	}
	c := s.chrome(w, r, "Removal processed")
	return s.render(w, r, http.StatusOK, c, views.Removed(c))
}

// handleRemovalAPI removes an entry by token (JSON).
func (s *Server) handleRemovalAPI(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Token string `json:"token"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	noStore(w)
	tok := strings.ToLower(strings.TrimSpace(body.Token))
	if err := store.CheckRemovalToken(tok); err != nil {
		return err
	}
	if err := s.db.RemoveByToken(r.Context(), tok); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "processed"})
	return nil
}
