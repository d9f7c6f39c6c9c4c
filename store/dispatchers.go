package store

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Dispatcher triggers (Part 2) and match modes.
var (
	DispatcherTriggers   = []string{"order_created", "order_updated", "shipment_created", "manual"}
	DispatcherMatchModes = []string{"all", "any"}
)

// Dispatch assignment statuses (the CHECK of migrations/00021).
const (
	AssignmentPending    = "pending"
	AssignmentProcessing = "processing"
	AssignmentCompleted  = "completed"
	AssignmentFailed     = "failed"
	AssignmentSkipped    = "skipped"
)

// AssignmentStatuses are the statuses an assignment list filters by.
var AssignmentStatuses = []string{AssignmentPending, AssignmentProcessing, AssignmentCompleted, AssignmentFailed, AssignmentSkipped}

// Errors of dispatcher writes.
var (
	// ErrDispatcherSource: a source bridge is not one of the organization's.
	ErrDispatcherSource = errors.New("source bridge not found")
	// ErrDispatcherDestination: the destination bridge is not one of the
	// organization's.
	ErrDispatcherDestination = errors.New("destination bridge not found")
	// ErrDispatcherBusy: the dispatcher has pending or processing
	// assignments.
	ErrDispatcherBusy = errors.New("dispatcher has pending or processing assignments")
)

// Dispatcher routes orders of its source bridges to a destination bridge.
type Dispatcher struct {
	ID                  uuid.UUID       `db:"id"`
	OrganizationID      uuid.UUID       `db:"organization_id"`
	Name                string          `db:"name"`
	Description         *string         `db:"description"`
	SourceBridgeIDs     []uuid.UUID     `db:"source_bridge_ids"`
	DestinationBridgeID uuid.UUID       `db:"destination_bridge_id"`
	DestinationConfig   json.RawMessage `db:"destination_config"`
	Conditions          json.RawMessage `db:"conditions"`
	MatchMode           string          `db:"match_mode"`
	TriggerOn           []string        `db:"trigger_on"`
	IsActive            bool            `db:"is_active"`
	Priority            int             `db:"priority"`
	OrdersAssigned      int             `db:"orders_assigned"`
	LastAssignedAt      *time.Time      `db:"last_assigned_at"`
	ConditionSetIDs     []uuid.UUID     `db:"condition_set_ids"`
	CreatedAt           time.Time       `db:"created_at"`
	UpdatedAt           time.Time       `db:"updated_at"`
}

const dispatcherCols = `id, organization_id, name, description, source_bridge_ids, destination_bridge_id, destination_config,
 conditions, match_mode, trigger_on, is_active, priority, orders_assigned, last_assigned_at, condition_set_ids, created_at, updated_at`

// checkDispatcherRefs fills d's empty fields, then locks and checks what it
// points at: its bridges and condition sets must be the organization's.
func checkDispatcherRefs(ctx context.Context, tx pgx.Tx, d *Dispatcher) error {
	if d.ConditionSetIDs == nil {
		d.ConditionSetIDs = []uuid.UUID{}
	}
	if d.DestinationConfig == nil {
		d.DestinationConfig = json.RawMessage(`{}`)
	}
	if d.TriggerOn == nil {
		d.TriggerOn = []string{"order_created"}
	}
	ids := append([]uuid.UUID{d.DestinationBridgeID}, d.SourceBridgeIDs...)
	rows, _ := tx.Query(ctx, `SELECT id FROM bridges WHERE organization_id = $1 AND id = ANY($2) ORDER BY id FOR SHARE`, d.OrganizationID, ids)
	found, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return mapErr(err)
	}
	has := make(map[uuid.UUID]bool, len(found))
	for _, id := range found {
		has[id] = true
	}
	if !has[d.DestinationBridgeID] {
		return ErrDispatcherDestination
	}
	for _, id := range d.SourceBridgeIDs {
		if !has[id] {
			return ErrDispatcherSource
		}
	}
	missing, err := LockConditionSets(ctx, tx, d.OrganizationID, d.ConditionSetIDs)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return &MissingConditionSetsError{IDs: missing}
	}
	return nil
}

