package handlers

import "net/http"

// recipientRoutes registers redemption, private content and self-service.
func (s *Server) recipientRoutes(mux *http.ServeMux) {}
