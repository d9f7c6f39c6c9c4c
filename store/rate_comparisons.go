package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Rate comparison statuses (the CHECK constraint of
// migrations/00008_rate_comparisons.sql).
const (
	RateComparisonDraft      = "draft"
	RateComparisonProcessing = "processing"
	RateComparisonCompleted  = "completed"
	RateComparisonFailed     = "failed"
	RateComparisonCancelled  = "cancelled"
)

// RateComparisonStatuses are the comparison statuses, in spec order.
var RateComparisonStatuses = []string{RateComparisonDraft, RateComparisonProcessing, RateComparisonCompleted, RateComparisonFailed, RateComparisonCancelled}

// Rate comparison item statuses. pending → tracking → rating → completed |
// failed | skipped.
const (
	RateItemPending   = "pending"
	RateItemTracking  = "tracking"
	RateItemRating    = "rating"
	RateItemCompleted = "completed"
	RateItemFailed    = "failed"
	RateItemSkipped   = "skipped"
)

// RateComparisonItemStatuses are the item statuses, in spec order.
var RateComparisonItemStatuses = []string{RateItemPending, RateItemTracking, RateItemRating, RateItemCompleted, RateItemFailed, RateItemSkipped}

// RateComparisonMaxItems is the largest comparison (spec Limits).
const RateComparisonMaxItems = 10_000

// ErrRateComparisonGone: the comparison no longer exists (deleted while
// its workflow ran).
var ErrRateComparisonGone = fmt.Errorf("%w: rate comparison", ErrNotFound)

// ErrRateComparisonClosed: the comparison is no longer processing
// (cancelled, or closed by its workflow); a batch write changed nothing.
var ErrRateComparisonClosed = fmt.Errorf("%w: rate comparison is not processing", ErrConflict)

// Lock order. Every write that touches a comparison's items first locks
// the comparison row (FOR UPDATE: RecordRateComparisonResults,
// FinishRateComparison, DeleteRateComparison; FOR SHARE:
// ClaimRateComparisonBatch, MarkRateComparisonItemsRating), then the items.
// One order everywhere, so a cancel or a delete cannot deadlock with the
// batches of a running workflow, and a statement that runs after the lock
// sees every batch write that committed before it.

// rcTxAttempts bounds how often rcInTx runs a transaction that PostgreSQL
// aborted as a deadlock victim or serialization failure.
const rcTxAttempts = 3

// rcInTx runs fn in a transaction on db, again (up to rcTxAttempts times,
// after a short pause) when it failed with SQLSTATE 40P01 or 40001.
func rcInTx(ctx context.Context, db TxBeginner, fn func(tx pgx.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := pgx.BeginFunc(ctx, db, fn)
		if err == nil || attempt >= rcTxAttempts || !IsTransactionConflict(err) || ctx.Err() != nil {
			return err
		}
		select {
		case <-time.After(time.Duration(attempt*attempt) * 20 * time.Millisecond):
		case <-ctx.Done():
			return err
		}
	}
}

// IsTransactionConflict reports whether err is a deadlock (40P01) or a
// serialization failure (40001): the transaction may simply be run again.
func IsTransactionConflict(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

// lockRateComparison locks the comparison row FOR UPDATE and returns its
// status (ErrNotFound when it does not exist).
func lockRateComparison(ctx context.Context, tx pgx.Tx, orgID, id uuid.UUID) (string, error) {
	var status string
	err := tx.QueryRow(ctx, `SELECT status FROM rate_comparisons WHERE id = $2 AND organization_id = $1 FOR UPDATE`, orgID, id).Scan(&status)
	return status, mapErr(err)
}

// RateComparison is a comparison with its live counters.
type RateComparison struct {
	ID               uuid.UUID  `db:"id"`
	OrganizationID   uuid.UUID  `db:"organization_id"`
	Name             string     `db:"name"`
	CarrierAccountID *uuid.UUID `db:"carrier_account_id"`
	// Carrier is the carrier of CarrierAccountID (kept when it is deleted).
	Carrier       string `db:"carrier"`
	SourceCarrier string `db:"source_carrier"`
	Status        string `db:"status"`
	TotalItems    int    `db:"total_items"`
	// PendingItems counts the items not yet finished (pending, tracking, rating).
	PendingItems    int        `db:"pending_items"`
	CompletedItems  int        `db:"completed_items"`
	FailedItems     int        `db:"failed_items"`
	SkippedItems    int        `db:"skipped_items"`
	TotalNetCost    float64    `db:"total_net_cost"`
	TotalQuotedCost float64    `db:"total_quoted_cost"`
	TotalSavings    float64    `db:"total_savings"`
	Error           *string    `db:"error"`
	WorkflowID      *string    `db:"workflow_id"`
	StartedAt       *time.Time `db:"started_at"`
	CompletedAt     *time.Time `db:"completed_at"`
	CreatedAt       time.Time  `db:"created_at"`
	UpdatedAt       time.Time  `db:"updated_at"`
}

// SavingsPercent is TotalSavings as a percentage of TotalNetCost, rounded
// to two decimals; nil when there is no net cost to compare with.
func (c RateComparison) SavingsPercent() *float64 {
	return rcSavingsPercent(c.TotalSavings, c.TotalNetCost)
}

func rcSavingsPercent(savings, netCost float64) *float64 {
	if netCost <= 0 {
		return nil
	}
	p := math.Round(savings/netCost*10000) / 100
	return &p
}

const rateComparisonCols = `id, organization_id, name, carrier_account_id, carrier, source_carrier, status,
total_items, pending_items, completed_items, failed_items, skipped_items,
total_net_cost::float8 AS total_net_cost, total_quoted_cost::float8 AS total_quoted_cost, total_savings::float8 AS total_savings,
error, workflow_id, started_at, completed_at, created_at, updated_at`

// NewRateComparisonItem is one uploaded item.
type NewRateComparisonItem struct {
	TrackingNumber string
	// NetCost is what was paid (nil: unknown; the item then has no savings).
	NetCost *float64
	// ServiceType is the source service as uploaded (nil: learn it by tracking).
	ServiceType *string
}

// CreateRateComparison inserts a draft comparison and its items (seq 1…n,
// all pending) in one statement: one INSERT … SELECT FROM unnest for the
// items, whatever their number. A tracking number twice in the items is
// ErrConflict (rate_comparison_items_tracking_key).
func CreateRateComparison(ctx context.Context, db DBTX, c RateComparison, items []NewRateComparisonItem) (RateComparison, error) {
	n := len(items)
	ids := make([]uuid.UUID, n)
	numbers := make([]string, n)
	costs := make([]*float64, n)
	services := make([]*string, n)
	for i, it := range items {
		ids[i] = uuid.New()
		numbers[i] = it.TrackingNumber
		costs[i] = it.NetCost
		services[i] = it.ServiceType
	}
	rows, _ := db.Query(ctx, `
WITH c AS (
    INSERT INTO rate_comparisons (id, organization_id, name, carrier_account_id, carrier, source_carrier, status, total_items, pending_items)
    VALUES ($1, $2, $3, $4, $5, $6, 'draft', $7, $7)
    RETURNING *
), i AS (
    INSERT INTO rate_comparison_items (id, comparison_id, organization_id, seq, tracking_number, net_cost, service_type)
    SELECT t.id, $1, $2, t.seq, t.tracking_number, t.net_cost, t.service_type
      FROM unnest($8::uuid[], $9::text[], $10::numeric[], $11::text[]) WITH ORDINALITY
           AS t(id, tracking_number, net_cost, service_type, seq)
)
SELECT `+rateComparisonCols+` FROM c`,
		c.ID, c.OrganizationID, c.Name, c.CarrierAccountID, c.Carrier, c.SourceCarrier, n,
		ids, numbers, costs, services)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[RateComparison])
	return out, mapErr(err)
}

// RateComparisonByID finds a comparison of the organization.
func RateComparisonByID(ctx context.Context, db DBTX, orgID, id uuid.UUID) (RateComparison, error) {
	rows, _ := db.Query(ctx, `SELECT `+rateComparisonCols+` FROM rate_comparisons WHERE organization_id = $1 AND id = $2`, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[RateComparison])
	return out, mapErr(err)
}

// RateComparisonFilter narrows ListRateComparisons ("" does not filter).
type RateComparisonFilter struct {
	Status string
	Limit  int
	Offset int
}

// ListRateComparisons returns a page of the organization's comparisons,
// newest first, and the number matching.
func ListRateComparisons(ctx context.Context, db DBTX, orgID uuid.UUID, f RateComparisonFilter) ([]RateComparison, int, error) {
	const where = ` FROM rate_comparisons WHERE organization_id = $1 AND ($2 = '' OR status = $2)`
	var total int
	if err := db.QueryRow(ctx, `SELECT count(*)`+where, orgID, f.Status).Scan(&total); err != nil {
		return nil, 0, mapErr(err)
	}
	rows, _ := db.Query(ctx, `SELECT `+rateComparisonCols+where+`
 ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4`, orgID, f.Status, f.Limit, f.Offset)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[RateComparison])
	if err != nil {
		return nil, 0, mapErr(err)
	}
	return out, total, nil
}

