package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Order values (the CHECK constraints of migrations/00003_orders.sql).
var (
	OrderStatuses       = []string{"pending", "confirmed", "processing", "shipped", "delivered", "cancelled", "refunded", "on_hold"}
	PaymentStatuses     = []string{"pending", "authorized", "paid", "partially_paid", "refunded", "voided"}
	FulfillmentStatuses = []string{"unfulfilled", "partial", "fulfilled"}
)

// ErrOrderLineItemsLocked refuses a line item change on an order that is
// shipped or delivered.
var ErrOrderLineItemsLocked = errors.New("line items cannot change once an order is shipped or delivered")

// Order is an order of one organization. The jsonb columns stay raw JSON:
// the API validated them on the way in and writes them out unchanged.
type Order struct {
	ID                uuid.UUID       `db:"id"`
	OrganizationID    uuid.UUID       `db:"organization_id"`
	BridgeID          *uuid.UUID      `db:"bridge_id"`
	ExternalID        string          `db:"external_id"`
	OrderNumber       *string         `db:"order_number"`
	Status            string          `db:"status"`
	PaymentStatus     string          `db:"payment_status"`
	FulfillmentStatus string          `db:"fulfillment_status"`
	Customer          json.RawMessage `db:"customer"`
	CustomerEmail     string          `db:"customer_email"`
	CustomerName      string          `db:"customer_name"`
	ShippingAddress   json.RawMessage `db:"shipping_address"` // nil: SQL NULL
	BillingAddress    json.RawMessage `db:"billing_address"`
	LineItems         json.RawMessage `db:"line_items"`
	Totals            json.RawMessage `db:"totals"`
	Total             float64         `db:"total"` // totals.total, for sorting
	Currency          string          `db:"currency"`
	Tags              []string        `db:"tags"`
	Note              *string         `db:"note"`
	Metadata          json.RawMessage `db:"metadata"`
	SourceData        json.RawMessage `db:"source_data"`
	OrderedAt         time.Time       `db:"ordered_at"`
	SentToFulfillment *time.Time      `db:"sent_to_fulfillment"`
	SentToCart        *time.Time      `db:"sent_to_cart"`
	CreatedAt         time.Time       `db:"created_at"`
	UpdatedAt         time.Time       `db:"updated_at"`
}

const orderCols = `id, organization_id, bridge_id, external_id, order_number, status, payment_status, fulfillment_status,
 customer, customer_email, customer_name, shipping_address, billing_address, line_items, totals, total, currency,
 tags, note, metadata, source_data, ordered_at, sent_to_fulfillment, sent_to_cart, created_at, updated_at`

// The bridge check and the insert are one statement (one round trip): no row
// comes back when the bridge is not the organization's. Only what the
// database decides comes back; the rest is what was sent.
const insertOrderSQL = `
INSERT INTO orders (id, organization_id, bridge_id, external_id, order_number, status, payment_status, fulfillment_status,
                    customer, customer_email, customer_name, shipping_address, billing_address, line_items, totals, total,
                    currency, tags, note, metadata, source_data, ordered_at)
SELECT $1::uuid, $2::uuid, $3::uuid, $4::text, $5::text, $6::text, $7::text, $8::text,
       $9::jsonb, $10::text, $11::text, $12::jsonb, $13::jsonb, $14::jsonb, $15::jsonb, $16::numeric,
       $17::text, $18::text[], $19::text, $20::jsonb, $21::jsonb, coalesce($22::timestamptz, now())
 WHERE EXISTS (SELECT 1 FROM bridges WHERE id = $3::uuid AND organization_id = $2::uuid)
RETURNING ordered_at, created_at, updated_at`

// CreateOrder inserts o (ID, OrganizationID and BridgeID set by the caller; a
// zero OrderedAt means now) and returns it as stored. ErrNotFound: the
// bridge is not one of the organization's. ErrConflict: the bridge already
// has an order with this external_id.
func CreateOrder(ctx context.Context, db DBTX, o Order) (Order, error) {
	args := insertOrderArgs(&o)
	err := db.QueryRow(ctx, insertOrderSQL, args...).Scan(&o.OrderedAt, &o.CreatedAt, &o.UpdatedAt)
	if err != nil {
		return Order{}, insertOrderErr(err)
	}
	return o, nil
}

