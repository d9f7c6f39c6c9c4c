package insights_test

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/insights"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// The targets: generate over 100,000 orders and 50,000 shipments
// with tracking, p99 ≤ 500 ms; carrier performance over 365 days p99 ≤
// 200 ms; operation insights of a 10,000-item operation p99 ≤ 300 ms.
//
//	./scripts/test-postgres.sh go test -run '^$' -bench . -benchtime 30x ./insights/
//
// Seeding takes a while (once per run); numbers measured on a loaded
// machine are noise.

type largeFixture struct {
	st    *store.Store
	actor domain.Actor
	ops   fakeOperations
	opID  uuid.UUID
}

var (
	largeOnce sync.Once
	large     largeFixture
)

func seedLarge(b *testing.B) largeFixture {
	b.Helper()
	largeOnce.Do(func() {
		st := storetest.New(b)
		ctx := context.Background()
		org := uuid.New()
		exec := func(sql string, args ...any) {
			if _, err := st.Pool.Exec(ctx, sql, args...); err != nil {
				b.Fatalf("%v: %s", err, sql)
			}
		}
		exec(`INSERT INTO organizations (id, name, slug) VALUES ($1, 'bench', $2)`, org, "bench-"+org.String())
		acct := uuid.New()
		exec(`INSERT INTO carrier_accounts (id, organization_id, name, carrier, status) VALUES ($1, $2, 'a', 'carrier_a', 'active')`, acct, org)
		// 100,000 orders over 120 days, in statements of 1,000 rows (the
		// order counters' row trigger is quadratic in a statement's rows).
		for lo := 0; lo < 100_000; lo += 1000 {
			exec(`INSERT INTO orders (id, organization_id, external_id, status, customer, customer_email, line_items, totals, total, ordered_at, created_at, updated_at, status_entered_at)
			      SELECT gen_random_uuid(), $1, 'b-' || g, (ARRAY['pending','confirmed','processing','shipped','delivered','cancelled'])[1 + g % 6],
			             '{}', 'b@example.com', '[]', '{}', 10 + g % 90, ts, ts, ts, ts
			        FROM generate_series($2::int, $2::int + 999) g,
			             LATERAL (SELECT now() - make_interval(days => g % 120, hours => g % 24) AS ts) t`, org, lo)
		}
		// 50,000 status changes.
		exec(`INSERT INTO order_activities (id, organization_id, order_id, type, description, actor_type, metadata, created_at)
		      SELECT gen_random_uuid(), organization_id, id, 'status_change', 'changed', 'system',
		             jsonb_build_object('from', 'pending', 'to', status), created_at + interval '3 hours'
		        FROM orders WHERE organization_id = $1 AND status <> 'pending' LIMIT 50000`, org)
		// As the orders' trigger records them (migration 00150).
		exec(`INSERT INTO order_status_changes (order_id, organization_id, from_status, to_status, from_entered_at, changed_at)
		      SELECT o.id, o.organization_id, a.metadata ->> 'from', a.metadata ->> 'to', o.created_at, a.created_at
		        FROM order_activities a JOIN orders o ON o.id = a.order_id WHERE a.organization_id = $1 AND a.type = 'status_change'`, org)
		exec(`UPDATE orders o SET status_entered_at = c.changed_at FROM order_status_changes c
		       WHERE o.organization_id = $1 AND c.order_id = o.id`, org)
		// 50,000 shipments of every other order, with tracking.
		exec(`INSERT INTO shipments (id, organization_id, order_id, carrier, service, status, tracking_number, rate_amount, rate_currency,
		                             ship_to, parcels, carrier_response, delivered_at, created_at, updated_at)
		      SELECT gen_random_uuid(), $1, o.id, (ARRAY['carrier_a','carrier_b','carrier_c'])[1 + n % 3], (ARRAY['ground','express'])[1 + n % 2],
		             st, 'TRK' || n, 5 + (n % 50) / 2.0, 'USD', jsonb_build_object('state', (ARRAY['CA','NY','TX'])[1 + n % 3], 'country', 'US'),
		             jsonb_build_array(jsonb_build_object('weight', 1 + n % 20, 'unit', 'lb')),
		             jsonb_build_object('estimatedDelivery', to_char((o.created_at + interval '3 days') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')),
		             CASE WHEN st = 'delivered' THEN o.created_at + make_interval(days => 1 + n % 5) END, o.created_at, o.created_at
		        FROM (SELECT id, created_at, row_number() OVER (ORDER BY id)::int AS n FROM orders WHERE organization_id = $1) o,
		             LATERAL (SELECT (ARRAY['delivered','delivered','delivered','in_transit','exception','label_created'])[1 + (o.n / 2) % 6] AS st) s
		       WHERE o.n % 2 = 0`, org)
		// Three checkpoints a shipment, an exception on every 20th.
		exec(`INSERT INTO tracking_checkpoints (id, organization_id, shipment_id, sequence, status, checkpoint_time, source, is_exception)
		      SELECT gen_random_uuid(), s.organization_id, s.id, k, CASE WHEN k = 2 AND s.tracking_number LIKE '%0' THEN 'exception' ELSE 'in_transit' END,
		             s.created_at + make_interval(hours => 12 * (k + 1)), 'bench', k = 2 AND s.tracking_number LIKE '%0'
		        FROM shipments s, generate_series(0, 2) k WHERE s.organization_id = $1`, org)
		// A rate comparison quoting 5,000 of the tracking numbers.
		cmp := uuid.New()
		exec(`INSERT INTO rate_comparisons (id, organization_id, name, carrier, source_carrier, status, total_items, pending_items)
		      VALUES ($1, $2, 'bench', 'carrier_b', 'carrier_a', 'completed', 5000, 0)`, cmp, org)
		exec(`INSERT INTO rate_comparison_items (id, comparison_id, organization_id, seq, tracking_number, status, quoted_service, quoted_price, transit_days)
		      SELECT gen_random_uuid(), $1, $2, row_number() OVER (), tracking_number, 'completed', 'ground', rate_amount - 1, 1
		        FROM shipments WHERE organization_id = $2 LIMIT 5000`, cmp, org)
		// 10,000 items of an operation, each with a snapshot and three
		// alternative quotes of the same request.
		exec(`INSERT INTO rate_snapshots (id, organization_id, carrier_account_id, carrier, service_type, service_name, total_price, currency,
		                                  transit_days, ship_from, ship_to, packages, quoted_at, expires_at)
		      SELECT gen_random_uuid(), $1, $2, (ARRAY['carrier_a','carrier_b','carrier_c'])[1 + k % 3], 'ground', 'Ground', 10 + k + g % 7, 'USD',
		             1 + k, '{"zip": "10001"}', jsonb_build_object('request', g), '[{"weight": 2}]', now(), now() + interval '1 day'
		        FROM generate_series(1, 10000) g, generate_series(0, 3) k`, org, acct)
		rows, err := st.Pool.Query(ctx, `SELECT DISTINCT ON (ship_to) id FROM rate_snapshots WHERE organization_id = $1 ORDER BY ship_to, total_price DESC`, org)
		if err != nil {
			b.Fatal(err)
		}
		var snaps []uuid.UUID
		for rows.Next() {
			var id uuid.UUID
			if err := rows.Scan(&id); err != nil {
				b.Fatal(err)
			}
			snaps = append(snaps, id)
		}
		rows.Close()
		orderRows, err := st.Pool.Query(ctx, `SELECT id FROM orders WHERE organization_id = $1 LIMIT $2`, org, len(snaps))
		if err != nil {
			b.Fatal(err)
		}
		var items []store.OperationItemRef
		for i := 0; orderRows.Next(); i++ {
			var id uuid.UUID
			if err := orderRows.Scan(&id); err != nil {
				b.Fatal(err)
			}
			s := snaps[i]
			items = append(items, store.OperationItemRef{OrderID: id, RateSnapshotID: &s})
		}
		orderRows.Close()
		// Vacuumed as autovacuum would have by then (the updates above leave
		// dead rows; index-only scans need the visibility map).
		exec(`VACUUM ANALYZE`)
		opID := uuid.New()
		ops := fakeOperations{}
		ops[opID] = fakeOperation{org, "bench", items}
		large = largeFixture{st: st, ops: ops, opID: opID,
			actor: domain.Actor{Kind: domain.ActorSystem, OrganizationID: org}}
	})
	if large.st == nil {
		b.Fatal("the large fixture failed")
	}
	return large
}

