package e2e

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	enumspb "go.temporal.io/api/enums/v1"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	sdkworker "go.temporal.io/sdk/worker"
	"golang.org/x/crypto/bcrypt"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/api"
	"github.com/fos-dev/fos/auth"
	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/sandboxapi"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
	"github.com/fos-dev/fos/worker"
	"github.com/fos-dev/fos/workflows"
)

// opsStack is the service with operations on a task queue of its own,
// whose workers the test starts and stops, and the sandbox carriers
// behind counters.
type opsStack struct {
	*stack
	queue   string
	deps    worker.Deps
	ships   atomic.Int32 // label purchases that reached the carrier
	voids   atomic.Int32 // label voids that reached the carrier
	latency atomic.Int64 // injected carrier latency of a purchase (ns)
	key     string
	org     string
	snap    string
	acct    string
	// carriersURL is the counting sandbox carriers' address.
	carriersURL string
}

func startOps(t testing.TB, tune func(*workflows.OperationExecuteInput)) *opsStack {
	base := start(t)
	o := &opsStack{queue: "fos-e2e-ops-" + uuid.NewString()[:8]}
	h := sandboxapi.NewHandler()
	sb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/ship/v1/shipments"):
			o.ships.Add(1)
			time.Sleep(time.Duration(o.latency.Load()))
		case strings.HasSuffix(r.URL.Path, "/ship/v1/shipments/cancel"):
			o.voids.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(sb.Close)
	o.carriersURL = sb.URL
	reg := carriers.NewRegistry(carriers.Config{Sandbox: true, SandboxURL: sb.URL})
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	o.deps = worker.Deps{Store: base.store, Secrets: base.box, Carriers: reg, Logger: logger, BulkTaskQueue: o.queue}
	srv := httptest.NewServer(api.NewRouter(api.Deps{
		Store: base.store, Logger: logger,
		Tokens:    auth.Tokens{Secret: []byte("e2e-secret-e2e-secret-e2e-secret!"), TTL: time.Hour},
		Passwords: auth.Passwords{Cost: bcrypt.MinCost},
		Secrets:   base.box, Carriers: reg, Temporal: base.temporal, TaskQueue: o.queue, BulkTaskQueue: o.queue, BaseURL: "http://fos.test",
		OperationTune: tune,
	}))
	t.Cleanup(srv.Close)
	own := *base
	own.api = srv
	o.stack = &own

	signup := data(o.mustCall(201, "", "POST", "/api/v1/auth/signup", map[string]any{
		"email": "ops-" + uuid.NewString()[:8] + "@example.com", "password": "correct horse", "first_name": "Ada", "last_name": "Lovelace", "organization_name": "E2E Ops",
	}))
	o.org = signup["organization"].(map[string]any)["id"].(string)
	code, out := o.call(signup["access_token"].(string), o.org, "POST", "/api/v1/api-keys", map[string]any{
		"name": "e2e", "scopes": []string{"operations:read", "operations:write", "operations:execute", "shipments:read", "shipments:write"},
	})
	require.Equal(t, 201, code, "%v", out)
	o.key = data(out)["key"].(string)

	ctx := context.Background()
	acct, snap := uuid.New(), uuid.New()
	sealed, err := base.box.SealJSON(map[string]any{"accountNumber": "123456789", "childKey": "k", "childSecret": "s"},
		store.CarrierAccountCredentialsAD(uuid.MustParse(o.org), acct))
	require.NoError(t, err)
	_, err = base.store.Pool.Exec(ctx, `INSERT INTO carrier_accounts (id, organization_id, name, carrier, credentials, supports_rating, supports_pickup, supports_labels)
		VALUES ($1, $2, 'FedEx', 'carrier_a', $3, true, true, true)`, acct, o.org, sealed)
	require.NoError(t, err)
	_, err = base.store.Pool.Exec(ctx, `INSERT INTO locations (id, organization_id, name, street, city, province, zip, country)
		VALUES ($1, $2, 'Warehouse', '10 Main St', 'Memphis', 'TN', '38103', 'US')`, uuid.New(), o.org)
	require.NoError(t, err)
	_, err = base.store.Pool.Exec(ctx, `INSERT INTO rate_snapshots (id, organization_id, carrier_account_id, carrier, service_type, service_name, total_price, currency,
		ship_from, ship_to, packages, quoted_at, expires_at, created_at) VALUES ($1, $2, $3, 'carrier_a', 'FEDEX_GROUND', 'Ground', 8.5, 'USD',
		'{}', '{}', '[{"weight":{"value":2,"unit":"lb"},"length":12,"width":10,"height":6,"dimensionUnit":"in"}]', now(), now() + interval '1 day', now())`, snap, o.org, acct)
	require.NoError(t, err)
	o.snap, o.acct = snap.String(), acct.String()
	return o
}

