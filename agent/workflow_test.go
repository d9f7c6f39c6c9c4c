package agent_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/agent"
	"github.com/fos-dev/fos/agent/llm"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/shipping"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
	"github.com/fos-dev/fos/workflows"
)

func TestMain(m *testing.M) { os.Exit(storetest.Run(m)) }

// fakeShipping stands in for the shipping domain: it counts the writes.
type fakeShipping struct {
	created, actions atomic.Int32
	org              uuid.UUID
}

func (f *fakeShipping) ListShipments(ctx context.Context, actor domain.Actor, in shipping.ListShipmentsInput) (shipping.ShipmentPage, error) {
	return shipping.ShipmentPage{}, nil
}
func (f *fakeShipping) GetShipment(ctx context.Context, actor domain.Actor, id uuid.UUID, b, o bool) (shipping.ShipmentPage, error) {
	return shipping.ShipmentPage{}, domain.NotFound("shipment")
}
func (f *fakeShipping) RequestAction(ctx context.Context, actor domain.Actor, id uuid.UUID, in shipping.ActionInput) (shipping.RequestedAction, error) {
	if actor.OrganizationID != f.org {
		return shipping.RequestedAction{}, domain.NotFound("shipment")
	}
	f.actions.Add(1)
	return shipping.RequestedAction{ActionID: in.ID, Status: "pending"}, nil
}
func (f *fakeShipping) CreateShipment(ctx context.Context, actor domain.Actor, in shipping.CreateShipmentInput) (shipping.Shipment, error) {
	f.created.Add(1)
	amt := 7.5
	return shipping.Shipment{ID: in.ID, OrderID: &in.OrderID, Status: "label_created", RateAmount: &amt}, nil
}
func (f *fakeShipping) QuoteOrder(ctx context.Context, actor domain.Actor, orderID uuid.UUID, opts shipping.RateOptions) (shipping.RateQuote, error) {
	return shipping.RateQuote{}, nil
}

// recorder is the sandbox model, keeping the last request.
type recorder struct {
	llm.Sandbox
	last llm.Request
}

func (r *recorder) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	r.last = req
	return r.Sandbox.Complete(ctx, req)
}

// fixture is an organization with an order, a user who chats and the
// agent over the real database with the sandbox model.
type fixture struct {
	t      *testing.T
	st     *store.Store
	svc    *agent.Service
	ship   *fakeShipping
	model  *recorder
	org    uuid.UUID
	order  uuid.UUID
	caller domain.Actor
}

func newFixture(t *testing.T, cfg agent.Config) *fixture {
	st := storetest.New(t)
	f := &fixture{t: t, st: st, org: uuid.New(), order: uuid.New()}
	f.ship = &fakeShipping{org: f.org}
	f.insertOrg(f.org)
	f.insertOrder(f.org, f.order, 10)
	f.caller = domain.Actor{Kind: domain.ActorUser, ID: uuid.New(), OrganizationID: f.org, Name: "Ada", Role: "owner"}
	tools, err := agent.NewTools(agent.StoreOrders{Store: st}, f.ship, agent.StoreAccounts{Store: st}, agent.StoreMemory{Store: st})
	require.NoError(t, err)
	if cfg.ApprovalTTL == 0 {
		cfg.ApprovalTTL = time.Hour
	}
	f.model = &recorder{}
	f.svc = agent.New(agent.Deps{Store: st, Provider: f.model, Tools: tools, Config: cfg})
	return f
}

func (f *fixture) insertOrg(id uuid.UUID) {
	_, err := f.st.Pool.Exec(context.Background(), `INSERT INTO organizations (id, name, slug) VALUES ($1, 'Agent', $2)`, id, "agent-"+id.String())
	require.NoError(f.t, err)
}

func (f *fixture) insertOrder(org, id uuid.UUID, total float64) {
	_, err := f.st.Pool.Exec(context.Background(), `INSERT INTO orders (id, organization_id, external_id, order_number, status, customer, customer_email, line_items, totals, total, ordered_at)
		VALUES ($1, $2, $3, $4, 'pending', '{"email": "c@example.com"}', 'c@example.com', '[]', jsonb_build_object('total', $5::numeric), $5::numeric, now())`,
		id, org, "ext-"+id.String()[:8], "#"+id.String()[:6], total)
	require.NoError(f.t, err)
}

