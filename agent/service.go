// Package agent is the AI agent with human approval (spec Part 3, CONTRACT
// 5, 9 and 11): conversations with a model that calls the service's own
// operations as tools, writes that wait for a person's approval as pending
// actions, tool permissions that let some writes run on their own, the
// agent's memory and standing orders.
//
// A conversation is run by the AgentConversation workflow
// (agent-conversation/<id>, workflows/agent_conversation.go) behind the
// Runs port: a chat turn is an update-with-start, approve and reject are
// updates, and a pending action's expiry is a durable timer. The workflow
// holds ids only; every step is a method of the Service (engine.go) run
// as an activity, writing to PostgreSQL, the system of record.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/agent/llm"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/store"
)

// The agent domain's model (store rows).
type (
	Conversation  = store.AgentConversation
	PendingAction = store.AgentPendingAction
	Memory        = store.AgentMemory
	StandingOrder = store.AgentStandingOrder
)

// Limits of the agent's inputs.
const (
	MaxMessageLen   = 10000
	MaxNoteLen      = 1000
	TitleLen        = 80
	MaxPendingList  = 200
	MaxMemoryList   = 200
	DefaultTTL      = 24 * time.Hour
	DefaultChatWait = 20 * time.Second
	// DefaultTurnTokenBudget bounds the tokens of one turn's model calls.
	DefaultTurnTokenBudget = 60000
	// DefaultMaxSteps bounds the model calls of one turn.
	DefaultMaxSteps = 8
)

// Chat statuses (CONTRACT 11).
const (
	StatusCompleted        = "completed"
	StatusAwaitingApproval = "awaiting_approval"
	StatusProcessing       = "processing"
	StatusFailed           = "failed"
)

// Pending action statuses.
const (
	ActionPending  = "pending"
	ActionApproved = "approved"
	ActionRejected = "rejected"
	ActionExpired  = "expired"
)

// ActionStatuses are the statuses of the pending actions list filter.
var ActionStatuses = []string{ActionPending, ActionApproved, ActionRejected, ActionExpired, "all"}

// Runs is the port through which the Service runs conversations (the
// Temporal adapter worker.TemporalAgent implements it).
type Runs interface {
	// Chat runs one turn (update-with-start of the conversation's
	// workflow) and waits for its status until ctx ends; a ctx that ends
	// first is reported as context.DeadlineExceeded.
	Chat(ctx context.Context, orgID, convID uuid.UUID, t Turn) (TurnOutcome, error)
	// Decide approves or rejects a pending action in its conversation's
	// workflow and waits for the outcome.
	Decide(ctx context.Context, orgID, convID uuid.UUID, d Decision) (DecisionOutcome, error)
}

// Turn is one chat turn.
type Turn struct {
	TurnID  uuid.UUID `json:"turnId"`
	Message string    `json:"message"`
}

// TurnOutcome is the status a turn ended with.
type TurnOutcome struct {
	Status string `json:"status"`
}

// Decision is an approval or rejection.
type Decision struct {
	ActionID uuid.UUID `json:"actionId"`
	// DecisionID names this decision (a retry of it is the same).
	DecisionID uuid.UUID    `json:"decisionId"`
	Approve    bool         `json:"approve"`
	Note       string       `json:"note,omitempty"`
	By         domain.Actor `json:"by"`
}

// DecisionOutcome is what a decision did.
type DecisionOutcome struct {
	Status   string          `json:"status"`
	ActionID uuid.UUID       `json:"actionId"`
	Result   json.RawMessage `json:"result,omitempty"`
	IsError  bool            `json:"isError,omitempty"`
}

// Config tunes the agent.
type Config struct {
	// ApprovalTTL is how long a pending action waits
	// (FOS_AGENT_APPROVAL_TTL, default 24 h).
	ApprovalTTL time.Duration
	// ChatWait is how long chat waits for its turn (default 20 s).
	ChatWait time.Duration
	// TurnTokenBudget bounds the tokens of a turn (default 60,000).
	TurnTokenBudget int
	// MaxSteps bounds the model calls of a turn (default 8).
	MaxSteps int
	// ModelTimeout bounds one model call (default 60 s).
	ModelTimeout time.Duration
}

// Deps are the Service's dependencies.
type Deps struct {
	Store    *store.Store
	Provider llm.Provider
	Tools    *Tools
	Runs     Runs
	Logger   *slog.Logger
	Config   Config
}

