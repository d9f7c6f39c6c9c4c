package workflows

import (
	"errors"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/agent"
)

// AgentConversation runs one conversation with the agent
// (agent-conversation/<conversationId>, CONTRACT 5 and 11). A chat turn is
// the update "chat" (sent with update-with-start): the loop calls the
// model, runs read tools, and decides each write — run at once when its
// tool permission allows, else a pending action with a durable timer that
// expires it. Approve and reject are the update "decide". The workflow
// holds ids only: every step is an activity writing to PostgreSQL (local
// activities for the quick database steps, so a turn stays fast). It
// completes when idle (no turn running, no action pending) and continues
// as new after MaxTurnsPerRun turns or when Temporal suggests it; a run
// that starts picks up the conversation's pending actions again.

// AgentConversationWorkflowType is the workflow's registered name.
const AgentConversationWorkflowType = "AgentConversation"

// The updates of AgentConversation.
const (
	AgentChatUpdate   = "chat"
	AgentDecideUpdate = "decide"
)

// AgentConversationWorkflowID is the conversation's workflow id.
func AgentConversationWorkflowID(conversationID string) string {
	return "agent-conversation/" + conversationID
}

// AgentConversationInput starts (or continues) a conversation's run.
type AgentConversationInput struct {
	OrganizationID string `json:"organizationId"`
	ConversationID string `json:"conversationId"`
	// LocalModel runs the model step as a local activity (the sandbox
	// model, which makes no network call); a real model's calls are
	// regular activities with retries that honour Retry-After.
	LocalModel bool `json:"localModel,omitempty"`
	// TokenBudget bounds a turn's tokens; MaxSteps its model calls.
	TokenBudget int `json:"tokenBudget,omitempty"`
	MaxSteps    int `json:"maxSteps,omitempty"`
	// MaxTurnsPerRun: continue as new after this many turns (default 50).
	MaxTurnsPerRun int `json:"maxTurnsPerRun,omitempty"`
	// ModelTimeout bounds a model call (default 60 s).
	ModelTimeout time.Duration `json:"modelTimeout,omitempty"`
	// Turn is a first turn the run takes at its start (a standing order's
	// run, started by its event without waiting); a run continued as new
	// does not take it again.
	Turn *agent.Turn `json:"turn,omitempty"`
}

// Activity names (methods of activities.AgentActivities).
const (
	actAgentBeginTurn     = "AgentBeginTurn"
	actAgentModelStep     = "AgentModelStep"
	actAgentRunTool       = "AgentRunTool"
	actAgentProposeWrite  = "AgentProposeWrite"
	actAgentEndTurn       = "AgentEndTurn"
	actAgentOpenActions   = "AgentOpenActions"
	actAgentResolveAction = "AgentResolveAction"
	actAgentExecuteAction = "AgentExecuteAction"
)

type agentConv struct {
	in   AgentConversationInput
	busy bool
	// pending are the actions waiting, with their expiry; order keeps
	// their ids in the order they came (deterministic iteration).
	pending map[string]time.Time
	order   []string
	// tries counts expiries the database did not find due yet.
	tries map[string]int
	// version changes whenever pending does, to wake the main loop.
	version int
	turns   int
}

// AgentConversation is the workflow.
func AgentConversation(ctx workflow.Context, in AgentConversationInput) error {
	w := &agentConv{in: in, pending: map[string]time.Time{}, tries: map[string]int{}}
	if w.in.MaxTurnsPerRun <= 0 {
		w.in.MaxTurnsPerRun = 50
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, AgentChatUpdate, w.chat, workflow.UpdateHandlerOptions{
		Validator: func(ctx workflow.Context, t agent.Turn) error {
			if t.Message == "" || len([]rune(t.Message)) > agent.MaxMessageLen {
				return temporal.NewApplicationError("the message must have 1 to 10000 characters", activities.ErrTypeAgentInvalid)
			}
			if w.busy {
				return temporal.NewApplicationError("a turn of this conversation is running; wait for it", activities.ErrTypeAgentBusy)
			}
			return nil
		},
	}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, AgentDecideUpdate, w.decide, workflow.UpdateHandlerOptions{
		Validator: func(ctx workflow.Context, d agent.Decision) error {
			if d.ActionID == uuid.Nil {
				return temporal.NewApplicationError("an action id is required", activities.ErrTypeAgentInvalid)
			}
			return nil
		},
	}); err != nil {
		return err
	}
	var open []agent.OpenAction
	if err := workflow.ExecuteLocalActivity(w.localCtx(ctx), actAgentOpenActions, activities.AgentConversationRef{OrganizationID: in.OrganizationID, ConversationID: in.ConversationID}).Get(ctx, &open); err != nil {
		return err
	}
	for _, a := range open {
		w.watch(a.ID.String(), a.ExpiresAt)
	}
	if in.Turn != nil {
		first := *in.Turn
		in.Turn, w.in.Turn = nil, nil
		if _, err := w.chat(ctx, first); err != nil {
			workflow.GetLogger(ctx).Error("the first turn failed", "error", err)
		}
	}
	canSuggested := func() bool {
		return w.turns >= w.in.MaxTurnsPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested()
	}
	// The main loop: expire actions when their durable timer is due, and
	// end (or continue as new) once quiet.
	for {
		seen := w.version
		ready := func() bool {
			quiet := !w.busy && workflow.AllHandlersFinished(ctx)
			return w.version != seen || (quiet && (len(w.pending) == 0 || canSuggested()))
		}
		if due, ok := w.nextDue(); ok {
			d := due.Sub(workflow.Now(ctx)) + time.Second
			met := false
			if d > 0 {
				var err error
				if met, err = workflow.AwaitWithTimeout(ctx, d, ready); err != nil {
					return err
				}
			}
			if !met {
				w.expireDue(ctx)
				continue
			}
		} else if err := workflow.Await(ctx, ready); err != nil {
			return err
		}
		if w.version != seen {
			continue
		}
		break
	}
	if len(w.pending) > 0 {
		return workflow.NewContinueAsNewError(ctx, AgentConversationWorkflowType, in)
	}
	return nil
}

