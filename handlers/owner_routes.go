package handlers

import "net/http"

// ownerRoutes registers the owner console (HTML and JSON).
func (s *Server) ownerRoutes(mux *http.ServeMux) {}
