package activities

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/agent"
	"github.com/fos-dev/fos/agent/llm"
	"github.com/fos-dev/fos/domain"
)

// Error types of the agent's refusals (the updates of AgentConversation
// answer with them).
const (
	ErrTypeAgentBusy     = "AgentTurnRunning"
	ErrTypeAgentGone     = "AgentActionGone"
	ErrTypeAgentConflict = "AgentConflict"
	ErrTypeAgentInvalid  = "AgentInvalid"
	ErrTypeAgentNotFound = "AgentNotFound"
)

// The activities' inputs.
type (
	AgentTurnInput struct {
		OrganizationID string `json:"organizationId"`
		ConversationID string `json:"conversationId"`
		TurnID         string `json:"turnId"`
		Message        string `json:"message,omitempty"`
		Step           int    `json:"step,omitempty"`
	}
	AgentEndTurnInput struct {
		OrganizationID string `json:"organizationId"`
		ConversationID string `json:"conversationId"`
		Status         string `json:"status"`
		Error          string `json:"error,omitempty"`
	}
	AgentCallInput struct {
		OrganizationID string `json:"organizationId"`
		CallID         string `json:"callId"`
	}
	AgentConversationRef struct {
		OrganizationID string `json:"organizationId"`
		ConversationID string `json:"conversationId"`
	}
	AgentResolveInput struct {
		OrganizationID string        `json:"organizationId"`
		ActionID       string        `json:"actionId"`
		Status         string        `json:"status"`
		Note           string        `json:"note,omitempty"`
		By             *domain.Actor `json:"by,omitempty"`
		// At is when an expiry is due (the workflow's timer fired then).
		At         time.Time `json:"at,omitempty"`
		DecisionID string    `json:"decisionId,omitempty"`
	}
	AgentActionInput struct {
		OrganizationID string `json:"organizationId"`
		ActionID       string `json:"actionId"`
	}
)

// AgentActivities are the steps of the AgentConversation workflow, each a
// method of the agent domain's Service (agent/engine.go).
type AgentActivities struct {
	Agent *agent.Service
}

func agentIDs(ids ...string) ([]uuid.UUID, error) {
	out := make([]uuid.UUID, 0, len(ids))
	for _, s := range ids {
		id, err := uuid.Parse(s)
		if err != nil {
			return nil, temporal.NewNonRetryableApplicationError("bad id "+s, ErrTypeAgentInvalid, err)
		}
		out = append(out, id)
	}
	return out, nil
}

// agentErr maps a step's error: a domain refusal is final (Gone and
// Conflict keep their type for the update's caller), anything else is
// retried.
func agentErr(err error) error {
	if err == nil {
		return nil
	}
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind.Retryable() {
		return err
	}
	typ := ErrTypeAgentInvalid
	switch de.Kind {
	case domain.KindGone:
		typ = ErrTypeAgentGone
	case domain.KindConflict:
		typ = ErrTypeAgentConflict
	case domain.KindNotFound:
		typ = ErrTypeAgentNotFound
	}
	return temporal.NewNonRetryableApplicationError(de.Message, typ, err)
}

// AgentBeginTurn writes the turn's user message.
func (a *AgentActivities) AgentBeginTurn(ctx context.Context, in AgentTurnInput) error {
	ids, err := agentIDs(in.OrganizationID, in.ConversationID, in.TurnID)
	if err != nil {
		return err
	}
	return agentErr(a.Agent.BeginTurn(ctx, ids[0], ids[1], ids[2], in.Message))
}

// AgentModelStep calls the model. A 429 or 5xx is retried after the
// server's Retry-After; any other refusal of the model API is final.
func (a *AgentActivities) AgentModelStep(ctx context.Context, in AgentTurnInput) (agent.StepResult, error) {
	ids, err := agentIDs(in.OrganizationID, in.ConversationID, in.TurnID)
	if err != nil {
		return agent.StepResult{}, err
	}
	res, err := a.Agent.ModelStep(ctx, ids[0], ids[1], ids[2], in.Step)
	var le *llm.Error
	if errors.As(err, &le) {
		if !le.Retryable {
			return res, temporal.NewNonRetryableApplicationError(le.Error(), "ModelError", nil)
		}
		return res, temporal.NewApplicationErrorWithOptions(le.Error(), "ModelUnavailable", temporal.ApplicationErrorOptions{NextRetryDelay: le.RetryAfter})
	}
	return res, agentErr(err)
}

