package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/rules/cond"
	"github.com/fos-dev/fos/store"
)

// mountSplitRules registers the split rule endpoints (Part 2, Split rules;
// scopes dispatchers:*, CONTRACT 3).
func (s *Server) mountSplitRules(r chi.Router) {
	read := r.With(s.scope("dispatchers:read"))
	write := r.With(s.scope("dispatchers:write"))
	read.Get("/split-rules", s.h(s.listSplitRules))
	write.Post("/split-rules", s.h(s.createSplitRule))
	read.Get("/split-rules/{id}", s.h(s.getSplitRule))
	write.Patch("/split-rules/{id}", s.h(s.updateSplitRule))
	write.Delete("/split-rules/{id}", s.h(s.deleteSplitRule))
	write.Post("/split-rules/{id}/test", s.h(s.testSplitRule))
}

// Bounds the specification leaves open (those of dispatchers).
const (
	splitRuleNameMax = 100
	splitRuleDescMax = 500
	splitRulePrioMax = 1000
)

// splitRuleJSON is the Split rule resource (camelCase).
type splitRuleJSON struct {
	ID              uuid.UUID       `json:"id"`
	OrganizationID  uuid.UUID       `json:"organizationId"`
	Name            string          `json:"name"`
	Description     *string         `json:"description"`
	Method          string          `json:"method"`
	ConditionGroups json.RawMessage `json:"conditionGroups"`
	GroupField      *string         `json:"groupField"`
	BridgeID        *uuid.UUID      `json:"bridgeId"`
	IsActive        bool            `json:"isActive"`
	Priority        int             `json:"priority"`
	OrdersSplit     int             `json:"ordersSplit"`
	LastSplitAt     *time.Time      `json:"lastSplitAt"`
	CreatedAt       time.Time       `json:"createdAt"`
	UpdatedAt       time.Time       `json:"updatedAt"`
}

