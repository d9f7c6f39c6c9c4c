// Package e2e runs the service end to end in one process: the real router
// over HTTP, the real Temporal worker on an in-process Temporal server,
// the sandbox platforms on their own listener and a real PostgreSQL.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/server/temporal"
	"go.temporal.io/server/temporaltest"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/api"
	"github.com/fos-dev/fos/auth"
	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/devenv"
	"github.com/fos-dev/fos/payloadcodec/codectest"
	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/sandbox"
	"github.com/fos-dev/fos/sandboxapi"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
	"github.com/fos-dev/fos/telemetry"
	"github.com/fos-dev/fos/worker"
	"github.com/fos-dev/fos/workflows"
)

// TestMain: the test binary is its own sandbox process, so the flows'
// transformations run in the process pool as in the service.
func TestMain(m *testing.M) {
	serveWorkerIfChild()
	sandbox.ServeIfChild()
	os.Setenv("FOS_SANDBOX_MEMORY_MB", "256")
	os.Exit(storetest.Run(m))
}

// The task queues, as in production: interactive work and bulk work
// (rate comparisons) each have their own worker.
const (
	taskQueue     = "fos-e2e"
	bulkTaskQueue = "fos-e2e-bulk"
	// inboundTaskQueue serves inbound platform webhooks (the relay starts
	// their runs there).
	inboundTaskQueue = "fos-e2e-inbound"
)

// dataConverter is every client's: payloads encrypted with the tests'
// fixed key, so the histories the tests record (FOS_UPDATE_HISTORY=1) hold
// no clear values and the replay tests can decode them.
var dataConverter = codectest.DataConverter()

// stack is the running service: real router, real worker, an in-process
// Temporal server, PostgreSQL and the sandbox platforms and carriers.
type stack struct {
	t        testing.TB
	api      *httptest.Server
	sandbox  *httptest.Server
	temporal client.Client
	store    *store.Store
	box      *secrets.Box
	boxKey   string // box's key, for a worker in its own process
	reg      *carriers.Registry
	// temporalAddr and namespace: where a worker in its own process
	// connects.
	temporalAddr, namespace string
	// platforms are the connectors the worker and the API use.
	platforms *platforms.Registry
}

// start runs the stack for a test or a benchmark; wrap may replace adapters
// of the carrier registry (e.g. carrierstest doubles).
func start(t testing.TB, wrap ...func(*carriers.Registry) *carriers.Registry) *stack {
	t.Helper()
	return startWith(t, nil, wrap...)
}

// startWith is start with the platform connectors given (nil: every type's
// real connector pointed at the sandbox's stores, as under FOS_SANDBOX=1).
func startWith(t testing.TB, plat *platforms.Registry, wrap ...func(*carriers.Registry) *carriers.Registry) *stack {
	t.Helper()
	return startTraced(t, nil, plat, wrap...)
}

