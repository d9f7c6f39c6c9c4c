package routing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/rules/cond"
	"github.com/fos-dev/fos/store"
)

// SplitRule is a split rule (store row).
type SplitRule = store.SplitRule

// SplitPlan is what a split rule would do to an order (a dry run).
type SplitPlan = rules.Plan

// Bounds of split rules (the specification leaves them open: those of
// dispatchers).
const (
	SplitRuleNameMax = 100
	SplitRuleDescMax = 500
	SplitRulePrioMax = 1000
)

// SplitRuleMethods are the split methods.
var SplitRuleMethods = store.SplitRuleMethods

// ListSplitRulesInput filters a split rule list.
type ListSplitRulesInput struct {
	BridgeID      *uuid.UUID
	IsActive      *bool
	Limit, Offset int
}

// ListSplitRules lists the organization's split rules. The actor needs
// dispatchers:read.
func (s *Service) ListSplitRules(ctx context.Context, actor domain.Actor, in ListSplitRulesInput) (Page[SplitRule], error) {
	org, err := orgOf(actor, ScopeRead)
	if err != nil {
		return Page[SplitRule]{}, err
	}
	list, total, err := store.ListSplitRules(ctx, s.store.Pool, org, store.SplitRuleFilter{BridgeID: in.BridgeID, IsActive: in.IsActive, Limit: in.Limit, Offset: in.Offset})
	return Page[SplitRule]{Items: list, Total: total}, err
}

// GetSplitRule is one split rule of the organization. The actor needs
// dispatchers:read.
func (s *Service) GetSplitRule(ctx context.Context, actor domain.Actor, id uuid.UUID) (SplitRule, error) {
	org, err := orgOf(actor, ScopeRead)
	if err != nil {
		return SplitRule{}, err
	}
	return s.splitRule(ctx, org, id)
}

func (s *Service) splitRule(ctx context.Context, org, id uuid.UUID) (SplitRule, error) {
	r, err := store.SplitRuleByID(ctx, s.store.Pool, org, id)
	return r, notFound(err, "split rule")
}

// SplitRuleInput creates or changes a split rule. A nil field (a false
// …Set) is not sent: on create the required ones (Name, Method) are then
// missing, on update they stay. After the input is applied the rule must be
// complete: condition groups for method condition, a group field for
// field_group.
type SplitRuleInput struct {
	// Name is trimmed; "" is missing.
	Name *string
	// Description: "" clears it.
	Description *string
	// Method is one of SplitRuleMethods.
	Method   *string
	IsActive *bool
	// Priority is 0-1000.
	Priority *int
	// BridgeIDSet: BridgeID is the bridge whose orders the rule splits
	// (nil: every bridge's).
	BridgeIDSet bool
	BridgeID    *uuid.UUID
	// GroupField is the dot path field_group groups by ("" clears it).
	GroupField *string
	// ConditionGroupsSet: ConditionGroups are the groups
	// ([]rules.ConditionGroup or the JSON value decoded); nil clears them.
	ConditionGroupsSet bool
	ConditionGroups    any
}

// CreateSplitRule creates a split rule. The actor needs dispatchers:write.
func (s *Service) CreateSplitRule(ctx context.Context, actor domain.Actor, in SplitRuleInput) (SplitRule, error) {
	org, err := orgOf(actor, ScopeWrite)
	if err != nil {
		return SplitRule{}, err
	}
	rule := SplitRule{ID: uuid.New(), OrganizationID: org, IsActive: true}
	paths, v := applySplitRule(&rule, in, true)
	if err := v.Err(); err != nil {
		return SplitRule{}, err
	}
	out, err := store.CreateSplitRule(ctx, s.store, rule)
	if err != nil {
		return SplitRule{}, splitRuleWriteError(err, paths)
	}
	return out, nil
}

// UpdateSplitRule changes a split rule; it affects orders processed
// afterwards. The actor needs dispatchers:write.
func (s *Service) UpdateSplitRule(ctx context.Context, actor domain.Actor, id uuid.UUID, in SplitRuleInput) (SplitRule, error) {
	org, err := orgOf(actor, ScopeWrite)
	if err != nil {
		return SplitRule{}, err
	}
	rule, err := s.splitRule(ctx, org, id)
	if err != nil {
		return SplitRule{}, err
	}
	paths, v := applySplitRule(&rule, in, false)
	if err := v.Err(); err != nil {
		return SplitRule{}, err
	}
	out, err := store.UpdateSplitRule(ctx, s.store, rule)
	if err != nil {
		return SplitRule{}, notFound(splitRuleWriteError(err, paths), "split rule")
	}
	return out, nil
}

// DeleteSplitRule deletes a split rule. The actor needs dispatchers:write.
func (s *Service) DeleteSplitRule(ctx context.Context, actor domain.Actor, id uuid.UUID) error {
	org, err := orgOf(actor, ScopeWrite)
	if err != nil {
		return err
	}
	return notFound(store.DeleteSplitRule(ctx, s.store.Pool, org, id), "split rule")
}