// DeleteRateComparison deletes a comparison and its items. It locks the
// comparison row first (see Lock order), then deletes (the items go by
// cascade).
func DeleteRateComparison(ctx context.Context, db TxBeginner, orgID, id uuid.UUID) error {
	return rcInTx(ctx, db, func(tx pgx.Tx) error {
		if _, err := lockRateComparison(ctx, tx, orgID, id); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM rate_comparisons WHERE organization_id = $1 AND id = $2`, orgID, id)
		return mapErr(err)
	})
}

// StartRateComparison moves a draft or failed comparison to processing,
// recording the workflow id, and returns it with the status it had. A
// comparison in another state is ErrConflict; an unknown one ErrNotFound.
// Items of a failed comparison that did not finish are processed again;
// completed and failed items are kept.
func StartRateComparison(ctx context.Context, db DBTX, orgID, id uuid.UUID, workflowID string) (RateComparison, string, error) {
	rows, _ := db.Query(ctx, `
WITH prev AS (
    SELECT id, status FROM rate_comparisons WHERE organization_id = $1 AND id = $2 FOR UPDATE
), upd AS (
    UPDATE rate_comparisons c
       SET status = 'processing', workflow_id = $3, error = NULL, started_at = now(), completed_at = NULL, updated_at = now()
      FROM prev
     WHERE c.id = prev.id AND prev.status IN ('draft', 'failed')
    RETURNING c.*
)
SELECT prev.status AS prev_status, upd.id IS NOT NULL AS started FROM prev LEFT JOIN upd ON upd.id = prev.id`,
		orgID, id, workflowID)
	type res struct {
		PrevStatus string `db:"prev_status"`
		Started    bool   `db:"started"`
	}
	r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[res])
	if err != nil {
		return RateComparison{}, "", mapErr(err)
	}
	if !r.Started {
		return RateComparison{}, r.PrevStatus, fmt.Errorf("%w: rate comparison is %s", ErrConflict, r.PrevStatus)
	}
	c, err := RateComparisonByID(ctx, db, orgID, id)
	return c, r.PrevStatus, err
}

// RevertRateComparisonStart undoes StartRateComparison when the workflow
// could not be started: processing goes back to prevStatus.
func RevertRateComparisonStart(ctx context.Context, db DBTX, orgID, id uuid.UUID, prevStatus string) error {
	_, err := db.Exec(ctx, `UPDATE rate_comparisons
   SET status = $3, started_at = NULL, updated_at = now(),
       workflow_id = CASE WHEN $3 = 'draft' THEN NULL ELSE workflow_id END
 WHERE organization_id = $1 AND id = $2 AND status = 'processing'`, orgID, id, prevStatus)
	return mapErr(err)
}

// Outcomes of FinishRateComparison.
const (
	// FinishCompleted: completed, or failed when no item completed and
	// some failed.
	FinishCompleted = "completed"
	// FinishFailed: failed with the given error; unfinished items stay
	// pending for a later process.
	FinishFailed = "failed"
	// FinishCancelled: cancelled; unfinished items become skipped.
	FinishCancelled = "cancelled"
)

// ErrEveryItemFailed is the error of a comparison whose every item failed.
const ErrEveryItemFailed = "every item failed"

// FinishRateComparison closes a processing comparison in one transaction:
// it locks the comparison row (see Lock order; batch writes wait, and every
// one that committed before is visible), skips the unfinished items when
// cancelling, then — in a statement of its own, so it sees the skip —
// recounts the counters and money totals from the items and sets the final
// status and completed_at. A comparison that is not processing any more is
// left alone and returned as it is; an unknown one is ErrNotFound.
func FinishRateComparison(ctx context.Context, db TxBeginner, orgID, id uuid.UUID, outcome, errMsg string) (RateComparison, error) {
	if outcome != FinishCompleted && outcome != FinishFailed && outcome != FinishCancelled {
		return RateComparison{}, fmt.Errorf("store: unknown rate comparison outcome %q", outcome)
	}
	var out RateComparison
	err := rcInTx(ctx, db, func(tx pgx.Tx) error {
		status, err := lockRateComparison(ctx, tx, orgID, id)
		if err != nil {
			return err
		}
		if status == RateComparisonProcessing {
			if outcome == FinishCancelled {
				if _, err := tx.Exec(ctx, `UPDATE rate_comparison_items SET status = 'skipped', updated_at = now()
 WHERE comparison_id = $2 AND organization_id = $1 AND status IN ('pending', 'tracking', 'rating')`, orgID, id); err != nil {
					return mapErr(err)
				}
			}
			if _, err := tx.Exec(ctx, finishRateComparisonSQL, orgID, id, outcome, rcNull(errMsg), ErrEveryItemFailed); err != nil {
				return mapErr(err)
			}
		}
		out, err = RateComparisonByID(ctx, tx, orgID, id)
		return err
	})
	return out, err
}

// finishRateComparisonSQL recounts a locked comparison from its items and
// closes it.
const finishRateComparisonSQL = `
WITH agg AS (
    SELECT count(*) FILTER (WHERE status IN ('pending', 'tracking', 'rating')) AS pending,
           count(*) FILTER (WHERE status = 'completed') AS completed,
           count(*) FILTER (WHERE status = 'failed') AS failed,
           count(*) FILTER (WHERE status = 'skipped') AS skipped,
           coalesce(sum(net_cost) FILTER (WHERE status = 'completed'), 0) AS net_cost,
           coalesce(sum(quoted_price) FILTER (WHERE status = 'completed'), 0) AS quoted_cost,
           coalesce(sum(savings) FILTER (WHERE status = 'completed'), 0) AS savings
      FROM rate_comparison_items WHERE comparison_id = $2 AND organization_id = $1
)
UPDATE rate_comparisons c
   SET pending_items = agg.pending, completed_items = agg.completed, failed_items = agg.failed, skipped_items = agg.skipped,
       total_net_cost = agg.net_cost, total_quoted_cost = agg.quoted_cost, total_savings = agg.savings,
       status = CASE WHEN $3 = 'completed' AND agg.completed = 0 AND agg.failed > 0 THEN 'failed' ELSE $3 END,
       error = CASE WHEN $3 = 'completed' AND agg.completed = 0 AND agg.failed > 0 THEN $5
                    WHEN $3 = 'failed' THEN $4 END,
       completed_at = now(), updated_at = now()
  FROM agg
 WHERE c.id = $2 AND c.organization_id = $1 AND c.status = 'processing'`

func rcNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// RateComparisonMaxSeq is the largest item position of a comparison (its
// item count; 0 when it has none).
func RateComparisonMaxSeq(ctx context.Context, db DBTX, orgID, id uuid.UUID) (int, error) {
	var n int
	err := db.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM rate_comparison_items WHERE comparison_id = $2 AND organization_id = $1`, orgID, id).Scan(&n)
	return n, mapErr(err)
}

// RateComparisonWorkItem is an item claimed for processing.
type RateComparisonWorkItem struct {
	ID             uuid.UUID `db:"id"`
	Seq            int       `db:"seq"`
	TrackingNumber string    `db:"tracking_number"`
	NetCost        *float64  `db:"net_cost"`
	ServiceType    *string   `db:"service_type"`
}

// ClaimRateComparisonBatch moves the unfinished items with seq in
// [fromSeq, toSeq] to tracking and returns them by seq (one statement).
// Finished items are left alone, so a retried batch redoes only what is
// left. Nothing is claimed unless the comparison is processing; the
// comparison row is locked FOR SHARE before any item (see Lock order).
func ClaimRateComparisonBatch(ctx context.Context, db DBTX, orgID, id uuid.UUID, fromSeq, toSeq int) ([]RateComparisonWorkItem, error) {
	rows, _ := db.Query(ctx, `
WITH c AS (
    SELECT id FROM rate_comparisons WHERE id = $2 AND organization_id = $1 AND status = 'processing' FOR SHARE
)
UPDATE rate_comparison_items i SET status = 'tracking', updated_at = now()
 WHERE i.comparison_id = $2 AND i.organization_id = $1 AND i.seq BETWEEN $3 AND $4
   AND i.status IN ('pending', 'tracking', 'rating')
   AND EXISTS (SELECT 1 FROM c)
RETURNING i.id, i.seq, i.tracking_number, i.net_cost::float8 AS net_cost, i.service_type`, orgID, id, fromSeq, toSeq)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[RateComparisonWorkItem])
	if err != nil {
		return nil, mapErr(err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, nil
}

// MarkRateComparisonItemsRating moves tracked items (still tracking) to
// rating while the comparison is processing (its row locked FOR SHARE
// first, see Lock order).
func MarkRateComparisonItemsRating(ctx context.Context, db DBTX, orgID, id uuid.UUID, itemIDs []uuid.UUID) error {
	if len(itemIDs) == 0 {
		return nil
	}
	_, err := db.Exec(ctx, `
WITH c AS (
    SELECT id FROM rate_comparisons WHERE id = $2 AND organization_id = $1 AND status = 'processing' FOR SHARE
)
UPDATE rate_comparison_items SET status = 'rating', updated_at = now()
 WHERE comparison_id = $2 AND organization_id = $1 AND id = ANY($3) AND status = 'tracking'
   AND EXISTS (SELECT 1 FROM c)`, orgID, id, itemIDs)
	return mapErr(err)
}

// RateAddress is the part of an address a comparison keeps.
type RateAddress struct {
	City    string `json:"city"`
	State   string `json:"state"`
	Zip     string `json:"zip"`
	Country string `json:"country"`
}

// RateComparisonItemResult is the outcome of one item: Status is
// RateItemCompleted or RateItemFailed. Savings are computed from the
// stored net cost.
type RateComparisonItemResult struct {
	ID          uuid.UUID
	Status      string
	ServiceType string // the source service learnt by tracking ("" keeps the uploaded one)
	// ServiceLevel is the level the source service maps to.
	ServiceLevel      string
	Origin            *RateAddress
	Destination       *RateAddress
	WeightValue       *float64
	WeightUnit        string
	Zone              string
	QuotedService     string
	QuotedServiceName string
	QuotedPrice       *float64
	Currency          string
	TransitDays       *int
	Error             string
}

// RateComparisonCounters are a comparison's counters after a batch write.
type RateComparisonCounters struct {
	PendingItems    int     `db:"pending_items" json:"pendingItems"`
	CompletedItems  int     `db:"completed_items" json:"completedItems"`
	FailedItems     int     `db:"failed_items" json:"failedItems"`
	SkippedItems    int     `db:"skipped_items" json:"skippedItems"`
	TotalNetCost    float64 `db:"total_net_cost" json:"totalNetCost"`
	TotalQuotedCost float64 `db:"total_quoted_cost" json:"totalQuotedCost"`
	TotalSavings    float64 `db:"total_savings" json:"totalSavings"`
	// Written is how many items this write finished (items already
	// finished are not touched again).
	Written int `db:"written" json:"written"`
}

// RecordRateComparisonResults writes a batch of item outcomes and bumps the
// comparison's counters. It runs in a transaction that first locks the
// comparison row (see Lock order) and writes nothing unless the comparison
// is processing: ErrRateComparisonClosed when it is not any more,
// ErrRateComparisonGone when it was deleted. The write itself is ONE
// statement: UPDATE … FROM unnest(…) on the items, then the counters from
// the rows that statement actually changed. Only unfinished items are
// updated, so a retried write changes nothing twice (idempotent).
func RecordRateComparisonResults(ctx context.Context, db TxBeginner, orgID, id uuid.UUID, results []RateComparisonItemResult) (RateComparisonCounters, error) {
	n := len(results)
	var (
		ids                             = make([]uuid.UUID, n)
		states, svc, level, wunit, zone = make([]string, n), make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
		oCity, oState, oZip, oCountry   = make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
		dCity, dState, dZip, dCountry   = make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
		qsvc, qname, currency, errs     = make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
		weight, price                   = make([]*float64, n), make([]*float64, n)
		transit                         = make([]*int32, n)
	)
	for i, r := range results {
		ids[i], states[i] = r.ID, r.Status
		svc[i], level[i], wunit[i], zone[i] = rcNull(r.ServiceType), rcNull(r.ServiceLevel), rcNull(r.WeightUnit), rcNull(r.Zone)
		if o := r.Origin; o != nil {
			oCity[i], oState[i], oZip[i], oCountry[i] = rcNull(o.City), rcNull(o.State), rcNull(o.Zip), rcNull(o.Country)
		}
		if d := r.Destination; d != nil {
			dCity[i], dState[i], dZip[i], dCountry[i] = rcNull(d.City), rcNull(d.State), rcNull(d.Zip), rcNull(d.Country)
		}
		qsvc[i], qname[i], currency[i], errs[i] = rcNull(r.QuotedService), rcNull(r.QuotedServiceName), rcNull(r.Currency), rcNull(r.Error)
		weight[i], price[i] = r.WeightValue, r.QuotedPrice
		if r.TransitDays != nil {
			v := int32(*r.TransitDays)
			transit[i] = &v
		}
	}
	var out RateComparisonCounters
	err := rcInTx(ctx, db, func(tx pgx.Tx) error {
		status, err := lockRateComparison(ctx, tx, orgID, id)
		if errors.Is(err, ErrNotFound) {
			return ErrRateComparisonGone
		}
		if err != nil {
			return err
		}
		if status != RateComparisonProcessing {
			return fmt.Errorf("%w (%s)", ErrRateComparisonClosed, status)
		}
		// An unnamed statement (CacheDescribe), planned with the actual
		// arrays each time: as a cached prepared statement PostgreSQL
		// switches to a generic plan after five runs, ~100 times slower
		// here (1.1 s instead of 10 ms for 250 items), and the comparison
		// row stays locked meanwhile.
		rows, _ := tx.Query(ctx, recordRateComparisonResultsSQL, pgx.QueryExecModeCacheDescribe, orgID, id, ids, states, svc, level,
			oCity, oState, oZip, oCountry, dCity, dState, dZip, dCountry,
			weight, wunit, zone, qsvc, qname, price, currency, transit, errs)
		out, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[RateComparisonCounters])
		return mapErr(err)
	})
	if err != nil {
		return RateComparisonCounters{}, err
	}
	return out, nil
}

// recordRateComparisonResultsSQL writes a batch of outcomes to the items of
// a locked comparison and bumps its counters.
const recordRateComparisonResultsSQL = `
WITH t AS (
    SELECT * FROM unnest($3::uuid[], $4::text[], $5::text[], $6::text[],
                         $7::text[], $8::text[], $9::text[], $10::text[],
                         $11::text[], $12::text[], $13::text[], $14::text[],
                         $15::numeric[], $16::text[], $17::text[], $18::text[], $19::text[],
                         $20::numeric[], $21::text[], $22::int[], $23::text[])
        AS t(id, status, service_type, service_level,
             origin_city, origin_state, origin_zip, origin_country,
             destination_city, destination_state, destination_zip, destination_country,
             weight_value, weight_unit, zone, quoted_service, quoted_service_name,
             quoted_price, currency, transit_days, error)
), upd AS (
    UPDATE rate_comparison_items i
       SET status = t.status,
           service_type = coalesce(i.service_type, t.service_type),
           service_level = t.service_level,
           origin_city = t.origin_city, origin_state = t.origin_state, origin_zip = t.origin_zip, origin_country = t.origin_country,
           destination_city = t.destination_city, destination_state = t.destination_state,
           destination_zip = t.destination_zip, destination_country = t.destination_country,
           weight_value = t.weight_value, weight_unit = t.weight_unit, zone = t.zone,
           quoted_service = t.quoted_service, quoted_service_name = t.quoted_service_name,
           quoted_price = t.quoted_price, currency = t.currency, transit_days = t.transit_days,
           savings = CASE WHEN t.status = 'completed' AND t.quoted_price IS NOT NULL THEN i.net_cost - t.quoted_price END,
           error = t.error, updated_at = now()
      FROM t
     WHERE i.id = t.id AND i.comparison_id = $2 AND i.organization_id = $1
       AND i.status IN ('pending', 'tracking', 'rating')
    RETURNING i.status, i.net_cost, i.quoted_price, i.savings
), d AS (
    SELECT count(*) AS written,
           count(*) FILTER (WHERE status = 'completed') AS completed,
           count(*) FILTER (WHERE status = 'failed') AS failed,
           coalesce(sum(net_cost) FILTER (WHERE status = 'completed'), 0) AS net_cost,
           coalesce(sum(quoted_price) FILTER (WHERE status = 'completed'), 0) AS quoted_cost,
           coalesce(sum(savings) FILTER (WHERE status = 'completed'), 0) AS savings
      FROM upd
)
UPDATE rate_comparisons c
   SET pending_items = c.pending_items - d.written,
       completed_items = c.completed_items + d.completed,
       failed_items = c.failed_items + d.failed,
       total_net_cost = c.total_net_cost + d.net_cost,
       total_quoted_cost = c.total_quoted_cost + d.quoted_cost,
       total_savings = c.total_savings + d.savings,
       updated_at = now()
  FROM d
 WHERE c.id = $2 AND c.organization_id = $1
RETURNING c.pending_items, c.completed_items, c.failed_items, c.skipped_items,
          c.total_net_cost::float8 AS total_net_cost, c.total_quoted_cost::float8 AS total_quoted_cost,
          c.total_savings::float8 AS total_savings, d.written::int AS written`

// RateComparisonItem is an item as the API shows it.
type RateComparisonItem struct {
	ID                 uuid.UUID `db:"id"`
	ComparisonID       uuid.UUID `db:"comparison_id"`
	Seq                int       `db:"seq"`
	TrackingNumber     string    `db:"tracking_number"`
	NetCost            *float64  `db:"net_cost"`
	ServiceType        *string   `db:"service_type"`
	ServiceLevel       *string   `db:"service_level"`
	Status             string    `db:"status"`
	OriginCity         *string   `db:"origin_city"`
	OriginState        *string   `db:"origin_state"`
	OriginZip          *string   `db:"origin_zip"`
	OriginCountry      *string   `db:"origin_country"`
	DestinationCity    *string   `db:"destination_city"`
	DestinationState   *string   `db:"destination_state"`
	DestinationZip     *string   `db:"destination_zip"`
	DestinationCountry *string   `db:"destination_country"`
	WeightValue        *float64  `db:"weight_value"`
	WeightUnit         *string   `db:"weight_unit"`
	Zone               *string   `db:"zone"`
	QuotedService      *string   `db:"quoted_service"`
	QuotedServiceName  *string   `db:"quoted_service_name"`
	QuotedPrice        *float64  `db:"quoted_price"`
	Currency           *string   `db:"currency"`
	TransitDays        *int      `db:"transit_days"`
	Savings            *float64  `db:"savings"`
	Error              *string   `db:"error"`
	CreatedAt          time.Time `db:"created_at"`
	UpdatedAt          time.Time `db:"updated_at"`
}

const rateComparisonItemCols = `id, comparison_id, seq, tracking_number, net_cost::float8 AS net_cost, service_type, service_level, status,
origin_city, origin_state, origin_zip, origin_country, destination_city, destination_state, destination_zip, destination_country,
weight_value::float8 AS weight_value, weight_unit, zone, quoted_service, quoted_service_name, quoted_price::float8 AS quoted_price,
currency, transit_days, savings::float8 AS savings, error, created_at, updated_at`

// RateComparisonItemFilter narrows ListRateComparisonItems ("" does not
// filter). Search matches tracking numbers containing it, case-insensitively.
type RateComparisonItemFilter struct {
	Status      string
	Zone        string
	ServiceType string
	Search      string
	Limit       int
	Offset      int
}

// ListRateComparisonItems returns a page of a comparison's items in upload
// order and the number matching. Every query reads only the comparison's
// items (at most 10,000) through an index that leads with the comparison;
// the status, zone and service filters use their own index. The search is
// a substring match (it cannot use the tracking number index, which serves
// prefixes only): upper() on both sides in SQL, so the case folding is the
// database's for both (Go's strings.ToUpper can disagree with it, e.g.
// under an LC_CTYPE of C, which folds ASCII only).
func ListRateComparisonItems(ctx context.Context, db DBTX, orgID, id uuid.UUID, f RateComparisonItemFilter) ([]RateComparisonItem, int, error) {
	const where = ` FROM rate_comparison_items
 WHERE comparison_id = $2 AND organization_id = $1
   AND ($3 = '' OR status = $3)
   AND ($4 = '' OR zone = $4)
   AND ($5 = '' OR service_type = $5)
   AND ($6 = '' OR upper(tracking_number) LIKE '%' || upper($6) || '%')`
	search := rcLikeEscape(f.Search)
	var total int
	if err := db.QueryRow(ctx, `SELECT count(*)`+where, orgID, id, f.Status, f.Zone, f.ServiceType, search).Scan(&total); err != nil {
		return nil, 0, mapErr(err)
	}
	rows, _ := db.Query(ctx, `SELECT `+rateComparisonItemCols+where+` ORDER BY seq LIMIT $7 OFFSET $8`,
		orgID, id, f.Status, f.Zone, f.ServiceType, search, f.Limit, f.Offset)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[RateComparisonItem])
	if err != nil {
		return nil, 0, mapErr(err)
	}
	return out, total, nil
}

