package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fos-dev/fos/platforms"
)

// Inbound webhook events (CONTRACT 6): stored once per dedupe key before
// the platform gets its 200, relayed to InboundWebhook workflows, and
// marked with the outcome of their processing.

// Webhook event statuses.
const (
	WebhookEventReceived   = "received"
	WebhookEventProcessing = "processing"
	WebhookEventProcessed  = "processed"
	WebhookEventFailed     = "failed"
)

// WebhookEventsChannel is the LISTEN/NOTIFY channel that wakes the relay
// after inserts (the API notifies, debounced, outside the inserts).
const WebhookEventsChannel = "fos_webhook_events"

// WebhookEvent is one stored inbound event.
type WebhookEvent struct {
	ID             uuid.UUID       `db:"id"`
	OrganizationID uuid.UUID       `db:"organization_id"`
	BridgeID       uuid.UUID       `db:"bridge_id"`
	Topic          string          `db:"topic"`
	DedupeKey      string          `db:"dedupe_key"`
	Payload        json.RawMessage `db:"payload"`
	Headers        json.RawMessage `db:"headers"`
	Status         string          `db:"status"`
	Error          *string         `db:"error"`
	Attempts       int             `db:"attempts"`
	RelayedAt      *time.Time      `db:"relayed_at"`
	Result         json.RawMessage `db:"result"`
	CreatedAt      time.Time       `db:"created_at"`
	ProcessedAt    *time.Time      `db:"processed_at"`
}

const webhookEventCols = `id, organization_id, bridge_id, topic, dedupe_key, payload, headers, status, error,
 attempts, relayed_at, result, created_at, processed_at`

// One statement: the bridge check, the insert, or the id of the event
// already stored under the dedupe key. No row comes back when the bridge is
// not active, or when a concurrent transaction stored the key after this
// statement's snapshot (visible to neither half); the caller tells the two
// apart.
const insertWebhookEventSQL = `
WITH b AS (
    SELECT id FROM bridges WHERE id = $3 AND organization_id = $2 AND status = 'active'
), ins AS (
    INSERT INTO webhook_events (id, organization_id, bridge_id, topic, dedupe_key, payload, headers)
    SELECT $1, $2, b.id, $4, $5, $6, $7 FROM b
    ON CONFLICT (bridge_id, dedupe_key) DO NOTHING
    RETURNING id
)
SELECT id, true FROM ins
UNION ALL
SELECT e.id, false FROM webhook_events e, b
 WHERE e.bridge_id = b.id AND e.dedupe_key = $5 AND NOT EXISTS (SELECT 1 FROM ins)`

