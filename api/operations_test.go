package api

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// opOrders inserts n orders of the organization and returns their ids.
func (e *testEnv) opOrders(org string, n int) []string {
	e.t.Helper()
	ids := make([]uuid.UUID, n)
	out := make([]string, n)
	for i := range ids {
		ids[i] = uuid.New()
		out[i] = ids[i].String()
	}
	_, err := e.deps.Store.Pool.Exec(context.Background(), `INSERT INTO orders (id, organization_id, external_id, order_number, status, customer, customer_email, customer_name, line_items, totals, total, ordered_at)
SELECT x, $1, x::text, 'N-' || left(x::text, 6), 'confirmed', '{}', 'c@example.com', 'Chloe', '[]', '{}', 12.5, now() FROM unnest($2::uuid[]) AS x`, org, ids)
	require.NoError(e.t, err)
	return out
}

// opSnapshot inserts a carrier account and a rate snapshot of the
// organization and returns their ids.
func (e *testEnv) opSnapshot(org string) (acct, snap string) {
	e.t.Helper()
	a, s := uuid.New(), uuid.New()
	ctx := context.Background()
	_, err := e.deps.Store.Pool.Exec(ctx, `INSERT INTO carrier_accounts (id, organization_id, name, carrier, supports_rating, supports_labels) VALUES ($1, $2, 'A', 'carrier_a', true, true)`, a, org)
	require.NoError(e.t, err)
	_, err = e.deps.Store.Pool.Exec(ctx, `INSERT INTO rate_snapshots (id, organization_id, carrier_account_id, carrier, service_type, service_name, total_price, currency,
  ship_from, ship_to, packages, quoted_at, expires_at, created_at) VALUES ($1, $2, $3, 'carrier_a', 'FEDEX_GROUND', 'Ground', 9.75, 'USD',
  '{}', '{}', '[{"weight":{"value":2,"unit":"lb"}}]', now(), now() + interval '1 day', now())`, s, org, a)
	require.NoError(e.t, err)
	return a.String(), s.String()
}

func (e *testEnv) newOperation(c caller, name string) string {
	e.t.Helper()
	res := e.do(c, "POST", "/api/v1/operations", map[string]any{"name": name})
	require.Equal(e.t, 201, res.Code, "%s", res.Raw)
	return res.data()["id"].(string)
}

