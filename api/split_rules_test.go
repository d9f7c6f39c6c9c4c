package api

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// splitTestItem is a valid line item with a vendor.
func splitTestItem(sku, vendor string, price float64) map[string]any {
	return map[string]any{
		"sku": sku, "name": sku, "quantity": 1, "unitPrice": price, "totalPrice": price,
		"requiresShipping": true, "taxable": true, "vendor": vendor,
	}
}

// splitTestOrder is a create body with the given items.
func splitTestOrder(bridge, ext string, items ...map[string]any) map[string]any {
	body := orderTestBody(bridge, ext)
	li := make([]any, len(items))
	sub := 0.0
	for i, it := range items {
		li[i] = it
		sub += it["totalPrice"].(float64)
	}
	body["line_items"] = li
	body["totals"] = map[string]any{"subtotal": sub, "shipping": 10, "tax": 1, "discount": 0, "total": sub + 11}
	return body
}

func splitTestRule(t testing.TB, e *testEnv, c caller, body map[string]any) map[string]any {
	t.Helper()
	res := e.do(c, "POST", "/api/v1/split-rules", body)
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	return res.data()
}

func TestSplitRuleEndpoints(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	other := e.signup()
	key := e.apiKey(owner, "dispatchers:read", "dispatchers:write", "orders:read")
	readOnly := e.apiKey(owner, "dispatchers:read")
	bridge := orderTestBridge(t, e, owner.org, "Shop")
	foreignBridge := orderTestBridge(t, e, other.org, "Theirs")
	foreignSet := csTestCreate(t, e, other.caller, "Theirs", "string")["id"].(string)

	// Validation names every field.
	require.ElementsMatch(t, []string{"name", "method"}, orderTestFields(t, e.do(key, "POST", "/api/v1/split-rules", map[string]any{})))
	require.Equal(t, []string{"conditionGroups"}, orderTestFields(t, e.do(key, "POST", "/api/v1/split-rules", map[string]any{"name": "x", "method": "condition"})))
	require.Equal(t, []string{"groupField"}, orderTestFields(t, e.do(key, "POST", "/api/v1/split-rules", map[string]any{"name": "x", "method": "field_group"})))
	require.ElementsMatch(t, []string{"groupField", "priority", "isActive", "bridgeId"}, orderTestFields(t, e.do(key, "POST", "/api/v1/split-rules", map[string]any{
		"name": "x", "method": "field_group", "groupField": "a..b", "priority": 1001, "isActive": "yes", "bridgeId": "nope",
	})))
	require.ElementsMatch(t, []string{
		"conditionGroups[0].label", "conditionGroups[0].matchMode", "conditionGroups[1].conditions[0].operator",
		"conditionGroups[1].conditions[1].value", "conditionGroups[2].label", "conditionGroups[3]", "conditionGroups[4].conditions",
	}, orderTestFields(t, e.do(key, "POST", "/api/v1/split-rules", map[string]any{
		"name": "x", "method": "condition", "conditionGroups": []any{
			map[string]any{"matchMode": "some", "conditions": []any{map[string]any{"field": "a", "operator": "exists"}}},
			map[string]any{"label": "b", "conditions": []any{
				map[string]any{"field": "a", "operator": "like", "value": "x"},
				map[string]any{"field": "a", "operator": "regex", "value": "("},
			}},
			map[string]any{"label": "remainder", "conditions": []any{map[string]any{"field": "a", "operator": "exists"}}},
			"not a group",
			map[string]any{"label": "c"},
		},
	})))
	require.Equal(t, []string{"conditionGroups"}, orderTestFields(t, e.do(key, "POST", "/api/v1/split-rules", map[string]any{"name": "x", "method": "condition", "conditionGroups": []any{}})))
	require.Equal(t, []string{"bridgeId"}, orderTestFields(t, e.do(key, "POST", "/api/v1/split-rules", map[string]any{
		"name": "x", "method": "field_group", "groupField": "vendor", "bridgeId": foreignBridge,
	})), "another organization's bridge")
	require.Equal(t, []string{"conditionGroups[0].conditions[1].setId"}, orderTestFields(t, e.do(key, "POST", "/api/v1/split-rules", map[string]any{
		"name": "x", "method": "condition", "conditionGroups": []any{map[string]any{"label": "g", "conditions": []any{
			map[string]any{"field": "status", "operator": "exists"},
			map[string]any{"field": "lineItems[].sku", "operator": "in_set", "setId": foreignSet},
		}}},
	})), "another organization's set")
	requireError(t, e.do(readOnly, "POST", "/api/v1/split-rules", map[string]any{"name": "x", "method": "field_group", "groupField": "vendor"}), 403, "insufficient_scope")

	// Create with defaults; every field present.
	a := splitTestRule(t, e, key, map[string]any{"name": "By vendor", "method": "field_group", "groupField": "lineItems[].vendor"})
	require.Equal(t, orderTestSorted("id", "organizationId", "name", "description", "method", "conditionGroups", "groupField", "bridgeId",
		"isActive", "priority", "ordersSplit", "lastSplitAt", "createdAt", "updatedAt"), orderTestKeys(a))
	require.Equal(t, true, a["isActive"])
	require.EqualValues(t, 0, a["priority"])
	require.EqualValues(t, 0, a["ordersSplit"])
	require.Nil(t, a["lastSplitAt"])
	require.Nil(t, a["bridgeId"])
	require.Equal(t, []any{}, a["conditionGroups"])
	b := splitTestRule(t, e, key, map[string]any{
		"name": "Cold chain", "method": "condition", "priority": 10, "bridgeId": bridge, "isActive": false, "description": "frozen apart",
		"conditionGroups": []any{map[string]any{"label": "frozen", "conditions": []any{map[string]any{"field": "lineItems[].sku", "operator": "starts_with", "value": "ICE-"}}}},
	})
	require.Equal(t, []any{map[string]any{"label": "frozen", "matchMode": "all", "conditions": []any{
		map[string]any{"field": "lineItems[].sku", "operator": "starts_with", "value": "ICE-"},
	}}}, b["conditionGroups"], "the group shape as stored, matchMode defaulted")
	splitTestRule(t, e, key, map[string]any{"name": "Another", "method": "field_group", "groupField": "sku", "priority": 10})

	// List: priority descending then name; filters.
	names := func(path string) []string {
		res := e.do(readOnly, "GET", path, nil)
		require.Equal(t, 200, res.Code, "%s", res.Raw)
		var out []string
		for _, it := range res.list() {
			out = append(out, it["name"].(string))
		}
		return out
	}
	require.Equal(t, []string{"Another", "Cold chain", "By vendor"}, names("/api/v1/split-rules"))
	require.Equal(t, []string{"Cold chain"}, names("/api/v1/split-rules?isActive=false"))
	require.Equal(t, []string{"Cold chain"}, names("/api/v1/split-rules?bridgeId="+bridge))
	require.Equal(t, []string{"isActive"}, orderTestFields(t, e.do(readOnly, "GET", "/api/v1/split-rules?isActive=maybe", nil)))

	// Patch: any field; the result must still be complete.
	bp := "/api/v1/split-rules/" + b["id"].(string)
	require.Equal(t, []string{"groupField"}, orderTestFields(t, e.do(key, "PATCH", bp, map[string]any{"method": "field_group"})))
	up := e.do(key, "PATCH", bp, map[string]any{"method": "field_group", "groupField": "vendor", "isActive": true, "bridgeId": nil, "description": nil})
	require.Equal(t, 200, up.Code, "%s", up.Raw)
	require.Equal(t, "field_group", up.data()["method"])
	require.Equal(t, "vendor", up.data()["groupField"])
	require.Equal(t, true, up.data()["isActive"])
	require.Nil(t, up.data()["bridgeId"])
	require.Nil(t, up.data()["description"])
	require.Equal(t, "Cold chain", up.data()["name"])
	require.Equal(t, 200, e.do(readOnly, "GET", bp, nil).Code)

	// Another organization: 404 everywhere.
	for _, r := range []struct{ method, path string }{{"GET", bp}, {"PATCH", bp}, {"DELETE", bp}, {"POST", bp + "/test"}} {
		requireError(t, e.do(other.caller, r.method, r.path, map[string]any{"name": "n", "orderId": "00000000-0000-0000-0000-000000000000"}), 404, "not_found")
	}
	require.Empty(t, e.do(other.caller, "GET", "/api/v1/split-rules", nil).list())

	require.Equal(t, 200, e.do(key, "DELETE", bp, nil).Code)
	requireError(t, e.do(key, "GET", bp, nil), 404, "not_found")
	requireError(t, e.do(key, "DELETE", bp, nil), 404, "not_found")
}

