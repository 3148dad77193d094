package handlers

import (
	"context"
	"net/http"
	"time"

	"admit/internal/version"
	"admit/views"
)

// handleHome lists the programs open for signup.
func (s *Server) handleHome(w http.ResponseWriter, r *http.Request) error {
	ps, err := s.db.OpenPrograms(r.Context())
	if err != nil {
		return err
	}
	cards := make([]views.ProgramCard, 0, len(ps))
	for _, p := range ps {
		cards = append(cards, views.ProgramCard{Slug: p.Slug, Name: p.Name, Purpose: p.Purpose, Full: p.QueueFull()})
	}
	c := s.chrome(r, "Waitlists")
	return s.render(w, r, http.StatusOK, c, views.Home(c, cards))
}

// handleHealthz answers while the process runs, with the build's version.
func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "version": version.Get()})
}

// handleReadyz answers 200 when the database answers, takes writes and
// nothing else reports a problem, 503 otherwise.
func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.db.Ping(ctx); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": "database"})
		return
	}
	// rule: not ready while writes fail (a full disk answers every write 503)
	if err := s.db.Writable(ctx); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": "database writes are failing"})
		return
	}
	if s.opts.Ready != nil {
		if err := s.opts.Ready(ctx); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": err.Error()})
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}
