package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Activity types that the service writes (others, e.g. sync events and
// fulfillment updates, are written by their own code).
const (
	ActivityStatusChange = "status_change"
	ActivityEdit         = "edit"
	ActivityNote         = "note"
)

// Actor types of an activity.
const (
	ActorUser   = "user"
	ActorAPIKey = "api_key"
	ActorSystem = "system"
)

// OrderActivity is one entry of an order's history.
type OrderActivity struct {
	ID             uuid.UUID      `db:"id"`
	OrganizationID uuid.UUID      `db:"organization_id"`
	OrderID        uuid.UUID      `db:"order_id"`
	Type           string         `db:"type"`
	Description    string         `db:"description"`
	ActorType      string         `db:"actor_type"`
	ActorID        *string        `db:"actor_id"`
	ActorName      *string        `db:"actor_name"`
	Metadata       map[string]any `db:"metadata"`
	CreatedAt      time.Time      `db:"created_at"`
}

const orderActivityCols = `id, organization_id, order_id, type, description, actor_type, actor_id, actor_name, metadata, created_at`

// InsertOrderActivity records an activity of an order of the organization
// and returns it as stored. A zero ID is generated; CreatedAt is always the
// database clock (so activities of one transaction stay in order); an empty
// ActorType is "system". ErrNotFound when the organization has no such
// order, so the caller cannot write into another organization's history.
func InsertOrderActivity(ctx context.Context, db DBTX, a OrderActivity) (OrderActivity, error) {
	if a.ID == uuid.Nil {
		a.ID = uuid.New()
	}
	if a.ActorType == "" {
		a.ActorType = ActorSystem
	}
	if a.Metadata == nil {
		a.Metadata = map[string]any{}
	}
	rows, _ := db.Query(ctx, `
INSERT INTO order_activities (id, organization_id, order_id, type, description, actor_type, actor_id, actor_name, metadata)
SELECT $1::uuid, o.organization_id, o.id, $4::text, $5::text, $6::text, $7::text, $8::text, $9::jsonb
  FROM orders o
 WHERE o.organization_id = $2::uuid AND o.id = $3::uuid
RETURNING `+orderActivityCols, a.ID, a.OrganizationID, a.OrderID, a.Type, a.Description, a.ActorType, a.ActorID, a.ActorName, a.Metadata)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[OrderActivity])
	return out, mapErr(err)
}

// OrderActivities lists an order's activities, oldest first. ErrNotFound
// when the organization has no such order.
func OrderActivities(ctx context.Context, db DBTX, orgID, orderID uuid.UUID) ([]OrderActivity, error) {
	b := &pgx.Batch{}
	b.Queue(`SELECT EXISTS (SELECT 1 FROM orders WHERE organization_id = $1 AND id = $2)`, orgID, orderID)
	b.Queue(`SELECT `+orderActivityCols+` FROM order_activities
 WHERE organization_id = $1 AND order_id = $2
 ORDER BY created_at, id`, orgID, orderID)
	br := db.SendBatch(ctx, b)
	defer br.Close()
	var exists bool
	if err := br.QueryRow().Scan(&exists); err != nil {
		return nil, mapErr(err)
	}
	rows, _ := br.Query()
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[OrderActivity])
	if err != nil {
		return nil, mapErr(err)
	}
	if !exists {
		return nil, ErrNotFound
	}
	return out, nil
}
