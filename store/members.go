package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Member is a user as a member of one organization. ID is the user id;
// CreatedAt is when the membership was created.
type Member struct {
	ID        uuid.UUID `db:"id"`
	FirstName string    `db:"first_name"`
	LastName  string    `db:"last_name"`
	Email     string    `db:"email"`
	Role      string    `db:"role"`
	CreatedAt time.Time `db:"created_at"`
}

// ListMembers lists the organization's members, oldest membership first.
func ListMembers(ctx context.Context, db DBTX, orgID uuid.UUID) ([]Member, error) {
	rows, _ := db.Query(ctx, `
SELECT u.id, u.first_name, u.last_name, u.email, m.role, m.created_at
  FROM memberships m JOIN users u ON u.id = m.user_id
 WHERE m.organization_id = $1
 ORDER BY m.created_at, u.id`, orgID)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[Member])
	return out, mapErr(err)
}

// IsMemberEmail reports whether a member of the organization has the e-mail
// (case-insensitively).
func IsMemberEmail(ctx context.Context, db DBTX, orgID uuid.UUID, email string) (bool, error) {
	var ok bool
	err := db.QueryRow(ctx, `
SELECT EXISTS (
  SELECT 1 FROM memberships m JOIN users u ON u.id = m.user_id
   WHERE m.organization_id = $1 AND lower(u.email) = lower($2))`, orgID, email).Scan(&ok)
	return ok, mapErr(err)
}

// RemoveMember deletes a membership. The owner's membership is never
// deleted: ErrNotFound when the organization has no such member other than
// the owner (the caller tells the two apart beforehand).
func RemoveMember(ctx context.Context, db DBTX, orgID, userID uuid.UUID) error {
	tag, err := db.Exec(ctx, `DELETE FROM memberships
 WHERE organization_id = $1 AND user_id = $2 AND role <> 'owner'`, orgID, userID)
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}