func TestOperationTypesAndCRUD(t *testing.T) {
	e := newEnv(t)
	acc := e.signup()

	res := e.do(acc.caller, "GET", "/api/v1/operations/types", nil)
	require.Equal(t, 200, res.Code)
	require.Len(t, res.list(), 3)
	for _, ty := range res.list() {
		require.Equal(t, true, ty["supportsBulk"])
		require.EqualValues(t, 500, ty["maxBatchSize"])
		require.NotNil(t, ty["configSchema"])
	}
	res = e.do(acc.caller, "GET", "/api/v1/operations/types/assign-rate", nil)
	require.Equal(t, 200, res.Code)
	require.Equal(t, "assign-rate", res.data()["id"])
	requireError(t, e.do(acc.caller, "GET", "/api/v1/operations/types/nope", nil), 404, "not_found")

	// Create: validated.
	requireError(t, e.do(acc.caller, "POST", "/api/v1/operations", map[string]any{}), 400, "validation_error")
	requireError(t, e.do(acc.caller, "POST", "/api/v1/operations", map[string]any{"name": strings.Repeat("n", 256)}), 400, "validation_error")
	requireError(t, e.do(acc.caller, "POST", "/api/v1/operations", map[string]any{"name": "x", "description": strings.Repeat("d", 1001)}), 400, "validation_error")
	requireError(t, e.do(acc.caller, "POST", "/api/v1/operations", map[string]any{"name": 5}), 400, "validation_error")
	res = e.do(acc.caller, "POST", "/api/v1/operations", map[string]any{"name": "Ship week 12", "description": "all of them"})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	op := res.data()
	require.Equal(t, "draft", op["status"])
	require.Equal(t, "USD", op["currency"])
	for _, f := range []string{"itemCount", "pendingCount", "processingCount", "completedCount", "failedCount", "skippedCount", "totalEstimatedCost", "startedAt", "completedAt", "createdBy"} {
		require.Contains(t, op, f)
	}
	id := op["id"].(string)
	for i := 0; i < 3; i++ {
		e.newOperation(acc.caller, fmt.Sprintf("op %d", i))
	}

	// List: most recently updated first, limit clamped, hasMore, status filter.
	res = e.do(acc.caller, "PATCH", "/api/v1/operations/"+id, map[string]any{"name": "Renamed"})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, "Renamed", res.data()["name"])
	res = e.do(acc.caller, "GET", "/api/v1/operations?limit=2", nil)
	require.Equal(t, 200, res.Code)
	require.Len(t, res.list(), 2)
	require.Equal(t, id, res.list()[0]["id"])
	require.Equal(t, true, res.Body["pagination"].(map[string]any)["hasMore"])
	res = e.do(acc.caller, "GET", "/api/v1/operations?limit=1000", nil)
	require.EqualValues(t, 100, res.Body["pagination"].(map[string]any)["limit"])
	requireError(t, e.do(acc.caller, "GET", "/api/v1/operations?status=bogus", nil), 400, "validation_error")
	requireError(t, e.do(acc.caller, "GET", "/api/v1/operations?page=0", nil), 400, "validation_error")

	// Status rules.
	res = e.do(acc.caller, "PATCH", "/api/v1/operations/"+id, map[string]any{"status": "pending", "description": nil})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, "pending", res.data()["status"])
	require.Nil(t, res.data()["description"])
	requireError(t, e.do(acc.caller, "PATCH", "/api/v1/operations/"+id, map[string]any{"status": "weird"}), 400, "validation_error")
	requireError(t, e.do(acc.caller, "DELETE", "/api/v1/operations/"+id, nil), 409, "conflict")
	res = e.do(acc.caller, "PATCH", "/api/v1/operations/"+id, map[string]any{"status": "completed"})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	requireError(t, e.do(acc.caller, "PATCH", "/api/v1/operations/"+id, map[string]any{"status": "draft"}), 409, "conflict")
	res = e.do(acc.caller, "PATCH", "/api/v1/operations/"+id, map[string]any{"status": "cancelled"})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, "cancelled", res.data()["status"])
	res = e.do(acc.caller, "GET", "/api/v1/operations?status=cancelled", nil)
	require.Len(t, res.list(), 1)

	// Delete a draft.
	other := e.newOperation(acc.caller, "gone")
	res = e.do(acc.caller, "DELETE", "/api/v1/operations/"+other, nil)
	require.Equal(t, 200, res.Code)
	require.Equal(t, true, res.Body["success"])
	requireError(t, e.do(acc.caller, "GET", "/api/v1/operations/"+other, nil), 404, "not_found")

	// Without Temporal, execute is unavailable, never a 500; a draft
	// cancels without a run.
	d := e.newOperation(acc.caller, "no run")
	res = e.do(acc.caller, "POST", "/api/v1/operations/"+d+"/execute", nil)
	require.Equal(t, 503, res.Code, "%s", res.Raw)
	res = e.do(acc.caller, "POST", "/api/v1/operations/"+d+"/cancel", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, "cancelled", res.data()["status"])
	requireError(t, e.do(acc.caller, "POST", "/api/v1/operations/"+d+"/pause", nil), 409, "conflict")
	requireError(t, e.do(acc.caller, "POST", "/api/v1/operations/"+d+"/cancel", nil), 409, "conflict")
}

