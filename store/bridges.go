package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/secrets"
)

// Bridge statuses.
const (
	BridgeActive       = "active"
	BridgePaused       = "paused"
	BridgeError        = "error"
	BridgeDisconnected = "disconnected"
)

// BridgeStatuses are the four bridge statuses, in spec order.
var BridgeStatuses = []string{BridgeActive, BridgePaused, BridgeError, BridgeDisconnected}

// Bridge is a connection of one organization to an external platform.
//
// Storage format: Config holds the non-secret config keys (camelCase, with
// enabledWebhooks and registeredWebhooks); Credentials holds the secret
// keys as a JSON object sealed with secrets.Box.SealJSON (nil when there are
// none). The full config is the union of both: see BridgeFullConfig and
// SplitBridgeConfig.
type Bridge struct {
	ID             uuid.UUID      `db:"id"`
	OrganizationID uuid.UUID      `db:"organization_id"`
	Type           string         `db:"type"`
	Name           string         `db:"name"`
	Config         map[string]any `db:"config"`
	Credentials    []byte         `db:"credentials"`
	Status         string         `db:"status"`
	LastSyncAt     *time.Time     `db:"last_sync_at"`
	LastError      *string        `db:"last_error"` // why it is in error; cleared by a status change or a completed sync
	CreatedAt      time.Time      `db:"created_at"`
	UpdatedAt      time.Time      `db:"updated_at"`
}

const bridgeCols = `id, organization_id, type, name, config, credentials, status, last_sync_at, last_error, created_at, updated_at`

// BridgeFullConfig returns the bridge's whole config: the stored non-secret
// keys plus the decrypted secret keys (a secret wins on a key clash). The
// result is a fresh map the caller may change.
func BridgeFullConfig(box *secrets.Box, b Bridge) (map[string]any, error) {
	out := make(map[string]any, len(b.Config)+4)
	maps.Copy(out, b.Config)
	if len(b.Credentials) == 0 {
		return out, nil
	}
	if box == nil {
		return nil, errors.New("store: bridge credentials need a secrets box")
	}
	creds, err := box.OpenJSON(b.Credentials, BridgeCredentialsAD(b.OrganizationID, b.ID))
	if err != nil {
		return nil, fmt.Errorf("open credentials of bridge %s: %w", b.ID, err)
	}
	maps.Copy(out, creds)
	return out, nil
}

// SplitBridgeConfig is the inverse of BridgeFullConfig: it splits a full
// (camelCase) config into the non-secret part stored in bridges.config and
// the sealed secret part stored in bridges.credentials. A key is secret when
// platforms.IsSecretField says so. Null values are dropped (a null removes
// a key), as are empty secret values; credentials is nil when no secret is
// left. config is never nil. ad names the bridge (BridgeCredentialsAD).
func SplitBridgeConfig(box *secrets.Box, ad secrets.AD, bridgeType string, full map[string]any) (config map[string]any, credentials []byte, err error) {
	config = map[string]any{}
	secretPart := map[string]any{}
	for k, v := range full {
		if v == nil {
			continue
		}
		if platforms.IsSecretEntry(bridgeType, k, v) {
			if s, ok := v.(string); ok && s == "" {
				continue
			}
			secretPart[k] = v
			continue
		}
		config[k] = v
	}
	if len(secretPart) > 0 {
		if box == nil {
			return nil, nil, errors.New("store: bridge credentials need a secrets box")
		}
		if credentials, err = box.SealJSON(secretPart, ad); err != nil {
			return nil, nil, err
		}
	}
	return config, credentials, nil
}

// PlatformBridge is what a platform connector needs: the bridge with its
// decrypted full config.
func PlatformBridge(box *secrets.Box, b Bridge) (platforms.Bridge, error) {
	cfg, err := BridgeFullConfig(box, b)
	if err != nil {
		return platforms.Bridge{}, err
	}
	return platforms.Bridge{ID: b.ID, OrganizationID: b.OrganizationID, Type: b.Type, Config: cfg}, nil
}

// CreateBridge inserts a bridge. Config and Credentials are stored as given
// (build them with SplitBridgeConfig); an empty Status means active.
func CreateBridge(ctx context.Context, db DBTX, b Bridge) (Bridge, error) {
	if b.Config == nil {
		b.Config = map[string]any{}
	}
	if b.Status == "" {
		b.Status = BridgeActive
	}
	rows, _ := db.Query(ctx, `
INSERT INTO bridges (id, organization_id, type, name, config, credentials, status)
VALUES ($1, $2, $3, $4, $5, $6, $7)
RETURNING `+bridgeCols, b.ID, b.OrganizationID, b.Type, b.Name, b.Config, b.Credentials, b.Status)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Bridge])
	return out, mapErr(err)
}

// BridgeByID finds a bridge of the organization; ErrNotFound otherwise.
func BridgeByID(ctx context.Context, db DBTX, orgID, id uuid.UUID) (Bridge, error) {
	rows, _ := db.Query(ctx, `SELECT `+bridgeCols+` FROM bridges WHERE organization_id = $1 AND id = $2`, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Bridge])
	return out, mapErr(err)
}

// LockBridge is BridgeByID with a row lock (SELECT … FOR UPDATE), for a
// read-modify-write of the config inside a transaction.
func LockBridge(ctx context.Context, db DBTX, orgID, id uuid.UUID) (Bridge, error) {
	rows, _ := db.Query(ctx, `SELECT `+bridgeCols+` FROM bridges WHERE organization_id = $1 AND id = $2 FOR UPDATE`, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Bridge])
	return out, mapErr(err)
}

