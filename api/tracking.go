package api

import "github.com/go-chi/chi/v5"

// mountTracking registers the shipment tracking endpoints.
func (s *Server) mountTracking(r chi.Router) {}
