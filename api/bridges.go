package api

import "github.com/go-chi/chi/v5"

// mountBridges registers the bridge and bridge type endpoints (spec Part 2).
func (s *Server) mountBridges(r chi.Router) {}
