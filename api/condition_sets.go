package api

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/routing"
)

// mountConditionSets registers the condition set endpoints (Part 2,
// Condition sets).
func (s *Server) mountConditionSets(r chi.Router) {
	read := r.With(s.scope("dispatchers:read"))
	write := r.With(s.scope("dispatchers:write"))
	read.Get("/condition-sets", s.h(s.listConditionSets))
	routingCRUD[routing.ConditionSetInput, routing.ConditionSet, conditionSetJSON]{path: "/condition-sets", noun: "condition set", decode: decodeConditionSet, toJSON: toConditionSetJSON,
		get: s.Routing.GetConditionSet, create: s.Routing.CreateConditionSet, update: s.Routing.UpdateConditionSet, remove: s.Routing.DeleteConditionSet}.mount(s, read, write)
	read.Get("/condition-sets/{id}/values", s.h(s.listConditionSetValues))
	write.Post("/condition-sets/{id}/values", s.h(s.addConditionSetValues))
	write.Delete("/condition-sets/{id}/values", s.h(s.removeConditionSetValues))
	write.Delete("/condition-sets/{id}/values/all", s.h(s.clearConditionSetValues))
}

// conditionSetJSON is the Set resource (camelCase).
type conditionSetJSON struct {
	ID             uuid.UUID `json:"id"`
	OrganizationID uuid.UUID `json:"organizationId"`
	Name           string    `json:"name"`
	Description    *string   `json:"description"`
	ValueType      string    `json:"valueType"`
	ValueCount     int       `json:"valueCount"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
}

func toConditionSetJSON(c routing.ConditionSet) conditionSetJSON {
	return conditionSetJSON{
		ID: c.ID, OrganizationID: c.OrganizationID, Name: c.Name, Description: c.Description,
		ValueType: c.ValueType, ValueCount: c.ValueCount, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
	}
}

// conditionSetValueJSON is a Value (snake_case).
type conditionSetValueJSON struct {
	ID             uuid.UUID `json:"id"`
	ConditionSetID uuid.UUID `json:"condition_set_id"`
	Value          string    `json:"value"`
	Label          *string   `json:"label"`
}

func (s *Server) listConditionSets(w http.ResponseWriter, r *http.Request) error {
	p, err := parsePage(r, 20, 100)
	if err != nil {
		return err
	}
	page, err := s.Routing.ListConditionSets(r.Context(), actorOf(r), p.Limit, p.Offset())
	if err != nil {
		return err
	}
	writeList(w, mapSlice(page.Items, toConditionSetJSON), p, page.Total)
	return nil
}

var conditionSetFields = []string{"name", "description", "valueType"}

// decodeConditionSet reads a condition set create or update body (the
// domain checks the values).
//
// An update changes name and description (null or "" clears the
// description); valueType cannot change once values exist, so it is not
// updatable.
func decodeConditionSet(r *http.Request, create bool) (routing.ConditionSetInput, error) {
	var body jsonBody
	v, err := decodeCheckedJSON(r, &body)
	if err != nil {
		return routing.ConditionSetInput{}, err
	}
	var in routing.ConditionSetInput
	in.Name, in.Description = nameDescription(body, create)
	if raw := body["valueType"]; create && raw != nil {
		t, _ := raw.(string) // no string is no value type: the domain names it
		in.ValueType = &t
	}
	if v.ok() {
		return in, nil
	}
	return in, validation(v, in.Validate(create), conditionSetFields...)
}

func (s *Server) listConditionSetValues(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "condition set")
	if err != nil {
		return err
	}
	p, err := parsePage(r, 100, 1000)
	if err != nil {
		return err
	}
	page, err := s.Routing.ListConditionSetValues(r.Context(), actorOf(r), id, p.Limit, p.Offset())
	if err != nil {
		return err
	}
	out := make([]conditionSetValueJSON, 0, len(page.Items))
	for _, v := range page.Items {
		out = append(out, conditionSetValueJSON{ID: v.ID, ConditionSetID: v.ConditionSetID, Value: v.Value, Label: v.Label})
	}
	writeList(w, out, p, page.Total)
	return nil
}

// conditionSetValues is the path's set and the body's values array (as
// decoded: the domain checks it against the set).
func conditionSetValues(r *http.Request) (uuid.UUID, any, error) {
	id, err := pathID(r, "id", "condition set")
	if err != nil {
		return id, nil, err
	}
	var body jsonBody
	if err := decodeJSON(r, &body); err != nil {
		return id, nil, err
	}
	return id, body["values"], nil
}

// addConditionSetValues adds values: {values: [{value, label?}]} (a bare
// string is a value without a label); routing.AddConditionSetValues.
func (s *Server) addConditionSetValues(w http.ResponseWriter, r *http.Request) error {
	id, values, err := conditionSetValues(r)
	if err != nil {
		return err
	}
	added, err := s.Routing.AddConditionSetValues(r.Context(), actorOf(r), id, values)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "added": added})
	return nil
}

// removeConditionSetValues removes values: {values: [string]}.
func (s *Server) removeConditionSetValues(w http.ResponseWriter, r *http.Request) error {
	id, values, err := conditionSetValues(r)
	if err != nil {
		return err
	}
	removed, err := s.Routing.RemoveConditionSetValues(r.Context(), actorOf(r), id, values)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "removed": removed})
	return nil
}

func (s *Server) clearConditionSetValues(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "condition set")
	if err != nil {
		return err
	}
	if err := s.Routing.ClearConditionSetValues(r.Context(), actorOf(r), id); err != nil {
		return err
	}
	writeSuccess(w)
	return nil
}
