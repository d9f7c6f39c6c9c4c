package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Organization is a tenant. Every other resource belongs to exactly one.
type Organization struct {
	ID        uuid.UUID       `db:"id"`
	Name      string          `db:"name"`
	Slug      string          `db:"slug"`
	Plan      string          `db:"plan"`
	Settings  json.RawMessage `db:"settings"`
	CreatedAt time.Time       `db:"created_at"`
	UpdatedAt time.Time       `db:"updated_at"`
}

// Roles a member can hold.
const (
	RoleOwner               = "owner"
	RoleAdmin               = "admin"
	RoleManager             = "manager"
	RoleOrganizationManager = "organization_manager"
	RoleMember              = "member"
)

const orgCols = `id, name, slug, plan, settings, created_at, updated_at`

// CreateOrganization inserts an organization and makes ownerID its owner, in
// one transaction. The slug is derived from the name and made unique.
func CreateOrganization(ctx context.Context, s *Store, name string, ownerID uuid.UUID) (Organization, error) {
	var org Organization
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		org, err = NewOrganization(ctx, tx, name, ownerID)
		return err
	})
	return org, err
}

// NewOrganization inserts an organization owned by ownerID with db, which
// should be a transaction (the membership must not be left out). A taken
// slug gets a suffix, so a name never conflicts.
func NewOrganization(ctx context.Context, db DBTX, name string, ownerID uuid.UUID) (Organization, error) {
	org, err := insertOrganization(ctx, db, name)
	if err != nil {
		return org, err
	}
	return org, AddMember(ctx, db, org.ID, ownerID, RoleOwner)
}

// insertOrgSQL inserts unless the slug is taken; ON CONFLICT DO NOTHING
// leaves an enclosing transaction usable, so the next candidate can be
// tried (also when a concurrent insert took the slug first).
const insertOrgSQL = `
INSERT INTO organizations (id, name, slug, settings)
VALUES ($1, $2, $3, '{"timezone": "UTC", "default_currency": "USD"}')
ON CONFLICT (slug) DO NOTHING
RETURNING ` + orgCols

// slugAttempts bounds the candidates tried: the base slug, then the base
// with a suffix from the new id, then with random suffixes.
const slugAttempts = 8

func insertOrganization(ctx context.Context, db DBTX, name string) (Organization, error) {
	id := uuid.New()
	base := Slugify(name)
	for i := range slugAttempts {
		slug := base
		switch {
		case i == 1:
			slug = base + "-" + id.String()[:8]
		case i > 1:
			slug = base + "-" + uuid.NewString()[:8]
		}
		rows, _ := db.Query(ctx, insertOrgSQL, id, name, slug)
		org, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Organization])
		if errors.Is(err, pgx.ErrNoRows) {
			continue // slug taken
		}
		return org, mapErr(err)
	}
	return Organization{}, fmt.Errorf("organization slug %q: no free suffix after %d attempts", base, slugAttempts)
}

// OrganizationByID finds an organization.
func OrganizationByID(ctx context.Context, db DBTX, id uuid.UUID) (Organization, error) {
	rows, _ := db.Query(ctx, `SELECT `+orgCols+` FROM organizations WHERE id = $1`, id)
	org, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Organization])
	return org, mapErr(err)
}

// OrganizationPatch holds the fields of an update; nil leaves a field as is.
type OrganizationPatch struct {
	Name     *string
	Settings map[string]any // merged into the existing settings
}

// UpdateOrganization applies a patch.
func UpdateOrganization(ctx context.Context, db DBTX, id uuid.UUID, p OrganizationPatch) (Organization, error) {
	var settings any
	if p.Settings != nil {
		settings = p.Settings
	}
	rows, _ := db.Query(ctx, `
UPDATE organizations
   SET name = coalesce($2, name),
       settings = CASE WHEN $3::jsonb IS NULL THEN settings ELSE settings || $3::jsonb END,
       updated_at = now()
 WHERE id = $1
RETURNING `+orgCols, id, p.Name, settings)
	org, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Organization])
	return org, mapErr(err)
}

// AddMember adds a user to an organization; ErrConflict when already a member.
func AddMember(ctx context.Context, db DBTX, orgID, userID uuid.UUID, role string) error {
	_, err := db.Exec(ctx, `INSERT INTO memberships (organization_id, user_id, role) VALUES ($1, $2, $3)`, orgID, userID, role)
	return mapErr(err)
}

// UserOrganization is an organization as seen from one of its members.
type UserOrganization struct {
	ID   uuid.UUID `db:"id" json:"id"`
	Name string    `db:"name" json:"name"`
	Slug string    `db:"slug" json:"slug"`
	Role string    `db:"role" json:"role"`
}

// OrganizationsOfUser lists the organizations a user belongs to, oldest first.
func OrganizationsOfUser(ctx context.Context, db DBTX, userID uuid.UUID) ([]UserOrganization, error) {
	rows, _ := db.Query(ctx, `
SELECT o.id, o.name, o.slug, m.role
  FROM memberships m JOIN organizations o ON o.id = m.organization_id
 WHERE m.user_id = $1
 ORDER BY m.created_at, o.id`, userID)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[UserOrganization])
	return out, mapErr(err)
}

// Slugify makes a URL-safe slug from a name ("Acme Inc." -> "acme-inc").
func Slugify(name string) string {
	out := make([]byte, 0, len(name))
	dash := false
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			out = append(out, byte(r))
			dash = false
		case r >= 'A' && r <= 'Z':
			out = append(out, byte(r+'a'-'A'))
			dash = false
		default:
			if !dash && len(out) > 0 {
				out = append(out, '-')
				dash = true
			}
		}
	}
	for len(out) > 0 && out[len(out)-1] == '-' {
		out = out[:len(out)-1]
	}
	if len(out) > 60 {
		out = out[:60]
	}
	if len(out) == 0 {
		return "org"
	}
	return string(out)
}

// Membership is a member's role with the member's display name.
type Membership struct {
	Role string
	Name string
}

// MembershipOf is the per-request authorization lookup for users: one
// indexed read. ErrNotFound when the user is not a member.
func MembershipOf(ctx context.Context, db DBTX, orgID, userID uuid.UUID) (Membership, error) {
	var m Membership
	err := db.QueryRow(ctx, `
SELECT m.role, trim(u.first_name || ' ' || u.last_name)
  FROM memberships m JOIN users u ON u.id = m.user_id
 WHERE m.organization_id = $1 AND m.user_id = $2`, orgID, userID).Scan(&m.Role, &m.Name)
	return m, mapErr(err)
}
