package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Bulk operations (spec Part 3, CONTRACT 10): operations, their items and
// history. The counters of an operation (operation_counts) are kept by
// triggers on operation_items, in the same transaction as every change of
// an item, spread over shards; a read sums them.

// Operation statuses.
const (
	OperationDraft     = "draft"
	OperationPending   = "pending"
	OperationExecuting = "executing"
	OperationPaused    = "paused"
	OperationCompleted = "completed"
	OperationCancelled = "cancelled"
	OperationFailed    = "failed"
)

// OperationStatuses are the seven statuses, in the specification's order.
var OperationStatuses = []string{OperationDraft, OperationPending, OperationExecuting, OperationPaused, OperationCompleted, OperationCancelled, OperationFailed}

// Operation item statuses.
const (
	ItemPending    = "pending"
	ItemProcessing = "processing"
	ItemCompleted  = "completed"
	ItemFailed     = "failed"
	ItemSkipped    = "skipped"
)

// ItemStatuses are the item statuses.
var ItemStatuses = []string{ItemPending, ItemProcessing, ItemCompleted, ItemFailed, ItemSkipped}

// Operation is an operation with its counters.
type Operation struct {
	ID                 uuid.UUID  `db:"id"`
	OrganizationID     uuid.UUID  `db:"organization_id"`
	Name               string     `db:"name"`
	Description        *string    `db:"description"`
	Status             string     `db:"status"`
	Currency           string     `db:"currency"`
	CreatedBy          *string    `db:"created_by"`
	ExecutedAt         *time.Time `db:"executed_at"`
	StartedAt          *time.Time `db:"started_at"`
	CompletedAt        *time.Time `db:"completed_at"`
	ErrorMessage       *string    `db:"error_message"`
	CreatedAt          time.Time  `db:"created_at"`
	UpdatedAt          time.Time  `db:"updated_at"`
	ItemCount          int64      `db:"item_count"`
	PendingCount       int64      `db:"pending_count"`
	ProcessingCount    int64      `db:"processing_count"`
	CompletedCount     int64      `db:"completed_count"`
	FailedCount        int64      `db:"failed_count"`
	SkippedCount       int64      `db:"skipped_count"`
	RatedCount         int64      `db:"rated_count"`
	TotalEstimatedCost float64    `db:"total_estimated_cost"`
}

// operationSelect reads operations (alias o) with their summed counters.
const operationSelect = `SELECT o.id, o.organization_id, o.name, o.description, o.status, o.currency, o.created_by, o.executed_at,
       o.started_at, o.completed_at, o.error_message, o.created_at, o.updated_at,
       coalesce(c.items, 0) AS item_count, coalesce(c.pending, 0) AS pending_count, coalesce(c.processing, 0) AS processing_count,
       coalesce(c.completed, 0) AS completed_count, coalesce(c.failed, 0) AS failed_count, coalesce(c.skipped, 0) AS skipped_count,
       coalesce(c.rated, 0) AS rated_count, coalesce(c.cost, 0)::float8 AS total_estimated_cost
  FROM operations o
  LEFT JOIN LATERAL (SELECT sum(items)::bigint AS items, sum(pending)::bigint AS pending, sum(processing)::bigint AS processing,
                            sum(completed)::bigint AS completed, sum(failed)::bigint AS failed, sum(skipped)::bigint AS skipped,
                            sum(rated)::bigint AS rated, sum(cost) AS cost
                       FROM operation_counts WHERE operation_id = o.id) c ON true`

// CreateOperation inserts a draft operation (ID, OrganizationID, Name,
// Description, Currency, CreatedBy set by the caller).
func CreateOperation(ctx context.Context, db DBTX, op Operation) (Operation, error) {
	if op.Currency == "" {
		op.Currency = "USD"
	}
	_, err := db.Exec(ctx, `INSERT INTO operations (id, organization_id, name, description, currency, created_by) VALUES ($1, $2, $3, $4, $5, $6)`,
		op.ID, op.OrganizationID, op.Name, op.Description, op.Currency, op.CreatedBy)
	if err != nil {
		return Operation{}, mapErr(err)
	}
	return OperationByID(ctx, db, op.OrganizationID, op.ID)
}

// OperationByID is an operation of the organization with its counters.
func OperationByID(ctx context.Context, db DBTX, orgID, id uuid.UUID) (Operation, error) {
	rows, _ := db.Query(ctx, operationSelect+` WHERE o.organization_id = $1 AND o.id = $2`, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Operation])
	return out, mapErr(err)
}

// LockOperation locks an operation of the organization for the rest of tx
// and tells its status (ErrNotFound when it is not the organization's).
func LockOperation(ctx context.Context, tx pgx.Tx, orgID, id uuid.UUID) (string, error) {
	var status string
	err := tx.QueryRow(ctx, `SELECT status FROM operations WHERE organization_id = $1 AND id = $2 FOR UPDATE`, orgID, id).Scan(&status)
	return status, mapErr(err)
}

// ListOperations lists the organization's operations, most recently
// updated first, with the total.
func ListOperations(ctx context.Context, db DBTX, orgID uuid.UUID, status string, limit, offset int) ([]Operation, int, error) {
	rows, _ := db.Query(ctx, operationSelect+`
 WHERE o.organization_id = $1 AND ($2 = '' OR o.status = $2)
 ORDER BY o.updated_at DESC, o.id DESC LIMIT $3 OFFSET $4`, orgID, status, limit, offset)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[Operation])
	if err != nil {
		return nil, 0, mapErr(err)
	}
	var total int
	err = db.QueryRow(ctx, `SELECT count(*) FROM operations WHERE organization_id = $1 AND ($2 = '' OR status = $2)`, orgID, status).Scan(&total)
	return list, total, mapErr(err)
}

