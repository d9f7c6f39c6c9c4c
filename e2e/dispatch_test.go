package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/rules"
)

// dispatchAccount signs up an organization with a sandbox storefront_a
// bridge, a sandbox shipping_hub_a bridge and a dispatcher sending orders
// of the shop with a total over 100 to the hub.
func (s *stack) dispatchAccount() (key, shop, hub, hubKey, dispatcher string) {
	s.t.Helper()
	signup := data(s.mustCall(201, "", "POST", "/api/v1/auth/signup", map[string]any{
		"email": "e2e-" + uuid.NewString()[:8] + "@example.com", "password": "correct horse", "first_name": "Ada", "last_name": "Lovelace", "organization_name": "E2E Dispatch",
	}))
	orgID := signup["organization"].(map[string]any)["id"].(string)
	code, out := s.call(signup["access_token"].(string), orgID, "POST", "/api/v1/api-keys", map[string]any{
		"name": "e2e", "scopes": []string{"bridges:read", "bridges:write", "orders:read", "orders:write", "dispatchers:read", "dispatchers:write"},
	})
	require.Equal(s.t, 201, code, "%v", out)
	key = data(out)["key"].(string)
	shop = data(s.mustCall(201, key, "POST", "/api/v1/bridges", map[string]any{
		"type": "storefront_a", "name": "Shop", "config": map[string]any{"shopDomain": "disp-" + uuid.NewString()[:8] + ".example.com", "accessToken": "shpat_e2e"},
	}))["id"].(string)
	hubKey = "disp-" + uuid.NewString()[:8]
	hub = data(s.mustCall(201, key, "POST", "/api/v1/bridges", map[string]any{
		// The sandbox hub takes more than the real one's 40 requests a
		// minute, which the drainer honours by default.
		"type": "shipping_hub_a", "name": "Hub", "config": map[string]any{"apiKey": hubKey, "apiSecret": "secret", "dispatchRatePerSecond": 1000},
	}))["id"].(string)
	dispatcher = data(s.mustCall(201, key, "POST", "/api/v1/dispatchers", map[string]any{
		"name": "Big to hub", "sourceBridgeIds": []any{shop}, "destinationBridgeId": hub,
		"conditions": []any{map[string]any{"field": "totals.total", "operator": "greater_than", "value": 100}},
	}))["id"].(string)
	return key, shop, hub, hubKey, dispatcher
}

func dispatchOrderBody(bridge, ext string, total float64) map[string]any {
	return map[string]any{
		"bridge_id": bridge, "external_id": ext, "order_number": "#" + ext, "status": "confirmed",
		"customer":         map[string]any{"email": "jane@example.com", "firstName": "Jane", "lastName": "Doe"},
		"shipping_address": map[string]any{"name": "Jane Doe", "address1": "1 Main St", "city": "Austin", "provinceCode": "TX", "zip": "78701", "countryCode": "US"},
		"line_items":       []any{map[string]any{"sku": "SKU-" + ext, "name": "Thing", "quantity": 1, "unitPrice": total, "totalPrice": total, "requiresShipping": true, "taxable": true}},
		"totals":           map[string]any{"subtotal": total, "shipping": 0, "tax": 0, "discount": 0, "total": total},
	}
}

// waitAssignments polls until no assignment of the dispatcher is pending
// or processing and returns them.
// dispatchWait is how long a test polls for assignments to finish: a bound
// against a hang, not a speed check (the runs take well under a second
// alone, tens of seconds on a loaded machine).
const dispatchWait = 90 * time.Second