func TestSplitRuleDryRun(t *testing.T) {
	e := newEnv(t, func(d *Deps) { d.OrderHooks = &orderTestHooks{} }) // no split on create here
	owner := e.signup()
	other := e.signup()
	bridge := orderTestBridge(t, e, owner.org, "Shop")
	order := orderTestCreate(t, e, owner.caller, splitTestOrder(bridge, "D-1",
		splitTestItem("ICE-1", "north", 10), splitTestItem("MUG-1", "south", 20), splitTestItem("ICE-2", "north", 30)))
	oneVendor := orderTestCreate(t, e, owner.caller, splitTestOrder(bridge, "D-2", splitTestItem("A", "north", 1), splitTestItem("B", "north", 2)))

	byVendor := splitTestRule(t, e, owner.caller, map[string]any{"name": "v", "method": "field_group", "groupField": "vendor"})
	path := "/api/v1/split-rules/" + byVendor["id"].(string) + "/test"
	res := e.do(owner.caller, "POST", path, map[string]any{"orderId": order["id"]})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	d := res.data()
	require.Equal(t, true, d["wouldSplit"])
	require.NotEmpty(t, d["reason"])
	groups := d["groups"].([]any)
	require.Len(t, groups, 2)
	g0 := groups[0].(map[string]any)
	require.Equal(t, "north", g0["label"])
	require.EqualValues(t, 2, g0["itemCount"])
	require.Equal(t, "ICE-1", g0["items"].([]any)[0].(map[string]any)["sku"])
	require.Equal(t, "south", groups[1].(map[string]any)["label"])

	res = e.do(owner.caller, "POST", path, map[string]any{"orderId": oneVendor["id"]})
	require.Equal(t, false, res.data()["wouldSplit"])
	require.Equal(t, []any{}, res.data()["groups"], "one group: no split, groups empty")
	require.NotEmpty(t, res.data()["reason"])

	// Condition groups: the first matching group takes an item; the rest
	// stay in the remainder group.
	cg := splitTestRule(t, e, owner.caller, map[string]any{"name": "c", "method": "condition", "conditionGroups": []any{
		map[string]any{"label": "frozen", "conditions": []any{map[string]any{"field": "lineItems[].sku", "operator": "starts_with", "value": "ICE-"}}},
		map[string]any{"label": "pricey", "matchMode": "any", "conditions": []any{
			map[string]any{"field": "lineItems[].totalPrice", "operator": "greater_than", "value": 15},
			map[string]any{"field": "shippingAddress.country", "operator": "equals", "value": "XX"},
		}},
	}})
	res = e.do(owner.caller, "POST", "/api/v1/split-rules/"+cg["id"].(string)+"/test", map[string]any{"orderId": order["id"]})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	groups = res.data()["groups"].([]any)
	require.Len(t, groups, 2, "%s", res.Raw)
	require.Equal(t, "frozen", groups[0].(map[string]any)["label"])
	require.EqualValues(t, 2, groups[0].(map[string]any)["itemCount"], "ICE-2 also costs > 15, but frozen comes first")
	require.Equal(t, "pricey", groups[1].(map[string]any)["label"])

	rem := splitTestRule(t, e, owner.caller, map[string]any{"name": "r", "method": "condition", "conditionGroups": []any{
		map[string]any{"label": "south", "conditions": []any{map[string]any{"field": "lineItems[].vendor", "operator": "equals", "value": "south"}}},
	}})
	res = e.do(owner.caller, "POST", "/api/v1/split-rules/"+rem["id"].(string)+"/test", map[string]any{"orderId": order["id"]})
	groups = res.data()["groups"].([]any)
	require.Equal(t, "remainder", groups[1].(map[string]any)["label"])
	require.EqualValues(t, 2, groups[1].(map[string]any)["itemCount"])

	// Nothing was written.
	require.Len(t, e.do(owner.caller, "GET", "/api/v1/orders", nil).list(), 2)
	require.Equal(t, []string{"orderId"}, orderTestFields(t, e.do(owner.caller, "POST", path, map[string]any{})))
	require.Equal(t, []string{"orderId"}, orderTestFields(t, e.do(owner.caller, "POST", path, map[string]any{"orderId": "x"})))
	otherOrder := orderTestCreate(t, e, other.caller, splitTestOrder(orderTestBridge(t, e, other.org, "S"), "O-1", splitTestItem("A", "n", 1), splitTestItem("B", "s", 1)))
	requireError(t, e.do(owner.caller, "POST", path, map[string]any{"orderId": otherOrder["id"]}), 404, "not_found")
}