// nextDue is the earliest expiry of the pending actions.
func (w *agentConv) nextDue() (time.Time, bool) {
	var first time.Time
	for _, id := range w.order {
		if at := w.pending[id]; first.IsZero() || at.Before(first) {
			first = at
		}
	}
	return first, !first.IsZero()
}

// expireDue expires the actions whose time has come. The database
// settles a race with a decision; an action it does not find due yet
// (clock skew) is tried again a few seconds later, five times, then left
// to the reconciler.
func (w *agentConv) expireDue(ctx workflow.Context) {
	now := workflow.Now(ctx)
	for _, id := range append([]string(nil), w.order...) {
		at, ok := w.pending[id]
		if !ok || at.After(now) {
			continue
		}
		var r agent.Resolution
		in := activities.AgentResolveInput{OrganizationID: w.in.OrganizationID, ActionID: id, Status: agent.ActionExpired, At: now}
		err := workflow.ExecuteLocalActivity(w.localCtx(ctx), actAgentResolveAction, in).Get(ctx, &r)
		if _, still := w.pending[id]; !still {
			continue // decided meanwhile
		}
		if err != nil {
			workflow.GetLogger(ctx).Error("expire pending action", "action_id", id, "error", err)
		}
		if err == nil && r.Status == agent.ActionPending && w.tries[id] < 5 {
			w.tries[id]++
			w.pending[id] = now.Add(5 * time.Second)
			continue
		}
		w.forget(id)
	}
}

func (w *agentConv) localCtx(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, MaximumInterval: 10 * time.Second, MaximumAttempts: 5},
	})
}

func (w *agentConv) modelCtx(ctx workflow.Context) workflow.Context {
	timeout := w.in.ModelTimeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	retry := &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 5}
	if w.in.LocalModel {
		return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: timeout + 5*time.Second, RetryPolicy: retry})
	}
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: timeout + 5*time.Second, RetryPolicy: retry})
}

// chat runs one turn.
func (w *agentConv) chat(ctx workflow.Context, t agent.Turn) (agent.TurnOutcome, error) {
	w.busy = true
	defer func() { w.busy = false; w.turns++ }()
	org, conv := w.in.OrganizationID, w.in.ConversationID
	ti := activities.AgentTurnInput{OrganizationID: org, ConversationID: conv, TurnID: t.TurnID.String(), Message: t.Message}
	lctx := w.localCtx(ctx)
	if err := workflow.ExecuteLocalActivity(lctx, actAgentBeginTurn, ti).Get(ctx, nil); err != nil {
		return agent.TurnOutcome{}, err
	}
	status, reason := w.loop(ctx, ti)
	if status == agent.StatusCompleted {
		if len(w.pending) > 0 {
			status = agent.StatusAwaitingApproval
		}
	}
	end := activities.AgentEndTurnInput{OrganizationID: org, ConversationID: conv, Status: status, Error: reason}
	if err := workflow.ExecuteLocalActivity(lctx, actAgentEndTurn, end).Get(ctx, nil); err != nil {
		return agent.TurnOutcome{}, err
	}
	return agent.TurnOutcome{Status: status}, nil
}

