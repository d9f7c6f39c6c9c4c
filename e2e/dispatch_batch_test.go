package e2e

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/internal/proccpu"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/worker"
	"github.com/fos-dev/fos/workflows"
)

// pendingBacklog inserts n orders of the shop and their pending
// assignments to the hub (as an import with an order_created dispatcher
// leaves them), in one statement.
func pendingBacklog(t testing.TB, st *store.Store, shop, hub, dispatcher string, n int) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	var org uuid.UUID
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT organization_id FROM bridges WHERE id = $1`, hub).Scan(&org))
	_, err := st.Pool.Exec(ctx, `
WITH o AS (
    INSERT INTO orders (id, organization_id, bridge_id, external_id, order_number, status, customer, customer_email, customer_name,
                        shipping_address, line_items, totals, total, currency, ordered_at)
    SELECT gen_random_uuid(), $1, $2, 'bk-' || $6 || '-' || g, '#BK' || g, 'confirmed',
           '{"email": "jane@example.com", "firstName": "Jane", "lastName": "Doe"}', 'jane@example.com', 'Jane Doe',
           '{"name": "Jane Doe", "address1": "1 Main St", "city": "Austin", "provinceCode": "TX", "zip": "78701", "countryCode": "US"}',
           '[{"sku": "SKU", "name": "Thing", "quantity": 1, "unitPrice": 150, "totalPrice": 150, "requiresShipping": true, "taxable": true}]',
           '{"subtotal": 150, "shipping": 0, "tax": 0, "discount": 0, "total": 150}', 150, 'USD', now()
      FROM generate_series(1, $5) g
    RETURNING id
)
INSERT INTO dispatch_assignments (id, organization_id, dispatcher_id, order_id, destination_bridge_id, metadata)
SELECT gen_random_uuid(), $1, $4, o.id, $3, '{"trigger": "order_created"}' FROM o`,
		org, shop, hub, dispatcher, n, uuid.NewString()[:6])
	require.NoError(t, err)
	return org
}

// assignmentCounts counts the hub's assignments by status.
func assignmentCounts(t testing.TB, st *store.Store, hub string) map[string]int {
	t.Helper()
	rows, err := st.Pool.Query(context.Background(), `SELECT status, count(*) FROM dispatch_assignments WHERE destination_bridge_id = $1 GROUP BY status`, hub)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		require.NoError(t, rows.Scan(&s, &n))
		out[s] = n
	}
	require.NoError(t, rows.Err())
	return out
}

// waitDrained waits until none of the hub's assignments is pending or
// processing, and counts them by status. It polls with a probe that stops
// at the first waiting row, not with assignmentCounts: counting every row
// of the backlog ten times a second is load on the PostgreSQL the drain
// and the purchases share (during a 30,000-assignment drain the count was
// running in a tenth of pg_stat_activity's samples).
func waitDrained(t testing.TB, st *store.Store, hub string, timeout time.Duration) map[string]int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var waiting bool
		require.NoError(t, st.Pool.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM dispatch_assignments
 WHERE destination_bridge_id = $1 AND status IN ('pending', 'processing'))`, hub).Scan(&waiting))
		if !waiting {
			return assignmentCounts(t, st, hub)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hub's assignments are not drained after %s: %v", timeout, assignmentCounts(t, st, hub))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The process endpoint only signals the destination's drainer
// (dispatch-batch/<hubId>), which claims the backlog in pages and pushes
// it: one drainer run, not one workflow per assignment. Rows a crashed
// page claimed (their lease ran out) are claimed again and pushed; every
// order reaches the hub once. A destination that cannot take orders ends
// its drainer Failed in the Temporal UI, the assignments failed with the
// reason.
func TestDispatchBatchEndToEnd(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	key, shop, hub, _, disp := s.dispatchAccount()
	const n = 600
	pendingBacklog(t, s.store, shop, hub, disp, n)
	// 40 of them claimed by a page whose run died: the lease ran out.
	_, err := s.store.Pool.Exec(ctx, `UPDATE dispatch_assignments SET status = 'processing', claimed_by = 'dispatch-batch/dead/run/0',
       claimed_until = now() - interval '1 minute'
 WHERE id IN (SELECT id FROM dispatch_assignments WHERE destination_bridge_id = $1 ORDER BY created_at LIMIT 40)`, hub)
	require.NoError(t, err)

	began := time.Now()
	res := data(s.mustCall(200, key, "POST", "/api/v1/dispatchers/assignments/process", map[string]any{"bridgeId": hub, "limit": 1000}))
	require.EqualValues(t, n-40, res["processed"], "%v", res)
	require.EqualValues(t, n-40, res["queued"], "%v", res)
	counts := waitDrained(t, s.store, hub, 3*time.Minute)
	took := time.Since(began)
	require.Equal(t, map[string]int{"completed": n}, counts)
	t.Logf("%d assignments drained in %s (%.0f/s)", n, took.Round(time.Millisecond), float64(n)/took.Seconds())

	var started int
	require.NoError(t, s.store.Pool.QueryRow(ctx, `SELECT count(DISTINCT workflow_id) FROM task_executions WHERE bridge_id = $1 AND task_name = 'push-order'`, hub).Scan(&started))
	require.Equal(t, 1, started, "one drainer pushed them all")
	var unsent int
	require.NoError(t, s.store.Pool.QueryRow(ctx, `SELECT count(*) FROM orders o JOIN dispatch_assignments a ON a.order_id = o.id
 WHERE a.destination_bridge_id = $1 AND o.sent_to_fulfillment IS NULL`, hub).Scan(&unsent))
	require.Zero(t, unsent)
	desc, err := s.temporal.DescribeWorkflowExecution(ctx, rules.DispatchBatchWorkflowID(uuid.MustParse(hub)), "")
	require.NoError(t, err)
	require.Equal(t, "DispatchBatch", desc.GetWorkflowExecutionInfo().GetType().GetName())

	// A destination that cannot take orders: the drainer ends Failed.
	shopB := data(s.mustCall(201, key, "POST", "/api/v1/bridges", map[string]any{
		"type": "storefront_b", "name": "Shop B", "config": map[string]any{"storeUrl": "https://shop-b.example.com", "consumerKey": "ck_e2e", "consumerSecret": "cs_e2e"},
	}))["id"].(string)
	toB := data(s.mustCall(201, key, "POST", "/api/v1/dispatchers", map[string]any{
		"name": "To shop B", "sourceBridgeIds": []any{shop}, "destinationBridgeId": shopB, "triggerOn": []any{"manual"},
		"conditions": []any{map[string]any{"field": "status", "operator": "exists"}},
	}))["id"].(string)
	pendingBacklog(t, s.store, shop, shopB, toB, 5)
	s.mustCall(200, key, "POST", "/api/v1/dispatchers/assignments/process", map[string]any{"bridgeId": shopB})
	require.Equal(t, map[string]int{"failed": 5}, waitDrained(t, s.store, shopB, time.Minute))
	wfID := rules.DispatchBatchWorkflowID(uuid.MustParse(shopB))
	deadline := time.Now().Add(time.Minute)
	for {
		desc, err := s.temporal.DescribeWorkflowExecution(ctx, wfID, "")
		require.NoError(t, err)
		st := desc.GetWorkflowExecutionInfo().GetStatus()
		if st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
			require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, st, "a drainer whose assignments failed ends Failed")
			break
		}
		require.False(t, time.Now().After(deadline), "the drainer did not end")
		time.Sleep(200 * time.Millisecond)
	}
	err = s.temporal.GetWorkflow(ctx, wfID, "").Get(ctx, nil)
	require.ErrorContains(t, err, "5 of 5 assignments failed")
	require.ErrorContains(t, err, "cannot accept orders")
	writeHistory(t, ctx, s.temporal, wfID, "", "dispatch_batch_failed_history.json")
}

