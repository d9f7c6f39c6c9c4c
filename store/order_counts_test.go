package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// requireCountsExact fails the test unless the kept counters equal the
// plain count of the orders table in every bucket.
func requireCountsExact(t *testing.T, s *store.Store, step string) {
	t.Helper()
	kept, plain := bucketCounts(t, s)
	require.Equal(t, plain, kept, step)
}

// bucketCounts is the kept counters (order_counts) and the plain count of
// the orders table, each per "organization/status/bridge" bucket, non-zero
// buckets only.
func bucketCounts(t *testing.T, s *store.Store) (kept, plain map[string]int64) {
	t.Helper()
	read := func(q string) map[string]int64 {
		rows, err := s.Pool.Query(t.Context(), q)
		require.NoError(t, err)
		defer rows.Close()
		out := map[string]int64{}
		for rows.Next() {
			var org, bridge uuid.UUID
			var status string
			var n int64
			require.NoError(t, rows.Scan(&org, &status, &bridge, &n))
			out[fmt.Sprintf("%s/%s/%s", org, status, bridge)] = n
		}
		require.NoError(t, rows.Err())
		return out
	}
	kept = read(`SELECT organization_id, status, bridge_key, sum(n) FROM order_counts GROUP BY 1, 2, 3 HAVING sum(n) <> 0`)
	plain = read(`SELECT organization_id, status, coalesce(bridge_id, '00000000-0000-0000-0000-000000000000'), count(*) FROM orders GROUP BY 1, 2, 3`)
	return kept, plain
}

