package api

import "github.com/go-chi/chi/v5"

// mountRateComparisons registers the rate comparison endpoints.
func (s *Server) mountRateComparisons(r chi.Router) {}