// CreateDispatcher inserts d (ID, OrganizationID and ConditionSetIDs set by
// the caller). ErrDispatcherSource, ErrDispatcherDestination,
// *MissingConditionSetsError, ErrConflict (name taken).
func CreateDispatcher(ctx context.Context, s *Store, d Dispatcher) (Dispatcher, error) {
	var out Dispatcher
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		if err := checkDispatcherRefs(ctx, tx, &d); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `
INSERT INTO dispatchers (id, organization_id, name, description, source_bridge_ids, destination_bridge_id, destination_config,
                         conditions, match_mode, trigger_on, is_active, priority, condition_set_ids)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
RETURNING `+dispatcherCols, d.ID, d.OrganizationID, d.Name, d.Description, d.SourceBridgeIDs, d.DestinationBridgeID,
			d.DestinationConfig, d.Conditions, d.MatchMode, d.TriggerOn, d.IsActive, d.Priority, d.ConditionSetIDs)
		var err error
		out, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Dispatcher])
		return mapErr(err)
	})
	return out, err
}

// UpdateDispatcher writes the editable fields of d (the whole new state;
// the counters are left alone). Errors as CreateDispatcher, and
// ErrNotFound.
func UpdateDispatcher(ctx context.Context, s *Store, d Dispatcher) (Dispatcher, error) {
	var out Dispatcher
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		if err := checkDispatcherRefs(ctx, tx, &d); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `
UPDATE dispatchers
   SET name = $3, description = $4, source_bridge_ids = $5, destination_bridge_id = $6, destination_config = $7,
       conditions = $8, match_mode = $9, trigger_on = $10, is_active = $11, priority = $12, condition_set_ids = $13,
       updated_at = now()
 WHERE organization_id = $1 AND id = $2
RETURNING `+dispatcherCols, d.OrganizationID, d.ID, d.Name, d.Description, d.SourceBridgeIDs, d.DestinationBridgeID,
			d.DestinationConfig, d.Conditions, d.MatchMode, d.TriggerOn, d.IsActive, d.Priority, d.ConditionSetIDs)
		var err error
		out, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Dispatcher])
		return mapErr(err)
	})
	return out, err
}

// DispatcherByID finds a dispatcher of the organization.
func DispatcherByID(ctx context.Context, db DBTX, orgID, id uuid.UUID) (Dispatcher, error) {
	rows, _ := db.Query(ctx, `SELECT `+dispatcherCols+` FROM dispatchers WHERE organization_id = $1 AND id = $2`, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Dispatcher])
	return out, mapErr(err)
}

// DispatcherFilter narrows a list; nil fields do not filter.
type DispatcherFilter struct {
	SourceBridgeID      *uuid.UUID
	DestinationBridgeID *uuid.UUID
	IsActive            *bool
	Limit, Offset       int
}

// ListDispatchers returns one page, by priority descending then name, and
// the number of all matching dispatchers.
func ListDispatchers(ctx context.Context, db DBTX, orgID uuid.UUID, f DispatcherFilter) ([]Dispatcher, int, error) {
	where := `organization_id = $1 AND ($2::uuid IS NULL OR source_bridge_ids @> ARRAY[$2::uuid])
 AND ($3::uuid IS NULL OR destination_bridge_id = $3) AND ($4::boolean IS NULL OR is_active = $4)`
	rows, _ := db.Query(ctx, `SELECT `+dispatcherCols+` FROM dispatchers WHERE `+where+`
 ORDER BY priority DESC, name, id LIMIT $5 OFFSET $6`, orgID, f.SourceBridgeID, f.DestinationBridgeID, f.IsActive, f.Limit, f.Offset)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[Dispatcher])
	if err != nil {
		return nil, 0, mapErr(err)
	}
	if len(out) < f.Limit && (len(out) > 0 || f.Offset == 0) {
		return out, f.Offset + len(out), nil
	}
	var total int
	err = db.QueryRow(ctx, `SELECT count(*) FROM dispatchers WHERE `+where, orgID, f.SourceBridgeID, f.DestinationBridgeID, f.IsActive).Scan(&total)
	return out, total, mapErr(err)
}

// DeleteDispatcher deletes a dispatcher and its finished assignments.
// ErrNotFound; ErrDispatcherBusy while an assignment of it is pending or
// processing.
func DeleteDispatcher(ctx context.Context, s *Store, orgID, id uuid.UUID) error {
	return s.InTx(ctx, func(tx pgx.Tx) error {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM dispatchers WHERE organization_id = $1 AND id = $2 FOR UPDATE`, orgID, id).Scan(&one)
		if err != nil {
			return mapErr(err)
		}
		var busy bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM dispatch_assignments WHERE dispatcher_id = $1 AND status IN ('pending', 'processing'))`, id).Scan(&busy); err != nil {
			return mapErr(err)
		}
		if busy {
			return ErrDispatcherBusy
		}
		_, err = tx.Exec(ctx, `DELETE FROM dispatchers WHERE organization_id = $1 AND id = $2`, orgID, id)
		return mapErr(err)
	})
}

