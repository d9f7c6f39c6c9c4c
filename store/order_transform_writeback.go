package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/fos-dev/fos/platforms"
)

// OrderTransformActivityType is the order activity an after_sync
// transformation's write-back records (one per order and sync page; its
// id is deterministic, so a replayed page writes an order back once).
const OrderTransformActivityType = "transform"

// OrderBatchProblem says why UpsertOrderBatch would refuse a platform
// order ("" when it would store it).
func OrderBatchProblem(o platforms.Order) string { return batchOrderProblem(o) }

// SyncedOrder is an order a sync page created or updated, with whether
// the page's after_sync write-back was already recorded on it.
type SyncedOrder struct {
	Order
	Rewritten bool `db:"rewritten"`
}

// SyncedOrders returns the orders that carry one of the given sync
// activities (the "sync" activity UpsertOrderBatch records on each order
// a page created or updated; syncIDs[i] goes with markerIDs[i], the id of
// that order's write-back activity), ordered by id.
func SyncedOrders(ctx context.Context, db DBTX, orgID uuid.UUID, syncIDs, markerIDs []uuid.UUID) ([]SyncedOrder, error) {
	if len(syncIDs) != len(markerIDs) {
		return nil, fmt.Errorf("synced orders: %d sync ids for %d marker ids", len(syncIDs), len(markerIDs))
	}
	rows, _ := db.Query(ctx, `
SELECT o.id, o.organization_id, o.bridge_id, o.external_id, o.order_number, o.status, o.payment_status, o.fulfillment_status,
       o.customer, o.customer_email, o.customer_name, o.shipping_address, o.billing_address, o.line_items, o.totals, o.total,
       o.currency, o.tags, o.note, o.metadata, o.source_data, o.ordered_at, o.sent_to_fulfillment, o.sent_to_cart,
       o.created_at, o.updated_at,
       EXISTS (SELECT 1 FROM order_activities m WHERE m.id = ids.marker_id) AS rewritten
  FROM unnest($2::uuid[], $3::uuid[]) AS ids(sync_id, marker_id)
  JOIN order_activities a ON a.id = ids.sync_id AND a.organization_id = $1
  JOIN orders o ON o.id = a.order_id AND o.organization_id = $1
 ORDER BY o.id`, orgID, syncIDs, markerIDs)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[SyncedOrder])
	return out, mapErr(err)
}

// OrderRewrite is the new value of an order's transformable fields (the
// fields PATCH /orders edits, line items aside): every field is written
// as given. ReadAt is the updated_at the values were computed from.
type OrderRewrite struct {
	OrderID         uuid.UUID       `json:"id"`
	ActivityID      uuid.UUID       `json:"activity_id"`
	ReadAt          time.Time       `json:"read_at"`
	Status          string          `json:"status"`
	ShippingAddress json.RawMessage `json:"shipping_address"` // nil or JSON null: none
	Note            *string         `json:"note"`
	Metadata        json.RawMessage `json:"metadata"`
	Tags            []string        `json:"tags"`
	// Fields names the changed fields (API names) and Description says
	// what changed, for the activity.
	Fields      []string `json:"fields"`
	Description string   `json:"description"`
}

// RewriteOrders writes a page's after_sync results back in one statement
// and records an OrderTransformActivityType activity (actorName, meta plus
// the changed fields) on each order written. An order is written only if
// its activity is not recorded yet (a replayed page writes once) and it
// has not changed since ReadAt (a concurrent edit wins; the write is
// dropped). It returns the ids written.
func RewriteOrders(ctx context.Context, db DBTX, orgID uuid.UUID, list []OrderRewrite, actorName string, meta map[string]any) ([]uuid.UUID, error) {
	if len(list) == 0 {
		return nil, nil
	}
	for i := range list {
		if list[i].Tags == nil {
			list[i].Tags = []string{}
		}
	}
	input, err := json.Marshal(list)
	if err != nil {
		return nil, fmt.Errorf("encode order rewrites: %w", err)
	}
	if meta == nil {
		meta = map[string]any{}
	}
	rows, _ := db.Query(ctx, `
WITH input AS (
  SELECT * FROM jsonb_to_recordset($2::jsonb) AS x(id uuid, activity_id uuid, read_at timestamptz, status text,
    shipping_address jsonb, note text, metadata jsonb, tags text[], fields jsonb, description text)
), up AS (
  UPDATE orders o
     SET status = i.status, shipping_address = nullif(i.shipping_address, 'null'::jsonb), note = i.note,
         metadata = coalesce(i.metadata, '{}'::jsonb), tags = i.tags, updated_at = now()
    FROM input i
   WHERE o.organization_id = $1 AND o.id = i.id AND o.updated_at = i.read_at
     AND NOT EXISTS (SELECT 1 FROM order_activities m WHERE m.id = i.activity_id)
  RETURNING o.id, i.activity_id, i.fields, i.description
), acts AS (
  INSERT INTO order_activities (id, organization_id, order_id, type, description, actor_type, actor_name, metadata)
  SELECT u.activity_id, $1, u.id, $3, u.description, 'system', $4, $5::jsonb || jsonb_build_object('fields', u.fields)
    FROM up u
  ON CONFLICT (id) DO NOTHING
)
SELECT id FROM up ORDER BY id`, orgID, input, OrderTransformActivityType, actorName, meta)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	return ids, mapErr(err)
}
