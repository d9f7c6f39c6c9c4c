package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/internal/proccpu"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// BenchmarkOrderInsertPGCost is the PostgreSQL CPU time (the backend's,
// from /proc) of one order insert, statement by statement, on one
// connection, in interleaved rounds (issue 17: what POST /orders costs
// PostgreSQL beside the bare chi+pgx insert): an empty query (the API key
// cache's freshness round trip), the bare insert (internal/bareorders),
// CreateOrder, insertOrderSQL in a CTE, then with each of
// CreateOrderProbeEvents' questions, and CreateOrderProbeEvents itself.
//
//	./scripts/test-postgres.sh go test ./store -run XXX -bench OrderInsertPGCost -benchtime 200x
//
// b.N is the statements per variant and round (15 rounds).
func BenchmarkOrderInsertPGCost(b *testing.B) {
	st := storetest.New(b)
	ctx := context.Background()
	org, bridge := uuid.New(), uuid.New()
	_, err := st.Pool.Exec(ctx, `INSERT INTO organizations (id, name, slug) VALUES ($1, 'PG cost', $2)`, org, "pgcost-"+org.String())
	require.NoError(b, err)
	_, err = st.Pool.Exec(ctx, `INSERT INTO bridges (id, organization_id, type, name, config) VALUES ($1, $2, 'storefront_a', 'B', '{}')`, bridge, org)
	require.NoError(b, err)
	cfg, err := pgxpool.ParseConfig(st.Pool.Config().ConnString())
	require.NoError(b, err)
	cfg.MaxConns = 1
	store.ConfigurePool(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(b, err)
	defer pool.Close()
	var pid int
	require.NoError(b, pool.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid))

	cust := json.RawMessage(`{"email":"jane.doe@example.com","firstName":"Jane","lastName":"Doe","phone":"+1 555 0100"}`)
	ship := json.RawMessage(`{"city":"Springfield","country":"US","line1":"1 Main St","postalCode":"12345"}`)
	items := json.RawMessage(`[{"name":"Widget","quantity":2,"requiresShipping":true,"sku":"SKU-1","taxable":false,"totalPrice":19,"unitPrice":9.5}]`)
	totals := json.RawMessage(`{"discount":0,"shipping":5,"subtotal":19,"tax":1.52,"total":25.52}`)
	seq := 0
	order := func() store.Order {
		seq++
		num := fmt.Sprintf("#%d", seq)
		return store.Order{ID: uuid.New(), OrganizationID: org, BridgeID: &bridge, ExternalID: fmt.Sprintf("E-%d", seq), OrderNumber: &num,
			Status: "pending", PaymentStatus: "pending", FulfillmentStatus: "unfulfilled", Customer: cust, CustomerEmail: "jane.doe@example.com",
			CustomerName: "Jane Doe", ShippingAddress: ship, LineItems: items, Totals: totals, Total: 25.52, Currency: "USD", Tags: []string{"web"}}
	}
	// cte runs insertOrderSQL in a CTE with the given questions ($23 the
	// trigger, $24 the event; both are named, so that PostgreSQL knows
	// their types whichever question is asked).
	cte := func(questions string) func() {
		sql := `WITH ins AS (` + store.InsertOrderSQL + `) SELECT ins.ordered_at, $23::text <> '', $24::text <> ''` + questions + ` FROM ins`
		return func() {
			o := order()
			args := append(store.InsertOrderArgs(&o), "order_created", "on_order_created")
			rows, err := pool.Query(ctx, sql, args...)
			require.NoError(b, err)
			rows.Close()
			require.NoError(b, rows.Err())
		}
	}
	variants := []struct {
		name string
		fn   func()
	}{
		{"empty_query", func() {
			c, err := pool.Acquire(ctx)
			require.NoError(b, err)
			require.NoError(b, c.Conn().PgConn().Exec(ctx, "").Close())
			c.Release()
		}},
		{"bare_insert", func() {
			o := order()
			var created time.Time
			require.NoError(b, pool.QueryRow(ctx, `
INSERT INTO orders (id, organization_id, bridge_id, external_id, order_number, status, customer, customer_email, customer_name,
                    shipping_address, line_items, totals, total, tags, ordered_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, now())
RETURNING created_at`, o.ID, org, bridge, o.ExternalID, o.OrderNumber, o.Status, o.Customer, o.CustomerEmail,
				o.CustomerName, o.ShippingAddress, o.LineItems, o.Totals, o.Total, o.Tags).Scan(&created))
		}},
		{"CreateOrder", func() {
			_, err := store.CreateOrder(ctx, pool, order())
			require.NoError(b, err)
		}},
		{"cte", cte(``)},
		{"cte+split", cte(`, $3::uuid IS NOT NULL AND EXISTS (SELECT 1 FROM split_rules s WHERE s.organization_id = $2 AND s.is_active AND (s.bridge_id IS NULL OR s.bridge_id = $3))`)},
		{"cte+dispatch", cte(`, $3::uuid IS NOT NULL AND EXISTS (SELECT 1 FROM dispatchers d WHERE d.organization_id = $2 AND d.is_active AND d.source_bridge_ids @> ARRAY[$3::uuid] AND ($23::text = '' OR $23::text = ANY(d.trigger_on)))`)},
		{"cte+embed_default", cte(`, ` + store.EmbedDefaultAppliesSQL("$2::uuid", "$3::uuid", "$23::text"))},
		{"cte+standing", cte(`, $24::text <> '' AND EXISTS (SELECT 1 FROM agent_standing_orders a WHERE a.organization_id = $2 AND a.trigger_type = $24::text AND a.is_active)`)},
		{"CreateOrderProbeEvents", func() {
			_, _, err := store.CreateOrderProbeEvents(ctx, pool, order(), "order_created", "on_order_created")
			require.NoError(b, err)
		}},
	}
	const rounds = 15
	cpu := make([]time.Duration, len(variants))
	b.ResetTimer()
	for r := 0; r <= rounds; r++ { // round 0 warms up (prepares, plans)
		for i, v := range variants {
			before := backendCPU(b, pid)
			for range b.N {
				v.fn()
			}
			if r > 0 {
				cpu[i] += backendCPU(b, pid) - before
			}
		}
	}
	b.StopTimer()
	for i, v := range variants {
		b.ReportMetric(float64(cpu[i].Microseconds())/float64(rounds*b.N), v.name+"_pg_µs")
	}
	b.ReportMetric(0, "ns/op")
}

// backendCPU is process pid's CPU time.
func backendCPU(b *testing.B, pid int) time.Duration {
	t, err := proccpu.Of(strconv.Itoa(pid))
	require.NoError(b, err)
	return t
}