// ActiveDispatchers are the organization's active dispatchers with the
// bridge among their sources, in the order they run (priority descending,
// then name). A trigger other than "" keeps those that list it.
func ActiveDispatchers(ctx context.Context, db DBTX, orgID, sourceBridgeID uuid.UUID, trigger string) ([]Dispatcher, error) {
	rows, _ := db.Query(ctx, `SELECT `+dispatcherCols+` FROM dispatchers
 WHERE organization_id = $1 AND is_active AND source_bridge_ids @> ARRAY[$2::uuid] AND ($3 = '' OR $3 = ANY(trigger_on))
 ORDER BY priority DESC, name, id`, orgID, sourceBridgeID, trigger)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[Dispatcher])
	return out, mapErr(err)
}

// The embed config's default dispatcher (CONTRACT 12: the new orders of
// bridges created through embed, those with an end user, are evaluated by
// it) is one of the dispatchers that apply to such an order, as if the
// bridge were among its sources: on order_created (and manual evaluation)
// whatever its triggerOn, on other triggers when it lists them, never
// towards the order's own bridge. The queries below that pick the
// dispatchers of an order (and CreateOrderProbeEvents' question) include it, so
// the routing domain's evaluation (rules.Hooks.Dispatch, conditions,
// assignment, start) runs it like any other.

// embedDefaultDispatcherSQL is the default dispatcher id of the config of
// org when bridge belongs to an end user (NULL otherwise).
func embedDefaultDispatcherSQL(org, bridge string) string {
	return `(SELECT c.default_dispatcher_id FROM embed_configs c JOIN bridges eb ON eb.organization_id = c.organization_id
  WHERE c.organization_id = ` + org + ` AND eb.id = ` + bridge + ` AND eb.end_user_id IS NOT NULL)`
}

// embedDefaultTriggerSQL: the default dispatcher runs on new orders
// ("order_created", rules.TriggerOrderCreated) and on a manual run (""),
// and on the triggers it lists.
func embedDefaultTriggerSQL(trigger string) string {
	return `(` + trigger + ` IN ('', 'order_created') OR ` + trigger + ` = ANY(d.trigger_on))`
}

// embedDefaultAppliesSQL tells whether the embed default dispatcher applies
// to an order of bridge for trigger.
func embedDefaultAppliesSQL(org, bridge, trigger string) string {
	return `EXISTS (SELECT 1 FROM dispatchers d WHERE d.organization_id = ` + org + ` AND d.is_active
  AND d.id = ` + embedDefaultDispatcherSQL(org, bridge) + ` AND d.destination_bridge_id <> ` + bridge + `
  AND ` + embedDefaultTriggerSQL(trigger) + `)`
}

// dispatcherAppliesSQL joins an order o to the active dispatchers d of
// trigger $3 ("" for any) that apply to it: those with its bridge among
// their sources, and the embed default dispatcher (above).
var dispatcherAppliesSQL = `d.organization_id = o.organization_id AND d.is_active
   AND ((d.source_bridge_ids @> ARRAY[o.bridge_id] AND ($3 = '' OR $3 = ANY(d.trigger_on)))
        OR (d.id = ` + embedDefaultDispatcherSQL("o.organization_id", "o.bridge_id") + `
            AND d.destination_bridge_id <> o.bridge_id AND ` + embedDefaultTriggerSQL("$3") + `))`

// ActiveDispatchersForOrder is ActiveDispatchers for the order's bridge
// (and the embed default dispatcher, above), in
// one query (none for an order without a bridge or of another
// organization): the order hooks ask it for every new order.
func ActiveDispatchersForOrder(ctx context.Context, db DBTX, orgID, orderID uuid.UUID, trigger string) ([]Dispatcher, error) {
	rows, _ := db.Query(ctx, `SELECT `+prefixCols("d.", dispatcherCols)+` FROM orders o
  JOIN dispatchers d ON `+dispatcherAppliesSQL+`
 WHERE o.organization_id = $1 AND o.id = $2 AND o.bridge_id IS NOT NULL
 ORDER BY d.priority DESC, d.name, d.id`, orgID, orderID, trigger)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[Dispatcher])
	return out, mapErr(err)
}

