package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/rules/cond"
	"github.com/fos-dev/fos/store"
)

// Tool permissions, memory and standing orders.

// Permission defaults (spec Part 3).
const (
	DefaultMaxAutoItems  = 10
	DefaultRiskThreshold = 0.5
)

// Permission is a tool permission as shown: a stored one, or the defaults
// of a write tool that has none (ID nil).
type Permission struct {
	store.AgentToolPermission
	Stored bool
}

// ToolPermissions are the permissions of every write tool, stored or
// default. The actor needs agent:admin.
func (s *Service) ToolPermissions(ctx context.Context, actor domain.Actor) ([]Permission, error) {
	if err := actor.RequireScope("agent:admin"); err != nil {
		return nil, err
	}
	rows, err := store.AgentToolPermissions(ctx, s.store.Pool, actor.OrganizationID)
	if err != nil {
		return nil, err
	}
	by := map[string]store.AgentToolPermission{}
	for _, r := range rows {
		by[r.ToolName] = r
	}
	var out []Permission
	for _, name := range s.tools.WriteTools() {
		if r, ok := by[name]; ok {
			out = append(out, Permission{AgentToolPermission: r, Stored: true})
			continue
		}
		out = append(out, Permission{AgentToolPermission: store.AgentToolPermission{
			OrganizationID: actor.OrganizationID, ToolName: name, ApprovalRequired: true,
			MaxAutoItems: DefaultMaxAutoItems, RiskThreshold: DefaultRiskThreshold,
		}})
	}
	return out, nil
}

// PermissionInput is one element of PATCH /agent/tool-permissions; nil
// optional fields take their defaults.
type PermissionInput struct {
	ToolName               string
	ApprovalRequired       *bool
	MaxAutoItems           *int
	MaxDailyAutoExecutions *int
	MaxOrderValue          *float64
	RiskThreshold          *float64
	BudgetCapDaily         *float64
}

// MaxPermissions bounds one PATCH.
const MaxPermissions = 100