// benchDispatchN is how many pending assignments BenchmarkDispatchDrain
// drains (FOS_BENCH_DISPATCH_N; the target is 100,000).
func benchDispatchN() int {
	if n, err := strconv.Atoi(os.Getenv("FOS_BENCH_DISPATCH_N")); err == nil && n > 0 {
		return n
	}
	return 5000
}

// benchIdlePurchases is how many purchases BenchmarkDispatchDrain times
// before the drain (FOS_BENCH_IDLE_PURCHASES): enough that their p99 is a
// percentile, not their slowest (with 100 it was the slowest of all,
// against the p99 of some 1,800 during a 100,000-assignment drain).
func benchIdlePurchases() int {
	if n, err := strconv.Atoi(os.Getenv("FOS_BENCH_IDLE_PURCHASES")); err == nil && n > 0 {
		return n
	}
	return 400
}

// benchDispatchYield sets the process's priority gate from
// FOS_DISPATCH_YIELD_RATE and FOS_DISPATCH_IMPORT_YIELD_RATE when set, as
// fos worker does (to measure other rates), and restores it after b.
func benchDispatchYield(b *testing.B) {
	g := activities.ProcessPriority
	prevI, prevM := g.YieldRate(activities.PriorityInteractive), g.YieldRate(activities.PriorityImport)
	b.Cleanup(func() { worker.SetDispatchYield(prevI, prevM) })
	interactive, importing := prevI, prevM
	for _, v := range []struct {
		env  string
		into *float64
	}{{"FOS_DISPATCH_YIELD_RATE", &interactive}, {"FOS_DISPATCH_IMPORT_YIELD_RATE", &importing}} {
		if f, err := strconv.ParseFloat(os.Getenv(v.env), 64); err == nil && f >= 0 {
			*v.into = f
		}
	}
	worker.SetDispatchYield(interactive, importing)
	b.Logf("dispatch yield rates: %.0f/s to purchases, %.0f/s to imports", interactive, importing)
}