func (f *fixture) conversation() uuid.UUID {
	actor, _ := json.Marshal(f.caller)
	c, err := store.InsertAgentConversation(context.Background(), f.st.Pool, store.AgentConversation{ID: uuid.New(), OrganizationID: f.org, Title: "t", Actor: actor})
	require.NoError(f.t, err)
	return c.ID
}

func (f *fixture) setPermission(p store.AgentToolPermission) {
	require.NoError(f.t, store.UpsertAgentToolPermissions(context.Background(), f.st, f.org, []store.AgentToolPermission{p}))
}

func (f *fixture) notes(order uuid.UUID) int {
	var n int
	require.NoError(f.t, f.st.Pool.QueryRow(context.Background(), `SELECT count(*) FROM order_activities WHERE order_id = $1 AND type = 'note'`, order).Scan(&n))
	return n
}

func (f *fixture) actions(conv uuid.UUID) []store.AgentPendingAction {
	list, err := store.ListAgentPendingActions(context.Background(), f.st.Pool, f.org, "", 100)
	require.NoError(f.t, err)
	var out []store.AgentPendingAction
	for _, a := range list {
		if a.ConversationID == conv {
			out = append(out, a)
		}
	}
	return out
}

// run is one workflow run of a conversation in the test environment.
type run struct {
	f    *fixture
	env  *testsuite.TestWorkflowEnvironment
	conv uuid.UUID
	in   workflows.AgentConversationInput
}

func (f *fixture) run(conv uuid.UUID) *run {
	var ts testsuite.WorkflowTestSuite
	ts.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	env := ts.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(workflows.AgentConversation, workflow.RegisterOptions{Name: workflows.AgentConversationWorkflowType})
	env.RegisterActivity(&activities.AgentActivities{Agent: f.svc})
	// Local activities write to the shared database: slow under load.
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	return &run{f: f, env: env, conv: conv, in: workflows.AgentConversationInput{OrganizationID: f.org.String(), ConversationID: conv.String(), LocalModel: true}}
}

type updateResult struct {
	done     bool
	rejected error
	err      error
	raw      json.RawMessage
}

func (u *updateResult) into(v any) {
	_ = json.Unmarshal(u.raw, v)
}

// update sends an update after delay.
func (r *run) update(delay time.Duration, name string, arg any) *updateResult {
	res := &updateResult{}
	r.env.RegisterDelayedCallback(func() {
		r.env.UpdateWorkflow(name, uuid.NewString(), &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { res.rejected, res.done = err, true },
			OnComplete: func(v any, err error) {
				res.done, res.err = true, err
				res.raw, _ = json.Marshal(v)
			},
		}, arg)
	}, delay)
	return res
}

func (r *run) chat(delay time.Duration, msg string) *updateResult {
	return r.update(delay, workflows.AgentChatUpdate, agent.Turn{TurnID: uuid.New(), Message: msg})
}

func (r *run) decide(delay time.Duration, approve bool, action uuid.UUID, note string) *updateResult {
	by := r.f.caller
	by.Kind, by.ID = domain.ActorUser, uuid.New()
	return r.update(delay, workflows.AgentDecideUpdate, agent.Decision{ActionID: action, DecisionID: uuid.New(), Approve: approve, Note: note, By: by})
}

func (r *run) exec() {
	r.env.ExecuteWorkflow(workflows.AgentConversationWorkflowType, r.in)
	require.True(r.f.t, r.env.IsWorkflowCompleted())
}

func status(t *testing.T, u *updateResult) string {
	t.Helper()
	require.True(t, u.done, "the update did not complete")
	require.NoError(t, u.rejected)
	require.NoError(t, u.err)
	var out agent.TurnOutcome
	u.into(&out)
	return out.Status
}

