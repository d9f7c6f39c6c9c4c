package agent_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/agent"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/insights"
	"github.com/fos-dev/fos/operations"
	"github.com/fos-dev/fos/routing"
	"github.com/fos-dev/fos/store"
)

// execRuns stands in for the operations' Temporal runs: it counts the
// executions started.
type execRuns struct{ executed atomic.Int32 }

func (e *execRuns) Execute(ctx context.Context, in operations.ExecuteRun) error {
	e.executed.Add(1)
	return nil
}
func (e *execRuns) Pause(context.Context, uuid.UUID, uuid.UUID) error  { return nil }
func (e *execRuns) Resume(context.Context, uuid.UUID, uuid.UUID) error { return nil }
func (e *execRuns) Cancel(context.Context, uuid.UUID, uuid.UUID) error { return nil }
func (e *execRuns) Undo(context.Context, operations.UndoRun) error     { return nil }

// domainTools rebuilds the fixture's agent with every tool: the
// operations, insights and routing Services the handlers call.
func (f *fixture) domainTools() *execRuns {
	runs := &execRuns{}
	ops := operations.New(operations.Deps{Store: f.st, Runs: runs})
	tools, err := agent.NewToolsFrom(agent.Ports{Orders: agent.StoreOrders{Store: f.st}, Shipping: f.ship,
		Accounts: agent.StoreAccounts{Store: f.st}, Memory: agent.StoreMemory{Store: f.st},
		Operations:  ops,
		Performance: insights.New(insights.Deps{Store: f.st, Operations: insights.StoreOperations{Store: f.st}}),
		Dispatchers: routing.New(routing.Deps{Store: f.st})})
	require.NoError(f.t, err)
	f.svc = agent.New(agent.Deps{Store: f.st, Provider: f.model, Tools: tools, Config: agent.Config{ApprovalTTL: time.Hour}})
	return runs
}

// runTool runs a tool as actor (its input validated first) and answers
// the result as the model sees it.
func (f *fixture) runTool(actor domain.Actor, name, input, key string) (map[string]any, error) {
	tools := f.svc.Tools()
	tool, ok := tools.Get(name)
	require.True(f.t, ok, name)
	require.NoError(f.t, tool.Validate(json.RawMessage(input)), name)
	res, err := tools.Run(context.Background(), tool, agent.Call{Actor: actor, Input: json.RawMessage(input), Key: key})
	if err != nil {
		return nil, err
	}
	var out map[string]any
	require.NoError(f.t, json.Unmarshal([]byte(tools.Result(res)), &out))
	return out, nil
}