// AgentRunTool runs a read tool.
func (a *AgentActivities) AgentRunTool(ctx context.Context, in AgentCallInput) error {
	ids, err := agentIDs(in.OrganizationID, in.CallID)
	if err != nil {
		return err
	}
	return agentErr(a.Agent.RunTool(ctx, ids[0], ids[1]))
}

// AgentProposeWrite decides a write (auto or pending action).
func (a *AgentActivities) AgentProposeWrite(ctx context.Context, in AgentCallInput) (agent.Proposal, error) {
	ids, err := agentIDs(in.OrganizationID, in.CallID)
	if err != nil {
		return agent.Proposal{}, err
	}
	p, err := a.Agent.ProposeWrite(ctx, ids[0], ids[1])
	return p, agentErr(err)
}

// AgentEndTurn records a turn's status.
func (a *AgentActivities) AgentEndTurn(ctx context.Context, in AgentEndTurnInput) error {
	ids, err := agentIDs(in.OrganizationID, in.ConversationID)
	if err != nil {
		return err
	}
	return agentErr(a.Agent.EndTurn(ctx, ids[0], ids[1], in.Status, in.Error))
}

// AgentOpenActions lists a conversation's pending actions.
func (a *AgentActivities) AgentOpenActions(ctx context.Context, in AgentConversationRef) ([]agent.OpenAction, error) {
	ids, err := agentIDs(in.OrganizationID, in.ConversationID)
	if err != nil {
		return nil, err
	}
	out, err := a.Agent.OpenActions(ctx, ids[0], ids[1])
	return out, agentErr(err)
}

// AgentResolveAction settles an action (approve, reject, expire).
func (a *AgentActivities) AgentResolveAction(ctx context.Context, in AgentResolveInput) (agent.Resolution, error) {
	ids, err := agentIDs(in.OrganizationID, in.ActionID)
	if err != nil {
		return agent.Resolution{}, err
	}
	r, err := a.Agent.ResolveAction(ctx, ids[0], agent.Resolve{ActionID: ids[1], Status: in.Status, By: in.By, Note: in.Note, At: in.At, DecisionID: in.DecisionID})
	return r, agentErr(err)
}

// AgentExecuteAction runs an approved action once.
func (a *AgentActivities) AgentExecuteAction(ctx context.Context, in AgentActionInput) (agent.DecisionOutcome, error) {
	ids, err := agentIDs(in.OrganizationID, in.ActionID)
	if err != nil {
		return agent.DecisionOutcome{}, err
	}
	out, err := a.Agent.ExecuteAction(ctx, ids[0], ids[1])
	return out, agentErr(err)
}

// AgentReconcile settles overdue pending actions and stuck turns.
func (a *AgentActivities) AgentReconcile(ctx context.Context) (agent.ReconcileResult, error) {
	return a.Agent.Reconcile(ctx, 500)
}

// AgentStandingOrdersInput is an event for the standing orders.
type AgentStandingOrdersInput struct {
	OrganizationID string `json:"organizationId"`
	// Trigger is on_order_created, on_order_updated, on_shipment_created
	// or on_tracking_exception; EventKey names the event (its dedupe key).
	Trigger  string          `json:"trigger"`
	EventKey string          `json:"eventKey"`
	Object   json.RawMessage `json:"object"`
}

// AgentRunStandingOrders runs the standing orders of an event (for the
// event's workflow to call; each runs once per event).
func (a *AgentActivities) AgentRunStandingOrders(ctx context.Context, in AgentStandingOrdersInput) ([]agent.StandingRun, error) {
	ids, err := agentIDs(in.OrganizationID)
	if err != nil {
		return nil, err
	}
	out, err := a.Agent.RunStandingOrders(ctx, ids[0], in.Trigger, in.EventKey, in.Object)
	return out, agentErr(err)
}
