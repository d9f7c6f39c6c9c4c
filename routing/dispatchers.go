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

// Dispatcher is a dispatcher (store row).
type Dispatcher = store.Dispatcher

// Bounds of dispatchers (Part 2).
const (
	DispatcherNameMax    = 100
	DispatcherDescMax    = 500
	DispatcherPrioMax    = 1000
	DispatcherSourcesMax = 50
	DispatcherCondsMax   = 50
)

// Dispatcher triggers and match modes (Part 2).
var (
	DispatcherTriggers   = store.DispatcherTriggers
	DispatcherMatchModes = store.DispatcherMatchModes
)

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }

// ListDispatchersInput filters a dispatcher list.
type ListDispatchersInput struct {
	SourceBridgeID, DestinationBridgeID *uuid.UUID
	IsActive                            *bool
	Limit, Offset                       int
}

// ListDispatchers lists the organization's dispatchers. The actor needs
// dispatchers:read.
func (s *Service) ListDispatchers(ctx context.Context, actor domain.Actor, in ListDispatchersInput) (Page[Dispatcher], error) {
	org, err := orgOf(actor, ScopeRead)
	if err != nil {
		return Page[Dispatcher]{}, err
	}
	list, total, err := store.ListDispatchers(ctx, s.store.Pool, org, store.DispatcherFilter{
		SourceBridgeID: in.SourceBridgeID, DestinationBridgeID: in.DestinationBridgeID, IsActive: in.IsActive,
		Limit: in.Limit, Offset: in.Offset})
	return Page[Dispatcher]{Items: list, Total: total}, err
}

// GetDispatcher is one dispatcher of the organization. The actor needs
// dispatchers:read.
func (s *Service) GetDispatcher(ctx context.Context, actor domain.Actor, id uuid.UUID) (Dispatcher, error) {
	org, err := orgOf(actor, ScopeRead)
	if err != nil {
		return Dispatcher{}, err
	}
	return s.dispatcher(ctx, org, id)
}

func (s *Service) dispatcher(ctx context.Context, org, id uuid.UUID) (Dispatcher, error) {
	d, err := store.DispatcherByID(ctx, s.store.Pool, org, id)
	return d, notFound(err, "dispatcher")
}

// DispatcherInput creates or changes a dispatcher. A nil field is not
// sent: on create the required ones (Name, SourceBridgeIDs,
// DestinationBridgeID, Conditions) are then missing, on update they stay.
type DispatcherInput struct {
	// Name is trimmed; "" is missing.
	Name *string
	// Description: "" clears it.
	Description *string
	// SourceBridgeIDs are 1-50 bridges of the organization (repeats
	// dropped); a non-nil pointer to nil is sent as null (missing).
	SourceBridgeIDs *[]uuid.UUID
	// DestinationBridgeID is set at creation only (an update ignores it:
	// the assignments name it); it must differ from every source.
	DestinationBridgeID *uuid.UUID
	// DestinationConfig replaces the destination config (nil: unchanged,
	// {} on create).
	DestinationConfig map[string]any
	// MatchMode is all or any (nil: unchanged, all on create).
	MatchMode *string
	// TriggerOn is a non-empty list of DispatcherTriggers, repeats dropped
	// (nil: unchanged, [order_created] on create). A non-nil empty list is
	// refused.
	TriggerOn []string
	IsActive  *bool
	// Priority is 0-1000.
	Priority *int
	// ConditionsSet says Conditions was sent; Conditions is 1-50
	// conditions ([]cond.Condition, or the JSON value decoded: []any), nil
	// when sent as null (missing).
	ConditionsSet bool
	Conditions    any
}

// CreateDispatcher creates a dispatcher. The actor needs
// dispatchers:write.
func (s *Service) CreateDispatcher(ctx context.Context, actor domain.Actor, in DispatcherInput) (Dispatcher, error) {
	org, err := orgOf(actor, ScopeWrite)
	if err != nil {
		return Dispatcher{}, err
	}
	d := Dispatcher{ID: uuid.New(), OrganizationID: org, IsActive: true, MatchMode: "all",
		TriggerOn: []string{rules.TriggerOrderCreated}, DestinationConfig: json.RawMessage(`{}`)}
	paths, v := applyDispatcher(&d, in, true)
	if err := v.Err(); err != nil {
		return Dispatcher{}, err
	}
	out, err := store.CreateDispatcher(ctx, s.store, d)
	if err != nil {
		return Dispatcher{}, dispatcherWriteError(err, paths)
	}
	return out, nil
}

