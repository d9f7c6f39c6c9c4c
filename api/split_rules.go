package api

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/routing"
	"github.com/fos-dev/fos/rules"
)

// mountSplitRules registers the split rule endpoints (Part 2, Split rules;
// scopes dispatchers:*, CONTRACT 3).
func (s *Server) mountSplitRules(r chi.Router) {
	read := r.With(s.scope("dispatchers:read"))
	write := r.With(s.scope("dispatchers:write"))
	read.Get("/split-rules", s.h(s.listSplitRules))
	routingCRUD[routing.SplitRuleInput, routing.SplitRule, splitRuleJSON]{path: "/split-rules", noun: "split rule", decode: decodeSplitRule, toJSON: toSplitRuleJSON,
		get: s.Routing.GetSplitRule, create: s.Routing.CreateSplitRule, update: s.Routing.UpdateSplitRule, remove: s.Routing.DeleteSplitRule}.mount(s, read, write)
	write.Post("/split-rules/{id}/test", s.h(s.testSplitRule))
}

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

func toSplitRuleJSON(r routing.SplitRule) splitRuleJSON {
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
	in := routing.ListSplitRulesInput{BridgeID: bridgeID, Limit: p.Limit, Offset: p.Offset()}
	if active != "" {
		b := active == "true"
		in.IsActive = &b
	}
	page, err := s.Routing.ListSplitRules(r.Context(), actorOf(r), in)
	if err != nil {
		return err
	}
	writeList(w, mapSlice(page.Items, toSplitRuleJSON), p, page.Total)
	return nil
}

// splitRuleFields is the order a split rule body's problems are named in.
var splitRuleFields = []string{"name", "description", "method", "isActive", "priority", "bridgeId", "groupField", "conditionGroups"}

// decodeSplitRule reads a split rule create (every field) or update (the
// fields sent) body; the domain checks the values.
//
// An update applies any create field; null clears description,
// conditionGroups, groupField and bridgeId. The result must still be a
// complete rule (condition groups for condition, a group field for
// field_group). It affects orders processed afterwards.
func decodeSplitRule(r *http.Request, create bool) (routing.SplitRuleInput, error) {
	var body jsonBody
	v, err := decodeCheckedJSON(r, &body)
	if err != nil {
		return routing.SplitRuleInput{}, err
	}
	sent := func(k string) bool { _, ok := body[k]; return create || ok }
	var in routing.SplitRuleInput
	in.Name, in.Description = nameDescription(body, create)
	if raw, ok := body["method"]; ok {
		if raw == nil {
			v.add("method", "is required")
		} else {
			m, _ := raw.(string) // no string is no method: the domain names it
			in.Method = &m
		}
	}
	if b, ok := body["isActive"].(bool); ok {
		in.IsActive = &b
	}
	in.Priority = integerOf(body["priority"])
	if sent("bridgeId") {
		in.BridgeIDSet = true
		if id := uuidOf(body["bridgeId"]); id != uuid.Nil {
			in.BridgeID = &id
		}
	}
	if sent("groupField") {
		in.GroupField = rawTextOf(body["groupField"])
	}
	if sent("conditionGroups") {
		in.ConditionGroupsSet, in.ConditionGroups = true, body["conditionGroups"]
	}
	if v.ok() {
		return in, nil
	}
	return in, validation(v, in.Validate(create), splitRuleFields...)
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
	// SplitRuleTestRequest: orderId is a UUID.
	plan, err := s.Routing.TestSplitRule(r.Context(), actorOf(r), id, uuidOf(body["orderId"]))
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