// OperationPatch is a change of an operation's fields (nil: unchanged).
type OperationPatch struct {
	Name        *string
	Description **string
	Status      *string
}

// UpdateOperation applies p inside tx (the caller locked the row and
// checked the status move).
func UpdateOperation(ctx context.Context, tx pgx.Tx, orgID, id uuid.UUID, p OperationPatch) error {
	var desc *string
	setDesc := p.Description != nil
	if setDesc {
		desc = *p.Description
	}
	_, err := tx.Exec(ctx, `UPDATE operations SET name = coalesce($3, name),
       description = CASE WHEN $4 THEN $5 ELSE description END,
       status = coalesce($6, status),
       completed_at = CASE WHEN $6::text IN ('completed', 'cancelled', 'failed') AND $6::text IS DISTINCT FROM status THEN now() ELSE completed_at END,
       updated_at = now()
 WHERE organization_id = $1 AND id = $2`, orgID, id, p.Name, setDesc, desc, p.Status)
	return mapErr(err)
}

// DeleteDraftOperation deletes a draft operation; ErrNotFound when it is
// not the organization's, ErrConflict when it is not a draft.
func DeleteDraftOperation(ctx context.Context, s *Store, orgID, id uuid.UUID) error {
	return pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		st, err := LockOperation(ctx, tx, orgID, id)
		if err != nil {
			return err
		}
		if st != OperationDraft {
			return ErrConflict
		}
		_, err = tx.Exec(ctx, `DELETE FROM operations WHERE id = $1`, id)
		return mapErr(err)
	})
}

// TouchOperation moves an operation's updated_at (a change of its items).
func TouchOperation(ctx context.Context, db DBTX, id uuid.UUID) error {
	_, err := db.Exec(ctx, `UPDATE operations SET updated_at = now() WHERE id = $1`, id)
	return mapErr(err)
}

// SetOperationStatus moves an operation from one of from to status; it
// reports whether it moved. Moving to executing sets started_at (and
// executed_at the first time); to completed, cancelled or failed sets
// completed_at; errMsg, when not nil, is stored as error_message.
func SetOperationStatus(ctx context.Context, db DBTX, orgID, id uuid.UUID, from []string, status string, errMsg *string) (bool, error) {
	tag, err := db.Exec(ctx, `UPDATE operations SET status = $4, updated_at = now(),
       started_at = CASE WHEN $4 = 'executing' AND status IN ('draft', 'pending') THEN now() ELSE started_at END,
       executed_at = CASE WHEN $4 = 'executing' THEN coalesce(executed_at, now()) ELSE executed_at END,
       completed_at = CASE WHEN $4 IN ('completed', 'cancelled', 'failed') THEN now() ELSE completed_at END,
       error_message = coalesce($5, error_message)
 WHERE organization_id = $1 AND id = $2 AND status = ANY($3)`, orgID, id, from, status, errMsg)
	if err != nil {
		return false, mapErr(err)
	}
	return tag.RowsAffected() == 1, nil
}

// SkipPendingItems turns the operation's pending items skipped with msg.
func SkipPendingItems(ctx context.Context, db DBTX, opID uuid.UUID, msg string) (int64, error) {
	tag, err := db.Exec(ctx, `UPDATE operation_items SET status = 'skipped', error_message = $2, updated_at = now()
 WHERE operation_id = $1 AND status = 'pending'`, opID, msg)
	if err != nil {
		return 0, mapErr(err)
	}
	return tag.RowsAffected(), nil
}

// OperationItem is an item of an operation.
type OperationItem struct {
	ID                       uuid.UUID       `db:"id" json:"id"`
	OrganizationID           uuid.UUID       `db:"organization_id" json:"organizationId"`
	OperationID              uuid.UUID       `db:"operation_id" json:"operationId"`
	Seq                      int64           `db:"seq" json:"seq"`
	OrderID                  uuid.UUID       `db:"order_id" json:"orderId"`
	Status                   string          `db:"status" json:"status"`
	RateSnapshotID           *uuid.UUID      `db:"rate_snapshot_id" json:"rateSnapshotId"`
	OverrideCarrierAccountID *uuid.UUID      `db:"override_carrier_account_id" json:"overrideCarrierAccountId"`
	OverrideDispatchBridgeID *uuid.UUID      `db:"override_dispatch_bridge_id" json:"overrideDispatchBridgeId"`
	PendingActions           json.RawMessage `db:"pending_actions" json:"pendingActions"`
	AppliedActions           json.RawMessage `db:"applied_actions" json:"appliedActions"`
	RetryCount               int             `db:"retry_count" json:"retryCount"`
	ErrorMessage             *string         `db:"error_message" json:"errorMessage"`
	ShipmentID               *uuid.UUID      `db:"shipment_id" json:"shipmentId"`
	DispatchAssignmentID     *uuid.UUID      `db:"dispatch_assignment_id" json:"dispatchAssignmentId"`
	Cost                     float64         `db:"cost" json:"cost"`
	CreatedAt                time.Time       `db:"created_at" json:"createdAt"`
	UpdatedAt                time.Time       `db:"updated_at" json:"updatedAt"`
}