// startTraced is startWith with tracing (nil: off) in the API, the
// Temporal client and workers, and the store's queries, as fos runs it.
func startTraced(t testing.TB, tr *telemetry.Tracing, plat *platforms.Registry, wrap ...func(*carriers.Registry) *carriers.Registry) *stack {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	st := storetest.New(t)
	if tr.Enabled() {
		traced, err := store.Open(ctx, storetest.URL(), store.WithQueryTracer(tr.QueryTracer()))
		require.NoError(t, err)
		t.Cleanup(traced.Close)
		st = traced
	}
	interceptors, err := tr.TemporalInterceptors()
	require.NoError(t, err)
	boxKey := secrets.NewKey()
	box, err := secrets.NewBox(boxKey)
	require.NoError(t, err)

	sb := httptest.NewServer(sandboxapi.NewHandler())
	t.Cleanup(sb.Close)
	reg := carriers.NewRegistry(carriers.Config{Sandbox: true, SandboxURL: sb.URL})
	for _, w := range wrap {
		reg = w(reg)
	}

	var ts *temporaltest.TestServer
	clientOpts := temporaltest.WithBaseClientOptions(client.Options{DataConverter: dataConverter, FailureConverter: codectest.FailureConverter(), Interceptors: interceptors})
	serverOpts := temporaltest.WithBaseServerOptions(temporal.WithDynamicConfigClient(devenv.DynamicConfig()))
	if tt, ok := t.(*testing.T); ok {
		ts = temporaltest.NewServer(temporaltest.WithT(tt), clientOpts, serverOpts)
	} else {
		ts = temporaltest.NewServer(clientOpts, serverOpts)
		t.Cleanup(ts.Stop)
	}
	c := ts.GetDefaultClient()
	require.NoError(t, worker.EnsureSearchAttributes(ctx, c, ts.GetDefaultNamespace()))
	// Idempotent.
	require.NoError(t, worker.EnsureSearchAttributes(ctx, c, ts.GetDefaultNamespace()))

	if plat == nil {
		// The client fos gives its connectors (connections kept for a
		// drainer's pushes in flight).
		plat = platforms.NewAPIRegistry(platforms.SandboxURLs(sb.URL), platforms.NewHTTPClient(30*time.Second), nil)
	}
	deps := worker.Deps{
		Store:     st,
		Secrets:   box,
		Platforms: plat,
		Carriers:  reg,
		Logger:    logger,
		// The reconciler restarts bulk work where the API starts it.
		BulkTaskQueue: bulkTaskQueue,
	}
	for _, q := range []string{taskQueue, bulkTaskQueue} {
		w := worker.New(c, q, deps)
		require.NoError(t, w.Start())
		t.Cleanup(w.Stop)
	}

	srv := httptest.NewServer(api.NewRouter(api.Deps{
		Store:             st,
		Logger:            logger,
		Tokens:            auth.Tokens{Secret: []byte("e2e-secret-e2e-secret-e2e-secret!"), TTL: time.Hour},
		Passwords:         auth.Passwords{Cost: bcrypt.MinCost},
		Secrets:           box,
		Carriers:          reg,
		Temporal:          c,
		TaskQueue:         taskQueue,
		BulkTaskQueue:     bulkTaskQueue,
		TemporalNamespace: ts.GetDefaultNamespace(),
		BaseURL:           "http://fos.test",
		Platforms:         plat,
		// As under fos dev: tenant URLs may name this machine (the test
		// servers listen on loopback).
		AllowPrivateURLs: true,
		Tracing:          tr,
	}))
	t.Cleanup(srv.Close)
	return &stack{t: t, api: srv, sandbox: sb, temporal: c, store: st, box: box, boxKey: boxKey, reg: reg, platforms: plat,
		temporalAddr: ts.GetFrontendHostPort(), namespace: ts.GetDefaultNamespace()}
}

// call sends a request to the API and decodes the JSON answer.
func (s *stack) call(token, org, method, path string, body any) (int, map[string]any) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		require.NoError(s.t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.api.URL+path, rd)
	require.NoError(s.t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if org != "" {
		req.Header.Set("X-Organization-Id", org)
	}
	resp, err := s.api.Client().Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	var out map[string]any
	require.NoError(s.t, json.Unmarshal(raw, &out), "%s %s answered %d %s", method, path, resp.StatusCode, raw)
	return resp.StatusCode, out
}

func (s *stack) mustCall(status int, token, method, path string, body any) map[string]any {
	s.t.Helper()
	code, out := s.call(token, "", method, path, body)
	require.Equal(s.t, status, code, "%s %s: %v", method, path, out)
	return out
}

func data(m map[string]any) map[string]any { d, _ := m["data"].(map[string]any); return d }

