package api

import "github.com/go-chi/chi/v5"

// mountPickups registers the pickup endpoints.
func (s *Server) mountPickups(r chi.Router) {}