const itemCols = `i.id, i.organization_id, i.operation_id, i.seq, i.order_id, i.status, i.rate_snapshot_id, i.override_carrier_account_id,
 i.override_dispatch_bridge_id, i.pending_actions, i.applied_actions, i.retry_count, i.error_message, i.shipment_id,
 i.dispatch_assignment_id, i.cost::float8 AS cost, i.created_at, i.updated_at`

// ForeignOrders returns the ids of orderIDs that are not orders of the
// organization.
func ForeignOrders(ctx context.Context, db DBTX, orgID uuid.UUID, orderIDs []uuid.UUID) ([]uuid.UUID, error) {
	rows, _ := db.Query(ctx, `SELECT x FROM unnest($2::uuid[]) AS x
 WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.organization_id = $1 AND o.id = x)`, orgID, orderIDs)
	out, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	return out, mapErr(err)
}

// AddItems inserts an item per order not yet in the operation (one
// statement; orders of another organization are left out) and returns the
// items inserted, in order.
func AddItems(ctx context.Context, tx pgx.Tx, orgID, opID uuid.UUID, orderIDs []uuid.UUID) ([]OperationItem, error) {
	ids := make([]uuid.UUID, len(orderIDs))
	for i := range ids {
		ids[i] = uuid.New()
	}
	rows, _ := tx.Query(ctx, `WITH ins AS (
  INSERT INTO operation_items AS i (id, organization_id, operation_id, order_id)
  SELECT x.id, $1, $2, x.order_id
    FROM unnest($3::uuid[], $4::uuid[]) WITH ORDINALITY AS x(id, order_id, n)
   WHERE EXISTS (SELECT 1 FROM orders o WHERE o.organization_id = $1 AND o.id = x.order_id)
   ORDER BY x.n
  ON CONFLICT (operation_id, order_id) DO NOTHING
  RETURNING `+itemCols+`)
SELECT * FROM ins ORDER BY seq`, orgID, opID, ids, orderIDs)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[OperationItem])
	return out, mapErr(err)
}

// AddItemsResult is what AddItemsRecorded did: the operation's status
// (its change needs a draft), the ids that are not orders of the
// organization (nothing was written when there are any), and the items
// inserted, in order.
type AddItemsResult struct {
	Status  string
	Foreign []uuid.UUID
	Added   []OperationItem
}

// addItemsRecordedSQL locks the operation, finds the foreign orders, and
// only when it is a draft and there are none inserts the items (duplicates
// ignored), records the items_added entry (previousState StateOf(nil),
// newState the items' ItemFields, as StateOf writes them) and moves the
// operation's updated_at: one statement, one round trip, one probe of the
// orders' primary key per id. The first row tells the status and the
// foreign ids; each further row is an item inserted.
var addItemsRecordedSQL = `WITH op AS (
  SELECT o.status FROM operations o WHERE o.organization_id = $1 AND o.id = $2 FOR UPDATE
), want AS MATERIALIZED (
  SELECT x.id, x.order_id, x.n, EXISTS (SELECT 1 FROM orders o WHERE o.id = x.order_id AND o.organization_id = $1) AS known
    FROM unnest($3::uuid[], $4::uuid[]) WITH ORDINALITY AS x(id, order_id, n)
), gate AS (
  SELECT (SELECT status FROM op) = 'draft' AND NOT EXISTS (SELECT 1 FROM want WHERE NOT known) AS ok
), ins AS (
  INSERT INTO operation_items AS i (id, organization_id, operation_id, order_id)
  SELECT w.id, $1, $2, w.order_id FROM want w WHERE (SELECT ok FROM gate)
   ORDER BY w.n
  ON CONFLICT (operation_id, order_id) DO NOTHING
  RETURNING ` + itemCols + `
), hist AS (
  INSERT INTO operation_history (id, organization_id, operation_id, action, affected_item_ids, affected_order_ids,
         previous_state, new_state, is_undoable, performed_by)
  SELECT $5, $1, $2, 'items_added', array_agg(ins.id ORDER BY ins.seq), array_agg(ins.order_id ORDER BY ins.seq),
         '` + string(StateOf(nil)) + `', ` + itemsStateJSON("ins", "ins.seq") + `, true, $6
    FROM ins HAVING count(*) > 0
), touch AS (
  UPDATE operations SET updated_at = now() WHERE id = $2 AND (SELECT ok FROM gate)
)
SELECT 0 AS part, (SELECT status FROM op) AS op_status,
       (SELECT coalesce(array_agg(order_id ORDER BY n), '{}') FROM want WHERE NOT known) AS foreign_ids,
       $2::uuid AS id, $1::uuid AS organization_id, $2::uuid AS operation_id, 0::bigint AS seq, $2::uuid AS order_id,
       '' AS status, NULL::uuid AS rate_snapshot_id, NULL::uuid AS override_carrier_account_id,
       NULL::uuid AS override_dispatch_bridge_id, '[]'::jsonb AS pending_actions, '[]'::jsonb AS applied_actions,
       0 AS retry_count, NULL::text AS error_message, NULL::uuid AS shipment_id, NULL::uuid AS dispatch_assignment_id,
       0::float8 AS cost, now() AS created_at, now() AS updated_at
UNION ALL
SELECT * FROM (SELECT 1, NULL::text, NULL::uuid[], ins.* FROM ins ORDER BY ins.seq) added`

