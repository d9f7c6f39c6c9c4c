package accounts

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/email"
	"github.com/fos-dev/fos/store"
)

// Organization is the actor's organization.
func (s *Service) Organization(ctx context.Context, actor domain.Actor) (Organization, error) {
	return store.OrganizationByID(ctx, s.store.Pool, actor.OrganizationID)
}

// UpdateOrganization changes the actor's organization (admin or owner).
// A name is trimmed here.
func (s *Service) UpdateOrganization(ctx context.Context, actor domain.Actor, p OrganizationPatch) (Organization, error) {
	if err := requireOperator(actor, adminOrOwner...); err != nil {
		return Organization{}, err
	}
	if p.Name != nil {
		trimmed := strings.TrimSpace(*p.Name)
		p.Name = &trimmed
	}
	return store.UpdateOrganization(ctx, s.store.Pool, actor.OrganizationID, p)
}

// Members lists the organization's members, oldest membership first.
func (s *Service) Members(ctx context.Context, actor domain.Actor) ([]Member, error) {
	if err := requireOperator(actor); err != nil {
		return nil, err
	}
	return store.ListMembers(ctx, s.store.Pool, actor.OrganizationID)
}

// Invitations lists the pending invitations that still work.
func (s *Service) Invitations(ctx context.Context, actor domain.Actor) ([]Invitation, error) {
	if err := requireOperator(actor); err != nil {
		return nil, err
	}
	return store.ListPendingInvitations(ctx, s.store.Pool, actor.OrganizationID)
}

// InviteInput names who is invited, with what role (an InvitableRoles
// one), already checked for shape.
type InviteInput struct {
	Email string
	Role  string
}

// NewInvitationToken returns the secret of an accept link and its stored
// hash. It carries 256 random bits, so a fast hash is enough.
func NewInvitationToken() (token string, hash []byte) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	token = base64.RawURLEncoding.EncodeToString(b[:])
	return token, InvitationTokenHash(token)
}

// InvitationTokenHash is the stored hash of an invitation's token.
func InvitationTokenHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// invitationAcceptURL is the link of the invitation e-mail (CONTRACT 2).
func (s *Service) invitationAcceptURL(token string) string {
	return strings.TrimRight(s.baseURL, "/") + "/invitations/accept?token=" + url.QueryEscape(token)
}

