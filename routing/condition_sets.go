package routing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/rules/cond"
	"github.com/fos-dev/fos/store"
)

// ConditionSet is a named set of values conditions test membership in;
// ConditionSetValue one of its values (store rows).
type (
	ConditionSet      = store.ConditionSet
	ConditionSetValue = store.ConditionSetValue
)

// Bounds of condition sets (the specification leaves them open).
const (
	ConditionSetNameMax     = 100
	ConditionSetDescMax     = 500
	ConditionSetValueMax    = 500 // characters; the unique index holds it
	ConditionSetLabelMax    = 255
	ConditionSetValuesBatch = 100_000
	// valueErrorsMax: a batch's first problems are enough to fix it by.
	valueErrorsMax = 100
)

// ListConditionSets lists the organization's condition sets. The actor
// needs dispatchers:read.
func (s *Service) ListConditionSets(ctx context.Context, actor domain.Actor, limit, offset int) (Page[ConditionSet], error) {
	org, err := orgOf(actor, ScopeRead)
	if err != nil {
		return Page[ConditionSet]{}, err
	}
	list, total, err := store.ListConditionSets(ctx, s.store.Pool, org, limit, offset)
	return Page[ConditionSet]{Items: list, Total: total}, err
}

// GetConditionSet is one condition set of the organization. The actor
// needs dispatchers:read.
func (s *Service) GetConditionSet(ctx context.Context, actor domain.Actor, id uuid.UUID) (ConditionSet, error) {
	org, err := orgOf(actor, ScopeRead)
	if err != nil {
		return ConditionSet{}, err
	}
	return s.conditionSet(ctx, org, id)
}

func (s *Service) conditionSet(ctx context.Context, org, id uuid.UUID) (ConditionSet, error) {
	c, err := store.ConditionSetByID(ctx, s.store.Pool, org, id)
	return c, notFound(err, "condition set")
}

// ConditionSetInput creates a condition set (Name and ValueType required)
// or changes one (Name and Description; ValueType cannot change once
// values exist, so an update ignores it). A nil field is not sent.
type ConditionSetInput struct {
	// Name is trimmed; "" is missing.
	Name *string
	// Description: "" clears it.
	Description *string
	// ValueType is one of cond.ValueTypes.
	ValueType *string
}

// Validate names the input's problems.
func (in ConditionSetInput) Validate(create bool) domain.FieldErrors {
	_, _, v := in.values(create)
	return v
}

func (in ConditionSetInput) values(create bool) (name, desc *string, v domain.FieldErrors) {
	if n, ok := requiredName(&v, "name", in.Name, create, ConditionSetNameMax); ok {
		name = &n
	}
	desc, _ = optionalText(&v, "description", in.Description, create, ConditionSetDescMax)
	if create {
		switch {
		case in.ValueType == nil:
			v.Add("valueType", "is required")
		case !slices.Contains(cond.ValueTypes, *in.ValueType):
			v.Add("valueType", "must be one of "+strings.Join(cond.ValueTypes, ", "))
		}
	}
	return name, desc, v
}

// CreateConditionSet creates a condition set. The actor needs
// dispatchers:write.
func (s *Service) CreateConditionSet(ctx context.Context, actor domain.Actor, in ConditionSetInput) (ConditionSet, error) {
	org, err := orgOf(actor, ScopeWrite)
	if err != nil {
		return ConditionSet{}, err
	}
	name, desc, v := in.values(true)
	if err := v.Err(); err != nil {
		return ConditionSet{}, err
	}
	out, err := store.CreateConditionSet(ctx, s.store.Pool, ConditionSet{ID: uuid.New(), OrganizationID: org,
		Name: *name, Description: desc, ValueType: *in.ValueType})
	if errors.Is(err, store.ErrConflict) {
		return ConditionSet{}, domain.Conflict("a condition set with this name already exists")
	}
	return out, err
}

