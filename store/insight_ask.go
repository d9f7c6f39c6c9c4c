package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The question engine's reads (insights.Ask): counts, sums, averages and
// per-carrier figures over a time range, each one statement on the
// organization's indexed time columns.

// AskRange is a question's time range [Start, End) and the orders it may
// look at (nil: all of the organization's).
type AskRange struct {
	Start, End time.Time
	OrderIDs   []uuid.UUID
}

// OrderFigures are the orders created in a range.
type OrderFigures struct {
	Count int `db:"count"`
	// Currency is the most common currency; Total and Average are over the
	// orders in it (CurrencyOrders of them).
	Currency       *string     `db:"currency"`
	CurrencyOrders int         `db:"currency_orders"`
	Total          float64     `db:"total"`
	Average        *float64    `db:"average"`
	IDs            []uuid.UUID `db:"ids"`
}

// AskOrders counts the orders created in the range (status "" for any)
// and sums their totals in their most common currency.
func AskOrders(ctx context.Context, db DBTX, orgID uuid.UUID, r AskRange, status string) (OrderFigures, error) {
	rows, err := db.Query(ctx, `
WITH o AS (
  SELECT id, total, currency, created_at FROM orders
   WHERE organization_id = $1 AND created_at >= $2 AND created_at < $3 AND ($4 = '' OR status = $4)
     AND ($5::uuid[] IS NULL OR id = ANY($5))
), cur AS (
  SELECT currency FROM o GROUP BY currency ORDER BY count(*) DESC, currency LIMIT 1
)
SELECT (SELECT count(*) FROM o)::int AS count, (SELECT currency FROM cur) AS currency,
       (SELECT count(*) FROM o WHERE currency = (SELECT currency FROM cur))::int AS currency_orders,
       coalesce((SELECT sum(total) FROM o WHERE currency = (SELECT currency FROM cur)), 0)::float8 AS total,
       (SELECT avg(total) FROM o WHERE currency = (SELECT currency FROM cur))::float8 AS average,
       coalesce(ARRAY(SELECT id FROM o ORDER BY created_at DESC, id DESC LIMIT 20), '{}') AS ids`,
		orgID, r.Start, r.End, status, r.OrderIDs)
	if err != nil {
		return OrderFigures{}, mapErr(err)
	}
	f, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[OrderFigures])
	return f, mapErr(err)
}

// ShippedOrders counts the distinct orders with a shipment created in
// the range ("orders shipped").
func ShippedOrders(ctx context.Context, db DBTX, orgID uuid.UUID, r AskRange) (int, []uuid.UUID, error) {
	var n int
	var ids []uuid.UUID
	err := db.QueryRow(ctx, `
WITH o AS (
  SELECT order_id, max(created_at) AS at FROM shipments
   WHERE organization_id = $1 AND created_at >= $2 AND created_at < $3 AND order_id IS NOT NULL
     AND ($4::uuid[] IS NULL OR order_id = ANY($4))
   GROUP BY order_id
)
SELECT (SELECT count(*) FROM o)::int, coalesce(ARRAY(SELECT order_id FROM o ORDER BY at DESC, order_id DESC LIMIT 20), '{}')`,
		orgID, r.Start, r.End, r.OrderIDs).Scan(&n, &ids)
	return n, ids, mapErr(err)
}

// CarrierFigures are one carrier's shipments created in a range.
type CarrierFigures struct {
	Carrier   string `db:"carrier"`
	Shipments int    `db:"shipments"`
	// Priced shipments have a label cost: TotalCost and AverageCost are
	// over them.
	Priced      int      `db:"priced"`
	TotalCost   float64  `db:"total_cost"`
	AverageCost *float64 `db:"average_cost"`
	Delivered   int      `db:"delivered"`
	// AverageTransitDays: label creation to delivery, delivered only.
	AverageTransitDays *float64    `db:"average_transit_days"`
	OrderIDs           []uuid.UUID `db:"order_ids"`
}

// AskCarriers aggregates the shipments created in the range per carrier,
// optionally only those of a status and those going to a destination (a
// state/province code or a country code, matched case-insensitively).
func AskCarriers(ctx context.Context, db DBTX, orgID uuid.UUID, r AskRange, status, destination string) ([]CarrierFigures, error) {
	rows, err := db.Query(ctx, `
SELECT s.carrier, count(*)::int AS shipments, count(s.rate_amount)::int AS priced,
       coalesce(sum(s.rate_amount), 0)::float8 AS total_cost, avg(s.rate_amount)::float8 AS average_cost,
       count(*) FILTER (WHERE s.status = 'delivered' AND s.delivered_at IS NOT NULL)::int AS delivered,
       (avg(extract(epoch FROM s.delivered_at - s.created_at) / 86400) FILTER (WHERE s.status = 'delivered'))::float8 AS average_transit_days,
       coalesce((array_agg(s.order_id ORDER BY s.created_at DESC, s.id) FILTER (WHERE s.order_id IS NOT NULL))[1:20], '{}') AS order_ids
  FROM shipments s
 WHERE s.organization_id = $1 AND s.created_at >= $2 AND s.created_at < $3 AND ($4 = '' OR s.status = $4)
   AND ($5 = '' OR upper(s.ship_to ->> 'state') = upper($5) OR upper(s.ship_to ->> 'country') = upper($5))
   AND ($6::uuid[] IS NULL OR s.order_id = ANY($6))
 GROUP BY s.carrier ORDER BY s.carrier`, orgID, r.Start, r.End, status, destination, r.OrderIDs)
	if err != nil {
		return nil, mapErr(err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByName[CarrierFigures])
}
