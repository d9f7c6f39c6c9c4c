package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/fos-dev/fos/platforms"
)

// OrderBatch is one page of platform orders to store for a bridge.
type OrderBatch struct {
	OrganizationID uuid.UUID
	BridgeID       uuid.UUID
	Orders         []platforms.Order
	// ActivityID gives the id of the "sync" activity recorded on an order
	// (deterministic per run and page, so a retried page records once).
	ActivityID func(externalID string) uuid.UUID
	// ActorName and Metadata go on every recorded activity; the activity
	// metadata also gets externalId, created and changedFields.
	ActorName string
	Metadata  map[string]any
	// BridgeName names the bridge in the activities' descriptions.
	BridgeName string
	// Cursor, when set, is advanced in the same transaction.
	Cursor *SyncPageAdvance
	// Outcome, when set, makes what the cursor's last_page keeps of the
	// page from the result (default: the result itself).
	Outcome func(OrderBatchResult) any
}

// OrderBatchResult counts what UpsertOrderBatch did. Failed orders are
// those it refused (no external id, a status the service does not know).
type OrderBatchResult struct {
	Fetched   int         `json:"fetched"`
	Created   int         `json:"created"`
	Updated   int         `json:"updated"`
	Unchanged int         `json:"unchanged"`
	Failed    int         `json:"failed"`
	CreatedID []uuid.UUID `json:"createdIds"`
	// UpdatedID are the orders the batch changed.
	UpdatedID []uuid.UUID `json:"updatedIds,omitempty"`
	// Problems names the refused orders (at most a few).
	Problems []string `json:"problems,omitempty"`
}

// batchOrderRow is one input row of upsertOrderBatchSQL (jsonb_to_recordset).
type batchOrderRow struct {
	ID                uuid.UUID       `json:"id"`
	ActivityID        uuid.UUID       `json:"activity_id"`
	ExternalID        string          `json:"external_id"`
	OrderNumber       *string         `json:"order_number"`
	Status            string          `json:"status"`
	PaymentStatus     string          `json:"payment_status"`
	FulfillmentStatus string          `json:"fulfillment_status"`
	Customer          json.RawMessage `json:"customer"`
	CustomerEmail     string          `json:"customer_email"`
	CustomerName      string          `json:"customer_name"`
	ShippingAddress   json.RawMessage `json:"shipping_address"`
	BillingAddress    json.RawMessage `json:"billing_address"`
	LineItems         json.RawMessage `json:"line_items"`
	Totals            json.RawMessage `json:"totals"`
	Total             float64         `json:"total"`
	Currency          string          `json:"currency"`
	Tags              []string        `json:"tags"`
	SourceData        json.RawMessage `json:"source_data"`
	OrderedAt         *time.Time      `json:"ordered_at"`
	// PlatformUpdatedAt is the platform's updated_at of this copy (nil:
	// unknown, never stale).
	PlatformUpdatedAt *time.Time `json:"platform_updated_at"`
}

