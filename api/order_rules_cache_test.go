package api

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// POST /orders keeps what it learned of an organization's rules (whether a
// split rule, dispatcher or the embed default applies) in memory per
// process (store.CreateOrderProbed). A rule created, deactivated or
// re-scoped through another process (here another router on a pool, and so
// a listener and caches, of its own) is seen by the very next create.
func TestOrderCreateSeesRulesOfAnotherProcess(t *testing.T) {
	a := newEnv(t)
	other, err := store.Open(t.Context(), storetest.URL())
	require.NoError(t, err)
	t.Cleanup(other.Close)
	b := newEnv(t, func(d *Deps) { d.Store = other })

	owner := a.signup()
	keyA := a.apiKey(owner, "orders:read", "orders:write")
	keyB := a.apiKey(owner, "dispatchers:read", "dispatchers:write")
	shop := orderTestBridge(t, a, owner.org, "Shop")
	hub := orderTestBridge(t, a, owner.org, "Hub")

	n := 0
	// create posts an order through a and tells how many dispatch
	// assignments it got.
	create := func(items ...map[string]any) (string, int) {
		t.Helper()
		n++
		body := orderTestBody(shop, "cache-"+string(rune('a'+n)))
		if len(items) > 0 {
			body = splitTestOrder(shop, "cache-"+string(rune('a'+n)), items...)
		}
		id := orderTestCreate(t, a, keyA, body)["id"].(string)
		det := a.do(keyA, "GET", "/api/v1/orders/"+id+"?include=dispatch_assignments", nil)
		require.Equal(t, 200, det.Code, "%s", det.Raw)
		return id, len(det.data()["dispatchAssignments"].([]any))
	}
	// Nothing applies: the answer is kept, and used.
	for range 3 {
		_, got := create()
		require.Zero(t, got)
	}

	// A dispatcher made through the other process applies at once.
	disp := dispTestCreate(t, b, keyB, dispTestTotal("All", shop, hub, 1))
	_, got := create()
	require.Equal(t, 1, got, "the dispatcher created elsewhere dispatched the next order")
	_, got = create()
	require.Equal(t, 1, got)

	// Deactivated elsewhere: no longer (and an answer kept as true would
	// only cost the hooks their own look).
	dp := "/api/v1/dispatchers/" + disp["id"].(string)
	require.Equal(t, 200, b.do(keyB, "PATCH", dp, map[string]any{"isActive": false}).Code)
	for range 2 {
		_, got = create()
		require.Zero(t, got)
	}
	// Re-activated elsewhere, then deactivated again.
	require.Equal(t, 200, b.do(keyB, "PATCH", dp, map[string]any{"isActive": true}).Code)
	_, got = create()
	require.Equal(t, 1, got)
	require.Equal(t, 200, b.do(keyB, "PATCH", dp, map[string]any{"isActive": false}).Code)
	_, got = create()
	require.Zero(t, got)

	// A split rule made elsewhere splits the next order.
	rule := splitTestRule(t, b, keyB, map[string]any{"name": "By vendor", "method": "field_group", "groupField": "lineItems[].vendor"})
	create(splitTestItem("A-1", "Acme", 10), splitTestItem("B-1", "Bolt", 20))
	res := b.do(keyB, "GET", "/api/v1/split-rules/"+rule["id"].(string), nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.EqualValues(t, 1, res.data()["ordersSplit"], "the split rule created elsewhere split the next order")
}