func TestTurnWithReadTool(t *testing.T) {
	f := newFixture(t, agent.Config{})
	conv := f.conversation()
	r := f.run(conv)
	u := r.chat(0, "list pending orders")
	r.exec()
	require.NoError(t, r.env.GetWorkflowError())
	require.Equal(t, agent.StatusCompleted, status(t, u))

	d, err := f.svc.GetConversation(context.Background(), f.caller, conv)
	require.NoError(t, err)
	require.Len(t, d.Messages, 3, "user, assistant with the tool call, assistant's answer")
	require.Equal(t, "user", d.Messages[0].Role)
	calls := d.Calls[d.Messages[1].ID]
	require.Len(t, calls, 1)
	require.Equal(t, "list_orders", calls[0].ToolName)
	require.False(t, calls[0].IsError)
	require.Contains(t, *calls[0].ResultContent, f.order.String(), "the tool answered with the organization's order")
	require.NotNil(t, d.Messages[1].InputTokens)
	require.Contains(t, d.Messages[2].Content, "Result:")
	require.Equal(t, "completed", d.Conversation.TurnStatus)
}

func TestWriteWaitsThenApprovalRunsOnce(t *testing.T) {
	f := newFixture(t, agent.Config{})
	conv := f.conversation()
	r := f.run(conv)
	u := r.chat(0, "add note call the customer to order "+f.order.String())
	var action uuid.UUID
	var approve *updateResult
	r.env.RegisterDelayedCallback(func() {
		list := f.actions(conv)
		require.Len(t, list, 1)
		action = list[0].ID
		require.Equal(t, agent.ActionPending, list[0].Status)
		require.Equal(t, 0, f.notes(f.order), "nothing is written before approval")
		approve = r.decide(0, true, action, "ok")
	}, time.Minute)
	r.exec()
	require.NoError(t, r.env.GetWorkflowError(), "the run completes once nothing is pending")
	require.Equal(t, agent.StatusAwaitingApproval, status(t, u))
	require.True(t, approve.done)
	require.NoError(t, approve.err)
	var out agent.DecisionOutcome
	approve.into(&out)
	require.Equal(t, agent.ActionApproved, out.Status)
	require.False(t, out.IsError, "%s", out.Result)
	require.Equal(t, 1, f.notes(f.order))

	a, err := store.AgentPendingActionByID(context.Background(), f.st.Pool, f.org, action)
	require.NoError(t, err)
	require.Equal(t, agent.ActionApproved, a.Status)
	require.NotNil(t, a.ExecutedAt)
	// The same approval again runs nothing: the execution was claimed.
	again, err := f.svc.ExecuteAction(context.Background(), f.org, action)
	require.NoError(t, err)
	require.Equal(t, agent.ActionApproved, again.Status)
	require.Equal(t, 1, f.notes(f.order))
	// And deciding it again is a conflict.
	_, err = f.svc.ResolveAction(context.Background(), f.org, agent.Resolve{ActionID: action, Status: agent.ActionRejected, By: &f.caller, DecisionID: "other"})
	require.ErrorIs(t, err, domain.ErrConflict)

	d, err := f.svc.GetConversation(context.Background(), f.caller, conv)
	require.NoError(t, err)
	last := d.Messages[len(d.Messages)-1]
	require.Contains(t, last.Content, "approved and done")
	call := d.Calls[d.Messages[1].ID][0]
	require.Equal(t, "approved", *call.ResolvedVia)
}

func TestRejectionSharesTheNote(t *testing.T) {
	f := newFixture(t, agent.Config{})
	conv := f.conversation()
	r := f.run(conv)
	r.chat(0, "add note hello to order "+f.order.String())
	var reject *updateResult
	r.env.RegisterDelayedCallback(func() {
		list := f.actions(conv)
		require.Len(t, list, 1)
		reject = r.decide(0, false, list[0].ID, "not this customer")
	}, time.Minute)
	r.exec()
	require.NoError(t, r.env.GetWorkflowError())
	require.True(t, reject.done)
	require.NoError(t, reject.err)
	require.Equal(t, 0, f.notes(f.order), "a rejected action never runs")
	list := f.actions(conv)
	require.Equal(t, agent.ActionRejected, list[0].Status)
	require.Equal(t, "not this customer", *list[0].Note)
	d, err := f.svc.GetConversation(context.Background(), f.caller, conv)
	require.NoError(t, err)
	require.Contains(t, d.Messages[len(d.Messages)-1].Content, "not this customer")
}