func (s *stack) waitAssignments(key, dispatcher string, want int, timeout time.Duration) []map[string]any {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var all []map[string]any
		busy := false
		for page := 1; ; page++ {
			out := s.mustCall(200, key, "GET", fmt.Sprintf("/api/v1/dispatchers/%s/assignments?limit=100&page=%d", dispatcher, page), nil)
			items := out["data"].([]any)
			for _, it := range items {
				a := it.(map[string]any)
				all = append(all, a)
				busy = busy || a["status"] == "pending" || a["status"] == "processing"
			}
			if len(items) < 100 {
				break
			}
		}
		if len(all) >= want && !busy {
			return all
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("assignments of %s not done after %s: %d of %d, busy %v", dispatcher, timeout, len(all), want, busy)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A dispatcher from the sandbox storefront to the sandbox hub sends the
// orders over its total (created through the API or imported by
// grab-orders) to the hub, where the hub connector sees them, and leaves
// the others. A retried push updates the hub's order, never duplicates it.
func TestDispatchToHubEndToEnd(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	key, shop, hub, hubKey, disp := s.dispatchAccount()
	hubConn := platforms.NewShippingHubA(s.sandbox.URL+"/platforms/shipping_hub_a", s.sandbox.Client())
	hubBridge := platforms.Bridge{Type: platforms.TypeShippingHubA, Config: map[string]any{"apiKey": hubKey, "apiSecret": "secret"}}

	big := data(s.mustCall(201, key, "POST", "/api/v1/orders", dispatchOrderBody(shop, "D-BIG", 250)))["id"].(string)
	small := data(s.mustCall(201, key, "POST", "/api/v1/orders", dispatchOrderBody(shop, "D-SMALL", 20)))["id"].(string)
	as := s.waitAssignments(key, disp, 1, dispatchWait)
	require.Len(t, as, 1)
	a := as[0]
	require.Equal(t, big, a["orderId"])
	require.Equal(t, "completed", a["status"], "%v", a)
	require.Equal(t, hub, a["destinationBridgeId"])
	require.NotNil(t, a["taskExecutionId"], "the push is a task execution of the hub bridge")
	require.NotNil(t, a["processedAt"])
	md := a["metadata"].(map[string]any)
	require.Equal(t, "order_created", md["trigger"])
	ext := md["externalOrderId"].(string)

	order := data(s.mustCall(200, key, "GET", "/api/v1/orders/"+big+"?include=dispatch_assignments", nil))
	require.NotNil(t, order["sentToFulfillment"])
	require.Nil(t, order["sentToCart"])
	require.Len(t, order["dispatchAssignments"], 1)
	other := data(s.mustCall(200, key, "GET", "/api/v1/orders/"+small+"?include=dispatch_assignments", nil))
	require.Nil(t, other["sentToFulfillment"])
	require.Equal(t, []any{}, other["dispatchAssignments"])

	onHub, err := hubConn.FetchOrder(ctx, hubBridge, ext)
	require.NoError(t, err)
	require.Equal(t, "#D-BIG", onHub.OrderNumber)
	require.InDelta(t, 250, onHub.Totals.Total, 0.001)
	exec := data(s.mustCall(200, key, "GET", "/api/v1/task-executions/"+a["taskExecutionId"].(string), nil))
	require.Equal(t, "completed", exec["status"], "%v", exec)

	// Retry after a failure: pushed again, the same hub order updated.
	_, err = s.store.Pool.Exec(ctx, `UPDATE dispatch_assignments SET status = 'failed', retry_count = 2 WHERE id = $1`, a["id"])
	require.NoError(t, err)
	require.Equal(t, float64(1), data(s.mustCall(200, key, "POST", "/api/v1/dispatchers/assignments/retry", map[string]any{"assignmentIds": []any{a["id"]}}))["reset"])
	again := s.waitAssignments(key, disp, 1, dispatchWait)[0]
	require.Equal(t, "completed", again["status"], "%v", again)
	require.EqualValues(t, 0, again["retryCount"])
	require.Equal(t, ext, again["metadata"].(map[string]any)["externalOrderId"], "the hub updated its order")
	// One explicit retry is its own DispatchAssignment run.
	single := s.temporal.GetWorkflow(ctx, rules.DispatchWorkflowID(uuid.MustParse(a["id"].(string))), "")
	require.NoError(t, single.Get(ctx, nil))
	writeHistory(t, ctx, s.temporal, single.GetID(), single.GetRunID(), "dispatch_assignment_history.json")
	var hubTotal int
	for cursor := ""; ; {
		page, next, err := hubConn.ListOrders(ctx, hubBridge, time.Time{}, cursor)
		require.NoError(t, err)
		for _, o := range page {
			if o.OrderNumber == "#D-BIG" {
				hubTotal++
			}
		}
		if next == "" {
			break
		}
		cursor = next
	}
	require.Equal(t, 1, hubTotal, "one hub order for the order")

	// Imported orders: the same dispatcher routes those over 100.
	imported := s.runTask(key, shop, "grab-orders")
	require.Equal(t, "completed", imported["status"], "%v", imported)
	var over, total int
	require.NoError(t, s.store.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE total > 100), count(*) FROM orders WHERE bridge_id = $1 AND external_id NOT LIKE 'D-%'`, shop).Scan(&over, &total))
	require.Positive(t, over)
	require.Less(t, over, total, "the catalog has orders on both sides of 100")
	as = s.waitAssignments(key, disp, over+1, dispatchWait)
	require.Len(t, as, over+1)
	skipped := 0
	for _, a := range as {
		if a["status"] == "skipped" {
			require.Equal(t, "the order is cancelled", a["errorMessage"], "%v", a)
			skipped++
			continue
		}
		require.Equal(t, "completed", a["status"], "%v", a)
	}
	var cancelled, unsent int
	require.NoError(t, s.store.Pool.QueryRow(ctx, `SELECT count(*) FROM orders WHERE bridge_id = $1 AND total > 100 AND status = 'cancelled'`, shop).Scan(&cancelled))
	require.Equal(t, cancelled, skipped, "cancelled orders are skipped")
	require.NoError(t, s.store.Pool.QueryRow(ctx, `SELECT count(*) FROM orders WHERE bridge_id = $1 AND total > 100 AND status <> 'cancelled' AND sent_to_fulfillment IS NULL`, shop).Scan(&unsent))
	require.Zero(t, unsent)
	require.NoError(t, s.store.Pool.QueryRow(ctx, `SELECT count(*) FROM orders WHERE bridge_id = $1 AND total <= 100 AND sent_to_fulfillment IS NOT NULL`, shop).Scan(&unsent))
	require.Zero(t, unsent)
	require.EqualValues(t, over+1, data(s.mustCall(200, key, "GET", "/api/v1/dispatchers/"+disp, nil))["ordersAssigned"])

	// Manual evaluate from the hub: to the storefront (an order created in
	// the shop, sentToCart), and to a type that cannot accept orders (the
	// assignment fails with the reason).
	back := data(s.mustCall(201, key, "POST", "/api/v1/dispatchers", map[string]any{
		"name": "Back to shop", "sourceBridgeIds": []any{hub}, "destinationBridgeId": shop, "triggerOn": []any{"manual"},
		"conditions": []any{map[string]any{"field": "status", "operator": "exists"}},
	}))["id"].(string)
	shopB := data(s.mustCall(201, key, "POST", "/api/v1/bridges", map[string]any{
		"type": "storefront_b", "name": "Shop B", "config": map[string]any{"storeUrl": "https://shop-b.example.com", "consumerKey": "ck_e2e", "consumerSecret": "cs_e2e"},
	}))["id"].(string)
	toB := data(s.mustCall(201, key, "POST", "/api/v1/dispatchers", map[string]any{
		"name": "To shop B", "sourceBridgeIds": []any{hub}, "destinationBridgeId": shopB, "triggerOn": []any{"manual"},
		"conditions": []any{map[string]any{"field": "status", "operator": "exists"}},
	}))["id"].(string)
	hubOrder := data(s.mustCall(201, key, "POST", "/api/v1/orders", dispatchOrderBody(hub, "H-1", 5)))["id"].(string)
	require.Empty(t, s.waitAssignments(key, back, 0, time.Second), "manual only: nothing on create")
	ev := data(s.mustCall(200, key, "POST", "/api/v1/dispatchers/evaluate/"+hubOrder, nil))
	require.Equal(t, float64(2), ev["assignmentsCreated"])
	toShop := s.waitAssignments(key, back, 1, dispatchWait)[0]
	require.Equal(t, "completed", toShop["status"], "%v", toShop)
	require.Equal(t, "manual", toShop["metadata"].(map[string]any)["trigger"])
	cart := data(s.mustCall(200, key, "GET", "/api/v1/orders/"+hubOrder, nil))
	require.NotNil(t, cart["sentToCart"])
	sfa := platforms.NewStorefrontA(s.sandbox.URL+"/platforms/storefront_a", s.sandbox.Client())
	shopDomain := data(s.mustCall(200, key, "GET", "/api/v1/bridges/"+shop, nil))["config"].(map[string]any)["shopDomain"].(string)
	inShop, err := sfa.FetchOrder(ctx, platforms.Bridge{Type: platforms.TypeStorefrontA, Config: map[string]any{"shopDomain": shopDomain, "accessToken": "shpat_e2e"}},
		toShop["metadata"].(map[string]any)["externalOrderId"].(string))
	require.NoError(t, err)
	require.Contains(t, inShop.Tags, "fos-"+hubOrder)
	failed := s.waitAssignments(key, toB, 1, dispatchWait)[0]
	require.Equal(t, "failed", failed["status"])
	require.Contains(t, failed["errorMessage"], "cannot accept orders")
}

// BenchmarkDispatchToHub measures dispatch throughput: 200 orders bulk
// assigned to the sandbox hub, through the DispatchAssignment workflows on
// the bulk queue, the hub's createorder and the recorded outcome.
func BenchmarkDispatchToHub(b *testing.B) {
	s := start(b)
	key, shop, _, _, disp := s.dispatchAccount()
	const n = 200
	var done int
	var elapsed time.Duration
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		ids := make([]any, n)
		for j := range ids {
			ids[j] = data(s.mustCall(201, key, "POST", "/api/v1/orders", dispatchOrderBody(shop, fmt.Sprintf("B%d-%d", i, j), 5)))["id"]
		}
		before := done
		b.StartTimer()
		t0 := time.Now()
		res := data(s.mustCall(200, key, "POST", "/api/v1/dispatchers/"+disp+"/assign", map[string]any{"orderIds": ids}))
		if res["assigned"] != float64(n) {
			b.Fatalf("assign: %v", res)
		}
		as := s.waitAssignments(key, disp, before+n, 5*time.Minute)
		elapsed += time.Since(t0)
		b.StopTimer()
		for _, a := range as {
			if a["status"] != "completed" {
				b.Fatalf("assignment: %v", a)
			}
		}
		done += n
		b.StartTimer()
	}
	b.ReportMetric(float64(done)/elapsed.Seconds(), "assignments/s")
}