func TestOperationToolsCallTheDomainServices(t *testing.T) {
	f := newFixture(t, agent.Config{})
	runs := f.domainTools()
	other, otherOrder := uuid.New(), uuid.New()
	f.insertOrg(other)
	f.insertOrder(other, otherOrder, 10)

	// create_operation: the id derives from the call's key, so a run that
	// repeats answers the operation it created.
	op, err := f.runTool(f.caller, "create_operation", `{"name": "Agent op"}`, "call-1")
	require.NoError(t, err)
	require.Equal(t, "draft", op["status"])
	require.Equal(t, "Agent op", op["name"])
	again, err := f.runTool(f.caller, "create_operation", `{"name": "Agent op"}`, "call-1")
	require.NoError(t, err)
	require.Equal(t, op["id"], again["id"])
	opID := op["id"].(string)
	for _, k := range []string{"organizationId", "itemCount", "pendingCount", "totalEstimatedCost", "currency", "createdAt", "updatedAt"} {
		require.Contains(t, op, k, "the API's operation shape")
	}

	list, err := f.runTool(f.caller, "list_operations", `{"status": "draft"}`, "")
	require.NoError(t, err)
	require.EqualValues(t, 1, list["total"])
	require.Equal(t, opID, list["items"].([]any)[0].(map[string]any)["id"])

	added, err := f.runTool(f.caller, "add_operation_items", `{"operation_id": "`+opID+`", "order_ids": ["`+f.order.String()+`"]}`, "")
	require.NoError(t, err)
	require.EqualValues(t, 1, added["added"])
	item := added["items"].([]any)[0].(map[string]any)
	require.Equal(t, f.order.String(), item["orderId"])

	// Another organization's ids: its order is refused, its operation is
	// not found.
	_, err = f.runTool(f.caller, "add_operation_items", `{"operation_id": "`+opID+`", "order_ids": ["`+otherOrder.String()+`"]}`, "")
	require.Equal(t, domain.KindInvalid, domain.KindOf(err), "%v", err)
	otherOp, err := operations.New(operations.Deps{Store: f.st}).Create(context.Background(), domain.System(other), operations.CreateInput{Name: "theirs"})
	require.NoError(t, err)
	_, err = f.runTool(f.caller, "add_operation_items", `{"operation_id": "`+otherOp.ID.String()+`", "order_ids": ["`+f.order.String()+`"]}`, "")
	require.Equal(t, domain.KindNotFound, domain.KindOf(err))
	_, err = f.runTool(f.caller, "execute_operation", `{"operation_id": "`+otherOp.ID.String()+`"}`, "")
	require.Equal(t, domain.KindNotFound, domain.KindOf(err))
	_, err = f.runTool(f.caller, "evaluate_dispatchers", `{"order_id": "`+otherOrder.String()+`"}`, "")
	require.Equal(t, domain.KindNotFound, domain.KindOf(err))

	// apply_operation_action checks its reference in the organization.
	_, err = f.runTool(f.caller, "apply_operation_action", `{"operation_id": "`+opID+`", "item_ids": ["`+item["id"].(string)+`"],
		"action": {"type": "override-carrier", "config": {"carrierAccountId": "`+uuid.NewString()+`"}}}`, "")
	require.Equal(t, domain.KindInvalid, domain.KindOf(err), "%v", err)

	perf, err := f.runTool(f.caller, "carrier_performance", `{"days": 7}`, "")
	require.NoError(t, err)
	require.NotNil(t, perf["items"])

	ev, err := f.runTool(f.caller, "evaluate_dispatchers", `{"order_id": "`+f.order.String()+`"}`, "")
	require.NoError(t, err)
	require.EqualValues(t, 0, ev["assignmentsCreated"], "the organization has no dispatcher")

	// Inputs that fail the schemas never reach a Service.
	tools := f.svc.Tools()
	for name, in := range map[string]string{
		"add_operation_items":    `{"operation_id": "` + opID + `", "order_ids": ["not-an-id"]}`,
		"list_operations":        `{"status": "bogus"}`,
		"create_operation":       `{}`,
		"apply_operation_action": `{"operation_id": "` + opID + `", "item_ids": [], "action": {"type": "x", "config": {}}}`,
		"execute_operation":      `{"operation_id": 5}`,
		"carrier_performance":    `{"days": 0}`,
		"evaluate_dispatchers":   `{"order": "x"}`,
	} {
		tool, ok := tools.Get(name)
		require.True(t, ok)
		require.Error(t, tool.Validate(json.RawMessage(in)), name)
	}
	require.Zero(t, runs.executed.Load())
}

func TestOperationToolsFollowTheCallersScopes(t *testing.T) {
	f := newFixture(t, agent.Config{})
	f.domainTools()
	key := domain.Actor{Kind: domain.ActorAPIKey, ID: uuid.New(), OrganizationID: f.org, Scoped: true,
		Scopes: []string{"operations:read", "orders:read", "agent:write"}}
	var names []string
	for _, tool := range f.svc.Tools().Offered(key) {
		names = append(names, tool.Name)
	}
	require.Contains(t, names, "list_operations")
	for _, n := range []string{"create_operation", "add_operation_items", "apply_operation_action", "execute_operation", "evaluate_dispatchers", "carrier_performance"} {
		require.NotContains(t, names, n, "a tool the caller may not use is not offered")
	}
	_, err := f.runTool(key, "create_operation", `{"name": "x"}`, "k")
	require.Equal(t, domain.KindForbidden, domain.KindOf(err), "%v", err)

	all := f.svc.Tools().Offered(f.caller)
	risk := map[string]float64{}
	for _, tool := range all {
		risk[tool.Name] = tool.Risk
	}
	require.Equal(t, 0.9, risk["execute_operation"])
	require.Equal(t, 0.1, risk["add_order_note"])
	for _, n := range []string{"carrier_performance", "list_operations", "create_operation", "add_operation_items", "apply_operation_action", "execute_operation", "evaluate_dispatchers"} {
		require.Contains(t, risk, n)
	}
	require.Subset(t, f.svc.Tools().WriteTools(), []string{"create_operation", "add_operation_items", "apply_operation_action", "execute_operation", "evaluate_dispatchers"})
}