// rcLikeEscape escapes LIKE's wildcards (the default escape is backslash).
func rcLikeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// RateSummaryTotals are a comparison's totals: counts over all items, money
// over completed items (savings over those with a net cost).
type RateSummaryTotals struct {
	Items          int      `json:"items"`
	Pending        int      `json:"pending"`
	Completed      int      `json:"completed"`
	Failed         int      `json:"failed"`
	Skipped        int      `json:"skipped"`
	NetCost        float64  `json:"netCost"`
	QuotedCost     float64  `json:"quotedCost"`
	Savings        float64  `json:"savings"`
	SavingsPercent *float64 `json:"savingsPercent"`
}

// RateSummaryZone is one zone's aggregate (completed items).
type RateSummaryZone struct {
	Zone           *string  `json:"zone"`
	Items          int      `json:"items"`
	NetCost        float64  `json:"netCost"`
	QuotedCost     float64  `json:"quotedCost"`
	Savings        float64  `json:"savings"`
	SavingsPercent *float64 `json:"savingsPercent"`
}

// RateSummaryService is one (source service, quoted service) pair's
// aggregate (completed items).
type RateSummaryService struct {
	ServiceType    *string  `json:"serviceType"`
	ServiceLevel   *string  `json:"serviceLevel"`
	QuotedService  *string  `json:"quotedService"`
	Items          int      `json:"items"`
	NetCost        float64  `json:"netCost"`
	QuotedCost     float64  `json:"quotedCost"`
	Savings        float64  `json:"savings"`
	SavingsPercent *float64 `json:"savingsPercent"`
}