// BenchmarkDispatchDrain: N pending assignments to one sandbox hub drain
// through its DispatchBatch drainer on the embedded Temporal server, while
// POST /shipments purchases run one after another; it reports the drain
// rate and the purchases' p99 while idle and during the drain (the same
// run), and logs their p50 and p90. The drainer yields to the purchases
// at the process's rate (activities.PriorityGate; FOS_DISPATCH_YIELD_RATE
// sets another, 0 none). It logs the stages of the slowest purchases
// (their runs' history) and the CPU per purchase and per drained
// assignment.
//
//	FOS_BENCH_DISPATCH_N=100000 go test ./e2e -run '^$' -bench DispatchDrain -benchtime 1x
func BenchmarkDispatchDrain(b *testing.B) {
	benchDispatchYield(b)
	p := startPurchases(b)
	w := p.worker(nil)
	b.Cleanup(w.Stop)
	base := p.base
	key, shop, hub, _, disp := base.dispatchAccount()
	n := benchDispatchN()
	for range 5 { // warm up
		p.mustCall(201, p.key, "POST", "/api/v1/shipments", p.shipmentBody())
	}
	var slowMu sync.Mutex
	var runs []purchaseRun
	purchase := func() time.Duration {
		began := time.Now()
		code, out := p.call(p.key, "", "POST", "/api/v1/shipments", p.shipmentBody())
		if code != 201 {
			b.Fatalf("POST /shipments answered %d: %v", code, out)
		}
		took := time.Since(began)
		id, _ := data(out)["id"].(string)
		slowMu.Lock()
		runs = append(runs, purchaseRun{id: id, began: began, took: took})
		slowMu.Unlock()
		return took
	}
	var idle []time.Duration
	idleCPU := markCPU(b, base.store)
	for range benchIdlePurchases() {
		idle = append(idle, purchase())
	}
	perPurchase := idleCPU.since(b, base.store).per(len(idle))
	logSlowPurchases(b, p.temporal, "idle", runs, 1)
	runs = nil
	for b.Loop() {
		b.StopTimer()
		pendingBacklog(b, base.store, shop, hub, disp, n)
		// The backlog's own writes (hundreds of MB of WAL and dirty pages at
		// 100,000) are flushed before the drain, not by checkpoints during
		// it, where their I/O would be charged to the drain. (Needs a
		// superuser or pg_checkpoint; without, the drain starts anyway.)
		if _, err := base.store.Pool.Exec(context.Background(), `CHECKPOINT`); err != nil {
			b.Logf("no checkpoint before the drain: %v", err)
		}
		b.StartTimer()
		began, drainCPU := time.Now(), markCPU(b, base.store)
		base.mustCall(200, key, "POST", "/api/v1/dispatchers/assignments/process", map[string]any{"bridgeId": hub})
		var busy []time.Duration
		var mu sync.Mutex
		var stop atomic.Bool
		done := make(chan struct{})
		go func() {
			defer close(done)
			for !stop.Load() {
				d := purchase()
				mu.Lock()
				busy = append(busy, d)
				mu.Unlock()
			}
		}()
		counts := waitDrained(b, base.store, hub, 2*time.Hour)
		took := time.Since(began)
		stop.Store(true)
		<-done
		used := drainCPU.since(b, base.store)
		if counts["completed"] != n {
			b.Fatalf("drained %v, want %d completed", counts, n)
		}
		b.StopTimer()
		idleP99, busyP99 := percentile(idle, 0.99), percentile(busy, 0.99)
		b.ReportMetric(float64(n)/took.Seconds(), "assignments/s")
		b.ReportMetric(float64(idleP99)/1e6, "idle-p99-ms")
		b.ReportMetric(float64(busyP99)/1e6, "busy-p99-ms")
		b.Logf("%d assignments drained in %s (%.0f/s); POST /shipments p99 idle %s (%d), during the drain %s (%d purchases); "+
			"p50/p90 idle %s/%s, during %s/%s",
			n, took.Round(time.Millisecond), float64(n)/took.Seconds(), idleP99.Round(100*time.Microsecond), len(idle),
			busyP99.Round(100*time.Microsecond), len(busy),
			percentile(idle, 0.5).Round(100*time.Microsecond), percentile(idle, 0.9).Round(100*time.Microsecond),
			percentile(busy, 0.5).Round(100*time.Microsecond), percentile(busy, 0.9).Round(100*time.Microsecond))
		// The drain's own CPU: the run's, less its purchases' at their idle
		// cost.
		drain := used.minus(perPurchase.times(len(busy))).per(n)
		b.Logf("CPU per idle purchase: this process %s, its PostgreSQL backends %s; per drained assignment (purchases less): %s, %s; "+
			"the drain's whole run: %s, %s (load %s)", perPurchase.self, perPurchase.pg, drain.self, drain.pg, used.self.Round(time.Millisecond),
			used.pg.Round(time.Millisecond), loadAverage())
		b.ReportMetric(float64(drain.self+drain.pg)/1e3, "cpu-µs/assignment")
		// (A benchmark's log keeps its first 10 lines.)
		slowMu.Lock()
		logSlowPurchases(b, p.temporal, "during the drain", runs, 4)
		runs = nil
		slowMu.Unlock()
		_, err := base.store.Pool.Exec(context.Background(), `DELETE FROM dispatch_assignments WHERE destination_bridge_id = $1`, hub)
		require.NoError(b, err)
		b.StartTimer()
	}
}

