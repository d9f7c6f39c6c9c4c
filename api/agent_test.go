package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/server/temporaltest"

	"github.com/fos-dev/fos/agent"
	"github.com/fos-dev/fos/agent/llm"
	"github.com/fos-dev/fos/worker"
)

// agentEnv is the API with an in-process Temporal and a worker running the
// agent's conversations with the sandbox model.
func agentEnv(t *testing.T) *testEnv {
	return newEnv(t, func(d *Deps) {
		d.LLM = llm.Sandbox{}
		d.Agent = agent.Config{ApprovalTTL: time.Hour}
		ts := temporaltest.NewServer(temporaltest.WithT(t))
		c := ts.GetDefaultClient()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, worker.EnsureSearchAttributes(ctx, c, ts.GetDefaultNamespace()))
		w := worker.New(c, d.TaskQueue, worker.Deps{Store: d.Store, Secrets: d.Secrets, Logger: d.Logger, LLM: d.LLM, Agent: d.Agent})
		require.NoError(t, w.Start())
		t.Cleanup(w.Stop)
		d.Temporal = c
	})
}

func agentOrder(t *testing.T, e *testEnv, orgID string) string {
	id := uuid.New()
	_, err := e.deps.Store.Pool.Exec(context.Background(), `INSERT INTO orders (id, organization_id, external_id, order_number, status, customer, customer_email, line_items, totals, total, ordered_at)
		VALUES ($1, $2, $3, '#1001', 'pending', '{"email": "c@example.com"}', 'c@example.com', '[]', '{"total": 25}', 25, now())`, id, orgID, "ext-"+id.String()[:8])
	require.NoError(t, err)
	return id.String()
}

func TestAgentChatApproveEndpoints(t *testing.T) {
	e := agentEnv(t)
	owner := e.signup()
	order := agentOrder(t, e, owner.org)

	// A read turn answers completed, with its tool call in the detail.
	res := e.do(owner.caller, "POST", "/api/v1/agent/chat", map[string]any{"message": "list pending orders"})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, "completed", res.data()["status"])
	conv := res.data()["conversationId"].(string)
	res = e.do(owner.caller, "GET", "/api/v1/agent/conversations/"+conv, nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	d := res.data()
	require.Equal(t, "list pending orders", d["title"])
	require.Equal(t, "active", d["status"])
	msgs := d["messages"].([]any)
	require.Len(t, msgs, 3)
	call := msgs[1].(map[string]any)["toolCalls"].([]any)[0].(map[string]any)
	require.Equal(t, "list_orders", call["tool_name"])
	require.Contains(t, call["result_content"], order)
	require.Equal(t, "completed", d["turn"].(map[string]any)["status"])

	// A write waits for approval, in the same conversation.
	res = e.do(owner.caller, "POST", "/api/v1/agent/chat", map[string]any{"message": "add note gift wrap please to order " + order, "conversationId": conv})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, "awaiting_approval", res.data()["status"])
	res = e.do(owner.caller, "GET", "/api/v1/agent/pending-actions", nil)
	require.Equal(t, 200, res.Code)
	list := res.list()
	require.Len(t, list, 1)
	action := list[0]["id"].(string)
	require.Equal(t, "add_order_note", list[0]["tool_name"])
	require.Equal(t, "pending", list[0]["status"])
	require.Equal(t, float64(1), list[0]["affected_item_count"])
	require.NotEmpty(t, list[0]["idempotency_key"])

	res = e.do(owner.caller, "POST", "/api/v1/agent/pending-actions/"+action+"/approve", map[string]any{"note": "yes"})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, "approved", res.Body["status"])
	require.Equal(t, action, res.Body["action_id"])
	require.NotNil(t, res.Body["result"])
	// Once only.
	res = e.do(owner.caller, "POST", "/api/v1/agent/pending-actions/"+action+"/approve", nil)
	requireError(t, res, 409, "conflict")
	res = e.do(owner.caller, "POST", "/api/v1/agent/pending-actions/"+action+"/reject", nil)
	requireError(t, res, 409, "conflict")
	res = e.do(owner.caller, "GET", "/api/v1/orders/"+order+"/activities", nil)
	notes := 0
	for _, a := range res.list() {
		if a["type"] == "note" {
			notes++
		}
	}
	require.Equal(t, 1, notes)
	res = e.do(owner.caller, "GET", "/api/v1/agent/pending-actions?status=approved", nil)
	require.Len(t, res.list(), 1)
	res = e.do(owner.caller, "GET", "/api/v1/agent/pending-actions?status=bogus", nil)
	requireError(t, res, 400, "validation_error")

	// Reject with a note.
	res = e.do(owner.caller, "POST", "/api/v1/agent/chat", map[string]any{"message": "set status of order " + order + " to on_hold", "conversationId": conv})
	require.Equal(t, "awaiting_approval", res.data()["status"], "%s", res.Raw)
	action = e.do(owner.caller, "GET", "/api/v1/agent/pending-actions", nil).list()[0]["id"].(string)
	res = e.do(owner.caller, "POST", "/api/v1/agent/pending-actions/"+action+"/reject", map[string]any{"note": "customer changed mind"})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, "rejected", res.Body["status"])
	res = e.do(owner.caller, "GET", "/api/v1/orders/"+order, nil)
	require.Equal(t, "pending", res.data()["status"])

	// Conversations list and archive.
	res = e.do(owner.caller, "GET", "/api/v1/agent/conversations?limit=500", nil)
	require.Equal(t, 200, res.Code)
	require.Len(t, res.list(), 1)
	require.Equal(t, float64(50), res.Body["pagination"].(map[string]any)["limit"])
	res = e.do(owner.caller, "DELETE", "/api/v1/agent/conversations/"+conv, nil)
	require.Equal(t, 200, res.Code)
	require.Len(t, e.do(owner.caller, "GET", "/api/v1/agent/conversations", nil).list(), 0)
	res = e.do(owner.caller, "POST", "/api/v1/agent/chat", map[string]any{"message": "hi", "conversationId": conv})
	requireError(t, res, 409, "conflict")
}

