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
	c := s.chrome(r, "Remove my entry")
	return s.render(w, r, http.StatusOK, c, views.Manage(c, views.ManageView{}))
}

// removalRequest is a removal by token, from the form or the JSON body.
type removalRequest struct {
	Token string `json:"token"`
}

// readRemovalForm reads the removal form. The field takes the whole
// private link as well as the bare token: the token is what follows the #.
func readRemovalForm(r *http.Request) (removalRequest, error) {
	f, err := readForm(r)
	if err != nil {
		return removalRequest{}, err
	}
	tok := strings.TrimSpace(f.get("token"))
	if i := strings.LastIndexByte(tok, '#'); i >= 0 && strings.Contains(tok[:i], "/manage/") {
		tok = tok[i+1:]
	}
	return removalRequest{Token: tok}, f.err
}

// removalToken is the request's token as stored: a pasted token may bring
// spaces along, or capitals.
func removalToken(in removalRequest) string { return strings.ToLower(strings.TrimSpace(in.Token)) }

// handleRemovePost removes an entry by token (form). The answer is the same
// whether or not the token matched.
func (s *Server) handleRemovePost(w http.ResponseWriter, r *http.Request) error {
	in, err := readRemovalForm(r)
	if err != nil {
		return err
	}
	tok := removalToken(in)
	noStore(w)
	if err := store.CheckRemovalToken(tok); err != nil {
		c := s.chrome(r, "Remove my entry")
		return s.render(w, r, http.StatusBadRequest, c, views.Manage(c, views.ManageView{Error: store.ErrorMessage(err)}))
	}
	if err := s.db.RemoveByToken(r.Context(), tok); err != nil {
		return err
	}
	forgetRemovalPage(w, s.isHTTPS())
	c := s.chrome(r, "Removal processed")
	return s.render(w, r, http.StatusOK, c, views.Removed(c))
}

// handleRemovalAPI removes an entry by token (JSON).
func (s *Server) handleRemovalAPI(w http.ResponseWriter, r *http.Request) error {
	var in removalRequest
	if err := decodeJSON(r, &in); err != nil {
		return err
	}
	noStore(w)
	tok := removalToken(in)
	if err := store.CheckRemovalToken(tok); err != nil {
		return err
	}
	if err := s.db.RemoveByToken(r.Context(), tok); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "processed"})
	return nil
}

// removedCookie marks, for a minute, that this browser just removed an
// entry. It holds nothing: setting it is a cookie change, on which
// browsers drop the no-store removal page from their back/forward cache,
// so going Back finds a fresh, empty form instead of the pasted token.
const removedCookie = "admit_removed"

// forgetRemovalPage sets removedCookie.
func forgetRemovalPage(w http.ResponseWriter, secure bool) {
	http.SetCookie(w, &http.Cookie{Name: removedCookie, Value: "1", Path: "/manage/", MaxAge: 60, HttpOnly: true,
		Secure: secure, SameSite: http.SameSiteLaxMode})
}
