package api

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/rules/cond"
	"github.com/fos-dev/fos/store"
)

// mountConditionSets registers the condition set endpoints (Part 2,
// Condition sets).
func (s *Server) mountConditionSets(r chi.Router) {
	read := r.With(s.scope("dispatchers:read"))
	write := r.With(s.scope("dispatchers:write"))
	read.Get("/condition-sets", s.h(s.listConditionSets))
	write.Post("/condition-sets", s.h(s.createConditionSet))
	read.Get("/condition-sets/{id}", s.h(s.getConditionSet))
	write.Patch("/condition-sets/{id}", s.h(s.updateConditionSet))
	write.Delete("/condition-sets/{id}", s.h(s.deleteConditionSet))
	read.Get("/condition-sets/{id}/values", s.h(s.listConditionSetValues))
	write.Post("/condition-sets/{id}/values", s.h(s.addConditionSetValues))
	write.Delete("/condition-sets/{id}/values", s.h(s.removeConditionSetValues))
	write.Delete("/condition-sets/{id}/values/all", s.h(s.clearConditionSetValues))
}

// Bounds the specification leaves open.
const (
	conditionSetNameMax     = 100
	conditionSetDescMax     = 500
	conditionSetValueMax    = 500 // characters; the unique index holds it
	conditionSetLabelMax    = 255
	conditionSetValuesBatch = 100_000
)

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

func toConditionSetJSON(c store.ConditionSet) conditionSetJSON {
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
	list, total, err := store.ListConditionSets(r.Context(), s.store.Pool, mustPrincipal(r).OrganizationID, p.Limit, p.Offset())
	if err != nil {
		return err
	}
	writeList(w, mapSlice(list, toConditionSetJSON), p, total)
	return nil
}

func (s *Server) getConditionSet(w http.ResponseWriter, r *http.Request) error {
	return writeByID(s, w, r, "condition set", store.ConditionSetByID, toConditionSetJSON)
}

func (s *Server) createConditionSet(w http.ResponseWriter, r *http.Request) error {
	var body jsonBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	var v validator
	f := bodyFields{v: &v, m: body}
	c := store.ConditionSet{ID: uuid.New(), OrganizationID: mustPrincipal(r).OrganizationID}
	c.Name = deref(f.str("name", true, conditionSetNameMax))
	c.Description = f.str("description", false, conditionSetDescMax)
	c.ValueType = f.enum("valueType", true, "", cond.ValueTypes)
	if err := v.err(); err != nil {
		return err
	}
	out, err := store.CreateConditionSet(r.Context(), s.store.Pool, c)
	if errors.Is(err, store.ErrConflict) {
		return errConflict("a condition set with this name already exists")
	}
	if err != nil {
		return err
	}
	writeData(w, http.StatusCreated, toConditionSetJSON(out))
	return nil
}

// updateConditionSet changes name and description (null or "" clears the
// description); valueType cannot change once values exist, so it is not
// updatable.
func (s *Server) updateConditionSet(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "condition set")
	if err != nil {
		return err
	}
	var body jsonBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	var v validator
	f := bodyFields{v: &v, m: body}
	var p store.ConditionSetPatch
	if _, sent := body["name"]; sent {
		p.Name = f.str("name", true, conditionSetNameMax)
	}
	if _, sent := body["description"]; sent {
		p.DescriptionSet = true
		p.Description = f.str("description", false, conditionSetDescMax)
	}
	if err := v.err(); err != nil {
		return err
	}
	out, err := store.UpdateConditionSet(r.Context(), s.store.Pool, mustPrincipal(r).OrganizationID, id, p)
	if errors.Is(err, store.ErrConflict) {
		return errConflict("a condition set with this name already exists")
	}
	if err != nil {
		return notFoundAs(err, "condition set")
	}
	writeData(w, http.StatusOK, toConditionSetJSON(out))
	return nil
}

func (s *Server) deleteConditionSet(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "condition set")
	if err != nil {
		return err
	}
	err = store.DeleteConditionSet(r.Context(), s.store, mustPrincipal(r).OrganizationID, id)
	if errors.Is(err, store.ErrConditionSetInUse) {
		return errConflict("the condition set is referenced by a dispatcher or split rule")
	}
	if err != nil {
		return notFoundAs(err, "condition set")
	}
	writeSuccess(w)
	return nil
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
	list, total, err := store.ListConditionSetValues(r.Context(), s.store.Pool, mustPrincipal(r).OrganizationID, id, p.Limit, p.Offset())
	if err != nil {
		return notFoundAs(err, "condition set")
	}
	out := make([]conditionSetValueJSON, 0, len(list))
	for _, v := range list {
		out = append(out, conditionSetValueJSON{ID: v.ID, ConditionSetID: v.ConditionSetID, Value: v.Value, Label: v.Label})
	}
	writeList(w, out, p, total)
	return nil
}

// conditionSetFor loads the set a values request names (404 across
// organizations), for its value type.
func (s *Server) conditionSetFor(r *http.Request) (store.ConditionSet, error) {
	return loadByID(s, r, "condition set", store.ConditionSetByID)
}

