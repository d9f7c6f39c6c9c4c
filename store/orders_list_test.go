package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// ListOrders (an index walk joined to the page's rows) answers exactly what
// the plain query answers, for every sort, direction, filter and offset,
// including ties in the sort key, orders without a number, and pages past
// the end. Another organization's orders never appear.
func TestStoreListOrdersMatchesPlainQuery(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	orgID, bridgeA := orderTestOrg(t, s)
	bridgeB := uuid.New()
	_, err := s.Pool.Exec(ctx, `INSERT INTO bridges (id, organization_id, type, name) VALUES ($1, $2, 'storefront_a', 'Shop B')`, bridgeB, orgID)
	require.NoError(t, err)
	otherOrg, otherBridge := orderTestOrg(t, s)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	names := []string{"Ann Lee", "Bob Smith", "Cy Smithers", "Dee O'Neil"}
	statuses := []string{"pending", "shipped", "delivered", "on_hold"}
	for i := range 41 {
		bridge := bridgeA
		if i%3 == 0 {
			bridge = bridgeB
		}
		o := orderTestNew(orgID, bridge, fmt.Sprint(i))
		o.Status = statuses[i%len(statuses)]
		o.CustomerName = names[i%len(names)]
		o.CustomerEmail = fmt.Sprintf("c%d@example.%s", i%5, []string{"com", "org"}[i%2])
		if i%4 != 0 {
			num := fmt.Sprintf("#%03d", (i*7)%20) // repeats
			o.OrderNumber = &num
		}
		o.Total = float64(i % 6) // ties
		o.OrderedAt = base.Add(time.Duration(i%9) * time.Hour)
		_, err := store.CreateOrder(ctx, s.Pool, o)
		require.NoError(t, err)
		// Ties in created_at and updated_at too.
		_, err = s.Pool.Exec(ctx, `UPDATE orders SET created_at = $2, updated_at = $3 WHERE id = $1`,
			o.ID, base.Add(time.Duration(i/3)*time.Minute), base.Add(time.Duration(i%7)*time.Minute))
		require.NoError(t, err)
	}
	for i := range 5 {
		_, err := store.CreateOrder(ctx, s.Pool, orderTestNew(otherOrg, otherBridge, fmt.Sprint("x", i)))
		require.NoError(t, err)
	}
	// Orders at the ends of the id ranges a search is counted in, and two
	// without a bridge (removed afterwards: the package's tests share one
	// database).
	edges := []uuid.UUID{uuid.MustParse("00000000-0000-0000-0000-000000000000"), uuid.MustParse("7fffffff-ffff-ffff-ffff-ffffffffffff"),
		uuid.MustParse("80000000-0000-0000-0000-000000000000"), uuid.MustParse("ffffffff-ffff-ffff-ffff-ffffffffffff")}
	t.Cleanup(func() {
		_, err := s.Pool.Exec(context.Background(), `DELETE FROM orders WHERE id = ANY($1)`, edges)
		require.NoError(t, err)
	})
	for i, id := range edges {
		o := orderTestNew(orgID, bridgeA, fmt.Sprint("edge", i))
		o.ID = id
		o.CustomerName = "Edge Smith"
		_, err := store.CreateOrder(ctx, s.Pool, o)
		require.NoError(t, err)
		if i < 2 { // as if its bridge had been deleted
			_, err = s.Pool.Exec(ctx, `UPDATE orders SET bridge_id = NULL WHERE id = $1`, o.ID)
			require.NoError(t, err)
		}
	}

	since := base.Add(4 * time.Minute)
	filters := map[string]store.OrderFilter{
		"none":          {},
		"status":        {Status: "shipped"},
		"bridge":        {BridgeID: &bridgeB},
		"status_bridge": {Status: "pending", BridgeID: &bridgeA},
		"bridge_none":   {BridgeID: &otherBridge},
		"bridge_nil":    {BridgeID: &uuid.Nil},
		"search_common": {Search: "e"},
		"search":        {Search: "SMITH"},
		"search_email":  {Search: ".org"},
		"status_search": {Status: "pending", Search: "lee"},
		"since":         {Since: &since},
		"all":           {Status: "delivered", BridgeID: &bridgeA, Search: "e", Since: &since},
		"nothing":       {Search: "no such order"},
	}
	for fname, f := range filters {
		for sortKey, col := range store.OrderSortColumns {
			for _, desc := range []bool{false, true} {
				for _, offset := range []int{0, 4, 13, 39, 40, 41, 44, 45, 100} {
					p := store.OrderListParams{Filter: f, Sort: sortKey, Desc: desc, Limit: 7, Offset: offset}
					items, total, err := store.ListOrders(ctx, s.Pool, orgID, p)
					require.NoError(t, err)
					wantIDs, wantTotal := plainOrderList(t, s, orgID, col, p)
					gotIDs := []uuid.UUID{}
					for _, it := range items {
						gotIDs = append(gotIDs, it.ID)
					}
					name := fmt.Sprintf("filter=%s sort=%s desc=%v offset=%d", fname, sortKey, desc, offset)
					require.Equal(t, wantIDs, gotIDs, name)
					require.Equal(t, wantTotal, total, name)
				}
			}
		}
	}
}

// plainOrderList is the list as the straightforward query gives it.
func plainOrderList(t *testing.T, s *store.Store, orgID uuid.UUID, col string, p store.OrderListParams) ([]uuid.UUID, int) {
	t.Helper()
	dir := " ASC"
	if p.Desc {
		dir = " DESC"
	}
	nulls := ""
	if col == "order_number" {
		nulls = " NULLS LAST"
	}
	where := `organization_id = $1 AND ($2 = '' OR status = $2) AND ($3::uuid IS NULL OR bridge_id = $3)
 AND ($4 = '' OR strpos(lower(coalesce(order_number, '') || ' ' || customer_name || ' ' || customer_email), lower($4)) > 0)
 AND ($5::timestamptz IS NULL OR created_at > $5)`
	args := []any{orgID, p.Filter.Status, p.Filter.BridgeID, p.Filter.Search, p.Filter.Since}
	rows, _ := s.Pool.Query(t.Context(), `SELECT id FROM orders WHERE `+where+` ORDER BY `+col+dir+nulls+`, id`+dir+
		fmt.Sprintf(` LIMIT %d OFFSET %d`, p.Limit, p.Offset), args...)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	require.NoError(t, err)
	if ids == nil {
		ids = []uuid.UUID{}
	}
	var total int
	require.NoError(t, s.Pool.QueryRow(t.Context(), `SELECT count(*) FROM orders WHERE `+where, args...).Scan(&total))
	return ids, total
}