// OrderRulesApply tells in one round trip whether any active split rule
// and any active dispatcher (of trigger; "" for any) apply to the order's
// bridge: most new orders meet neither, and the order hooks then cost this
// one query. An order without a bridge, or of another organization, meets
// neither.
func OrderRulesApply(ctx context.Context, db DBTX, orgID, orderID uuid.UUID, trigger string) (split, dispatch bool, err error) {
	err = db.QueryRow(ctx, `SELECT
  EXISTS (SELECT 1 FROM split_rules s WHERE s.organization_id = o.organization_id AND s.is_active AND (s.bridge_id IS NULL OR s.bridge_id = o.bridge_id)),
  EXISTS (SELECT 1 FROM dispatchers d WHERE d.organization_id = o.organization_id AND d.is_active AND d.source_bridge_ids @> ARRAY[o.bridge_id] AND ($3 = '' OR $3 = ANY(d.trigger_on)))
  OR `+embedDefaultAppliesSQL("o.organization_id", "o.bridge_id", "$3")+`
  FROM orders o WHERE o.organization_id = $1 AND o.id = $2 AND o.bridge_id IS NOT NULL`, orgID, orderID, trigger).Scan(&split, &dispatch)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, false, nil
	}
	return split, dispatch, mapErr(err)
}

// DispatcherOrders is an active dispatcher with the orders of a batch it
// applies to (DispatchersForOrders).
type DispatcherOrders struct {
	Dispatcher
	OrderIDs []uuid.UUID `db:"order_ids"`
}

// dispatchersForOrdersSQL: the active dispatchers of trigger ($3; "" for
// any) that apply to any of the orders ($2) of the organization ($1),
// each once with the ids of those orders, in ActiveDispatchersForOrder's
// order (dispatchers.id is the key: its columns need no grouping).
var dispatchersForOrdersSQL = `SELECT ` + prefixCols("d.", dispatcherCols) + `, array_agg(o.id ORDER BY o.id) AS order_ids
  FROM orders o
  JOIN dispatchers d ON ` + dispatcherAppliesSQL + `
 WHERE o.organization_id = $1 AND o.id = ANY($2) AND o.bridge_id IS NOT NULL
 GROUP BY d.id
 ORDER BY d.priority DESC, d.name, d.id`

// DispatchersForOrders is ActiveDispatchersForOrder for many orders of
// the organization in one round trip: the dispatchers that apply to any
// of them, in ActiveDispatchersForOrder's order, each once with the ids
// of its orders (one row a dispatcher, not one per order and
// dispatcher).
func DispatchersForOrders(ctx context.Context, db DBTX, orgID uuid.UUID, orderIDs []uuid.UUID, trigger string) ([]DispatcherOrders, error) {
	if len(orderIDs) == 0 {
		return nil, nil
	}
	rows, _ := db.Query(ctx, dispatchersForOrdersSQL, orgID, orderIDs, trigger)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[DispatcherOrders])
	return out, mapErr(err)
}

// OrdersRules is what the order hooks of a batch of new orders of the
// organization need to know, in one round trip: the orders an active
// split rule applies to (OrderRulesApply's split, for each), and the active
// dispatchers of trigger with their orders (DispatchersForOrders; an
// order in none meets no dispatcher).
func OrdersRules(ctx context.Context, db DBTX, orgID uuid.UUID, orderIDs []uuid.UUID, trigger string) (map[uuid.UUID]bool, []DispatcherOrders, error) {
	split := map[uuid.UUID]bool{}
	if len(orderIDs) == 0 {
		return split, nil, nil
	}
	b := &pgx.Batch{}
	b.Queue(`SELECT o.id FROM orders o WHERE o.organization_id = $1 AND o.id = ANY($2) AND o.bridge_id IS NOT NULL
   AND EXISTS (SELECT 1 FROM split_rules s WHERE s.organization_id = o.organization_id AND s.is_active AND (s.bridge_id IS NULL OR s.bridge_id = o.bridge_id))`,
		orgID, orderIDs)
	b.Queue(dispatchersForOrdersSQL, orgID, orderIDs, trigger)
	br := db.SendBatch(ctx, b)
	defer br.Close()
	rows, _ := br.Query()
	var id uuid.UUID
	if _, err := pgx.ForEachRow(rows, []any{&id}, func() error { split[id] = true; return nil }); err != nil {
		return nil, nil, mapErr(err)
	}
	rows, _ = br.Query()
	ds, err := pgx.CollectRows(rows, pgx.RowToStructByName[DispatcherOrders])
	if err != nil {
		return nil, nil, mapErr(err)
	}
	return split, ds, mapErr(br.Close())
}

// orderDocColumns are the JSON columns of an order by the name of its
// field in the order document (rules.OrderDoc).
var orderDocColumns = map[string]string{
	"customer": "customer", "shippingAddress": "shipping_address", "billingAddress": "billing_address",
	"lineItems": "line_items", "totals": "totals", "metadata": "metadata", "sourceData": "source_data",
}

