package agent

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/agent/llm"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/rules/cond"
	"github.com/fos-dev/fos/store"
)

// Standing orders run on their events through the same turn and approval
// path as a chat (CONTRACT 11): each run is a conversation titled with the
// standing order's name, acting as the standing order's creator; its
// actions are proposed as the first model step's tool calls (so writes
// wait for approval unless their permission allows them), and without
// actions the natural language and the event's object go to the model.
// A run is recorded per standing order and event, so an event delivered
// twice runs once.

// StandingRun is one standing order started for an event.
type StandingRun struct {
	StandingOrderID uuid.UUID `json:"standingOrderId"`
	ConversationID  uuid.UUID `json:"conversationId"`
	// Status is processing (its run started) or recorded (left for the
	// reconciler to start).
	Status string `json:"status"`
}

// RunStandingOrders runs the organization's active standing orders of
// trigger whose conditions match object, once per standing order and
// eventKey, for an event the caller names itself (the events the service
// sees go through Standing.Happened). The runs are started, not waited
// for; the caller's retries are safe.
func (s *Service) RunStandingOrders(ctx context.Context, orgID uuid.UUID, trigger, eventKey string, object json.RawMessage) ([]StandingRun, error) {
	doc, err := cond.DecodeDoc(object)
	if err != nil {
		return nil, domain.InvalidField("object", "must be JSON")
	}
	orders, err := store.ListAgentStandingOrders(ctx, s.store.Pool, orgID, trigger)
	if err != nil || len(orders) == 0 {
		return nil, err
	}
	return s.standing.fire(ctx, orgID, trigger, orders, []standingEvent{{key: eventKey, doc: doc, raw: object}})
}

// Standing is the standing orders' event listener (rules.Events).
func (s *Service) Standing() *Standing { return s.standing }

// standingActions are the tool calls a standing order's first step
// proposes: its actions, when it has any and the conversation is its run
// (nil otherwise: the model is asked).
func (s *Service) standingActions(ctx context.Context, c store.AgentConversation, step int, msgs int) ([]llm.ToolCall, error) {
	if c.StandingOrderID == nil || step != 0 || msgs != 1 {
		return nil, nil
	}
	o, err := store.AgentStandingOrderByID(ctx, s.store.Pool, c.OrganizationID, *c.StandingOrderID)
	if err != nil {
		return nil, nil // deleted meanwhile: the model is asked
	}
	var actions []StandingAction
	if json.Unmarshal(o.Actions, &actions) != nil {
		return nil, nil
	}
	var sc standingContext
	_ = json.Unmarshal(c.Context, &sc)
	calls := make([]llm.ToolCall, 0, len(actions))
	for i, a := range actions {
		in := a.Input
		if len(in) == 0 {
			in = json.RawMessage(`{}`)
		}
		in = expandInput(in, sc.Object)
		calls = append(calls, llm.ToolCall{ID: fmt.Sprintf("standing_%d", i), Name: a.Tool, Input: in})
	}
	return calls, nil
}