// AddItemsRecorded adds an item per order to a draft operation and
// records the history entry historyID performed by performedBy, in one
// statement (see addItemsRecordedSQL). ErrNotFound when the operation is
// not the organization's; otherwise the caller reads the status and the
// foreign ids: nothing was written unless the status is draft and there
// are no foreign ids. Orders already in the operation are left out.
func AddItemsRecorded(ctx context.Context, db DBTX, orgID, opID uuid.UUID, orderIDs []uuid.UUID, historyID uuid.UUID, performedBy *string) (AddItemsResult, error) {
	ids := make([]uuid.UUID, len(orderIDs))
	for i := range ids {
		ids[i] = uuid.New()
	}
	rows, err := db.Query(ctx, addItemsRecordedSQL, orgID, opID, ids, orderIDs, historyID, performedBy)
	if err != nil {
		return AddItemsResult{}, mapErr(err)
	}
	defer rows.Close()
	var out AddItemsResult
	found := false
	for rows.Next() {
		var part int
		var status *string
		var foreign []uuid.UUID
		var it OperationItem
		if err := rows.Scan(&part, &status, &foreign, &it.ID, &it.OrganizationID, &it.OperationID, &it.Seq, &it.OrderID, &it.Status,
			&it.RateSnapshotID, &it.OverrideCarrierAccountID, &it.OverrideDispatchBridgeID, &it.PendingActions, &it.AppliedActions,
			&it.RetryCount, &it.ErrorMessage, &it.ShipmentID, &it.DispatchAssignmentID, &it.Cost, &it.CreatedAt, &it.UpdatedAt); err != nil {
			return AddItemsResult{}, mapErr(err)
		}
		if part == 0 {
			if status != nil {
				found = true
				out.Status, out.Foreign = *status, foreign
			}
			continue
		}
		out.Added = append(out.Added, it)
	}
	if err := rows.Err(); err != nil {
		return AddItemsResult{}, mapErr(err)
	}
	if !found {
		return AddItemsResult{}, ErrNotFound
	}
	return out, nil
}

// ItemFilter selects items of a list.
type ItemFilter struct {
	Status  string
	HasRate *bool
	Limit   int
	Offset  int
}

// ItemRow is an item of a list with its expanded references (JSON objects,
// nil when absent).
type ItemRow struct {
	OperationItem
	Order                  json.RawMessage `db:"order_json"`
	RateSnapshot           json.RawMessage `db:"snapshot_json"`
	OverrideCarrierAccount json.RawMessage `db:"account_json"`
	OverrideDispatchBridge json.RawMessage `db:"bridge_json"`
}

// itemPageSelect lists a page of an operation's items with their
// expansions: operation_item_page (migration 00100) walks the index of the
// filter to the page's 100 seqs at most, and only those rows are read and
// joined (the offset's rows are never joined nor built). Nothing is listed
// unless the operation is the organization's ($1).
const itemPageSelect = `SELECT ` + itemCols + `,
  json_build_object('id', o.id, 'externalId', o.external_id, 'orderNumber', o.order_number, 'customerEmail', o.customer_email,
                    'customerName', o.customer_name, 'totalPrice', o.total, 'currency', o.currency, 'status', o.status) AS order_json,
  CASE WHEN s.id IS NULL THEN NULL ELSE json_build_object('id', s.id, 'carrierAccountId', s.carrier_account_id, 'carrier', s.carrier,
       'serviceType', s.service_type, 'serviceName', s.service_name, 'totalPrice', s.total_price, 'currency', s.currency,
       'transitDays', s.transit_days, 'estimatedDelivery', s.estimated_delivery, 'expiresAt', s.expires_at) END AS snapshot_json,
  CASE WHEN a.id IS NULL THEN NULL ELSE json_build_object('id', a.id, 'name', a.name, 'carrier', a.carrier, 'status', a.status) END AS account_json,
  CASE WHEN b.id IS NULL THEN NULL ELSE json_build_object('id', b.id, 'name', b.name, 'type', b.type, 'status', b.status) END AS bridge_json
  FROM operation_item_page($2, $3, $4, $5, $6) AS p
  JOIN operation_items i ON i.operation_id = $2 AND i.seq = p.seq
  JOIN orders o ON o.id = i.order_id
  LEFT JOIN rate_snapshots s ON s.id = i.rate_snapshot_id
  LEFT JOIN carrier_accounts a ON a.id = i.override_carrier_account_id
  LEFT JOIN bridges b ON b.id = i.override_dispatch_bridge_id
 WHERE EXISTS (SELECT 1 FROM operations op WHERE op.id = $2 AND op.organization_id = $1)
 ORDER BY i.seq`

// ListOperationItems is the operation (ErrNotFound when it is not the
// organization's) with a page of its items and their total, in one round
// trip: the operation with its counters, the page, and (only when both
// filters are given) a count on the status index are sent as one batch.
// The total comes from the counters when one filter or none is given.
func ListOperationItems(ctx context.Context, db DBTX, orgID, opID uuid.UUID, f ItemFilter) (Operation, []ItemRow, int, error) {
	var status *string
	if f.Status != "" {
		status = &f.Status
	}
	both := f.Status != "" && f.HasRate != nil
	b := &pgx.Batch{}
	b.Queue(operationSelect+` WHERE o.organization_id = $1 AND o.id = $2`, orgID, opID)
	b.Queue(itemPageSelect, orgID, opID, status, f.HasRate, f.Limit, f.Offset)
	if both {
		b.Queue(`SELECT count(*) FROM operation_items WHERE operation_id = $1 AND status = $2 AND (rate_snapshot_id IS NOT NULL) = $3`,
			opID, f.Status, *f.HasRate)
	}
	br := db.SendBatch(ctx, b)
	defer br.Close()
	rows, _ := br.Query()
	op, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Operation])
	if err != nil {
		return op, nil, 0, mapErr(err)
	}
	rows, _ = br.Query()
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[ItemRow])
	if err != nil {
		return op, nil, 0, mapErr(err)
	}
	var total int64
	switch {
	case both:
		err = br.QueryRow().Scan(&total)
	case f.HasRate != nil && *f.HasRate:
		total = op.RatedCount
	case f.HasRate != nil:
		total = op.ItemCount - op.RatedCount
	case f.Status == ItemPending:
		total = op.PendingCount
	case f.Status == ItemProcessing:
		total = op.ProcessingCount
	case f.Status == ItemCompleted:
		total = op.CompletedCount
	case f.Status == ItemFailed:
		total = op.FailedCount
	case f.Status == ItemSkipped:
		total = op.SkippedCount
	default:
		total = op.ItemCount
	}
	if err != nil {
		return op, nil, 0, mapErr(err)
	}
	return op, list, int(total), mapErr(br.Close())
}