// BridgeByIDAnyOrganization finds a bridge by id alone. Only for callers
// that know nothing but the bridge id (the inbound webhook endpoint);
// everything else uses BridgeByID.
func BridgeByIDAnyOrganization(ctx context.Context, db DBTX, id uuid.UUID) (Bridge, error) {
	rows, _ := db.Query(ctx, `SELECT `+bridgeCols+` FROM bridges WHERE id = $1`, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Bridge])
	return out, mapErr(err)
}

// BridgesByIDs returns the organization's bridges among ids, by id (ids of
// other organizations or unknown ids are simply absent).
func BridgesByIDs(ctx context.Context, db DBTX, orgID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]Bridge, error) {
	out := map[uuid.UUID]Bridge{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, _ := db.Query(ctx, `SELECT `+bridgeCols+` FROM bridges WHERE organization_id = $1 AND id = ANY($2)`, orgID, ids)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[Bridge])
	if err != nil {
		return nil, mapErr(err)
	}
	for _, b := range list {
		out[b.ID] = b
	}
	return out, nil
}

// BridgeFilter narrows ListBridges; empty strings do not filter.
type BridgeFilter struct {
	Type   string
	Status string
	Limit  int
	Offset int
}

// ListBridges returns one page of the organization's bridges, newest first,
// and the total number matching the filter.
func ListBridges(ctx context.Context, db DBTX, orgID uuid.UUID, f BridgeFilter) ([]Bridge, int, error) {
	const where = ` FROM bridges
 WHERE organization_id = $1
   AND ($2 = '' OR type = $2)
   AND ($3 = '' OR status = $3)`
	var total int
	if err := db.QueryRow(ctx, `SELECT count(*)`+where, orgID, f.Type, f.Status).Scan(&total); err != nil {
		return nil, 0, mapErr(err)
	}
	rows, _ := db.Query(ctx, `SELECT `+bridgeCols+where+`
 ORDER BY created_at DESC, id DESC
 LIMIT $4 OFFSET $5`, orgID, f.Type, f.Status, f.Limit, f.Offset)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[Bridge])
	if err != nil {
		return nil, 0, mapErr(err)
	}
	return out, total, nil
}

// BridgePatch holds the fields of an update; nil leaves a field as is.
type BridgePatch struct {
	Name   *string
	Status *string
	// Config, when not nil, replaces the stored non-secret config, and
	// Credentials then replaces the sealed secrets (nil clears them). Build
	// both from the full config with SplitBridgeConfig. Credentials is
	// ignored when Config is nil.
	Config      map[string]any
	Credentials []byte
}

// UpdateBridge applies a patch and bumps updated_at.
func UpdateBridge(ctx context.Context, db DBTX, orgID, id uuid.UUID, p BridgePatch) (Bridge, error) {
	var config any
	if p.Config != nil {
		config = p.Config
	}
	rows, _ := db.Query(ctx, `
UPDATE bridges
   SET name = coalesce($3, name),
       status = coalesce($4, status),
       last_error = CASE WHEN $4::text IS NULL OR $4::text = status THEN last_error END,
       config = coalesce($5::jsonb, config),
       credentials = CASE WHEN $5::jsonb IS NULL THEN credentials ELSE $6::bytea END,
       updated_at = now()
 WHERE organization_id = $1 AND id = $2
RETURNING `+bridgeCols, orgID, id, p.Name, p.Status, config, p.Credentials)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Bridge])
	return out, mapErr(err)
}

// MergeBridgeConfig merges non-secret keys into the stored config (top-level
// keys are replaced, e.g. enabledWebhooks or registeredWebhooks; a null
// value removes the key). Secret keys are refused: they go through
// SplitBridgeConfig and UpdateBridge.
func MergeBridgeConfig(ctx context.Context, db DBTX, orgID, id uuid.UUID, keys map[string]any) (Bridge, error) {
	set := map[string]any{}
	var remove []string
	for k, v := range keys {
		if platforms.IsSecretField("", k) {
			return Bridge{}, fmt.Errorf("store: MergeBridgeConfig: %q is a secret key", k)
		}
		if v == nil {
			remove = append(remove, k)
			continue
		}
		set[k] = v
	}
	if remove == nil {
		remove = []string{}
	}
	rows, _ := db.Query(ctx, `
UPDATE bridges
   SET config = (config - $4::text[]) || $3::jsonb,
       updated_at = now()
 WHERE organization_id = $1 AND id = $2
RETURNING `+bridgeCols, orgID, id, set, remove)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Bridge])
	return out, mapErr(err)
}

// MarkBridgeSynced records a completed sync at the given time (never moving
// lastSyncAt backwards).
func MarkBridgeSynced(ctx context.Context, db DBTX, orgID, id uuid.UUID, at time.Time) error {
	tag, err := db.Exec(ctx, `UPDATE bridges SET last_sync_at = $3, updated_at = now()
 WHERE organization_id = $1 AND id = $2 AND (last_sync_at IS NULL OR last_sync_at < $3)`, orgID, id, at)
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		if _, err := BridgeByID(ctx, db, orgID, id); err != nil {
			return err
		}
	}
	return nil
}

// DeleteBridge deletes a bridge; the orders it synced are kept (their
// bridge_id becomes NULL). ErrNotFound when the organization has no such
// bridge.
func DeleteBridge(ctx context.Context, db DBTX, orgID, id uuid.UUID) error {
	tag, err := db.Exec(ctx, `DELETE FROM bridges WHERE organization_id = $1 AND id = $2`, orgID, id)
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}
