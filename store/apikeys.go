package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// APIKey is a machine credential of one organization. Only a hash of the
// secret is stored.
type APIKey struct {
	ID             uuid.UUID  `db:"id"`
	OrganizationID uuid.UUID  `db:"organization_id"`
	Name           string     `db:"name"`
	KeyHash        []byte     `db:"key_hash"`
	KeyPrefix      string     `db:"key_prefix"`
	Scopes         []string   `db:"scopes"`
	CreatedBy      *uuid.UUID `db:"created_by"`
	ExpiresAt      *time.Time `db:"expires_at"`
	RevokedAt      *time.Time `db:"revoked_at"`
	LastUsedAt     *time.Time `db:"last_used_at"`
	CreatedAt      time.Time  `db:"created_at"`
}

const apiKeyCols = `id, organization_id, name, key_hash, key_prefix, scopes, created_by, expires_at, revoked_at, last_used_at, created_at`

// CreateAPIKey inserts a key.
func CreateAPIKey(ctx context.Context, db DBTX, k APIKey) (APIKey, error) {
	rows, _ := db.Query(ctx, `
INSERT INTO api_keys (id, organization_id, name, key_hash, key_prefix, scopes, created_by, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
RETURNING `+apiKeyCols, k.ID, k.OrganizationID, k.Name, k.KeyHash, k.KeyPrefix, k.Scopes, k.CreatedBy, k.ExpiresAt)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[APIKey])
	return out, mapErr(err)
}

// APIKeyByHash is the per-request authentication lookup: one indexed read.
// It returns revoked and expired keys too; the caller decides.
func APIKeyByHash(ctx context.Context, db DBTX, hash []byte) (APIKey, error) {
	rows, _ := db.Query(ctx, `SELECT `+apiKeyCols+` FROM api_keys WHERE key_hash = $1`, hash)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[APIKey])
	return out, mapErr(err)
}

// ListAPIKeys lists the organization's keys that are not revoked, newest first.
func ListAPIKeys(ctx context.Context, db DBTX, orgID uuid.UUID) ([]APIKey, error) {
	rows, _ := db.Query(ctx, `SELECT `+apiKeyCols+` FROM api_keys
 WHERE organization_id = $1 AND revoked_at IS NULL
 ORDER BY created_at DESC, id DESC`, orgID)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[APIKey])
	return out, mapErr(err)
}

// RevokeAPIKey revokes a key at once; ErrNotFound when the organization has
// no such live key.
func RevokeAPIKey(ctx context.Context, db DBTX, orgID, id uuid.UUID) error {
	tag, err := db.Exec(ctx, `UPDATE api_keys SET revoked_at = now()
 WHERE organization_id = $1 AND id = $2 AND revoked_at IS NULL`, orgID, id)
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// TouchAPIKey records a use of the key.
func TouchAPIKey(ctx context.Context, db DBTX, id uuid.UUID, at time.Time) error {
	_, err := db.Exec(ctx, `UPDATE api_keys SET last_used_at = $2 WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2)`, id, at)
	return mapErr(err)
}
