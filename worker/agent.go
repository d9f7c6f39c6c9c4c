package worker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/agent"
	"github.com/fos-dev/fos/agent/llm"
	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/insights"
	"github.com/fos-dev/fos/orders"
	"github.com/fos-dev/fos/routing"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/shipping"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/workflows"
)

// AgentDeps build the agent domain's Service, in the API and the worker
// alike.
type AgentDeps struct {
	Store    *store.Store
	Secrets  *secrets.Box
	Carriers *carriers.Registry
	Hooks    rules.OrderHooks
	Logger   *slog.Logger
	BaseURL  string
	// Temporal and TaskQueue run the conversations (and the label
	// purchases of the create_shipment tool); nil: not available.
	Temporal  client.Client
	TaskQueue string
	// Provider is the model (nil: a turn fails saying none is configured).
	Provider llm.Provider
	Config   agent.Config
	// Operations, Performance and Dispatchers are the domain services of
	// the operations, carrier_performance and evaluate_dispatchers tools
	// (the API passes its own; nil: those tools are not offered).
	Operations  agent.Operations
	Performance agent.Performance
	Dispatchers agent.Dispatchers
	// Orders is the orders Service (nil: built over Store and Hooks).
	Orders *orders.Service
}

// NewAgentService builds the agent's Service over the domain services
// (orders, shipping). Orders, when set, is the orders Service the tools
// call (the API's); nil: one is built over Store and Hooks.
func NewAgentService(d AgentDeps) (*agent.Service, error) {
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	sd := shipping.Deps{Store: d.Store, Secrets: d.Secrets, Carriers: d.Carriers, Logger: log, Hooks: d.Hooks, BaseURL: d.BaseURL,
		Events: AgentEvents(d.Store, d.Temporal, d.TaskQueue, d.Provider, d.Config, log)}
	var runs agent.Runs
	if d.Temporal != nil {
		t := TemporalShipping{Client: d.Temporal, TaskQueue: d.TaskQueue, Log: log}
		sd.Labels, sd.Actions, sd.Pickups = t, t, t
		runs = TemporalAgent{Client: d.Temporal, TaskQueue: d.TaskQueue, Log: log, Provider: d.Provider, Config: d.Config}
	}
	ord := d.Orders
	if ord == nil {
		ord = orders.New(orders.Deps{Store: d.Store, Logger: log, Hooks: d.Hooks})
	}
	tools, err := agent.NewToolsFrom(agent.Ports{Orders: AgentOrders{Orders: ord}, Shipping: shipping.New(sd),
		Accounts: agent.StoreAccounts{Store: d.Store}, Memory: agent.StoreMemory{Store: d.Store},
		Operations: d.Operations, Performance: d.Performance, Dispatchers: d.Dispatchers})
	if err != nil {
		return nil, err
	}
	return agent.New(agent.Deps{Store: d.Store, Provider: d.Provider, Tools: tools, Runs: runs, Logger: log, Config: d.Config}), nil
}

// registerAgent registers AgentConversation (agent-conversation/<id>)
// and its activities.
func registerAgent(r sdkworker.Registry, deps Deps) {
	r.RegisterWorkflowWithOptions(workflows.AgentConversation, workflow.RegisterOptions{Name: workflows.AgentConversationWorkflowType})
	r.RegisterWorkflowWithOptions(workflows.AgentReconcile, workflow.RegisterOptions{Name: workflows.AgentReconcileWorkflowType})
	hooks := deps.OrderHooks
	if hooks == nil {
		hooks = &rules.Hooks{Store: deps.Store, Log: deps.Logger}
	}
	ad := AgentDeps{Store: deps.Store, Secrets: deps.Secrets, Carriers: deps.Carriers, Hooks: hooks, Logger: deps.Logger,
		Temporal: deps.Temporal, TaskQueue: deps.TaskQueue, Provider: deps.LLM, Config: deps.Agent}
	if deps.Store != nil {
		// The same domain services the API's handlers call.
		ad.Operations = NewOperations(deps)
		ad.Performance = insights.New(insights.Deps{Store: deps.Store, Operations: insights.StoreOperations{Store: deps.Store}})
		ad.Dispatchers = routing.New(routing.Deps{Store: deps.Store, Logger: deps.Logger, Hooks: hooks, Starter: DispatchStarter(deps)})
	}
	svc, err := NewAgentService(ad)
	if err != nil {
		deps.Logger.Error("agent tools", "error", err.Error())
		return
	}
	r.RegisterActivity(&activities.AgentActivities{Agent: svc})
}

// TemporalAgent implements agent.Runs: each conversation is the
// AgentConversation run agent-conversation/<conversationId>; a turn and a
// decision are updates sent with update-with-start, so a conversation
// whose run completed (idle) starts again, picking up its pending actions.
type TemporalAgent struct {
	Client    client.Client
	TaskQueue string
	Log       *slog.Logger
	Provider  llm.Provider
	Config    agent.Config
}