// Invite invites an e-mail address into the actor's organization and
// e-mails the accept link. A member with that e-mail, or a pending
// invitation for it, is a Conflict.
//
// The invitation is committed before the e-mail goes out, and a failed
// send does not undo it. Sending inside the transaction would hold it open
// across a slow network call, and a transient SMTP failure should not lose
// the invitation. The failure is logged (never the text: it carries the
// token) and an admin sees the invitation in the list and can revoke it and
// invite again.
func (s *Service) Invite(ctx context.Context, actor domain.Actor, in InviteInput) (Invitation, error) {
	if err := requireOperator(actor, adminOwnerOrManager...); err != nil {
		return Invitation{}, err
	}
	if s.inviteLim != nil {
		if err := s.inviteLim(actor.OrganizationID.String()); err != nil {
			return Invitation{}, err
		}
	}
	org, err := store.OrganizationByID(ctx, s.store.Pool, actor.OrganizationID)
	if err != nil {
		return Invitation{}, err
	}
	var invitedBy *uuid.UUID
	if actor.Kind == domain.ActorUser {
		id := actor.ID
		invitedBy = &id
	}
	token, hash := NewInvitationToken()
	inv, err := store.CreateInvitation(ctx, s.store, store.Invitation{
		ID: uuid.New(), OrganizationID: actor.OrganizationID, Email: in.Email, Role: in.Role, TokenHash: hash, InvitedBy: invitedBy,
	})
	switch {
	case errors.Is(err, store.ErrAlreadyMember):
		return Invitation{}, domain.Conflict("a member of the organization already has this e-mail")
	case errors.Is(err, store.ErrInvitationPending):
		return Invitation{}, domain.Conflict("a pending invitation already exists for this e-mail")
	case err != nil:
		return Invitation{}, err
	}
	link := s.invitationAcceptURL(token)
	msg := email.Message{
		To:      inv.Email,
		Subject: "You are invited to join " + org.Name + " on fos",
		Text:    invitationText(actor.Name, org.Name, inv.Role, link, inv.ExpiresAt),
		Links:   []string{link},
	}
	sendCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := s.mailer.Send(sendCtx, msg); err != nil {
		s.log.ErrorContext(ctx, "send invitation e-mail", "invitation_id", inv.ID, "organization_id", inv.OrganizationID, "error", err.Error())
	}
	return inv, nil
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

// AcceptInvitation makes the user a member of the invitation's
// organization. Only the token is needed: the organization comes from the
// invitation. An unknown, accepted or revoked invitation is not found (the
// specification's "already used"), an expired one Gone, one sent to
// another e-mail Forbidden, and a user already a member a Conflict.
func (s *Service) AcceptInvitation(ctx context.Context, userID uuid.UUID, token string) (Invitation, error) {
	notFound := domain.NotFound("invitation")
	inv, err := store.InvitationByTokenHash(ctx, s.store.Pool, InvitationTokenHash(token))
	if errors.Is(err, store.ErrNotFound) {
		return Invitation{}, notFound
	}
	if err != nil {
		return Invitation{}, err
	}
	if inv.Status != store.InvitationPending {
		return Invitation{}, notFound
	}
	if !time.Now().Before(inv.ExpiresAt) {
		return Invitation{}, domain.Gone("the invitation has expired; ask for a new one")
	}
	user, err := s.userOf(ctx, userID)
	if err != nil {
		return Invitation{}, err
	}
	if !strings.EqualFold(user.Email, inv.Email) {
		return Invitation{}, domain.Forbidden("the invitation was sent to another e-mail address")
	}
	alreadyMember := domain.Conflict("you are already a member of this organization")
	_, err = store.MembershipOf(ctx, s.store.Pool, inv.OrganizationID, user.ID)
	if err == nil {
		return Invitation{}, alreadyMember
	}
	if !errors.Is(err, store.ErrNotFound) {
		return Invitation{}, err
	}
	inv, err = store.AcceptInvitation(ctx, s.store, inv.ID, user.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		// Another request accepted or revoked it since it was read.
		return Invitation{}, notFound
	case errors.Is(err, store.ErrConflict):
		return Invitation{}, alreadyMember
	case err != nil:
		return Invitation{}, err
	}
	return inv, nil
}

// RevokeInvitation revokes a pending invitation of the actor's
// organization.
func (s *Service) RevokeInvitation(ctx context.Context, actor domain.Actor, id uuid.UUID) error {
	if err := requireOperator(actor, adminOwnerOrManager...); err != nil {
		return err
	}
	return notFoundAs(store.RevokeInvitation(ctx, s.store.Pool, actor.OrganizationID, id), "invitation")
}

// RemoveMember removes a member. The owner cannot be removed (Conflict).
// Rule of this project: only an admin or the owner may remove an admin; a
// manager or organization manager trying to is Forbidden. Anyone allowed
// here may remove themselves.
func (s *Service) RemoveMember(ctx context.Context, actor domain.Actor, userID uuid.UUID) error {
	if err := requireOperator(actor, adminOwnerOrManager...); err != nil {
		return err
	}
	m, err := store.MembershipOf(ctx, s.store.Pool, actor.OrganizationID, userID)
	if err != nil {
		return notFoundAs(err, "member")
	}
	isAdmin := actor.Kind == domain.ActorSystem || (actor.Kind == domain.ActorUser && slices.Contains(adminOrOwner, actor.Role))
	switch {
	case m.Role == RoleOwner:
		return domain.Conflict("the owner cannot be removed from the organization")
	case m.Role == RoleAdmin && !isAdmin:
		return domain.Forbidden("only an admin or the owner can remove an admin")
	}
	return notFoundAs(store.RemoveMember(ctx, s.store.Pool, actor.OrganizationID, userID), "member")
}