// UpdateToolPermissions upserts permissions by tool name (every element
// checked first: an unknown tool, a negative limit or a risk outside 0-1
// is Invalid naming the field). The actor needs agent:admin.
func (s *Service) UpdateToolPermissions(ctx context.Context, actor domain.Actor, in []PermissionInput) ([]Permission, error) {
	if err := actor.RequireScope("agent:admin"); err != nil {
		return nil, err
	}
	var v domain.FieldErrors
	if len(in) == 0 {
		v.Add("permissions", "must hold at least one permission")
	}
	if len(in) > MaxPermissions {
		v.Add("permissions", fmt.Sprintf("must hold at most %d permissions", MaxPermissions))
	}
	writes := s.tools.WriteTools()
	who := string(actor.Kind) + ":" + actor.ID.String()
	rows := make([]store.AgentToolPermission, 0, len(in))
	for i, p := range in {
		f := func(name string) string { return fmt.Sprintf("permissions[%d].%s", i, name) }
		switch {
		case p.ToolName == "":
			v.Add(f("toolName"), "is required")
		case !slices.Contains(writes, p.ToolName):
			v.Add(f("toolName"), "must be one of "+strings.Join(writes, ", "))
		}
		if p.ApprovalRequired == nil {
			v.Add(f("approvalRequired"), "is required")
		}
		row := store.AgentToolPermission{ToolName: p.ToolName, MaxAutoItems: DefaultMaxAutoItems, RiskThreshold: DefaultRiskThreshold,
			MaxDailyAutoExecutions: p.MaxDailyAutoExecutions, MaxOrderValue: p.MaxOrderValue, BudgetCapDaily: p.BudgetCapDaily, UpdatedBy: &who}
		if p.ApprovalRequired != nil {
			row.ApprovalRequired = *p.ApprovalRequired
		}
		if p.MaxAutoItems != nil {
			if *p.MaxAutoItems < 0 || *p.MaxAutoItems > 100000 {
				v.Add(f("maxAutoItems"), "must be from 0 to 100000")
			}
			row.MaxAutoItems = *p.MaxAutoItems
		}
		if p.MaxDailyAutoExecutions != nil && (*p.MaxDailyAutoExecutions < 0 || *p.MaxDailyAutoExecutions > 1000000) {
			v.Add(f("maxDailyAutoExecutions"), "must be from 0 to 1000000")
		}
		for name, val := range map[string]*float64{"maxOrderValue": p.MaxOrderValue, "budgetCapDaily": p.BudgetCapDaily} {
			if val != nil && (*val < 0 || *val > 999_999_999_999) {
				v.Add(f(name), "must be a non-negative amount")
			}
		}
		if p.RiskThreshold != nil {
			if *p.RiskThreshold < 0 || *p.RiskThreshold > 1 {
				v.Add(f("riskThreshold"), "must be from 0 to 1")
			}
			row.RiskThreshold = *p.RiskThreshold
		}
		rows = append(rows, row)
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	if err := store.UpsertAgentToolPermissions(ctx, s.store, actor.OrganizationID, rows); err != nil {
		return nil, err
	}
	return s.ToolPermissions(ctx, actor)
}

// ListMemory lists the organization's memory entries by category and
// scope type. The actor needs agent:read.
func (s *Service) ListMemory(ctx context.Context, actor domain.Actor, category, scopeType string) ([]store.AgentMemory, error) {
	if err := actor.RequireScope("agent:read"); err != nil {
		return nil, err
	}
	return store.ListAgentMemory(ctx, s.store.Pool, actor.OrganizationID, category, scopeType, MaxMemoryList)
}

// DeleteMemory deletes an entry for good. The actor needs agent:admin.
func (s *Service) DeleteMemory(ctx context.Context, actor domain.Actor, id uuid.UUID) error {
	if err := actor.RequireScope("agent:admin"); err != nil {
		return err
	}
	err := store.DeleteAgentMemory(ctx, s.store.Pool, actor.OrganizationID, id)
	if errors.Is(err, store.ErrNotFound) {
		return domain.NotFound("memory entry")
	}
	return err
}

// StoreMemory implements MemoryWriter over the store: an entry of the
// organization, or of the user the agent acts for when it acts for one.
type StoreMemory struct{ Store *store.Store }

// Remember implements MemoryWriter.
func (m StoreMemory) Remember(ctx context.Context, actor domain.Actor, convID, key uuid.UUID, category, content string) (map[string]any, error) {
	src := "conversation:" + convID.String()
	conf := 0.8
	e, err := store.InsertAgentMemory(ctx, m.Store.Pool, store.AgentMemory{
		ID: key, OrganizationID: actor.OrganizationID, Category: category, ScopeType: "organization", Content: content,
		Source: &src, Confidence: &conf,
	})
	if err != nil {
		return nil, err
	}
	return map[string]any{"id": e.ID, "category": e.Category, "content": e.Content, "remembered": true}, nil
}

// StoreAccounts implements CarrierAccounts over the store.
type StoreAccounts struct{ Store *store.Store }

// ListCarrierAccounts implements CarrierAccounts: no credentials.
func (a StoreAccounts) ListCarrierAccounts(ctx context.Context, actor domain.Actor) ([]map[string]any, error) {
	if err := actor.RequireScope("carriers:read"); err != nil {
		return nil, err
	}
	list, _, err := store.ListCarrierAccounts(ctx, a.Store.Pool, actor.OrganizationID, store.CarrierAccountFilter{Limit: 50})
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, 0, len(list))
	for _, c := range list {
		out = append(out, map[string]any{"id": c.ID, "name": c.Name, "carrier": c.Carrier, "status": c.Status,
			"supports_rating": c.SupportsRating, "supports_labels": c.SupportsLabels, "supports_pickup": c.SupportsPickup, "is_test": c.IsTest})
	}
	return out, nil
}

// Standing orders.

// Trigger types of standing orders (CONTRACT 11).
var TriggerTypes = []string{"manual", "on_order_created", "on_order_updated", "on_shipment_created", "on_tracking_exception"}

// StandingOrderInput creates or changes a standing order; nil fields stay
// (or take their defaults on create).
type StandingOrderInput struct {
	Name            *string
	Description     *string
	NaturalLanguage *string
	TriggerType     *string
	Conditions      json.RawMessage
	Actions         json.RawMessage
	Priority        *int
	IsActive        *bool
}

// StandingAction is one element of a standing order's actions.
type StandingAction struct {
	Tool  string          `json:"tool"`
	Input json.RawMessage `json:"input"`
}

