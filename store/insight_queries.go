package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The insights detectors' reads: each one statement that aggregates in
// PostgreSQL over an indexed range (the organization and a time window),
// never a walk of every row in Go. OrderIDs, when not nil, narrows the
// findings to those orders (an operation's, or a request's orderIds); the
// baselines they are measured against stay the organization's.

// InsightScope is the time and the orders a detector looks at.
type InsightScope struct {
	// Now ends every window.
	Now time.Time
	// OrderIDs: nil for the whole organization.
	OrderIDs []uuid.UUID
}

// OutlierGroup is a carrier and service whose recent shipments hold
// values far from the organization's usual ones (robust z-score).
type OutlierGroup struct {
	Carrier string  `db:"carrier"`
	Service string  `db:"service"`
	Samples int     `db:"samples"`
	Median  float64 `db:"median"`
	MAD     float64 `db:"mad"`
	// Outliers is how many recent shipments are outliers; High of them
	// are above the median.
	Outliers int         `db:"outliers"`
	High     int         `db:"high"`
	Highest  float64     `db:"highest"`
	Lowest   float64     `db:"lowest"`
	Excess   float64     `db:"excess"`
	IDs      []uuid.UUID `db:"ids"`
}

// Outlier metrics.
const (
	OutlierCost   = "cost"
	OutlierWeight = "weight"
)

// outlierValue is the value of a shipment each metric measures: the label
// cost, or the parcels' total weight in pounds (a generated column,
// migration 00052).
var outlierValue = map[string]string{
	OutlierCost:   `s.rate_amount::float8`,
	OutlierWeight: `s.total_weight_lb`,
}

