package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// End-user webhooks (CONTRACT 7 and 12): the subscriptions, the outbox the
// events are written to in the transaction of the change, and the
// deliveries.

// EndUserWebhook is an end user's webhook subscription. Secret is sealed
// (EndUserWebhookSecretAD).
type EndUserWebhook struct {
	ID                  uuid.UUID `db:"id"`
	OrganizationID      uuid.UUID `db:"organization_id"`
	EndUserID           uuid.UUID `db:"end_user_id"`
	URL                 string    `db:"url"`
	Secret              []byte    `db:"secret"`
	Description         *string   `db:"description"`
	Events              []string  `db:"events"`
	IsActive            bool      `db:"is_active"`
	DisabledReason      *string   `db:"disabled_reason"`
	ConsecutiveFailures int       `db:"consecutive_failures"`
	CreatedAt           time.Time `db:"created_at"`
	UpdatedAt           time.Time `db:"updated_at"`
}

const endUserWebhookCols = `id, organization_id, end_user_id, url, secret, description, events, is_active, disabled_reason, consecutive_failures, created_at, updated_at`

func oneWebhook(rows pgx.Rows) (EndUserWebhook, error) {
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[EndUserWebhook])
	return out, mapErr(err)
}

// CreateEndUserWebhook inserts a webhook.
func CreateEndUserWebhook(ctx context.Context, db DBTX, w EndUserWebhook) (EndUserWebhook, error) {
	rows, _ := db.Query(ctx, `
INSERT INTO end_user_webhooks (id, organization_id, end_user_id, url, secret, description, events, is_active)
VALUES ($1, $2, $3, $4, $5, $6, $7, true)
RETURNING `+endUserWebhookCols, w.ID, w.OrganizationID, w.EndUserID, w.URL, w.Secret, w.Description, w.Events)
	return oneWebhook(rows)
}

// CountEndUserWebhooks is the number of the end user's webhooks.
func CountEndUserWebhooks(ctx context.Context, db DBTX, orgID, endUserID uuid.UUID) (int, error) {
	var n int
	err := db.QueryRow(ctx, `SELECT count(*) FROM end_user_webhooks WHERE organization_id = $1 AND end_user_id = $2`, orgID, endUserID).Scan(&n)
	return n, mapErr(err)
}

// EndUserWebhooks are the end user's webhooks, oldest first.
func EndUserWebhooks(ctx context.Context, db DBTX, orgID, endUserID uuid.UUID) ([]EndUserWebhook, error) {
	rows, _ := db.Query(ctx, `SELECT `+endUserWebhookCols+` FROM end_user_webhooks
 WHERE organization_id = $1 AND end_user_id = $2 ORDER BY created_at, id`, orgID, endUserID)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[EndUserWebhook])
	return out, mapErr(err)
}

// EndUserWebhookByID finds a webhook of the end user; anyone else's is
// ErrNotFound.
func EndUserWebhookByID(ctx context.Context, db DBTX, orgID, endUserID, id uuid.UUID) (EndUserWebhook, error) {
	rows, _ := db.Query(ctx, `SELECT `+endUserWebhookCols+` FROM end_user_webhooks
 WHERE organization_id = $1 AND end_user_id = $2 AND id = $3`, orgID, endUserID, id)
	return oneWebhook(rows)
}

// EndUserWebhookPatch changes a webhook; nil keeps a field.
type EndUserWebhookPatch struct {
	Events   []string
	IsActive *bool
}

// UpdateEndUserWebhook applies a patch. Turning a webhook on clears its
// disabled_reason and failure count.
func UpdateEndUserWebhook(ctx context.Context, db DBTX, orgID, endUserID, id uuid.UUID, p EndUserWebhookPatch) (EndUserWebhook, error) {
	rows, _ := db.Query(ctx, `
UPDATE end_user_webhooks
   SET events = coalesce($4::text[], events),
       is_active = coalesce($5, is_active),
       disabled_reason = CASE WHEN $5 THEN NULL ELSE disabled_reason END,
       consecutive_failures = CASE WHEN $5 THEN 0 ELSE consecutive_failures END,
       updated_at = now()
 WHERE organization_id = $1 AND end_user_id = $2 AND id = $3
RETURNING `+endUserWebhookCols, orgID, endUserID, id, p.Events, p.IsActive)
	return oneWebhook(rows)
}

