package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/fos-dev/fos/secrets"
)

// Embed (spec Part 3, CONTRACT 12): the white-label config, end users and
// their sessions, OAuth states and the event log. End-user webhooks and
// their deliveries are in embed_webhooks.go.

// EmbedConfig is an organization's white-label embed configuration.
type EmbedConfig struct {
	ID                  uuid.UUID      `db:"id"`
	OrganizationID      uuid.UUID      `db:"organization_id"`
	Slug                string         `db:"slug"`
	PublishableKey      string         `db:"publishable_key"`
	Branding            map[string]any `db:"branding"`
	AllowedOrigins      []string       `db:"allowed_origins"`
	AllowedBridgeTypes  []string       `db:"allowed_bridge_types"`
	DefaultDispatcherID *uuid.UUID     `db:"default_dispatcher_id"`
	Settings            map[string]any `db:"settings"`
	EnabledFeatures     []string       `db:"enabled_features"`
	IsActive            bool           `db:"is_active"`
	CreatedAt           time.Time      `db:"created_at"`
	UpdatedAt           time.Time      `db:"updated_at"`
}

const embedConfigCols = `id, organization_id, slug, publishable_key, branding, allowed_origins, allowed_bridge_types,
 default_dispatcher_id, settings, enabled_features, is_active, created_at, updated_at`

func oneEmbedConfig(rows pgx.Rows) (EmbedConfig, error) {
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[EmbedConfig])
	return out, mapErr(err)
}

// EmbedConfigByOrganization is the organization's config; ErrNotFound when
// it has none.
func EmbedConfigByOrganization(ctx context.Context, db DBTX, orgID uuid.UUID) (EmbedConfig, error) {
	rows, _ := db.Query(ctx, `SELECT `+embedConfigCols+` FROM embed_configs WHERE organization_id = $1`, orgID)
	return oneEmbedConfig(rows)
}

// EmbedConfigBySlug finds a config by its slug (any organization).
func EmbedConfigBySlug(ctx context.Context, db DBTX, slug string) (EmbedConfig, error) {
	rows, _ := db.Query(ctx, `SELECT `+embedConfigCols+` FROM embed_configs WHERE slug = $1`, slug)
	return oneEmbedConfig(rows)
}

// EmbedConfigByPublishableKey finds a config by its publishable key.
func EmbedConfigByPublishableKey(ctx context.Context, db DBTX, key string) (EmbedConfig, error) {
	rows, _ := db.Query(ctx, `SELECT `+embedConfigCols+` FROM embed_configs WHERE publishable_key = $1`, key)
	return oneEmbedConfig(rows)
}

// EmbedConfigPatch is an upsert of the config; nil fields keep the stored
// value (or take the default on creation).
type EmbedConfigPatch struct {
	Slug                *string
	Branding            map[string]any
	AllowedOrigins      []string
	AllowedBridgeTypes  []string
	SetDispatcher       bool // DefaultDispatcherID is given (nil clears it)
	DefaultDispatcherID *uuid.UUID
	Settings            map[string]any
	EnabledFeatures     []string
	IsActive            *bool
}

// UpsertEmbedConfig creates the organization's config (with newID, the
// generated slug when none is given, and publishableKey) or patches it; the
// publishable key of an existing config is kept. A slug taken by another
// organization is ErrConflict (embed_configs_slug_key).
func UpsertEmbedConfig(ctx context.Context, db DBTX, orgID, newID uuid.UUID, defaultSlug, publishableKey string, p EmbedConfigPatch) (EmbedConfig, error) {
	var branding, settings any
	if p.Branding != nil {
		branding = p.Branding
	}
	if p.Settings != nil {
		settings = p.Settings
	}
	rows, _ := db.Query(ctx, `
INSERT INTO embed_configs (id, organization_id, slug, publishable_key, branding, allowed_origins, allowed_bridge_types,
                           default_dispatcher_id, settings, enabled_features, is_active)
VALUES ($1, $2, coalesce($3, $4), $5, coalesce($6::jsonb, '{}'), coalesce($7::text[], '{}'), coalesce($8::text[], '{}'),
        $10, coalesce($11::jsonb, '{}'), coalesce($12::text[], '{}'), coalesce($13, true))
ON CONFLICT (organization_id) DO UPDATE SET
    slug = coalesce($3, embed_configs.slug),
    branding = coalesce($6::jsonb, embed_configs.branding),
    allowed_origins = coalesce($7::text[], embed_configs.allowed_origins),
    allowed_bridge_types = coalesce($8::text[], embed_configs.allowed_bridge_types),
    default_dispatcher_id = CASE WHEN $9 THEN $10 ELSE embed_configs.default_dispatcher_id END,
    settings = coalesce($11::jsonb, embed_configs.settings),
    enabled_features = coalesce($12::text[], embed_configs.enabled_features),
    is_active = coalesce($13, embed_configs.is_active),
    updated_at = now()
RETURNING `+embedConfigCols,
		newID, orgID, p.Slug, defaultSlug, publishableKey, branding, p.AllowedOrigins, p.AllowedBridgeTypes,
		p.SetDispatcher, p.DefaultDispatcherID, settings, p.EnabledFeatures, p.IsActive)
	return oneEmbedConfig(rows)
}