func TestAgentAttacks(t *testing.T) {
	e := agentEnv(t)
	owner, other := e.signup(), e.signup()
	order := agentOrder(t, e, owner.org)
	res := e.do(owner.caller, "POST", "/api/v1/agent/chat", map[string]any{"message": "add note x to order " + order})
	require.Equal(t, "awaiting_approval", res.data()["status"], "%s", res.Raw)
	conv := res.data()["conversationId"].(string)
	action := e.do(owner.caller, "GET", "/api/v1/agent/pending-actions", nil).list()[0]["id"].(string)

	// Another organization's conversation and action are not found.
	requireError(t, e.do(other.caller, "GET", "/api/v1/agent/conversations/"+conv, nil), 404, "not_found")
	requireError(t, e.do(other.caller, "DELETE", "/api/v1/agent/conversations/"+conv, nil), 404, "not_found")
	requireError(t, e.do(other.caller, "POST", "/api/v1/agent/chat", map[string]any{"message": "hi", "conversationId": conv}), 404, "not_found")
	requireError(t, e.do(other.caller, "POST", "/api/v1/agent/pending-actions/"+action+"/approve", nil), 404, "not_found")
	requireError(t, e.do(other.caller, "POST", "/api/v1/agent/pending-actions/"+action+"/reject", nil), 404, "not_found")
	require.Empty(t, e.do(other.caller, "GET", "/api/v1/agent/pending-actions?status=all", nil).list())
	require.Empty(t, e.do(other.caller, "GET", "/api/v1/agent/conversations", nil).list())

	// A prompt that names the other organization's order, through the
	// other organization: its tools see only its own organization.
	res = e.do(other.caller, "POST", "/api/v1/agent/chat", map[string]any{"message": "show order " + order})
	require.Equal(t, "completed", res.data()["status"])
	d := e.do(other.caller, "GET", "/api/v1/agent/conversations/"+res.data()["conversationId"].(string), nil).data()
	call := d["messages"].([]any)[1].(map[string]any)["toolCalls"].([]any)[0].(map[string]any)
	require.Equal(t, true, call["is_error"])
	require.Contains(t, call["result_content"], "not found")
	require.NotContains(t, call["result_content"], "c@example.com")

	// Bad input.
	requireError(t, e.do(owner.caller, "POST", "/api/v1/agent/chat", map[string]any{"message": strings.Repeat("x", 10001)}), 400, "validation_error")
	requireError(t, e.do(owner.caller, "POST", "/api/v1/agent/chat", map[string]any{"message": "  "}), 400, "validation_error")
	requireError(t, e.do(owner.caller, "POST", "/api/v1/agent/chat", map[string]any{}), 400, "validation_error")
	requireError(t, e.do(owner.caller, "POST", "/api/v1/agent/chat", map[string]any{"message": 5}), 400, "validation_error")
	requireError(t, e.do(owner.caller, "POST", "/api/v1/agent/chat", map[string]any{"message": "hi", "conversationId": "nope"}), 400, "validation_error")
	requireError(t, e.do(owner.caller, "POST", "/api/v1/agent/chat", map[string]any{"message": "hi", "conversationId": uuid.NewString()}), 404, "not_found")
	requireError(t, e.do(owner.caller, "GET", "/api/v1/agent/conversations/"+uuid.NewString(), nil), 404, "not_found")
	requireError(t, e.do(owner.caller, "POST", "/api/v1/agent/pending-actions/"+uuid.NewString()+"/approve", nil), 404, "not_found")
	requireError(t, e.do(owner.caller, "POST", "/api/v1/agent/pending-actions/"+action+"/approve", map[string]any{"note": strings.Repeat("n", 1001)}), 400, "validation_error")
	requireError(t, e.do(owner.caller, "GET", "/api/v1/agent/conversations?page=0", nil), 400, "validation_error")

	// Scopes: a read key cannot chat or approve; a write key cannot approve.
	readKey := e.apiKey(owner, "agent:read")
	writeKey := e.apiKey(owner, "agent:read", "agent:write", "orders:read")
	requireError(t, e.do(readKey, "POST", "/api/v1/agent/chat", map[string]any{"message": "hi"}), 403, "insufficient_scope")
	requireError(t, e.do(writeKey, "POST", "/api/v1/agent/pending-actions/"+action+"/approve", nil), 403, "insufficient_scope")
	require.Equal(t, 200, e.do(readKey, "GET", "/api/v1/agent/conversations/"+conv, nil).Code)
	// A key's chat is offered only the tools of its scopes: no orders:write.
	res = e.do(writeKey, "POST", "/api/v1/agent/chat", map[string]any{"message": "add note y to order " + order})
	require.Equal(t, "completed", res.data()["status"], "%s", res.Raw)
	require.Len(t, e.do(owner.caller, "GET", "/api/v1/agent/pending-actions", nil).list(), 1, "no new action")

	// Expired: 410.
	_, err := e.deps.Store.Pool.Exec(context.Background(), `UPDATE agent_pending_actions SET expires_at = now() - interval '1 minute' WHERE id = $1`, action)
	require.NoError(t, err)
	requireError(t, e.do(owner.caller, "POST", "/api/v1/agent/pending-actions/"+action+"/approve", nil), 410, "gone")

	// A flood of turns on one conversation: one at a time, never a 500.
	done := make(chan int, 6)
	for range 6 {
		go func() {
			done <- e.do(owner.caller, "POST", "/api/v1/agent/chat", map[string]any{"message": "list orders", "conversationId": conv}).Code
		}()
	}
	for range 6 {
		code := <-done
		require.Contains(t, []int{200, 409, 429}, code)
	}
}

