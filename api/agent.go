package api

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/agent"
)

// mountAgent registers the agent endpoints (spec Part 3, Agent; CONTRACT
// 11): HTTP over the agent domain (agent.Service). Chat is an
// update-with-start of the conversation's AgentConversation workflow
// (agent-conversation/<id>) and waits up to 20 s for the turn; approve and
// reject are updates of the same workflow. Scopes: reads agent:read, chat,
// archive and standing orders agent:write; approve, reject, tool
// permissions and memory deletion agent:admin.
//
// Extensions: the conversation detail shows the running turn (status,
// tool); PATCH and DELETE /agent/standing-orders/{id}.
func (s *Server) mountAgent(r chi.Router) {
	read := r.With(s.scope("agent:read"))
	write := r.With(s.scope("agent:write"))
	admin := r.With(s.scope("agent:admin"))
	write.Post("/agent/chat", s.h(s.agentChat))
	read.Get("/agent/conversations", s.h(s.listAgentConversations))
	read.Get("/agent/conversations/{id}", s.h(s.getAgentConversation))
	write.Delete("/agent/conversations/{id}", s.h(s.archiveAgentConversation))
	read.Get("/agent/pending-actions", s.h(s.listAgentActions))
	admin.Post("/agent/pending-actions/{id}/approve", s.h(s.decideAgentAction(true)))
	admin.Post("/agent/pending-actions/{id}/reject", s.h(s.decideAgentAction(false)))
	admin.Get("/agent/tool-permissions", s.h(s.listAgentPermissions))
	admin.Patch("/agent/tool-permissions", s.h(s.updateAgentPermissions))
	read.Get("/agent/memory", s.h(s.listAgentMemory))
	admin.Delete("/agent/memory/{id}", s.h(s.deleteAgentMemory))
	read.Get("/agent/standing-orders", s.h(s.listStandingOrders))
	write.Post("/agent/standing-orders", s.h(s.createStandingOrder))
	write.Patch("/agent/standing-orders/{id}", s.h(s.updateStandingOrder))
	write.Delete("/agent/standing-orders/{id}", s.h(s.deleteStandingOrder))
}

// --- JSON shapes (snake_case, as the specification lists them) ---

type agentConversationJSON struct {
	ID             uuid.UUID `json:"id"`
	Title          string    `json:"title"`
	Status         string    `json:"status"`
	OrganizationID uuid.UUID `json:"organization_id"`
	MessageCount   int       `json:"message_count"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

type agentTurnJSON struct {
	Status    string     `json:"status"`
	Tool      *string    `json:"tool"`
	Error     *string    `json:"error"`
	StartedAt *time.Time `json:"started_at"`
}

type agentConversationDetailJSON struct {
	agentConversationJSON
	Messages []agentMessageJSON `json:"messages"`
	// Turn is the running (or last) turn's progress (extension).
	Turn agentTurnJSON `json:"turn"`
}

type agentMessageJSON struct {
	ID           uuid.UUID           `json:"id"`
	Role         string              `json:"role"`
	Content      string              `json:"content"`
	InputTokens  *int                `json:"input_tokens"`
	OutputTokens *int                `json:"output_tokens"`
	CreatedAt    time.Time           `json:"created_at"`
	ToolCalls    []agentToolCallJSON `json:"toolCalls"`
}

type agentToolCallJSON struct {
	ID            uuid.UUID       `json:"id"`
	MessageID     uuid.UUID       `json:"message_id"`
	ToolUseID     string          `json:"tool_use_id"`
	ToolName      string          `json:"tool_name"`
	ToolInput     json.RawMessage `json:"tool_input"`
	ResultContent *string         `json:"result_content"`
	IsError       bool            `json:"is_error"`
	DurationMS    *int            `json:"duration_ms"`
	ResolvedVia   *string         `json:"resolved_via"`
	CreatedAt     time.Time       `json:"created_at"`
}

type agentActionJSON struct {
	ID                uuid.UUID       `json:"id"`
	OrganizationID    uuid.UUID       `json:"organization_id"`
	ConversationID    uuid.UUID       `json:"conversation_id"`
	ToolName          string          `json:"tool_name"`
	ToolInput         json.RawMessage `json:"tool_input"`
	Description       string          `json:"description"`
	Status            string          `json:"status"`
	AffectedItemCount int             `json:"affected_item_count"`
	IdempotencyKey    string          `json:"idempotency_key"`
	ExpiresAt         time.Time       `json:"expires_at"`
	CreatedAt         time.Time       `json:"created_at"`
	// Extensions: the decision's note and time, and the execution's result.
	Note       *string         `json:"note"`
	ResolvedAt *time.Time      `json:"resolved_at"`
	Result     json.RawMessage `json:"result"`
}

type agentPermissionJSON struct {
	ID                     *uuid.UUID `json:"id"`
	OrganizationID         uuid.UUID  `json:"organization_id"`
	ToolName               string     `json:"tool_name"`
	ApprovalRequired       bool       `json:"approval_required"`
	MaxAutoItems           int        `json:"max_auto_items"`
	MaxDailyAutoExecutions *int       `json:"max_daily_auto_executions"`
	MaxOrderValue          *float64   `json:"max_order_value"`
	RiskThreshold          float64    `json:"risk_threshold"`
	BudgetCapDaily         *float64   `json:"budget_cap_daily"`
	UpdatedBy              *string    `json:"updated_by"`
	CreatedAt              *time.Time `json:"created_at"`
	UpdatedAt              *time.Time `json:"updated_at"`
}

type agentMemoryJSON struct {
	ID             uuid.UUID  `json:"id"`
	OrganizationID uuid.UUID  `json:"organization_id"`
	Category       string     `json:"category"`
	ScopeType      string     `json:"scope_type"`
	ScopeID        *uuid.UUID `json:"scope_id"`
	Content        string     `json:"content"`
	Source         *string    `json:"source"`
	Confidence     *float64   `json:"confidence"`
	ExpiresAt      *time.Time `json:"expires_at"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
}

