package api

import (
	"encoding/json"
	"net/http"

	"github.com/fos-dev/fos/agent"
)

// The agent's settings: tool permissions, memory and standing orders
// (agent.Service).

func (s *Server) listAgentPermissions(w http.ResponseWriter, r *http.Request) error {
	list, err := s.Agent.ToolPermissions(r.Context(), actorOf(r))
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, mapSlice(list, toAgentPermissionJSON))
	return nil
}

type agentPermissionRequest struct {
	ToolName               *string  `json:"toolName"`
	ApprovalRequired       *bool    `json:"approvalRequired"`
	MaxAutoItems           *int     `json:"maxAutoItems"`
	MaxDailyAutoExecutions *int     `json:"maxDailyAutoExecutions"`
	MaxOrderValue          *float64 `json:"maxOrderValue"`
	RiskThreshold          *float64 `json:"riskThreshold"`
	BudgetCapDaily         *float64 `json:"budgetCapDaily"`
}

func (s *Server) updateAgentPermissions(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Permissions []agentPermissionRequest `json:"permissions"`
	}
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.Permissions == nil {
		return errValidation(FieldError{Field: "permissions", Message: "is required"})
	}
	in := make([]agent.PermissionInput, 0, len(req.Permissions))
	for _, p := range req.Permissions {
		in = append(in, agent.PermissionInput{ToolName: deref(p.ToolName), ApprovalRequired: p.ApprovalRequired, MaxAutoItems: p.MaxAutoItems,
			MaxDailyAutoExecutions: p.MaxDailyAutoExecutions, MaxOrderValue: p.MaxOrderValue, RiskThreshold: p.RiskThreshold, BudgetCapDaily: p.BudgetCapDaily})
	}
	list, err := s.Agent.UpdateToolPermissions(r.Context(), actorOf(r), in)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, mapSlice(list, toAgentPermissionJSON))
	return nil
}

// --- memory ---

func (s *Server) listAgentMemory(w http.ResponseWriter, r *http.Request) error {
	scopeType, err := queryEnum(r, "scope_type", "organization", "user", "bridge")
	if err != nil {
		return err
	}
	category := r.URL.Query().Get("category")
	if len(category) > 100 {
		return errValidation(FieldError{Field: "category", Message: "must be at most 100 characters"})
	}
	list, err := s.Agent.ListMemory(r.Context(), actorOf(r), category, scopeType)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, mapSlice(list, toAgentMemoryJSON))
	return nil
}

func (s *Server) deleteAgentMemory(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "memory entry")
	if err != nil {
		return err
	}
	if err := s.Agent.DeleteMemory(r.Context(), actorOf(r), id); err != nil {
		return err
	}
	writeSuccess(w)
	return nil
}

// --- standing orders ---

type standingOrderRequest struct {
	Name            *string         `json:"name"`
	Description     *string         `json:"description"`
	NaturalLanguage *string         `json:"naturalLanguage"`
	TriggerType     *string         `json:"triggerType"`
	Conditions      json.RawMessage `json:"conditions"`
	Actions         json.RawMessage `json:"actions"`
	Priority        *int            `json:"priority"`
	IsActive        *bool           `json:"isActive"`
}

func (q standingOrderRequest) input() agent.StandingOrderInput {
	nullToEmpty := func(raw json.RawMessage) json.RawMessage {
		if string(raw) == "null" {
			return nil
		}
		return raw
	}
	return agent.StandingOrderInput{Name: q.Name, Description: q.Description, NaturalLanguage: q.NaturalLanguage, TriggerType: q.TriggerType,
		Conditions: nullToEmpty(q.Conditions), Actions: nullToEmpty(q.Actions), Priority: q.Priority, IsActive: q.IsActive}
}

func (s *Server) listStandingOrders(w http.ResponseWriter, r *http.Request) error {
	list, err := s.Agent.ListStandingOrders(r.Context(), actorOf(r))
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, mapSlice(list, toStandingOrderJSON))
	return nil
}

func (s *Server) createStandingOrder(w http.ResponseWriter, r *http.Request) error {
	var req standingOrderRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	o, err := s.Agent.CreateStandingOrder(r.Context(), actorOf(r), req.input())
	if err != nil {
		return err
	}
	writeData(w, http.StatusCreated, toStandingOrderJSON(o))
	return nil
}

func (s *Server) updateStandingOrder(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "standing order")
	if err != nil {
		return err
	}
	var req standingOrderRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	o, err := s.Agent.UpdateStandingOrder(r.Context(), actorOf(r), id, req.input())
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toStandingOrderJSON(o))
	return nil
}

func (s *Server) deleteStandingOrder(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "standing order")
	if err != nil {
		return err
	}
	if err := s.Agent.DeleteStandingOrder(r.Context(), actorOf(r), id); err != nil {
		return err
	}
	writeSuccess(w)
	return nil
}