// insertOrderArgs fills o's defaults and returns insertOrderSQL's arguments.
func insertOrderArgs(o *Order) []any {
	var orderedAt *time.Time
	if !o.OrderedAt.IsZero() {
		orderedAt = &o.OrderedAt
	}
	if o.Tags == nil {
		o.Tags = []string{}
	}
	if o.Metadata == nil {
		o.Metadata = json.RawMessage(`{}`)
	}
	return []any{o.ID, o.OrganizationID, o.BridgeID, o.ExternalID, o.OrderNumber,
		o.Status, o.PaymentStatus, o.FulfillmentStatus, o.Customer, o.CustomerEmail, o.CustomerName,
		o.ShippingAddress, o.BillingAddress, o.LineItems, o.Totals, o.Total, o.Currency, o.Tags, o.Note,
		o.Metadata, o.SourceData, orderedAt}
}

// insertOrderErr maps an insert's error.
func insertOrderErr(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23503" { // the bridge was deleted meanwhile
		return ErrNotFound
	}
	return mapErr(err)
}

// OrderProbe is what CreateOrderProbeEvents learned with the insert.
type OrderProbe struct {
	// Split and Dispatch: an active split rule or dispatcher of the
	// trigger applies to the order.
	Split, Dispatch bool
	// Standing: the organization has an active standing order of the
	// event (false when no event was asked about).
	Standing bool
}

// CreateOrderProbeEvents is CreateOrder that also tells, in the same
// statement, whether any active split rule or dispatcher of trigger applies
// to the new order (OrderRulesApply's question for the order's bridge: the
// API then spares the order hooks their own query, rules.WithRulesKnown),
// and whether the organization has any active standing order of event (the
// agent's trigger type, e.g. on_order_created; "" asks nothing), so that
// telling the event to nobody costs no round trip of its own
// (rules.WithStandingKnown): POST /orders is then one statement.
func CreateOrderProbeEvents(ctx context.Context, db DBTX, o Order, trigger, event string) (Order, OrderProbe, error) {
	args := append(insertOrderArgs(&o), trigger, event)
	var p OrderProbe
	err := db.QueryRow(ctx, createOrderProbeSQL, args...).Scan(&o.OrderedAt, &o.CreatedAt, &o.UpdatedAt, &p.Split, &p.Dispatch, &p.Standing)
	if err != nil {
		return Order{}, OrderProbe{}, insertOrderErr(err)
	}
	return o, p, nil
}

// createOrderProbeSQL is insertOrderSQL with the rules question ($23: the
// trigger; an order without a bridge meets no rule) and the standing
// orders question ($24: the event, ” for none; the partial index
// agent_standing_orders_trigger_idx answers it). The questions read the
// rule tables, never the order just inserted.
var createOrderProbeSQL = `WITH ins AS (` + insertOrderSQL + `)
SELECT ins.ordered_at, ins.created_at, ins.updated_at,
  $3::uuid IS NOT NULL AND EXISTS (SELECT 1 FROM split_rules s WHERE s.organization_id = $2 AND s.is_active AND (s.bridge_id IS NULL OR s.bridge_id = $3)),
  $3::uuid IS NOT NULL AND (EXISTS (SELECT 1 FROM dispatchers d WHERE d.organization_id = $2 AND d.is_active AND d.source_bridge_ids @> ARRAY[$3::uuid] AND ($23::text = '' OR $23::text = ANY(d.trigger_on)))
    OR ` + embedDefaultAppliesSQL("$2::uuid", "$3::uuid", "$23::text") + `),
  $24::text <> '' AND EXISTS (SELECT 1 FROM agent_standing_orders a WHERE a.organization_id = $2 AND a.trigger_type = $24::text AND a.is_active)
FROM ins`

// OrderByID finds an order of the organization.
func OrderByID(ctx context.Context, db DBTX, orgID, id uuid.UUID) (Order, error) {
	rows, _ := db.Query(ctx, `SELECT `+orderCols+` FROM orders WHERE organization_id = $1 AND id = $2`, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Order])
	return out, mapErr(err)
}