// DeleteEndUserWebhook deletes a webhook of the end user (its deliveries
// go with it).
func DeleteEndUserWebhook(ctx context.Context, db DBTX, orgID, endUserID, id uuid.UUID) error {
	tag, err := db.Exec(ctx, `DELETE FROM end_user_webhooks WHERE organization_id = $1 AND end_user_id = $2 AND id = $3`, orgID, endUserID, id)
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// EnqueueEmbedEvent writes an event for the end user's webhooks to the
// outbox (run it in the transaction of the change). Nothing is written
// when no active webhook of the end user subscribes to the event.
func EnqueueEmbedEvent(ctx context.Context, db DBTX, orgID, endUserID uuid.UUID, event string, data any) error {
	_, err := db.Exec(ctx, `
INSERT INTO embed_outbox (organization_id, end_user_id, event, data)
SELECT $1, $2, $3, $4
 WHERE EXISTS (SELECT 1 FROM end_user_webhooks w
                WHERE w.organization_id = $1 AND w.end_user_id = $2 AND w.is_active AND $3 = ANY (w.events))`,
		orgID, endUserID, event, data)
	return mapErr(err)
}

// OutboxEvent is an event waiting to be fanned out.
type OutboxEvent struct {
	ID             int64          `db:"id"`
	OrganizationID uuid.UUID      `db:"organization_id"`
	EndUserID      uuid.UUID      `db:"end_user_id"`
	Event          string         `db:"event"`
	Data           map[string]any `db:"data"`
	// Resource is OutboxOrder, OutboxShipment or OutboxBridge when Data is
	// a snapshot of that row (to_jsonb of it, written by the outbox
	// triggers) to be rendered as the API shows it; nil when Data is the
	// payload's data as it is.
	Resource  *string   `db:"resource"`
	CreatedAt time.Time `db:"created_at"`
}

// Outbox snapshot resources.
const (
	OutboxOrder    = "order"
	OutboxShipment = "shipment"
	OutboxBridge   = "bridge"
)

// OutboxSnapshots are the rows the outbox events among ids hold as
// snapshots, read back as the store reads the live rows (the snapshot
// populates a row of the table, so every column keeps its type), by outbox
// event id. A shipment's label is the one stored now.
type OutboxSnapshots struct {
	Orders    map[int64]Order
	Shipments map[int64]Shipment
	Bridges   map[int64]Bridge
}

// LoadOutboxSnapshots reads the snapshots of the events among ids.
func LoadOutboxSnapshots(ctx context.Context, db DBTX, ids []int64) (OutboxSnapshots, error) {
	out := OutboxSnapshots{Orders: map[int64]Order{}, Shipments: map[int64]Shipment{}, Bridges: map[int64]Bridge{}}
	if len(ids) == 0 {
		return out, nil
	}
	type orderSnap struct {
		OutboxID int64 `db:"outbox_id"`
		Order
	}
	rows, _ := db.Query(ctx, `SELECT e.id AS outbox_id, r.* FROM embed_outbox e
 CROSS JOIN LATERAL (SELECT `+orderCols+` FROM jsonb_populate_record(NULL::orders, e.data)) r
 WHERE e.id = ANY($1) AND e.resource = 'order'`, ids)
	orders, err := pgx.CollectRows(rows, pgx.RowToStructByName[orderSnap])
	if err != nil {
		return out, mapErr(err)
	}
	for _, o := range orders {
		out.Orders[o.OutboxID] = o.Order
	}
	type shipmentSnap struct {
		OutboxID int64 `db:"outbox_id"`
		Shipment
	}
	rows, _ = db.Query(ctx, `SELECT e.id AS outbox_id, `+shipmentCols+` FROM embed_outbox e
 CROSS JOIN LATERAL jsonb_populate_record(NULL::shipments, e.data) s
 LEFT JOIN shipment_labels l ON l.shipment_id = s.id
 WHERE e.id = ANY($1) AND e.resource = 'shipment'`, ids)
	shipments, err := pgx.CollectRows(rows, pgx.RowToStructByName[shipmentSnap])
	if err != nil {
		return out, mapErr(err)
	}
	for _, sh := range shipments {
		out.Shipments[sh.OutboxID] = sh.Shipment
	}
	type bridgeSnap struct {
		OutboxID int64 `db:"outbox_id"`
		Bridge
	}
	rows, _ = db.Query(ctx, `SELECT e.id AS outbox_id, r.* FROM embed_outbox e
 CROSS JOIN LATERAL (SELECT `+bridgeCols+` FROM jsonb_populate_record(NULL::bridges, e.data)) r
 WHERE e.id = ANY($1) AND e.resource = 'bridge'`, ids)
	bridges, err := pgx.CollectRows(rows, pgx.RowToStructByName[bridgeSnap])
	if err != nil {
		return out, mapErr(err)
	}
	for _, b := range bridges {
		out.Bridges[b.OutboxID] = b.Bridge
	}
	return out, nil
}

// PendingOutbox is the oldest events not yet dispatched (at most limit).
func PendingOutbox(ctx context.Context, db DBTX, limit int) ([]OutboxEvent, error) {
	rows, _ := db.Query(ctx, `SELECT id, organization_id, end_user_id, event, data, resource, created_at FROM embed_outbox
 WHERE dispatched_at IS NULL ORDER BY id LIMIT $1`, limit)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[OutboxEvent])
	return out, mapErr(err)
}