// The kept order counters follow every way an order is written: a single
// insert, a batch, an update of status or bridge (and one of neither),
// a bridge deleted under its orders, a deleted order, concurrent writers,
// and an organization deleted with all its orders. Compaction folds the
// sessions' rows without changing a count.
func TestStoreOrderCountsFollowOrderWrites(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	orgA, bridgeA := orderTestOrg(t, s)
	orgB, bridgeB := orderTestOrg(t, s)
	bridgeA2 := uuid.New()
	_, err := s.Pool.Exec(ctx, `INSERT INTO bridges (id, organization_id, type, name) VALUES ($1, $2, 'storefront_a', 'Shop 2')`, bridgeA2, orgA)
	require.NoError(t, err)

	first, err := store.CreateOrder(ctx, s.Pool, orderTestNew(orgA, bridgeA, "1"))
	require.NoError(t, err)
	requireCountsExact(t, s, "one insert")

	// A batch of 30 over two organizations, three bridges and statuses, in
	// one statement.
	_, err = s.Pool.Exec(ctx, `
INSERT INTO orders (id, organization_id, bridge_id, external_id, status, customer, customer_email, line_items, totals, ordered_at)
SELECT gen_random_uuid(), CASE WHEN g % 3 = 0 THEN $2::uuid ELSE $1::uuid END,
       CASE WHEN g % 3 = 0 THEN $4::uuid WHEN g % 2 = 0 THEN $3::uuid ELSE NULL END,
       'b' || g, (ARRAY['pending', 'shipped', 'on_hold'])[1 + g % 3], '{}', 'x@example.com', '[]', '{}', now()
  FROM generate_series(1, 30) g`, orgA, orgB, bridgeA2, bridgeB)
	require.NoError(t, err)
	requireCountsExact(t, s, "batch insert")
	// An upsert as a sync stores a page: ten orders exist (updated, their
	// status changed), the ten without a bridge never conflict (inserted).
	_, err = s.Pool.Exec(ctx, `
INSERT INTO orders (id, organization_id, bridge_id, external_id, status, customer, customer_email, line_items, totals, ordered_at)
SELECT gen_random_uuid(), $1::uuid, CASE WHEN g % 2 = 0 THEN $2::uuid ELSE NULL END,
       CASE WHEN g % 2 = 0 THEN 'b' ELSE 'u' END || g, 'pending', '{}', 'x@example.com', '[]', '{}', now()
  FROM generate_series(1, 20) g WHERE g % 3 <> 0
ON CONFLICT (organization_id, bridge_id, external_id) DO UPDATE SET status = 'cancelled'`, orgA, bridgeA2)
	require.NoError(t, err)
	requireCountsExact(t, s, "upsert")

	_, err = s.Pool.Exec(ctx, `UPDATE orders SET status = 'delivered' WHERE organization_id = $1 AND status = 'pending'`, orgA)
	require.NoError(t, err)
	requireCountsExact(t, s, "status update")
	versions := func() string {
		var v string
		require.NoError(t, s.Pool.QueryRow(ctx, `SELECT string_agg(xmin::text || ':' || n, ',' ORDER BY organization_id, status, bridge_key, writer) FROM order_counts`).Scan(&v))
		return v
	}
	before := versions()
	_, err = s.Pool.Exec(ctx, `UPDATE orders SET note = 'n', status = status, updated_at = now() WHERE organization_id = $1`, orgA)
	require.NoError(t, err)
	require.Equal(t, before, versions(), "an update that changes neither status nor bridge writes no counter")
	requireCountsExact(t, s, "unrelated update")
	_, err = s.Pool.Exec(ctx, `UPDATE orders SET bridge_id = $2 WHERE organization_id = $1 AND bridge_id IS NULL`, orgA, bridgeA)
	require.NoError(t, err)
	requireCountsExact(t, s, "bridge update")

	_, err = s.Pool.Exec(ctx, `DELETE FROM bridges WHERE id = $1`, bridgeA)
	require.NoError(t, err)
	requireCountsExact(t, s, "bridge deleted, its orders kept without one")
	require.NoError(t, store.DeleteOrder(ctx, s.Pool, orgA, first.ID))
	requireCountsExact(t, s, "order deleted")

	// 16 writers at once into the same bucket, each session in its own
	// counter row; the sum is exact.
	var wg sync.WaitGroup
	errs := make(chan error, 16*10)
	for w := range 16 {
		wg.Go(func() {
			for i := range 10 {
				_, err := store.CreateOrder(ctx, s.Pool, orderTestNew(orgB, bridgeB, fmt.Sprintf("w%d-%d", w, i)))
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	requireCountsExact(t, s, "concurrent writers")
	var writers int
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT count(DISTINCT writer) FROM order_counts WHERE organization_id = $1`, orgB).Scan(&writers))
	require.Greater(t, writers, 1, "each session counts in its own row")

	folded, err := store.CompactOrderCounts(ctx, s.Pool)
	require.NoError(t, err)
	require.Positive(t, folded)
	requireCountsExact(t, s, "compacted")
	var spread int
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT count(*) FROM order_counts WHERE writer <> 0 OR n = 0`).Scan(&spread))
	require.Zero(t, spread, "compaction leaves one non-zero writer-0 row per bucket")
	removed, err := store.CompactOrderCounts(ctx, s.Pool)
	require.NoError(t, err)
	require.Zero(t, removed, "a compacted table has nothing to fold")

	_, err = s.Pool.Exec(ctx, `DELETE FROM organizations WHERE id = $1`, orgB)
	require.NoError(t, err, "deleting an organization deletes its orders")
	requireCountsExact(t, s, "organization deleted")
	_, err = store.CompactOrderCounts(ctx, s.Pool)
	require.NoError(t, err)
	var left int
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT count(*) FROM order_counts WHERE organization_id = $1`, orgB).Scan(&left))
	require.Zero(t, left, "compaction removes a deleted organization's counters")

	// TRUNCATE empties the counters with the orders (rolled back: the
	// package's database is shared by its tests).
	tx, err := s.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `TRUNCATE orders CASCADE`)
	require.NoError(t, err)
	var rows int
	require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM order_counts`).Scan(&rows))
	require.Zero(t, rows, "truncated")
}

