package api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/auth"
	"github.com/fos-dev/fos/email"
	"github.com/fos-dev/fos/store"
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
	members, err := store.ListMembers(r.Context(), s.store.Pool, mustPrincipal(r).OrganizationID)
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
	invs, err := store.ListPendingInvitations(r.Context(), s.store.Pool, mustPrincipal(r).OrganizationID)
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

// invitableRoles are the roles an invitation can grant; owner and admin are
// never handed out by e-mail.
var invitableRoles = []string{store.RoleMember, store.RoleOrganizationManager, store.RoleManager}

// newInvitationToken returns the secret of an accept link and its stored
// hash. It carries 256 random bits, so a fast hash is enough.
func newInvitationToken() (token string, hash []byte) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	token = base64.RawURLEncoding.EncodeToString(b[:])
	return token, hashInvitationToken(token)
}

func hashInvitationToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// invitationAcceptURL is the link of the invitation e-mail (CONTRACT 2).
func (s *Server) invitationAcceptURL(token string) string {
	return strings.TrimRight(s.baseURL, "/") + "/invitations/accept?token=" + url.QueryEscape(token)
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
	role := store.RoleMember
	if req.Role != nil {
		role = *req.Role
		v.oneOf("role", role, invitableRoles...)
	}
	if err := v.err(); err != nil {
		return err
	}
	ctx := r.Context()
	p := mustPrincipal(r)
	if err := s.limits.invitationsOrg.check(p.OrganizationID.String()); err != nil {
		return err
	}
	org, err := store.OrganizationByID(ctx, s.store.Pool, p.OrganizationID)
	if err != nil {
		return err
	}
	token, hash := newInvitationToken()
	inv, err := store.CreateInvitation(ctx, s.store, store.Invitation{
		ID: uuid.New(), OrganizationID: p.OrganizationID, Email: addr, Role: role, TokenHash: hash, InvitedBy: &p.UserID,
	})
	switch {
	case errors.Is(err, store.ErrAlreadyMember):
		return errConflict("a member of the organization already has this e-mail")
	case errors.Is(err, store.ErrInvitationPending):
		return errConflict("a pending invitation already exists for this e-mail")
	case err != nil:
		return err
	}

	// The invitation is committed before the e-mail goes out, and a failed
	// send does not undo it: the answer is still 201. Sending inside the
	// transaction would hold it open across a slow network call, and a
	// transient SMTP failure should not lose the invitation. The failure is
	// logged (never the text: it carries the token) and an admin sees the
	// invitation in the list and can revoke it and invite again.
	link := s.invitationAcceptURL(token)
	msg := email.Message{
		To:      inv.Email,
		Subject: "You are invited to join " + org.Name + " on fos",
		Text:    invitationText(p.Name, org.Name, inv.Role, link, inv.ExpiresAt),
		Links:   []string{link},
	}
	sendCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := s.mailer.Send(sendCtx, msg); err != nil {
		s.log.ErrorContext(ctx, "send invitation e-mail", append(logAttrs(r), "invitation_id", inv.ID, "organization_id", inv.OrganizationID, "error", err.Error())...)
	}
	writeData(w, http.StatusCreated, map[string]any{"id": inv.ID, "email": inv.Email, "role": inv.Role, "expiresAt": inv.ExpiresAt})
	return nil
}

func invitationText(inviter, org, role, link string, expires time.Time) string {
	who := "You have"
	if inviter != "" {
		who = inviter + " has"
	}
	return fmt.Sprintf("%s invited you to join %s on fos as %s.\n\n"+
		"Accept the invitation by signing in (or signing up) with this e-mail address and opening:\n\n%s\n\n"+
		"The link expires on %s. If you did not expect this e-mail, you can ignore it.\n",
		who, org, strings.ReplaceAll(role, "_", " "), link, expires.UTC().Format("2 January 2006 15:04 MST"))
}

// acceptInvitation makes the signed-in user a member. It needs a user token
// only: the organization comes from the invitation.
func (s *Server) acceptInvitation(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	p := principalFrom(ctx)
	notFound := errNotFound("invitation")
	inv, err := store.InvitationByTokenHash(ctx, s.store.Pool, hashInvitationToken(chi.URLParam(r, "token")))
	if errors.Is(err, store.ErrNotFound) {
		return notFound
	}
	if err != nil {
		return err
	}
	// Accepted and revoked invitations are "already used" (spec Errors: 404).
	if inv.Status != store.InvitationPending {
		return notFound
	}
	if !time.Now().Before(inv.ExpiresAt) {
		return errGone("the invitation has expired; ask for a new one")
	}
	user, err := store.UserByID(ctx, s.store.Pool, p.UserID)
	if errors.Is(err, store.ErrNotFound) {
		return errUnauthorized("the user of this token no longer exists")
	}
	if err != nil {
		return err
	}
	if !strings.EqualFold(user.Email, inv.Email) {
		return errForbidden("the invitation was sent to another e-mail address")
	}
	alreadyMember := errConflict("you are already a member of this organization")
	_, err = store.MembershipOf(ctx, s.store.Pool, inv.OrganizationID, user.ID)
	if err == nil {
		return alreadyMember
	}
	if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	inv, err = store.AcceptInvitation(ctx, s.store, inv.ID, user.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		// Another request accepted or revoked it since it was read.
		return notFound
	case errors.Is(err, store.ErrConflict):
		return alreadyMember
	case err != nil:
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
	if err := store.RevokeInvitation(r.Context(), s.store.Pool, mustPrincipal(r).OrganizationID, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return errNotFound("invitation")
		}
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
	ctx := r.Context()
	p := mustPrincipal(r)
	m, err := store.MembershipOf(ctx, s.store.Pool, p.OrganizationID, id)
	if err != nil {
		return notFoundAs(err, "member")
	}
	switch {
	case m.Role == store.RoleOwner:
		return errConflict("the owner cannot be removed from the organization")
	case m.Role == store.RoleAdmin && !p.HasRole(auth.AdminOrOwner...):
		return errForbidden("only an admin or the owner can remove an admin")
	}
	if err := store.RemoveMember(ctx, s.store.Pool, p.OrganizationID, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return errNotFound("member")
		}
		return err
	}
	writeSuccess(w)
	return nil
}