// UpdateConditionSet changes a condition set's name and description. The
// actor needs dispatchers:write.
func (s *Service) UpdateConditionSet(ctx context.Context, actor domain.Actor, id uuid.UUID, in ConditionSetInput) (ConditionSet, error) {
	org, err := orgOf(actor, ScopeWrite)
	if err != nil {
		return ConditionSet{}, err
	}
	name, desc, v := in.values(false)
	if err := v.Err(); err != nil {
		return ConditionSet{}, err
	}
	out, err := store.UpdateConditionSet(ctx, s.store.Pool, org, id, store.ConditionSetPatch{Name: name, DescriptionSet: in.Description != nil, Description: desc})
	if errors.Is(err, store.ErrConflict) {
		return ConditionSet{}, domain.Conflict("a condition set with this name already exists")
	}
	return out, notFound(err, "condition set")
}

// DeleteConditionSet deletes a condition set; one a dispatcher or split
// rule references is Conflict. The actor needs dispatchers:write.
func (s *Service) DeleteConditionSet(ctx context.Context, actor domain.Actor, id uuid.UUID) error {
	org, err := orgOf(actor, ScopeWrite)
	if err != nil {
		return err
	}
	err = store.DeleteConditionSet(ctx, s.store, org, id)
	if errors.Is(err, store.ErrConditionSetInUse) {
		return domain.Conflict("the condition set is referenced by a dispatcher or split rule")
	}
	return notFound(err, "condition set")
}

// ListConditionSetValues is a page of a set's values. The actor needs
// dispatchers:read.
func (s *Service) ListConditionSetValues(ctx context.Context, actor domain.Actor, id uuid.UUID, limit, offset int) (Page[ConditionSetValue], error) {
	org, err := orgOf(actor, ScopeRead)
	if err != nil {
		return Page[ConditionSetValue]{}, err
	}
	list, total, err := store.ListConditionSetValues(ctx, s.store.Pool, org, id, limit, offset)
	return Page[ConditionSetValue]{Items: list, Total: total}, notFound(err, "condition set")
}

// ClearConditionSetValues removes every value of a set. The actor needs
// dispatchers:write.
func (s *Service) ClearConditionSetValues(ctx context.Context, actor domain.Actor, id uuid.UUID) error {
	org, err := orgOf(actor, ScopeWrite)
	if err != nil {
		return err
	}
	return notFound(store.ClearConditionSetValues(ctx, s.store, org, id), "condition set")
}

// AddConditionSetValues adds values to a set and returns how many were
// new. values is a JSON array as decoded ([]any) or a []string: each
// element a value or a {value, label?} object. Each value is checked
// against the set's valueType (a number set also takes JSON numbers, a
// boolean set JSON booleans) and stored in its canonical form; values the
// set holds, or that repeat, are ignored. At most 100 000 per call. The
// actor needs dispatchers:write.
func (s *Service) AddConditionSetValues(ctx context.Context, actor domain.Actor, id uuid.UUID, values any) (int, error) {
	org, err := orgOf(actor, ScopeWrite)
	if err != nil {
		return 0, err
	}
	set, err := s.conditionSet(ctx, org, id)
	if err != nil {
		return 0, err
	}
	raw, err := valuesArray(values, "an array of {value, label} objects")
	if err != nil {
		return 0, err
	}
	var v domain.FieldErrors
	out := make([]store.NewConditionSetValue, 0, len(raw))
	seen := make(map[string]bool, len(raw))
	for i, el := range raw {
		at := fmt.Sprintf("values[%d]", i)
		m, isObj := el.(map[string]any)
		if str, isStr := el.(string); isStr { // a bare value is {value}
			m, isObj = map[string]any{"value": str}, true
		}
		if !isObj {
			v.Add(at, "must be an object with value and label")
			continue
		}
		val, ok := setValue(&v, at+".value", set.ValueType, m["value"])
		label := valueLabel(&v, at+".label", m["label"])
		if !ok || seen[val] {
			continue
		}
		seen[val] = true
		out = append(out, store.NewConditionSetValue{Value: val, Label: label})
		if len(v) > valueErrorsMax {
			break
		}
	}
	if err := v.Err(); err != nil {
		return 0, err
	}
	// One lock order for every batch, so concurrent adds cannot deadlock
	// on each other's rows.
	slices.SortFunc(out, func(a, b store.NewConditionSetValue) int { return strings.Compare(a.Value, b.Value) })
	added, err := store.AddConditionSetValues(ctx, s.store, org, set.ID, out)
	return added, notFound(err, "condition set")
}