type standingOrderJSON struct {
	ID              uuid.UUID       `json:"id"`
	OrganizationID  uuid.UUID       `json:"organization_id"`
	Name            string          `json:"name"`
	Description     *string         `json:"description"`
	NaturalLanguage string          `json:"natural_language"`
	TriggerType     string          `json:"trigger_type"`
	Conditions      json.RawMessage `json:"conditions"`
	Actions         json.RawMessage `json:"actions"`
	Priority        int             `json:"priority"`
	IsActive        bool            `json:"is_active"`
	CreatedBy       *string         `json:"created_by"`
	CreatedAt       time.Time       `json:"created_at"`
	UpdatedAt       time.Time       `json:"updated_at"`
}

func toAgentConversationJSON(c agent.Conversation) agentConversationJSON {
	return agentConversationJSON{ID: c.ID, Title: c.Title, Status: c.Status, OrganizationID: c.OrganizationID,
		MessageCount: c.MessageCount, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
}

func toAgentActionJSON(a agent.PendingAction) agentActionJSON {
	return agentActionJSON{ID: a.ID, OrganizationID: a.OrganizationID, ConversationID: a.ConversationID, ToolName: a.ToolName,
		ToolInput: shipmentRaw(a.ToolInput, "{}"), Description: a.Description, Status: a.Status, AffectedItemCount: a.AffectedItemCount,
		IdempotencyKey: a.IdempotencyKey, ExpiresAt: a.ExpiresAt, CreatedAt: a.CreatedAt, Note: a.Note, ResolvedAt: a.ResolvedAt,
		Result: shipmentRaw(a.Result, "null")}
}

func toAgentPermissionJSON(p agent.Permission) agentPermissionJSON {
	j := agentPermissionJSON{OrganizationID: p.OrganizationID, ToolName: p.ToolName, ApprovalRequired: p.ApprovalRequired,
		MaxAutoItems: p.MaxAutoItems, MaxDailyAutoExecutions: p.MaxDailyAutoExecutions, MaxOrderValue: p.MaxOrderValue,
		RiskThreshold: p.RiskThreshold, BudgetCapDaily: p.BudgetCapDaily, UpdatedBy: p.UpdatedBy}
	if p.Stored {
		id, c, u := p.ID, p.CreatedAt, p.UpdatedAt
		j.ID, j.CreatedAt, j.UpdatedAt = &id, &c, &u
	}
	return j
}

func toAgentMemoryJSON(m agent.Memory) agentMemoryJSON {
	return agentMemoryJSON{ID: m.ID, OrganizationID: m.OrganizationID, Category: m.Category, ScopeType: m.ScopeType, ScopeID: m.ScopeID,
		Content: m.Content, Source: m.Source, Confidence: m.Confidence, ExpiresAt: m.ExpiresAt, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt}
}

func toStandingOrderJSON(o agent.StandingOrder) standingOrderJSON {
	j := standingOrderJSON{ID: o.ID, OrganizationID: o.OrganizationID, Name: o.Name, Description: o.Description,
		NaturalLanguage: o.NaturalLanguage, TriggerType: o.TriggerType, Conditions: shipmentRaw(o.Conditions, "[]"),
		Actions: shipmentRaw(o.Actions, "[]"), Priority: o.Priority, IsActive: o.IsActive, CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt}
	var by struct {
		Kind string    `json:"kind"`
		ID   uuid.UUID `json:"id"`
	}
	if json.Unmarshal(o.CreatedBy, &by) == nil && by.ID != uuid.Nil {
		s := by.ID.String()
		j.CreatedBy = &s
	}
	return j
}

// --- chat and conversations ---

type agentChatRequest struct {
	Message        *string `json:"message"`
	ConversationID *string `json:"conversationId"`
	Context        *struct {
		OperationID *string  `json:"operationId"`
		OrderIDs    []string `json:"orderIds"`
	} `json:"context"`
}

func (s *Server) agentChat(w http.ResponseWriter, r *http.Request) error {
	var req agentChatRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var details fieldErrors
	if req.Message == nil {
		details = append(details, FieldError{Field: "message", Message: "is required"})
	}
	in := agent.ChatInput{Message: deref(req.Message)}
	if req.ConversationID != nil {
		id, err := uuid.Parse(*req.ConversationID)
		if err != nil {
			details = append(details, FieldError{Field: "conversationId", Message: "must be a UUID"})
		}
		in.ConversationID = &id
	}
	if req.Context != nil {
		if req.Context.OperationID != nil {
			if _, err := uuid.Parse(*req.Context.OperationID); err != nil {
				details = append(details, FieldError{Field: "context.operationId", Message: "must be a UUID"})
			}
		}
		if len(req.Context.OrderIDs) > 500 {
			details = append(details, FieldError{Field: "context.orderIds", Message: "must hold at most 500 ids"})
		}
		for _, id := range req.Context.OrderIDs {
			if _, err := uuid.Parse(id); err != nil {
				details = append(details, FieldError{Field: "context.orderIds", Message: "must be UUIDs"})
				break
			}
		}
		in.Context, _ = json.Marshal(req.Context)
	}
	if len(details) > 0 {
		return errValidation(details...)
	}
	res, err := s.Agent.Chat(r.Context(), actorOf(r), in)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, res)
	return nil
}