// EndUser is a user of a platform customer (one organization), known by
// the customer's own id for them.
type EndUser struct {
	ID             uuid.UUID      `db:"id"`
	OrganizationID uuid.UUID      `db:"organization_id"`
	ExternalID     string         `db:"external_id"`
	Name           *string        `db:"name"`
	Email          *string        `db:"email"`
	Metadata       map[string]any `db:"metadata"`
	CreatedAt      time.Time      `db:"created_at"`
	UpdatedAt      time.Time      `db:"updated_at"`
}

const endUserCols = `id, organization_id, external_id, name, email, metadata, created_at, updated_at`

// UpsertEndUser creates the end user of externalID or updates the given
// fields (nil keeps the stored value).
func UpsertEndUser(ctx context.Context, db DBTX, orgID, newID uuid.UUID, externalID string, name, email *string, metadata map[string]any) (EndUser, error) {
	var meta any
	if metadata != nil {
		meta = metadata
	}
	rows, _ := db.Query(ctx, `
INSERT INTO end_users (id, organization_id, external_id, name, email, metadata)
VALUES ($1, $2, $3, $4, $5, coalesce($6::jsonb, '{}'))
ON CONFLICT (organization_id, external_id) DO UPDATE SET
    name = coalesce($4, end_users.name),
    email = coalesce($5, end_users.email),
    metadata = coalesce($6::jsonb, end_users.metadata),
    updated_at = CASE WHEN ($4::text IS NULL OR $4 = end_users.name) AND ($5::text IS NULL OR $5 = end_users.email) AND $6::jsonb IS NULL
                      THEN end_users.updated_at ELSE now() END
RETURNING `+endUserCols, newID, orgID, externalID, name, email, meta)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[EndUser])
	return out, mapErr(err)
}

// EndUserByID finds an end user of the organization.
func EndUserByID(ctx context.Context, db DBTX, orgID, id uuid.UUID) (EndUser, error) {
	rows, _ := db.Query(ctx, `SELECT `+endUserCols+` FROM end_users WHERE organization_id = $1 AND id = $2`, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[EndUser])
	return out, mapErr(err)
}

// LockEndUser is EndUserByID with a row lock, serializing per-user limits
// (bridges, webhooks) inside a transaction.
func LockEndUser(ctx context.Context, db DBTX, orgID, id uuid.UUID) (EndUser, error) {
	rows, _ := db.Query(ctx, `SELECT `+endUserCols+` FROM end_users WHERE organization_id = $1 AND id = $2 FOR UPDATE`, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[EndUser])
	return out, mapErr(err)
}

// EndUserListItem is an end user with the number of their bridges.
type EndUserListItem struct {
	EndUser
	BridgeCount int `db:"bridge_count"`
}