// measure runs fn b.N times and reports its p50 and p99.
func measure(b *testing.B, fn func() error) {
	b.Helper()
	var d []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if err := fn(); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(d[(len(d)*99)/100].Microseconds())/1000, "p99-ms")
}

func BenchmarkGenerate100kOrders(b *testing.B) {
	f := seedLarge(b)
	svc := insights.New(insights.Deps{Store: f.st})
	measure(b, func() error {
		_, err := svc.Generate(context.Background(), f.actor, insights.GenerateInput{})
		return err
	})
}

func BenchmarkCarrierPerformance365Days(b *testing.B) {
	f := seedLarge(b)
	svc := insights.New(insights.Deps{Store: f.st})
	measure(b, func() error {
		_, err := svc.CarrierPerformance(context.Background(), f.actor, 365)
		return err
	})
}

func BenchmarkOperationInsights10kItems(b *testing.B) {
	f := seedLarge(b)
	svc := insights.New(insights.Deps{Store: f.st, Operations: f.ops})
	measure(b, func() error {
		_, err := svc.OperationInsights(context.Background(), f.actor, f.opID)
		return err
	})
}

func BenchmarkAsk(b *testing.B) {
	f := seedLarge(b)
	svc := insights.New(insights.Deps{Store: f.st})
	measure(b, func() error {
		_, err := svc.Ask(context.Background(), f.actor, insights.AskInput{Query: "which carrier was cheapest to CA last month"})
		return err
	})
}