// OutlierGroups finds, per carrier and service, the shipments created in
// the recent window whose value (metric) has a robust z-score above
// zLimit against the organization's shipments of the baseline window:
// z = 0.6745·(x − median)/MAD, or (x − median)/(1.2533·meanAD) when the
// MAD is 0 (Iglewicz and Hoaglin; the mean absolute deviation fallback
// when more than half the values are equal). Groups need minSamples.
//
// One pass over the baseline window gathers each group's values (a hash
// aggregate); the median and the deviations are then ordered-set
// aggregates over each group's array, and only the recent window's
// shipments are read again, by index, to be scored.
func OutlierGroups(ctx context.Context, db DBTX, orgID uuid.UUID, metric string, sc InsightScope, baseline, recent time.Duration, minSamples int, zLimit float64) ([]OutlierGroup, error) {
	value := outlierValue[metric]
	rows, err := db.Query(ctx, `
WITH grp AS (
  SELECT s.carrier, s.service, count(*) AS n, array_agg(`+value+`) AS xs
    FROM shipments s
   WHERE s.organization_id = $1 AND s.created_at >= $2::timestamptz - $3::interval AND s.created_at < $2
     AND `+value+` IS NOT NULL
   GROUP BY 1, 2 HAVING count(*) >= $6
), dev AS MATERIALIZED (
  SELECT g.carrier, g.service, g.n, m.median, d.mad, d.meanad
    FROM grp g
   CROSS JOIN LATERAL (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY v) AS median FROM unnest(g.xs) v) m
   CROSS JOIN LATERAL (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY abs(v - m.median)) AS mad,
                              avg(abs(v - m.median)) AS meanad
                         FROM unnest(g.xs) v) d
), scored AS (
  SELECT s.id, d.carrier, d.service, d.n, d.median, d.mad, v.x,
         CASE WHEN d.mad > 0 THEN 0.6745 * (v.x - d.median) / d.mad
              WHEN d.meanad > 0 THEN (v.x - d.median) / (1.253314 * d.meanad) ELSE 0 END AS z
    FROM shipments s
   CROSS JOIN LATERAL (SELECT `+value+` AS x) v
    JOIN dev d ON d.carrier = s.carrier AND d.service = s.service
   WHERE s.organization_id = $1 AND s.created_at >= $2::timestamptz - $4::interval AND s.created_at < $2
     AND s.created_at >= $2::timestamptz - $3::interval AND v.x IS NOT NULL
     AND ($5::uuid[] IS NULL OR s.order_id = ANY($5))
)
SELECT carrier, service, n::int AS samples, median, mad, count(*)::int AS outliers, count(*) FILTER (WHERE z > 0)::int AS high,
       max(x) AS highest, min(x) AS lowest, coalesce(sum(x - median) FILTER (WHERE z > 0), 0) AS excess,
       (array_agg(id ORDER BY abs(z) DESC, id))[1:20] AS ids
  FROM scored WHERE abs(z) > $7
 GROUP BY carrier, service, n, median, mad
 ORDER BY count(*) DESC, carrier, service`,
		orgID, sc.Now, baseline, recent, sc.OrderIDs, minSamples, zLimit)
	if err != nil {
		return nil, mapErr(err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByName[OutlierGroup])
}

// StuckStatus is a status in which orders stay longer than the
// organization's usual time.
type StuckStatus struct {
	Status string `db:"status"`
	// Samples is how many status changes out of Status the baseline has;
	// MedianSeconds is the usual time in the status, ThresholdSeconds the
	// time beyond which an order is stuck.
	Samples          int         `db:"samples"`
	MedianSeconds    float64     `db:"median_seconds"`
	ThresholdSeconds float64     `db:"threshold_seconds"`
	Stuck            int         `db:"stuck"`
	OldestSeconds    float64     `db:"oldest_seconds"`
	IDs              []uuid.UUID `db:"ids"`
}

// StuckOrders finds, per open status (statuses), the orders that have
// been in it longer than the organization usually keeps an order there.
// The usual time comes from the stays in the status that began and ended
// in the baseline window (order_status_changes, migration 00150; a stay
// that began before the window is left out, as it was when the history
// was read from the activities: the baseline looks back no further than
// the window); an order is stuck past max(2·median, median +
// 3·1.4826·MAD, minimum). An order's time in its status runs from
// orders.status_entered_at. Statuses need minSamples stays.
//
// Both halves read an index range: the stays of the window per status
// (order_status_changes_org_from_idx), gathered into one array per status
// whose median and deviations are ordered-set aggregates, and the orders
// that entered their status before the threshold
// (orders_org_status_entered_idx, index-only: counted, and the 20 that
// entered it first read in its order).
func StuckOrders(ctx context.Context, db DBTX, orgID uuid.UUID, sc InsightScope, statuses []string, baseline time.Duration, minSamples int, minimum time.Duration) ([]StuckStatus, error) {
	rows, err := db.Query(ctx, `
WITH grp AS (
  SELECT c.from_status AS status, count(*) AS n, array_agg(date_part('epoch', c.changed_at - c.from_entered_at)) AS xs
    FROM order_status_changes c
   WHERE c.organization_id = $1 AND c.from_status = ANY($4) AND c.changed_at >= $2::timestamptz - $3::interval AND c.changed_at < $2
     AND c.from_entered_at >= $2::timestamptz - $3::interval AND c.from_entered_at <= c.changed_at
   GROUP BY 1 HAVING count(*) >= $5
), lim AS (
  SELECT g.status, g.n, m.med, greatest(2 * m.med, m.med + 3 * 1.4826 * d.mad, $6::float8) AS threshold
    FROM grp g
   CROSS JOIN LATERAL (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY v) AS med FROM unnest(g.xs) v) m
   CROSS JOIN LATERAL (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY abs(v - m.med)) AS mad FROM unnest(g.xs) v) d
)
SELECT l.status, l.n::int AS samples, l.med AS median_seconds, l.threshold AS threshold_seconds,
       k.stuck, date_part('epoch', $2::timestamptz - k.oldest) AS oldest_seconds, t.ids
  FROM lim l
 CROSS JOIN LATERAL (SELECT count(*)::int AS stuck, min(o.status_entered_at) AS oldest
                       FROM orders o
                      WHERE o.organization_id = $1 AND o.status = l.status AND o.status_entered_at < $2::timestamptz - make_interval(secs => l.threshold)
                        AND ($7::uuid[] IS NULL OR o.id = ANY($7))) k
 CROSS JOIN LATERAL (SELECT array_agg(x.id) AS ids
                       FROM (SELECT o.id FROM orders o
                              WHERE o.organization_id = $1 AND o.status = l.status AND o.status_entered_at < $2::timestamptz - make_interval(secs => l.threshold)
                                AND ($7::uuid[] IS NULL OR o.id = ANY($7))
                              ORDER BY o.status_entered_at, o.id LIMIT 20) x) t
 WHERE k.stuck > 0
 ORDER BY k.stuck DESC, l.status`,
		orgID, sc.Now, baseline, statuses, minSamples, minimum.Seconds(), sc.OrderIDs)
	if err != nil {
		return nil, mapErr(err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByName[StuckStatus])
}

// ExceptionRate is a carrier's shipments and exceptions in the current
// window and in the window before it.
type ExceptionRate struct {
	Carrier    string `db:"carrier"`
	Current    int    `db:"current_n"`
	CurrentEx  int    `db:"current_ex"`
	Previous   int    `db:"previous_n"`
	PreviousEx int    `db:"previous_ex"`
}

// ExceptionRates counts, per carrier, the shipments created in the
// current window [now − window, now) and the previous one, and those of
// them with an exception (status exception, or an exception checkpoint).
func ExceptionRates(ctx context.Context, db DBTX, orgID uuid.UUID, sc InsightScope, window time.Duration) ([]ExceptionRate, error) {
	rows, err := db.Query(ctx, `
WITH ex AS (
  SELECT DISTINCT shipment_id FROM tracking_checkpoints
   WHERE organization_id = $1 AND is_exception AND checkpoint_time >= $2::timestamptz - 2 * $3::interval
)
SELECT s.carrier,
       count(*) FILTER (WHERE s.created_at >= $2::timestamptz - $3::interval)::int AS current_n,
       count(*) FILTER (WHERE s.created_at >= $2::timestamptz - $3::interval AND (s.status = 'exception' OR ex.shipment_id IS NOT NULL))::int AS current_ex,
       count(*) FILTER (WHERE s.created_at < $2::timestamptz - $3::interval)::int AS previous_n,
       count(*) FILTER (WHERE s.created_at < $2::timestamptz - $3::interval AND (s.status = 'exception' OR ex.shipment_id IS NOT NULL))::int AS previous_ex
  FROM shipments s LEFT JOIN ex ON ex.shipment_id = s.id
 WHERE s.organization_id = $1 AND s.created_at >= $2::timestamptz - 2 * $3::interval AND s.created_at < $2
   AND ($4::uuid[] IS NULL OR s.order_id = ANY($4))
 GROUP BY s.carrier ORDER BY s.carrier`, orgID, sc.Now, window, sc.OrderIDs)
	if err != nil {
		return nil, mapErr(err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByName[ExceptionRate])
}

// CheaperQuoteGroup is a quoted carrier and service that was cheaper than
// what shipments cost, with the same or fewer transit days.
type CheaperQuoteGroup struct {
	Carrier   string      `db:"carrier"`
	Service   string      `db:"service"`
	Shipments int         `db:"shipments"`
	Spent     float64     `db:"spent"`
	Savings   float64     `db:"savings"`
	IDs       []uuid.UUID `db:"ids"`
}

// CheaperQuotes joins the shipments delivered in the window to the rate
// comparison quotes of their tracking numbers and keeps the quotes that
// were cheaper than the shipment's label and took the same or fewer
// transit days than the shipment did (label creation to delivery, in
// whole days rounded up), grouped by the quoting carrier and service.
// A shipment with several such quotes counts once, with its best saving.
func CheaperQuotes(ctx context.Context, db DBTX, orgID uuid.UUID, sc InsightScope, window time.Duration) ([]CheaperQuoteGroup, error) {
	rows, err := db.Query(ctx, `
WITH best AS (
  SELECT DISTINCT ON (s.id) s.id, s.rate_amount, c.carrier, coalesce(i.quoted_service_name, i.quoted_service, '') AS service,
         s.rate_amount - i.quoted_price AS saving
    FROM shipments s
    JOIN rate_comparison_items i ON i.organization_id = s.organization_id AND i.tracking_number = s.tracking_number
                                AND i.status = 'completed' AND i.quoted_price IS NOT NULL
    JOIN rate_comparisons c ON c.id = i.comparison_id
   WHERE s.organization_id = $1 AND s.created_at >= $2::timestamptz - $3::interval AND s.created_at < $2
     AND s.tracking_number IS NOT NULL AND s.status = 'delivered' AND s.delivered_at IS NOT NULL AND s.rate_amount IS NOT NULL
     AND ($4::uuid[] IS NULL OR s.order_id = ANY($4))
     AND i.quoted_price < s.rate_amount AND i.transit_days IS NOT NULL
     AND i.transit_days <= ceil(date_part('epoch', s.delivered_at - s.created_at) / 86400)
   ORDER BY s.id, s.rate_amount - i.quoted_price DESC, i.id
)
SELECT carrier, service, count(*)::int AS shipments, sum(rate_amount)::float8 AS spent, sum(saving)::float8 AS savings,
       (array_agg(id ORDER BY saving DESC, id))[1:20] AS ids
  FROM best GROUP BY carrier, service ORDER BY sum(saving) DESC, carrier, service`, orgID, sc.Now, window, sc.OrderIDs)
	if err != nil {
		return nil, mapErr(err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByName[CheaperQuoteGroup])
}

// estimatedDeliverySQL is a shipment's estimated delivery (the label's,
// parsed into a column by migration 00051), NULL when it has none.
const estimatedDeliverySQL = `s.estimated_delivery_at`

// onTimeSQL: a delivered shipment arrived by the (UTC) day of its estimate.
const onTimeSQL = `((s.delivered_at AT TIME ZONE 'UTC')::date <= (` + estimatedDeliverySQL + ` AT TIME ZONE 'UTC')::date)`

// LateRisk is a carrier's shipments still in transit that are likely late.
type LateRisk struct {
	Carrier string `db:"carrier"`
	// InTransit is how many of the carrier's shipments are moving; Late of
	// them are likely late: past their estimated delivery (PastEstimate),
	// or in transit longer than at least share of the carrier and
	// service's deliveries of the baseline took (SlowerThan is their mean
	// share).
	InTransit    int         `db:"in_transit"`
	Late         int         `db:"late"`
	PastEstimate int         `db:"past_estimate"`
	SlowerThan   float64     `db:"slower_than"`
	Delivered    int         `db:"delivered"`
	OnTime       int         `db:"on_time"`
	WithEstimate int         `db:"with_estimate"`
	IDs          []uuid.UUID `db:"ids"`
}

// LateRisks finds the shipments in transit (label_created, in_transit,
// out_for_delivery, created within the baseline window) that are likely
// late: past their estimated delivery day, or already in transit for at
// least as many whole days as share of the same carrier and service's
// deliveries of the baseline window took less than (groups of minSamples
// deliveries; days in transit count up to 60). It also reports each
// carrier's on-time deliveries.
func LateRisks(ctx context.Context, db DBTX, orgID uuid.UUID, sc InsightScope, baseline time.Duration, minSamples int, share float64) ([]LateRisk, error) {
	rows, err := db.Query(ctx, `
WITH hist AS (
  SELECT s.carrier, s.service, floor(date_part('epoch', s.delivered_at - s.created_at) / 86400)::int AS d, count(*) AS c,
         count(*) FILTER (WHERE `+onTimeSQL+`) AS on_time, count(*) FILTER (WHERE `+estimatedDeliverySQL+` IS NOT NULL) AS with_est
    FROM shipments s
   WHERE s.organization_id = $1 AND s.status = 'delivered' AND s.delivered_at IS NOT NULL
     AND s.created_at >= $2::timestamptz - $3::interval AND s.created_at < $2
   GROUP BY 1, 2, 3
), groups AS (
  SELECT carrier, service, sum(c) AS n FROM hist GROUP BY 1, 2
), moving AS (
  SELECT s.id, s.carrier, s.service, floor(date_part('epoch', $2::timestamptz - s.created_at) / 86400)::int AS d,
         `+estimatedDeliverySQL+` AS est
    FROM shipments s
   WHERE s.organization_id = $1 AND s.status IN ('label_created', 'in_transit', 'out_for_delivery')
     AND s.created_at >= $2::timestamptz - $3::interval AND s.created_at < $2
     AND ($4::uuid[] IS NULL OR s.order_id = ANY($4))
), cum AS (
  -- Per carrier, service and whole day d (0-60): the share of the
  -- deliveries that took fewer than d days.
  SELECT g.carrier, g.service, x.d,
         (SELECT coalesce(sum(h.c), 0) FROM hist h WHERE h.carrier = g.carrier AND h.service = g.service AND h.d < x.d) / g.n AS sooner
    FROM groups g CROSS JOIN generate_series(0, 60) x(d)
   WHERE g.n >= $5
), scored AS (
  SELECT m.id, m.carrier, (m.est IS NOT NULL AND (m.est AT TIME ZONE 'UTC')::date < ($2::timestamptz AT TIME ZONE 'UTC')::date) AS past,
         c.sooner AS slower
    FROM moving m LEFT JOIN cum c ON c.carrier = m.carrier AND c.service = m.service AND c.d = least(m.d, 60)
), late AS (
  SELECT * FROM scored WHERE past OR slower >= $6
), perf AS (
  SELECT carrier, sum(c)::int AS delivered, sum(on_time)::int AS on_time, sum(with_est)::int AS with_est FROM hist GROUP BY 1
)
SELECT c.carrier, c.in_transit, coalesce(l.late, 0) AS late, coalesce(l.past, 0) AS past_estimate, coalesce(l.slower, 0) AS slower_than,
       coalesce(p.delivered, 0) AS delivered, coalesce(p.on_time, 0) AS on_time, coalesce(p.with_est, 0) AS with_estimate,
       coalesce(l2.ids, '{}') AS ids
  FROM (SELECT carrier, count(*)::int AS in_transit FROM scored GROUP BY 1) c
  LEFT JOIN (SELECT carrier, count(*)::int AS late, count(*) FILTER (WHERE past)::int AS past, coalesce(avg(slower), 0)::float8 AS slower
               FROM late GROUP BY 1) l USING (carrier)
  LEFT JOIN perf p USING (carrier)
  -- The first 20 by a bounded sort, not a sort of every late shipment.
 CROSS JOIN LATERAL (SELECT array_agg(t.id) AS ids
                       FROM (SELECT x.id FROM late x WHERE x.carrier = c.carrier
                              ORDER BY x.past DESC, x.slower DESC NULLS LAST, x.id LIMIT 20) t) l2
 WHERE coalesce(l.late, 0) > 0
 ORDER BY l.late DESC, c.carrier`, orgID, sc.Now, baseline, sc.OrderIDs, minSamples, share)
	if err != nil {
		return nil, mapErr(err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByName[LateRisk])
}

// VolumeTrend is the orders and shipping cost of the current window and
// of the window before it.
type VolumeTrend struct {
	Orders            int     `db:"orders"`
	PreviousOrders    int     `db:"previous_orders"`
	Shipments         int     `db:"shipments"`
	PreviousShipments int     `db:"previous_shipments"`
	Cost              float64 `db:"cost"`
	PreviousCost      float64 `db:"previous_cost"`
}

// VolumeTrends counts the orders and the shipments (with their label
// cost) created in [now − window, now) and in the window before.
func VolumeTrends(ctx context.Context, db DBTX, orgID uuid.UUID, sc InsightScope, window time.Duration) (VolumeTrend, error) {
	var v VolumeTrend
	err := db.QueryRow(ctx, `
SELECT o.cur, o.prev, s.cur, s.prev, s.cur_cost, s.prev_cost FROM
 (SELECT count(*) FILTER (WHERE created_at >= $2::timestamptz - $3::interval)::int AS cur,
         count(*) FILTER (WHERE created_at < $2::timestamptz - $3::interval)::int AS prev
    FROM orders WHERE organization_id = $1 AND created_at >= $2::timestamptz - 2 * $3::interval AND created_at < $2
     AND ($4::uuid[] IS NULL OR id = ANY($4))) o,
 (SELECT count(*) FILTER (WHERE created_at >= $2::timestamptz - $3::interval)::int AS cur,
         count(*) FILTER (WHERE created_at < $2::timestamptz - $3::interval)::int AS prev,
         coalesce(sum(rate_amount) FILTER (WHERE created_at >= $2::timestamptz - $3::interval), 0)::float8 AS cur_cost,
         coalesce(sum(rate_amount) FILTER (WHERE created_at < $2::timestamptz - $3::interval), 0)::float8 AS prev_cost
    FROM shipments WHERE organization_id = $1 AND created_at >= $2::timestamptz - 2 * $3::interval AND created_at < $2
     AND ($4::uuid[] IS NULL OR order_id = ANY($4))) s`, orgID, sc.Now, window, sc.OrderIDs).
		Scan(&v.Orders, &v.PreviousOrders, &v.Shipments, &v.PreviousShipments, &v.Cost, &v.PreviousCost)
	return v, mapErr(err)
}

// AlertSubject is something of the organization in a failed state.
type AlertSubject struct {
	// Kind: carrier_account, bridge, failed_syncs, failed_dispatch.
	Kind   string     `db:"kind"`
	ID     *uuid.UUID `db:"id"`
	Name   string     `db:"name"`
	Status string     `db:"status"`
	Error  *string    `db:"error"`
	// Count is how many failures of the window (syncs, assignments).
	Count int        `db:"count"`
	Last  *time.Time `db:"last"`
}

// Alerts lists, in one statement: carrier accounts in error; bridges in
// error or disconnected; per bridge, task executions that failed in
// [now − window, now); per destination bridge, dispatch assignments that
// failed in the window.
func Alerts(ctx context.Context, db DBTX, orgID uuid.UUID, now time.Time, window time.Duration) ([]AlertSubject, error) {
	rows, err := db.Query(ctx, `
SELECT 'carrier_account' AS kind, id, name, status, last_error AS error, 0 AS count, updated_at AS last
  FROM carrier_accounts WHERE organization_id = $1 AND status = 'error'
UNION ALL
SELECT 'bridge', id, name, status, last_error, 0, updated_at
  FROM bridges WHERE organization_id = $1 AND status IN ('error', 'disconnected')
UNION ALL
SELECT 'failed_syncs', t.bridge_id, b.name, 'failed', (array_agg(t.error ORDER BY t.finished_at DESC))[1], count(*)::int, max(t.finished_at)
  FROM task_executions t JOIN bridges b ON b.id = t.bridge_id
 WHERE t.organization_id = $1 AND t.status = 'failed' AND t.finished_at >= $2::timestamptz - $3::interval AND t.finished_at < $2
 GROUP BY t.bridge_id, b.name
UNION ALL
SELECT 'failed_dispatch', a.destination_bridge_id, b.name, 'failed', (array_agg(a.error_message ORDER BY a.updated_at DESC))[1], count(*)::int, max(a.updated_at)
  FROM dispatch_assignments a JOIN bridges b ON b.id = a.destination_bridge_id
 WHERE a.organization_id = $1 AND a.status = 'failed' AND a.updated_at >= $2::timestamptz - $3::interval AND a.updated_at < $2
 GROUP BY a.destination_bridge_id, b.name
ORDER BY 1, 3, 2`, orgID, now, window)
	if err != nil {
		return nil, mapErr(err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByName[AlertSubject])
}

// ManualDispatchRun is an active dispatcher run by hand for many orders.
type ManualDispatchRun struct {
	DispatcherID uuid.UUID `db:"dispatcher_id"`
	Name         string    `db:"name"`
	TriggerOn    []string  `db:"trigger_on"`
	Assignments  int       `db:"assignments"`
	Orders       int       `db:"orders"`
}

// ManualDispatchRuns counts, per active dispatcher that does not run on
// order creation, the orders it assigned in manual runs in the window;
// dispatchers with at least minOrders.
func ManualDispatchRuns(ctx context.Context, db DBTX, orgID uuid.UUID, sc InsightScope, window time.Duration, minOrders int) ([]ManualDispatchRun, error) {
	rows, err := db.Query(ctx, `
SELECT d.id AS dispatcher_id, d.name, d.trigger_on, count(*)::int AS assignments, count(DISTINCT a.order_id)::int AS orders
  FROM dispatch_assignments a JOIN dispatchers d ON d.id = a.dispatcher_id
 WHERE a.organization_id = $1 AND a.metadata ->> 'trigger' = 'manual'
   AND a.created_at >= $2::timestamptz - $3::interval AND a.created_at < $2
   AND ($4::uuid[] IS NULL OR a.order_id = ANY($4))
   AND d.is_active AND NOT ('order_created' = ANY(d.trigger_on))
 GROUP BY d.id, d.name, d.trigger_on
HAVING count(DISTINCT a.order_id) >= $5
 ORDER BY count(DISTINCT a.order_id) DESC, d.name`, orgID, sc.Now, window, sc.OrderIDs, minOrders)
	if err != nil {
		return nil, mapErr(err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByName[ManualDispatchRun])
}

// CarrierPerformanceRow is one carrier's shipments of a window and of
// its two halves.
type CarrierPerformanceRow struct {
	Carrier      string   `db:"carrier"`
	Total        int      `db:"total"`
	Delivered    int      `db:"delivered"`
	WithEstimate int      `db:"with_estimate"`
	OnTime       int      `db:"on_time"`
	TransitDays  *float64 `db:"transit_days"`
	CostPerLabel *float64 `db:"cost_per_label"`
	// The halves: [start, mid) and [mid, end).
	FirstWithEstimate  int      `db:"first_with_estimate"`
	FirstOnTime        int      `db:"first_on_time"`
	SecondWithEstimate int      `db:"second_with_estimate"`
	SecondOnTime       int      `db:"second_on_time"`
	FirstCost          *float64 `db:"first_cost"`
	SecondCost         *float64 `db:"second_cost"`
}

// CarrierPerformance aggregates, per carrier, the shipments created in
// [start, end): how many, how many delivered, how many of the delivered
// ones with an estimate arrived by its day, the mean days from label
// creation to delivery, the mean label cost, and the same for each half
// of the window.
func CarrierPerformance(ctx context.Context, db DBTX, orgID uuid.UUID, start, end time.Time) ([]CarrierPerformanceRow, error) {
	mid := start.Add(end.Sub(start) / 2)
	rows, err := db.Query(ctx, `
WITH s AS (
  SELECT s.carrier, s.created_at, s.rate_amount::float8 AS cost,
         (s.status = 'delivered' AND s.delivered_at IS NOT NULL) AS delivered,
         date_part('epoch', s.delivered_at - s.created_at) / 86400 AS transit,
         `+estimatedDeliverySQL+` IS NOT NULL AS has_est, coalesce(`+onTimeSQL+`, false) AS on_time
    FROM shipments s WHERE s.organization_id = $1 AND s.created_at >= $2 AND s.created_at < $3
)
SELECT carrier, count(*)::int AS total, count(*) FILTER (WHERE delivered)::int AS delivered,
       count(*) FILTER (WHERE delivered AND has_est)::int AS with_estimate,
       count(*) FILTER (WHERE delivered AND has_est AND on_time)::int AS on_time,
       avg(transit) FILTER (WHERE delivered)::float8 AS transit_days, avg(cost) AS cost_per_label,
       count(*) FILTER (WHERE delivered AND has_est AND created_at < $4)::int AS first_with_estimate,
       count(*) FILTER (WHERE delivered AND has_est AND on_time AND created_at < $4)::int AS first_on_time,
       count(*) FILTER (WHERE delivered AND has_est AND created_at >= $4)::int AS second_with_estimate,
       count(*) FILTER (WHERE delivered AND has_est AND on_time AND created_at >= $4)::int AS second_on_time,
       avg(cost) FILTER (WHERE created_at < $4) AS first_cost, avg(cost) FILTER (WHERE created_at >= $4) AS second_cost
  FROM s GROUP BY carrier ORDER BY carrier`, orgID, start, end, mid)
	if err != nil {
		return nil, mapErr(err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByName[CarrierPerformanceRow])
}

// ExpiringActions are the agent's pending actions of an organization that
// expire soon.
type ExpiringActions struct {
	Count   int
	Soonest *time.Time
	Tools   []string
}

// ExpiringPendingActions counts the agent's pending actions (the agent
// area's agent_pending_actions, migration 00060) that expire in (now,
// now + within]. Nothing while that table does not exist (a build without
// the agent area).
func ExpiringPendingActions(ctx context.Context, db DBTX, orgID uuid.UUID, now time.Time, within time.Duration) (ExpiringActions, error) {
	var e ExpiringActions
	err := db.QueryRow(ctx, `
SELECT count(*)::int, min(expires_at), coalesce(array_agg(DISTINCT tool_name ORDER BY tool_name) FILTER (WHERE tool_name IS NOT NULL), '{}')
  FROM agent_pending_actions
 WHERE organization_id = $1 AND status = 'pending' AND expires_at > $2 AND expires_at <= $2::timestamptz + $3::interval`,
		orgID, now, within).Scan(&e.Count, &e.Soonest, &e.Tools)
	if isUndefinedTable(err) {
		return ExpiringActions{}, nil
	}
	return e, mapErr(err)
}