func (t TemporalAgent) input(orgID, convID uuid.UUID) workflows.AgentConversationInput {
	return workflows.AgentConversationInput{
		OrganizationID: orgID.String(), ConversationID: convID.String(),
		LocalModel:  t.Provider != nil && t.Provider.Name() == "sandbox",
		TokenBudget: t.Config.TurnTokenBudget, MaxSteps: t.Config.MaxSteps, ModelTimeout: t.Config.ModelTimeout,
	}
}

// update sends an update with start and waits for its result. A run that
// completed while the update was on its way is started again.
func (t TemporalAgent) update(ctx context.Context, orgID, convID uuid.UUID, name string, arg, out any) error {
	in := t.input(orgID, convID)
	opts := StartOptions(workflows.AgentConversationWorkflowID(in.ConversationID), t.TaskQueue, in.OrganizationID, map[string]any{"conversationId": in.ConversationID})
	var err error
	for attempt := 1; attempt <= StartAttempts; attempt++ {
		var h client.WorkflowUpdateHandle
		h, err = t.Client.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
			StartWorkflowOperation: t.Client.NewWithStartWorkflowOperation(opts, workflows.AgentConversationWorkflowType, in),
			UpdateOptions: client.UpdateWorkflowOptions{
				WorkflowID: opts.ID, UpdateName: name, Args: []any{arg}, WaitForStage: client.WorkflowUpdateStageCompleted,
			},
		})
		if err == nil {
			err = h.Get(ctx, out)
		}
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return context.DeadlineExceeded
		}
		var notFound *serviceerror.NotFound
		if !errors.As(err, &notFound) {
			break
		}
		time.Sleep(time.Duration(attempt) * 50 * time.Millisecond)
	}
	return agentUpdateError(ctx, err)
}

// agentUpdateError maps an update's refusal to a domain error.
func agentUpdateError(ctx context.Context, err error) error {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		switch appErr.Type() {
		case activities.ErrTypeAgentGone:
			return domain.Gone(appErr.Message())
		case activities.ErrTypeAgentConflict, activities.ErrTypeAgentBusy:
			return domain.Conflict(appErr.Message())
		case activities.ErrTypeAgentNotFound:
			return &domain.Error{Kind: domain.KindNotFound, Message: appErr.Message()}
		case activities.ErrTypeAgentInvalid:
			return domain.InvalidField("message", appErr.Message())
		}
	}
	return Unavailable(ctx, err)
}

// Chat implements agent.Runs.
func (t TemporalAgent) Chat(ctx context.Context, orgID, convID uuid.UUID, turn agent.Turn) (agent.TurnOutcome, error) {
	var out agent.TurnOutcome
	err := t.update(ctx, orgID, convID, workflows.AgentChatUpdate, turn, &out)
	return out, err
}

// Start implements agent.Starter: the conversation's run starts with its
// first turn (a run going already is left as it is), not waited for.
func (t TemporalAgent) Start(ctx context.Context, orgID, convID uuid.UUID, turn agent.Turn) error {
	in := t.input(orgID, convID)
	in.Turn = &turn
	opts := StartOptions(workflows.AgentConversationWorkflowID(in.ConversationID), t.TaskQueue, in.OrganizationID, map[string]any{"conversationId": in.ConversationID})
	_, err := t.Client.ExecuteWorkflow(ctx, opts, workflows.AgentConversationWorkflowType, in)
	return err
}

// AgentEvents is the standing orders' event listener over Temporal (nil
// without a client: no standing order runs on events).
func AgentEvents(st *store.Store, c client.Client, taskQueue string, provider llm.Provider, cfg agent.Config, log *slog.Logger) rules.Events {
	if c == nil || st == nil {
		return nil
	}
	return agent.NewStanding(st, TemporalAgent{Client: c, TaskQueue: taskQueue, Log: log, Provider: provider, Config: cfg}, log)
}

// agentEvents is the worker's standing orders' event listener.
func agentEvents(deps Deps) rules.Events {
	return AgentEvents(deps.Store, deps.Temporal, deps.TaskQueue, deps.LLM, deps.Agent, deps.Logger)
}

// Decide implements agent.Runs.
func (t TemporalAgent) Decide(ctx context.Context, orgID, convID uuid.UUID, d agent.Decision) (agent.DecisionOutcome, error) {
	var out agent.DecisionOutcome
	err := t.update(ctx, orgID, convID, workflows.AgentDecideUpdate, d, &out)
	return out, err
}

// AgentReconcileInterval is how often the agent's reconciler runs.
const AgentReconcileInterval = 10 * time.Minute

// EnsureAgentReconcileSchedule creates (or updates) the Temporal Schedule
// schedule/agent-reconcile, which runs AgentReconcile every 10 minutes.
func EnsureAgentReconcileSchedule(ctx context.Context, c client.Client, taskQueue string) error {
	return ensureSchedule(ctx, c, scheduleSpec{
		id:    "schedule/agent-reconcile",
		every: AgentReconcileInterval,
		action: &client.ScheduleWorkflowAction{
			ID: "agent-reconcile", Workflow: workflows.AgentReconcileWorkflowType, TaskQueue: taskQueue,
			WorkflowExecutionTimeout: 10 * time.Minute, Memo: map[string]any{"job": "agent-reconcile"},
		},
		note: "expires overdue agent pending actions and fails stuck agent turns",
	})
}
