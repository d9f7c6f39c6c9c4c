package api

import "github.com/go-chi/chi/v5"

// mountCarrierAccounts registers the carrier account and carrier_a registration endpoints.
func (s *Server) mountCarrierAccounts(r chi.Router) {}