// ListEndUsers returns one page of the organization's end users, newest
// first, and their total.
func ListEndUsers(ctx context.Context, db DBTX, orgID uuid.UUID, limit, offset int) ([]EndUserListItem, int, error) {
	var total int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM end_users WHERE organization_id = $1`, orgID).Scan(&total); err != nil {
		return nil, 0, mapErr(err)
	}
	rows, _ := db.Query(ctx, `
SELECT u.id, u.organization_id, u.external_id, u.name, u.email, u.metadata, u.created_at, u.updated_at,
       (SELECT count(*) FROM bridges b WHERE b.end_user_id = u.id)::int AS bridge_count
  FROM end_users u
 WHERE u.organization_id = $1
 ORDER BY u.created_at DESC, u.id DESC
 LIMIT $2 OFFSET $3`, orgID, limit, offset)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[EndUserListItem])
	return out, total, mapErr(err)
}

// DeleteEndUser revokes the end user's sessions and deletes them (their
// sessions and webhooks go with them; their bridges stay, with end_user_id
// set to NULL). Run it in a transaction.
func DeleteEndUser(ctx context.Context, db DBTX, orgID, id uuid.UUID) error {
	_, err := DeleteEndUserRevoking(ctx, db, orgID, id)
	return err
}

// DeleteEndUserRevoking is DeleteEndUser answering the ids of the sessions
// it revoked that were still live (not revoked, not expired): those the
// event log records as revoked.
func DeleteEndUserRevoking(ctx context.Context, db DBTX, orgID, id uuid.UUID) ([]uuid.UUID, error) {
	rows, _ := db.Query(ctx, `WITH r AS (
  UPDATE embed_sessions SET revoked_at = now()
   WHERE organization_id = $1 AND end_user_id = $2 AND revoked_at IS NULL
  RETURNING id, expires_at)
SELECT id FROM r WHERE expires_at > now() ORDER BY id`, orgID, id)
	live, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, mapErr(err)
	}
	tag, err := db.Exec(ctx, `DELETE FROM end_users WHERE organization_id = $1 AND id = $2`, orgID, id)
	if err != nil {
		return nil, mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		return nil, ErrNotFound
	}
	return live, nil
}

// EmbedSession is an end user's session; its token is stored hashed.
type EmbedSession struct {
	ID                 uuid.UUID  `db:"id"`
	OrganizationID     uuid.UUID  `db:"organization_id"`
	EndUserID          uuid.UUID  `db:"end_user_id"`
	Kind               string     `db:"kind"`
	Scopes             []string   `db:"scopes"`
	AllowedBridgeTypes []string   `db:"allowed_bridge_types"`
	ExpiresAt          time.Time  `db:"expires_at"`
	RevokedAt          *time.Time `db:"revoked_at"`
	CreatedAt          time.Time  `db:"created_at"`
}

const embedSessionCols = `id, organization_id, end_user_id, kind, scopes, allowed_bridge_types, expires_at, revoked_at, created_at`

// CreateEmbedSession inserts a session under the hash of its token.
func CreateEmbedSession(ctx context.Context, db DBTX, s EmbedSession, tokenHash []byte) (EmbedSession, error) {
	rows, _ := db.Query(ctx, `
INSERT INTO embed_sessions (id, organization_id, end_user_id, token_hash, kind, scopes, allowed_bridge_types, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
RETURNING `+embedSessionCols, s.ID, s.OrganizationID, s.EndUserID, tokenHash, s.Kind, s.Scopes, s.AllowedBridgeTypes, s.ExpiresAt)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[EmbedSession])
	return out, mapErr(err)
}

// EmbedSessionByTokenHash finds a session by its token's hash (one unique
// index lookup), whatever its state.
func EmbedSessionByTokenHash(ctx context.Context, db DBTX, hash []byte) (EmbedSession, error) {
	rows, _ := db.Query(ctx, `SELECT `+embedSessionCols+` FROM embed_sessions WHERE token_hash = $1`, hash)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[EmbedSession])
	return out, mapErr(err)
}

// RevokeEmbedSession revokes a session of the organization (again: no
// change); ErrNotFound when there is none.
func RevokeEmbedSession(ctx context.Context, db DBTX, orgID, id uuid.UUID) (EmbedSession, error) {
	rows, _ := db.Query(ctx, `UPDATE embed_sessions SET revoked_at = coalesce(revoked_at, now())
 WHERE organization_id = $1 AND id = $2 RETURNING `+embedSessionCols, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[EmbedSession])
	return out, mapErr(err)
}

// EndUserBridges are the end user's bridges, newest first.
func EndUserBridges(ctx context.Context, db DBTX, orgID, endUserID uuid.UUID) ([]Bridge, error) {
	rows, _ := db.Query(ctx, `SELECT `+bridgeCols+` FROM bridges
 WHERE organization_id = $1 AND end_user_id = $2 ORDER BY created_at DESC, id DESC`, orgID, endUserID)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[Bridge])
	return out, mapErr(err)
}

// EndUserBridgeByID finds a bridge of the end user; a bridge of anyone
// else is ErrNotFound.
func EndUserBridgeByID(ctx context.Context, db DBTX, orgID, endUserID, id uuid.UUID) (Bridge, error) {
	rows, _ := db.Query(ctx, `SELECT `+bridgeCols+` FROM bridges
 WHERE organization_id = $1 AND end_user_id = $2 AND id = $3`, orgID, endUserID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Bridge])
	return out, mapErr(err)
}

// CountEndUserBridges is the number of the end user's bridges.
func CountEndUserBridges(ctx context.Context, db DBTX, orgID, endUserID uuid.UUID) (int, error) {
	var n int
	err := db.QueryRow(ctx, `SELECT count(*) FROM bridges WHERE organization_id = $1 AND end_user_id = $2`, orgID, endUserID).Scan(&n)
	return n, mapErr(err)
}

// SetBridgeEndUser makes a bridge the end user's.
func SetBridgeEndUser(ctx context.Context, db DBTX, orgID, bridgeID, endUserID uuid.UUID) error {
	tag, err := db.Exec(ctx, `UPDATE bridges SET end_user_id = $3 WHERE organization_id = $1 AND id = $2`, orgID, bridgeID, endUserID)
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// DeleteBridgeWithData deletes a bridge and the orders it synced (their
// shipments keep their rows with order_id NULL, as the schema says).
func DeleteBridgeWithData(ctx context.Context, db DBTX, orgID, id uuid.UUID) error {
	if _, err := db.Exec(ctx, `DELETE FROM orders WHERE organization_id = $1 AND bridge_id = $2`, orgID, id); err != nil {
		return mapErr(err)
	}
	return DeleteBridge(ctx, db, orgID, id)
}

// EmbedOAuthState is a pending storefront_a authorization.
type EmbedOAuthState struct {
	OrganizationID uuid.UUID  `db:"organization_id"`
	BridgeID       uuid.UUID  `db:"bridge_id"`
	EndUserID      *uuid.UUID `db:"end_user_id"`
	SessionID      *uuid.UUID `db:"session_id"`
	Shop           string     `db:"shop"`
	ExpiresAt      time.Time  `db:"expires_at"`
	UsedAt         *time.Time `db:"used_at"`
}

const oauthStateCols = `organization_id, bridge_id, end_user_id, session_id, shop, expires_at, used_at`

// CreateEmbedOAuthState stores a state under its hash.
func CreateEmbedOAuthState(ctx context.Context, db DBTX, hash []byte, s EmbedOAuthState) error {
	_, err := db.Exec(ctx, `INSERT INTO embed_oauth_states (state_hash, organization_id, bridge_id, end_user_id, session_id, shop, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)`, hash, s.OrganizationID, s.BridgeID, s.EndUserID, s.SessionID, s.Shop, s.ExpiresAt)
	return mapErr(err)
}

// EmbedOAuthStateByHash reads a state whatever its use.
func EmbedOAuthStateByHash(ctx context.Context, db DBTX, hash []byte) (EmbedOAuthState, error) {
	rows, _ := db.Query(ctx, `SELECT `+oauthStateCols+` FROM embed_oauth_states WHERE state_hash = $1`, hash)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[EmbedOAuthState])
	return out, mapErr(err)
}

// ConsumeEmbedOAuthState marks a state used, once: a used, expired or
// unknown state is ErrNotFound.
func ConsumeEmbedOAuthState(ctx context.Context, db DBTX, hash []byte, now time.Time) (EmbedOAuthState, error) {
	rows, _ := db.Query(ctx, `UPDATE embed_oauth_states SET used_at = $2
 WHERE state_hash = $1 AND used_at IS NULL AND expires_at > $2 RETURNING `+oauthStateCols, hash, now)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[EmbedOAuthState])
	return out, mapErr(err)
}

// EmbedEvent is an entry of the embed event log.
type EmbedEvent struct {
	ID             uuid.UUID      `db:"id"`
	OrganizationID uuid.UUID      `db:"organization_id"`
	EndUserID      *uuid.UUID     `db:"end_user_id"`
	SessionID      *uuid.UUID     `db:"session_id"`
	EventType      string         `db:"event_type"`
	ResourceType   *string        `db:"resource_type"`
	ResourceID     *string        `db:"resource_id"`
	Metadata       map[string]any `db:"metadata"`
	IPAddress      *string        `db:"ip_address"`
	CreatedAt      time.Time      `db:"created_at"`
}

const embedEventCols = `id, organization_id, end_user_id, session_id, event_type, resource_type, resource_id, metadata, ip_address, created_at`

// InsertEmbedEvent appends to the event log.
func InsertEmbedEvent(ctx context.Context, db DBTX, e EmbedEvent) error {
	if e.Metadata == nil {
		e.Metadata = map[string]any{}
	}
	_, err := db.Exec(ctx, `INSERT INTO embed_events (id, organization_id, end_user_id, session_id, event_type, resource_type, resource_id, metadata, ip_address)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, e.ID, e.OrganizationID, e.EndUserID, e.SessionID, e.EventType, e.ResourceType, e.ResourceID, e.Metadata, e.IPAddress)
	return mapErr(err)
}