// InsertActiveBridgeWebhookEvent stores a verified event, in one round
// trip, unless its bridge already has one with the same dedupe key. It
// returns the stored event's id and whether this call stored it (false: a
// redelivery). ErrNotFound when the bridge is not (or no longer) active.
func InsertActiveBridgeWebhookEvent(ctx context.Context, db DBTX, e WebhookEvent) (uuid.UUID, bool, error) {
	if e.Headers == nil {
		e.Headers = json.RawMessage(`{}`)
	}
	for attempt := 0; attempt < 3; attempt++ {
		var id uuid.UUID
		var inserted bool
		err := db.QueryRow(ctx, insertWebhookEventSQL, e.ID, e.OrganizationID, e.BridgeID, e.Topic, e.DedupeKey,
			e.Payload, e.Headers).Scan(&id, &inserted)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23503" { // the bridge was deleted meanwhile
			return uuid.Nil, false, ErrNotFound
		}
		if errors.Is(err, pgx.ErrNoRows) {
			var active bool
			if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM bridges WHERE id = $1 AND organization_id = $2 AND status = 'active')`,
				e.BridgeID, e.OrganizationID).Scan(&active); err != nil {
				return uuid.Nil, false, mapErr(err)
			}
			if !active {
				return uuid.Nil, false, ErrNotFound
			}
			continue // stored concurrently after our snapshot: read it again
		}
		if err != nil {
			return uuid.Nil, false, mapErr(err)
		}
		return id, inserted, nil
	}
	return uuid.Nil, false, fmt.Errorf("store: webhook event %s: dedupe key neither inserted nor found", e.DedupeKey)
}

// WebhookEventByID finds an event of the organization.
func WebhookEventByID(ctx context.Context, db DBTX, orgID, id uuid.UUID) (WebhookEvent, error) {
	rows, _ := db.Query(ctx, `SELECT `+webhookEventCols+` FROM webhook_events WHERE organization_id = $1 AND id = $2`, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[WebhookEvent])
	return out, mapErr(err)
}

// WebhookEventRef is what the relay needs to start an event's workflow.
type WebhookEventRef struct {
	ID             uuid.UUID `db:"id"`
	OrganizationID uuid.UUID `db:"organization_id"`
	BridgeID       uuid.UUID `db:"bridge_id"`
	Topic          string    `db:"topic"`
}

// ClaimWebhookEvents claims up to limit received events whose relay time
// has come, oldest first, for lease: until then no other relay claims them
// (FOR UPDATE SKIP LOCKED, so relays in several processes share the
// queue). The claim is committed at once: no transaction is held while
// the workflows are started.
func ClaimWebhookEvents(ctx context.Context, db DBTX, limit int, lease time.Duration) ([]WebhookEventRef, error) {
	rows, _ := db.Query(ctx, `
UPDATE webhook_events e SET relay_after = now() + $2::interval
  FROM (SELECT id FROM webhook_events
         WHERE status = 'received' AND relay_after <= now()
         ORDER BY relay_after, created_at
         LIMIT $1
         FOR UPDATE SKIP LOCKED) c
 WHERE e.id = c.id
RETURNING e.id, e.organization_id, e.bridge_id, e.topic`, limit, lease)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[WebhookEventRef])
	return out, mapErr(err)
}

// MarkWebhookEventsRelayed records that the events' workflows were started.
// A row still received after recheck is started again (the stable workflow
// id makes that a no-op while the run exists), so an event whose run was
// lost is not forgotten.
func MarkWebhookEventsRelayed(ctx context.Context, db DBTX, ids []uuid.UUID, recheck time.Duration) error {
	_, err := db.Exec(ctx, `UPDATE webhook_events SET relayed_at = now(), relay_after = now() + $2::interval
 WHERE id = ANY($1) AND status = 'received'`, ids, recheck)
	return mapErr(err)
}

// DelayWebhookEvents puts claimed events back in the queue after wait (a
// start that failed, e.g. Temporal unreachable).
func DelayWebhookEvents(ctx context.Context, db DBTX, ids []uuid.UUID, wait time.Duration) error {
	_, err := db.Exec(ctx, `UPDATE webhook_events SET relay_after = now() + $2::interval
 WHERE id = ANY($1) AND status = 'received'`, ids, wait)
	return mapErr(err)
}

// BeginWebhookEventProcessing moves an event to processing and counts the
// attempt. An event already processed is returned unchanged, so a repeated
// run does nothing twice. ErrNotFound when the event is gone.
func BeginWebhookEventProcessing(ctx context.Context, db DBTX, orgID, id uuid.UUID) (WebhookEvent, error) {
	rows, _ := db.Query(ctx, `
UPDATE webhook_events SET status = 'processing', attempts = attempts + 1, error = NULL
 WHERE organization_id = $1 AND id = $2 AND status <> 'processed'
RETURNING `+webhookEventCols, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[WebhookEvent])
	if errors.Is(err, pgx.ErrNoRows) {
		return WebhookEventByID(ctx, db, orgID, id)
	}
	return out, mapErr(err)
}

// FinishWebhookEvent records the outcome of an event's processing:
// processed (with its result) or failed (with the error).
func FinishWebhookEvent(ctx context.Context, db DBTX, orgID, id uuid.UUID, status, errText string, result any) error {
	if status != WebhookEventProcessed && status != WebhookEventFailed {
		return fmt.Errorf("store: FinishWebhookEvent: status %q", status)
	}
	var errArg *string
	if errText != "" {
		errArg = &errText
	}
	tag, err := db.Exec(ctx, `
UPDATE webhook_events SET status = $3, error = $4, result = $5, processed_at = now()
 WHERE organization_id = $1 AND id = $2 AND status <> 'processed'`, orgID, id, status, errArg, result)
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		_, err := WebhookEventByID(ctx, db, orgID, id)
		return err
	}
	return nil
}

// WebhookEventCounts counts events by status (for tests and benchmarks).
func WebhookEventCounts(ctx context.Context, db DBTX, bridgeID uuid.UUID) (map[string]int, error) {
	rows, _ := db.Query(ctx, `SELECT status, count(*) FROM webhook_events WHERE bridge_id = $1 GROUP BY status`, bridgeID)
	out := map[string]int{}
	var status string
	var n int
	_, err := pgx.ForEachRow(rows, []any{&status, &n}, func() error { out[status] = n; return nil })
	return out, mapErr(err)
}

// OrderUpsert is a platform order to create or update on a bridge.
type OrderUpsert struct {
	OrganizationID uuid.UUID
	BridgeID       uuid.UUID
	// NewOrderID is the id a created order gets (deterministic per event,
	// so a retried activity finds what its first attempt created).
	NewOrderID uuid.UUID
	Order      platforms.Order
	// Activity is recorded as a "sync" activity, whether the order was
	// created (metadata created: true) or updated.
	Activity OrderSyncActivity
}

// OrderUpsertOutcome is the result of UpsertPlatformOrder.
type OrderUpsertOutcome struct {
	OrderID       uuid.UUID
	Created       bool
	ChangedFields []string
}

// UpsertPlatformOrder creates the bridge's order with the platform's
// external id, or updates it as a resync does (ApplyOrderSync). It is
// idempotent: u.Activity.ID is recorded once, and a repeated call reports
// Created as the first call did.
func UpsertPlatformOrder(ctx context.Context, s *Store, u OrderUpsert) (OrderUpsertOutcome, error) {
	if u.Order.ExternalID == "" {
		return OrderUpsertOutcome{}, fmt.Errorf("%w: platform order has no id", ErrInvalidInput)
	}
	for attempt := 0; attempt < 2; attempt++ {
		var id uuid.UUID
		err := s.Pool.QueryRow(ctx, `SELECT id FROM orders WHERE organization_id = $1 AND bridge_id = $2 AND external_id = $3`,
			u.OrganizationID, u.BridgeID, u.Order.ExternalID).Scan(&id)
		switch {
		case err == nil:
			var created bool
			switch err := s.Pool.QueryRow(ctx, `SELECT coalesce((metadata->>'created')::boolean, false) FROM order_activities WHERE id = $1 AND order_id = $2`,
				u.Activity.ID, id).Scan(&created); {
			case err == nil && created:
				return OrderUpsertOutcome{OrderID: id, Created: true, ChangedFields: []string{}}, nil
			case err != nil && !errors.Is(err, pgx.ErrNoRows):
				return OrderUpsertOutcome{}, mapErr(err)
			}
			out, err := ApplyOrderSync(ctx, s, OrderSyncUpdate{
				OrganizationID: u.OrganizationID, OrderID: id, BridgeID: u.BridgeID, Order: u.Order, Activity: u.Activity,
			})
			if errors.Is(err, ErrNotFound) {
				continue // deleted meanwhile: create it again
			}
			if err != nil {
				return OrderUpsertOutcome{}, err
			}
			return OrderUpsertOutcome{OrderID: id, ChangedFields: out.ChangedFields}, nil
		case !errors.Is(err, pgx.ErrNoRows):
			return OrderUpsertOutcome{}, mapErr(err)
		}
		err = createPlatformOrder(ctx, s, u)
		if errors.Is(err, ErrConflict) {
			continue // created concurrently: update it
		}
		if err != nil {
			return OrderUpsertOutcome{}, err
		}
		return OrderUpsertOutcome{OrderID: u.NewOrderID, Created: true, ChangedFields: []string{}}, nil
	}
	return OrderUpsertOutcome{}, fmt.Errorf("store: order %s of bridge %s changed under the upsert", u.Order.ExternalID, u.BridgeID)
}

// createPlatformOrder inserts the order, its "sync" activity (created: true)
// and the bridge's last_sync_at in one transaction.
func createPlatformOrder(ctx context.Context, s *Store, u OrderUpsert) error {
	row, err := orderSyncRowFrom(u.Order)
	if err != nil {
		return err
	}
	status := row.Status
	if status == "" {
		status = platforms.StatusPending
	}
	o := Order{
		ID: u.NewOrderID, OrganizationID: u.OrganizationID, BridgeID: &u.BridgeID, ExternalID: u.Order.ExternalID,
		OrderNumber: row.OrderNumber, Status: status, PaymentStatus: row.PaymentStatus, FulfillmentStatus: row.FulfillmentStatus,
		Customer: row.Customer, CustomerEmail: u.Order.Customer.Email, CustomerName: syncCustomerName(u.Order.Customer),
		ShippingAddress: row.ShippingAddress, BillingAddress: row.BillingAddress, LineItems: row.LineItems, Totals: row.Totals,
		Total: u.Order.Totals.Total, Currency: row.Currency, Tags: row.Tags, SourceData: row.SourceData, OrderedAt: row.OrderedAt,
	}
	if u.Order.Note != "" {
		o.Note = &u.Order.Note
	}
	return s.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := CreateOrder(ctx, tx, o); err != nil {
			return err
		}
		meta := make(map[string]any, len(u.Activity.Metadata)+2)
		for k, v := range u.Activity.Metadata {
			meta[k] = v
		}
		meta["created"] = true
		meta["changedFields"] = []string{}
		if err := insertOrderSyncActivity(ctx, tx, u.OrganizationID, u.NewOrderID, OrderSyncActivityType, u.Activity, meta); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, touchBridgeSyncSQL, u.BridgeID, u.OrganizationID)
		return mapErr(err)
	})
}

// StaleWebhookEvents lists up to limit events that wait on their
// InboundWebhook run since before cutoff, oldest first, across
// organizations (the reconciler): processing, or received although the
// relay started their run (relayed_at). Since is when the run was started
// (relayed_at, else created_at); RequeueWebhookEvent and
// FailStaleWebhookEvent act only while it is unchanged.
func StaleWebhookEvents(ctx context.Context, db DBTX, cutoff time.Time, limit int) ([]WaitingRow, error) {
	rows, _ := db.Query(ctx, `SELECT organization_id, id, coalesce(relayed_at, created_at) AS since FROM webhook_events
 WHERE (status = 'processing' OR (status = 'received' AND relayed_at IS NOT NULL))
   AND coalesce(relayed_at, created_at) < $1
 ORDER BY reconcile_checked_at NULLS FIRST, coalesce(relayed_at, created_at) LIMIT $2`, cutoff, limit)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[WaitingRow])
	return out, mapErr(err)
}

// Outcomes of SettleStaleWebhookEvent.
const (
	// StaleEventUnchanged: the event moved on meanwhile (processed, or a
	// new run started it); nothing was done.
	StaleEventUnchanged = ""
	// StaleEventRequeued: the event is received again, for the relay now.
	StaleEventRequeued = "requeued"
	// StaleEventFailed: the event had used its attempts and is failed.
	StaleEventFailed = "failed"
)

// SettleStaleWebhookEvent settles an event whose run closed or is missing
// (the reconciler): while it still waits as StaleWebhookEvents listed it
// (since unchanged), it goes back to received for the relay at once,
// counting one more attempt, or, once attempts reached maxAttempts, it is
// failed with "processing stopped: <reason>". reason must be tenant-safe.
func SettleStaleWebhookEvent(ctx context.Context, db DBTX, orgID, id uuid.UUID, since time.Time, maxAttempts int, reason string) (string, error) {
	var outcome string
	err := db.QueryRow(ctx, `
UPDATE webhook_events SET
       status = CASE WHEN attempts + 1 >= $4 THEN 'failed' ELSE 'received' END,
       error = CASE WHEN attempts + 1 >= $4 THEN 'processing stopped: ' || $5::text || '; the event was not processed'
                    ELSE 'previous attempt stopped: ' || $5::text END,
       processed_at = CASE WHEN attempts + 1 >= $4 THEN now() END,
       attempts = attempts + 1,
       relayed_at = NULL,
       relay_after = now()
 WHERE organization_id = $1 AND id = $2 AND status IN ('received', 'processing')
   AND coalesce(relayed_at, created_at) = $3
RETURNING CASE WHEN status = 'failed' THEN 'failed' ELSE 'requeued' END`, orgID, id, since, maxAttempts, reason).Scan(&outcome)
	if errors.Is(err, pgx.ErrNoRows) {
		return StaleEventUnchanged, nil
	}
	return outcome, mapErr(err)
}
