package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// OperationItemRef is what the insights need of an operation item: its
// order, its assigned rate snapshot and its carrier override. The
// operations area owns the items; the insights receive them through a port
// and aggregate them here, in one statement, joined to the snapshots and
// carrier accounts.
type OperationItemRef struct {
	OrderID                  uuid.UUID
	RateSnapshotID           *uuid.UUID
	OverrideCarrierAccountID *uuid.UUID
}

// OperationItemGroup is the items of an operation sharing a carrier,
// service and risk flags.
type OperationItemGroup struct {
	// Carrier and Service of the assigned snapshot; nil: no snapshot (or
	// one that is not the organization's).
	Carrier *string `db:"carrier"`
	Service *string `db:"service"`
	// Expired: the snapshot's quote has expired. AccountActive: the
	// carrier account that would buy (the snapshot's, else the override)
	// exists and is active; nil when there is none. HasOverride: the item
	// names a carrier account to buy its cheapest quote with.
	Expired       bool  `db:"expired"`
	AccountActive *bool `db:"account_active"`
	HasOverride   bool  `db:"has_override"`
	Items         int   `db:"items"`
	Orders        int   `db:"orders"`
	// Amount is the snapshots' total price; Savings what the cheapest
	// quote of the same request (addresses and packages) with the same or
	// fewer transit days would have saved; SavingItems how many items had
	// such a quote. TransitDays sums the snapshots' transit days over
	// TransitItems items that state them.
	Amount       float64 `db:"amount"`
	Savings      float64 `db:"savings"`
	SavingItems  int     `db:"saving_items"`
	TransitDays  float64 `db:"transit_days"`
	TransitItems int     `db:"transit_items"`
}

// OperationItemGroups aggregates an operation's items (given by the
// operations area) per carrier, service and risk flags.
func OperationItemGroups(ctx context.Context, db DBTX, orgID uuid.UUID, items []OperationItemRef, now time.Time) ([]OperationItemGroup, error) {
	orders := make([]uuid.UUID, len(items))
	snaps := make([]*uuid.UUID, len(items))
	overrides := make([]*uuid.UUID, len(items))
	for i, it := range items {
		orders[i], snaps[i], overrides[i] = it.OrderID, it.RateSnapshotID, it.OverrideCarrierAccountID
	}
	rows, err := db.Query(ctx, `
WITH items AS (
  SELECT * FROM unnest($2::uuid[], $3::uuid[], $4::uuid[]) AS t(order_id, snapshot_id, override_id)
), chosen AS (
  SELECT i.order_id, i.override_id, r.carrier, coalesce(nullif(r.service_name, ''), r.service_type) AS service,
         r.total_price, r.transit_days, r.expires_at, coalesce(r.carrier_account_id, i.override_id) AS account_id,
         r.request_key AS req, r.id AS snapshot_id
    FROM items i LEFT JOIN rate_snapshots r ON r.organization_id = $1 AND r.id = i.snapshot_id
), priced AS (
  SELECT c.*, a.status AS account_status, alt.cheapest
    FROM chosen c
    LEFT JOIN carrier_accounts a ON a.organization_id = $1 AND a.id = c.account_id
    LEFT JOIN LATERAL (
      SELECT min(o.total_price) AS cheapest FROM rate_snapshots o
       WHERE c.snapshot_id IS NOT NULL AND o.organization_id = $1 AND o.request_key = c.req
         AND o.total_price < c.total_price AND o.transit_days <= c.transit_days) alt ON true
)
SELECT carrier, service, coalesce(expires_at <= $5, false) AS expired,
       CASE WHEN account_id IS NULL THEN NULL ELSE coalesce(account_status = 'active', false) END AS account_active,
       override_id IS NOT NULL AS has_override,
       count(*)::int AS items, count(DISTINCT order_id)::int AS orders,
       coalesce(sum(total_price), 0)::float8 AS amount, coalesce(sum(total_price - cheapest), 0)::float8 AS savings,
       count(cheapest)::int AS saving_items,
       coalesce(sum(transit_days), 0)::float8 AS transit_days, count(transit_days)::int AS transit_items
  FROM priced
 GROUP BY 1, 2, 3, 4, 5
 ORDER BY 1 NULLS LAST, 2 NULLS LAST, 3, 4, 5`, orgID, orders, snaps, overrides, now)
	if err != nil {
		return nil, mapErr(err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByName[OperationItemGroup])
}

// OperationItemRefs reads an operation's name and its items, in item
// order, from the operations area's tables (migrations 00040-00049).
// ErrNotFound: no such operation in the organization, which is also the
// answer while those tables do not exist (a build without the operations
// area).
func OperationItemRefs(ctx context.Context, db DBTX, orgID, operationID uuid.UUID) (string, []OperationItemRef, error) {
	var name string
	err := db.QueryRow(ctx, `SELECT name FROM operations WHERE organization_id = $1 AND id = $2`, orgID, operationID).Scan(&name)
	if isUndefinedTable(err) {
		return "", nil, ErrNotFound
	}
	if err != nil {
		return "", nil, mapErr(err)
	}
	rows, err := db.Query(ctx, `SELECT order_id, rate_snapshot_id, override_carrier_account_id FROM operation_items
 WHERE organization_id = $1 AND operation_id = $2 ORDER BY seq`, orgID, operationID)
	if err != nil {
		return "", nil, mapErr(err)
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (OperationItemRef, error) {
		var it OperationItemRef
		err := r.Scan(&it.OrderID, &it.RateSnapshotID, &it.OverrideCarrierAccountID)
		return it, err
	})
	return name, items, mapErr(err)
}

func isUndefinedTable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42P01"
}