// UpdateDispatcher changes a dispatcher. The actor needs
// dispatchers:write.
func (s *Service) UpdateDispatcher(ctx context.Context, actor domain.Actor, id uuid.UUID, in DispatcherInput) (Dispatcher, error) {
	org, err := orgOf(actor, ScopeWrite)
	if err != nil {
		return Dispatcher{}, err
	}
	d, err := s.dispatcher(ctx, org, id)
	if err != nil {
		return Dispatcher{}, err
	}
	paths, v := applyDispatcher(&d, in, false)
	if err := v.Err(); err != nil {
		return Dispatcher{}, err
	}
	out, err := store.UpdateDispatcher(ctx, s.store, d)
	if err != nil {
		return Dispatcher{}, notFound(dispatcherWriteError(err, paths), "dispatcher")
	}
	return out, nil
}

// DeleteDispatcher deletes a dispatcher; one with pending or processing
// assignments is Conflict. The actor needs dispatchers:write.
func (s *Service) DeleteDispatcher(ctx context.Context, actor domain.Actor, id uuid.UUID) error {
	org, err := orgOf(actor, ScopeWrite)
	if err != nil {
		return err
	}
	err = store.DeleteDispatcher(ctx, s.store, org, id)
	if errors.Is(err, store.ErrDispatcherBusy) {
		return domain.Conflict("the dispatcher has pending or processing assignments")
	}
	return notFound(err, "dispatcher")
}

// dispatcherWriteError names the field a refused write came from.
func dispatcherWriteError(err error, paths map[uuid.UUID]string) error {
	switch {
	case errors.Is(err, store.ErrDispatcherSource):
		return domain.InvalidField("sourceBridgeIds", "must be bridges of this organization")
	case errors.Is(err, store.ErrDispatcherDestination):
		return domain.InvalidField("destinationBridgeId", "must be a bridge of this organization")
	case errors.Is(err, store.ErrConflict):
		return domain.Conflict("a dispatcher with this name already exists")
	}
	return conditionSetsError(err, paths)
}

// conditionSetsError names, by the path each was referenced at, the
// condition sets a write named that are not the organization's
// (store.MissingConditionSetsError); any other error is returned as it is.
func conditionSetsError(err error, paths map[uuid.UUID]string) error {
	var missing *store.MissingConditionSetsError
	if !errors.As(err, &missing) {
		return err
	}
	var v domain.FieldErrors
	for _, id := range missing.IDs {
		v.Add(paths[id], "must be a condition set of this organization")
	}
	return v.Err()
}

// decodeConditions checks 1-max conditions named under path; raw is the
// decoded JSON value or typed conditions.
func decodeConditions(raw any, path string, hi int) ([]cond.Condition, []cond.FieldError) {
	if raw == nil {
		return nil, []cond.FieldError{{Field: path, Message: "is required"}}
	}
	if typed, ok := raw.([]cond.Condition); ok {
		b, err := json.Marshal(typed)
		if err != nil {
			return nil, []cond.FieldError{{Field: path, Message: "must be an array of conditions"}}
		}
		if raw, err = cond.DecodeDoc(b); err != nil {
			return nil, []cond.FieldError{{Field: path, Message: "must be an array of conditions"}}
		}
	}
	return cond.Decode(raw, path, 1, hi)
}

// conditionSetPaths is where each condition set the conditions name is
// referenced (for errors), and the set ids in order.
func conditionSetPaths(conds []cond.Condition, path string) (map[uuid.UUID]string, []uuid.UUID) {
	paths := map[uuid.UUID]string{}
	ids := []uuid.UUID{}
	for i, c := range conds {
		if c.SetID != nil {
			if _, seen := paths[*c.SetID]; !seen {
				paths[*c.SetID] = fmt.Sprintf("%s[%d].setId", path, i)
				ids = append(ids, *c.SetID)
			}
		}
	}
	return paths, ids
}

