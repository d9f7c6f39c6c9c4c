package e2e

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	sdkworker "go.temporal.io/sdk/worker"
	"golang.org/x/crypto/bcrypt"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/api"
	"github.com/fos-dev/fos/auth"
	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/sandboxapi"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/worker"
	"github.com/fos-dev/fos/workflows"
)

// purchaseStack is the service on a task queue of its own, whose workers
// the test starts and stops, with the sandbox carriers behind counters.
type purchaseStack struct {
	*stack
	queue       string
	deps        worker.Deps
	ships       atomic.Int32 // label purchases that reached the carrier
	voids       atomic.Int32 // label voids that reached the carrier
	latency     atomic.Int64 // injected carrier latency of a label purchase (ns)
	carrierTime atomic.Int64 // how long the last label purchase took at the carrier (ns)
	key         string
	acct, order string
	org         string
	// base is the stack the purchase stack was made from (its API on the
	// shared task queues).
	base *stack
}

func startPurchases(t testing.TB) *purchaseStack {
	base := start(t)
	p := &purchaseStack{queue: "fos-e2e-purchases-" + uuid.NewString()[:8], base: base}
	h := sandboxapi.NewHandler()
	sb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/ship/v1/shipments"):
			p.ships.Add(1)
			began := time.Now()
			time.Sleep(time.Duration(p.latency.Load()))
			h.ServeHTTP(w, r)
			p.carrierTime.Store(int64(time.Since(began)))
			return
		case strings.HasSuffix(r.URL.Path, "/ship/v1/shipments/cancel"):
			p.voids.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(sb.Close)
	reg := carriers.NewRegistry(carriers.Config{Sandbox: true, SandboxURL: sb.URL})
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	p.deps = worker.Deps{Store: base.store, Secrets: base.box, Carriers: reg, Logger: logger}
	srv := httptest.NewServer(api.NewRouter(api.Deps{
		Store: base.store, Logger: logger,
		Tokens:    auth.Tokens{Secret: []byte("e2e-secret-e2e-secret-e2e-secret!"), TTL: time.Hour},
		Passwords: auth.Passwords{Cost: bcrypt.MinCost},
		Secrets:   base.box, Carriers: reg, Temporal: base.temporal, TaskQueue: p.queue, BaseURL: "http://fos.test",
	}))
	t.Cleanup(srv.Close)
	own := *base
	own.api = srv
	p.stack = &own

	// An organization with an API key, a carrier_a account and an order.
	signup := data(p.mustCall(201, "", "POST", "/api/v1/auth/signup", map[string]any{
		"email": "buy-" + uuid.NewString()[:8] + "@example.com", "password": "correct horse", "first_name": "Ada", "last_name": "Lovelace", "organization_name": "E2E Buy",
	}))
	p.org = signup["organization"].(map[string]any)["id"].(string)
	code, out := p.call(signup["access_token"].(string), p.org, "POST", "/api/v1/api-keys", map[string]any{
		"name": "e2e", "scopes": []string{"shipments:read", "shipments:write", "pickups:read", "pickups:write"},
	})
	require.Equal(t, 201, code, "%v", out)
	p.key = data(out)["key"].(string)
	ctx := context.Background()
	acct, order := uuid.New(), uuid.New()
	sealed, err := base.box.SealJSON(map[string]any{"accountNumber": "123456789", "childKey": "k", "childSecret": "s"},
		store.CarrierAccountCredentialsAD(uuid.MustParse(p.org), acct))
	require.NoError(t, err)
	_, err = base.store.Pool.Exec(ctx, `INSERT INTO carrier_accounts (id, organization_id, name, carrier, credentials, supports_rating, supports_pickup, supports_labels)
		VALUES ($1, $2, 'FedEx', 'carrier_a', $3, true, true, true)`, acct, p.org, sealed)
	require.NoError(t, err)
	_, err = base.store.Pool.Exec(ctx, `INSERT INTO orders (id, organization_id, external_id, status, customer, customer_email, shipping_address, line_items, totals, ordered_at)
		VALUES ($1, $2, 'buy-1', 'confirmed', '{"email": "c@example.com"}', 'c@example.com',
		        '{"name": "Chloe Chen", "address1": "1 Pike St", "city": "Seattle", "provinceCode": "WA", "zip": "98101", "countryCode": "US"}',
		        '[]', '{"total": 0}', now())`, order, p.org)
	require.NoError(t, err)
	p.acct, p.order = acct.String(), order.String()
	return p
}