// EmbedEventFilter narrows ListEmbedEvents; zero values do not filter.
type EmbedEventFilter struct {
	EventType string
	EndUserID *uuid.UUID
	From, To  *time.Time
	Limit     int
	Offset    int
}

// ListEmbedEvents returns one page of the organization's event log, newest
// first, and the number of entries matching the filter.
func ListEmbedEvents(ctx context.Context, db DBTX, orgID uuid.UUID, f EmbedEventFilter) ([]EmbedEvent, int, error) {
	const where = ` FROM embed_events
 WHERE organization_id = $1
   AND ($2 = '' OR event_type = $2)
   AND ($3::uuid IS NULL OR end_user_id = $3)
   AND ($4::timestamptz IS NULL OR created_at >= $4)
   AND ($5::timestamptz IS NULL OR created_at <= $5)`
	args := []any{orgID, f.EventType, f.EndUserID, f.From, f.To}
	var total int
	if err := db.QueryRow(ctx, `SELECT count(*)`+where, args...).Scan(&total); err != nil {
		return nil, 0, mapErr(err)
	}
	rows, _ := db.Query(ctx, `SELECT `+embedEventCols+where+` ORDER BY created_at DESC, id DESC LIMIT $6 OFFSET $7`,
		append(args, f.Limit, f.Offset)...)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[EmbedEvent])
	return out, total, mapErr(err)
}