func (s *Server) listAgentConversations(w http.ResponseWriter, r *http.Request) error {
	page, err := parsePage(r, 20, 50)
	if err != nil {
		return err
	}
	list, total, err := s.Agent.ListConversations(r.Context(), actorOf(r), page.Limit, page.Offset())
	if err != nil {
		return err
	}
	writeList(w, mapSlice(list, toAgentConversationJSON), page, total)
	return nil
}

func (s *Server) getAgentConversation(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "conversation")
	if err != nil {
		return err
	}
	d, err := s.Agent.GetConversation(r.Context(), actorOf(r), id)
	if err != nil {
		return err
	}
	c := d.Conversation
	out := agentConversationDetailJSON{agentConversationJSON: toAgentConversationJSON(c), Messages: make([]agentMessageJSON, 0, len(d.Messages)),
		Turn: agentTurnJSON{Status: c.TurnStatus, Tool: c.TurnTool, Error: c.TurnError, StartedAt: c.TurnStartedAt}}
	for _, m := range d.Messages {
		mj := agentMessageJSON{ID: m.ID, Role: m.Role, Content: m.Content, InputTokens: m.InputTokens, OutputTokens: m.OutputTokens,
			CreatedAt: m.CreatedAt, ToolCalls: []agentToolCallJSON{}}
		for _, tc := range d.Calls[m.ID] {
			mj.ToolCalls = append(mj.ToolCalls, agentToolCallJSON{ID: tc.ID, MessageID: tc.MessageID, ToolUseID: tc.ToolUseID, ToolName: tc.ToolName,
				ToolInput: shipmentRaw(tc.ToolInput, "{}"), ResultContent: tc.ResultContent, IsError: tc.IsError, DurationMS: tc.DurationMS,
				ResolvedVia: tc.ResolvedVia, CreatedAt: tc.CreatedAt})
		}
		out.Messages = append(out.Messages, mj)
	}
	writeData(w, http.StatusOK, out)
	return nil
}

func (s *Server) archiveAgentConversation(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "conversation")
	if err != nil {
		return err
	}
	if err := s.Agent.ArchiveConversation(r.Context(), actorOf(r), id); err != nil {
		return err
	}
	writeSuccess(w)
	return nil
}

// --- pending actions ---

func (s *Server) listAgentActions(w http.ResponseWriter, r *http.Request) error {
	status, err := queryEnum(r, "status", agent.ActionStatuses...)
	if err != nil {
		return err
	}
	if status == "" {
		status = agent.ActionPending
	}
	list, err := s.Agent.ListPendingActions(r.Context(), actorOf(r), status)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, mapSlice(list, toAgentActionJSON))
	return nil
}

func (s *Server) decideAgentAction(approve bool) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathID(r, "id", "pending action")
		if err != nil {
			return err
		}
		var req struct {
			Note *string `json:"note"`
		}
		if err := decodeOptionalJSON(r, &req); err != nil {
			return err
		}
		out, err := s.Agent.Decide(r.Context(), actorOf(r), id, approve, deref(req.Note))
		if err != nil {
			return err
		}
		if !approve {
			writeJSON(w, http.StatusOK, map[string]any{"status": agent.ActionRejected, "action_id": out.ActionID})
			return nil
		}
		writeJSON(w, http.StatusOK, map[string]any{"status": agent.ActionApproved, "action_id": out.ActionID, "result": shipmentRaw(out.Result, "null"), "is_error": out.IsError})
		return nil
	}
}

// --- tool permissions ---