// addConditionSetValues adds values: {values: [{value, label?}]} (a bare
// string is a value without a label). Each
// value is checked against the set's valueType (a number set also takes
// JSON numbers) and stored in its canonical form; values the set holds,
// or that repeat in the request, are ignored, and added counts the new
// ones.
func (s *Server) addConditionSetValues(w http.ResponseWriter, r *http.Request) error {
	set, err := s.conditionSetFor(r)
	if err != nil {
		return err
	}
	var body jsonBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	raw, err := conditionSetValuesField(body, "an array of {value, label} objects")
	if err != nil {
		return err
	}
	var v validator
	values := make([]store.NewConditionSetValue, 0, len(raw))
	seen := make(map[string]bool, len(raw))
	for i, el := range raw {
		at := fmt.Sprintf("values[%d]", i)
		m, isObj := el.(map[string]any)
		if str, isStr := el.(string); isStr { // a bare value is {value}
			m, isObj = map[string]any{"value": str}, true
		}
		if !isObj {
			v.add(at, "must be an object with value and label")
			continue
		}
		f := bodyFields{v: &v, path: at, m: m}
		val, ok := conditionSetValue(&v, at+".value", set.ValueType, m["value"])
		label := f.str("label", false, conditionSetLabelMax)
		if !ok || seen[val] {
			continue
		}
		seen[val] = true
		values = append(values, store.NewConditionSetValue{Value: val, Label: label})
		if len(v.details) > 100 { // enough to fix a batch by
			break
		}
	}
	if err := v.err(); err != nil {
		return err
	}
	// One lock order for every batch, so concurrent adds cannot deadlock
	// on each other's rows.
	slices.SortFunc(values, func(a, b store.NewConditionSetValue) int { return strings.Compare(a.Value, b.Value) })
	added, err := store.AddConditionSetValues(r.Context(), s.store, set.OrganizationID, set.ID, values)
	if err != nil {
		return notFoundAs(err, "condition set")
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "added": added})
	return nil
}

// conditionSetValuesField is the values array of an add or remove body.
func conditionSetValuesField(body jsonBody, shape string) ([]any, error) {
	raw, ok := body["values"].([]any)
	switch {
	case body["values"] == nil:
		return nil, errValidation(FieldError{Field: "values", Message: "is required"})
	case !ok:
		return nil, errValidation(FieldError{Field: "values", Message: "must be " + shape})
	case len(raw) > conditionSetValuesBatch:
		return nil, errValidation(FieldError{Field: "values", Message: fmt.Sprintf("must hold at most %d values per request", conditionSetValuesBatch)})
	}
	return raw, nil
}

// conditionSetValue checks one value against the set's type and returns its
// canonical form.
func conditionSetValue(v *validator, field, valueType string, raw any) (string, bool) {
	var text string
	switch x := raw.(type) {
	case nil:
		v.add(field, "is required")
		return "", false
	case string:
		text = x
	case bool:
		if valueType != cond.TypeBoolean {
			v.add(field, "must be a string")
			return "", false
		}
		text = fmt.Sprint(x)
	default:
		n, isNum := rateNumber(raw)
		if !isNum || valueType != cond.TypeNumber {
			v.add(field, "must be a string")
			return "", false
		}
		text = fmt.Sprint(n)
		if num, ok := raw.(interface{ String() string }); ok {
			text = num.String()
		}
	}
	if valueType == cond.TypeString && strings.TrimSpace(text) == "" {
		v.add(field, "must not be blank")
		return "", false
	}
	if utf8.RuneCountInString(text) > conditionSetValueMax {
		v.add(field, fmt.Sprintf("must be at most %d characters", conditionSetValueMax))
		return "", false
	}
	canon, err := cond.Canonical(valueType, text)
	if err != nil {
		v.add(field, err.Error()+" (the set's valueType is "+valueType+")")
		return "", false
	}
	return canon, true
}

// removeConditionSetValues removes values: {values: [string]}.
func (s *Server) removeConditionSetValues(w http.ResponseWriter, r *http.Request) error {
	set, err := s.conditionSetFor(r)
	if err != nil {
		return err
	}
	var body jsonBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	raw, err := conditionSetValuesField(body, "an array of strings")
	if err != nil {
		return err
	}
	var v validator
	values := make([]string, 0, len(raw))
	for i, el := range raw {
		if val, ok := conditionSetValue(&v, fmt.Sprintf("values[%d]", i), set.ValueType, el); ok {
			values = append(values, val)
		}
		if len(v.details) > 100 {
			break
		}
	}
	if err := v.err(); err != nil {
		return err
	}
	removed, err := store.RemoveConditionSetValues(r.Context(), s.store, set.OrganizationID, set.ID, values)
	if err != nil {
		return notFoundAs(err, "condition set")
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "removed": removed})
	return nil
}

func (s *Server) clearConditionSetValues(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "condition set")
	if err != nil {
		return err
	}
	if err := store.ClearConditionSetValues(r.Context(), s.store, mustPrincipal(r).OrganizationID, id); err != nil {
		return notFoundAs(err, "condition set")
	}
	writeSuccess(w)
	return nil
}