func toSplitRuleJSON(r store.SplitRule) splitRuleJSON {
	groups := normalizedJSON[[]rules.ConditionGroup](r.ConditionGroups)
	if len(groups) == 0 || string(groups) == "null" {
		groups = json.RawMessage(`[]`)
	}
	return splitRuleJSON{
		ID: r.ID, OrganizationID: r.OrganizationID, Name: r.Name, Description: r.Description, Method: r.Method,
		ConditionGroups: groups, GroupField: r.GroupField, BridgeID: r.BridgeID, IsActive: r.IsActive,
		Priority: r.Priority, OrdersSplit: r.OrdersSplit, LastSplitAt: r.LastSplitAt, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

func (s *Server) listSplitRules(w http.ResponseWriter, r *http.Request) error {
	var details fieldErrors
	p, err := parsePage(r, 20, 100)
	details.collect(err)
	bridgeID, err := queryUUID(r, "bridgeId")
	details.collect(err)
	active, err := queryEnum(r, "isActive", "true", "false")
	details.collect(err)
	if len(details) > 0 {
		return errValidation(details...)
	}
	f := store.SplitRuleFilter{BridgeID: bridgeID, Limit: p.Limit, Offset: p.Offset()}
	if active != "" {
		b := active == "true"
		f.IsActive = &b
	}
	list, total, err := store.ListSplitRules(r.Context(), s.store.Pool, mustPrincipal(r).OrganizationID, f)
	if err != nil {
		return err
	}
	writeList(w, mapSlice(list, toSplitRuleJSON), p, total)
	return nil
}

func (s *Server) getSplitRule(w http.ResponseWriter, r *http.Request) error {
	return writeByID(s, w, r, "split rule", store.SplitRuleByID, toSplitRuleJSON)
}

func (s *Server) createSplitRule(w http.ResponseWriter, r *http.Request) error {
	var body jsonBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	rule := store.SplitRule{ID: uuid.New(), OrganizationID: mustPrincipal(r).OrganizationID, IsActive: true}
	setPaths, err := applySplitRuleBody(&rule, body, true)
	if err != nil {
		return err
	}
	out, err := store.CreateSplitRule(r.Context(), s.store, rule)
	if err != nil {
		return splitRuleWriteError(err, setPaths)
	}
	writeData(w, http.StatusCreated, toSplitRuleJSON(out))
	return nil
}

// updateSplitRule applies any create field; null clears description,
// conditionGroups, groupField and bridgeId. The result must still be a
// complete rule (condition groups for condition, a group field for
// field_group). It affects orders processed afterwards.
func (s *Server) updateSplitRule(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "split rule")
	if err != nil {
		return err
	}
	var body jsonBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	orgID := mustPrincipal(r).OrganizationID
	rule, err := store.SplitRuleByID(r.Context(), s.store.Pool, orgID, id)
	if err != nil {
		return notFoundAs(err, "split rule")
	}
	setPaths, err := applySplitRuleBody(&rule, body, false)
	if err != nil {
		return err
	}
	out, err := store.UpdateSplitRule(r.Context(), s.store, rule)
	if err != nil {
		return notFoundAs(splitRuleWriteError(err, setPaths), "split rule")
	}
	writeData(w, http.StatusOK, toSplitRuleJSON(out))
	return nil
}

// splitRuleWriteError names the field a refused reference came from.
func splitRuleWriteError(err error, setPaths map[uuid.UUID]string) error {
	switch {
	case errors.Is(err, store.ErrSplitRuleBridge):
		return errValidation(FieldError{Field: "bridgeId", Message: "must be a bridge of this organization"})
	}
	return conditionSetsError(err, setPaths)
}

// applySplitRuleBody validates a create (create true: every field, with
// defaults) or update body onto rule and returns where each referenced
// condition set is named (for errors).
func applySplitRuleBody(rule *store.SplitRule, body jsonBody, create bool) (map[uuid.UUID]string, error) {
	var v validator
	f := bodyFields{v: &v, m: body}
	sent := func(k string) bool { _, ok := body[k]; return create || ok }
	if sent("name") {
		rule.Name = deref(f.str("name", true, splitRuleNameMax))
	}
	if sent("description") {
		rule.Description = f.str("description", false, splitRuleDescMax)
	}
	if sent("method") {
		rule.Method = f.enum("method", true, "", store.SplitRuleMethods)
	}
	if sent("isActive") && body["isActive"] != nil {
		if b := f.boolean("isActive", false); b != nil {
			rule.IsActive = *b
		}
	}
	if sent("priority") && body["priority"] != nil {
		if n := f.number("priority", false, 0, splitRulePrioMax, true); n != nil {
			rule.Priority = int(*n)
		}
	}
	if sent("bridgeId") {
		rule.BridgeID = nil
		if id := f.str("bridgeId", false, 100); id != nil {
			if u, err := uuid.Parse(*id); err != nil {
				v.add("bridgeId", "must be a UUID")
			} else {
				rule.BridgeID = &u
			}
		}
	}
	if sent("groupField") {
		rule.GroupField = nil
		if g := f.str("groupField", false, cond.MaxFieldLen); g != nil {
			if err := rules.ValidGroupField(*g); err != nil {
				v.add("groupField", err.Error())
			} else {
				rule.GroupField = g
			}
		}
	}
	groupsOK := true
	if sent("conditionGroups") {
		rule.ConditionGroups = json.RawMessage(`[]`)
		if body["conditionGroups"] != nil {
			groups, errs := rules.DecodeConditionGroups(body["conditionGroups"], "conditionGroups")
			for _, e := range errs {
				v.add(e.Field, e.Message)
			}
			if errs == nil {
				rule.ConditionGroups = orderJSONOf(groups)
			} else {
				groupsOK = false
			}
		}
	}
	// The method's companion field must be there once the body is applied.
	switch rule.Method {
	case rules.MethodCondition:
		if groupsOK && (len(rule.ConditionGroups) == 0 || string(rule.ConditionGroups) == `[]`) {
			v.add("conditionGroups", "is required for method condition")
		}
	case rules.MethodFieldGroup:
		if rule.GroupField == nil && !hasDetail(v.details, "groupField") {
			v.add("groupField", "is required for method field_group")
		}
	}
	if err := v.err(); err != nil {
		return nil, err
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

func (s *Server) deleteSplitRule(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "split rule")
	if err != nil {
		return err
	}
	if err := store.DeleteSplitRule(r.Context(), s.store.Pool, mustPrincipal(r).OrganizationID, id); err != nil {
		return notFoundAs(err, "split rule")
	}
	writeSuccess(w)
	return nil
}

// splitTestGroupJSON is one group of a dry run.
type splitTestGroupJSON struct {
	Label     string `json:"label"`
	ItemCount int    `json:"itemCount"`
	Items     []any  `json:"items"`
}

// testSplitRule is a dry run of the rule on an order: {orderId}. Nothing
// is written; an inactive rule is evaluated all the same.
func (s *Server) testSplitRule(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "split rule")
	if err != nil {
		return err
	}
	var body jsonBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	var v validator
	f := bodyFields{v: &v, m: body}
	var orderID uuid.UUID
	if raw := f.str("orderId", true, 100); raw != nil {
		if orderID, err = uuid.Parse(*raw); err != nil {
			v.add("orderId", "must be a UUID")
		}
	}
	if err := v.err(); err != nil {
		return err
	}
	orgID := mustPrincipal(r).OrganizationID
	rule, err := store.SplitRuleByID(r.Context(), s.store.Pool, orgID, id)
	if err != nil {
		return notFoundAs(err, "split rule")
	}
	order, err := store.OrderByID(r.Context(), s.store.Pool, orgID, orderID)
	if err != nil {
		return notFoundAs(err, "order")
	}
	plan, err := rules.DryRun(r.Context(), s.store.Pool, rule, order)
	if err != nil {
		return err
	}
	groups := make([]splitTestGroupJSON, 0, len(plan.Groups))
	for _, g := range plan.Groups {
		groups = append(groups, splitTestGroupJSON{Label: g.Label, ItemCount: len(g.Items), Items: g.Items})
	}
	writeData(w, http.StatusOK, map[string]any{"wouldSplit": plan.WouldSplit, "reason": plan.Reason, "groups": groups})
	return nil
}

// conditionSetsError names, by the path each was referenced at, the
// condition sets a write named that are not the organization's
// (store.MissingConditionSetsError); any other error is returned as it is.
func conditionSetsError(err error, setPaths map[uuid.UUID]string) error {
	var missing *store.MissingConditionSetsError
	if !errors.As(err, &missing) {
		return err
	}
	details := make([]FieldError, 0, len(missing.IDs))
	for _, id := range missing.IDs {
		details = append(details, FieldError{Field: setPaths[id], Message: "must be a condition set of this organization"})
	}
	return errValidation(details...)
}