// MarkOutboxDispatched marks events fanned out.
func MarkOutboxDispatched(ctx context.Context, db DBTX, ids []int64) error {
	_, err := db.Exec(ctx, `UPDATE embed_outbox SET dispatched_at = now() WHERE id = ANY($1)`, ids)
	return mapErr(err)
}

// OutboxSubscribers are, for each event, the active webhooks of its end
// user that subscribe to it.
func OutboxSubscribers(ctx context.Context, db DBTX, events []OutboxEvent) (map[int64][]EndUserWebhook, error) {
	out := map[int64][]EndUserWebhook{}
	if len(events) == 0 {
		return out, nil
	}
	ids := make([]int64, len(events))
	for i, e := range events {
		ids[i] = e.ID
	}
	rows, err := db.Query(ctx, `
SELECT o.id, w.id, w.organization_id, w.end_user_id, w.url, w.secret, w.description, w.events, w.is_active,
       w.disabled_reason, w.consecutive_failures, w.created_at, w.updated_at
  FROM embed_outbox o
  JOIN end_user_webhooks w ON w.end_user_id = o.end_user_id AND w.organization_id = o.organization_id
 WHERE o.id = ANY($1) AND w.is_active AND o.event = ANY (w.events)
 ORDER BY o.id, w.created_at`, ids)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var oid int64
		var w EndUserWebhook
		if err := rows.Scan(&oid, &w.ID, &w.OrganizationID, &w.EndUserID, &w.URL, &w.Secret, &w.Description, &w.Events,
			&w.IsActive, &w.DisabledReason, &w.ConsecutiveFailures, &w.CreatedAt, &w.UpdatedAt); err != nil {
			return nil, mapErr(err)
		}
		out[oid] = append(out[oid], w)
	}
	return out, mapErr(rows.Err())
}

// Delivery statuses.
const (
	DeliveryPending   = "pending"
	DeliveryRetrying  = "retrying"
	DeliverySucceeded = "succeeded"
	DeliveryFailed    = "failed"
)

// WebhookDelivery is one event sent (or to send) to one webhook, with the
// outcome of its latest attempt.
type WebhookDelivery struct {
	ID             uuid.UUID `db:"id"`
	OrganizationID uuid.UUID `db:"organization_id"`
	WebhookID      uuid.UUID `db:"webhook_id"`
	EndUserID      uuid.UUID `db:"end_user_id"`
	MessageID      string    `db:"message_id"`
	OutboxID       *int64    `db:"outbox_id"`
	Event          string    `db:"event"`
	Body           []byte    `db:"body"`
	Status         string    `db:"status"`
	StatusCode     *int      `db:"status_code"`
	Success        bool      `db:"success"`
	Error          *string   `db:"error"`
	Attempt        int       `db:"attempt"`
	DurationMS     *int      `db:"duration_ms"`
	CreatedAt      time.Time `db:"created_at"`
	UpdatedAt      time.Time `db:"updated_at"`
}

const deliveryCols = `id, organization_id, webhook_id, end_user_id, message_id, outbox_id, event, body, status, status_code, success, error, attempt, duration_ms, created_at, updated_at`