func TestPendingActionExpires(t *testing.T) {
	f := newFixture(t, agent.Config{ApprovalTTL: time.Hour})
	conv := f.conversation()
	r := f.run(conv)
	u := r.chat(0, "add note hello to order "+f.order.String())
	// The durable timer (an hour) is skipped by the test environment; the
	// expiry is judged at the time the timer fired.
	start := time.Now()
	r.exec()
	require.NoError(t, r.env.GetWorkflowError())
	require.Equal(t, agent.StatusAwaitingApproval, status(t, u))
	require.Less(t, time.Since(start), 30*time.Second)
	list := f.actions(conv)
	require.Len(t, list, 1)
	require.Equal(t, agent.ActionExpired, list[0].Status)
	require.Equal(t, 0, f.notes(f.order))
	// Approving it now is Gone.
	_, err := f.svc.Decide(context.Background(), f.caller, list[0].ID, true, "")
	require.ErrorIs(t, err, domain.ErrGone)
	d, err := f.svc.GetConversation(context.Background(), f.caller, conv)
	require.NoError(t, err)
	require.Contains(t, d.Messages[len(d.Messages)-1].Content, "expired")
}

func TestApproveAndExpiryRaceIsSettledByTheDatabase(t *testing.T) {
	f := newFixture(t, agent.Config{ApprovalTTL: time.Hour})
	conv := f.conversation()
	r := f.run(conv)
	r.chat(0, "add note hello to order "+f.order.String())
	r.env.RegisterDelayedCallback(func() { r.env.CancelWorkflow() }, time.Minute)
	r.env.ExecuteWorkflow(workflows.AgentConversationWorkflowType, r.in)
	list := f.actions(conv)
	require.Len(t, list, 1)
	id := list[0].ID
	ctx := context.Background()
	// Expiry before its time does nothing.
	res, err := f.svc.ResolveAction(ctx, f.org, agent.Resolve{ActionID: id, Status: agent.ActionExpired})
	require.NoError(t, err)
	require.Equal(t, agent.ActionPending, res.Status)
	// Once due, expiry and approval race: whichever the database takes
	// first wins, the other is refused.
	_, err = f.st.Pool.Exec(ctx, `UPDATE agent_pending_actions SET expires_at = now() - interval '1 second' WHERE id = $1`, id)
	require.NoError(t, err)
	_, err = f.svc.ResolveAction(ctx, f.org, agent.Resolve{ActionID: id, Status: agent.ActionApproved, By: &f.caller, DecisionID: "d1"})
	require.ErrorIs(t, err, domain.ErrGone)
	res, err = f.svc.ResolveAction(ctx, f.org, agent.Resolve{ActionID: id, Status: agent.ActionExpired})
	require.NoError(t, err)
	require.Equal(t, agent.ActionExpired, res.Status)
	_, err = f.svc.ExecuteAction(ctx, f.org, id)
	require.ErrorIs(t, err, domain.ErrConflict, "an expired action never runs")
	require.Equal(t, 0, f.notes(f.order))
}

// turnAuto runs one chat turn and reports whether its write ran without
// approval.
func (f *fixture) turnAuto(msg string) (auto bool) {
	conv := f.conversation()
	r := f.run(conv)
	u := r.chat(0, msg)
	r.env.RegisterDelayedCallback(func() { r.env.CancelWorkflow() }, time.Minute)
	r.env.ExecuteWorkflow(workflows.AgentConversationWorkflowType, r.in)
	st := status(f.t, u)
	return st == agent.StatusCompleted && len(f.actions(conv)) == 0
}