// The drainer yields to a label purchase in flight (activities.PriorityGate):
// while the purchase's carrier call hangs, the drain keeps the gate's
// interactive yield rate (set low here, 50/s, to stand out from a loaded
// machine's noise); once the purchase ended and the gate's linger passed,
// it drains the rest at full speed. (Outcomes are recorded 100 at a time,
// so the counts move in steps.)
func TestDispatchDrainYieldsToPurchase(t *testing.T) {
	p := startPurchases(t)
	w := p.worker(nil)
	t.Cleanup(w.Stop)
	base := p.base
	gate := activities.ProcessPriority
	prevRate := gate.YieldRate(activities.PriorityInteractive)
	gate.SetYieldRate(activities.PriorityInteractive, 50)
	gate.SetLinger(200 * time.Millisecond)
	t.Cleanup(func() {
		gate.SetYieldRate(activities.PriorityInteractive, prevRate)
		gate.SetLinger(activities.DefaultPriorityLinger)
	})
	key, shop, hub, _, disp := base.dispatchAccount()
	const n = 1500
	pendingBacklog(t, base.store, shop, hub, disp, n)

	// A purchase whose carrier call takes 12 s: in flight all along.
	p.latency.Store(int64(12 * time.Second))
	bought := make(chan int, 1)
	go func() {
		code, _ := p.call(p.key, "", "POST", "/api/v1/shipments", p.shipmentBody())
		bought <- code
	}()
	deadline := time.Now().Add(30 * time.Second)
	for p.ships.Load() == 0 {
		require.False(t, time.Now().After(deadline), "the purchase did not reach the carrier")
		time.Sleep(10 * time.Millisecond)
	}
	inFlightUntil := time.Now().Add(10 * time.Second) // the purchase ends 12 s after it reached the carrier
	started := time.Now()
	base.mustCall(200, key, "POST", "/api/v1/dispatchers/assignments/process", map[string]any{"bridgeId": hub})
	// Yielding is a pace, not a stop: outcomes are recorded while the
	// purchase is in flight (polled: a loaded machine starts the drainer
	// later).
	var during int
	for during == 0 {
		require.False(t, time.Now().After(inFlightUntil), "nothing was drained while the purchase was in flight")
		time.Sleep(50 * time.Millisecond)
		during = assignmentCounts(t, base.store, hub)["completed"]
	}
	time.Sleep(time.Until(started.Add(5 * time.Second)))
	during = assignmentCounts(t, base.store, hub)["completed"]
	elapsed := time.Since(started)
	t.Logf("completed in %s while the purchase was in flight: %d", elapsed.Round(time.Millisecond), during)
	require.LessOrEqual(t, float64(during), 50*elapsed.Seconds()+10, "the drainer kept the yield rate while the purchase was in flight")

	require.Equal(t, 201, <-bought)
	p.latency.Store(0)
	began := time.Now()
	require.Equal(t, map[string]int{"completed": n}, waitDrained(t, base.store, hub, 2*time.Minute))
	took := time.Since(began)
	t.Logf("after the purchase: the rest drained in %s", took.Round(time.Millisecond))
	require.Less(t, took, time.Duration(float64(n-during)/150*float64(time.Second)),
		"after the purchase the drainer is back to full speed (over 3x the yield rate)")
}