// orderDocFields is orderDocColumns the other way round.
var orderDocFields = func() map[string]string {
	m := map[string]string{}
	for f, c := range orderDocColumns {
		m[c] = f
	}
	return m
}()

// OrdersForConditions are OrdersByIDs with only the JSON documents named
// (by their order document field: "lineItems", "sourceData", ...; see
// orderDocColumns) and the metadata read, the others null: conditions
// that read an order's status do not need its line items, addresses and
// platform object read, sent and decoded for each order of a sync page.
func OrdersForConditions(ctx context.Context, db DBTX, orgID uuid.UUID, ids []uuid.UUID, docs []string) ([]Order, error) {
	read := map[string]bool{"metadata": true}
	for _, f := range docs {
		read[orderDocColumns[f]] = true
	}
	cols := strings.Split(orderCols, ",")
	for i, c := range cols {
		c = strings.TrimSpace(c)
		if _, doc := orderDocFields[c]; doc && !read[c] {
			c = "NULL::jsonb AS " + c
		}
		cols[i] = c
	}
	rows, _ := db.Query(ctx, `SELECT `+strings.Join(cols, ", ")+` FROM orders WHERE organization_id = $1 AND id = ANY($2)`, orgID, ids)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[Order])
	return out, mapErr(err)
}

// orderColsNoSource are orderCols with a null source_data.
var orderColsNoSource = strings.Replace(orderCols, "source_data", "NULL::jsonb AS source_data", 1)

// OrdersToDispatch are OrdersByIDs, without their source data (null)
// unless withSource: a synced order's source data is the platform's whole
// order object, which a drainer's push and most dispatchers' conditions
// do not read, and which would be read, sent and decoded for each order
// of a page.
func OrdersToDispatch(ctx context.Context, db DBTX, orgID uuid.UUID, ids []uuid.UUID, withSource bool) ([]Order, error) {
	if withSource {
		return OrdersByIDs(ctx, db, orgID, ids)
	}
	rows, _ := db.Query(ctx, `SELECT `+orderColsNoSource+` FROM orders WHERE organization_id = $1 AND id = ANY($2)`, orgID, ids)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[Order])
	return out, mapErr(err)
}

// prefixCols qualifies each column of a column list with prefix.
func prefixCols(prefix, cols string) string {
	parts := strings.Split(cols, ",")
	for i, p := range parts {
		parts[i] = prefix + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}

// DispatchAssignment is an order sent to a destination bridge.
type DispatchAssignment struct {
	ID             uuid.UUID `db:"id"`
	OrganizationID uuid.UUID `db:"organization_id"`
	// DispatcherID is nil for an order dispatched directly
	// (CreateDirectAssignment).
	DispatcherID        *uuid.UUID      `db:"dispatcher_id"`
	OrderID             uuid.UUID       `db:"order_id"`
	DestinationBridgeID uuid.UUID       `db:"destination_bridge_id"`
	Status              string          `db:"status"`
	TaskExecutionID     *uuid.UUID      `db:"task_execution_id"`
	ProcessedAt         *time.Time      `db:"processed_at"`
	ErrorMessage        *string         `db:"error_message"`
	RetryCount          int             `db:"retry_count"`
	Metadata            json.RawMessage `db:"metadata"`
	AssignedAt          time.Time       `db:"assigned_at"`
	CreatedAt           time.Time       `db:"created_at"`
	UpdatedAt           time.Time       `db:"updated_at"`
	// ClaimedBy is who processes it: a drainer's claim token
	// (DispatchBatch) or SingleRunClaimant; ClaimedUntil the end of a
	// drainer's lease. Not in the API.
	ClaimedBy    *string    `db:"claimed_by"`
	ClaimedUntil *time.Time `db:"claimed_until"`
}

const assignmentCols = `id, organization_id, dispatcher_id, order_id, destination_bridge_id, status, task_execution_id,
 processed_at, error_message, retry_count, metadata, assigned_at, created_at, updated_at, claimed_by, claimed_until`

// CreateAssignments assigns the orders (of the organization; others are
// ignored) to the dispatcher's destination, pending, in one statement.
// Orders already assigned to that destination are skipped. The
// dispatcher's ordersAssigned and lastAssignedAt count the new ones. The
// new assignments are returned in the order of orderIDs.
func CreateAssignments(ctx context.Context, db DBTX, d Dispatcher, orderIDs []uuid.UUID, metadata map[string]any) ([]DispatchAssignment, error) {
	if len(orderIDs) == 0 {
		return nil, nil
	}
	if metadata == nil {
		metadata = map[string]any{}
	}
	ids := make([]uuid.UUID, len(orderIDs))
	for i := range ids {
		ids[i] = uuid.New()
	}
	rows, _ := db.Query(ctx, `
WITH input AS (
    SELECT * FROM unnest($4::uuid[], $5::uuid[]) WITH ORDINALITY AS t(order_id, id, n)
), ins AS (
    INSERT INTO dispatch_assignments (id, organization_id, dispatcher_id, order_id, destination_bridge_id, metadata)
    SELECT i.id, $1, $2, i.order_id, $3, $6
      FROM input i JOIN orders o ON o.organization_id = $1 AND o.id = i.order_id
     ORDER BY i.n
    ON CONFLICT (organization_id, order_id, destination_bridge_id) DO NOTHING
    RETURNING `+assignmentCols+`
), counted AS (
    UPDATE dispatchers SET orders_assigned = orders_assigned + (SELECT count(*) FROM ins),
                           last_assigned_at = CASE WHEN (SELECT count(*) FROM ins) > 0 THEN now() ELSE last_assigned_at END
     WHERE organization_id = $1 AND id = $2
)
SELECT ins.* FROM ins JOIN input i ON i.id = ins.id ORDER BY i.n`,
		d.OrganizationID, d.ID, d.DestinationBridgeID, orderIDs, ids, metadata)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[DispatchAssignment])
	return out, mapErr(err)
}