// worker starts a worker on the stack's queue; record, when not nil,
// replaces the RecordShipmentLabel activity.
func (p *purchaseStack) worker(record func(context.Context, activities.RecordShipmentLabelInput) error) sdkworker.Worker {
	w := sdkworker.New(p.temporal, p.queue, sdkworker.Options{})
	worker.Register(w, p.deps)
	if record != nil {
		w.RegisterActivityWithOptions(record, activity.RegisterOptions{Name: "RecordShipmentLabel", DisableAlreadyRegisteredCheck: true})
	}
	require.NoError(p.t, w.Start())
	return w
}

func (p *purchaseStack) shipmentBody() map[string]any {
	return map[string]any{
		"order_id": p.order, "carrier_account_id": p.acct, "service": "FEDEX_GROUND",
		"parcels":   []any{map[string]any{"length": 12, "width": 10, "height": 8, "weight": 5, "unit": "lb"}},
		"ship_from": map[string]any{"street": "10 Main St", "city": "Memphis", "state": "TN", "zip": "38103"},
	}
}

// crashAfterPurchase is a RecordShipmentLabel whose first call stands for
// a worker that dies between the carrier's answer and the database write:
// it runs before (e.g. deletes the shipment), reports the crash and hangs
// until its worker is stopped, writing nothing.
func crashAfterPurchase(before func(activities.RecordShipmentLabelInput), crashed chan<- string) func(context.Context, activities.RecordShipmentLabelInput) error {
	var once atomic.Bool
	return func(ctx context.Context, in activities.RecordShipmentLabelInput) error {
		if once.CompareAndSwap(false, true) {
			if before != nil {
				before(in)
			}
			crashed <- in.ShipmentID
		}
		<-ctx.Done()
		return ctx.Err()
	}
}

// TestShipmentLabelWorkerCrashEndToEnd: the worker dies after the carrier
// sold the label and before the database write; a new worker replays the
// run and records the label, or voids it when the shipment was deleted
// meanwhile. The label is bought once.
func TestShipmentLabelWorkerCrashEndToEnd(t *testing.T) {
	p := startPurchases(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	for _, tc := range []struct {
		name    string
		deleted bool
	}{{"recorded after restart", false}, {"voided after restart", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ships, voids := p.ships.Load(), p.voids.Load()
			crashed := make(chan string, 1)
			var before func(activities.RecordShipmentLabelInput)
			if tc.deleted {
				before = func(in activities.RecordShipmentLabelInput) {
					_, err := p.store.Pool.Exec(context.Background(), `DELETE FROM shipments WHERE id = $1`, in.ShipmentID)
					require.NoError(t, err)
				}
			}
			first := p.worker(crashAfterPurchase(before, crashed))
			type answer struct {
				code int
				body map[string]any
			}
			answered := make(chan answer, 1)
			go func() {
				code, body := p.call(p.key, "", "POST", "/api/v1/shipments", p.shipmentBody())
				answered <- answer{code, body}
			}()
			var shipmentID string
			select {
			case shipmentID = <-crashed:
			case <-ctx.Done():
				t.Fatal("the label purchase never reached the database write")
			}
			first.Stop() // the worker dies
			require.EqualValues(t, 1, p.ships.Load()-ships, "the carrier sold the label")
			sh, err := store.ShipmentByID(ctx, p.store.Pool, uuid.MustParse(p.org), uuid.MustParse(shipmentID))
			if !tc.deleted {
				require.NoError(t, err)
				require.Equal(t, store.ShipmentPending, sh.Status, "not recorded yet")
			}

			second := p.worker(nil) // a new worker starts
			defer second.Stop()
			var got answer
			select {
			case got = <-answered:
			case <-ctx.Done():
				t.Fatal("no answer after the restart")
			}
			wfID := workflows.ShipmentLabelWorkflowID(shipmentID)
			desc, err := p.temporal.DescribeWorkflowExecution(ctx, wfID, "")
			require.NoError(t, err)
			runID := desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()
			if !tc.deleted {
				require.Equal(t, 201, got.code, "%v", got.body)
				d := data(got.body)
				require.Equal(t, shipmentID, d["id"])
				require.Equal(t, "label_created", d["status"])
				require.NotEmpty(t, d["tracking_number"])
				require.EqualValues(t, 0, p.voids.Load()-voids)
				require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, desc.GetWorkflowExecutionInfo().GetStatus())
				// The documents went through the stash, not the history;
				// the label as recorded has them.
				it := p.temporal.GetWorkflowHistory(ctx, wfID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
				var bought *activities.BuyShipmentLabelResult
				for it.HasNext() {
					ev, err := it.Next()
					require.NoError(t, err)
					if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil {
						bought = &activities.BuyShipmentLabelResult{}
						require.NoError(t, dataConverter.FromPayloads(a.GetResult(), bought))
					}
				}
				require.NotNil(t, bought)
				require.True(t, bought.Label.Stashed)
				require.Empty(t, bought.Label.Document)
				l, err := store.ShipmentLabel(ctx, p.store.Pool, uuid.MustParse(p.org), uuid.MustParse(shipmentID))
				require.NoError(t, err)
				require.NotEmpty(t, l.Document)
				writeHistory(t, ctx, p.temporal, wfID, runID, "shipment_label_history.json")
			} else {
				require.Equal(t, 409, got.code, "%v", got.body)
				require.Contains(t, got.body["error"].(map[string]any)["message"], "voided")
				require.EqualValues(t, 1, p.voids.Load()-voids, "the unrecorded label was voided")
				require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, desc.GetWorkflowExecutionInfo().GetStatus(), "the run shows as failed")
				writeHistory(t, ctx, p.temporal, wfID, runID, "shipment_label_voided_history.json")
			}
			require.EqualValues(t, 1, p.ships.Load()-ships, "bought once")
		})
	}
}