// cpuUse is CPU time used by this process (the service, its embedded
// Temporal server, the sandboxes and the benchmark's clients) and by the
// PostgreSQL backends serving the test database.
type cpuUse struct{ self, pg time.Duration }

func (c cpuUse) minus(d cpuUse) cpuUse {
	return cpuUse{self: max(c.self-d.self, 0), pg: max(c.pg-d.pg, 0)}
}

func (c cpuUse) times(n int) cpuUse {
	return cpuUse{self: c.self * time.Duration(n), pg: c.pg * time.Duration(n)}
}

func (c cpuUse) per(n int) cpuUse {
	if n <= 0 {
		return cpuUse{}
	}
	return cpuUse{self: c.self / time.Duration(n), pg: c.pg / time.Duration(n)}
}

// cpuMark is a reading of cpuUse's counters: this process's, and each
// backend's of the test database by process id.
type cpuMark struct {
	self time.Duration
	pg   map[int]time.Duration
}

// markCPU reads the counters (from /proc: PostgreSQL runs on this machine).
func markCPU(t testing.TB, st *store.Store) cpuMark {
	t.Helper()
	self, err := proccpu.Of("self")
	require.NoError(t, err)
	rows, err := st.Pool.Query(context.Background(), `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
	require.NoError(t, err)
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	require.NoError(t, err)
	m := cpuMark{self: self, pg: map[int]time.Duration{}}
	for _, pid := range pids {
		if d, err := proccpu.Of(strconv.Itoa(int(pid))); err == nil {
			m.pg[int(pid)] = d
		}
	}
	return m
}

// since is the CPU used from m to now (a backend that ended meanwhile is
// not counted; the pool keeps its connections).
func (m cpuMark) since(t testing.TB, st *store.Store) cpuUse {
	now := markCPU(t, st)
	use := cpuUse{self: now.self - m.self}
	for pid, d := range now.pg {
		use.pg += d - m.pg[pid]
	}
	return use
}

// loadAverage is the machine's one-minute load average ("?" unknown).
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(raw)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

// purchaseRun is one POST /shipments of a benchmark.
type purchaseRun struct {
	id    string // the shipment's
	began time.Time
	took  time.Duration
}

// logSlowPurchases logs the stages of the n slowest runs and of a median
// one.
func logSlowPurchases(t testing.TB, c client.Client, when string, runs []purchaseRun, n int) {
	t.Helper()
	if len(runs) == 0 {
		return
	}
	sorted := slices.SortedFunc(slices.Values(runs), func(a, b purchaseRun) int { return cmp.Compare(b.took, a.took) })
	for _, r := range append(slices.Clip(sorted[:min(len(sorted), n)]), sorted[len(sorted)/2]) {
		t.Logf("purchase %s %s: %s", when, r.took.Round(100*time.Microsecond), purchaseStages(t, c, r))
	}
}

// purchaseStages is where a purchase's time went: each event of its
// ShipmentLabel run's history, at its offset from the request's start.
func purchaseStages(t testing.TB, c client.Client, r purchaseRun) string {
	t.Helper()
	ctx := context.Background()
	it := c.GetWorkflowHistory(ctx, workflows.ShipmentLabelWorkflowID(r.id), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var sb strings.Builder
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return sb.String() + " (" + err.Error() + ")"
		}
		name := strings.TrimPrefix(ev.GetEventType().String(), "EVENT_TYPE_")
		fmt.Fprintf(&sb, " %s+%d", strings.ToLower(name), ev.GetEventTime().AsTime().Sub(r.began).Milliseconds())
	}
	return strings.TrimSpace(sb.String())
}
