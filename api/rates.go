package api

import "github.com/go-chi/chi/v5"

// mountRates registers the rate quote and rate snapshot endpoints.
func (s *Server) mountRates(r chi.Router) {}