// TestPickupBookingEndToEnd books and cancels a pickup through the
// workflows, and a retried booking with the same Idempotency-Key books
// nothing more.
func TestPickupBookingEndToEnd(t *testing.T) {
	p := startPurchases(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w := p.worker(nil)
	defer w.Stop()

	day := time.Now().UTC().AddDate(0, 0, 3)
	for day.Weekday() == time.Saturday || day.Weekday() == time.Sunday {
		day = day.AddDate(0, 0, 1)
	}
	body := map[string]any{
		"carrierAccountId": p.acct, "pickupDate": day.Format("2006-01-02"), "readyTime": "09:00", "closeTime": "17:00",
		"pickupAddress": map[string]any{"address1": "10 Main St", "city": "Memphis", "provinceCode": "TN", "zip": "38103", "countryCode": "US"},
	}
	req := func(key string) (int, map[string]any) { return p.callWithKey("POST", "/api/v1/pickups", body, key) }
	code, out := req("pickup-1")
	require.Equal(t, 201, code, "%v", out)
	id := out["pickup"].(map[string]any)["id"].(string)
	require.NotEmpty(t, out["confirmationNumber"])
	wfID := workflows.PickupBookingWorkflowID(id)
	desc, err := p.temporal.DescribeWorkflowExecution(ctx, wfID, "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, desc.GetWorkflowExecutionInfo().GetStatus())
	writeHistory(t, ctx, p.temporal, wfID, desc.GetWorkflowExecutionInfo().GetExecution().GetRunId(), "pickup_booking_history.json")

	// The stored answer is gone (e.g. released): the key still names the
	// same pickup, and nothing is booked again.
	_, err = p.store.Pool.Exec(ctx, `DELETE FROM idempotency_keys`)
	require.NoError(t, err)
	code, again := req("pickup-1")
	require.Equal(t, 201, code, "%v", again)
	require.Equal(t, id, again["pickup"].(map[string]any)["id"])
	require.Equal(t, out["confirmationNumber"], again["confirmationNumber"])
	require.Len(t, data(p.mustCall(200, p.key, "GET", "/api/v1/pickups/"+id, nil)), 16)

	res := p.mustCall(200, p.key, "DELETE", "/api/v1/pickups/"+id, map[string]any{"reason": "not needed"})
	require.Equal(t, true, res["success"])
	require.Equal(t, "cancelled", data(p.mustCall(200, p.key, "GET", "/api/v1/pickups/"+id, nil))["status"])
	cancelID := workflows.PickupCancelWorkflowID(id)
	desc, err = p.temporal.DescribeWorkflowExecution(ctx, cancelID, "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, desc.GetWorkflowExecutionInfo().GetStatus())
	writeHistory(t, ctx, p.temporal, cancelID, desc.GetWorkflowExecutionInfo().GetExecution().GetRunId(), "pickup_cancel_history.json")
}

// BenchmarkCreateShipment measures POST /shipments end to end (the API,
// the ShipmentLabel workflow on the in-process Temporal server, the
// activities, PostgreSQL) against the sandbox carrier with a label
// purchase latency injected, one request at a time. It reports the p50 and
// p99 latency, and of the overhead: each request's latency less the time
// the carrier took to answer it (the injected latency plus the sandbox's
// own work), which the issue wants within 20 ms at p99. BenchmarkPurchaseFloor
// measures the part of it that is the mechanism itself (update-with-start
// and one activity on this Temporal server):
//
//	go test ./e2e -run '^$' -bench 'PurchaseFloor|CreateShipment' -benchtime 200x
func BenchmarkCreateShipment(b *testing.B) {
	const carrierLatency = floorCarrierLatency
	p := startPurchases(b)
	w := p.worker(nil)
	b.Cleanup(w.Stop)
	// Warm up (connections, tokens, caches).
	for range 3 {
		p.mustCall(201, p.key, "POST", "/api/v1/shipments", p.shipmentBody())
	}
	p.latency.Store(int64(carrierLatency))
	lat := make([]time.Duration, 0, b.N)
	over := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		began := time.Now()
		code, out := p.call(p.key, "", "POST", "/api/v1/shipments", p.shipmentBody())
		took := time.Since(began)
		lat = append(lat, took)
		over = append(over, took-time.Duration(p.carrierTime.Load()))
		if code != 201 {
			b.Fatalf("POST /shipments answered %d: %v", code, out)
		}
	}
	b.StopTimer()
	pct := percentile
	b.ReportMetric(float64(pct(lat, 0.5))/1e6, "p50-ms")
	b.ReportMetric(float64(pct(lat, 0.99))/1e6, "p99-ms")
	b.ReportMetric(float64(pct(over, 0.5))/1e6, "overhead-p50-ms")
	b.ReportMetric(float64(pct(over, 0.99))/1e6, "overhead-p99-ms")
	b.Logf("%d requests, injected carrier latency %s: latency p50 %s p99 %s; overhead over the carrier's answer p50 %s p99 %s max %s",
		len(lat), carrierLatency, pct(lat, 0.5).Round(100*time.Microsecond), pct(lat, 0.99).Round(100*time.Microsecond),
		pct(over, 0.5).Round(100*time.Microsecond), pct(over, 0.99).Round(100*time.Microsecond), over[len(over)-1].Round(100*time.Microsecond))
}

// callWithKey sends a request with the stack's API key and an
// Idempotency-Key.
func (p *purchaseStack) callWithKey(method, path string, body any, key string) (int, map[string]any) {
	p.t.Helper()
	raw, err := json.Marshal(body)
	require.NoError(p.t, err)
	r, err := http.NewRequest(method, p.api.URL+path, strings.NewReader(string(raw)))
	require.NoError(p.t, err)
	r.Header.Set("Authorization", "Bearer "+p.key)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Idempotency-Key", key)
	resp, err := p.api.Client().Do(r)
	require.NoError(p.t, err)
	defer resp.Body.Close()
	out := map[string]any{}
	require.NoError(p.t, json.NewDecoder(resp.Body).Decode(&out))
	return resp.StatusCode, out
}

// TestShipmentLabelRetryAfterUnknownEndToEnd: the carrier answers 503 (the
// label may have been sold): 502, and the client's retry with the same
// Idempotency-Key, once its stored answer is gone, is answered from the
// closed run (its encrypted failure decoded) without a second purchase.
func TestShipmentLabelRetryAfterUnknownEndToEnd(t *testing.T) {
	p := startPurchases(t)
	w := p.worker(nil)
	defer w.Stop()
	ctx := context.Background()
	acct := uuid.New()
	sealed, err := p.box.SealJSON(map[string]any{"accountNumber": "sandbox-fail", "childKey": "k", "childSecret": "s"},
		store.CarrierAccountCredentialsAD(uuid.MustParse(p.org), acct))
	require.NoError(t, err)
	_, err = p.store.Pool.Exec(ctx, `INSERT INTO carrier_accounts (id, organization_id, name, carrier, credentials, supports_rating, supports_pickup, supports_labels)
		VALUES ($1, $2, 'Down', 'carrier_a', $3, true, true, true)`, acct, p.org, sealed)
	require.NoError(t, err)
	body := p.shipmentBody()
	body["carrier_account_id"] = acct.String()

	code, first := p.callWithKey("POST", "/api/v1/shipments", body, "unknown-1")
	require.Equal(t, 502, code, "%v", first)
	msg := first["error"].(map[string]any)["message"].(string)
	require.Contains(t, msg, "may or may not have been bought")
	require.EqualValues(t, 1, p.ships.Load())
	_, err = p.store.Pool.Exec(ctx, `DELETE FROM idempotency_keys`)
	require.NoError(t, err)
	code, again := p.callWithKey("POST", "/api/v1/shipments", body, "unknown-1")
	require.Equal(t, 502, code, "%v", again)
	require.Equal(t, msg, again["error"].(map[string]any)["message"])
	require.EqualValues(t, 1, p.ships.Load(), "never bought twice")
}