// DeleteOrder deletes an order and its activities for good.
func DeleteOrder(ctx context.Context, db DBTX, orgID, id uuid.UUID) error {
	tag, err := db.Exec(ctx, `DELETE FROM orders WHERE organization_id = $1 AND id = $2`, orgID, id)
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// OrderListItem is the part of an order a list shows.
type OrderListItem struct {
	ID                uuid.UUID       `db:"id"`
	OrderNumber       *string         `db:"order_number"`
	Status            string          `db:"status"`
	CustomerName      string          `db:"customer_name"`
	CustomerEmail     string          `db:"customer_email"`
	LineItems         json.RawMessage `db:"line_items"`
	Total             float64         `db:"total"`
	Currency          string          `db:"currency"`
	BridgeID          *uuid.UUID      `db:"bridge_id"`
	ExternalID        string          `db:"external_id"`
	SentToFulfillment *time.Time      `db:"sent_to_fulfillment"`
	SentToCart        *time.Time      `db:"sent_to_cart"`
	CreatedAt         time.Time       `db:"created_at"`
	UpdatedAt         time.Time       `db:"updated_at"`
}

var orderListColNames = []string{"id", "order_number", "status", "customer_name", "customer_email", "line_items", "total", "currency",
	"bridge_id", "external_id", "sent_to_fulfillment", "sent_to_cart", "created_at", "updated_at"}

// orderListColsOf is the list columns of the table alias t.
func orderListColsOf(t string) string {
	return t + "." + strings.Join(orderListColNames, ", "+t+".")
}

// OrderSortColumns maps the API's sort fields to columns; nothing else is
// ever put into ORDER BY.
var OrderSortColumns = map[string]string{
	"created_at":   "created_at",
	"updated_at":   "updated_at",
	"ordered_at":   "ordered_at",
	"order_number": "order_number",
	"total":        "total",
}

// OrderFilter narrows a list; zero values do not filter.
type OrderFilter struct {
	Status   string
	BridgeID *uuid.UUID
	// Search is a case-insensitive substring of the order number, the
	// customer's name or e-mail (the trigram index on search_text).
	Search string
	// Since keeps orders created after it.
	Since *time.Time
	// ExternalID keeps the orders with this platform id (one per bridge).
	ExternalID string
}

// OrderListParams is a filter, a sort and a page.
type OrderListParams struct {
	Filter OrderFilter
	// Sort is a key of OrderSortColumns; empty means created_at.
	Sort   string
	Desc   bool
	Limit  int
	Offset int
}

// likeEscaper makes user text literal inside a LIKE pattern (backslash is
// PostgreSQL's default LIKE escape).
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// orderWhere renders the filter; $1 is always the organization.
func orderWhere(orgID uuid.UUID, f OrderFilter) (string, []any) {
	args := []any{orgID}
	var b strings.Builder
	b.WriteString("organization_id = $1")
	add := func(cond string, v any) {
		args = append(args, v)
		b.WriteString(" AND ")
		b.WriteString(strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(args))))
	}
	if f.Status != "" {
		add("status = ?", f.Status)
	}
	if f.BridgeID != nil {
		add("bridge_id = ?", *f.BridgeID)
	}
	if f.Search != "" {
		// search_text is lower(order_number || name || e-mail); lower() the
		// pattern with the same function so both sides agree.
		add("search_text LIKE lower(?)", "%"+likeEscaper.Replace(f.Search)+"%")
	}
	if f.Since != nil {
		add("created_at > ?", *f.Since)
	}
	if f.ExternalID != "" {
		add("external_id = ?", f.ExternalID)
	}
	return b.String(), args
}

// OrderIDByExternalID is the id of the bridge's order with a platform id
// (ErrNotFound when there is none).
func OrderIDByExternalID(ctx context.Context, db DBTX, orgID, bridgeID uuid.UUID, externalID string) (uuid.UUID, error) {
	var id uuid.UUID
	err := db.QueryRow(ctx, `SELECT id FROM orders WHERE organization_id = $1 AND bridge_id = $2 AND external_id = $3`, orgID, bridgeID, externalID).Scan(&id)
	return id, mapErr(err)
}