// A split on order creation through POST /orders (the default OrderHooks).
func TestSplitOnOrderCreate(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	bridge := orderTestBridge(t, e, owner.org, "Shop")
	otherBridge := orderTestBridge(t, e, owner.org, "Other shop")

	// Tried in priority order: the top rule puts everything in one group
	// (no split), an inactive rule and another bridge's rule are skipped,
	// so "by vendor" splits.
	splitTestRule(t, e, owner.caller, map[string]any{"name": "one group", "method": "field_group", "groupField": "taxable", "priority": 100})
	splitTestRule(t, e, owner.caller, map[string]any{"name": "inactive", "method": "field_group", "groupField": "sku", "priority": 90, "isActive": false})
	splitTestRule(t, e, owner.caller, map[string]any{"name": "elsewhere", "method": "field_group", "groupField": "sku", "priority": 80, "bridgeId": otherBridge})
	rule := splitTestRule(t, e, owner.caller, map[string]any{"name": "by vendor", "method": "field_group", "groupField": "lineItems[].vendor", "priority": 50, "bridgeId": bridge})
	splitTestRule(t, e, owner.caller, map[string]any{"name": "later", "method": "field_group", "groupField": "sku", "priority": 1})

	parent := orderTestCreate(t, e, owner.caller, splitTestOrder(bridge, "S-1",
		splitTestItem("A", "north", 10), splitTestItem("B", "south", 20), splitTestItem("C", "north", 30.01)))
	require.Equal(t, "S-1", parent["externalId"], "the create answers the parent")

	got := e.do(owner.caller, "GET", "/api/v1/orders/"+parent["id"].(string), nil).data()
	md := got["metadata"].(map[string]any)
	children := md["splitInto"].([]any)
	require.Len(t, children, 2)
	require.Equal(t, rule["id"], md["splitRuleId"])
	require.Contains(t, got["tags"], "split")
	require.Equal(t, "pending", got["status"], "the parent's status is left alone")
	require.Len(t, got["lineItems"], 3, "the parent keeps its items")

	var subtotal, shipping, total float64
	skus := map[string][]string{}
	for _, id := range children {
		c := e.do(owner.caller, "GET", "/api/v1/orders/"+id.(string), nil).data()
		cm := c["metadata"].(map[string]any)
		require.Equal(t, parent["id"], cm["parentOrderId"])
		require.Equal(t, bridge, c["bridgeId"])
		for _, it := range c["lineItems"].([]any) {
			skus[cm["splitGroup"].(string)] = append(skus[cm["splitGroup"].(string)], it.(map[string]any)["sku"].(string))
		}
		tot := c["totals"].(map[string]any)
		subtotal += tot["subtotal"].(float64)
		shipping += tot["shipping"].(float64)
		total += tot["total"].(float64)
		acts := e.do(owner.caller, "GET", "/api/v1/orders/"+id.(string)+"/activities", nil).list()
		require.Equal(t, "split", acts[len(acts)-1]["type"])
	}
	require.Equal(t, map[string][]string{"north": {"A", "C"}, "south": {"B"}}, skus)
	require.InDelta(t, 60.01, subtotal, 1e-9)
	require.InDelta(t, 10, shipping, 1e-9, "shares add up to the parent's")
	require.InDelta(t, 71.01, total, 1e-9)

	acts := e.do(owner.caller, "GET", "/api/v1/orders/"+parent["id"].(string)+"/activities", nil).list()
	require.Equal(t, "split", acts[len(acts)-1]["type"])

	r := e.do(owner.caller, "GET", "/api/v1/split-rules/"+rule["id"].(string), nil).data()
	require.EqualValues(t, 1, r["ordersSplit"])
	require.NotNil(t, r["lastSplitAt"])
	require.Len(t, e.do(owner.caller, "GET", "/api/v1/orders", nil).list(), 3)

	// An order whose items share a vendor is left alone; so is a
	// one-item order.
	orderTestCreate(t, e, owner.caller, splitTestOrder(bridge, "S-2", splitTestItem("A", "north", 1), splitTestItem("A", "north", 2)))
	orderTestCreate(t, e, owner.caller, splitTestOrder(bridge, "S-3", splitTestItem("A", "north", 1)))
	require.Len(t, e.do(owner.caller, "GET", "/api/v1/orders", nil).list(), 5)
	// The dry run of a split parent says so.
	res := e.do(owner.caller, "POST", "/api/v1/split-rules/"+rule["id"].(string)+"/test", map[string]any{"orderId": parent["id"]})
	require.Equal(t, false, res.data()["wouldSplit"])
}