// AssignmentByID finds an assignment of the organization.
func AssignmentByID(ctx context.Context, db DBTX, orgID, id uuid.UUID) (DispatchAssignment, error) {
	rows, _ := db.Query(ctx, `SELECT `+assignmentCols+` FROM dispatch_assignments WHERE organization_id = $1 AND id = $2`, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[DispatchAssignment])
	return out, mapErr(err)
}

// ListAssignments returns one page of a dispatcher's assignments, newest
// first ("" status: all), and their number.
func ListAssignments(ctx context.Context, db DBTX, orgID, dispatcherID uuid.UUID, status string, limit, offset int) ([]DispatchAssignment, int, error) {
	const where = ` FROM dispatch_assignments WHERE organization_id = $1 AND dispatcher_id = $2 AND ($3 = '' OR status = $3)`
	var total int
	if err := db.QueryRow(ctx, `SELECT count(*)`+where, orgID, dispatcherID, status).Scan(&total); err != nil {
		return nil, 0, mapErr(err)
	}
	rows, _ := db.Query(ctx, `SELECT `+assignmentCols+where+` ORDER BY created_at DESC, id DESC LIMIT $4 OFFSET $5`,
		orgID, dispatcherID, status, limit, offset)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[DispatchAssignment])
	if err != nil {
		return nil, 0, mapErr(err)
	}
	return out, total, nil
}

// AssignmentsOfOrders returns the assignments of the orders, newest first.
func AssignmentsOfOrders(ctx context.Context, db DBTX, orgID uuid.UUID, orderIDs []uuid.UUID) ([]DispatchAssignment, error) {
	if len(orderIDs) == 0 {
		return nil, nil
	}
	rows, _ := db.Query(ctx, `SELECT `+assignmentCols+` FROM dispatch_assignments
 WHERE organization_id = $1 AND order_id = ANY($2) ORDER BY created_at DESC, id DESC`, orgID, orderIDs)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[DispatchAssignment])
	return out, mapErr(err)
}

// PendingAssignments lists up to limit pending assignments of the
// organization, oldest first (nil destination: every destination).
func PendingAssignments(ctx context.Context, db DBTX, orgID uuid.UUID, destination *uuid.UUID, limit int) ([]DispatchAssignment, error) {
	rows, _ := db.Query(ctx, `SELECT `+assignmentCols+` FROM dispatch_assignments
 WHERE organization_id = $1 AND status = 'pending' AND ($2::uuid IS NULL OR destination_bridge_id = $2)
 ORDER BY created_at, id LIMIT $3`, orgID, destination, limit)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[DispatchAssignment])
	return out, mapErr(err)
}

// ResetFailedAssignments moves failed assignments back to pending with
// retryCount 0 (nil ids: every failed one of the organization) and returns
// the ids reset.
func ResetFailedAssignments(ctx context.Context, db DBTX, orgID uuid.UUID, ids []uuid.UUID) ([]uuid.UUID, error) {
	rows, _ := db.Query(ctx, `
UPDATE dispatch_assignments
   SET status = 'pending', retry_count = 0, error_message = NULL, processed_at = NULL, updated_at = now(),
       claimed_by = NULL, claimed_until = NULL
 WHERE organization_id = $1 AND status = 'failed' AND ($2::uuid[] IS NULL OR id = ANY($2))
RETURNING id`, orgID, ids)
	out, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	return out, mapErr(err)
}