func TestAutoApprovalLimits(t *testing.T) {
	f := newFixture(t, agent.Config{})
	note := "add note auto to order " + f.order.String()
	ptr := func(v float64) *float64 { return &v }
	iptr := func(v int) *int { return &v }
	base := func() store.AgentToolPermission {
		return store.AgentToolPermission{ToolName: "add_order_note", ApprovalRequired: false, MaxAutoItems: 10, RiskThreshold: 0.5}
	}
	require.False(t, f.turnAuto(note), "without a permission a write waits")

	f.setPermission(base())
	require.True(t, f.turnAuto(note), "approval_required false and every limit holding: it runs")
	require.Equal(t, 1, f.notes(f.order))

	p := base()
	p.ApprovalRequired = true
	f.setPermission(p)
	require.False(t, f.turnAuto(note), "approval_required")

	p = base()
	p.MaxAutoItems = 0
	f.setPermission(p)
	require.False(t, f.turnAuto(note), "max_auto_items")

	p = base()
	p.RiskThreshold = 0.1
	f.setPermission(p)
	require.False(t, f.turnAuto(note), "risk_threshold: the note's risk 0.1 is not below 0.1")

	p = base()
	p.MaxOrderValue = ptr(5)
	f.setPermission(p)
	require.False(t, f.turnAuto(note), "max_order_value: the order's total is 10")
	p.MaxOrderValue = ptr(10)
	f.setPermission(p)
	require.True(t, f.turnAuto(note), "a total at the limit holds")

	p = base()
	p.MaxDailyAutoExecutions = iptr(3) // two auto runs today already
	f.setPermission(p)
	require.True(t, f.turnAuto(note))
	require.False(t, f.turnAuto(note), "max_daily_auto_executions")
	require.Equal(t, 3, f.notes(f.order))

	// budget_cap_daily: label money spent by auto runs today.
	f.setPermission(store.AgentToolPermission{ToolName: "create_shipment", ApprovalRequired: false, MaxAutoItems: 10, RiskThreshold: 0.8, BudgetCapDaily: ptr(10)})
	ship := "call create_shipment {\"order_id\": \"" + f.order.String() + "\", \"carrier_account_id\": \"" + uuid.NewString() + "\", \"service\": \"GROUND\"}"
	require.True(t, f.turnAuto(ship))
	require.True(t, f.turnAuto(ship), "7.50 spent of 10")
	require.False(t, f.turnAuto(ship), "15.00 spent: the cap is reached")
	require.EqualValues(t, 2, f.ship.created.Load())
}

func TestTokenBudgetEndsTheTurn(t *testing.T) {
	f := newFixture(t, agent.Config{})
	conv := f.conversation()
	r := f.run(conv)
	r.in.TokenBudget = 5
	u := r.chat(0, "list pending orders")
	r.exec()
	require.Equal(t, agent.StatusFailed, status(t, u))
	c, err := store.AgentConversationByID(context.Background(), f.st.Pool, f.org, conv)
	require.NoError(t, err)
	require.Equal(t, "failed", c.TurnStatus)
	require.Contains(t, *c.TurnError, "token budget")
}

func TestOneTurnAtATime(t *testing.T) {
	f := newFixture(t, agent.Config{})
	conv := f.conversation()
	r := f.run(conv)
	// A turn whose write waits, and a second turn sent while the first is
	// running is refused by the validator.
	first := r.chat(0, "add note a to order "+f.order.String())
	second := r.chat(0, "list orders")
	r.env.RegisterDelayedCallback(func() { r.env.CancelWorkflow() }, time.Minute)
	r.env.ExecuteWorkflow(workflows.AgentConversationWorkflowType, r.in)
	require.True(t, first.done)
	require.True(t, second.done)
	require.Error(t, second.rejected, "the second turn is refused while the first runs")
}

func TestContinueAsNewKeepsPendingActions(t *testing.T) {
	f := newFixture(t, agent.Config{})
	conv := f.conversation()
	r := f.run(conv)
	r.in.MaxTurnsPerRun = 1
	r.chat(0, "add note a to order "+f.order.String())
	r.env.ExecuteWorkflow(workflows.AgentConversationWorkflowType, r.in)
	require.True(t, r.env.IsWorkflowCompleted())
	err := r.env.GetWorkflowError()
	require.Error(t, err)
	require.True(t, workflow.IsContinueAsNewError(err), "%v", err)
	// The next run picks the pending action up and expires it on time.
	open, err := f.svc.OpenActions(context.Background(), f.org, conv)
	require.NoError(t, err)
	require.Len(t, open, 1)
}