// waitForActivity polls the order's activities until one of type typ shows.
func (s *stack) waitForActivity(key, orderID, typ string, count int) []map[string]any {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		out := s.mustCall(200, key, "GET", "/api/v1/orders/"+orderID+"/activities", nil)
		var found []map[string]any
		for _, it := range out["data"].([]any) {
			if a := it.(map[string]any); a["type"] == typ {
				found = append(found, a)
			}
		}
		if len(found) >= count {
			return found
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no %s activity on order %s after 20s: %v", typ, orderID, out["data"])
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestOrderResyncEndToEnd(t *testing.T) {
	began := time.Now()
	s := start(t)
	t.Logf("stack up in %s", time.Since(began).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// A user with an organization, and an API key.
	mail := "e2e-" + uuid.NewString()[:8] + "@example.com"
	signup := data(s.mustCall(201, "", "POST", "/api/v1/auth/signup", map[string]any{
		"email": mail, "password": "correct horse", "first_name": "Ada", "last_name": "Lovelace", "organization_name": "E2E Shop",
	}))
	orgID := signup["organization"].(map[string]any)["id"].(string)
	code, out := s.call(signup["access_token"].(string), orgID, "POST", "/api/v1/api-keys", map[string]any{
		"name": "e2e", "scopes": []string{"bridges:read", "bridges:write", "orders:read", "orders:write"},
	})
	require.Equal(t, 201, code, "%v", out)
	key := data(out)["key"].(string)

	// A storefront_a bridge on the sandbox.
	shop := "e2e-" + uuid.NewString()[:8] + ".example.com"
	bridge := data(s.mustCall(201, key, "POST", "/api/v1/bridges", map[string]any{
		"type": "storefront_a", "name": "E2E Storefront",
		"config": map[string]any{"shopDomain": shop, "accessToken": "shpat_e2e"},
	}))
	bridgeID := bridge["id"].(string)

	// An order of the sandbox store, with deliberately different data.
	conn, err := s.platforms.Get(platforms.TypeStorefrontA)
	require.NoError(t, err)
	shopBridge := platforms.Bridge{Type: platforms.TypeStorefrontA, Config: map[string]any{"shopDomain": shop, "accessToken": "shpat_e2e"}}
	catalog, _, err := conn.ListOrders(ctx, shopBridge, time.Time{}, "")
	require.NoError(t, err)
	ext := catalog[4].ExternalID
	order := data(s.mustCall(201, key, "POST", "/api/v1/orders", map[string]any{
		"bridge_id":    bridgeID,
		"external_id":  ext,
		"order_number": "STALE-1",
		"status":       "on_hold",
		"customer":     map[string]any{"email": "stale@example.com", "firstName": "Stale", "lastName": "Copy"},
		"line_items": []map[string]any{{
			"sku": "STALE", "name": "Stale item", "quantity": 1, "unitPrice": 1, "totalPrice": 1, "requiresShipping": true, "taxable": true,
		}},
		"totals":   map[string]any{"subtotal": 1, "shipping": 0, "tax": 0, "discount": 0, "total": 1},
		"currency": "EUR",
	}))
	orderID := order["id"].(string)

	// What the platform holds.
	want, err := conn.FetchOrder(ctx, shopBridge, ext)
	require.NoError(t, err)

	// Resync: queued at once.
	queuedAt := time.Now()
	q := data(s.mustCall(202, key, "POST", "/api/v1/orders/"+orderID+"/resync", nil))
	require.Equal(t, orderID, q["id"])
	require.Equal(t, "queued", q["status"])
	require.NotEmpty(t, q["message"])
	wfID, runID := q["workflowId"].(string), q["runId"].(string)
	require.Equal(t, workflows.OrderResyncWorkflowID(orderID), wfID)

	syncs := s.waitForActivity(key, orderID, "sync", 1)
	t.Logf("sync activity visible %s after the request", time.Since(queuedAt).Round(time.Millisecond))
	require.Len(t, syncs, 1)
	act := syncs[0]
	require.Equal(t, "Re-synced from E2E Storefront", act["description"])
	require.Equal(t, "system", act["actor"].(map[string]any)["type"])
	md := act["metadata"].(map[string]any)
	require.Equal(t, bridgeID, md["bridgeId"])
	require.Equal(t, wfID, md["workflowId"])
	require.Subset(t, md["changedFields"], []any{"order_number", "status", "customer", "line_items", "totals", "currency"})
	require.Equal(t, "api_key", md["requestedBy"].(map[string]any)["type"])

	// The order now shows the platform's data.
	got := data(s.mustCall(200, key, "GET", "/api/v1/orders/"+orderID, nil))
	require.Equal(t, want.OrderNumber, got["orderNumber"])
	require.Equal(t, want.Status, got["status"])
	require.Equal(t, want.PaymentStatus, got["paymentStatus"])
	require.Equal(t, want.FulfillmentStatus, got["fulfillmentStatus"])
	require.Equal(t, want.Currency, got["currency"])
	requireJSONEqual(t, want.Customer, got["customer"])
	requireJSONEqual(t, want.LineItems, got["lineItems"])
	requireJSONEqual(t, want.Totals, got["totals"])
	requireJSONEqual(t, want.ShippingAddress, got["shippingAddress"])
	require.Equal(t, ext, got["externalId"])

	// The run completed, and carries the OrganizationId search attribute and
	// the order id memo.
	var res workflows.OrderResyncResult
	require.NoError(t, s.temporal.GetWorkflow(ctx, wfID, runID).Get(ctx, &res))
	require.Equal(t, orderID, res.OrderID)
	require.Equal(t, bridgeID, res.BridgeID)
	desc, err := s.temporal.DescribeWorkflowExecution(ctx, wfID, runID)
	require.NoError(t, err)
	info := desc.GetWorkflowExecutionInfo()
	require.Equal(t, workflows.OrderResyncWorkflowType, info.GetType().GetName())
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, info.GetStatus())
	var gotOrg, gotMemo string
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(info.GetSearchAttributes().GetIndexedFields()["OrganizationId"], &gotOrg))
	require.Equal(t, orgID, gotOrg)
	// The memo is a payload like any other: encrypted.
	require.Error(t, converter.GetDefaultDataConverter().FromPayload(info.GetMemo().GetFields()["orderId"], &gotMemo))
	require.NoError(t, dataConverter.FromPayload(info.GetMemo().GetFields()["orderId"], &gotMemo))
	require.Equal(t, orderID, gotMemo)
	writeHistory(t, ctx, s.temporal, wfID, runID, "order_resync_history.json")

	// A completed resync may run again: a new run, a second sync activity
	// that finds nothing to change.
	q2 := data(s.mustCall(202, key, "POST", "/api/v1/orders/"+orderID+"/resync", nil))
	require.Equal(t, wfID, q2["workflowId"])
	require.NotEqual(t, runID, q2["runId"])
	syncs = s.waitForActivity(key, orderID, "sync", 2)
	require.Empty(t, syncs[1]["metadata"].(map[string]any)["changedFields"])

	// An order the platform does not know: a sync_failed activity, a failed run.
	lost := data(s.mustCall(201, key, "POST", "/api/v1/orders", map[string]any{
		"bridge_id": bridgeID, "external_id": "999", "status": "pending",
		"customer": map[string]any{"email": "lost@example.com"},
		"line_items": []map[string]any{{
			"sku": "X", "name": "X", "quantity": 1, "unitPrice": 1, "totalPrice": 1, "requiresShipping": true, "taxable": true,
		}},
		"totals": map[string]any{"subtotal": 1, "shipping": 0, "tax": 0, "discount": 0, "total": 1},
	}))
	lostID := lost["id"].(string)
	q3 := data(s.mustCall(202, key, "POST", "/api/v1/orders/"+lostID+"/resync", nil))
	failed := s.waitForActivity(key, lostID, "sync_failed", 1)
	require.Contains(t, failed[0]["description"], "order 999 not found")
	err = s.temporal.GetWorkflow(ctx, q3["workflowId"].(string), q3["runId"].(string)).Get(ctx, nil)
	require.Error(t, err)
	writeHistory(t, ctx, s.temporal, q3["workflowId"].(string), q3["runId"].(string), "order_resync_failed_history.json")
	// The history holds the failure encoded; the reconciler reads it decoded.
	wr, err := activities.DescribeWaitingRun(ctx, s.temporal, q3["workflowId"].(string), time.Time{})
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, wr.Status)
	require.Contains(t, wr.Reason, "the workflow run failed: ")
	require.Contains(t, wr.Reason, "order 999 not found")
	t.Logf("end to end in %s", time.Since(began).Round(time.Millisecond))
}

// requireJSONEqual compares a Go value with a decoded JSON value.
func requireJSONEqual(t *testing.T, want any, got any) {
	t.Helper()
	wantRaw, err := json.Marshal(want)
	require.NoError(t, err)
	gotRaw, err := json.Marshal(got)
	require.NoError(t, err)
	require.JSONEq(t, string(wantRaw), string(gotRaw))
}

// writeHistory saves the run's history as a replay test fixture
// (workflows/testdata/<name>) when FOS_UPDATE_HISTORY=1.
func writeHistory(t testing.TB, ctx context.Context, c client.Client, wfID, runID, name string) {
	t.Helper()
	if os.Getenv("FOS_UPDATE_HISTORY") != "1" {
		return
	}
	var h historypb.History
	it := c.GetWorkflowHistory(ctx, wfID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		h.Events = append(h.Events, ev)
	}
	raw, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(&h)
	require.NoError(t, err)
	path := filepath.Join("..", "workflows", "testdata", name)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, append(raw, '\n'), 0o644))
	t.Logf("wrote %s", path)
}