// ItemByID is an item of the operation (of the organization).
func ItemByID(ctx context.Context, db DBTX, orgID, opID, id uuid.UUID) (OperationItem, error) {
	rows, _ := db.Query(ctx, `SELECT `+itemCols+` FROM operation_items i WHERE i.organization_id = $1 AND i.operation_id = $2 AND i.id = $3`, orgID, opID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[OperationItem])
	return out, mapErr(err)
}

// ItemsByID are the operation's items among ids, in order, locked for tx.
func ItemsByID(ctx context.Context, db DBTX, opID uuid.UUID, ids []uuid.UUID, lock bool) ([]OperationItem, error) {
	q := `SELECT ` + itemCols + ` FROM operation_items i WHERE i.operation_id = $1 AND i.id = ANY($2) ORDER BY i.seq`
	if lock {
		q += ` FOR UPDATE`
	}
	rows, _ := db.Query(ctx, q, opID, ids)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[OperationItem])
	return out, mapErr(err)
}

// ItemFields are the fields of an item an update, an action or an undo
// sets. The db tags are the operation_items columns: itemsStateJSON writes
// the same JSON in SQL from them.
type ItemFields struct {
	ID                       uuid.UUID  `db:"id" json:"id"`
	OrderID                  uuid.UUID  `db:"order_id" json:"orderId"`
	Status                   string     `db:"status" json:"status"`
	RateSnapshotID           *uuid.UUID `db:"rate_snapshot_id" json:"rateSnapshotId"`
	OverrideCarrierAccountID *uuid.UUID `db:"override_carrier_account_id" json:"overrideCarrierAccountId"`
	OverrideDispatchBridgeID *uuid.UUID `db:"override_dispatch_bridge_id" json:"overrideDispatchBridgeId"`
}

// ItemsState is a history entry's state of items (the previous and new
// state of the entries that change items).
type ItemsState struct {
	Items []ItemFields `json:"items"`
}

// StateOf is the ItemsState of items as JSON ({"items": []} for none).
// addItemsRecordedSQL builds the same JSON in SQL (itemsStateJSON).
func StateOf(items []ItemFields) json.RawMessage {
	if items == nil {
		items = []ItemFields{}
	}
	raw, _ := json.Marshal(ItemsState{Items: items})
	return raw
}

// itemsStateJSON is the SQL (jsonb) of the ItemsState of the
// operation_items rows alias in the order of orderBy: each ItemFields
// field's json name and its column, read from the structs' tags, so that
// it and StateOf cannot drift. It aggregates: at least one row.
func itemsStateJSON(alias, orderBy string) string {
	t := reflect.TypeFor[ItemFields]()
	pairs := make([]string, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		pairs[i] = "'" + f.Tag.Get("json") + "', " + alias + "." + f.Tag.Get("db")
	}
	items := reflect.TypeFor[ItemsState]().Field(0).Tag.Get("json")
	return "jsonb_build_object('" + items + "', jsonb_agg(jsonb_build_object(" + strings.Join(pairs, ", ") + ") ORDER BY " + orderBy + "))"
}

// FieldsOf are an item's settable fields.
func FieldsOf(it OperationItem) ItemFields {
	return ItemFields{ID: it.ID, OrderID: it.OrderID, Status: it.Status, RateSnapshotID: it.RateSnapshotID,
		OverrideCarrierAccountID: it.OverrideCarrierAccountID, OverrideDispatchBridgeID: it.OverrideDispatchBridgeID}
}

// SetItemFields writes the fields of each item (one statement); an item's
// cost follows its snapshot's totalPrice. appliedAction, when not nil, is
// appended to applied_actions.
func SetItemFields(ctx context.Context, db DBTX, opID uuid.UUID, items []ItemFields, appliedAction json.RawMessage) error {
	if len(items) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, len(items))
	statuses := make([]string, len(items))
	snaps := make([]*uuid.UUID, len(items))
	accts := make([]*uuid.UUID, len(items))
	bridges := make([]*uuid.UUID, len(items))
	for i, it := range items {
		ids[i], statuses[i], snaps[i], accts[i], bridges[i] = it.ID, it.Status, it.RateSnapshotID, it.OverrideCarrierAccountID, it.OverrideDispatchBridgeID
	}
	var action any
	if appliedAction != nil {
		action = string(appliedAction)
	}
	_, err := db.Exec(ctx, `UPDATE operation_items i SET status = x.status, rate_snapshot_id = x.snap, override_carrier_account_id = x.acct,
       override_dispatch_bridge_id = x.bridge,
       cost = coalesce((SELECT s.total_price FROM rate_snapshots s WHERE s.id = x.snap), 0),
       applied_actions = CASE WHEN $7::jsonb IS NULL THEN i.applied_actions ELSE i.applied_actions || jsonb_build_array($7::jsonb) END,
       updated_at = now()
  FROM unnest($2::uuid[], $3::text[], $4::uuid[], $5::uuid[], $6::uuid[]) AS x(id, status, snap, acct, bridge)
 WHERE i.operation_id = $1 AND i.id = x.id`, opID, ids, statuses, snaps, accts, bridges, action)
	return mapErr(err)
}