// Counter writes wait for nobody: compaction skips the row of a session
// whose transaction is open, and an organization delete whose cascade
// waits for an order another transaction holds does not deadlock with that
// transaction's status change.
func TestStoreOrderCountsNeverWait(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	orgID, bridgeID := orderTestOrg(t, s)

	// A session whose committed row a second, open transaction of the same
	// session holds (it counts another order in the same bucket).
	conn, err := s.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	var pid int
	require.NoError(t, conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))
	_, err = store.CreateOrder(ctx, conn, orderTestNew(orgID, bridgeID, "committed"))
	require.NoError(t, err)
	held, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = held.Rollback(ctx) }()
	o, err := store.CreateOrder(ctx, held, orderTestNew(orgID, bridgeID, "held"))
	require.NoError(t, err)
	quick, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = store.CompactOrderCounts(quick, s.Pool)
	cancel()
	require.NoError(t, err, "compaction skips a row its session holds")
	var sessionRows int
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT count(*) FROM order_counts WHERE organization_id = $1 AND writer = $2`, orgID, pid).Scan(&sessionRows))
	require.Equal(t, 1, sessionRows, "the held row is left for the next compaction")
	require.NoError(t, held.Commit(ctx))
	requireCountsExact(t, s, "held row committed after compaction")
	_, err = store.CompactOrderCounts(ctx, s.Pool)
	require.NoError(t, err)
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT count(*) FROM order_counts WHERE organization_id = $1 AND writer = $2`, orgID, pid).Scan(&sessionRows))
	require.Zero(t, sessionRows, "folded next time")
	requireCountsExact(t, s, "folded next time")

	// W holds the order; D deletes the organization and its cascade waits
	// for W; W changes the order's status (a counter write) and commits.
	w, err := s.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = w.Rollback(ctx) }()
	_, err = w.Exec(ctx, `SELECT 1 FROM orders WHERE id = $1 FOR UPDATE`, o.ID)
	require.NoError(t, err)
	deleter, err := s.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer deleter.Release()
	var deleterPID int
	require.NoError(t, deleter.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&deleterPID))
	deleted := make(chan error, 1)
	go func() {
		_, err := deleter.Exec(ctx, `DELETE FROM organizations WHERE id = $1`, orgID)
		deleted <- err
	}()
	require.Eventually(t, func() bool {
		var waiting bool
		err := s.Pool.QueryRow(ctx, `SELECT cardinality(pg_blocking_pids($1)) > 0`, deleterPID).Scan(&waiting)
		return err == nil && waiting
	}, 10*time.Second, 10*time.Millisecond, "the organization delete waits for the held order")
	_, err = w.Exec(ctx, `UPDATE orders SET status = 'shipped' WHERE id = $1`, o.ID)
	require.NoError(t, err)
	require.NoError(t, w.Commit(ctx))
	select {
	case err := <-deleted:
		require.NoError(t, err, "no deadlock")
	case <-time.After(10 * time.Second):
		t.Fatal("the organization delete did not finish")
	}
	requireCountsExact(t, s, "organization deleted")
}

// The list's total without a search comes from the kept counters: it stays
// exact inside a transaction that has changed orders and not committed
// (the counters change in the same transaction), and other transactions
// do not see it until it commits.
func TestStoreListOrdersTotalIsTransactional(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	orgID, bridgeID := orderTestOrg(t, s)
	for i := range 3 {
		_, err := store.CreateOrder(ctx, s.Pool, orderTestNew(orgID, bridgeID, fmt.Sprint(i)))
		require.NoError(t, err)
	}
	total := func(db store.DBTX, f store.OrderFilter) int {
		t.Helper()
		// Offset past the end: the count alone.
		_, n, err := store.ListOrders(ctx, db, orgID, store.OrderListParams{Filter: f, Limit: 1, Offset: 100})
		require.NoError(t, err)
		return n
	}
	tx, err := s.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = store.CreateOrder(ctx, tx, orderTestNew(orgID, bridgeID, "in-tx"))
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `UPDATE orders SET status = 'shipped' WHERE organization_id = $1 AND external_id = '0'`, orgID)
	require.NoError(t, err)
	require.Equal(t, 4, total(tx, store.OrderFilter{}))
	require.Equal(t, 1, total(tx, store.OrderFilter{Status: "shipped"}))
	require.Equal(t, 3, total(tx, store.OrderFilter{Status: "pending", BridgeID: &bridgeID}))
	require.Equal(t, 3, total(s.Pool, store.OrderFilter{}), "uncommitted orders are not counted elsewhere")
	require.Equal(t, 0, total(s.Pool, store.OrderFilter{Status: "shipped"}))
	require.NoError(t, tx.Rollback(ctx))
	require.Equal(t, 3, total(s.Pool, store.OrderFilter{}), "a rolled back change leaves the count")
	require.Equal(t, 3, total(s.Pool, store.OrderFilter{Status: "pending"}))
}