// The chat path: the sandbox model's commands map to the tools; a write
// waits for approval and runs once when approved; bad input and another
// organization's ids are tool errors, never a failed turn.
func TestOperationToolsInConversations(t *testing.T) {
	f := newFixture(t, agent.Config{})
	runs := f.domainTools()
	ctx := context.Background()
	ops := operations.New(operations.Deps{Store: f.st})
	op, err := ops.Create(ctx, f.caller, operations.CreateInput{Name: "Ship today"})
	require.NoError(t, err)
	second := uuid.New()
	f.insertOrder(f.org, second, 50)
	_, err = ops.AddItems(ctx, f.caller, op.ID, []uuid.UUID{f.order, second})
	require.NoError(t, err)

	// A read tool.
	conv := f.conversation()
	r := f.run(conv)
	u := r.chat(0, "list operations")
	r.exec()
	require.Equal(t, agent.StatusCompleted, status(t, u))
	d, err := f.svc.GetConversation(ctx, f.caller, conv)
	require.NoError(t, err)
	calls := d.Calls[d.Messages[1].ID]
	require.Len(t, calls, 1)
	require.Equal(t, "list_operations", calls[0].ToolName)
	require.Contains(t, *calls[0].ResultContent, op.ID.String())

	// execute_operation waits for approval; the pending action counts the
	// orders the operation touches; approving runs it once.
	conv = f.conversation()
	r = f.run(conv)
	u = r.chat(0, "execute operation "+op.ID.String())
	var actionID uuid.UUID
	r.env.RegisterDelayedCallback(func() {
		list := f.actions(conv)
		require.Len(t, list, 1)
		require.Equal(t, "execute_operation", list[0].ToolName)
		require.Equal(t, 2, list[0].AffectedItemCount)
		require.Zero(t, runs.executed.Load(), "nothing runs before approval")
		actionID = list[0].ID
	}, time.Minute)
	var approved *updateResult
	r.env.RegisterDelayedCallback(func() { approved = r.decide(0, true, actionID, "") }, 2*time.Minute)
	r.exec()
	require.Equal(t, agent.StatusAwaitingApproval, status(t, u))
	require.True(t, approved.done)
	require.NoError(t, approved.err)
	var out agent.DecisionOutcome
	approved.into(&out)
	require.False(t, out.IsError, "%s", out.Result)
	_, err = f.svc.Decide(ctx, f.caller, actionID, true, "")
	require.Equal(t, domain.KindConflict, domain.KindOf(err), "an approved action is not approved twice")
	require.EqualValues(t, 1, runs.executed.Load(), "the approved execution ran once")

	// Another organization's operation, and input that fails the schema:
	// tool errors for the model.
	other := uuid.New()
	f.insertOrg(other)
	theirs, err := ops.Create(ctx, domain.System(other), operations.CreateInput{Name: "theirs"})
	require.NoError(t, err)
	for _, msg := range []string{
		"execute operation " + theirs.ID.String(),
		`call add_operation_items {"operation_id": "` + op.ID.String() + `", "order_ids": ["nope"]}`,
		"apply override-carrier " + uuid.NewString() + " to items " + uuid.NewString() + " of operation " + theirs.ID.String(),
	} {
		conv = f.conversation()
		r = f.run(conv)
		u = r.chat(0, msg)
		r.exec()
		require.Equal(t, agent.StatusCompleted, status(t, u), msg)
		d, err = f.svc.GetConversation(ctx, f.caller, conv)
		require.NoError(t, err)
		calls = d.Calls[d.Messages[1].ID]
		require.Len(t, calls, 1, msg)
		require.True(t, calls[0].IsError, "%s: %v", msg, *calls[0].ResultContent)
		require.Empty(t, f.actions(conv), "nothing waits: %s", msg)
	}
	require.EqualValues(t, 1, runs.executed.Load())
}

func TestOperationToolsAutoApprovalLimits(t *testing.T) {
	f := newFixture(t, agent.Config{})
	f.domainTools()
	ctx := context.Background()
	op, err := operations.New(operations.Deps{Store: f.st}).Create(ctx, f.caller, operations.CreateInput{Name: "auto"})
	require.NoError(t, err)
	second := uuid.New()
	f.insertOrder(f.org, second, 50)
	add := func(ids ...uuid.UUID) string {
		list := make([]string, len(ids))
		for i, id := range ids {
			list[i] = id.String()
		}
		return "add orders " + joinIDs(list) + " to operation " + op.ID.String()
	}
	ptr := func(v float64) *float64 { return &v }
	f.setPermission(store.AgentToolPermission{ToolName: "add_operation_items", ApprovalRequired: false, MaxAutoItems: 1, RiskThreshold: 0.5})
	require.False(t, f.turnAuto(add(f.order, second)), "max_auto_items counts the orders the call touches")
	require.True(t, f.turnAuto(add(f.order)))
	f.setPermission(store.AgentToolPermission{ToolName: "add_operation_items", ApprovalRequired: false, MaxAutoItems: 10, RiskThreshold: 0.5, MaxOrderValue: ptr(20)})
	require.False(t, f.turnAuto(add(second)), "max_order_value: the order's total is 50")
	f.setPermission(store.AgentToolPermission{ToolName: "execute_operation", ApprovalRequired: false, MaxAutoItems: 10, RiskThreshold: 0.5})
	require.False(t, f.turnAuto("execute operation "+op.ID.String()), "risk 0.9 is not below the threshold")
}

func joinIDs(ids []string) string {
	out := ""
	for i, s := range ids {
		if i > 0 {
			out += ", "
		}
		out += s
	}
	return out
}