// DeleteItems deletes the operation's items among ids and returns them.
func DeleteItems(ctx context.Context, db DBTX, opID uuid.UUID, ids []uuid.UUID) ([]OperationItem, error) {
	rows, _ := db.Query(ctx, `DELETE FROM operation_items i WHERE i.operation_id = $1 AND i.id = ANY($2) RETURNING `+itemCols, opID, ids)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[OperationItem])
	return out, mapErr(err)
}

// RestoreItems inserts items again (an undone removal) under their ids;
// items whose order is gone or already in the operation are left out.
func RestoreItems(ctx context.Context, db DBTX, orgID, opID uuid.UUID, items []ItemFields) error {
	if len(items) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, len(items))
	orders := make([]uuid.UUID, len(items))
	statuses := make([]string, len(items))
	snaps := make([]*uuid.UUID, len(items))
	accts := make([]*uuid.UUID, len(items))
	bridges := make([]*uuid.UUID, len(items))
	for i, it := range items {
		ids[i], orders[i], statuses[i], snaps[i], accts[i], bridges[i] = it.ID, it.OrderID, it.Status, it.RateSnapshotID, it.OverrideCarrierAccountID, it.OverrideDispatchBridgeID
	}
	_, err := db.Exec(ctx, `INSERT INTO operation_items (id, organization_id, operation_id, order_id, status, rate_snapshot_id,
       override_carrier_account_id, override_dispatch_bridge_id, cost)
SELECT x.id, $1, $2, x.order_id, x.status,
       (SELECT s.id FROM rate_snapshots s WHERE s.id = x.snap), (SELECT a.id FROM carrier_accounts a WHERE a.id = x.acct),
       (SELECT b.id FROM bridges b WHERE b.id = x.bridge), coalesce((SELECT s.total_price FROM rate_snapshots s WHERE s.id = x.snap), 0)
  FROM unnest($3::uuid[], $4::uuid[], $5::text[], $6::uuid[], $7::uuid[], $8::uuid[]) AS x(id, order_id, status, snap, acct, bridge)
 WHERE EXISTS (SELECT 1 FROM orders o WHERE o.organization_id = $1 AND o.id = x.order_id)
ON CONFLICT DO NOTHING`, orgID, opID, ids, orders, statuses, snaps, accts, bridges)
	return mapErr(err)
}

// History entry actions.
const (
	HistoryItemsAdded   = "items_added"
	HistoryItemsRemoved = "items_removed"
	HistoryItemUpdated  = "item_updated"
	HistoryActionApply  = "action_applied"
	HistoryExecuted     = "executed"
	HistoryUndone       = "undone"
)

// HistoryEntry is an entry of an operation's history.
type HistoryEntry struct {
	ID               uuid.UUID       `db:"id"`
	OrganizationID   uuid.UUID       `db:"organization_id"`
	OperationID      uuid.UUID       `db:"operation_id"`
	Action           string          `db:"action"`
	AffectedItemIDs  []uuid.UUID     `db:"affected_item_ids"`
	AffectedOrderIDs []uuid.UUID     `db:"affected_order_ids"`
	PreviousState    json.RawMessage `db:"previous_state"`
	NewState         json.RawMessage `db:"new_state"`
	IsUndoable       bool            `db:"is_undoable"`
	IsUndone         bool            `db:"is_undone"`
	UndoStartedAt    *time.Time      `db:"undo_started_at"`
	PerformedBy      *string         `db:"performed_by"`
	PerformedAt      time.Time       `db:"performed_at"`
}

const historyCols = `id, organization_id, operation_id, action, affected_item_ids, affected_order_ids, previous_state, new_state,
 is_undoable, is_undone, undo_started_at, performed_by, performed_at`

// InsertHistory records an entry (ID set by the caller; a zero ID gets a
// new one). An entry with the same ID already recorded is left as it is
// (an activity run again).
func InsertHistory(ctx context.Context, db DBTX, e HistoryEntry) error {
	if e.ID == uuid.Nil {
		e.ID = uuid.New()
	}
	if e.AffectedItemIDs == nil {
		e.AffectedItemIDs = []uuid.UUID{}
	}
	if e.AffectedOrderIDs == nil {
		e.AffectedOrderIDs = []uuid.UUID{}
	}
	prev, next := e.PreviousState, e.NewState
	if len(prev) == 0 {
		prev = json.RawMessage(`{}`)
	}
	if len(next) == 0 {
		next = json.RawMessage(`{}`)
	}
	_, err := db.Exec(ctx, `INSERT INTO operation_history (id, organization_id, operation_id, action, affected_item_ids, affected_order_ids,
       previous_state, new_state, is_undoable, performed_by)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (id) DO NOTHING`,
		e.ID, e.OrganizationID, e.OperationID, e.Action, e.AffectedItemIDs, e.AffectedOrderIDs, prev, next, e.IsUndoable, e.PerformedBy)
	return mapErr(err)
}

