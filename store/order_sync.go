package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/fos-dev/fos/platforms"
)

// Order activity types written by the order resync.
const (
	OrderSyncActivityType       = "sync"
	OrderSyncFailedActivityType = "sync_failed"
)

// OrderSyncSource is what a resync needs to know about an order: its
// external id and its source bridge. The bridge fields are nil when the
// order has no source bridge any more (the bridge was deleted).
type OrderSyncSource struct {
	OrderID        uuid.UUID  `db:"order_id"`
	OrganizationID uuid.UUID  `db:"organization_id"`
	ExternalID     string     `db:"external_id"`
	BridgeID       *uuid.UUID `db:"bridge_id"`
	BridgeType     *string    `db:"bridge_type"`
	BridgeName     *string    `db:"bridge_name"`
	BridgeStatus   *string    `db:"bridge_status"`
	// BridgeConfig is the non-secret config; BridgeCredentials the sealed
	// secret keys (secrets.Box.OpenJSON). The connector config is the union.
	BridgeConfig      map[string]any `db:"bridge_config"`
	BridgeCredentials []byte         `db:"bridge_credentials"`
}

// HasBridge reports whether the order still has a source bridge.
func (s OrderSyncSource) HasBridge() bool { return s.BridgeID != nil && s.BridgeType != nil }

const orderSyncSourceSQL = `
SELECT o.id AS order_id, o.organization_id, o.external_id,
       b.id AS bridge_id, b.type AS bridge_type, b.name AS bridge_name, b.status AS bridge_status,
       b.config AS bridge_config, b.credentials AS bridge_credentials
FROM orders o
LEFT JOIN bridges b ON b.id = o.bridge_id AND b.organization_id = o.organization_id
WHERE o.id = $1 AND o.organization_id = $2`

// GetOrderSyncSource finds an order of the organization with its source
// bridge. ErrNotFound when the organization has no such order.
func GetOrderSyncSource(ctx context.Context, db DBTX, orgID, orderID uuid.UUID) (OrderSyncSource, error) {
	rows, _ := db.Query(ctx, orderSyncSourceSQL, orderID, orgID)
	src, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[OrderSyncSource])
	return src, mapErr(err)
}

// OrderSyncActivity is the order activity a resync records. ID is chosen by
// the caller and deterministic (one per workflow run), so that a retried
// activity does not record twice.
type OrderSyncActivity struct {
	ID          uuid.UUID
	Description string
	ActorType   string
	ActorID     *string
	ActorName   string
	Metadata    map[string]any
}

// OrderSyncUpdate is the platform's copy of an order to apply.
type OrderSyncUpdate struct {
	OrganizationID uuid.UUID
	OrderID        uuid.UUID
	// BridgeID is the source bridge the order was fetched from; the update
	// applies only while the order still belongs to it.
	BridgeID uuid.UUID
	Order    platforms.Order
	// Activity is recorded as type "sync"; "changedFields" is added to its
	// metadata.
	Activity OrderSyncActivity
}

// OrderSyncOutcome is the result of ApplyOrderSync.
type OrderSyncOutcome struct {
	// ChangedFields names the order fields the sync changed, in
	// OrderSyncFields order.
	ChangedFields []string
	// AlreadyApplied is true when the activity was recorded by an earlier
	// attempt; ChangedFields is then the recorded list and nothing was written.
	AlreadyApplied bool
	// Stale is true when the copy was older (by the platform's updated_at)
	// than the stored one: nothing was written, ChangedFields is empty.
	Stale bool
}

// OrderSyncFields are the order fields a sync may change, by their API
// (request) names, in the order ChangedFields lists them.
var OrderSyncFields = []string{
	"order_number", "status", "payment_status", "fulfillment_status", "customer",
	"shipping_address", "billing_address", "line_items", "totals", "currency",
	"tags", "ordered_at", "source_data",
}

// orderSyncRow is the part of an order a sync compares and writes.
type orderSyncRow struct {
	OrderNumber       *string   `db:"order_number"`
	Status            string    `db:"status"`
	PaymentStatus     string    `db:"payment_status"`
	FulfillmentStatus string    `db:"fulfillment_status"`
	Customer          []byte    `db:"customer"`
	ShippingAddress   []byte    `db:"shipping_address"`
	BillingAddress    []byte    `db:"billing_address"`
	LineItems         []byte    `db:"line_items"`
	Totals            []byte    `db:"totals"`
	Currency          string    `db:"currency"`
	Tags              []string  `db:"tags"`
	SourceData        []byte    `db:"source_data"`
	OrderedAt         time.Time `db:"ordered_at"`
	// PlatformUpdatedAt is not compared (diffOrderSync): it orders writes.
	PlatformUpdatedAt *time.Time `db:"platform_updated_at"`
}