func TestModelMistakesBecomeToolErrors(t *testing.T) {
	f := newFixture(t, agent.Config{})
	other, otherOrder := uuid.New(), uuid.New()
	f.insertOrg(other)
	f.insertOrder(other, otherOrder, 1)
	cases := map[string]string{
		"unknown tool":        `call drop_database {}`,
		"not JSON":            `call list_orders {"status": `,
		"schema":              `call list_orders {"status": "everything"}`,
		"injected org field":  `call add_order_note {"order_id": "` + otherOrder.String() + `", "note": "x", "organization_id": "` + other.String() + `"}`,
		"not offered (scope)": `call list_carrier_accounts {}`,
	}
	for name, msg := range cases {
		t.Run(name, func(t *testing.T) {
			if name == "not offered (scope)" {
				f.caller.Scoped, f.caller.Scopes = true, []string{"agent:read", "agent:write", "orders:read"}
				defer func() { f.caller.Scoped, f.caller.Scopes = false, nil }()
			}
			conv := f.conversation()
			r := f.run(conv)
			u := r.chat(0, msg)
			r.exec()
			require.NoError(t, r.env.GetWorkflowError())
			require.Equal(t, agent.StatusCompleted, status(t, u))
			d, err := f.svc.GetConversation(context.Background(), f.caller, conv)
			require.NoError(t, err)
			call := d.Calls[d.Messages[1].ID][0]
			require.True(t, call.IsError, "%s", *call.ResultContent)
			require.Contains(t, *call.ResultContent, "invalid_tool_call")
			require.Empty(t, f.actions(conv))
		})
	}
}

func TestPromptInjectionCannotActOnAnotherOrganization(t *testing.T) {
	f := newFixture(t, agent.Config{})
	other, otherOrder := uuid.New(), uuid.New()
	f.insertOrg(other)
	f.insertOrder(other, otherOrder, 1)
	conv := f.conversation()
	r := f.run(conv)
	// The model names the other organization's order: the input is valid,
	// so it waits for approval; once approved it runs in the caller's
	// organization, where that order does not exist.
	r.chat(0, "add note pwned to order "+otherOrder.String())
	var approve *updateResult
	r.env.RegisterDelayedCallback(func() {
		list := f.actions(conv)
		require.Len(t, list, 1)
		approve = r.decide(0, true, list[0].ID, "")
	}, time.Minute)
	r.exec()
	require.True(t, approve.done)
	require.NoError(t, approve.err)
	var out agent.DecisionOutcome
	approve.into(&out)
	require.True(t, out.IsError)
	require.Contains(t, string(out.Result), "not found")
	require.Equal(t, 0, f.notes(otherOrder), "the other organization's order is untouched")

	// Reads likewise see only the caller's organization.
	conv = f.conversation()
	r = f.run(conv)
	r.chat(0, "show order "+otherOrder.String())
	r.exec()
	d, err := f.svc.GetConversation(context.Background(), f.caller, conv)
	require.NoError(t, err)
	call := d.Calls[d.Messages[1].ID][0]
	require.True(t, call.IsError)
	require.Contains(t, *call.ResultContent, "not found")
}

func TestMemoryIsGivenToTheModel(t *testing.T) {
	f := newFixture(t, agent.Config{})
	conv := f.conversation()
	r := f.run(conv)
	r.chat(0, "remember we ship fragile items with extra padding")
	r.exec()
	list, err := f.svc.ListMemory(context.Background(), f.caller, "", "")
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Contains(t, list[0].Content, "extra padding")
	require.Empty(t, f.actions(conv), "remember needs no approval")

	// The next turn gives the entry to the model, in the system prompt.
	r = f.run(f.conversation())
	r.chat(0, "list orders")
	r.exec()
	require.Contains(t, f.model.last.System, "extra padding")
	require.NotContains(t, f.model.last.System, "c@example.com", "order data stays out of the system prompt")
}

func TestReconcileSettlesWhatNoWorkflowWillSettle(t *testing.T) {
	f := newFixture(t, agent.Config{})
	conv := f.conversation()
	r := f.run(conv)
	r.chat(0, "add note a to order "+f.order.String())
	// The run goes away with the action pending (terminated, lost).
	r.env.RegisterDelayedCallback(func() { r.env.CancelWorkflow() }, time.Minute)
	r.env.ExecuteWorkflow(workflows.AgentConversationWorkflowType, r.in)
	ctx := context.Background()
	stuck := f.conversation()
	require.NoError(t, f.svc.BeginTurn(ctx, f.org, stuck, uuid.New(), "hello"))

	res, err := f.svc.Reconcile(ctx, 100)
	require.NoError(t, err)
	require.Zero(t, res.Expired, "nothing is overdue yet")

	_, err = f.st.Pool.Exec(ctx, `UPDATE agent_pending_actions SET expires_at = now() - interval '2 minutes' WHERE conversation_id = $1`, conv)
	require.NoError(t, err)
	_, err = f.st.Pool.Exec(ctx, `UPDATE agent_conversations SET turn_started_at = now() - interval '2 hours' WHERE id = $1`, stuck)
	require.NoError(t, err)
	res, err = f.svc.Reconcile(ctx, 100)
	require.NoError(t, err)
	require.GreaterOrEqual(t, res.Expired, 1)
	require.GreaterOrEqual(t, res.FailedTurns, 1)
	require.Equal(t, agent.ActionExpired, f.actions(conv)[0].Status)
	c, err := store.AgentConversationByID(ctx, f.st.Pool, f.org, stuck)
	require.NoError(t, err)
	require.Equal(t, "failed", c.TurnStatus)
}