// orderPageSQL is ListOrders' page statement and its arguments, the
// count statement, and whether the count runs apart (splitCount).
func orderPageSQL(db DBTX, orgID uuid.UUID, p OrderListParams) (pageSQL string, args []any, countSQL string, splitCount bool) {
	col, ok := OrderSortColumns[p.Sort]
	if !ok {
		col = "created_at"
	}
	dir := " ASC"
	if p.Desc {
		dir = " DESC"
	}
	where, args := orderWhere(orgID, p.Filter)
	nulls := ""
	if col == "order_number" { // the one nullable sort column: orders without a number last
		nulls = " NULLS LAST"
	}
	countSQL = orderCountSQL(p.Filter, where)
	// A search's count is a scan of the organization's orders; on a pool it
	// runs after the page, split over key ranges that run at once.
	_, splitCount = db.(*pgxpool.Pool)
	splitCount = splitCount && p.Filter.Search != ""
	inlineCount := countSQL
	if splitCount {
		inlineCount = "NULL"
	}
	// The count subquery is evaluated once, and only when the CASE needs it.
	pageSQL = fmt.Sprintf(`SELECT CASE WHEN count(*) OVER () < %d THEN %d + count(*) OVER () ELSE (%s) END AS match_count, `,
		p.Limit, p.Offset, inlineCount) + orderListColsOf("o") + `
  FROM (SELECT id, ` + col + ` FROM orders WHERE ` + where +
		` ORDER BY ` + col + dir + nulls + `, id` + dir + fmt.Sprintf(` LIMIT %d OFFSET %d`, p.Limit, p.Offset) + `) AS p
  JOIN orders o ON o.id = p.id
 ORDER BY p.` + col + dir + nulls + `, p.id` + dir
	return pageSQL, args, countSQL, splitCount
}

// OrderIDByRef is the id of the organization's newest order whose order
// number (with or without a leading #) or external id is ref (ErrNotFound
// when there is none).
func OrderIDByRef(ctx context.Context, db DBTX, orgID uuid.UUID, ref string) (uuid.UUID, error) {
	var id uuid.UUID
	err := db.QueryRow(ctx, `SELECT id FROM orders WHERE organization_id = $1 AND (order_number = $2 OR order_number = '#' || $2 OR external_id = $2)
 ORDER BY created_at DESC LIMIT 1`, orgID, ref).Scan(&id)
	return id, mapErr(err)
}

// OrderTotals are the totals (totals.total) of the organization's orders
// among ids; an id of another organization is absent.
func OrderTotals(ctx context.Context, db DBTX, orgID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]float64, error) {
	rows, err := db.Query(ctx, `SELECT id, total::float8 FROM orders WHERE organization_id = $1 AND id = ANY($2)`, orgID, ids)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	out := make(map[uuid.UUID]float64, len(ids))
	for rows.Next() {
		var id uuid.UUID
		var total float64
		if err := rows.Scan(&id, &total); err != nil {
			return nil, err
		}
		out[id] = total
	}
	return out, mapErr(rows.Err())
}

// ListOrders returns one page and the number of all matching orders.
//
// The page walks an index that holds the organization, the sort key and the
// id (migration 00014), skipping the offset without reading a single row,
// and only then joins the page's own rows: page 500 costs an index walk of
// 10,000 entries and 20 row reads, not 10,000 row reads. The count runs only
// when the page is full (a page that is not tells the total itself):
//   - without a search or since, it is a sum over the organization's kept
//     counters (migration 00025), in the same statement and snapshot as the
//     page;
//   - with a since, an index-only scan, in the same statement;
//   - with a search, an index-only scan of the index that carries
//     search_text (no row is read or detoasted); on a pool it runs after
//     the page, in id ranges at once (countInParts), so a total may miss a
//     change committed in between, like any count next to a page.
//
// Index-only scans need the visibility map to be current, which autovacuum
// keeps after changes (migration 00014 tunes it for the orders table).
func ListOrders(ctx context.Context, db DBTX, orgID uuid.UUID, p OrderListParams) ([]OrderListItem, int, error) {
	pageSQL, args, countSQL, splitCount := orderPageSQL(db, orgID, p)
	pool, _ := db.(*pgxpool.Pool)
	// Parameters are sent with each statement (no cached generic plan), so
	// the planner sees the actual status, bridge and search pattern and picks
	// between the trigram index and an index-only walk.
	mode := pgx.QueryExecModeExec
	rows, _ := db.Query(ctx, pageSQL, append([]any{mode}, args...)...)
	page, err := pgx.CollectRows(rows, pgx.RowToStructByName[orderListRow])
	if err != nil {
		return nil, 0, mapErr(err)
	}
	items := make([]OrderListItem, len(page))
	for i, r := range page {
		items[i] = r.OrderListItem
	}
	switch {
	case len(page) > 0 && page[0].MatchCount != nil:
		return items, *page[0].MatchCount, nil
	case len(page) == 0 && p.Offset == 0:
		return items, 0, nil
	case splitCount:
		total, err := countInParts(ctx, pool, countSQL, args)
		if len(items) > 0 {
			// Orders deleted after the page was read do not make the
			// total smaller than what the page shows.
			total = max(total, p.Offset+len(items))
		}
		return items, total, err
	}
	// Past the end: the count alone.
	var total int
	err = db.QueryRow(ctx, countSQL, append([]any{mode}, args...)...).Scan(&total)
	return items, total, mapErr(err)
}