// Service is the agent's operations.
type Service struct {
	store    *store.Store
	provider llm.Provider
	tools    *Tools
	runs     Runs
	log      *slog.Logger
	cfg      Config
	now      func() time.Time
	standing *Standing
}

// New builds the Service.
func New(d Deps) *Service {
	c := d.Config
	if c.ApprovalTTL <= 0 {
		c.ApprovalTTL = DefaultTTL
	}
	if c.ChatWait <= 0 {
		c.ChatWait = DefaultChatWait
	}
	if c.TurnTokenBudget <= 0 {
		c.TurnTokenBudget = DefaultTurnTokenBudget
	}
	if c.MaxSteps <= 0 {
		c.MaxSteps = DefaultMaxSteps
	}
	if c.ModelTimeout <= 0 {
		c.ModelTimeout = 60 * time.Second
	}
	log := d.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	start, _ := d.Runs.(Starter)
	return &Service{store: d.Store, provider: d.Provider, tools: d.Tools, runs: d.Runs, log: log, cfg: c, now: time.Now,
		standing: NewStanding(d.Store, start, log)}
}

// Config is the Service's configuration with its defaults.
func (s *Service) Config() Config { return s.cfg }

// Tools is the tool registry.
func (s *Service) Tools() *Tools { return s.tools }

// ProviderName names the model provider ("" when none).
func (s *Service) ProviderName() string {
	if s.provider == nil {
		return ""
	}
	return s.provider.Name()
}

// ChatInput is POST /agent/chat.
type ChatInput struct {
	Message        string
	ConversationID *uuid.UUID
	Context        json.RawMessage
}

// ChatResult is the chat's answer.
type ChatResult struct {
	ConversationID uuid.UUID `json:"conversationId"`
	Status         string    `json:"status"`
}

// Chat runs a turn of a conversation (a new one without ConversationID)
// and waits for it up to ChatWait; a turn still running then answers
// processing (the conversation is polled). The actor needs agent:write.
func (s *Service) Chat(ctx context.Context, actor domain.Actor, in ChatInput) (ChatResult, error) {
	if err := actor.RequireScope("agent:write"); err != nil {
		return ChatResult{}, err
	}
	msg := strings.TrimSpace(in.Message)
	var v domain.FieldErrors
	switch {
	case msg == "":
		v.Add("message", "is required")
	case utf8.RuneCountInString(in.Message) > MaxMessageLen:
		v.MaxLen("message", in.Message, MaxMessageLen)
	}
	if err := v.Err(); err != nil {
		return ChatResult{}, err
	}
	if s.runs == nil {
		return ChatResult{}, domain.WorkflowsUnavailable(nil)
	}
	orgID := actor.OrganizationID
	var conv store.AgentConversation
	if in.ConversationID != nil {
		c, err := store.AgentConversationByID(ctx, s.store.Pool, orgID, *in.ConversationID)
		if errors.Is(err, store.ErrNotFound) {
			return ChatResult{}, domain.NotFound("conversation")
		}
		if err != nil {
			return ChatResult{}, err
		}
		if c.Status != "active" {
			return ChatResult{}, domain.Conflict("the conversation is archived")
		}
		conv = c
	} else {
		actorJSON, _ := json.Marshal(actor)
		c, err := store.InsertAgentConversation(ctx, s.store.Pool, store.AgentConversation{
			ID: uuid.New(), OrganizationID: orgID, Title: clip(msg, TitleLen), Actor: actorJSON, Context: in.Context,
		})
		if err != nil {
			return ChatResult{}, err
		}
		conv = c
	}
	return s.runTurn(ctx, orgID, conv.ID, msg)
}

// runTurn sends a turn to the conversation's workflow and waits up to
// ChatWait.
func (s *Service) runTurn(ctx context.Context, orgID, convID uuid.UUID, msg string) (ChatResult, error) {
	wctx, cancel := context.WithTimeout(ctx, s.cfg.ChatWait)
	defer cancel()
	out, err := s.runs.Chat(wctx, orgID, convID, Turn{TurnID: uuid.New(), Message: msg})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return ChatResult{ConversationID: convID, Status: StatusProcessing}, nil
		}
		return ChatResult{}, err
	}
	return ChatResult{ConversationID: convID, Status: out.Status}, nil
}