// InsertWebhookDeliveries inserts deliveries in one statement; a delivery
// of an outbox event to a webhook that already has one is skipped. It
// returns the deliveries of the given (webhook, outbox) pairs as stored,
// new or not, so a repeated fan-out finds the earlier rows.
func InsertWebhookDeliveries(ctx context.Context, db DBTX, ds []WebhookDelivery) ([]WebhookDelivery, error) {
	if len(ds) == 0 {
		return nil, nil
	}
	n := len(ds)
	ids, orgs, hooks, users := make([]uuid.UUID, n), make([]uuid.UUID, n), make([]uuid.UUID, n), make([]uuid.UUID, n)
	msgs, events := make([]string, n), make([]string, n)
	outbox := make([]*int64, n)
	bodies := make([][]byte, n)
	for i, d := range ds {
		ids[i], orgs[i], hooks[i], users[i], msgs[i], outbox[i], events[i], bodies[i] = d.ID, d.OrganizationID, d.WebhookID, d.EndUserID, d.MessageID, d.OutboxID, d.Event, d.Body
	}
	if _, err := db.Exec(ctx, `
INSERT INTO webhook_deliveries (id, organization_id, webhook_id, end_user_id, message_id, outbox_id, event, body)
SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::text[], $6::bigint[], $7::text[], $8::bytea[])
ON CONFLICT (webhook_id, outbox_id) WHERE outbox_id IS NOT NULL DO NOTHING`,
		ids, orgs, hooks, users, msgs, outbox, events, bodies); err != nil {
		return nil, mapErr(err)
	}
	rows, _ := db.Query(ctx, `
SELECT `+deliveryCols+` FROM webhook_deliveries WHERE id = ANY($1)
UNION
SELECT d.id, d.organization_id, d.webhook_id, d.end_user_id, d.message_id, d.outbox_id, d.event, d.body, d.status, d.status_code,
       d.success, d.error, d.attempt, d.duration_ms, d.created_at, d.updated_at
  FROM webhook_deliveries d JOIN unnest($2::uuid[], $3::bigint[]) AS k(webhook_id, outbox_id)
    ON d.webhook_id = k.webhook_id AND d.outbox_id = k.outbox_id`, ids, hooks, outbox)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[WebhookDelivery])
	return out, mapErr(err)
}

// WebhookDeliveryByID finds a delivery of the organization.
func WebhookDeliveryByID(ctx context.Context, db DBTX, orgID, id uuid.UUID) (WebhookDelivery, error) {
	rows, _ := db.Query(ctx, `SELECT `+deliveryCols+` FROM webhook_deliveries WHERE organization_id = $1 AND id = $2`, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[WebhookDelivery])
	return out, mapErr(err)
}

// RecentWebhookDeliveries are the webhook's latest deliveries, newest first.
func RecentWebhookDeliveries(ctx context.Context, db DBTX, orgID, webhookID uuid.UUID, limit int) ([]WebhookDelivery, error) {
	rows, _ := db.Query(ctx, `SELECT `+deliveryCols+` FROM webhook_deliveries
 WHERE organization_id = $1 AND webhook_id = $2 ORDER BY created_at DESC, id DESC LIMIT $3`, orgID, webhookID, limit)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[WebhookDelivery])
	return out, mapErr(err)
}

// DeliveryAttempt is the outcome of one attempt.
type DeliveryAttempt struct {
	DeliveryID uuid.UUID
	Attempt    int
	StatusCode *int
	Success    bool
	Error      *string
	DurationMS int
	// Gone: the receiver answered 410; the webhook is disabled at once.
	Gone bool
	// Final: no attempt follows (the last of the schedule).
	Final bool
}

// DeliveryOutcome is the state after an attempt was recorded.
type DeliveryOutcome struct {
	Delivery WebhookDelivery
	// WebhookActive is false once the webhook is disabled (by this attempt
	// or before).
	WebhookActive bool
	// Recorded is false when this attempt had been recorded before (an
	// activity run again): nothing changed.
	Recorded bool
}

// MaxConsecutiveFailures disables a webhook (CONTRACT 7).
const MaxConsecutiveFailures = 10