// searchCountParts is the number of id ranges a search's count is split
// into. Counting a term found in most orders evaluates it on every order
// of the organization (a trigram index cannot count without reading every
// row it finds); the parts scan the (organization, id) index that carries
// search_text (migration 00026) at once, on their own connections, and
// take about 1/parts of the time on a server with as many idle cores.
// PostgreSQL's own parallel query does the same but starts worker
// processes for each statement, which costs more than it saves here.
// Order ids are random (UUIDv4, or UUIDv5 of an idempotency key), so equal
// ranges hold equal shares.
const searchCountParts = 2

// countInParts runs countSQL once per id range, at once, and adds the
// counts. The parts run in separate snapshots: a change committed between
// them is counted as of the part that saw it, like a change between the
// page and its count.
func countInParts(ctx context.Context, pool *pgxpool.Pool, countSQL string, args []any) (int, error) {
	n := len(args)
	partSQL := countSQL + ` AND id >= $` + strconv.Itoa(n+1) + ` AND id <= $` + strconv.Itoa(n+2)
	counts := make([]int, searchCountParts)
	errs := make([]error, searchCountParts)
	var wg sync.WaitGroup
	for i := range searchCountParts {
		lo, hi := idRange(i, searchCountParts)
		partArgs := append(append([]any{pgx.QueryExecModeExec}, args...), lo, hi)
		wg.Go(func() {
			errs[i] = pool.QueryRow(ctx, partSQL, partArgs...).Scan(&counts[i])
		})
	}
	wg.Wait()
	total := 0
	for i := range counts {
		if errs[i] != nil {
			return 0, mapErr(errs[i])
		}
		total += counts[i]
	}
	return total, nil
}

// idRange is the i-th of n equal ranges of the UUID space, both ends
// included (n at most 256).
func idRange(i, n int) (lo, hi uuid.UUID) {
	lo[0] = byte(i * 256 / n)
	for j := range hi {
		hi[j] = 0xff
	}
	hi[0] = byte((i+1)*256/n - 1)
	return lo, hi
}

// orderCountSQL is the statement that counts the filter's matches. Without
// a search or a since, the count is a sum over the organization's kept
// counters (migration 00025), read in the same snapshot as the page: exact,
// and independent of the number of orders. $1, $2... are orderWhere's
// arguments, in its order.
func orderCountSQL(f OrderFilter, where string) string {
	// The counters keep orders without a bridge under the nil UUID, which a
	// bridge_id filter of the nil UUID must not match.
	if f.Search != "" || f.Since != nil || f.ExternalID != "" || (f.BridgeID != nil && *f.BridgeID == uuid.Nil) {
		return `SELECT count(*) FROM orders WHERE ` + where
	}
	q := `SELECT coalesce(sum(n), 0) FROM order_counts WHERE organization_id = $1`
	arg := 1
	if f.Status != "" {
		arg++
		q += ` AND status = $` + strconv.Itoa(arg)
	}
	if f.BridgeID != nil {
		arg++
		q += ` AND bridge_key = $` + strconv.Itoa(arg)
	}
	return q
}

// compactOrderCountsBatch bounds the session rows one folding statement
// holds, so a writer whose row is being folded waits a moment at most.
const compactOrderCountsBatch = 5000

// orderCountsLock is the advisory lock one compaction (and a TRUNCATE of
// orders, migration 00025) holds at a time.
const orderCountsLock = `hashtext('fos.order_counts')`