func (o *opsStack) startWorker() sdkworker.Worker {
	w := sdkworker.New(o.temporal, o.queue, sdkworker.Options{})
	worker.Register(w, o.deps)
	require.NoError(o.t, w.Start())
	return w
}

// orders inserts n orders of the organization (one statement).
func (o *opsStack) orders(n int) []uuid.UUID {
	o.t.Helper()
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = uuid.New()
	}
	_, err := o.store.Pool.Exec(context.Background(), `INSERT INTO orders (id, organization_id, external_id, status, customer, customer_email, shipping_address, line_items, totals, ordered_at)
SELECT x, $1, x::text, 'confirmed', '{"email": "c@example.com"}', 'c@example.com',
       '{"name": "Chloe Chen", "address1": "1 Pike St", "city": "Seattle", "provinceCode": "WA", "zip": "98101", "countryCode": "US"}', '[]', '{"total": 0}', now()
  FROM unnest($2::uuid[]) AS x`, o.org, ids)
	require.NoError(o.t, err)
	return ids
}

// operation creates an operation of n orders, each with the snapshot
// assigned, and returns its id.
func (o *opsStack) operation(n int) string {
	o.t.Helper()
	ids := o.orders(n)
	op := data(o.mustCall(201, o.key, "POST", "/api/v1/operations", map[string]any{"name": "Bulk labels"}))["id"].(string)
	for lo := 0; lo < n; lo += 500 {
		chunk := make([]string, 0, 500)
		for _, id := range ids[lo:min(lo+500, n)] {
			chunk = append(chunk, id.String())
		}
		added := data(o.mustCall(201, o.key, "POST", "/api/v1/operations/"+op+"/items", map[string]any{"orderIds": chunk}))
		var itemIDs []string
		for _, it := range added["items"].([]any) {
			itemIDs = append(itemIDs, it.(map[string]any)["id"].(string))
		}
		o.mustCall(200, o.key, "POST", "/api/v1/operations/"+op+"/actions/apply", map[string]any{
			"itemIds": itemIDs, "action": map[string]any{"type": "assign-rate", "config": map[string]any{"rateSnapshotId": o.snap}}})
	}
	return op
}