// RecordDeliveryAttempt records an attempt on the delivery and its
// webhook, once per (delivery, attempt): success resets the webhook's
// failure count; a failure counts, and the 10th in a row or a 410 disables
// the webhook with its reason.
func RecordDeliveryAttempt(ctx context.Context, db DBTX, a DeliveryAttempt) (DeliveryOutcome, error) {
	status := DeliveryRetrying
	switch {
	case a.Success:
		status = DeliverySucceeded
	case a.Final || a.Gone:
		status = DeliveryFailed
	}
	rows, _ := db.Query(ctx, `
UPDATE webhook_deliveries
   SET attempt = $2, status_code = $3, success = $4, error = $5, duration_ms = $6, status = $7, updated_at = now()
 WHERE id = $1 AND attempt < $2
RETURNING `+deliveryCols, a.DeliveryID, a.Attempt, a.StatusCode, a.Success, a.Error, a.DurationMS, status)
	d, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[WebhookDelivery])
	recorded := err == nil
	if err != nil {
		if err = mapErr(err); err != ErrNotFound {
			return DeliveryOutcome{}, err
		}
		rows, _ := db.Query(ctx, `SELECT `+deliveryCols+` FROM webhook_deliveries WHERE id = $1`, a.DeliveryID)
		if d, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[WebhookDelivery]); err != nil {
			return DeliveryOutcome{}, mapErr(err)
		}
	}
	var active bool
	if recorded {
		err = db.QueryRow(ctx, `
UPDATE end_user_webhooks
   SET consecutive_failures = CASE WHEN $2 THEN 0 ELSE consecutive_failures + 1 END,
       is_active = CASE WHEN $2 THEN is_active
                        WHEN $3 OR consecutive_failures + 1 >= $4 THEN false ELSE is_active END,
       disabled_reason = CASE WHEN $2 OR NOT is_active THEN disabled_reason
                              WHEN $3 THEN 'gone'
                              WHEN consecutive_failures + 1 >= $4 THEN 'consecutive_failures' ELSE disabled_reason END,
       updated_at = now()
 WHERE id = $1
RETURNING is_active`, d.WebhookID, a.Success, a.Gone, MaxConsecutiveFailures).Scan(&active)
	} else {
		err = db.QueryRow(ctx, `SELECT is_active FROM end_user_webhooks WHERE id = $1`, d.WebhookID).Scan(&active)
	}
	if err = mapErr(err); err != nil && err != ErrNotFound {
		return DeliveryOutcome{}, err
	}
	return DeliveryOutcome{Delivery: d, WebhookActive: active, Recorded: recorded}, nil
}

// EndUserWebhookAnyUser finds a webhook of the organization by id alone
// (the delivery activities, which know the delivery's webhook).
func EndUserWebhookAnyUser(ctx context.Context, db DBTX, orgID, id uuid.UUID) (EndUserWebhook, error) {
	rows, _ := db.Query(ctx, `SELECT `+endUserWebhookCols+` FROM end_user_webhooks WHERE organization_id = $1 AND id = $2`, orgID, id)
	return oneWebhook(rows)
}

// FirstAttemptSuccess is a first attempt the receiver accepted.
type FirstAttemptSuccess struct {
	DeliveryID uuid.UUID
	StatusCode int
	DurationMS int
}

// RecordFirstSuccesses records accepted first attempts in one statement
// (the fan-out's common case) and resets their webhooks' failure counts;
// a delivery with an attempt recorded already is left alone.
func RecordFirstSuccesses(ctx context.Context, db DBTX, ok []FirstAttemptSuccess) error {
	if len(ok) == 0 {
		return nil
	}
	ids, codes, ms := make([]uuid.UUID, len(ok)), make([]int32, len(ok)), make([]int32, len(ok))
	for i, o := range ok {
		ids[i], codes[i], ms[i] = o.DeliveryID, int32(o.StatusCode), int32(o.DurationMS)
	}
	_, err := db.Exec(ctx, `
WITH d AS (
  UPDATE webhook_deliveries AS wd
     SET attempt = 1, status_code = v.code, success = true, error = NULL, duration_ms = v.ms, status = 'succeeded', updated_at = now()
    FROM unnest($1::uuid[], $2::int[], $3::int[]) AS v(id, code, ms)
   WHERE wd.id = v.id AND wd.attempt < 1
  RETURNING wd.webhook_id
)
UPDATE end_user_webhooks SET consecutive_failures = 0, updated_at = now()
 WHERE id IN (SELECT webhook_id FROM d) AND consecutive_failures <> 0`, ids, codes, ms)
	return mapErr(err)
}