// EndUserWebhookSecretAD binds end_user_webhooks.secret to its webhook.
func EndUserWebhookSecretAD(orgID, webhookID uuid.UUID) secrets.AD {
	return secrets.AD{Table: "end_user_webhooks.secret", Org: orgID, Row: webhookID}
}

// EmbedSessionByID finds a session of the organization, whatever its state.
func EmbedSessionByID(ctx context.Context, db DBTX, orgID, id uuid.UUID) (EmbedSession, error) {
	rows, _ := db.Query(ctx, `SELECT `+embedSessionCols+` FROM embed_sessions WHERE organization_id = $1 AND id = $2`, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[EmbedSession])
	return out, mapErr(err)
}

// EmbedSessionScope is a session with what its requests need of the
// organization's embed config (zero values when it has none).
type EmbedSessionScope struct {
	EmbedSession
	HasConfig                bool           `db:"has_config"`
	ConfigAllowedBridgeTypes []string       `db:"config_allowed_bridge_types"`
	ConfigEnabledFeatures    []string       `db:"config_enabled_features"`
	ConfigSettings           map[string]any `db:"config_settings"`
	ConfigAllowedOrigins     []string       `db:"config_allowed_origins"`
}

// embedSessionScopeSQL reads a session with its config; the caller adds
// the WHERE clause.
const embedSessionScopeSQL = `
SELECT s.id, s.organization_id, s.end_user_id, s.kind, s.scopes, s.allowed_bridge_types, s.expires_at, s.revoked_at, s.created_at,
       c.id IS NOT NULL AS has_config,
       coalesce(c.allowed_bridge_types, '{}') AS config_allowed_bridge_types,
       coalesce(c.enabled_features, '{}') AS config_enabled_features,
       coalesce(c.settings, '{}') AS config_settings,
       coalesce(c.allowed_origins, '{}') AS config_allowed_origins
  FROM embed_sessions s LEFT JOIN embed_configs c ON c.organization_id = s.organization_id`

// EmbedSessionScopeByID reads a session of the organization and its
// config in one round trip.
func EmbedSessionScopeByID(ctx context.Context, db DBTX, orgID, id uuid.UUID) (EmbedSessionScope, error) {
	rows, _ := db.Query(ctx, embedSessionScopeSQL+` WHERE s.organization_id = $1 AND s.id = $2`, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[EmbedSessionScope])
	return out, mapErr(err)
}

// EmbedSessionScopeByTokenHash is EmbedSessionScopeByID by the token's
// hash (one unique-index lookup): what authenticating a session request
// reads.
func EmbedSessionScopeByTokenHash(ctx context.Context, db DBTX, hash []byte) (EmbedSessionScope, error) {
	rows, _ := db.Query(ctx, embedSessionScopeSQL+` WHERE s.token_hash = $1`, hash)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[EmbedSessionScope])
	return out, mapErr(err)
}