// recordingRuns records the turns the Service sends to workflows.
type recordingRuns struct {
	turns []agent.Turn
	convs []uuid.UUID
}

func (r *recordingRuns) Chat(ctx context.Context, orgID, convID uuid.UUID, t agent.Turn) (agent.TurnOutcome, error) {
	r.turns, r.convs = append(r.turns, t), append(r.convs, convID)
	return agent.TurnOutcome{Status: agent.StatusProcessing}, nil
}

func (r *recordingRuns) Start(ctx context.Context, orgID, convID uuid.UUID, t agent.Turn) error {
	r.turns, r.convs = append(r.turns, t), append(r.convs, convID)
	return nil
}

func (r *recordingRuns) Decide(ctx context.Context, orgID, convID uuid.UUID, d agent.Decision) (agent.DecisionOutcome, error) {
	return agent.DecisionOutcome{}, nil
}

func TestStandingOrdersRunOncePerEventThroughApproval(t *testing.T) {
	f := newFixture(t, agent.Config{})
	runs := &recordingRuns{}
	tools, err := agent.NewTools(agent.StoreOrders{Store: f.st}, f.ship, agent.StoreAccounts{Store: f.st}, agent.StoreMemory{Store: f.st})
	require.NoError(t, err)
	svc := agent.New(agent.Deps{Store: f.st, Provider: f.model, Tools: tools, Runs: runs})
	ctx := context.Background()
	name, text, trig := "Note big orders", "add a note to big orders", "on_order_created"
	actions := json.RawMessage(`[{"tool": "add_order_note", "input": {"order_id": "` + f.order.String() + `", "note": "big order"}}]`)
	_, err = svc.CreateStandingOrder(ctx, f.caller, agent.StandingOrderInput{Name: &name, NaturalLanguage: &text, TriggerType: &trig,
		Conditions: json.RawMessage(`[{"field": "total", "operator": "greater_than", "value": 5}]`), Actions: actions})
	require.NoError(t, err)

	small := json.RawMessage(`{"id": "` + f.order.String() + `", "total": 3}`)
	got, err := svc.RunStandingOrders(ctx, f.org, trig, "order-created:small", small)
	require.NoError(t, err)
	require.Empty(t, got, "the conditions do not hold")
	big := json.RawMessage(`{"id": "` + f.order.String() + `", "total": 10}`)
	got, err = svc.RunStandingOrders(ctx, f.org, trig, "order-created:big", big)
	require.NoError(t, err)
	require.Len(t, got, 1)
	got2, err := svc.RunStandingOrders(ctx, f.org, trig, "order-created:big", big)
	require.NoError(t, err)
	require.Empty(t, got2, "an event delivered again runs once")
	other, err := svc.RunStandingOrders(ctx, f.org, "on_shipment_created", "x", big)
	require.NoError(t, err)
	require.Empty(t, other)
	require.Len(t, runs.turns, 1)
	c, err := store.AgentConversationByID(ctx, f.st.Pool, f.org, got[0].ConversationID)
	require.NoError(t, err)
	require.Equal(t, name, c.Title)

	// The turn in the conversation's workflow proposes the actions as
	// tool calls: the write waits for approval.
	r := f.run(got[0].ConversationID)
	u := r.update(0, workflows.AgentChatUpdate, runs.turns[0])
	r.exec()
	require.Equal(t, agent.StatusAwaitingApproval, status(t, u))
	list := f.actions(got[0].ConversationID)
	require.Len(t, list, 1)
	require.Equal(t, "add_order_note", list[0].ToolName)
	require.Equal(t, 0, f.notes(f.order))
}