func TestOperationItemsActionsAndHistory(t *testing.T) {
	e := newEnv(t)
	acc := e.signup()
	stranger := e.signup()
	id := e.newOperation(acc.caller, "Items")
	orders := e.opOrders(acc.org, 6)
	foreign := e.opOrders(stranger.org, 1)

	// Add: duplicates ignored; foreign or unknown orders 400 naming them.
	res := e.do(acc.caller, "POST", "/api/v1/operations/"+id+"/items", map[string]any{"orderIds": []string{orders[0], orders[1], orders[2], orders[3], orders[0], orders[1]}})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	require.EqualValues(t, 4, res.data()["added"])
	res = e.do(acc.caller, "POST", "/api/v1/operations/"+id+"/items", map[string]any{"orderIds": orders})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	require.EqualValues(t, 2, res.data()["added"])
	res = e.do(acc.caller, "POST", "/api/v1/operations/"+id+"/items", map[string]any{"orderIds": []string{orders[0], foreign[0]}})
	requireError(t, res, 400, "validation_error")
	require.Contains(t, string(res.Raw), foreign[0])
	requireError(t, e.do(acc.caller, "POST", "/api/v1/operations/"+id+"/items", map[string]any{"orderIds": []string{}}), 400, "validation_error")
	requireError(t, e.do(acc.caller, "POST", "/api/v1/operations/"+id+"/items", map[string]any{"orderIds": []string{"not-a-uuid"}}), 400, "validation_error")
	requireError(t, e.do(acc.caller, "POST", "/api/v1/operations/"+id+"/items", map[string]any{}), 400, "validation_error")
	huge := make([]string, 501)
	for i := range huge {
		huge[i] = uuid.NewString()
	}
	requireError(t, e.do(acc.caller, "POST", "/api/v1/operations/"+id+"/items", map[string]any{"orderIds": huge}), 400, "validation_error")

	// List with the expanded order.
	res = e.do(acc.caller, "GET", "/api/v1/operations/"+id+"/items?limit=500", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Len(t, res.list(), 6)
	require.EqualValues(t, 100, res.Body["pagination"].(map[string]any)["limit"])
	item := res.list()[0]
	require.Equal(t, orders[0], item["order"].(map[string]any)["id"])
	require.Contains(t, item["order"], "customerEmail")
	require.Nil(t, item["rateSnapshot"])
	itemIDs := make([]string, 0, 6)
	for _, it := range res.list() {
		itemIDs = append(itemIDs, it["id"].(string))
	}
	requireError(t, e.do(acc.caller, "GET", "/api/v1/operations/"+id+"/items?hasRate=maybe", nil), 400, "validation_error")
	requireError(t, e.do(acc.caller, "GET", "/api/v1/operations/"+id+"/items?status=done", nil), 400, "validation_error")

	// Apply actions: config checked against the type, reference in the
	// organization.
	acct, snap := e.opSnapshot(acc.org)
	_, foreignSnap := e.opSnapshot(stranger.org)
	apply := func(ids []string, typ string, cfg any) *response {
		return e.do(acc.caller, "POST", "/api/v1/operations/"+id+"/actions/apply", map[string]any{"itemIds": ids, "action": map[string]any{"type": typ, "config": cfg}})
	}
	res = apply(itemIDs[:3], "assign-rate", map[string]any{"rateSnapshotId": snap})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.EqualValues(t, 3, res.Body["applied"])
	require.Equal(t, true, res.Body["success"])
	res = apply(itemIDs[:1], "assign-rate", map[string]any{"rateSnapshotId": foreignSnap})
	requireError(t, res, 400, "validation_error")
	require.Contains(t, string(res.Raw), "action.config.rateSnapshotId")
	requireError(t, apply(itemIDs[:1], "assign-rate", map[string]any{}), 400, "validation_error")
	requireError(t, apply(itemIDs[:1], "assign-rate", map[string]any{"rateSnapshotId": 7}), 400, "validation_error")
	requireError(t, apply(itemIDs[:1], "teleport", map[string]any{}), 400, "validation_error")
	requireError(t, apply([]string{uuid.NewString()}, "override-carrier", map[string]any{"carrierAccountId": acct}), 400, "validation_error")
	res = apply(itemIDs[3:4], "override-carrier", map[string]any{"carrierAccountId": acct})
	require.Equal(t, 200, res.Code, "%s", res.Raw)

	res = e.do(acc.caller, "GET", "/api/v1/operations/"+id, nil)
	require.EqualValues(t, 6, res.data()["itemCount"])
	require.InDelta(t, 29.25, res.data()["totalEstimatedCost"], 0.001)
	res = e.do(acc.caller, "GET", "/api/v1/operations/"+id+"/items?hasRate=true", nil)
	require.Len(t, res.list(), 3)
	require.EqualValues(t, 3, res.Body["pagination"].(map[string]any)["total"])
	require.Equal(t, snap, res.list()[0]["rateSnapshot"].(map[string]any)["id"])

	// PATCH an item: a foreign reference is 400, null clears.
	requireError(t, e.do(acc.caller, "PATCH", "/api/v1/operations/"+id+"/items/"+itemIDs[0], map[string]any{"rateSnapshotId": foreignSnap}), 400, "validation_error")
	res = e.do(acc.caller, "PATCH", "/api/v1/operations/"+id+"/items/"+itemIDs[0], map[string]any{"rateSnapshotId": nil})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Nil(t, res.data()["rateSnapshotId"])
	requireError(t, e.do(acc.caller, "PATCH", "/api/v1/operations/"+id+"/items/"+uuid.NewString(), map[string]any{"status": "skipped"}), 404, "not_found")
	requireError(t, e.do(acc.caller, "PATCH", "/api/v1/operations/"+id+"/items/"+itemIDs[0], map[string]any{"status": "gone"}), 400, "validation_error")

	// Remove one, bulk-remove two.
	res = e.do(acc.caller, "DELETE", "/api/v1/operations/"+id+"/items/"+itemIDs[5], nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	res = e.do(acc.caller, "POST", "/api/v1/operations/"+id+"/items/bulk-remove", map[string]any{"itemIds": []string{itemIDs[4], itemIDs[5], uuid.NewString()}})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.EqualValues(t, 1, res.Body["removed"])

	// History: newest first, every change recorded.
	res = e.do(acc.caller, "GET", "/api/v1/operations/"+id+"/history", nil)
	require.Equal(t, 200, res.Code)
	var actions []string
	for _, h := range res.list() {
		actions = append(actions, h["action"].(string))
	}
	require.Equal(t, []string{"items_removed", "items_removed", "item_updated", "action_applied", "action_applied", "items_added", "items_added"}, actions)
	applied := res.list()[4]
	require.Len(t, applied["affectedItemIds"], 3)
	require.Len(t, applied["affectedOrderIds"], 3)
	require.Contains(t, applied, "previousState")
	require.Equal(t, true, applied["isUndoable"])
	require.NotEmpty(t, applied["performedBy"])

	// Nothing changes once the operation is not a draft.
	res = e.do(acc.caller, "PATCH", "/api/v1/operations/"+id, map[string]any{"status": "pending"})
	require.Equal(t, 200, res.Code)
	requireError(t, e.do(acc.caller, "POST", "/api/v1/operations/"+id+"/items", map[string]any{"orderIds": orders[:1]}), 409, "conflict")
	requireError(t, apply(itemIDs[:1], "assign-rate", map[string]any{"rateSnapshotId": snap}), 409, "conflict")
	requireError(t, e.do(acc.caller, "DELETE", "/api/v1/operations/"+id+"/items/"+itemIDs[0], nil), 409, "conflict")
	requireError(t, e.do(acc.caller, "POST", "/api/v1/operations/"+id+"/items/bulk-remove", map[string]any{"itemIds": itemIDs[:1]}), 409, "conflict")
	requireError(t, e.do(acc.caller, "PATCH", "/api/v1/operations/"+id+"/items/"+itemIDs[0], map[string]any{"rateSnapshotId": nil}), 409, "conflict")
}

// TestOperationsOtherOrganization: another organization's operation is 404
// on every route, including execute and undo; its items, references and
// orders are refused.
func TestOperationsOtherOrganization(t *testing.T) {
	e := newEnv(t)
	owner, attacker := e.signup(), e.signup()
	id := e.newOperation(owner.caller, "Mine")
	orders := e.opOrders(owner.org, 1)
	res := e.do(owner.caller, "POST", "/api/v1/operations/"+id+"/items", map[string]any{"orderIds": orders})
	require.Equal(t, 201, res.Code)
	itemID := res.data()["items"].([]any)[0].(map[string]any)["id"].(string)

	for _, r := range []struct {
		method, path string
		body         any
	}{
		{"GET", "", nil}, {"PATCH", "", map[string]any{"name": "x"}}, {"DELETE", "", nil},
		{"GET", "/items", nil}, {"POST", "/items", map[string]any{"orderIds": orders}},
		{"PATCH", "/items/" + itemID, map[string]any{"status": "skipped"}}, {"DELETE", "/items/" + itemID, nil},
		{"POST", "/items/bulk-remove", map[string]any{"itemIds": []string{itemID}}},
		{"POST", "/actions/apply", map[string]any{"itemIds": []string{itemID}, "action": map[string]any{"type": "assign-rate", "config": map[string]any{"rateSnapshotId": uuid.NewString()}}}},
		{"GET", "/history", nil}, {"POST", "/execute", nil}, {"POST", "/pause", nil}, {"POST", "/resume", nil},
		{"POST", "/cancel", nil}, {"POST", "/undo", map[string]any{}},
	} {
		res := e.do(attacker.caller, r.method, "/api/v1/operations/"+id+r.path, r.body)
		requireError(t, res, 404, "not_found")
	}
	requireError(t, e.do(attacker.caller, "GET", "/api/v1/operations/not-a-uuid", nil), 404, "not_found")
	// The owner's operation is untouched.
	res = e.do(owner.caller, "GET", "/api/v1/operations/"+id, nil)
	require.Equal(t, "Mine", res.data()["name"])
	require.EqualValues(t, 1, res.data()["itemCount"])

	// The attacker's own operation cannot take the owner's orders.
	mine := e.newOperation(attacker.caller, "theirs")
	requireError(t, e.do(attacker.caller, "POST", "/api/v1/operations/"+mine+"/items", map[string]any{"orderIds": orders}), 400, "validation_error")
}

func TestOperationsScopesAndIdempotency(t *testing.T) {
	e := newEnv(t)
	acc := e.signup()
	reader := e.apiKey(acc, "operations:read")
	writer := e.apiKey(acc, "operations:read", "operations:write")
	requireError(t, e.do(reader, "POST", "/api/v1/operations", map[string]any{"name": "x"}), 403, "insufficient_scope")
	res := e.do(writer, "POST", "/api/v1/operations", map[string]any{"name": "x"})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	id := res.data()["id"].(string)
	require.Equal(t, 200, e.do(reader, "GET", "/api/v1/operations/"+id, nil).Code)
	for _, verb := range []string{"execute", "pause", "resume", "cancel", "undo"} {
		requireError(t, e.do(writer, "POST", "/api/v1/operations/"+id+"/"+verb, nil), 403, "insufficient_scope")
	}
	requireError(t, e.do(writer, "PATCH", "/api/v1/operations/"+id, map[string]any{"status": "executing"}), 403, "insufficient_scope")

	// Idempotency-Key: the same key answers the first response.
	first := e.do(writer, "POST", "/api/v1/operations", map[string]any{"name": "once"}, "Idempotency-Key", "op-key-1")
	again := e.do(writer, "POST", "/api/v1/operations", map[string]any{"name": "once"}, "Idempotency-Key", "op-key-1")
	require.Equal(t, 201, first.Code)
	require.Equal(t, first.data()["id"], again.data()["id"])
	requireError(t, e.do(writer, "POST", "/api/v1/operations", map[string]any{"name": "other"}, "Idempotency-Key", "op-key-1"), 409, "conflict")
}

// TestOperationItemsFlood: many concurrent add calls on one operation
// keep the counters exact and never answer 500.
func TestOperationItemsFlood(t *testing.T) {
	e := newEnv(t)
	acc := e.signup()
	id := e.newOperation(acc.caller, "Flood")
	orders := e.opOrders(acc.org, 1000)
	var wg sync.WaitGroup
	codes := make(chan int, 20)
	for w := 0; w < 20; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			lo := (w * 50) % 1000
			res := e.do(acc.caller, "POST", "/api/v1/operations/"+id+"/items", map[string]any{"orderIds": orders[lo : lo+100-(w%2)*50]})
			codes <- res.Code
		}(w)
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		require.Contains(t, []int{201, 429}, c)
	}
	res := e.do(acc.caller, "GET", "/api/v1/operations/"+id, nil)
	var n int64
	require.NoError(t, e.deps.Store.Pool.QueryRow(context.Background(), `SELECT count(*) FROM operation_items WHERE operation_id = $1`, id).Scan(&n))
	require.EqualValues(t, n, res.data()["itemCount"])
	require.EqualValues(t, n, res.data()["pendingCount"])
}