// Validate names the input's problems that need no stored dispatcher (a
// create's every field, an update's fields sent).
func (in DispatcherInput) Validate(create bool) domain.FieldErrors {
	_, v := applyDispatcher(&Dispatcher{}, in, create)
	return v
}

// applyDispatcher validates a create (every field, with defaults) or an
// update onto d and returns where each referenced condition set is named,
// or the problems.
func applyDispatcher(d *Dispatcher, in DispatcherInput, create bool) (map[uuid.UUID]string, domain.FieldErrors) {
	var v domain.FieldErrors
	if name, ok := requiredName(&v, "name", in.Name, create, DispatcherNameMax); ok {
		d.Name = name
	}
	if desc, ok := optionalText(&v, "description", in.Description, create, DispatcherDescMax); ok {
		d.Description = desc
	}
	if create || in.SourceBridgeIDs != nil {
		var ids []uuid.UUID
		if in.SourceBridgeIDs != nil {
			ids = *in.SourceBridgeIDs
		}
		switch {
		case ids == nil:
			v.Add("sourceBridgeIds", "is required")
		case len(ids) < 1 || len(ids) > DispatcherSourcesMax:
			v.Add("sourceBridgeIds", fmt.Sprintf("must hold %d-%d ids", 1, DispatcherSourcesMax))
		default:
			d.SourceBridgeIDs = uniqueIDs(ids)
		}
	}
	if create {
		if in.DestinationBridgeID == nil || *in.DestinationBridgeID == uuid.Nil {
			v.Add("destinationBridgeId", "is required")
		} else {
			d.DestinationBridgeID = *in.DestinationBridgeID
		}
	}
	if in.DestinationConfig != nil {
		raw, err := json.Marshal(in.DestinationConfig)
		if err != nil {
			v.Add("destinationConfig", "must be an object")
		} else {
			d.DestinationConfig = raw
		}
	}
	if in.MatchMode != nil {
		if slices.Contains(DispatcherMatchModes, *in.MatchMode) {
			d.MatchMode = *in.MatchMode
		} else {
			v.Add("matchMode", "must be one of "+strings.Join(DispatcherMatchModes, ", "))
		}
	}
	if in.TriggerOn != nil {
		if len(in.TriggerOn) == 0 {
			v.Add("triggerOn", "must be a non-empty array of "+fmt.Sprint(DispatcherTriggers))
		} else {
			var trig []string
			for i, t := range in.TriggerOn {
				if !slices.Contains(DispatcherTriggers, t) {
					v.Add(fmt.Sprintf("triggerOn[%d]", i), "must be one of "+strings.Join(DispatcherTriggers, ", "))
					continue
				}
				if !slices.Contains(trig, t) {
					trig = append(trig, t)
				}
			}
			d.TriggerOn = trig
		}
	}
	if in.IsActive != nil {
		d.IsActive = *in.IsActive
	}
	if p, ok := priority(&v, in.Priority, DispatcherPrioMax); ok {
		d.Priority = p
	}
	var conds []cond.Condition
	if create || in.ConditionsSet {
		var errs []cond.FieldError
		conds, errs = decodeConditions(in.Conditions, "conditions", DispatcherCondsMax)
		for _, e := range errs {
			v.Add(e.Field, e.Message)
		}
		if errs == nil {
			d.Conditions, _ = json.Marshal(conds)
		}
	} else {
		_ = json.Unmarshal(d.Conditions, &conds)
	}
	if d.DestinationBridgeID != uuid.Nil && slices.Contains(d.SourceBridgeIDs, d.DestinationBridgeID) {
		v.Add("destinationBridgeId", "must differ from every source bridge")
	}
	if len(v) > 0 {
		return nil, v
	}
	paths, ids := conditionSetPaths(conds, "conditions")
	d.ConditionSetIDs = ids
	return paths, nil
}

func uniqueIDs(ids []uuid.UUID) []uuid.UUID {
	out := make([]uuid.UUID, 0, len(ids))
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
