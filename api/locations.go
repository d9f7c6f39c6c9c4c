package api

import "github.com/go-chi/chi/v5"

// mountLocations registers the location endpoints.
func (s *Server) mountLocations(r chi.Router) {}