// SingleRunClaimant is the claimed_by of an assignment a single
// DispatchAssignment run processes: its workflow id (dispatch/<id>).
func SingleRunClaimant(id uuid.UUID) string { return "dispatch/" + id.String() }

// BeginAssignment moves a pending assignment to processing, claimed by
// its single DispatchAssignment run (SingleRunClaimant), and returns it; a
// processing one the run claimed already (a retried attempt), or one left
// processing without a claim (a run of an earlier version), is returned
// as it is, a finished one too (the caller sees its status and does
// nothing). One a drainer claimed is returned with its ClaimedBy: the
// caller leaves it to the drainer.
func BeginAssignment(ctx context.Context, db DBTX, orgID, id uuid.UUID) (DispatchAssignment, error) {
	rows, _ := db.Query(ctx, `
UPDATE dispatch_assignments
   SET status = CASE WHEN status = 'pending' THEN 'processing' ELSE status END,
       claimed_by = CASE WHEN status = 'pending' OR (status = 'processing' AND claimed_by IS NULL) THEN $3 ELSE claimed_by END,
       claimed_until = CASE WHEN status = 'pending' THEN NULL ELSE claimed_until END,
       updated_at = CASE WHEN status = 'pending' THEN now() ELSE updated_at END
 WHERE organization_id = $1 AND id = $2
RETURNING `+assignmentCols, orgID, id, SingleRunClaimant(id))
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[DispatchAssignment])
	return out, mapErr(err)
}

// AssignmentOutcome is how an assignment ended.
type AssignmentOutcome struct {
	Status       string // completed, failed or skipped
	ErrorMessage string
	// Metadata keys merged into the assignment's metadata.
	Metadata map[string]any
	// SentTo marks the order: "fulfillment" sets sent_to_fulfillment,
	// "cart" sent_to_cart ("" neither).
	SentTo string
	// TaskName and Output record a task execution of the destination
	// bridge for the push ("" TaskName: none).
	TaskName   string
	WorkflowID string
	Input      map[string]any
	Output     map[string]any
}

// FinishAssignment records the outcome of a processing assignment (a
// finished one is left as it is: false), with its task execution and the
// order's sent mark, in one transaction.
func FinishAssignment(ctx context.Context, s *Store, orgID, id uuid.UUID, o AssignmentOutcome) (bool, error) {
	var done bool
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		var a DispatchAssignment
		rows, _ := tx.Query(ctx, `SELECT `+assignmentCols+` FROM dispatch_assignments WHERE organization_id = $1 AND id = $2 FOR UPDATE`, orgID, id)
		a, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[DispatchAssignment])
		if err != nil {
			return mapErr(err)
		}
		if a.Status != AssignmentProcessing && a.Status != AssignmentPending {
			return nil
		}
		var execID *uuid.UUID
		if o.TaskName != "" {
			status := TaskCompleted
			var errText *string
			if o.Status == AssignmentFailed {
				status, errText = TaskFailed, &o.ErrorMessage
			}
			input, output := o.Input, o.Output
			if input == nil {
				input = map[string]any{}
			}
			eid := uuid.New()
			if _, err := tx.Exec(ctx, `
INSERT INTO task_executions (id, organization_id, bridge_id, task_name, status, input, output, error, workflow_id, started_at, finished_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, now())`, eid, orgID, a.DestinationBridgeID, o.TaskName, status, input, output, errText,
				o.WorkflowID, a.UpdatedAt); err != nil {
				return mapErr(err)
			}
			execID = &eid
		}
		var errMsg *string
		if o.ErrorMessage != "" {
			errMsg = &o.ErrorMessage
		}
		md := o.Metadata
		if md == nil {
			md = map[string]any{}
		}
		if _, err := tx.Exec(ctx, `
UPDATE dispatch_assignments
   SET status = $3, error_message = $4, metadata = metadata || $5::jsonb, task_execution_id = COALESCE($6, task_execution_id),
       processed_at = now(), updated_at = now(), claimed_by = NULL, claimed_until = NULL,
       retry_count = CASE WHEN $3 = 'failed' THEN retry_count + 1 ELSE retry_count END
 WHERE organization_id = $1 AND id = $2`, orgID, id, o.Status, errMsg, md, execID); err != nil {
			return mapErr(err)
		}
		switch o.SentTo {
		case "fulfillment":
			_, err = tx.Exec(ctx, `UPDATE orders SET sent_to_fulfillment = now(), updated_at = now() WHERE organization_id = $1 AND id = $2`, orgID, a.OrderID)
		case "cart":
			_, err = tx.Exec(ctx, `UPDATE orders SET sent_to_cart = now(), updated_at = now() WHERE organization_id = $1 AND id = $2`, orgID, a.OrderID)
		}
		done = err == nil
		return mapErr(err)
	})
	return done, err
}