const lockOrderForSyncSQL = `
SELECT order_number, status, payment_status, fulfillment_status, customer,
       shipping_address, billing_address, line_items, totals, currency, tags,
       source_data, ordered_at, platform_updated_at
FROM orders
WHERE id = $1 AND organization_id = $2 AND bridge_id = $3
FOR UPDATE`

const recordedSyncSQL = `
SELECT coalesce(metadata->'changedFields', '[]'::jsonb)
FROM order_activities
WHERE id = $1 AND order_id = $2`

const updateOrderFromSyncSQL = `
UPDATE orders SET
    order_number = $3, status = $4, payment_status = $5, fulfillment_status = $6,
    customer = $7, customer_email = $8, customer_name = $9,
    shipping_address = $10, billing_address = $11, line_items = $12, totals = $13,
    total = $14, currency = $15, tags = $16, source_data = $17, ordered_at = $18,
    platform_updated_at = coalesce($19, platform_updated_at), updated_at = now()
WHERE id = $1 AND organization_id = $2`

const insertOrderSyncActivitySQL = `
INSERT INTO order_activities (id, organization_id, order_id, type, description, actor_type, actor_id, actor_name, metadata)
SELECT $1, o.organization_id, o.id, $4, $5, $6, $7, $8, $9
FROM orders o
WHERE o.id = $3 AND o.organization_id = $2
ON CONFLICT (id) DO NOTHING`

const touchBridgeSyncSQL = `
UPDATE bridges SET last_sync_at = now() WHERE id = $1 AND organization_id = $2`

// ApplyOrderSync writes the platform's copy of an order, records a "sync"
// activity and sets the bridge's last_sync_at, in one transaction. It is
// idempotent: when u.Activity.ID is already recorded it writes nothing and
// returns the recorded changed fields. ErrNotFound when the order is gone or
// no longer belongs to u.BridgeID.
func ApplyOrderSync(ctx context.Context, s *Store, u OrderSyncUpdate) (OrderSyncOutcome, error) {
	next, err := orderSyncRowFrom(u.Order)
	if err != nil {
		return OrderSyncOutcome{}, err
	}
	var out OrderSyncOutcome
	err = s.InTx(ctx, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, lockOrderForSyncSQL, u.OrderID, u.OrganizationID, u.BridgeID)
		cur, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[orderSyncRow])
		if err != nil {
			return mapErr(err)
		}
		if next.OrderedAt.IsZero() {
			next.OrderedAt = cur.OrderedAt
		}

		var recorded []byte
		switch err := tx.QueryRow(ctx, recordedSyncSQL, u.Activity.ID, u.OrderID).Scan(&recorded); {
		case err == nil:
			out.AlreadyApplied = true
			out.ChangedFields = []string{}
			if err := json.Unmarshal(recorded, &out.ChangedFields); err != nil {
				return fmt.Errorf("read recorded sync activity: %w", err)
			}
			return nil
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}

		o := u.Order
		if cur.PlatformUpdatedAt != nil && !o.UpdatedAt.IsZero() && o.UpdatedAt.Before(*cur.PlatformUpdatedAt) {
			// An older copy than the stored one (fetched earlier, committed
			// later): the order keeps the newest platform state.
			out.Stale, out.ChangedFields = true, []string{}
		} else {
			out.ChangedFields = diffOrderSync(cur, next)
			if _, err := tx.Exec(ctx, updateOrderFromSyncSQL, u.OrderID, u.OrganizationID,
				next.OrderNumber, next.Status, next.PaymentStatus, next.FulfillmentStatus,
				next.Customer, o.Customer.Email, syncCustomerName(o.Customer),
				next.ShippingAddress, next.BillingAddress, next.LineItems, next.Totals,
				o.Totals.Total, next.Currency, next.Tags, next.SourceData, next.OrderedAt, next.PlatformUpdatedAt,
			); err != nil {
				return mapErr(err)
			}
		}

		meta := make(map[string]any, len(u.Activity.Metadata)+1)
		maps.Copy(meta, u.Activity.Metadata)
		meta["changedFields"] = out.ChangedFields
		if out.Stale {
			meta["stale"] = true
		}
		if err := insertOrderSyncActivity(ctx, tx, u.OrganizationID, u.OrderID, OrderSyncActivityType, u.Activity, meta); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, touchBridgeSyncSQL, u.BridgeID, u.OrganizationID)
		return mapErr(err)
	})
	if err != nil {
		return OrderSyncOutcome{}, err
	}
	return out, nil
}

// RecordOrderSyncFailure records a "sync_failed" activity on an order. It is
// idempotent (a known a.ID is left as it is) and does nothing when the
// order no longer exists.
func RecordOrderSyncFailure(ctx context.Context, db DBTX, orgID, orderID uuid.UUID, a OrderSyncActivity) error {
	return insertOrderSyncActivity(ctx, db, orgID, orderID, OrderSyncFailedActivityType, a, a.Metadata)
}

