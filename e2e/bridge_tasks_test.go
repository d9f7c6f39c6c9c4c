package e2e

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/sandboxapi"
	"github.com/fos-dev/fos/workflows"
)

// waitClosed waits until the workflow's latest run has closed, whatever
// its outcome (a row a run writes in its last activity says "done" a
// moment before the run itself closes).
func (s *stack) waitClosed(workflowID string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), dispatchWait)
	defer cancel()
	_ = s.temporal.GetWorkflow(ctx, workflowID, "").Get(ctx, nil) // the outcome is asserted by the caller
	require.NoError(s.t, ctx.Err(), "workflow %s still open after %s", workflowID, dispatchWait)
}

// waitForExecution polls a task execution until it is completed or failed.
func (s *stack) waitForExecution(key, id string) map[string]any {
	s.t.Helper()
	deadline := time.Now().Add(dispatchWait) // a bound against a hang, not a speed check
	for {
		e := data(s.mustCall(200, key, "GET", "/api/v1/task-executions/"+id, nil))
		if st := e["status"]; st == "completed" || st == "failed" {
			return e
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("task execution %s still %v after %s", id, e["status"], dispatchWait)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestBridgeTasksEndToEnd(t *testing.T) {
	s := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	mail := "e2e-" + uuid.NewString()[:8] + "@example.com"
	signup := data(s.mustCall(201, "", "POST", "/api/v1/auth/signup", map[string]any{
		"email": mail, "password": "correct horse", "first_name": "Ada", "last_name": "Lovelace", "organization_name": "E2E Tasks",
	}))
	orgID := signup["organization"].(map[string]any)["id"].(string)
	code, out := s.call(signup["access_token"].(string), orgID, "POST", "/api/v1/api-keys", map[string]any{
		"name": "e2e", "scopes": []string{"bridges:read", "bridges:write", "orders:read", "locations:read", "locations:write"},
	})
	require.Equal(t, 201, code, "%v", out)
	key := data(out)["key"].(string)

	shop := "tasks-" + uuid.NewString()[:8] + ".example.com"
	bridge := data(s.mustCall(201, key, "POST", "/api/v1/bridges", map[string]any{
		"type": "storefront_a", "name": "Sandbox shop", "config": map[string]any{"shopDomain": shop, "accessToken": "shpat_e2e"},
	}))
	bridgeID := bridge["id"].(string)
	require.Nil(t, bridge["lastSyncAt"])

	// grab-orders imports the sandbox store's catalog.
	queued := data(s.mustCall(202, key, "POST", "/api/v1/bridges/"+bridgeID+"/tasks/grab-orders/run", nil))
	require.Equal(t, "queued", queued["status"])
	execID := queued["id"].(string)
	done := s.waitForExecution(key, execID)
	require.Equal(t, "completed", done["status"], "%v", done)
	n := sandboxapi.StoreOrderCount(shop)
	require.Equal(t, map[string]any{"fetched": float64(n), "created": float64(n), "updated": float64(0), "unchanged": float64(0), "failed": float64(0)}, done["output"])
	require.NotNil(t, done["startedAt"])
	require.NotNil(t, done["finishedAt"])

	orders := s.mustCall(200, key, "GET", "/api/v1/orders?bridge_id="+bridgeID+"&limit=100", nil)
	require.Equal(t, float64(n), orders["pagination"].(map[string]any)["total"])
	first := orders["data"].([]any)[0].(map[string]any)
	acts := s.waitForActivity(key, first["id"].(string), "sync", 1)
	require.Equal(t, "Imported from Sandbox shop", acts[0]["description"])
	require.NotNil(t, data(s.mustCall(200, key, "GET", "/api/v1/bridges/"+bridgeID, nil))["lastSyncAt"])

	// The run in Temporal: completed, under its stable id (the row is
	// written by the run's last activity, just before the run closes).
	s.waitClosed(workflows.BridgeTaskWorkflowID(execID))
	desc, err := s.temporal.DescribeWorkflowExecution(ctx, workflows.BridgeTaskWorkflowID(execID), "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, desc.GetWorkflowExecutionInfo().GetStatus())
	writeHistory(t, ctx, s.temporal, workflows.BridgeTaskWorkflowID(execID), desc.GetWorkflowExecutionInfo().GetExecution().GetRunId(), "bridge_task_history.json")
	// What an operator sees in the Temporal UI: what ran for which bridge,
	// by name, searchable by BridgeId and TaskName, nothing secret.
	ui := describeForUI(t, ctx, s.temporal, workflows.BridgeTaskWorkflowID(execID))
	require.Equal(t, `grab-orders of bridge "Sandbox shop" (storefront_a) — E2E Tasks`, ui.Summary)
	require.Contains(t, ui.Details, "bridgeId: "+bridgeID)
	require.Equal(t, bridgeID, ui.SearchAttributes["BridgeId"])
	require.Equal(t, "grab-orders", ui.SearchAttributes["TaskName"])
	require.Equal(t, orgID, ui.SearchAttributes["OrganizationId"])
	require.Equal(t, "E2E Tasks", ui.Memo["organization"])
	require.Equal(t, "Sandbox shop", ui.Memo["bridge"])
	for _, text := range []string{ui.Summary, ui.Details} {
		require.NotContains(t, text, "shpat_e2e")
	}

	// A second run starts at the high-water mark: nothing new is created.
	again := s.waitForExecution(key, data(s.mustCall(202, key, "POST", "/api/v1/bridges/"+bridgeID+"/tasks/grab-orders/run", nil))["id"].(string))
	require.Equal(t, "completed", again["status"], "%v", again)
	outAgain := again["output"].(map[string]any)
	require.Equal(t, float64(0), outAgain["created"])
	require.Equal(t, outAgain["fetched"], outAgain["unchanged"])
	require.Equal(t, float64(n), s.mustCall(200, key, "GET", "/api/v1/orders?bridge_id="+bridgeID, nil)["pagination"].(map[string]any)["total"])

	list := s.mustCall(200, key, "GET", "/api/v1/bridges/"+bridgeID+"/executions", nil)
	require.Len(t, list["data"].([]any), 2)
	require.Equal(t, again["id"], list["data"].([]any)[0].(map[string]any)["id"])

	// Warehouse sync: the locations when the connector lists them, else a
	// clear refusal.
	conn, err := s.platforms.Get(platforms.TypeStorefrontA)
	require.NoError(t, err)
	code, out = s.call(key, "", "POST", "/api/v1/locations/sync/"+bridgeID, nil)
	if _, ok := conn.(platforms.LocationLister); ok {
		require.Equal(t, http.StatusOK, code, "%v", out)
		require.NotEmpty(t, out["data"])
	} else {
		require.Equal(t, http.StatusBadGateway, code, "%v", out)
		require.Contains(t, out["error"].(map[string]any)["message"], "not supported by this bridge type")
	}

	// Credentials the platform refuses: the run fails and the bridge is in error.
	bad := data(s.mustCall(201, key, "POST", "/api/v1/bridges", map[string]any{
		"type": "storefront_a", "name": "Refused", "config": map[string]any{"shopDomain": shop, "accessToken": "sandbox-fail"},
	}))
	failed := s.waitForExecution(key, data(s.mustCall(202, key, "POST", "/api/v1/bridges/"+bad["id"].(string)+"/tasks/grab-orders/run", nil))["id"].(string))
	require.Equal(t, "failed", failed["status"])
	require.Contains(t, failed["error"], "refused its credentials")
	s.waitClosed(failed["workflowId"].(string))
	fdesc, err := s.temporal.DescribeWorkflowExecution(ctx, failed["workflowId"].(string), "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, fdesc.GetWorkflowExecutionInfo().GetStatus())
	writeHistory(t, ctx, s.temporal, failed["workflowId"].(string), fdesc.GetWorkflowExecutionInfo().GetExecution().GetRunId(), "bridge_task_failed_history.json")
	// The failure reads in the UI without the codec (not "Encoded failure").
	fui := describeForUI(t, ctx, s.temporal, failed["workflowId"].(string))
	require.Contains(t, fui.FailureMessage, `bridge "Refused" refused its credentials`)
	require.NotContains(t, fui.FailureMessage, "Encoded failure")
	inError := data(s.mustCall(200, key, "GET", "/api/v1/bridges/"+bad["id"].(string), nil))
	require.Equal(t, "error", inError["status"])
	require.Contains(t, inError["lastError"], "refused the bridge's credentials")
	// ... it refuses the next run, and reactivating it clears the reason.
	s.mustCall(409, key, "POST", "/api/v1/bridges/"+bad["id"].(string)+"/tasks/grab-orders/run", nil)
	back := data(s.mustCall(200, key, "PATCH", "/api/v1/bridges/"+bad["id"].(string), map[string]any{"status": "active"}))
	require.Equal(t, "active", back["status"])
	require.Nil(t, back["lastError"])
}

// hubStack is the stack with shipping_hub_a's own connector pointed at the
// sandbox's hub store (every capability: orders, shipments, warehouses,
// mark-as-shipped), counting its HTTP requests.
func hubStack(t testing.TB) (*stack, *atomic.Int64) {
	t.Helper()
	reg := platforms.NewRegistry()
	s := startWith(t, reg)
	var calls atomic.Int64
	hc := *s.sandbox.Client()
	hc.Transport = countingTransport{next: s.sandbox.Client().Transport, n: &calls}
	reg.Register(platforms.TypeShippingHubA, platforms.NewShippingHubA(s.sandbox.URL+"/platforms/shipping_hub_a", &hc))
	return s, &calls
}

type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// taskAccount signs up an organization and returns an API key for it.
func (s *stack) taskAccount() (orgID, key string) {
	s.t.Helper()
	signup := data(s.mustCall(201, "", "POST", "/api/v1/auth/signup", map[string]any{
		"email": "e2e-" + uuid.NewString()[:8] + "@example.com", "password": "correct horse", "first_name": "Ada", "last_name": "Lovelace", "organization_name": "E2E Hub",
	}))
	orgID = signup["organization"].(map[string]any)["id"].(string)
	code, out := s.call(signup["access_token"].(string), orgID, "POST", "/api/v1/api-keys", map[string]any{
		"name": "e2e", "scopes": []string{"bridges:read", "bridges:write", "orders:read", "locations:read", "locations:write"},
	})
	require.Equal(s.t, 201, code, "%v", out)
	return orgID, data(out)["key"].(string)
}

func (s *stack) runTask(key, bridgeID, task string) map[string]any {
	s.t.Helper()
	return s.waitForExecution(key, data(s.mustCall(202, key, "POST", "/api/v1/bridges/"+bridgeID+"/tasks/"+task+"/run", nil))["id"].(string))
}

func TestBridgeTasksShippingHubEndToEnd(t *testing.T) {
	s, _ := hubStack(t)
	ctx := context.Background()
	orgID, key := s.taskAccount()
	apiKey := "hub-" + uuid.NewString()[:8]
	bridgeID := data(s.mustCall(201, key, "POST", "/api/v1/bridges", map[string]any{
		"type": "shipping_hub_a", "name": "Hub", "config": map[string]any{"apiKey": apiKey, "apiSecret": "secret"},
	}))["id"].(string)

	n := float64(sandboxapi.StoreOrderCount(apiKey))
	orders := s.runTask(key, bridgeID, "grab-orders")
	require.Equal(t, "completed", orders["status"], "%v", orders)
	require.Equal(t, n, orders["output"].(map[string]any)["created"], "%v", orders["output"])
	require.Equal(t, n, s.mustCall(200, key, "GET", "/api/v1/orders?bridge_id="+bridgeID, nil)["pagination"].(map[string]any)["total"])

	// The hub's labels, attached to the imported orders.
	ships := s.runTask(key, bridgeID, "grab-shipments")
	require.Equal(t, "completed", ships["status"], "%v", ships)
	created := ships["output"].(map[string]any)["created"].(float64)
	require.Positive(t, created)
	var attached int
	require.NoError(t, s.store.Pool.QueryRow(ctx, `SELECT count(*) FROM shipments WHERE bridge_id = $1 AND external_id IS NOT NULL AND order_id IS NOT NULL`, bridgeID).Scan(&attached))
	require.Equal(t, int(created), attached)

	// Warehouses become the organization's locations.
	code, out := s.call(key, "", "POST", "/api/v1/locations/sync/"+bridgeID, nil)
	require.Equal(t, http.StatusOK, code, "%v", out)
	locs := out["data"].([]any)
	require.NotEmpty(t, locs)
	require.Equal(t, bridgeID, locs[0].(map[string]any)["bridgeId"])
	require.NotEmpty(t, locs[0].(map[string]any)["externalId"])

	// A shipment the service made for an unshipped order goes to the hub once.
	var orderID, orderExt string
	require.NoError(t, s.store.Pool.QueryRow(ctx, `SELECT id, external_id FROM orders WHERE bridge_id = $1 AND status IN ('pending', 'confirmed', 'processing', 'on_hold')
		AND NOT EXISTS (SELECT 1 FROM shipments s WHERE s.order_id = orders.id) ORDER BY external_id LIMIT 1`, bridgeID).Scan(&orderID, &orderExt))
	_, err := s.store.Pool.Exec(ctx, `INSERT INTO shipments (id, organization_id, order_id, bridge_id, carrier, service, status, tracking_number, ship_date)
		VALUES ($1, $2, $3, $4, 'carrier_a', 'ground', 'label_created', '1ZE2E0000001', current_date)`, uuid.New(), orgID, orderID, bridgeID)
	require.NoError(t, err)
	push := s.runTask(key, bridgeID, "push-fulfillment")
	require.Equal(t, "completed", push["status"], "%v", push)
	require.Equal(t, float64(1), push["output"].(map[string]any)["pushed"], "%v", push["output"])
	order := data(s.mustCall(200, key, "GET", "/api/v1/orders/"+orderID, nil))
	require.NotNil(t, order["sentToFulfillment"], "%v", order)
	again := s.runTask(key, bridgeID, "push-fulfillment")
	require.Equal(t, map[string]any{"pushed": float64(0), "updated": float64(0), "alreadyThere": float64(0), "refused": float64(0), "problems": []any{}}, again["output"])
}

// A rate-limited hub (every other call a 429 with X-Rate-Limit-Reset) still
// imports everything: the connector or the page's retry waits as asked.
func TestBridgeTaskRateLimitedHub(t *testing.T) {
	s, calls := hubStack(t)
	_, key := s.taskAccount()
	bridgeID := data(s.mustCall(201, key, "POST", "/api/v1/bridges", map[string]any{
		"type": "shipping_hub_a", "name": "Busy hub", "config": map[string]any{"apiKey": "sandbox-ratelimit", "apiSecret": "secret"},
	}))["id"].(string)
	done := s.runTask(key, bridgeID, "grab-orders")
	require.Equal(t, "completed", done["status"], "%v", done)
	require.Equal(t, float64(sandboxapi.StoreOrderCount("sandbox-ratelimit")), done["output"].(map[string]any)["created"])
	require.Greater(t, calls.Load(), int64(1))
}

// BenchmarkGrabOrdersSandbox10k imports a 10,000-order sandbox hub store
// through the whole service: POST .../tasks/grab-orders/run, the BridgeTask
// workflow on the in-process Temporal, shipping_hub_a's connector over HTTP
// to the sandbox, PostgreSQL. It reports the platform requests per import.
func BenchmarkGrabOrdersSandbox10k(b *testing.B) {
	s, calls := hubStack(b)
	_, key := s.taskAccount()
	for b.Loop() {
		b.StopTimer()
		bridgeID := data(s.mustCall(201, key, "POST", "/api/v1/bridges", map[string]any{
			"type": "shipping_hub_a", "name": "Bulk", "config": map[string]any{"apiKey": "bulk-10000", "apiSecret": "secret"},
		}))["id"].(string)
		calls.Store(0)
		b.StartTimer()
		done := s.runTask(key, bridgeID, "grab-orders")
		b.StopTimer()
		if done["status"] != "completed" || done["output"].(map[string]any)["created"] != float64(10000) {
			b.Fatalf("import: %v", done)
		}
		b.ReportMetric(float64(calls.Load()), "requests/import")
		b.StartTimer()
	}
}

// Imported orders go through the order-created hook as the API's create
// does: an active split rule splits new orders, and a second import (no
// new orders) splits nothing more.
func TestGrabOrdersRunsSplitRules(t *testing.T) {
	s := start(t)
	signup := data(s.mustCall(201, "", "POST", "/api/v1/auth/signup", map[string]any{
		"email": "e2e-" + uuid.NewString()[:8] + "@example.com", "password": "correct horse", "first_name": "Ada", "last_name": "Lovelace", "organization_name": "E2E Split",
	}))
	orgID := signup["organization"].(map[string]any)["id"].(string)
	code, out := s.call(signup["access_token"].(string), orgID, "POST", "/api/v1/api-keys", map[string]any{
		"name": "e2e", "scopes": []string{"bridges:read", "bridges:write", "orders:read", "dispatchers:read", "dispatchers:write"},
	})
	require.Equal(t, 201, code, "%v", out)
	key := data(out)["key"].(string)
	bridgeID := data(s.mustCall(201, key, "POST", "/api/v1/bridges", map[string]any{
		"type": "storefront_a", "name": "Split shop", "config": map[string]any{"shopDomain": "split-" + uuid.NewString()[:8] + ".example.com", "accessToken": "shpat_e2e"},
	}))["id"].(string)
	rule := data(s.mustCall(201, key, "POST", "/api/v1/split-rules", map[string]any{
		"name": "By SKU", "method": "field_group", "groupField": "lineItems[].sku", "bridgeId": bridgeID,
	}))

	first := s.runTask(key, bridgeID, "grab-orders")
	require.Equal(t, "completed", first["status"], "%v", first)
	split := data(s.mustCall(200, key, "GET", "/api/v1/split-rules/"+rule["id"].(string), nil))["ordersSplit"].(float64)
	require.Positive(t, split, "the sandbox catalog has orders of several SKUs")

	again := s.runTask(key, bridgeID, "grab-orders")
	require.Equal(t, "completed", again["status"], "%v", again)
	require.Equal(t, float64(0), again["output"].(map[string]any)["created"], "%v", again["output"])
	require.Equal(t, split, data(s.mustCall(200, key, "GET", "/api/v1/split-rules/"+rule["id"].(string), nil))["ordersSplit"])
}