// explainDB runs EXPLAIN ANALYZE of every query before the query itself
// and keeps the plans.
type explainDB struct {
	store.DBTX
	b     *testing.B
	plans []string
}

func (e *explainDB) explain(ctx context.Context, sql string, args ...any) {
	rows, err := e.DBTX.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "+sql, args...)
	if err != nil {
		e.b.Fatal(err)
	}
	plan := ""
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			e.b.Fatal(err)
		}
		plan += line + "\n"
	}
	rows.Close()
	e.plans = append(e.plans, plan)
}

func (e *explainDB) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	e.explain(ctx, sql, args...)
	return e.DBTX.Query(ctx, sql, args...)
}

func (e *explainDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	e.explain(ctx, sql, args...)
	return e.DBTX.QueryRow(ctx, sql, args...)
}

// BenchmarkPlans logs the plan of every insights statement over the large
// fixture (run with -bench Plans -benchtime 1x -v).
func BenchmarkPlans(b *testing.B) {
	f := seedLarge(b)
	ctx := context.Background()
	org := f.actor.OrganizationID
	now := time.Now()
	sc := store.InsightScope{Now: now}
	var plans []string
	for b.Loop() {
		// The statements run as generate runs them (store.InsightRead).
		err := store.InsightRead(ctx, f.st.Pool, func(tx store.DBTX) error {
			db := &explainDB{DBTX: tx, b: b}
			_, _ = store.OutlierGroups(ctx, db, org, store.OutlierCost, sc, insights.Baseline, insights.Recent, insights.OutlierMinSamples, insights.OutlierZ)
			_, _ = store.OutlierGroups(ctx, db, org, store.OutlierWeight, sc, insights.Baseline, insights.Recent, insights.OutlierMinSamples, insights.OutlierZ)
			_, _ = store.StuckOrders(ctx, db, org, sc, []string{"pending", "confirmed", "processing", "on_hold"}, insights.Baseline, insights.StuckMinSamples, insights.StuckMinimum)
			_, _ = store.ExceptionRates(ctx, db, org, sc, insights.Recent)
			_, _ = store.CheaperQuotes(ctx, db, org, sc, insights.Baseline)
			_, _ = store.LateRisks(ctx, db, org, sc, insights.Baseline, insights.LateMinSamples, insights.LateShare)
			_, _ = store.VolumeTrends(ctx, db, org, sc, insights.Recent)
			_, _ = store.Alerts(ctx, db, org, now, insights.AlertWindow)
			_, _ = store.ManualDispatchRuns(ctx, db, org, sc, insights.RecommendationWindow, insights.RecommendMinOrders)
			_, _ = store.CarrierPerformance(ctx, db, org, now.AddDate(-1, 0, 0), now)
			_, items, _ := f.ops.Operation(ctx, org, f.opID)
			_, _ = store.OperationItemGroups(ctx, db, org, items, now)
			plans = db.plans
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	for _, p := range plans {
		b.Log("\n" + p)
	}
}

// BenchmarkDetectorStatements reports the median time of each detector's
// statement alone (one at a time, each in its own insights read), to
// find the one generate waits for (-bench DetectorStatements -benchtime 10x).
func BenchmarkDetectorStatements(b *testing.B) {
	f := seedLarge(b)
	ctx := context.Background()
	org := f.actor.OrganizationID
	_, items, _ := f.ops.Operation(ctx, org, f.opID)
	statements := []struct {
		name string
		run  func(db store.DBTX, sc store.InsightScope) error
	}{
		{"cost_anomaly", func(db store.DBTX, sc store.InsightScope) error {
			_, err := store.OutlierGroups(ctx, db, org, store.OutlierCost, sc, insights.Baseline, insights.Recent, insights.OutlierMinSamples, insights.OutlierZ)
			return err
		}},
		{"weight_anomaly", func(db store.DBTX, sc store.InsightScope) error {
			_, err := store.OutlierGroups(ctx, db, org, store.OutlierWeight, sc, insights.Baseline, insights.Recent, insights.OutlierMinSamples, insights.OutlierZ)
			return err
		}},
		{"stuck_orders", func(db store.DBTX, sc store.InsightScope) error {
			_, err := store.StuckOrders(ctx, db, org, sc, []string{"pending", "confirmed", "processing", "on_hold"}, insights.Baseline, insights.StuckMinSamples, insights.StuckMinimum)
			return err
		}},
		{"exception_rate", func(db store.DBTX, sc store.InsightScope) error {
			_, err := store.ExceptionRates(ctx, db, org, sc, insights.Recent)
			return err
		}},
		{"cheaper_quotes", func(db store.DBTX, sc store.InsightScope) error {
			_, err := store.CheaperQuotes(ctx, db, org, sc, insights.Baseline)
			return err
		}},
		{"late_shipments", func(db store.DBTX, sc store.InsightScope) error {
			_, err := store.LateRisks(ctx, db, org, sc, insights.Baseline, insights.LateMinSamples, insights.LateShare)
			return err
		}},
		{"volume_trend", func(db store.DBTX, sc store.InsightScope) error {
			_, err := store.VolumeTrends(ctx, db, org, sc, insights.Recent)
			return err
		}},
		{"alerts", func(db store.DBTX, sc store.InsightScope) error {
			_, err := store.Alerts(ctx, db, org, sc.Now, insights.AlertWindow)
			return err
		}},
		{"dispatcher_trigger", func(db store.DBTX, sc store.InsightScope) error {
			_, err := store.ManualDispatchRuns(ctx, db, org, sc, insights.RecommendationWindow, insights.RecommendMinOrders)
			return err
		}},
		{"carrier_performance", func(db store.DBTX, sc store.InsightScope) error {
			_, err := store.CarrierPerformance(ctx, db, org, sc.Now.AddDate(-1, 0, 0), sc.Now)
			return err
		}},
		{"operation_items", func(db store.DBTX, sc store.InsightScope) error {
			_, err := store.OperationItemGroups(ctx, db, org, items, sc.Now)
			return err
		}},
	}
	times := make([][]time.Duration, len(statements))
	b.ResetTimer()
	for b.Loop() {
		for i, st := range statements {
			sc := store.InsightScope{Now: time.Now()}
			start := time.Now()
			if err := store.InsightRead(ctx, f.st.Pool, func(db store.DBTX) error { return st.run(db, sc) }); err != nil {
				b.Fatalf("%s: %v", st.name, err)
			}
			times[i] = append(times[i], time.Since(start))
		}
	}
	b.StopTimer()
	for i, st := range statements {
		d := times[i]
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, st.name+"-ms")
	}
}
