package api

import (
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/accounts"
	"github.com/fos-dev/fos/auth"
)

// mountOrganizations registers the organization, member and invitation
// endpoints (spec Part 1, Organizations).
func (s *Server) mountOrganizations(r chi.Router) {
	r.Get("/organizations", s.h(s.getOrganization))
	r.With(s.roles(auth.AdminOrOwner...)).Patch("/organizations", s.h(s.updateOrganization))

	// Any member may read; API keys cannot call the member endpoints (CONTRACT 3).
	read := r.With(s.userOnly)
	read.Get("/organizations/members", s.h(s.listMembers))
	read.Get("/organizations/members/invitations", s.h(s.listInvitations))
	manage := r.With(s.roles(auth.AdminOwnerOrManager...))
	manage.Post("/organizations/members/invite", s.h(s.inviteMember))
	manage.Delete("/organizations/members/invite/{id}", s.h(s.revokeInvitation))
	manage.Delete("/organizations/members/{userId}", s.h(s.removeMember))
}

// mountInvitationAccept registers POST /organizations/members/invite/{token}/accept,
// which needs a user token but no organization header.
func (s *Server) mountInvitationAccept(r chi.Router) {
	r.Post("/organizations/members/invite/{token}/accept", s.h(s.acceptInvitation))
}

func (s *Server) getOrganization(w http.ResponseWriter, r *http.Request) error {
	org, err := s.Accounts.Organization(r.Context(), actorOf(r))
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
	org, err := s.Accounts.UpdateOrganization(r.Context(), actorOf(r), accounts.OrganizationPatch{Name: req.Name, Settings: req.Settings})
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toOrganizationJSON(org))
	return nil
}

// memberJSON is the spec's Member; id is the user id, created_at is when the
// membership was created.
type memberJSON struct {
	ID        uuid.UUID `json:"id"`
	FirstName string    `json:"first_name"`
	LastName  string    `json:"last_name"`
	Email     string    `json:"email"`
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"created_at"`
}

func (s *Server) listMembers(w http.ResponseWriter, r *http.Request) error {
	members, err := s.Accounts.Members(r.Context(), actorOf(r))
	if err != nil {
		return err
	}
	out := make([]memberJSON, 0, len(members))
	for _, m := range members {
		out = append(out, memberJSON{ID: m.ID, FirstName: m.FirstName, LastName: m.LastName, Email: m.Email, Role: m.Role, CreatedAt: m.CreatedAt})
	}
	writeData(w, http.StatusOK, out)
	return nil
}

// invitationJSON is the spec's Invitation list item.
type invitationJSON struct {
	ID        uuid.UUID  `json:"id"`
	Email     string     `json:"email"`
	Role      string     `json:"role"`
	Status    string     `json:"status"`
	InvitedBy *uuid.UUID `json:"invited_by"`
	ExpiresAt time.Time  `json:"expires_at"`
	CreatedAt time.Time  `json:"created_at"`
}

// listInvitations lists the pending invitations that still work.
func (s *Server) listInvitations(w http.ResponseWriter, r *http.Request) error {
	invs, err := s.Accounts.Invitations(r.Context(), actorOf(r))
	if err != nil {
		return err
	}
	out := make([]invitationJSON, 0, len(invs))
	for _, inv := range invs {
		out = append(out, invitationJSON{ID: inv.ID, Email: inv.Email, Role: inv.Role, Status: inv.Status, InvitedBy: inv.InvitedBy, ExpiresAt: inv.ExpiresAt, CreatedAt: inv.CreatedAt})
	}
	writeData(w, http.StatusOK, out)
	return nil
}

type inviteMemberRequest struct {
	Email *string `json:"email"`
	Role  *string `json:"role"`
}

func (s *Server) inviteMember(w http.ResponseWriter, r *http.Request) error {
	var req inviteMemberRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var v validator
	var addr string
	if v.required("email", req.Email) {
		addr = strings.TrimSpace(*req.Email)
		v.email("email", addr)
	}
	role := accounts.RoleMember
	if req.Role != nil {
		role = *req.Role
		v.oneOf("role", role, accounts.InvitableRoles...)
	}
	if err := v.err(); err != nil {
		return err
	}
	inv, err := s.Accounts.Invite(r.Context(), actorOf(r), accounts.InviteInput{Email: addr, Role: role})
	if err != nil {
		return err
	}
	// The answer is 201 even when the e-mail could not be sent (the
	// invitation is listed; accounts.Service.Invite).
	writeData(w, http.StatusCreated, map[string]any{"id": inv.ID, "email": inv.Email, "role": inv.Role, "expiresAt": inv.ExpiresAt})
	return nil
}

// acceptInvitation makes the signed-in user a member. It needs a user token
// only: the organization comes from the invitation.
func (s *Server) acceptInvitation(w http.ResponseWriter, r *http.Request) error {
	inv, err := s.Accounts.AcceptInvitation(r.Context(), principalFrom(r.Context()).UserID, chi.URLParam(r, "token"))
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, map[string]any{"organizationId": inv.OrganizationID, "role": inv.Role})
	return nil
}

func (s *Server) revokeInvitation(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "invitation")
	if err != nil {
		return err
	}
	if err := s.Accounts.RevokeInvitation(r.Context(), actorOf(r), id); err != nil {
		return err
	}
	writeSuccess(w)
	return nil
}

// removeMember removes a member. The owner cannot be removed (409). Rule of
// this project: only an admin or the owner may remove an admin; a manager or
// organization manager trying to is refused with 403. Anyone allowed here
// may remove themselves.
func (s *Server) removeMember(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "userId", "member")
	if err != nil {
		return err
	}
	if err := s.Accounts.RemoveMember(r.Context(), actorOf(r), id); err != nil {
		return err
	}
	writeSuccess(w)
	return nil
}