func insertOrderSyncActivity(ctx context.Context, db DBTX, orgID, orderID uuid.UUID, typ string, a OrderSyncActivity, meta map[string]any) error {
	if meta == nil {
		meta = map[string]any{}
	}
	_, err := db.Exec(ctx, insertOrderSyncActivitySQL, a.ID, orgID, orderID, typ,
		a.Description, a.ActorType, a.ActorID, a.ActorName, meta)
	return mapErr(err)
}

func syncCustomerName(c platforms.Customer) string {
	return strings.TrimSpace(strings.TrimSpace(c.FirstName) + " " + strings.TrimSpace(c.LastName))
}

// orderSyncRowFrom renders a platform order in the columns' formats.
func orderSyncRowFrom(o platforms.Order) (orderSyncRow, error) {
	var r orderSyncRow
	var err error
	enc := func(v any) []byte {
		if err != nil {
			return nil
		}
		var b []byte
		b, err = json.Marshal(v)
		return b
	}
	if o.OrderNumber != "" {
		r.OrderNumber = &o.OrderNumber
	}
	r.Status = o.Status
	r.PaymentStatus = o.PaymentStatus
	r.FulfillmentStatus = o.FulfillmentStatus
	r.Customer = enc(o.Customer)
	if o.ShippingAddress != nil {
		r.ShippingAddress = enc(o.ShippingAddress)
	}
	if o.BillingAddress != nil {
		r.BillingAddress = enc(o.BillingAddress)
	}
	items := o.LineItems
	if items == nil {
		items = []platforms.LineItem{}
	}
	r.LineItems = enc(items)
	r.Totals = enc(o.Totals)
	r.Currency = o.Currency
	r.Tags = o.Tags
	if r.Tags == nil {
		r.Tags = []string{}
	}
	if o.SourceData != nil {
		r.SourceData = enc(o.SourceData)
	}
	r.OrderedAt = o.OrderedAt
	if !o.UpdatedAt.IsZero() {
		t := o.UpdatedAt
		r.PlatformUpdatedAt = &t
	}
	if err != nil {
		return orderSyncRow{}, fmt.Errorf("encode synced order: %w", err)
	}
	// Columns the platform must fill; keep what the order has otherwise.
	if r.Currency == "" {
		r.Currency = "USD"
	}
	if r.PaymentStatus == "" {
		r.PaymentStatus = platforms.PaymentPending
	}
	if r.FulfillmentStatus == "" {
		r.FulfillmentStatus = platforms.FulfillmentUnfulfilled
	}
	return r, nil
}

// diffOrderSync names the fields that differ between the stored order and
// the platform's copy, in OrderSyncFields order. JSON values are compared by
// content, not by their text.
func diffOrderSync(cur, next orderSyncRow) []string {
	changed := []string{}
	same := map[string]bool{
		"order_number":       syncPtrString(cur.OrderNumber) == syncPtrString(next.OrderNumber),
		"status":             cur.Status == next.Status,
		"payment_status":     cur.PaymentStatus == next.PaymentStatus,
		"fulfillment_status": cur.FulfillmentStatus == next.FulfillmentStatus,
		"customer":           syncSameJSON(cur.Customer, next.Customer),
		"shipping_address":   syncSameJSON(cur.ShippingAddress, next.ShippingAddress),
		"billing_address":    syncSameJSON(cur.BillingAddress, next.BillingAddress),
		"line_items":         syncSameJSON(cur.LineItems, next.LineItems),
		"totals":             syncSameJSON(cur.Totals, next.Totals),
		"currency":           cur.Currency == next.Currency,
		"tags":               syncSameStrings(cur.Tags, next.Tags),
		"ordered_at":         cur.OrderedAt.Truncate(time.Microsecond).Equal(next.OrderedAt.Truncate(time.Microsecond)),
		"source_data":        syncSameJSON(cur.SourceData, next.SourceData),
	}
	for _, f := range OrderSyncFields {
		if !same[f] {
			changed = append(changed, f)
		}
	}
	return changed
}

func syncPtrString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func syncSameStrings(a, b []string) bool { return slices.Equal(a, b) }

// syncSameJSON compares two JSON documents by value; nil and JSON null are equal.
func syncSameJSON(a, b []byte) bool {
	var va, vb any
	if len(a) > 0 {
		if err := json.Unmarshal(a, &va); err != nil {
			return false
		}
	}
	if len(b) > 0 {
		if err := json.Unmarshal(b, &vb); err != nil {
			return false
		}
	}
	return reflect.DeepEqual(va, vb)
}