// RateSummary is the summary of a comparison.
type RateSummary struct {
	Totals    RateSummaryTotals
	ByZone    []RateSummaryZone
	ByService []RateSummaryService
}

// RateComparisonSummary aggregates a comparison's items in ONE query:
// GROUP BY GROUPING SETS ((), (zone), (service_type, service_level,
// quoted_service)). Zones are ordered numerically, services by item count.
func RateComparisonSummary(ctx context.Context, db DBTX, orgID, id uuid.UUID) (RateSummary, error) {
	rows, err := db.Query(ctx, `
SELECT grouping(zone) AS g_zone, grouping(service_type, service_level, quoted_service) AS g_service,
       zone, service_type, service_level, quoted_service,
       count(*) AS items,
       count(*) FILTER (WHERE status IN ('pending', 'tracking', 'rating')) AS pending,
       count(*) FILTER (WHERE status = 'completed') AS completed,
       count(*) FILTER (WHERE status = 'failed') AS failed,
       count(*) FILTER (WHERE status = 'skipped') AS skipped,
       coalesce(sum(net_cost) FILTER (WHERE status = 'completed'), 0)::float8 AS net_cost,
       coalesce(sum(quoted_price) FILTER (WHERE status = 'completed'), 0)::float8 AS quoted_cost,
       coalesce(sum(savings) FILTER (WHERE status = 'completed'), 0)::float8 AS savings,
       coalesce(sum(net_cost) FILTER (WHERE status = 'completed' AND savings IS NOT NULL), 0)::float8 AS compared_net_cost
  FROM rate_comparison_items
 WHERE comparison_id = $2 AND organization_id = $1
 GROUP BY GROUPING SETS ((), (zone), (service_type, service_level, quoted_service))`, orgID, id)
	if err != nil {
		return RateSummary{}, mapErr(err)
	}
	defer rows.Close()
	out := RateSummary{ByZone: []RateSummaryZone{}, ByService: []RateSummaryService{}}
	for rows.Next() {
		var (
			gZone, gService                               int32
			zone, svc, level, quoted                      *string
			items, pending, completed, failed, skipped    int
			netCost, quotedCost, savings, comparedNetCost float64
		)
		if err := rows.Scan(&gZone, &gService, &zone, &svc, &level, &quoted, &items, &pending, &completed, &failed, &skipped,
			&netCost, &quotedCost, &savings, &comparedNetCost); err != nil {
			return RateSummary{}, mapErr(err)
		}
		pct := rcSavingsPercent(savings, comparedNetCost)
		switch {
		case gZone == 1 && gService != 0:
			out.Totals = RateSummaryTotals{Items: items, Pending: pending, Completed: completed, Failed: failed, Skipped: skipped,
				NetCost: rcRound2(netCost), QuotedCost: rcRound2(quotedCost), Savings: rcRound2(savings), SavingsPercent: pct}
		case gZone == 0:
			if completed > 0 {
				out.ByZone = append(out.ByZone, RateSummaryZone{Zone: zone, Items: completed, NetCost: rcRound2(netCost),
					QuotedCost: rcRound2(quotedCost), Savings: rcRound2(savings), SavingsPercent: pct})
			}
		default:
			if completed > 0 {
				out.ByService = append(out.ByService, RateSummaryService{ServiceType: svc, ServiceLevel: level, QuotedService: quoted,
					Items: completed, NetCost: rcRound2(netCost), QuotedCost: rcRound2(quotedCost), Savings: rcRound2(savings), SavingsPercent: pct})
			}
		}
	}
	if err := rows.Err(); err != nil {
		return RateSummary{}, mapErr(err)
	}
	sort.SliceStable(out.ByZone, func(i, j int) bool { return rcZoneLess(out.ByZone[i].Zone, out.ByZone[j].Zone) })
	sort.SliceStable(out.ByService, func(i, j int) bool {
		a, b := out.ByService[i], out.ByService[j]
		if a.Items != b.Items {
			return a.Items > b.Items
		}
		return rcDeref(a.ServiceType)+"\x00"+rcDeref(a.QuotedService) < rcDeref(b.ServiceType)+"\x00"+rcDeref(b.QuotedService)
	})
	return out, nil
}

// rcZoneLess orders zones numerically when they are numbers, then by text,
// unknown (nil) last.
func rcZoneLess(a, b *string) bool {
	switch {
	case a == nil:
		return false
	case b == nil:
		return true
	}
	na, ea := strconv.Atoi(*a)
	nb, eb := strconv.Atoi(*b)
	switch {
	case ea == nil && eb == nil:
		return na < nb
	case ea == nil:
		return true
	case eb == nil:
		return false
	}
	return *a < *b
}

func rcDeref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func rcRound2(v float64) float64 { return math.Round(v*100) / 100 }