func (s *Service) checkStanding(in StandingOrderInput, create bool) (domain.FieldErrors, []StandingAction) {
	var v domain.FieldErrors
	req := func(name string, p *string, hi int) {
		switch {
		case p == nil && create:
			v.Add(name, "is required")
		case p != nil && strings.TrimSpace(*p) == "":
			v.Add(name, "must not be empty")
		case p != nil:
			v.MaxLen(name, *p, hi)
		}
	}
	req("name", in.Name, 255)
	req("naturalLanguage", in.NaturalLanguage, 5000)
	if in.Description != nil {
		v.MaxLen("description", *in.Description, 1000)
	}
	if in.TriggerType != nil && !slices.Contains(TriggerTypes, *in.TriggerType) {
		v.Add("triggerType", "must be one of "+strings.Join(TriggerTypes, ", "))
	}
	if in.Priority != nil && (*in.Priority < -1000 || *in.Priority > 1000) {
		v.Add("priority", "must be from -1000 to 1000")
	}
	if len(in.Conditions) > 0 {
		// Simple conditions of the condition engine, on the event's object.
		doc, err := cond.DecodeDoc(in.Conditions)
		if err != nil {
			v.Add("conditions", "must be an array of conditions")
		} else if _, errs := cond.Decode(doc, "conditions", 0, 50); len(errs) > 0 {
			for _, e := range errs {
				v.Add(e.Field, e.Message)
			}
		}
	}
	var actions []StandingAction
	if len(in.Actions) > 0 {
		if json.Unmarshal(in.Actions, &actions) != nil {
			v.Add("actions", "must be an array of {tool, input}")
		} else if len(actions) > 20 {
			v.Add("actions", "must hold at most 20 actions")
		}
		for i, a := range actions {
			t, ok := s.tools.Get(a.Tool)
			if !ok || t.Internal {
				v.Add(fmt.Sprintf("actions[%d].tool", i), "must be one of "+strings.Join(s.tools.Names(), ", "))
				continue
			}
			if len(a.Input) == 0 {
				actions[i].Input = json.RawMessage(`{}`)
			}
		}
	}
	return v, actions
}

// ListStandingOrders lists the organization's standing orders by
// priority, highest first. The actor needs agent:read.
func (s *Service) ListStandingOrders(ctx context.Context, actor domain.Actor) ([]store.AgentStandingOrder, error) {
	if err := actor.RequireScope("agent:read"); err != nil {
		return nil, err
	}
	return store.ListAgentStandingOrders(ctx, s.store.Pool, actor.OrganizationID, "")
}

// CreateStandingOrder creates a standing order. The actor needs
// agent:write.
func (s *Service) CreateStandingOrder(ctx context.Context, actor domain.Actor, in StandingOrderInput) (store.AgentStandingOrder, error) {
	if err := actor.RequireScope("agent:write"); err != nil {
		return store.AgentStandingOrder{}, err
	}
	v, _ := s.checkStanding(in, true)
	if err := v.Err(); err != nil {
		return store.AgentStandingOrder{}, err
	}
	by, _ := json.Marshal(actor)
	o := store.AgentStandingOrder{ID: uuid.New(), OrganizationID: actor.OrganizationID, Name: strings.TrimSpace(*in.Name),
		Description: in.Description, NaturalLanguage: strings.TrimSpace(*in.NaturalLanguage), TriggerType: "manual",
		Conditions: in.Conditions, Actions: in.Actions, IsActive: true, CreatedBy: by}
	applyStanding(&o, in)
	return store.SaveAgentStandingOrder(ctx, s.store.Pool, o)
}

func applyStanding(o *store.AgentStandingOrder, in StandingOrderInput) {
	if in.Name != nil {
		o.Name = strings.TrimSpace(*in.Name)
	}
	if in.Description != nil {
		o.Description = in.Description
	}
	if in.NaturalLanguage != nil {
		o.NaturalLanguage = strings.TrimSpace(*in.NaturalLanguage)
	}
	if in.TriggerType != nil {
		o.TriggerType = *in.TriggerType
	}
	if len(in.Conditions) > 0 {
		o.Conditions = in.Conditions
	}
	if len(in.Actions) > 0 {
		o.Actions = in.Actions
	}
	if in.Priority != nil {
		o.Priority = *in.Priority
	}
	if in.IsActive != nil {
		o.IsActive = *in.IsActive
	}
}

// UpdateStandingOrder changes a standing order (extension). The actor
// needs agent:write.
func (s *Service) UpdateStandingOrder(ctx context.Context, actor domain.Actor, id uuid.UUID, in StandingOrderInput) (store.AgentStandingOrder, error) {
	if err := actor.RequireScope("agent:write"); err != nil {
		return store.AgentStandingOrder{}, err
	}
	cur, err := store.AgentStandingOrderByID(ctx, s.store.Pool, actor.OrganizationID, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.AgentStandingOrder{}, domain.NotFound("standing order")
	}
	if err != nil {
		return store.AgentStandingOrder{}, err
	}
	v, _ := s.checkStanding(in, false)
	if err := v.Err(); err != nil {
		return store.AgentStandingOrder{}, err
	}
	applyStanding(&cur, in)
	return store.SaveAgentStandingOrder(ctx, s.store.Pool, cur)
}

// DeleteStandingOrder deletes a standing order (extension). The actor
// needs agent:write.
func (s *Service) DeleteStandingOrder(ctx context.Context, actor domain.Actor, id uuid.UUID) error {
	if err := actor.RequireScope("agent:write"); err != nil {
		return err
	}
	err := store.DeleteAgentStandingOrder(ctx, s.store.Pool, actor.OrganizationID, id)
	if errors.Is(err, store.ErrNotFound) {
		return domain.NotFound("standing order")
	}
	return err
}
