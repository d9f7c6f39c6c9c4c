package api

import "github.com/go-chi/chi/v5"

// mountOrders registers the order endpoints (spec Part 1, Orders).
func (s *Server) mountOrders(r chi.Router) {}