// TestSplitRule is a dry run of the rule on an order of the organization:
// nothing is written; an inactive rule is evaluated all the same. The
// actor needs dispatchers:write (as the API mounts it).
func (s *Service) TestSplitRule(ctx context.Context, actor domain.Actor, ruleID, orderID uuid.UUID) (SplitPlan, error) {
	org, err := orgOf(actor, ScopeWrite)
	if err != nil {
		return SplitPlan{}, err
	}
	rule, err := s.splitRule(ctx, org, ruleID)
	if err != nil {
		return SplitPlan{}, err
	}
	order, err := store.OrderByID(ctx, s.store.Pool, org, orderID)
	if err != nil {
		return SplitPlan{}, notFound(err, "order")
	}
	return rules.DryRun(ctx, s.store.Pool, rule, order)
}

// splitRuleWriteError names the field a refused reference came from.
func splitRuleWriteError(err error, paths map[uuid.UUID]string) error {
	if errors.Is(err, store.ErrSplitRuleBridge) {
		return domain.InvalidField("bridgeId", "must be a bridge of this organization")
	}
	return conditionSetsError(err, paths)
}

// Validate names the input's problems that need no stored rule (a
// create's every field, an update's fields sent).
func (in SplitRuleInput) Validate(create bool) domain.FieldErrors {
	_, v := applySplitRule(&SplitRule{}, in, create)
	if !create { // the rule's companion field is checked against the stored rule
		v = slices.DeleteFunc(v, func(f domain.FieldError) bool {
			return strings.HasSuffix(f.Message, "is required for method "+rules.MethodCondition) ||
				strings.HasSuffix(f.Message, "is required for method "+rules.MethodFieldGroup)
		})
	}
	return v
}

// applySplitRule validates a create (every field, with defaults) or an
// update onto rule and returns where each referenced condition set is
// named, or the problems.
func applySplitRule(rule *SplitRule, in SplitRuleInput, create bool) (map[uuid.UUID]string, domain.FieldErrors) {
	var v domain.FieldErrors
	if name, ok := requiredName(&v, "name", in.Name, create, SplitRuleNameMax); ok {
		rule.Name = name
	}
	if desc, ok := optionalText(&v, "description", in.Description, create, SplitRuleDescMax); ok {
		rule.Description = desc
	}
	if create || in.Method != nil {
		switch {
		case in.Method == nil:
			v.Add("method", "is required")
		case !slices.Contains(SplitRuleMethods, *in.Method):
			v.Add("method", "must be one of "+strings.Join(SplitRuleMethods, ", "))
		}
		rule.Method = deref(in.Method)
	}
	if in.IsActive != nil {
		rule.IsActive = *in.IsActive
	}
	if p, ok := priority(&v, in.Priority, SplitRulePrioMax); ok {
		rule.Priority = p
	}
	if create || in.BridgeIDSet {
		rule.BridgeID = in.BridgeID
	}
	if create || in.GroupField != nil {
		rule.GroupField = nil
		if g := strings.TrimSpace(deref(in.GroupField)); g != "" {
			if v.MaxLen("groupField", g, cond.MaxFieldLen); v.Has("groupField") {
			} else if err := rules.ValidGroupField(g); err != nil {
				v.Add("groupField", err.Error())
			} else {
				rule.GroupField = &g
			}
		}
	}
	groupsOK := true
	if create || in.ConditionGroupsSet {
		rule.ConditionGroups = json.RawMessage(`[]`)
		if in.ConditionGroups != nil {
			groups, errs := decodeConditionGroups(in.ConditionGroups, "conditionGroups")
			for _, e := range errs {
				v.Add(e.Field, e.Message)
			}
			if errs == nil {
				rule.ConditionGroups, _ = json.Marshal(groups)
			} else {
				groupsOK = false
			}
		}
	}
	// The method's companion field must be there once the input is applied.
	switch rule.Method {
	case rules.MethodCondition:
		if groupsOK && (len(rule.ConditionGroups) == 0 || string(rule.ConditionGroups) == `[]`) {
			v.Add("conditionGroups", "is required for method condition")
		}
	case rules.MethodFieldGroup:
		if rule.GroupField == nil && !v.Has("groupField") {
			v.Add("groupField", "is required for method field_group")
		}
	}
	if len(v) > 0 {
		return nil, v
	}
	// The condition sets the groups use, each with the first place it is
	// named.
	var groups []rules.ConditionGroup
	_ = json.Unmarshal(rule.ConditionGroups, &groups)
	paths := map[uuid.UUID]string{}
	rule.ConditionSetIDs = []uuid.UUID{}
	for gi, g := range groups {
		for ci, c := range g.Conditions {
			if c.SetID != nil {
				if _, seen := paths[*c.SetID]; !seen {
					paths[*c.SetID] = fmt.Sprintf("conditionGroups[%d].conditions[%d].setId", gi, ci)
					rule.ConditionSetIDs = append(rule.ConditionSetIDs, *c.SetID)
				}
			}
		}
	}
	return paths, nil
}

// decodeConditionGroups checks condition groups given as the JSON value
// decoded or typed.
func decodeConditionGroups(raw any, path string) ([]rules.ConditionGroup, []cond.FieldError) {
	if typed, ok := raw.([]rules.ConditionGroup); ok {
		b, err := json.Marshal(typed)
		if err == nil {
			raw, err = cond.DecodeDoc(b)
		}
		if err != nil {
			return nil, []cond.FieldError{{Field: path, Message: "must be an array of condition groups"}}
		}
	}
	return rules.DecodeConditionGroups(raw, path)
}
