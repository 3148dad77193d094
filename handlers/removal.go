package handlers

import (
	"net/http"
	"strings"

	"admit/views"
)

// validRemovalToken reports whether t has the shape of a removal token: 64
// lowercase hex characters.
func validRemovalToken(t string) bool {
	if len(t) != 64 {
		return false
	}
	for i := 0; i < len(t); i++ {
		if c := t[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

const tokenShapeMessage = "A removal token is 64 characters, digits 0–9 and letters a–f. Copy it from your private link, after the #."

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
	if !validRemovalToken(tok) {
		c := s.chrome(w, r, "Remove my entry")
		return s.render(w, r, http.StatusBadRequest, c, views.Manage(c, views.ManageView{Error: tokenShapeMessage}))
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
	if !validRemovalToken(tok) {
		return invalid(tokenShapeMessage)
	}
	if err := s.db.RemoveByToken(r.Context(), tok); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "processed"})
	return nil
}