// loop calls the model until it answers without tool calls, the turn's
// token budget is spent or it made MaxSteps calls.
func (w *agentConv) loop(ctx workflow.Context, ti activities.AgentTurnInput) (status, reason string) {
	budget, maxSteps := w.in.TokenBudget, w.in.MaxSteps
	if budget <= 0 {
		budget = agent.DefaultTurnTokenBudget
	}
	if maxSteps <= 0 {
		maxSteps = agent.DefaultMaxSteps
	}
	lctx := w.localCtx(ctx)
	tokens := 0
	for step := 0; step < maxSteps; step++ {
		ti.Step = step
		var res agent.StepResult
		var err error
		if w.in.LocalModel {
			err = workflow.ExecuteLocalActivity(w.modelCtx(ctx), actAgentModelStep, ti).Get(ctx, &res)
		} else {
			err = workflow.ExecuteActivity(w.modelCtx(ctx), actAgentModelStep, ti).Get(ctx, &res)
		}
		if err != nil {
			return agent.StatusFailed, "the model call failed: " + errMessage(err)
		}
		tokens += res.InputTokens + res.OutputTokens
		if len(res.Calls) == 0 {
			return agent.StatusCompleted, ""
		}
		for _, c := range res.Calls {
			if c.Done {
				continue
			}
			ci := activities.AgentCallInput{OrganizationID: ti.OrganizationID, CallID: c.ID.String()}
			if !c.Write {
				if err := workflow.ExecuteLocalActivity(lctx, actAgentRunTool, ci).Get(ctx, nil); err != nil {
					return agent.StatusFailed, "a tool failed: " + errMessage(err)
				}
				continue
			}
			var p agent.Proposal
			if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, writeOptions()), actAgentProposeWrite, ci).Get(ctx, &p); err != nil {
				return agent.StatusFailed, "a write failed: " + errMessage(err)
			}
			if !p.Auto && p.ActionID != uuid.Nil { // nil: refused at once, nothing waits
				w.watch(p.ActionID.String(), p.ExpiresAt)
			}
		}
		if tokens > budget {
			return agent.StatusFailed, "the turn used its token budget"
		}
	}
	return agent.StatusFailed, "the turn made too many model calls"
}

// writeOptions run a write (which may buy a label through its own
// workflow) as a regular activity: retried only while nothing was done
// (the execution is claimed once in the database).
func writeOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{StartToCloseTimeout: 5 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second, MaximumAttempts: 5}}
}

// watch makes the main loop expire a pending action at its time (a
// durable timer).
func (w *agentConv) watch(id string, expiresAt time.Time) {
	if _, ok := w.pending[id]; ok {
		return
	}
	w.pending[id] = expiresAt
	w.order = append(w.order, id)
	w.version++
}

func (w *agentConv) forget(id string) {
	if _, ok := w.pending[id]; !ok {
		return
	}
	delete(w.pending, id)
	delete(w.tries, id)
	for i, o := range w.order {
		if o == id {
			w.order = append(w.order[:i], w.order[i+1:]...)
			break
		}
	}
	w.version++
}

// decide approves or rejects an action: the database settles the race
// with its expiry; an approved action then runs once.
func (w *agentConv) decide(ctx workflow.Context, d agent.Decision) (agent.DecisionOutcome, error) {
	status := agent.ActionRejected
	if d.Approve {
		status = agent.ActionApproved
	}
	by := d.By
	in := activities.AgentResolveInput{OrganizationID: w.in.OrganizationID, ActionID: d.ActionID.String(), Status: status, Note: d.Note, By: &by,
		DecisionID: d.DecisionID.String()}
	var r agent.Resolution
	if err := workflow.ExecuteLocalActivity(w.localCtx(ctx), actAgentResolveAction, in).Get(ctx, &r); err != nil {
		return agent.DecisionOutcome{}, err
	}
	w.forget(d.ActionID.String())
	if !d.Approve {
		return agent.DecisionOutcome{Status: agent.ActionRejected, ActionID: d.ActionID}, nil
	}
	var out agent.DecisionOutcome
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, writeOptions()), actAgentExecuteAction,
		activities.AgentActionInput{OrganizationID: w.in.OrganizationID, ActionID: d.ActionID.String()}).Get(ctx, &out)
	return out, err
}

func errMessage(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	return err.Error()
}

// AgentReconcileWorkflowType runs the agent's reconciler (the Temporal
// Schedule schedule/agent-reconcile).
const AgentReconcileWorkflowType = "AgentReconcile"

// AgentReconcile settles the agent's rows whose workflow did not
// (agent.Service.Reconcile).
func AgentReconcile(ctx workflow.Context) (agent.ReconcileResult, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 5 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 3}})
	var out agent.ReconcileResult
	err := workflow.ExecuteActivity(ctx, "AgentReconcile").Get(ctx, &out)
	return out, err
}