// waitOperation polls the operation until cond holds.
func (o *opsStack) waitOperation(id string, timeout time.Duration, cond func(map[string]any) bool) map[string]any {
	o.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		op := data(o.mustCall(200, o.key, "GET", "/api/v1/operations/"+id, nil))
		if cond(op) {
			return op
		}
		if time.Now().After(deadline) {
			o.t.Fatalf("operation did not get there in %s: %v", timeout, op)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func finished(op map[string]any) bool {
	s := op["status"].(string)
	return s == "completed" || s == "failed" || s == "cancelled"
}

// labelsOf counts the operation's items by status and the shipments with
// a label bought for them (by the item's id).
func (o *opsStack) labelsOf(op string) (completed, labelled, labels int) {
	o.t.Helper()
	require.NoError(o.t, o.store.Pool.QueryRow(context.Background(), `SELECT
  (SELECT count(*) FROM operation_items WHERE operation_id = $1 AND status = 'completed'),
  (SELECT count(*) FROM operation_items WHERE operation_id = $1 AND shipment_id IS NOT NULL),
  (SELECT count(*) FROM shipments s JOIN operation_items i ON i.id = s.id WHERE i.operation_id = $1 AND s.tracking_number IS NOT NULL)`, op).
		Scan(&completed, &labelled, &labels))
	return completed, labelled, labels
}

// TestOperationExecuteEndToEnd: a 1,000-item operation buys one label per
// item through the money-safe batch purchase, ends completed with exact
// counters, and its undo voids every label it bought.
func TestOperationExecuteEndToEnd(t *testing.T) {
	o := startOps(t, nil)
	w := o.startWorker()
	t.Cleanup(w.Stop)
	const n = 1000
	op := o.operation(n)

	code, out := o.call(o.key, "", "POST", "/api/v1/operations/"+op+"/execute", nil)
	require.Equal(t, 202, code, "%v", out)
	require.Equal(t, "executing", data(out)["status"])
	// A second execute is refused while it runs (or once it ended).
	code, _ = o.call(o.key, "", "POST", "/api/v1/operations/"+op+"/execute", nil)
	require.Equal(t, 409, code)

	began := time.Now()
	done := o.waitOperation(op, 3*time.Minute, finished)
	t.Logf("%d items in %s (%.0f items/s, under the shared machine's load)", n, time.Since(began).Round(time.Millisecond), n/time.Since(began).Seconds())
	require.Equal(t, "completed", done["status"], "%v", done)
	require.EqualValues(t, n, done["completedCount"])
	require.EqualValues(t, 0, done["pendingCount"])
	require.EqualValues(t, 0, done["processingCount"])
	require.NotNil(t, done["completedAt"])
	completed, labelled, labels := o.labelsOf(op)
	require.Equal(t, n, completed)
	require.Equal(t, n, labelled)
	require.Equal(t, n, labels)
	require.EqualValues(t, n, o.ships.Load(), "exactly one purchase per item")

	items := o.mustCall(200, o.key, "GET", "/api/v1/operations/"+op+"/items?limit=5&status=completed", nil)
	first := items["data"].([]any)[0].(map[string]any)
	require.NotNil(t, first["shipmentId"])

	// Undo the execution: every label voided, items skipped.
	code, out = o.call(o.key, "", "POST", "/api/v1/operations/"+op+"/undo", map[string]any{})
	require.Equal(t, 202, code, "%v", out)
	deadline := time.Now().Add(3 * time.Minute)
	voided := 0
	for {
		hist := o.mustCall(200, o.key, "GET", "/api/v1/operations/"+op+"/history", nil)["data"].([]any)
		if hist[0].(map[string]any)["action"] == "undone" {
			ns := hist[0].(map[string]any)["newState"].(map[string]any)
			refused, _ := ns["refusedLabels"].([]any)
			// The sandbox carrier tenders today's labels at 18:00 UTC and
			// then refuses to void them (as carrier_a does): before that
			// every label is voided, after it every refusal is named.
			if time.Now().UTC().Hour() < 17 {
				require.EqualValues(t, n, ns["labelsVoided"])
				require.Empty(t, refused)
			}
			require.EqualValues(t, n, int(ns["labelsVoided"].(float64))+int(ns["labelsRefused"].(float64)), "every label voided or refused")
			voided = int(ns["labelsVoided"].(float64))
			if len(refused) > 0 {
				require.Contains(t, refused[0].(map[string]any)["reason"], "cannot be cancelled")
			}
			require.Equal(t, true, hist[1].(map[string]any)["isUndone"])
			break
		}
		require.True(t, time.Now().Before(deadline), "undo did not finish")
		time.Sleep(100 * time.Millisecond)
	}
	require.EqualValues(t, n, o.voids.Load(), "each label was sent to the carrier's void once")
	after := data(o.mustCall(200, o.key, "GET", "/api/v1/operations/"+op, nil))
	require.EqualValues(t, n, after["skippedCount"])
	_, labelled, labels = o.labelsOf(op)
	require.Equal(t, n-voided, labelled, "a refused label stays with its item")
	require.Equal(t, n-voided, labels)
	// Undo of the same entry again: 409.
	code, _ = o.call(o.key, "", "POST", "/api/v1/operations/"+op+"/undo", map[string]any{"historyId": data(out)["historyId"]})
	require.Equal(t, 409, code)

	// A small operation's runs are the recorded histories of the replay
	// tests (FOS_UPDATE_HISTORY=1).
	small := o.operation(3)
	code, out = o.call(o.key, "", "POST", "/api/v1/operations/"+small+"/execute", nil)
	require.Equal(t, 202, code, "%v", out)
	require.Equal(t, "completed", o.waitOperation(small, time.Minute, finished)["status"])
	code, out = o.call(o.key, "", "POST", "/api/v1/operations/"+small+"/undo", nil)
	require.Equal(t, 202, code, "%v", out)
	undoRun := o.temporal.GetWorkflow(context.Background(), data(out)["workflowId"].(string), "")
	require.NoError(t, undoRun.Get(context.Background(), nil))
	writeHistory(t, context.Background(), o.temporal, workflows.OperationWorkflowID(small), "", "operation_execute_history.json")
	writeHistory(t, context.Background(), o.temporal, data(out)["workflowId"].(string), "", "operation_undo_history.json")
}

// TestOperationWorkerStopsMidExecution: the worker is stopped while
// batches buy labels (a graceful stop: its activities are cancelled, the
// items in flight finish, the batch's claimed items stay processing and
// its next attempt on a new worker settles them) and a new worker finishes the
// operation: every item is processed exactly once and each labelled item
// has exactly one label; every purchase that reached the carrier is either
// the item's recorded label or voided.
func TestOperationWorkerStopsMidExecution(t *testing.T) {
	o := startOps(t, func(in *workflows.OperationExecuteInput) {
		in.BatchSize, in.ItemParallelism, in.BatchHeartbeat = 20, 4, 2*time.Second
	})
	o.latency.Store(int64(20 * time.Millisecond))
	const n = 300
	op := o.operation(n)
	w1 := o.startWorker()
	code, out := o.call(o.key, "", "POST", "/api/v1/operations/"+op+"/execute", nil)
	require.Equal(t, 202, code, "%v", out)
	o.waitOperation(op, time.Minute, func(op map[string]any) bool { return op["completedCount"].(float64) >= 60 })
	w1.Stop()
	stoppedAt := o.ships.Load()
	mid := data(o.mustCall(200, o.key, "GET", "/api/v1/operations/"+op, nil))
	t.Logf("worker stopped after %d purchases: %v completed, %v processing", stoppedAt, mid["completedCount"], mid["processingCount"])
	require.Less(t, int(stoppedAt), n, "the worker stopped mid-execution")

	w2 := o.startWorker()
	t.Cleanup(w2.Stop)
	done := o.waitOperation(op, time.Minute, finished)
	require.EqualValues(t, 0, done["processingCount"])
	require.EqualValues(t, 0, done["pendingCount"])
	completed, labelled, labels := o.labelsOf(op)
	failed := int(done["failedCount"].(float64))
	require.Equal(t, n, completed+failed, "every item settled once")
	require.Equal(t, completed, labels, "one recorded label per completed item")
	require.GreaterOrEqual(t, labelled, completed)
	// Every purchase the carrier saw is a recorded label or was voided.
	require.EqualValues(t, labels, int(o.ships.Load())-int(o.voids.Load()), "ships %d voids %d labels %d", o.ships.Load(), o.voids.Load(), labels)
	t.Logf("after restart: %d completed, %d failed, %d purchases, %d voids", completed, failed, o.ships.Load(), o.voids.Load())
}

// startWorkerProcess starts a worker of the operations' task queue in its
// own process.
func (o *opsStack) startWorkerProcess() *exec.Cmd {
	return startWorkerProcess(o.t, workerProcess{TemporalAddr: o.temporalAddr, Namespace: o.namespace,
		DatabaseURL: storetest.URL(), BoxKey: o.boxKey, CarriersURL: o.carriersURL, TaskQueue: o.queue})
}

// TestOperationWorkerKilledMidExecution: the worker process is killed
// (SIGKILL: no activity is told, nothing is flushed) while a 1,000-item
// operation buys labels; a new worker process finishes it with every item
// processed exactly once and exactly one recorded label per labelled item;
// every purchase the carrier saw is that label or was voided; the undo of
// the execution voids (or names as refused) every label it bought.
func TestOperationWorkerKilledMidExecution(t *testing.T) {
	o := startOps(t, func(in *workflows.OperationExecuteInput) {
		in.BatchSize, in.Parallelism, in.ItemParallelism, in.BatchHeartbeat = 50, 2, 8, 2*time.Second
	})
	o.latency.Store(int64(5 * time.Millisecond))
	const n = 1000
	op := o.operation(n)
	w1 := o.startWorkerProcess()
	code, out := o.call(o.key, "", "POST", "/api/v1/operations/"+op+"/execute", nil)
	require.Equal(t, 202, code, "%v", out)
	o.waitOperation(op, 2*time.Minute, func(op map[string]any) bool { return op["completedCount"].(float64) >= 150 })
	require.NoError(t, w1.Process.Kill())
	_ = w1.Wait()
	killedAt := o.ships.Load()
	mid := data(o.mustCall(200, o.key, "GET", "/api/v1/operations/"+op, nil))
	t.Logf("worker killed after %d purchases: %v completed, %v processing", killedAt, mid["completedCount"], mid["processingCount"])
	require.Less(t, int(killedAt), n, "the worker was killed mid-execution")

	o.startWorkerProcess()
	done := o.waitOperation(op, 3*time.Minute, finished)
	require.Equal(t, "completed", done["status"], "%v", done)
	require.EqualValues(t, 0, done["processingCount"])
	require.EqualValues(t, 0, done["pendingCount"])
	completed, labelled, labels := o.labelsOf(op)
	failed := int(done["failedCount"].(float64))
	// An item whose purchase was on the wire when the worker died has an
	// unknown outcome: carrier_a has no lookup by reference, so it is
	// failed with the reason and its shipment is an exception, never
	// bought again (CONTRACT 8b). Every other item is settled exactly.
	rows, err := o.store.Pool.Query(context.Background(), `SELECT i.status::text, coalesce(i.error_message, ''), coalesce(s.status::text, ''), s.tracking_number IS NOT NULL
  FROM operation_items i LEFT JOIN shipments s ON s.id = i.id
 WHERE i.operation_id = $1 AND (i.status <> 'completed' OR s.tracking_number IS NULL)`, op)
	require.NoError(t, err)
	unknown := 0
	for rows.Next() {
		var st, msg, sst string
		var lab bool
		require.NoError(t, rows.Scan(&st, &msg, &sst, &lab))
		t.Logf("item %s (%s): shipment %s, label %v", st, msg, sst, lab)
		require.Equal(t, "failed", st)
		require.Contains(t, msg, "may or may not have been bought")
		require.Equal(t, "exception", sst)
		require.False(t, lab)
		unknown++
	}
	require.NoError(t, rows.Err())
	t.Logf("after restart: %d completed, %d failed (outcome unknown), %d labels, %d purchases, %d voids", completed, failed, labels, o.ships.Load(), o.voids.Load())
	require.Equal(t, n, completed+failed, "every item settled once")
	require.Equal(t, failed, unknown)
	require.LessOrEqual(t, failed, 2*8, "at most the purchases in flight at the kill (2 batches of 8) are unknown")
	require.Equal(t, completed, labels, "one recorded label per completed item")
	require.Equal(t, completed, labelled)
	unaccounted := int(o.ships.Load()) - int(o.voids.Load()) - labels
	require.True(t, unaccounted >= 0 && unaccounted <= unknown,
		"every purchase the carrier saw is a recorded label, was voided or is one of the %d unknown items (%d are not)", unknown, unaccounted)

	voidsBefore := o.voids.Load()
	code, out = o.call(o.key, "", "POST", "/api/v1/operations/"+op+"/undo", map[string]any{})
	require.Equal(t, 202, code, "%v", out)
	undoRun := o.temporal.GetWorkflow(context.Background(), data(out)["workflowId"].(string), "")
	require.NoError(t, undoRun.Get(context.Background(), nil))
	hist := o.mustCall(200, o.key, "GET", "/api/v1/operations/"+op+"/history", nil)["data"].([]any)
	ns := hist[0].(map[string]any)["newState"].(map[string]any)
	require.EqualValues(t, labels, int(ns["labelsVoided"].(float64))+int(ns["labelsRefused"].(float64)), "every label voided or refused")
	require.EqualValues(t, labels, int(o.voids.Load()-voidsBefore), "each label was sent to the carrier's void once")
}

// BenchmarkOperationExecute1000 executes an operation of 1,000 items
// (FOS_BENCH_OPS_N: e.g. 10000) that buys a label per item on the sandbox
// carrier (embedded Temporal, one worker) and, in the same run, buys 1,000
// labels through POST /shipments from 8 clients at once (the single path:
// a purchase workflow per label); it reports both rates and their ratio:
//
//	./scripts/test-postgres.sh go test ./e2e -run '^$' -bench OperationExecute -benchtime 1x
//	FOS_BENCH_OPS_N=10000 ./scripts/test-postgres.sh go test ./e2e -run '^$' -bench OperationExecute -benchtime 1x -timeout 60m
//
// FOS_BENCH_OPS_PAR, FOS_BENCH_OPS_ITEM_PAR and FOS_BENCH_OPS_BATCH
// override the batches in flight, the items at once per batch and the
// items per batch (the defaults of workflows.NewOperationExecuteInput);
// FOS_BENCH_SINGLE_N and FOS_BENCH_SINGLE_CLIENTS the single path's calls
// and clients (defaults 1,000 and 8).
func BenchmarkOperationExecute1000(b *testing.B) {
	env := func(name string, def int) int {
		if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
			return v
		}
		return def
	}
	o := startOps(b, func(in *workflows.OperationExecuteInput) {
		if v, err := strconv.Atoi(os.Getenv("FOS_BENCH_OPS_PAR")); err == nil {
			in.Parallelism = v
		}
		if v, err := strconv.Atoi(os.Getenv("FOS_BENCH_OPS_ITEM_PAR")); err == nil {
			in.ItemParallelism = v
		}
		if v, err := strconv.Atoi(os.Getenv("FOS_BENCH_OPS_BATCH")); err == nil {
			in.BatchSize = v
		}
	})
	w := o.startWorker()
	b.Cleanup(w.Stop)
	n, singles, clients := env("FOS_BENCH_OPS_N", 1000), env("FOS_BENCH_SINGLE_N", 1000), env("FOS_BENCH_SINGLE_CLIENTS", 8)
	var batch, single time.Duration
	for range b.N {
		b.StopTimer()
		op := o.operation(n)
		orders := o.orders(singles)
		b.StartTimer()
		began := time.Now()
		if code, out := o.call(o.key, "", "POST", "/api/v1/operations/"+op+"/execute", nil); code != 202 {
			b.Fatalf("execute answered %d: %v", code, out)
		}
		done := o.waitOperation(op, 2*time.Minute+time.Duration(n)*50*time.Millisecond, finished)
		batch += time.Since(began)
		if done["status"] != "completed" || done["completedCount"].(float64) != float64(n) {
			b.Fatalf("operation ended %v", done)
		}
		began = time.Now()
		if err := o.postShipments(orders, clients); err != nil {
			b.Fatal(err)
		}
		single += time.Since(began)
	}
	itemsPerSec := float64(n*b.N) / batch.Seconds()
	singlePerSec := float64(singles*b.N) / single.Seconds()
	b.ReportMetric(itemsPerSec, "items/s")
	b.ReportMetric(singlePerSec, "single-labels/s")
	b.ReportMetric(itemsPerSec/singlePerSec, "batch/single")
}

// postShipments buys a label per order through POST /shipments from
// clients at once; every call must answer 201.
func (o *opsStack) postShipments(orders []uuid.UUID, clients int) error {
	next := make(chan uuid.UUID)
	errs := make(chan error, clients)
	for range clients {
		go func() {
			var first error
			for id := range next {
				raw, _ := json.Marshal(map[string]any{"order_id": id, "carrier_account_id": o.acct, "service": "FEDEX_GROUND",
					"parcels": []any{map[string]any{"length": 12, "width": 10, "height": 6, "weight": 2, "unit": "lb"}}})
				req, err := http.NewRequest("POST", o.api.URL+"/api/v1/shipments", bytes.NewReader(raw))
				if err != nil {
					first = cmp.Or(first, err)
					continue
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+o.key)
				resp, err := o.api.Client().Do(req)
				if err != nil {
					first = cmp.Or(first, err)
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					first = cmp.Or(first, fmt.Errorf("POST /shipments answered %d: %s", resp.StatusCode, body))
				}
			}
			errs <- first
		}()
	}
	for _, id := range orders {
		next <- id
	}
	close(next)
	var first error
	for range clients {
		first = cmp.Or(first, <-errs)
	}
	return first
}

// TestReconcilerSettlesOperations: an executing operation whose run
// vanished is restarted under its id and finishes; one whose run an
// operator terminated ends failed with the reason.
func TestReconcilerSettlesOperations(t *testing.T) {
	o := startOps(t, nil)
	w := o.startWorker()
	t.Cleanup(w.Stop)
	ctx := context.Background()
	org := uuid.MustParse(o.org)
	executing := func(id string) {
		_, err := o.store.Pool.Exec(ctx, `UPDATE operations SET status = 'executing', executed_at = now(), started_at = now(),
			updated_at = now() - interval '20 minutes' WHERE id = $1`, id)
		require.NoError(t, err)
	}
	orphan := o.operation(20)
	executing(orphan)
	terminated := o.operation(5)
	executing(terminated)
	opts := worker.StartOptions(workflows.OperationWorkflowID(terminated), "nobody-polls", o.org, nil)
	in := workflows.NewOperationExecuteInput(org, uuid.MustParse(terminated), domain.System(org))
	in.State = &workflows.OperationExecuteState{Started: true}
	_, err := o.temporal.ExecuteWorkflow(ctx, opts, workflows.OperationExecuteWorkflowType, in)
	require.NoError(t, err)
	require.NoError(t, o.temporal.TerminateWorkflow(ctx, workflows.OperationWorkflowID(terminated), "", "stuck on a bad deploy"))

	ops := worker.TemporalOperations{Client: o.temporal, TaskQueue: o.queue}
	m := &activities.MaintenanceActivities{Store: o.store, Temporal: o.temporal,
		StartOperation:     func(ctx context.Context, orgID, id uuid.UUID) error { return ops.Restart(ctx, o.store, orgID, id) },
		StartOperationUndo: func(ctx context.Context, orgID, id uuid.UUID) error { return ops.RestartUndo(ctx, o.store, orgID, id) },
	}
	res, err := m.ReconcileRuns(ctx, activities.ReconcileRunsInput{})
	require.NoError(t, err)
	require.GreaterOrEqual(t, res.Restarted, 1)
	require.GreaterOrEqual(t, res.Failed, 1)

	done := o.waitOperation(orphan, time.Minute, finished)
	require.Equal(t, "completed", done["status"], "%v", done)
	require.EqualValues(t, 20, done["completedCount"])
	failed := data(o.mustCall(200, o.key, "GET", "/api/v1/operations/"+terminated, nil))
	require.Equal(t, "failed", failed["status"])
	require.Contains(t, failed["errorMessage"], "stuck on a bad deploy")
}

// TestOperationPauseResumeCancelEndToEnd: pause stops starting items
// (those in flight finish), resume continues, cancel skips what is left;
// the refused moves are 409.
func TestOperationPauseResumeCancelEndToEnd(t *testing.T) {
	o := startOps(t, func(in *workflows.OperationExecuteInput) { in.BatchSize, in.Parallelism, in.ItemParallelism = 10, 1, 2 })
	o.latency.Store(int64(30 * time.Millisecond))
	w := o.startWorker()
	t.Cleanup(w.Stop)
	const n = 200
	op := o.operation(n)
	code, _ := o.call(o.key, "", "POST", "/api/v1/operations/"+op+"/resume", nil)
	require.Equal(t, 409, code, "a draft cannot be resumed")
	code, out := o.call(o.key, "", "POST", "/api/v1/operations/"+op+"/execute", nil)
	require.Equal(t, 202, code, "%v", out)
	o.waitOperation(op, time.Minute, func(op map[string]any) bool { return op["completedCount"].(float64) >= 10 })

	code, out = o.call(o.key, "", "POST", "/api/v1/operations/"+op+"/pause", nil)
	require.Equal(t, 200, code, "%v", out)
	require.Equal(t, "paused", data(out)["status"])
	code, _ = o.call(o.key, "", "POST", "/api/v1/operations/"+op+"/pause", nil)
	require.Equal(t, 409, code)
	code, _ = o.call(o.key, "", "POST", "/api/v1/operations/"+op+"/execute", nil)
	require.Equal(t, 409, code)
	// Items in flight finish (polled: on a loaded machine they may take
	// longer than any fixed wait); then nothing moves.
	o.waitOperation(op, time.Minute, func(op map[string]any) bool { return op["processingCount"].(float64) == 0 })
	before := o.ships.Load()
	time.Sleep(time.Second)
	require.Equal(t, before, o.ships.Load(), "no purchase while paused")
	paused := data(o.mustCall(200, o.key, "GET", "/api/v1/operations/"+op, nil))
	require.Equal(t, "paused", paused["status"])
	require.EqualValues(t, 0, paused["processingCount"])

	code, out = o.call(o.key, "", "POST", "/api/v1/operations/"+op+"/resume", nil)
	require.Equal(t, 200, code, "%v", out)
	require.Equal(t, "executing", data(out)["status"])
	o.waitOperation(op, time.Minute, func(op map[string]any) bool {
		return op["completedCount"].(float64) >= paused["completedCount"].(float64)+10
	})
	code, out = o.call(o.key, "", "POST", "/api/v1/operations/"+op+"/cancel", nil)
	require.Equal(t, 200, code, "%v", out)
	done := o.waitOperation(op, time.Minute, func(op map[string]any) bool { return op["processingCount"].(float64) == 0 })
	require.Equal(t, "cancelled", done["status"])
	require.EqualValues(t, n, done["completedCount"].(float64)+done["skippedCount"].(float64))
	require.Greater(t, done["skippedCount"].(float64), 0.0)
	_, _, labels := o.labelsOf(op)
	require.EqualValues(t, done["completedCount"], labels)
	require.EqualValues(t, labels, o.ships.Load(), "one purchase per completed item")
	code, _ = o.call(o.key, "", "POST", "/api/v1/operations/"+op+"/cancel", nil)
	require.Equal(t, 409, code)
}

// TestOperationTransformationsEndToEnd: after_operation transformations
// run on each item's order and their change is written back once; a
// failing before_operation transformation fails the item before any
// label is bought.
func TestOperationTransformationsEndToEnd(t *testing.T) {
	o := startOps(t, nil)
	w := o.startWorker()
	t.Cleanup(w.Stop)
	ctx := context.Background()
	_, err := o.store.Pool.Exec(ctx, `INSERT INTO transformations (id, organization_id, name, trigger_point, code)
		VALUES ($1, $2, 'tag it', 'after_operation', 'function transform(d) { d.note = "shipped by operation"; return d }')`, uuid.New(), o.org)
	require.NoError(t, err)
	op := o.operation(3)
	code, out := o.call(o.key, "", "POST", "/api/v1/operations/"+op+"/execute", nil)
	require.Equal(t, 202, code, "%v", out)
	require.Equal(t, "completed", o.waitOperation(op, time.Minute, finished)["status"])
	var notes, acts int
	require.NoError(t, o.store.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE o.note = 'shipped by operation'),
		(SELECT count(*) FROM order_activities a JOIN operation_items j ON j.order_id = a.order_id WHERE j.operation_id = $1 AND a.type = $2)
		FROM orders o JOIN operation_items i ON i.order_id = o.id WHERE i.operation_id = $1`, op, store.OrderTransformActivityType).Scan(&notes, &acts))
	require.Equal(t, 3, notes)
	require.Equal(t, 3, acts)

	_, err = o.store.Pool.Exec(ctx, `INSERT INTO transformations (id, organization_id, name, trigger_point, code)
		VALUES ($1, $2, 'broken', 'before_operation', 'function transform(d) { throw new Error("no") }')`, uuid.New(), o.org)
	require.NoError(t, err)
	before := o.ships.Load()
	op2 := o.operation(2)
	code, out = o.call(o.key, "", "POST", "/api/v1/operations/"+op2+"/execute", nil)
	require.Equal(t, 202, code, "%v", out)
	done := o.waitOperation(op2, time.Minute, finished)
	require.Equal(t, "failed", done["status"])
	require.EqualValues(t, 2, done["failedCount"])
	require.Equal(t, before, o.ships.Load(), "no label bought")
	items := o.mustCall(200, o.key, "GET", "/api/v1/operations/"+op2+"/items", nil)["data"].([]any)
	require.Contains(t, items[0].(map[string]any)["errorMessage"], "broken")
}

// TestOperationContinuesAsNew: an operation of three items run one batch
// of one item per run continues as new twice and completes; its first run
// (ending ContinuedAsNew) is a recorded history of the replay tests
// (FOS_UPDATE_HISTORY=1: workflows/testdata/operation_execute_continued_history.json).
func TestOperationContinuesAsNew(t *testing.T) {
	o := startOps(t, func(in *workflows.OperationExecuteInput) { in.BatchSize, in.BatchesPerRun, in.Parallelism = 1, 1, 1 })
	w := o.startWorker()
	t.Cleanup(w.Stop)
	op := o.operation(3)
	code, out := o.call(o.key, "", "POST", "/api/v1/operations/"+op+"/execute", nil)
	require.Equal(t, 202, code, "%v", out)
	require.Equal(t, "completed", o.waitOperation(op, time.Minute, finished)["status"])
	ctx := context.Background()
	wfID := workflows.OperationWorkflowID(op)
	o.waitClosed(wfID)
	desc, err := o.temporal.DescribeWorkflowExecution(ctx, wfID, "")
	require.NoError(t, err)
	first := desc.GetWorkflowExecutionInfo().GetFirstRunId()
	require.NotEqual(t, first, desc.GetWorkflowExecutionInfo().GetExecution().GetRunId(), "the run continued as new")
	it := o.temporal.GetWorkflowHistory(ctx, wfID, first, false, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
	require.True(t, it.HasNext())
	ev, err := it.Next()
	require.NoError(t, err)
	require.Equal(t, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW, ev.GetEventType())
	writeHistory(t, ctx, o.temporal, wfID, first, "operation_execute_continued_history.json")
}
