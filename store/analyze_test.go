package store_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// Lists right after a bulk import (issue 22 item 13): the orders table
// was analyzed while small; n orders are imported (all but 1,000 in one
// statement, standing for the earlier pages, then the last sync page
// through UpsertOrderBatch). The bulk writer analyzes the grown table
// outside its transaction (in the background, at once), so the order
// list's page 500 plans with the new statistics: an index walk, not a
// bitmap heap scan over the organization estimated at a handful of rows.
func TestOrderListPlanRightAfterBulkImport(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	prev := store.AnalyzeInterval
	store.AnalyzeInterval = 0 // other tests of the package write orders too
	t.Cleanup(func() { store.AnalyzeInterval = prev })

	org, bridge := orderTestOrg(t, s)
	// The statistics of a small table.
	for i := range 50 {
		_, err := store.CreateOrder(ctx, s.Pool, orderTestNew(org, bridge, fmt.Sprint("small-", i)))
		require.NoError(t, err)
	}
	_, err := s.Pool.Exec(ctx, `ANALYZE orders`)
	require.NoError(t, err)

	// FOS_TEST_IMPORT_N=100000 for the size (minutes on a busy
	// two-core machine: the orders table has a trigram index and counters).
	n := 20_000
	if v, err := strconv.Atoi(os.Getenv("FOS_TEST_IMPORT_N")); err == nil && v > 1000 {
		n = v
	}
	_, err = s.Pool.Exec(ctx, `
INSERT INTO orders (id, organization_id, bridge_id, external_id, status, customer, customer_email, customer_name,
                    line_items, totals, total, currency, ordered_at, created_at, updated_at)
SELECT gen_random_uuid(), $1, $2, 'imp-' || g, 'pending', '{"email":"a@example.com"}', 'a@example.com', 'Ann Lee',
       '[]', '{"total": 1}', 1, 'USD', now() - g * interval '1 second', now() - g * interval '1 second', now()
  FROM generate_series(1, $3) g`, org, bridge, n-1000)
	require.NoError(t, err)

	page := store.OrderListParams{Sort: "created_at", Desc: true, Limit: 20, Offset: 499 * 20}
	plan := func() string {
		sql, args := store.OrderPageSQL(s.Pool, org, page)
		rows, err := s.Pool.Query(ctx, "EXPLAIN "+sql, args...)
		require.NoError(t, err)
		var lines []string
		for rows.Next() {
			var l string
			require.NoError(t, rows.Scan(&l))
			lines = append(lines, l)
		}
		require.NoError(t, rows.Err())
		return strings.Join(lines, "\n")
	}
	before := plan()
	t.Logf("plan with the small table's statistics:\n%s", before)
	scansOrders := `(Seq Scan|Bitmap Heap Scan) on orders `
	require.Regexp(t, scansOrders, before, "without fresh statistics the page reads the organization's orders")

	// The last page of the import, through the sync's batch writer.
	orders := make([]platforms.Order, 1000)
	for i := range orders {
		orders[i] = platforms.Order{ExternalID: fmt.Sprint("last-", i), Status: "pending",
			Customer: platforms.Customer{Email: "b@example.com", FirstName: "Bo"}, Currency: "USD",
			OrderedAt: time.Now(), UpdatedAt: time.Now()}
	}
	res, err := store.UpsertOrderBatch(ctx, s, store.OrderBatch{OrganizationID: org, BridgeID: bridge, Orders: orders,
		BridgeName: "Shop", ActorName: "test", ActivityID: func(string) uuid.UUID { return uuid.New() }})
	require.NoError(t, err)
	require.Equal(t, 1000, res.Created)

	// The ANALYZE runs in the background, right away.
	var estimate float64
	deadline := time.Now().Add(30 * time.Second)
	for {
		require.NoError(t, s.Pool.QueryRow(ctx, `SELECT reltuples FROM pg_class WHERE oid = 'orders'::regclass`).Scan(&estimate))
		if estimate > float64(n)*0.9 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.Greater(t, estimate, float64(n)*0.9, "the grown table was analyzed")
	after := plan()
	t.Logf("plan right after the import:\n%s", after)
	require.NotRegexp(t, scansOrders, after, "the page walks an index")
	require.Contains(t, after, "Index Only Scan using orders_org_created_list_idx on orders")
}

// The ANALYZE after bulk writes covers a table's columns but its JSON
// documents (their sampling and sorting cost most of it, and the planner
// estimates nothing the writes change from them).
func TestAnalyzeSkipsJSONDocuments(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	sql := s.AnalyzeSQL(ctx, "orders")
	require.True(t, strings.HasPrefix(sql, `ANALYZE "orders" (`), sql)
	cols := map[string]bool{}
	for _, c := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(sql, `ANALYZE "orders" (`), ")"), ", ") {
		cols[c] = true
	}
	for _, c := range []string{"id", "organization_id", "bridge_id", "external_id", "status", "customer_email", "search_text", "created_at", "tags"} {
		require.True(t, cols[c], "%s in %s", c, sql)
	}
	for _, c := range []string{"customer", "shipping_address", "billing_address", "line_items", "totals", "metadata", "source_data"} {
		require.False(t, cols[c], "%s in %s", c, sql)
	}
	_, err := s.Pool.Exec(ctx, sql)
	require.NoError(t, err)
	for table, doc := range map[string]string{"order_activities": "metadata", "dispatch_assignments": "metadata", "task_executions": "input"} {
		sql := s.AnalyzeSQL(ctx, table)
		require.Contains(t, sql, "organization_id", table)
		require.NotContains(t, sql, doc, "%s: a jsonb column", table)
		_, err := s.Pool.Exec(ctx, sql)
		require.NoError(t, err, sql)
	}
}