// ListHistory is the operation's newest limit entries, newest first.
func ListHistory(ctx context.Context, db DBTX, orgID, opID uuid.UUID, limit int) ([]HistoryEntry, error) {
	rows, _ := db.Query(ctx, `SELECT `+historyCols+` FROM operation_history WHERE organization_id = $1 AND operation_id = $2
 ORDER BY performed_at DESC, id DESC LIMIT $3`, orgID, opID, limit)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[HistoryEntry])
	return out, mapErr(err)
}

// HistoryByID is an entry of the operation.
func HistoryByID(ctx context.Context, db DBTX, orgID, opID, id uuid.UUID) (HistoryEntry, error) {
	rows, _ := db.Query(ctx, `SELECT `+historyCols+` FROM operation_history WHERE organization_id = $1 AND operation_id = $2 AND id = $3`, orgID, opID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[HistoryEntry])
	return out, mapErr(err)
}

// LatestUndoable is the operation's newest entry that may be undone.
func LatestUndoable(ctx context.Context, db DBTX, orgID, opID uuid.UUID) (HistoryEntry, error) {
	rows, _ := db.Query(ctx, `SELECT `+historyCols+` FROM operation_history WHERE organization_id = $1 AND operation_id = $2
   AND is_undoable AND NOT is_undone AND undo_started_at IS NULL ORDER BY performed_at DESC, id DESC LIMIT 1`, orgID, opID)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[HistoryEntry])
	return out, mapErr(err)
}

// ErrAlreadyUndone is an entry undone (or being undone) already.
var ErrAlreadyUndone = errors.New("history entry already undone")

// BeginUndo marks an undoable entry as being undone (once): ErrNotFound,
// ErrConflict when it is not undoable, ErrAlreadyUndone when it is undone
// or being undone.
func BeginUndo(ctx context.Context, db DBTX, orgID, opID, id uuid.UUID) (HistoryEntry, error) {
	rows, _ := db.Query(ctx, `UPDATE operation_history SET undo_started_at = now()
 WHERE organization_id = $1 AND operation_id = $2 AND id = $3 AND is_undoable AND NOT is_undone AND undo_started_at IS NULL
 RETURNING `+historyCols, orgID, opID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[HistoryEntry])
	if !errors.Is(mapErr(err), ErrNotFound) {
		return out, mapErr(err)
	}
	cur, err := HistoryByID(ctx, db, orgID, opID, id)
	switch {
	case err != nil:
		return cur, err
	case !cur.IsUndoable:
		return cur, ErrConflict
	}
	return cur, ErrAlreadyUndone
}

// FinishUndo marks an entry undone.
func FinishUndo(ctx context.Context, db DBTX, id uuid.UUID) error {
	_, err := db.Exec(ctx, `UPDATE operation_history SET is_undone = true WHERE id = $1`, id)
	return mapErr(err)
}

// --- execution ---

// ClaimHeld is what a claim holds: its items still processing (a previous
// attempt of the batch claimed them and did not settle them), in order,
// and how many items it ever claimed (settled or not).
func ClaimHeld(ctx context.Context, db DBTX, opID uuid.UUID, claim string) (processing []OperationItem, held int, err error) {
	rows, _ := db.Query(ctx, `SELECT `+itemCols+` FROM operation_items i WHERE i.operation_id = $1 AND i.claim = $2 AND i.status = 'processing' ORDER BY i.seq`, opID, claim)
	processing, err = pgx.CollectRows(rows, pgx.RowToStructByName[OperationItem])
	if err != nil {
		return nil, 0, mapErr(err)
	}
	if err := db.QueryRow(ctx, `SELECT count(*) FROM operation_items WHERE operation_id = $1 AND claim = $2`, opID, claim).Scan(&held); err != nil {
		return nil, 0, mapErr(err)
	}
	return processing, held, nil
}

// ClaimMoreItems moves up to n more pending items of an executing
// operation to processing under claim (in order; items locked by another
// claim are skipped) and returns them. Nothing is claimed unless the
// operation is executing.
func ClaimMoreItems(ctx context.Context, db DBTX, opID uuid.UUID, claim string, n int) ([]OperationItem, error) {
	rows, _ := db.Query(ctx, `UPDATE operation_items i SET status = 'processing', claim = $2, updated_at = now()
  FROM (SELECT id FROM operation_items WHERE operation_id = $1 AND status = 'pending'
          AND EXISTS (SELECT 1 FROM operations WHERE id = $1 AND status = 'executing')
        ORDER BY seq LIMIT $3 FOR UPDATE SKIP LOCKED) x
 WHERE i.id = x.id RETURNING `+itemCols, opID, claim, n)
	claimed, err := pgx.CollectRows(rows, pgx.RowToStructByName[OperationItem])
	if err != nil {
		return nil, mapErr(err)
	}
	// RETURNING gives no order: the claim's items go in sequence.
	slices.SortFunc(claimed, func(a, b OperationItem) int { return cmp.Compare(a.Seq, b.Seq) })
	return claimed, nil
}

// ItemResult is how an item's execution ended.
type ItemResult struct {
	ID                   uuid.UUID
	Status               string // completed, failed or skipped
	ErrorMessage         *string
	ShipmentID           *uuid.UUID
	DispatchAssignmentID *uuid.UUID
	// Cost, when not nil, replaces the item's cost (the label's price).
	Cost *float64
}