// ListConversations is a page of the active conversations. The actor
// needs agent:read.
func (s *Service) ListConversations(ctx context.Context, actor domain.Actor, limit, offset int) ([]store.AgentConversation, int, error) {
	if err := actor.RequireScope("agent:read"); err != nil {
		return nil, 0, err
	}
	return store.ListAgentConversations(ctx, s.store.Pool, actor.OrganizationID, limit, offset)
}

// ConversationDetail is a conversation with its messages and their tool
// calls.
type ConversationDetail struct {
	Conversation store.AgentConversation
	Messages     []store.AgentMessage
	Calls        map[uuid.UUID][]store.AgentToolCall
}

// GetConversation is one conversation with its messages (archived ones
// too). The actor needs agent:read.
func (s *Service) GetConversation(ctx context.Context, actor domain.Actor, id uuid.UUID) (ConversationDetail, error) {
	if err := actor.RequireScope("agent:read"); err != nil {
		return ConversationDetail{}, err
	}
	c, err := store.AgentConversationByID(ctx, s.store.Pool, actor.OrganizationID, id)
	if errors.Is(err, store.ErrNotFound) {
		return ConversationDetail{}, domain.NotFound("conversation")
	}
	if err != nil {
		return ConversationDetail{}, err
	}
	msgs, calls, err := store.AgentMessages(ctx, s.store.Pool, actor.OrganizationID, id)
	if err != nil {
		return ConversationDetail{}, err
	}
	return ConversationDetail{Conversation: c, Messages: msgs, Calls: calls}, nil
}

// ArchiveConversation hides a conversation from the list (DELETE). The
// actor needs agent:write.
func (s *Service) ArchiveConversation(ctx context.Context, actor domain.Actor, id uuid.UUID) error {
	if err := actor.RequireScope("agent:write"); err != nil {
		return err
	}
	err := store.ArchiveAgentConversation(ctx, s.store.Pool, actor.OrganizationID, id)
	if errors.Is(err, store.ErrNotFound) {
		return domain.NotFound("conversation")
	}
	return err
}

// ListPendingActions lists actions by status ("pending" by default,
// "all"). The actor needs agent:read.
func (s *Service) ListPendingActions(ctx context.Context, actor domain.Actor, status string) ([]store.AgentPendingAction, error) {
	if err := actor.RequireScope("agent:read"); err != nil {
		return nil, err
	}
	if status == "all" {
		status = ""
	}
	return store.ListAgentPendingActions(ctx, s.store.Pool, actor.OrganizationID, status, MaxPendingList)
}

// Decide approves or rejects a pending action: 404 for an unknown (or
// another organization's) action, 410 when it expired, 409 when it is no
// longer pending. An approved action runs once, as the agent acting for
// the approver. The actor needs agent:admin.
func (s *Service) Decide(ctx context.Context, actor domain.Actor, id uuid.UUID, approve bool, note string) (DecisionOutcome, error) {
	if err := actor.RequireScope("agent:admin"); err != nil {
		return DecisionOutcome{}, err
	}
	if utf8.RuneCountInString(note) > MaxNoteLen {
		return DecisionOutcome{}, domain.InvalidField("note", "must be at most 1000 characters")
	}
	a, err := store.AgentPendingActionByID(ctx, s.store.Pool, actor.OrganizationID, id)
	if errors.Is(err, store.ErrNotFound) {
		return DecisionOutcome{}, domain.NotFound("pending action")
	}
	if err != nil {
		return DecisionOutcome{}, err
	}
	if err := decidable(a, s.now()); err != nil {
		return DecisionOutcome{}, err
	}
	if s.runs == nil {
		return DecisionOutcome{}, domain.WorkflowsUnavailable(nil)
	}
	return s.runs.Decide(ctx, actor.OrganizationID, a.ConversationID, Decision{ActionID: id, DecisionID: uuid.New(), Approve: approve, Note: strings.TrimSpace(note), By: actor})
}

// decidable is nil for a pending action before its expiry, Gone for an
// expired one and Conflict otherwise.
func decidable(a store.AgentPendingAction, now time.Time) error {
	switch {
	case a.Status == ActionExpired || (a.Status == ActionPending && !now.Before(a.ExpiresAt)):
		return domain.Gone("the pending action expired")
	case a.Status != ActionPending:
		return domain.Conflict("the pending action is " + a.Status)
	}
	return nil
}
