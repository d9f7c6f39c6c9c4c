package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// InvitationLifetime is how long an invitation link works (spec Limits).
const InvitationLifetime = 7 * 24 * time.Hour

// Invitation statuses (spec States). An expired invitation keeps the status
// pending; expiry is read from expires_at.
const (
	InvitationPending  = "pending"
	InvitationAccepted = "accepted"
	InvitationRevoked  = "revoked"
)

// Outcomes of CreateInvitation. Both are conflicts (409).
var (
	// ErrAlreadyMember: the e-mail belongs to a member of the organization.
	ErrAlreadyMember = fmt.Errorf("%w: already a member of the organization", ErrConflict)
	// ErrInvitationPending: a live pending invitation exists for the e-mail.
	ErrInvitationPending = fmt.Errorf("%w: a pending invitation exists for the e-mail", ErrConflict)
)

// Invitation asks someone, by e-mail, to join an organization. Only a hash
// of the token in the link is stored.
type Invitation struct {
	ID             uuid.UUID  `db:"id"`
	OrganizationID uuid.UUID  `db:"organization_id"`
	Email          string     `db:"email"`
	Role           string     `db:"role"`
	Status         string     `db:"status"`
	TokenHash      []byte     `db:"token_hash"`
	InvitedBy      *uuid.UUID `db:"invited_by"`
	ExpiresAt      time.Time  `db:"expires_at"`
	AcceptedAt     *time.Time `db:"accepted_at"`
	CreatedAt      time.Time  `db:"created_at"`
	UpdatedAt      time.Time  `db:"updated_at"`
}

const invitationCols = `id, organization_id, email, role, status, token_hash, invited_by, expires_at, accepted_at, created_at, updated_at`

// supersedeExpiredSQL retires an expired pending invitation for the e-mail so
// a new one can take its place (one pending invitation per e-mail). It
// becomes revoked: the spec knows no other end state, and its link already
// stopped working when it expired.
const supersedeExpiredSQL = `
UPDATE invitations SET status = 'revoked', updated_at = now()
 WHERE organization_id = $1 AND lower(email) = lower($2)
   AND status = 'pending' AND expires_at <= now()`

const insertInvitationSQL = `
INSERT INTO invitations (id, organization_id, email, role, token_hash, invited_by, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7))
RETURNING ` + invitationCols

// CreateInvitation inserts a pending invitation expiring after
// InvitationLifetime, in one transaction that first refuses an e-mail that
// belongs to a member (ErrAlreadyMember) and retires an expired pending
// invitation for the same e-mail. A live pending invitation for the e-mail
// is ErrInvitationPending; the partial unique index decides, so two
// concurrent invitations cannot both be created.
func CreateInvitation(ctx context.Context, s *Store, inv Invitation) (Invitation, error) {
	var out Invitation
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		member, err := IsMemberEmail(ctx, tx, inv.OrganizationID, inv.Email)
		if err != nil {
			return err
		}
		if member {
			return ErrAlreadyMember
		}
		if _, err := tx.Exec(ctx, supersedeExpiredSQL, inv.OrganizationID, inv.Email); err != nil {
			return mapErr(err)
		}
		rows, _ := tx.Query(ctx, insertInvitationSQL, inv.ID, inv.OrganizationID, inv.Email, inv.Role, inv.TokenHash, inv.InvitedBy, InvitationLifetime.Seconds())
		out, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Invitation])
		if IsConstraint(err, "invitations_pending_email_key") {
			return ErrInvitationPending
		}
		return mapErr(err)
	})
	return out, err
}

// InvitationByTokenHash finds an invitation by the hash of its token, in any
// status and whether expired or not; the caller decides.
func InvitationByTokenHash(ctx context.Context, db DBTX, hash []byte) (Invitation, error) {
	rows, _ := db.Query(ctx, `SELECT `+invitationCols+` FROM invitations WHERE token_hash = $1`, hash)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Invitation])
	return out, mapErr(err)
}

// ListPendingInvitations lists the organization's pending invitations that
// have not expired, newest first.
func ListPendingInvitations(ctx context.Context, db DBTX, orgID uuid.UUID) ([]Invitation, error) {
	rows, _ := db.Query(ctx, `SELECT `+invitationCols+` FROM invitations
 WHERE organization_id = $1 AND status = 'pending' AND expires_at > now()
 ORDER BY created_at DESC, id DESC`, orgID)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[Invitation])
	return out, mapErr(err)
}

// RevokeInvitation revokes a pending invitation; its link stops working.
// ErrNotFound when the organization has no such pending invitation.
func RevokeInvitation(ctx context.Context, db DBTX, orgID, id uuid.UUID) error {
	tag, err := db.Exec(ctx, `UPDATE invitations SET status = 'revoked', updated_at = now()
 WHERE organization_id = $1 AND id = $2 AND status = 'pending'`, orgID, id)
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// claimInvitationSQL moves a live pending invitation to accepted. The status
// guard makes it a claim: of two concurrent accepts the second waits for the
// first's row lock, then finds the row no longer pending and matches nothing.
const claimInvitationSQL = `
UPDATE invitations SET status = 'accepted', accepted_at = now(), updated_at = now()
 WHERE id = $1 AND status = 'pending' AND expires_at > now()
RETURNING ` + invitationCols

// AcceptInvitation claims the invitation and makes userID a member with the
// invited role, in one transaction. ErrNotFound when the invitation is no
// longer pending (or expired meanwhile); ErrConflict when the user is
// already a member, in which case nothing changes.
func AcceptInvitation(ctx context.Context, s *Store, id, userID uuid.UUID) (Invitation, error) {
	var out Invitation
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, claimInvitationSQL, id)
		var err error
		out, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Invitation])
		if err != nil {
			return mapErr(err)
		}
		return AddMember(ctx, tx, out.OrganizationID, userID, out.Role)
	})
	return out, err
}