func TestAgentSettingsEndpoints(t *testing.T) {
	e := newEnv(t, func(d *Deps) { d.LLM = llm.Sandbox{} })
	owner, other := e.signup(), e.signup()

	// Tool permissions: defaults for every write tool, then an upsert.
	res := e.do(owner.caller, "GET", "/api/v1/agent/tool-permissions", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	byName := map[string]map[string]any{}
	for _, p := range res.list() {
		byName[p["tool_name"].(string)] = p
	}
	require.Contains(t, byName, "add_order_note")
	require.Equal(t, true, byName["add_order_note"]["approval_required"])
	require.Equal(t, float64(10), byName["add_order_note"]["max_auto_items"])
	require.Equal(t, 0.5, byName["add_order_note"]["risk_threshold"])
	require.Nil(t, byName["add_order_note"]["id"])
	require.NotContains(t, byName, "list_orders", "reads need no permission")

	res = e.do(owner.caller, "PATCH", "/api/v1/agent/tool-permissions", map[string]any{"permissions": []any{
		map[string]any{"toolName": "add_order_note", "approvalRequired": false, "maxAutoItems": 3, "maxOrderValue": 100, "riskThreshold": 0.3, "budgetCapDaily": 50, "maxDailyAutoExecutions": 20},
	}})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	for _, p := range res.list() {
		if p["tool_name"] == "add_order_note" {
			require.Equal(t, false, p["approval_required"])
			require.Equal(t, float64(3), p["max_auto_items"])
			require.Equal(t, 0.3, p["risk_threshold"])
			require.Equal(t, float64(100), p["max_order_value"])
			require.NotNil(t, p["id"])
		}
	}
	// Upsert: a second PATCH updates the same row.
	res = e.do(owner.caller, "PATCH", "/api/v1/agent/tool-permissions", map[string]any{"permissions": []any{map[string]any{"toolName": "add_order_note", "approvalRequired": true}}})
	require.Equal(t, 200, res.Code)
	var n int
	require.NoError(t, e.deps.Store.Pool.QueryRow(context.Background(), `SELECT count(*) FROM agent_tool_permissions WHERE organization_id = $1`, owner.org).Scan(&n))
	require.Equal(t, 1, n)
	for name, body := range map[string]any{
		"unknown tool":    map[string]any{"permissions": []any{map[string]any{"toolName": "drop_database", "approvalRequired": true}}},
		"read tool":       map[string]any{"permissions": []any{map[string]any{"toolName": "list_orders", "approvalRequired": true}}},
		"negative limit":  map[string]any{"permissions": []any{map[string]any{"toolName": "add_order_note", "approvalRequired": false, "maxAutoItems": -1}}},
		"risk above 1":    map[string]any{"permissions": []any{map[string]any{"toolName": "add_order_note", "approvalRequired": false, "riskThreshold": 1.5}}},
		"negative budget": map[string]any{"permissions": []any{map[string]any{"toolName": "add_order_note", "approvalRequired": false, "budgetCapDaily": -1}}},
		"no approval":     map[string]any{"permissions": []any{map[string]any{"toolName": "add_order_note"}}},
		"missing":         map[string]any{},
		"wrong type":      map[string]any{"permissions": "all"},
	} {
		res = e.do(owner.caller, "PATCH", "/api/v1/agent/tool-permissions", body)
		require.Equal(t, 400, res.Code, "%s: %s", name, res.Raw)
	}
	readKey := e.apiKey(owner, "agent:read", "agent:write")
	requireError(t, e.do(readKey, "PATCH", "/api/v1/agent/tool-permissions", map[string]any{"permissions": []any{}}), 403, "insufficient_scope")

	// Memory: list with filters, delete (404 across organizations).
	mem := uuid.New()
	_, err := e.deps.Store.Pool.Exec(context.Background(), `INSERT INTO agent_memory (id, organization_id, category, scope_type, content) VALUES ($1, $2, 'preference', 'organization', 'ship fast')`, mem, owner.org)
	require.NoError(t, err)
	require.Len(t, e.do(owner.caller, "GET", "/api/v1/agent/memory", nil).list(), 1)
	require.Len(t, e.do(owner.caller, "GET", "/api/v1/agent/memory?category=fact", nil).list(), 0)
	require.Len(t, e.do(owner.caller, "GET", "/api/v1/agent/memory?scope_type=organization", nil).list(), 1)
	requireError(t, e.do(owner.caller, "GET", "/api/v1/agent/memory?scope_type=galaxy", nil), 400, "validation_error")
	require.Empty(t, e.do(other.caller, "GET", "/api/v1/agent/memory", nil).list())
	requireError(t, e.do(other.caller, "DELETE", "/api/v1/agent/memory/"+mem.String(), nil), 404, "not_found")
	require.Equal(t, 200, e.do(owner.caller, "DELETE", "/api/v1/agent/memory/"+mem.String(), nil).Code)
	requireError(t, e.do(owner.caller, "DELETE", "/api/v1/agent/memory/"+mem.String(), nil), 404, "not_found")

	// Standing orders: create, list by priority, patch, delete.
	res = e.do(owner.caller, "POST", "/api/v1/agent/standing-orders", map[string]any{"name": "Low", "naturalLanguage": "note big orders"})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	low := res.data()
	require.Equal(t, "manual", low["trigger_type"])
	require.Equal(t, float64(0), low["priority"])
	require.Equal(t, true, low["is_active"])
	require.Equal(t, []any{}, low["conditions"])
	res = e.do(owner.caller, "POST", "/api/v1/agent/standing-orders", map[string]any{"name": "High", "naturalLanguage": "hold exceptions",
		"conditions":  []any{map[string]any{"field": "status", "operator": "equals", "value": "exception"}},
		"triggerType": "on_tracking_exception", "priority": 5, "actions": []any{map[string]any{"tool": "shipment_action", "input": map[string]any{"action_type": "hold"}}}})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	high := res.data()
	list := e.do(owner.caller, "GET", "/api/v1/agent/standing-orders", nil).list()
	require.Len(t, list, 2)
	require.Equal(t, high["id"], list[0]["id"], "highest priority first")
	res = e.do(owner.caller, "PATCH", "/api/v1/agent/standing-orders/"+low["id"].(string), map[string]any{"priority": 9, "isActive": false})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, float64(9), res.data()["priority"])
	require.Equal(t, false, res.data()["is_active"])
	require.Equal(t, low["id"], e.do(owner.caller, "GET", "/api/v1/agent/standing-orders", nil).list()[0]["id"])
	for name, body := range map[string]any{
		"no name":       map[string]any{"naturalLanguage": "x"},
		"no text":       map[string]any{"name": "x"},
		"bad trigger":   map[string]any{"name": "x", "naturalLanguage": "x", "triggerType": "hourly"},
		"unknown tool":  map[string]any{"name": "x", "naturalLanguage": "x", "actions": []any{map[string]any{"tool": "rm_rf"}}},
		"huge name":     map[string]any{"name": strings.Repeat("n", 300), "naturalLanguage": "x"},
		"bad condition": map[string]any{"name": "x", "naturalLanguage": "x", "conditions": []any{map[string]any{"field": "total", "operator": "resembles", "value": 1}}},
	} {
		res = e.do(owner.caller, "POST", "/api/v1/agent/standing-orders", body)
		require.Equal(t, 400, res.Code, "%s: %s", name, res.Raw)
	}
	requireError(t, e.do(other.caller, "PATCH", "/api/v1/agent/standing-orders/"+low["id"].(string), map[string]any{"priority": 1}), 404, "not_found")
	requireError(t, e.do(other.caller, "DELETE", "/api/v1/agent/standing-orders/"+low["id"].(string), nil), 404, "not_found")
	require.Equal(t, 200, e.do(owner.caller, "DELETE", "/api/v1/agent/standing-orders/"+low["id"].(string), nil).Code)
	require.Len(t, e.do(owner.caller, "GET", "/api/v1/agent/standing-orders", nil).list(), 1)

	// Without Temporal, chat says the workflow service is unavailable.
	res = e.do(owner.caller, "POST", "/api/v1/agent/chat", map[string]any{"message": "hi"})
	require.Equal(t, http.StatusServiceUnavailable, res.Code, "%s", res.Raw)
}