// A condition-group rule with an in_set condition splits on create, and a
// value added to the set afterwards counts for the next order.
func TestSplitOnOrderCreateWithSet(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	bridge := orderTestBridge(t, e, owner.org, "Shop")
	set := csTestCreate(t, e, owner.caller, "Hazmat", "string")["id"].(string)
	add := e.do(owner.caller, "POST", "/api/v1/condition-sets/"+set+"/values", map[string]any{"values": []any{"BAT-1"}})
	require.Equal(t, 200, add.Code, "%s", add.Raw)
	splitTestRule(t, e, owner.caller, map[string]any{"name": "hazmat apart", "method": "condition", "conditionGroups": []any{
		map[string]any{"label": "hazmat", "conditions": []any{map[string]any{"field": "lineItems[].sku", "operator": "in_set", "setId": set}}},
	}})
	p1 := orderTestCreate(t, e, owner.caller, splitTestOrder(bridge, "H-1", splitTestItem("BAT-1", "x", 5), splitTestItem("MUG-1", "x", 5)))
	md := e.do(owner.caller, "GET", "/api/v1/orders/"+p1["id"].(string), nil).data()["metadata"].(map[string]any)
	require.Len(t, md["splitInto"], 2)
	child := e.do(owner.caller, "GET", "/api/v1/orders/"+md["splitInto"].([]any)[0].(string), nil).data()
	require.Equal(t, "hazmat", child["metadata"].(map[string]any)["splitGroup"])

	p2 := orderTestCreate(t, e, owner.caller, splitTestOrder(bridge, "H-2", splitTestItem("BAT-2", "x", 5), splitTestItem("MUG-1", "x", 5)))
	require.NotContains(t, e.do(owner.caller, "GET", "/api/v1/orders/"+p2["id"].(string), nil).data()["metadata"], "splitInto")
	e.do(owner.caller, "POST", "/api/v1/condition-sets/"+set+"/values", map[string]any{"values": []any{"BAT-2"}})
	p3 := orderTestCreate(t, e, owner.caller, splitTestOrder(bridge, "H-3", splitTestItem("BAT-2", "x", 5), splitTestItem("MUG-1", "x", 5)))
	require.Contains(t, e.do(owner.caller, "GET", "/api/v1/orders/"+p3["id"].(string), nil).data()["metadata"], "splitInto", "the cached set was refreshed")
}