// upsertOrderBatchSQL stores a page in one statement: prev is the stored
// copy (the statement's snapshot), up inserts new orders and updates
// those that differ and are not older than the stored copy (by the
// platform's updated_at) (an unchanged order is not touched and not returned;
// xmax = 0 tells an insert from an update), acts records a "sync"
// activity on every created or updated order with the fields that changed.
const upsertOrderBatchSQL = `
WITH input AS (
  SELECT * FROM jsonb_to_recordset($3::jsonb) AS x(
    id uuid, activity_id uuid, external_id text, order_number text, status text, payment_status text,
    fulfillment_status text, customer jsonb, customer_email text, customer_name text, shipping_address jsonb,
    billing_address jsonb, line_items jsonb, totals jsonb, total numeric, currency text, tags text[],
    source_data jsonb, ordered_at timestamptz, platform_updated_at timestamptz)
), prev AS (
  SELECT o.* FROM orders o JOIN input i ON o.organization_id = $1 AND o.bridge_id = $2 AND o.external_id = i.external_id
), up AS (
  INSERT INTO orders AS o (id, organization_id, bridge_id, external_id, order_number, status, payment_status, fulfillment_status,
                           customer, customer_email, customer_name, shipping_address, billing_address, line_items, totals,
                           total, currency, tags, source_data, ordered_at, platform_updated_at)
  SELECT i.id, $1, $2, i.external_id, i.order_number, i.status, i.payment_status, i.fulfillment_status,
         i.customer, i.customer_email, i.customer_name, i.shipping_address, i.billing_address, i.line_items, i.totals,
         i.total, i.currency, i.tags, i.source_data, coalesce(i.ordered_at, p.ordered_at, now()), i.platform_updated_at
    FROM input i LEFT JOIN prev p ON p.external_id = i.external_id
  ON CONFLICT (organization_id, bridge_id, external_id) DO UPDATE SET
    order_number = excluded.order_number, status = excluded.status, payment_status = excluded.payment_status,
    fulfillment_status = excluded.fulfillment_status, customer = excluded.customer,
    customer_email = excluded.customer_email, customer_name = excluded.customer_name,
    shipping_address = excluded.shipping_address, billing_address = excluded.billing_address,
    line_items = excluded.line_items, totals = excluded.totals, total = excluded.total,
    currency = excluded.currency, tags = excluded.tags, source_data = excluded.source_data,
    ordered_at = excluded.ordered_at, updated_at = now(),
    platform_updated_at = coalesce(excluded.platform_updated_at, o.platform_updated_at)
  WHERE (o.order_number, o.status, o.payment_status, o.fulfillment_status, o.customer, o.shipping_address,
         o.billing_address, o.line_items, o.totals, o.currency, o.tags, o.source_data, o.ordered_at, o.platform_updated_at)
        IS DISTINCT FROM
        (excluded.order_number, excluded.status, excluded.payment_status, excluded.fulfillment_status, excluded.customer,
         excluded.shipping_address, excluded.billing_address, excluded.line_items, excluded.totals, excluded.currency,
         excluded.tags, excluded.source_data, excluded.ordered_at, coalesce(excluded.platform_updated_at, o.platform_updated_at))
    -- A copy older than the stored one (an earlier fetch committing
    -- later) does not overwrite it.
    AND (excluded.platform_updated_at IS NULL OR o.platform_updated_at IS NULL
         OR excluded.platform_updated_at >= o.platform_updated_at)
  RETURNING o.id, o.external_id, (o.xmax = 0) AS inserted
), changes AS (
  SELECT u.id, u.external_id, u.inserted, i.activity_id,
         CASE WHEN u.inserted THEN '[]'::jsonb ELSE to_jsonb(array_remove(ARRAY[
           CASE WHEN p.order_number IS DISTINCT FROM i.order_number THEN 'order_number' END,
           CASE WHEN p.status IS DISTINCT FROM i.status THEN 'status' END,
           CASE WHEN p.payment_status IS DISTINCT FROM i.payment_status THEN 'payment_status' END,
           CASE WHEN p.fulfillment_status IS DISTINCT FROM i.fulfillment_status THEN 'fulfillment_status' END,
           CASE WHEN p.customer IS DISTINCT FROM i.customer THEN 'customer' END,
           CASE WHEN p.shipping_address IS DISTINCT FROM i.shipping_address THEN 'shipping_address' END,
           CASE WHEN p.billing_address IS DISTINCT FROM i.billing_address THEN 'billing_address' END,
           CASE WHEN p.line_items IS DISTINCT FROM i.line_items THEN 'line_items' END,
           CASE WHEN p.totals IS DISTINCT FROM i.totals THEN 'totals' END,
           CASE WHEN p.currency IS DISTINCT FROM i.currency THEN 'currency' END,
           CASE WHEN p.tags IS DISTINCT FROM i.tags THEN 'tags' END,
           CASE WHEN i.ordered_at IS NOT NULL AND p.ordered_at IS DISTINCT FROM i.ordered_at THEN 'ordered_at' END,
           CASE WHEN p.source_data IS DISTINCT FROM i.source_data THEN 'source_data' END], NULL)) END AS changed
    FROM up u JOIN input i ON i.external_id = u.external_id LEFT JOIN prev p ON p.external_id = u.external_id
), acts AS (
  INSERT INTO order_activities (id, organization_id, order_id, type, description, actor_type, actor_name, metadata)
  SELECT c.activity_id, $1, c.id, 'sync',
         CASE WHEN c.inserted THEN 'Imported from ' || $4 ELSE 'Synced from ' || $4 END,
         'system', $5,
         $6::jsonb || jsonb_build_object('externalId', c.external_id, 'created', c.inserted, 'changedFields', c.changed)
    FROM changes c
  ON CONFLICT (id) DO NOTHING
)
SELECT id, inserted FROM changes`