// RemoveConditionSetValues removes values (a JSON array of values as
// decoded, or a []string) from a set and returns how many were there. The
// actor needs dispatchers:write.
func (s *Service) RemoveConditionSetValues(ctx context.Context, actor domain.Actor, id uuid.UUID, values any) (int, error) {
	org, err := orgOf(actor, ScopeWrite)
	if err != nil {
		return 0, err
	}
	set, err := s.conditionSet(ctx, org, id)
	if err != nil {
		return 0, err
	}
	raw, err := valuesArray(values, "an array of strings")
	if err != nil {
		return 0, err
	}
	var v domain.FieldErrors
	out := make([]string, 0, len(raw))
	for i, el := range raw {
		if val, ok := setValue(&v, fmt.Sprintf("values[%d]", i), set.ValueType, el); ok {
			out = append(out, val)
		}
		if len(v) > valueErrorsMax {
			break
		}
	}
	if err := v.Err(); err != nil {
		return 0, err
	}
	removed, err := store.RemoveConditionSetValues(ctx, s.store, org, set.ID, out)
	return removed, notFound(err, "condition set")
}

// valuesArray is the values of an add or remove.
func valuesArray(values any, shape string) ([]any, error) {
	if strs, ok := values.([]string); ok {
		out := make([]any, len(strs))
		for i, s := range strs {
			out[i] = s
		}
		values = out
	}
	raw, ok := values.([]any)
	switch {
	case values == nil:
		return nil, domain.InvalidField("values", "is required")
	case !ok:
		return nil, domain.InvalidField("values", "must be "+shape)
	case len(raw) > ConditionSetValuesBatch:
		return nil, domain.InvalidField("values", fmt.Sprintf("must hold at most %d values per request", ConditionSetValuesBatch))
	}
	return raw, nil
}

// valueLabel is an optional trimmed label (blank: none).
func valueLabel(v *domain.FieldErrors, field string, raw any) *string {
	if raw == nil {
		return nil
	}
	s, ok := raw.(string)
	if !ok {
		v.Add(field, "must be a string")
		return nil
	}
	if s = strings.TrimSpace(s); s == "" {
		return nil
	}
	if v.MaxLen(field, s, ConditionSetLabelMax); v.Has(field) {
		return nil
	}
	return &s
}

// setValue checks one value against the set's type and returns its
// canonical form.
func setValue(v *domain.FieldErrors, field, valueType string, raw any) (string, bool) {
	var text string
	switch x := raw.(type) {
	case nil:
		v.Add(field, "is required")
		return "", false
	case string:
		text = x
	case bool:
		if valueType != cond.TypeBoolean {
			v.Add(field, "must be a string")
			return "", false
		}
		text = fmt.Sprint(x)
	default:
		n, isNum := jsonNumber(raw)
		if !isNum || valueType != cond.TypeNumber {
			v.Add(field, "must be a string")
			return "", false
		}
		text = fmt.Sprint(n)
		if num, ok := raw.(interface{ String() string }); ok {
			text = num.String()
		}
	}
	if valueType == cond.TypeString && strings.TrimSpace(text) == "" {
		v.Add(field, "must not be blank")
		return "", false
	}
	if utf8.RuneCountInString(text) > ConditionSetValueMax {
		v.Add(field, fmt.Sprintf("must be at most %d characters", ConditionSetValueMax))
		return "", false
	}
	canon, err := cond.Canonical(valueType, text)
	if err != nil {
		v.Add(field, err.Error()+" (the set's valueType is "+valueType+")")
		return "", false
	}
	return canon, true
}

// jsonNumber is a finite JSON number (json.Number or float64).
func jsonNumber(raw any) (float64, bool) {
	switch n := raw.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
	case float64:
		return n, !math.IsInf(n, 0) && !math.IsNaN(n)
	}
	return 0, false
}
