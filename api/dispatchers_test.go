package api

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func dispTestCreate(t testing.TB, e *testEnv, c caller, body map[string]any) map[string]any {
	t.Helper()
	res := e.do(c, "POST", "/api/v1/dispatchers", body)
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	return res.data()
}

// dispTestTotal is a dispatcher body routing orders over a total.
func dispTestTotal(name, src, dst string, over float64) map[string]any {
	return map[string]any{"name": name, "sourceBridgeIds": []any{src}, "destinationBridgeId": dst,
		"conditions": []any{map[string]any{"field": "totals.total", "operator": "greater_than", "value": over}}}
}

func TestDispatcherEndpoints(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	other := e.signup()
	key := e.apiKey(owner, "dispatchers:read", "dispatchers:write", "orders:read")
	readOnly := e.apiKey(owner, "dispatchers:read")
	shop := orderTestBridge(t, e, owner.org, "Shop")
	hub := orderTestBridge(t, e, owner.org, "Hub")
	foreignBridge := orderTestBridge(t, e, other.org, "Theirs")
	foreignSet := csTestCreate(t, e, other.caller, "Theirs", "string")["id"].(string)
	set := csTestCreate(t, e, owner.caller, "VIP", "string")["id"].(string)

	// Validation names every field.
	require.ElementsMatch(t, []string{"name", "sourceBridgeIds", "destinationBridgeId", "conditions"},
		orderTestFields(t, e.do(key, "POST", "/api/v1/dispatchers", map[string]any{})))
	require.ElementsMatch(t, []string{"sourceBridgeIds", "priority", "matchMode", "triggerOn[0]", "conditions[0].operator", "isActive"},
		orderTestFields(t, e.do(key, "POST", "/api/v1/dispatchers", map[string]any{
			"name": "x", "sourceBridgeIds": []any{}, "destinationBridgeId": hub, "priority": 1001, "matchMode": "some",
			"triggerOn": []any{"never"}, "isActive": "yes", "conditions": []any{map[string]any{"field": "a", "operator": "like", "value": 1}},
		})))
	long := make([]byte, 201)
	for i := range long {
		long[i] = 'a'
	}
	require.Equal(t, []string{"conditions[0].field"}, orderTestFields(t, e.do(key, "POST", "/api/v1/dispatchers", map[string]any{
		"name": "x", "sourceBridgeIds": []any{shop}, "destinationBridgeId": hub,
		"conditions": []any{map[string]any{"field": string(long), "operator": "exists"}},
	})), "field path over 200 characters")
	many := make([]any, 51)
	for i := range many {
		many[i] = map[string]any{"field": "status", "operator": "exists"}
	}
	require.Equal(t, []string{"conditions"}, orderTestFields(t, e.do(key, "POST", "/api/v1/dispatchers", map[string]any{
		"name": "x", "sourceBridgeIds": []any{shop}, "destinationBridgeId": hub, "conditions": many})))
	require.Equal(t, []string{"destinationBridgeId"}, orderTestFields(t, e.do(key, "POST", "/api/v1/dispatchers", dispTestTotal("x", shop, shop, 1))), "source = destination")
	require.Equal(t, []string{"destinationBridgeId"}, orderTestFields(t, e.do(key, "POST", "/api/v1/dispatchers", dispTestTotal("x", shop, foreignBridge, 1))))
	require.Equal(t, []string{"sourceBridgeIds"}, orderTestFields(t, e.do(key, "POST", "/api/v1/dispatchers", dispTestTotal("x", foreignBridge, hub, 1))))
	require.Equal(t, []string{"conditions[1].setId"}, orderTestFields(t, e.do(key, "POST", "/api/v1/dispatchers", map[string]any{
		"name": "x", "sourceBridgeIds": []any{shop}, "destinationBridgeId": hub, "conditions": []any{
			map[string]any{"field": "status", "operator": "exists"},
			map[string]any{"field": "customer.email", "operator": "in_set", "setId": foreignSet},
		}})), "another organization's set")
	requireError(t, e.do(readOnly, "POST", "/api/v1/dispatchers", dispTestTotal("x", shop, hub, 1)), 403, "insufficient_scope")

	// Create with defaults.
	big := dispTestCreate(t, e, key, dispTestTotal("Big orders", shop, hub, 100))
	require.Equal(t, orderTestSorted("id", "organizationId", "name", "description", "sourceBridgeIds", "destinationBridgeId", "destinationConfig",
		"conditions", "matchMode", "triggerOn", "isActive", "priority", "ordersAssigned", "lastAssignedAt", "createdAt", "updatedAt"), orderTestKeys(big))
	require.Equal(t, "all", big["matchMode"])
	require.Equal(t, []any{"order_created"}, big["triggerOn"])
	require.Equal(t, true, big["isActive"])
	require.Equal(t, map[string]any{}, big["destinationConfig"])
	require.EqualValues(t, 0, big["ordersAssigned"])
	requireError(t, e.do(key, "POST", "/api/v1/dispatchers", dispTestTotal("Big orders", shop, hub, 1)), 409, "conflict")
	vip := dispTestCreate(t, e, key, map[string]any{"name": "VIP", "sourceBridgeIds": []any{shop}, "destinationBridgeId": hub, "priority": 5,
		"triggerOn": []any{"manual"}, "conditions": []any{map[string]any{"field": "customer.email", "operator": "in_set", "setId": set}}})
	another := dispTestCreate(t, e, key, map[string]any{"name": "Another", "sourceBridgeIds": []any{hub}, "destinationBridgeId": shop, "priority": 5, "isActive": false,
		"conditions": []any{map[string]any{"field": "status", "operator": "exists"}}})
	// Part 2's simple condition is {field, operator, value}: exists shows value null; a set condition shows setId.
	require.Equal(t, []any{map[string]any{"field": "status", "operator": "exists", "value": nil}}, another["conditions"])
	require.Equal(t, []any{map[string]any{"field": "customer.email", "operator": "in_set", "setId": set}}, vip["conditions"])
	// A row stored in the earlier shape (no value key) answers in this one.
	_, err := e.deps.Store.Pool.Exec(t.Context(), `UPDATE dispatchers SET conditions = '[{"field": "status", "operator": "exists"}]' WHERE id = $1`, another["id"])
	require.NoError(t, err)
	res := e.do(readOnly, "GET", "/api/v1/dispatchers/"+another["id"].(string), nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, []any{map[string]any{"field": "status", "operator": "exists", "value": nil}}, res.data()["conditions"])

	// The set is referenced: its delete is 409.
	requireError(t, e.do(owner.caller, "DELETE", "/api/v1/condition-sets/"+set, nil), 409, "conflict")

	names := func(path string) []string {
		res := e.do(readOnly, "GET", path, nil)
		require.Equal(t, 200, res.Code, "%s", res.Raw)
		var out []string
		for _, it := range res.list() {
			out = append(out, it["name"].(string))
		}
		return out
	}
	require.Equal(t, []string{"Another", "VIP", "Big orders"}, names("/api/v1/dispatchers"))
	require.Equal(t, []string{"VIP", "Big orders"}, names("/api/v1/dispatchers?sourceBridgeId="+shop))
	require.Equal(t, []string{"Another"}, names("/api/v1/dispatchers?destinationBridgeId="+shop))
	require.Equal(t, []string{"Another"}, names("/api/v1/dispatchers?isActive=false"))
	require.Equal(t, []string{"isActive"}, orderTestFields(t, e.do(readOnly, "GET", "/api/v1/dispatchers?isActive=maybe", nil)))

	// Patch.
	vp := "/api/v1/dispatchers/" + vip["id"].(string)
	require.Equal(t, []string{"destinationBridgeId"}, orderTestFields(t, e.do(key, "PATCH", vp, map[string]any{"sourceBridgeIds": []any{hub}})))
	up := e.do(key, "PATCH", vp, map[string]any{"priority": 7, "matchMode": "any", "description": "vips", "destinationConfig": map[string]any{"warehouse": "A"},
		"destinationBridgeId": uuid.NewString()}) // not a PATCH field: ignored
	require.Equal(t, 200, up.Code, "%s", up.Raw)
	require.Equal(t, vip["destinationBridgeId"], up.data()["destinationBridgeId"])
	require.Equal(t, 200, up.Code, "%s", up.Raw)
	require.EqualValues(t, 7, up.data()["priority"])
	require.Equal(t, "any", up.data()["matchMode"])
	require.Equal(t, map[string]any{"warehouse": "A"}, up.data()["destinationConfig"])
	require.Equal(t, "VIP", up.data()["name"])
	requireError(t, e.do(key, "PATCH", vp, map[string]any{"name": "Big orders"}), 409, "conflict")

	// Orders: order_created runs Big orders (not VIP: manual only).
	mk := func(c caller, bridge, ext string, total float64) string {
		body := orderTestBody(bridge, ext)
		body["totals"] = map[string]any{"subtotal": total, "shipping": 0, "tax": 0, "discount": 0, "total": total}
		return orderTestCreate(t, e, c, body)["id"].(string)
	}
	cheap, pricey := mk(owner.caller, shop, "C-1", 20), mk(owner.caller, shop, "C-2", 500)
	bp := "/api/v1/dispatchers/" + big["id"].(string)
	list := e.do(readOnly, "GET", bp+"/assignments", nil)
	require.Equal(t, 200, list.Code, "%s", list.Raw)
	require.Len(t, list.list(), 1)
	a := list.list()[0]
	require.Equal(t, pricey, a["orderId"])
	require.Equal(t, "pending", a["status"], "no Temporal here: it waits for process")
	require.Equal(t, map[string]any{"trigger": "order_created"}, a["metadata"])
	require.Equal(t, orderTestSorted("id", "organizationId", "dispatcherId", "orderId", "destinationBridgeId", "status", "taskExecutionId",
		"processedAt", "errorMessage", "retryCount", "metadata", "assignedAt", "createdAt", "updatedAt"), orderTestKeys(a))
	got := e.do(readOnly, "GET", bp, nil).data()
	require.EqualValues(t, 1, got["ordersAssigned"])
	require.NotNil(t, got["lastAssignedAt"])

	// include=dispatch_assignments.
	det := e.do(key, "GET", "/api/v1/orders/"+pricey+"?include=dispatch_assignments", nil)
	require.Equal(t, 200, det.Code, "%s", det.Raw)
	require.Len(t, det.data()["dispatchAssignments"], 1)
	lst := e.do(key, "GET", "/api/v1/orders?include=dispatch_assignments", nil)
	for _, it := range lst.list() {
		if it["id"] == cheap {
			require.Equal(t, []any{}, it["dispatch_assignments"])
		} else {
			require.Len(t, it["dispatch_assignments"], 1)
		}
	}

	// Evaluate (manual: every active dispatcher). Big orders already has
	// the order's destination; VIP does not match.
	ev := e.do(key, "POST", "/api/v1/dispatchers/evaluate/"+cheap, nil)
	require.Equal(t, 200, ev.Code, "%s", ev.Raw)
	require.Equal(t, cheap, ev.data()["orderId"])
	require.EqualValues(t, 0, ev.data()["assignmentsCreated"])
	require.Equal(t, []any{}, ev.data()["assignments"])
	requireError(t, e.do(key, "POST", "/api/v1/dispatchers/evaluate/00000000-0000-0000-0000-000000000000", nil), 404, "not_found")

	// Bulk assign: conditions bypassed, already assigned skipped, 1-200.
	res = e.do(key, "POST", bp+"/assign", map[string]any{"orderIds": []any{cheap, pricey}})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, map[string]any{"assigned": float64(1), "skipped": float64(1)}, res.data())
	require.Equal(t, []string{"orderIds"}, orderTestFields(t, e.do(key, "POST", bp+"/assign", map[string]any{"orderIds": []any{}})))
	tooMany := make([]any, 201)
	for i := range tooMany {
		tooMany[i] = cheap
	}
	require.Equal(t, []string{"orderIds"}, orderTestFields(t, e.do(key, "POST", bp+"/assign", map[string]any{"orderIds": tooMany})))
	require.Equal(t, []string{"orderIds[0]"}, orderTestFields(t, e.do(key, "POST", bp+"/assign", map[string]any{"orderIds": []any{"x"}})))
	list = e.do(readOnly, "GET", bp+"/assignments", nil)
	require.Len(t, list.list(), 2)
	require.Equal(t, cheap, list.list()[0]["orderId"], "newest first")
	require.EqualValues(t, 2, e.do(readOnly, "GET", bp, nil).data()["ordersAssigned"])
	require.Len(t, e.do(readOnly, "GET", bp+"/assignments?status=completed", nil).list(), 0)
	require.Equal(t, []string{"status"}, orderTestFields(t, e.do(readOnly, "GET", bp+"/assignments?status=done", nil)))

	// Pending assignments: delete is 409.
	requireError(t, e.do(key, "DELETE", bp, nil), 409, "conflict")

	// Retry resets failed ones.
	_, err = e.deps.Store.Pool.Exec(context.Background(), `UPDATE dispatch_assignments SET status = 'failed', retry_count = 3, error_message = 'x'`)
	require.NoError(t, err)
	res = e.do(key, "POST", "/api/v1/dispatchers/assignments/retry", map[string]any{"assignmentIds": []any{a["id"]}})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.EqualValues(t, 1, res.data()["reset"])
	got = e.do(readOnly, "GET", bp+"/assignments?status=pending", nil).list()[0]
	require.EqualValues(t, 0, got["retryCount"])
	require.Nil(t, got["errorMessage"])
	require.EqualValues(t, 1, e.do(key, "POST", "/api/v1/dispatchers/assignments/retry", nil).data()["reset"], "all failed ones")
	require.EqualValues(t, 0, e.do(key, "POST", "/api/v1/dispatchers/assignments/retry", nil).data()["reset"])

	// Process: without Temporal nothing can be queued.
	res = e.do(key, "POST", "/api/v1/dispatchers/assignments/process", map[string]any{"bridgeId": hub, "limit": 10})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.EqualValues(t, 2, res.data()["processed"])
	require.Equal(t, []string{"limit"}, orderTestFields(t, e.do(key, "POST", "/api/v1/dispatchers/assignments/process", map[string]any{"limit": 0})))

	// Another organization: 404 everywhere, and it sees nothing.
	for _, r := range []struct{ method, path string }{{"GET", bp}, {"PATCH", bp}, {"DELETE", bp}, {"GET", bp + "/assignments"}, {"POST", bp + "/assign"},
		{"POST", "/api/v1/dispatchers/evaluate/" + cheap}} {
		requireError(t, e.do(other.caller, r.method, r.path, map[string]any{"orderIds": []any{cheap}}), 404, "not_found")
	}
	require.Empty(t, e.do(other.caller, "GET", "/api/v1/dispatchers", nil).list())
	require.EqualValues(t, 0, e.do(other.caller, "POST", "/api/v1/dispatchers/assignments/retry", nil).data()["reset"])

	// Finished assignments: delete works.
	_, err = e.deps.Store.Pool.Exec(context.Background(), `UPDATE dispatch_assignments SET status = 'completed'`)
	require.NoError(t, err)
	require.Equal(t, 200, e.do(key, "DELETE", bp, nil).Code)
	requireError(t, e.do(key, "GET", bp, nil), 404, "not_found")
	require.Equal(t, 200, e.do(key, "DELETE", vp, nil).Code)
	require.Equal(t, 200, e.do(owner.caller, "DELETE", "/api/v1/condition-sets/"+set, nil).Code, "no longer referenced")
}