// UpsertOrderBatch stores a page of platform orders for a bridge in one
// statement keyed by (bridge, external id): new orders are inserted,
// changed ones updated, unchanged ones left alone; a "sync" activity is
// recorded on every created or updated order, and b.Cursor (when set) is
// advanced, all in one transaction. ErrNotFound when the bridge is gone.
func UpsertOrderBatch(ctx context.Context, s *Store, b OrderBatch) (OrderBatchResult, error) {
	res := OrderBatchResult{Fetched: len(b.Orders), CreatedID: []uuid.UUID{}}
	byExt := map[string]int{}
	var rows []batchOrderRow
	for _, o := range b.Orders {
		if problem := batchOrderProblem(o); problem != "" {
			res.Failed++
			if len(res.Problems) < 10 {
				res.Problems = append(res.Problems, problem)
			}
			continue
		}
		r, err := orderSyncRowFrom(o)
		if err != nil {
			return OrderBatchResult{}, err
		}
		row := batchOrderRow{
			ID: uuid.New(), ActivityID: b.ActivityID(o.ExternalID), ExternalID: o.ExternalID,
			OrderNumber: r.OrderNumber, Status: r.Status, PaymentStatus: r.PaymentStatus,
			FulfillmentStatus: r.FulfillmentStatus, Customer: r.Customer, CustomerEmail: o.Customer.Email,
			CustomerName: syncCustomerName(o.Customer), ShippingAddress: r.ShippingAddress,
			BillingAddress: r.BillingAddress, LineItems: r.LineItems, Totals: r.Totals, Total: o.Totals.Total,
			Currency: r.Currency, Tags: r.Tags, SourceData: r.SourceData,
		}
		if !o.OrderedAt.IsZero() {
			t := o.OrderedAt
			row.OrderedAt = &t
		}
		if !o.UpdatedAt.IsZero() {
			t := o.UpdatedAt
			row.PlatformUpdatedAt = &t
		}
		// The same order twice in a page: the later copy wins.
		if i, ok := byExt[o.ExternalID]; ok {
			rows[i] = row
			continue
		}
		byExt[o.ExternalID] = len(rows)
		rows = append(rows, row)
	}
	input, err := json.Marshal(rows)
	if err != nil {
		return OrderBatchResult{}, fmt.Errorf("encode order batch: %w", err)
	}
	meta := b.Metadata
	if meta == nil {
		meta = map[string]any{}
	}
	err = s.InTx(ctx, func(tx pgx.Tx) error {
		// Lock the bridge: a deleted bridge stores nothing (the orders
		// would lose their source at once), and a concurrent delete waits.
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM bridges WHERE organization_id = $1 AND id = $2 FOR SHARE`,
			b.OrganizationID, b.BridgeID).Scan(&one); err != nil {
			return mapErr(err)
		}
		if len(rows) > 0 {
			out, _ := tx.Query(ctx, upsertOrderBatchSQL, b.OrganizationID, b.BridgeID, input, b.BridgeName, b.ActorName, meta)
			type changed struct {
				ID       uuid.UUID `db:"id"`
				Inserted bool      `db:"inserted"`
			}
			list, err := pgx.CollectRows(out, pgx.RowToStructByName[changed])
			if err != nil {
				return mapErr(err)
			}
			for _, c := range list {
				if c.Inserted {
					res.Created++
					res.CreatedID = append(res.CreatedID, c.ID)
				} else {
					res.Updated++
					res.UpdatedID = append(res.UpdatedID, c.ID)
				}
			}
			res.Unchanged = len(rows) - len(list)
		}
		if b.Cursor != nil {
			c := *b.Cursor
			switch {
			case c.LastPage != nil:
			case b.Outcome != nil:
				c.LastPage = b.Outcome(res)
			default:
				c.LastPage = res
			}
			return AdvanceSyncCursor(ctx, tx, c)
		}
		return nil
	})
	if err != nil {
		return OrderBatchResult{}, err
	}
	// Outside the transaction: fresh statistics once the tables grew.
	s.NoteBulkWrite(ctx, "orders", res.Created)
	s.NoteBulkWrite(ctx, "order_activities", res.Created+res.Updated)
	return res, nil
}

// batchOrderProblem says why a platform order cannot be stored ("" when it can).
func batchOrderProblem(o platforms.Order) string {
	switch {
	case o.ExternalID == "":
		return "an order without an external id"
	case !slices.Contains(OrderStatuses, o.Status):
		return fmt.Sprintf("order %s: unknown status %q", o.ExternalID, o.Status)
	case o.PaymentStatus != "" && !slices.Contains(PaymentStatuses, o.PaymentStatus):
		return fmt.Sprintf("order %s: unknown payment status %q", o.ExternalID, o.PaymentStatus)
	case o.FulfillmentStatus != "" && !slices.Contains(FulfillmentStatuses, o.FulfillmentStatus):
		return fmt.Sprintf("order %s: unknown fulfillment status %q", o.ExternalID, o.FulfillmentStatus)
	}
	return ""
}