// CreateDirectAssignment assigns an order of the organization to a
// destination bridge without a dispatcher, pending, with metadata. When
// the order already has an assignment to that bridge (from a dispatcher
// or an earlier direct dispatch), that one is returned as it is and
// created is false: one assignment per order and destination. An order or
// bridge that is not the organization's is ErrNotFound.
func CreateDirectAssignment(ctx context.Context, db DBTX, orgID, orderID, bridgeID uuid.UUID, metadata map[string]any) (a DispatchAssignment, created bool, err error) {
	if metadata == nil {
		metadata = map[string]any{}
	}
	rows, _ := db.Query(ctx, `
INSERT INTO dispatch_assignments (id, organization_id, order_id, destination_bridge_id, metadata)
SELECT $1, o.organization_id, o.id, b.id, $5
  FROM orders o JOIN bridges b ON b.organization_id = o.organization_id AND b.id = $4
 WHERE o.organization_id = $2 AND o.id = $3
ON CONFLICT (organization_id, order_id, destination_bridge_id) DO NOTHING
RETURNING `+assignmentCols, uuid.New(), orgID, orderID, bridgeID, metadata)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[DispatchAssignment])
	if err != nil {
		return a, false, mapErr(err)
	}
	if len(list) == 1 {
		return list[0], true, nil
	}
	rows, _ = db.Query(ctx, `SELECT `+assignmentCols+` FROM dispatch_assignments
 WHERE organization_id = $1 AND order_id = $2 AND destination_bridge_id = $3`, orgID, orderID, bridgeID)
	a, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[DispatchAssignment])
	return a, false, mapErr(err)
}

// ErrAssignmentNotCancellable: the assignment is being pushed or was
// pushed (processing or completed); it cannot be cancelled.
var ErrAssignmentNotCancellable = errors.New("the assignment is being or was pushed")

// CancelAssignment cancels an assignment that was not pushed: a pending or
// failed one becomes skipped with errorMessage reason and
// metadata.cancelled true (its run, if started, then does nothing). One
// already skipped is returned as it is. A processing or completed one is
// ErrAssignmentNotCancellable (with the assignment), a missing one
// ErrNotFound.
func CancelAssignment(ctx context.Context, db DBTX, orgID, id uuid.UUID, reason string) (DispatchAssignment, error) {
	rows, _ := db.Query(ctx, `
UPDATE dispatch_assignments
   SET status = 'skipped', error_message = $3, metadata = metadata || '{"cancelled": true}'::jsonb,
       processed_at = now(), updated_at = now()
 WHERE organization_id = $1 AND id = $2 AND status IN ('pending', 'failed')
RETURNING `+assignmentCols, orgID, id, reason)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[DispatchAssignment])
	if err != nil {
		return DispatchAssignment{}, mapErr(err)
	}
	if len(list) == 1 {
		return list[0], nil
	}
	a, err := AssignmentByID(ctx, db, orgID, id)
	if err != nil {
		return a, err
	}
	if a.Status == AssignmentSkipped {
		return a, nil
	}
	return a, ErrAssignmentNotCancellable
}

// StaleAssignment is an assignment the reconciler looks at: pending or
// processing since before the cutoff, with who claimed it.
type StaleAssignment struct {
	WaitingRow
	DestinationBridgeID uuid.UUID `db:"destination_bridge_id"`
	Status              string    `db:"status"`
	ClaimedBy           *string   `db:"claimed_by"`
}

// StaleAssignments lists up to limit assignments pending or processing
// since before cutoff for the reconciler, the least recently checked
// first (MarkReconcileChecked; never checked first), then oldest.
func StaleAssignments(ctx context.Context, db DBTX, cutoff time.Time, limit int) ([]StaleAssignment, error) {
	rows, _ := db.Query(ctx, `SELECT organization_id, id, updated_at AS since, destination_bridge_id, status, claimed_by
  FROM dispatch_assignments
 WHERE status IN ('pending', 'processing') AND updated_at < $1
 ORDER BY reconcile_checked_at NULLS FIRST, updated_at LIMIT $2`, cutoff, limit)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[StaleAssignment])
	return out, mapErr(err)
}