// SettleItems writes the results of items still processing (one
// statement); an item already settled is left as it is. It returns how
// many were settled.
func SettleItems(ctx context.Context, db DBTX, opID uuid.UUID, results []ItemResult) (int64, error) {
	if len(results) == 0 {
		return 0, nil
	}
	ids := make([]uuid.UUID, len(results))
	statuses := make([]string, len(results))
	msgs := make([]*string, len(results))
	ships := make([]*uuid.UUID, len(results))
	assigns := make([]*uuid.UUID, len(results))
	costs := make([]*float64, len(results))
	for i, r := range results {
		ids[i], statuses[i], msgs[i], ships[i], assigns[i], costs[i] = r.ID, r.Status, r.ErrorMessage, r.ShipmentID, r.DispatchAssignmentID, r.Cost
	}
	tag, err := db.Exec(ctx, `UPDATE operation_items i SET status = x.status, error_message = x.msg,
       shipment_id = coalesce(x.ship, i.shipment_id), dispatch_assignment_id = coalesce(x.assign, i.dispatch_assignment_id),
       cost = coalesce(x.cost, i.cost), retry_count = i.retry_count + CASE WHEN x.status = 'failed' THEN 1 ELSE 0 END, updated_at = now()
  FROM unnest($2::uuid[], $3::text[], $4::text[], $5::uuid[], $6::uuid[], $7::float8[]) AS x(id, status, msg, ship, assign, cost)
 WHERE i.operation_id = $1 AND i.id = x.id AND i.status = 'processing'`, opID, ids, statuses, msgs, ships, assigns, costs)
	if err != nil {
		return 0, mapErr(err)
	}
	return tag.RowsAffected(), nil
}

// ItemsWithEffects are up to limit items of the operation after seq that
// hold a label or a dispatch (an execution's effects), optionally only
// among ids.
func ItemsWithEffects(ctx context.Context, db DBTX, opID uuid.UUID, ids []uuid.UUID, afterSeq int64, limit int) ([]OperationItem, error) {
	rows, _ := db.Query(ctx, `SELECT `+itemCols+` FROM operation_items i
 WHERE i.operation_id = $1 AND i.seq > $2 AND (i.shipment_id IS NOT NULL OR i.dispatch_assignment_id IS NOT NULL)
   AND ($3::uuid[] IS NULL OR i.id = ANY($3))
 ORDER BY i.seq LIMIT $4`, opID, afterSeq, ids, limit)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[OperationItem])
	return out, mapErr(err)
}

// ReverseItem clears an item's effects after its undo: no shipment nor
// dispatch, skipped with msg, cost back to 0.
func ReverseItem(ctx context.Context, db DBTX, opID, id uuid.UUID, clearShipment, clearDispatch bool, msg string) error {
	_, err := db.Exec(ctx, `UPDATE operation_items SET status = 'skipped', error_message = $5, cost = 0,
       shipment_id = CASE WHEN $3 THEN NULL ELSE shipment_id END,
       dispatch_assignment_id = CASE WHEN $4 THEN NULL ELSE dispatch_assignment_id END, updated_at = now()
 WHERE operation_id = $1 AND id = $2`, opID, id, clearShipment, clearDispatch, msg)
	return mapErr(err)
}

// RunningOperations are up to limit operations executing or paused whose
// last change is older than before (the reconciler's candidates).
func RunningOperations(ctx context.Context, db DBTX, before time.Time, limit int) ([]Operation, error) {
	rows, _ := db.Query(ctx, operationSelect+` WHERE o.status IN ('executing', 'paused') AND o.updated_at < $1 ORDER BY o.updated_at LIMIT $2`, before, limit)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[Operation])
	return out, mapErr(err)
}

// StaleOperations lists up to limit operations executing or paused since
// before cutoff (their last change), oldest first: the reconciler's rows.
func StaleOperations(ctx context.Context, db DBTX, cutoff time.Time, limit int) ([]WaitingRow, error) {
	rows, _ := db.Query(ctx, `SELECT organization_id, id, updated_at AS since FROM operations
 WHERE status IN ('executing', 'paused') AND updated_at < $1 ORDER BY reconcile_checked_at NULLS FIRST, updated_at LIMIT $2`, cutoff, limit)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[WaitingRow])
	return out, mapErr(err)
}

// StaleUndos lists up to limit history entries whose undo began before
// cutoff and did not finish.
func StaleUndos(ctx context.Context, db DBTX, cutoff time.Time, limit int) ([]WaitingRow, error) {
	rows, _ := db.Query(ctx, `SELECT organization_id, id, undo_started_at AS since FROM operation_history
 WHERE undo_started_at IS NOT NULL AND NOT is_undone AND undo_started_at < $1 ORDER BY reconcile_checked_at NULLS FIRST, undo_started_at LIMIT $2`, cutoff, limit)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[WaitingRow])
	return out, mapErr(err)
}

// HistoryEntryByID is an entry of the organization, whatever its
// operation.
func HistoryEntryByID(ctx context.Context, db DBTX, orgID, id uuid.UUID) (HistoryEntry, error) {
	rows, _ := db.Query(ctx, `SELECT `+historyCols+` FROM operation_history WHERE organization_id = $1 AND id = $2`, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[HistoryEntry])
	return out, mapErr(err)
}

// AbandonUndo clears an unfinished undo, so that the entry may be undone
// again; it reports whether it did.
func AbandonUndo(ctx context.Context, db DBTX, orgID, id uuid.UUID) (bool, error) {
	tag, err := db.Exec(ctx, `UPDATE operation_history SET undo_started_at = NULL WHERE organization_id = $1 AND id = $2 AND NOT is_undone AND undo_started_at IS NOT NULL`, orgID, id)
	if err != nil {
		return false, mapErr(err)
	}
	return tag.RowsAffected() == 1, nil
}