// CompactOrderCounts folds the kept order counters that database sessions
// wrote (one row per session and bucket, migration 00025) into each
// bucket's writer-0 row, then drops buckets that reached zero and the
// counters of deleted organizations. It returns the number of session rows
// folded and rows dropped. A row its session holds right now is skipped and
// folded next time. Sessions never write writer-0 rows, and one compaction
// runs at a time (an advisory lock; a second returns at once), so
// compaction waits for nobody.
func CompactOrderCounts(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	var removed int64
	// locked runs fn in a transaction that holds the compaction lock; ok is
	// false when another compaction holds it.
	locked := func(fn func(tx pgx.Tx) (int64, error)) (ok bool, n int64, err error) {
		err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(`+orderCountsLock+`)`).Scan(&ok); err != nil || !ok {
				return err
			}
			n, err = fn(tx)
			return err
		})
		return ok, n, mapErr(err)
	}
	for {
		// The session rows are found by a scan that stops at the batch's
		// size and deleted by their ctid (a TID scan), never by a pass over
		// the whole table while holding them. A row updated since the
		// statement began is not deleted (its ctid moved) and waits for the
		// next compaction.
		ok, folded, err := locked(func(tx pgx.Tx) (int64, error) {
			var n int64
			err := tx.QueryRow(ctx, `
WITH gone AS (
    DELETE FROM order_counts
     WHERE ctid = ANY (ARRAY(SELECT ctid FROM order_counts WHERE writer <> 0 LIMIT $1 FOR UPDATE SKIP LOCKED))
    RETURNING organization_id, status, bridge_key, n
), kept AS (
    INSERT INTO order_counts AS c (organization_id, status, bridge_key, writer, n)
    SELECT organization_id, status, bridge_key, 0, sum(n) FROM gone GROUP BY 1, 2, 3
    ON CONFLICT (organization_id, status, bridge_key, writer) DO UPDATE SET n = c.n + excluded.n
)
SELECT count(*) FROM gone`, compactOrderCountsBatch).Scan(&n)
			return n, err
		})
		removed += folded
		if err != nil || !ok {
			return removed, err
		}
		if folded < compactOrderCountsBatch {
			break
		}
	}
	_, dropped, err := locked(func(tx pgx.Tx) (int64, error) {
		tag, err := tx.Exec(ctx, `
DELETE FROM order_counts c
 WHERE writer = 0 AND (n = 0 OR NOT EXISTS (SELECT 1 FROM organizations o WHERE o.id = c.organization_id))`)
		return tag.RowsAffected(), err
	})
	return removed + dropped, err
}

// orderListRow is a list row with the number of matches.
type orderListRow struct {
	OrderListItem
	MatchCount *int `db:"match_count"` // nil: the count comes after the page (countInParts)
}

// OrderBridge is the summary of an order's bridge (include=bridge).
type OrderBridge struct {
	ID     uuid.UUID `db:"id"`
	Name   string    `db:"name"`
	Type   string    `db:"type"`
	Status string    `db:"status"`
}

// OrderBridges fetches the organization's bridges among ids in one query.
func OrderBridges(ctx context.Context, db DBTX, orgID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]OrderBridge, error) {
	out := make(map[uuid.UUID]OrderBridge, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, _ := db.Query(ctx, `SELECT id, name, type, status FROM bridges WHERE organization_id = $1 AND id = ANY($2)`, orgID, ids)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[OrderBridge])
	if err != nil {
		return nil, mapErr(err)
	}
	for _, b := range list {
		out[b.ID] = b
	}
	return out, nil
}

// OrderActor is who changes an order, for its activities.
type OrderActor struct {
	Type string // "user", "api_key", "system"
	ID   *string
	Name *string
}

// OrderPatch is an update of an order; nil fields stay as they are.
type OrderPatch struct {
	Status *string
	// ShippingAddress: nil unchanged; JSON null clears it.
	ShippingAddress json.RawMessage
	// Note: nil unchanged; a pointer to nil clears it.
	Note **string
	// Metadata is merged at the top level: its keys overwrite, a key whose
	// value is nil is removed (a JSON merge patch, one level deep).
	Metadata map[string]any
	// Tags replace the tags.
	Tags []string
	// LineItems replace the line items; refused once shipped or delivered.
	LineItems json.RawMessage
}

// PatchOrder applies p in one transaction: it locks the order, refuses a
// line item change once the order is shipped or delivered
// (ErrOrderLineItemsLocked), writes the changed fields and records a
// status_change activity ({from, to}) and an edit activity (the other
// changed fields, by their API names), both attributed to actor. Fields
// whose new value equals the old one do not count as changes; a patch that
// changes nothing writes nothing.
func PatchOrder(ctx context.Context, s *Store, orgID, id uuid.UUID, p OrderPatch, actor OrderActor) (Order, error) {
	var out Order
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `SELECT `+orderCols+` FROM orders WHERE organization_id = $1 AND id = $2 FOR UPDATE`, orgID, id)
		cur, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Order])
		if err != nil {
			return mapErr(err)
		}
		next := cur
		var edited []string
		if p.LineItems != nil && !sameOrderJSON(cur.LineItems, p.LineItems) {
			if cur.Status == "shipped" || cur.Status == "delivered" {
				return ErrOrderLineItemsLocked
			}
			next.LineItems = p.LineItems
			edited = append(edited, "line_items")
		}
		statusChanged := p.Status != nil && *p.Status != cur.Status
		if statusChanged {
			next.Status = *p.Status
		}
		if p.ShippingAddress != nil {
			addr := p.ShippingAddress
			if string(addr) == "null" {
				addr = nil
			}
			if !sameOrderJSON(cur.ShippingAddress, addr) {
				next.ShippingAddress = addr
				edited = append(edited, "shipping_address")
			}
		}
		if p.Note != nil && orderStr(*p.Note) != orderStr(cur.Note) {
			next.Note = *p.Note
			edited = append(edited, "notes")
		}
		if p.Metadata != nil {
			// Numbers stay as written (json.Number): large ids survive.
			var merged map[string]any
			dec := json.NewDecoder(bytes.NewReader(cur.Metadata))
			dec.UseNumber()
			if err := dec.Decode(&merged); err != nil || merged == nil {
				merged = map[string]any{}
			}
			before := maps.Clone(merged)
			for k, v := range p.Metadata {
				if v == nil {
					delete(merged, k)
				} else {
					merged[k] = v
				}
			}
			if !sameOrderJSONValue(before, merged) {
				raw, err := json.Marshal(merged)
				if err != nil {
					return err
				}
				next.Metadata = raw
				edited = append(edited, "metadata")
			}
		}
		if p.Tags != nil && !reflect.DeepEqual(orderTags(cur.Tags), p.Tags) {
			next.Tags = p.Tags
			edited = append(edited, "tags")
		}
		if !statusChanged && len(edited) == 0 {
			out = cur
			return nil
		}
		rows, _ = tx.Query(ctx, `
UPDATE orders
   SET status = $3, line_items = $4, shipping_address = $5, note = $6, metadata = $7, tags = $8, updated_at = now()
 WHERE organization_id = $1 AND id = $2
RETURNING `+orderCols, orgID, id, next.Status, next.LineItems, next.ShippingAddress, next.Note, next.Metadata, orderTags(next.Tags))
		if out, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Order]); err != nil {
			return mapErr(err)
		}
		if statusChanged {
			if _, err := InsertOrderActivity(ctx, tx, OrderActivity{
				OrganizationID: orgID, OrderID: id, Type: ActivityStatusChange,
				Description: fmt.Sprintf("Status changed from %s to %s", cur.Status, next.Status),
				ActorType:   actor.Type, ActorID: actor.ID, ActorName: actor.Name,
				Metadata: map[string]any{"from": cur.Status, "to": next.Status},
			}); err != nil {
				return err
			}
		}
		if len(edited) > 0 {
			if _, err := InsertOrderActivity(ctx, tx, OrderActivity{
				OrganizationID: orgID, OrderID: id, Type: ActivityEdit,
				Description: "Updated " + strings.Join(edited, ", "),
				ActorType:   actor.Type, ActorID: actor.ID, ActorName: actor.Name,
				Metadata: map[string]any{"fields": edited},
			}); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// sameOrderJSON compares two JSON documents by value (jsonb reorders keys).
func sameOrderJSON(a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// sameOrderJSONValue compares two decoded values as JSON.
func sameOrderJSONValue(a, b any) bool {
	ra, err1 := json.Marshal(a)
	rb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && sameOrderJSON(ra, rb)
}

func orderTags(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func orderStr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
