package api

import (
	"context"
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
	"github.com/fos-dev/fos/worker"
)

// mountDispatchers registers the dispatcher endpoints (Part 2,
// Dispatchers; scopes dispatchers:*).
func (s *Server) mountDispatchers(r chi.Router) {
	read := r.With(s.scope("dispatchers:read"))
	write := r.With(s.scope("dispatchers:write"))
	read.Get("/dispatchers", s.h(s.listDispatchers))
	write.Post("/dispatchers", s.h(s.createDispatcher))
	write.Post("/dispatchers/evaluate/{orderId}", s.h(s.evaluateDispatchers))
	write.Post("/dispatchers/assignments/process", s.h(s.processAssignments))
	write.Post("/dispatchers/assignments/retry", s.h(s.retryAssignments))
	read.Get("/dispatchers/{id}", s.h(s.getDispatcher))
	write.Patch("/dispatchers/{id}", s.h(s.updateDispatcher))
	write.Delete("/dispatchers/{id}", s.h(s.deleteDispatcher))
	read.Get("/dispatchers/{id}/assignments", s.h(s.listAssignments))
	write.Post("/dispatchers/{id}/assign", s.h(s.bulkAssign))
}

// Bounds of dispatchers (Part 2) and of their batch endpoints.
const (
	dispatcherNameMax    = 100
	dispatcherDescMax    = 500
	dispatcherPrioMax    = 1000
	dispatcherSourcesMax = 50
	bulkAssignMax        = 200
	processDefaultLimit  = 100
	processMaxLimit      = 1000
	retryIDsMax          = 1000
)

// dispatcherJSON is the Dispatcher resource (camelCase).
type dispatcherJSON struct {
	ID                  uuid.UUID       `json:"id"`
	OrganizationID      uuid.UUID       `json:"organizationId"`
	Name                string          `json:"name"`
	Description         *string         `json:"description"`
	SourceBridgeIDs     []uuid.UUID     `json:"sourceBridgeIds"`
	DestinationBridgeID uuid.UUID       `json:"destinationBridgeId"`
	DestinationConfig   json.RawMessage `json:"destinationConfig"`
	Conditions          json.RawMessage `json:"conditions"`
	MatchMode           string          `json:"matchMode"`
	TriggerOn           []string        `json:"triggerOn"`
	IsActive            bool            `json:"isActive"`
	Priority            int             `json:"priority"`
	OrdersAssigned      int             `json:"ordersAssigned"`
	LastAssignedAt      *time.Time      `json:"lastAssignedAt"`
	CreatedAt           time.Time       `json:"createdAt"`
	UpdatedAt           time.Time       `json:"updatedAt"`
}

func toDispatcherJSON(d store.Dispatcher) dispatcherJSON {
	return dispatcherJSON{
		ID: d.ID, OrganizationID: d.OrganizationID, Name: d.Name, Description: d.Description,
		SourceBridgeIDs: d.SourceBridgeIDs, DestinationBridgeID: d.DestinationBridgeID, DestinationConfig: d.DestinationConfig,
		Conditions: normalizedJSON[[]cond.Condition](d.Conditions), MatchMode: d.MatchMode, TriggerOn: d.TriggerOn, IsActive: d.IsActive, Priority: d.Priority,
		OrdersAssigned: d.OrdersAssigned, LastAssignedAt: d.LastAssignedAt, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt,
	}
}

// assignmentJSON is the Dispatch assignment resource (camelCase).
type assignmentJSON struct {
	ID                  uuid.UUID       `json:"id"`
	OrganizationID      uuid.UUID       `json:"organizationId"`
	DispatcherID        uuid.UUID       `json:"dispatcherId"`
	OrderID             uuid.UUID       `json:"orderId"`
	DestinationBridgeID uuid.UUID       `json:"destinationBridgeId"`
	Status              string          `json:"status"`
	TaskExecutionID     *uuid.UUID      `json:"taskExecutionId"`
	ProcessedAt         *time.Time      `json:"processedAt"`
	ErrorMessage        *string         `json:"errorMessage"`
	RetryCount          int             `json:"retryCount"`
	Metadata            json.RawMessage `json:"metadata"`
	AssignedAt          time.Time       `json:"assignedAt"`
	CreatedAt           time.Time       `json:"createdAt"`
	UpdatedAt           time.Time       `json:"updatedAt"`
}

func toAssignmentJSON(a store.DispatchAssignment) assignmentJSON {
	md := a.Metadata
	if len(md) == 0 {
		md = json.RawMessage(`{}`)
	}
	return assignmentJSON{
		ID: a.ID, OrganizationID: a.OrganizationID, DispatcherID: a.DispatcherID, OrderID: a.OrderID,
		DestinationBridgeID: a.DestinationBridgeID, Status: a.Status, TaskExecutionID: a.TaskExecutionID,
		ProcessedAt: a.ProcessedAt, ErrorMessage: a.ErrorMessage, RetryCount: a.RetryCount, Metadata: md,
		AssignedAt: a.AssignedAt, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt,
	}
}

func toAssignmentsJSON(as []store.DispatchAssignment) []assignmentJSON {
	out := make([]assignmentJSON, 0, len(as))
	for _, a := range as {
		out = append(out, toAssignmentJSON(a))
	}
	return out
}

// dispatchHooks is the order hooks' dispatcher evaluation (a *rules.Hooks
// over the store when the configured hooks are something else).
func (s *Server) dispatchHooks() *rules.Hooks {
	if h, ok := s.orderHooks.(*rules.Hooks); ok {
		return h
	}
	return &rules.Hooks{Store: s.store, Log: s.log, Dispatcher: s.dispatchStarter()}
}

// dispatchStarter starts DispatchAssignment runs on the bulk task queue
// (nil without Temporal: assignments stay pending).
func (s *Server) dispatchStarter() rules.DispatchStarter {
	if s.temporal == nil {
		return nil
	}
	return rules.TemporalDispatch{Client: s.temporal, TaskQueue: s.bulkTaskQueue, Options: worker.StartOptions}
}

func (s *Server) listDispatchers(w http.ResponseWriter, r *http.Request) error {
	var details fieldErrors
	p, err := parsePage(r, 20, 100)
	details.collect(err)
	src, err := queryUUID(r, "sourceBridgeId")
	details.collect(err)
	dst, err := queryUUID(r, "destinationBridgeId")
	details.collect(err)
	active, err := queryEnum(r, "isActive", "true", "false")
	details.collect(err)
	if len(details) > 0 {
		return errValidation(details...)
	}
	f := store.DispatcherFilter{SourceBridgeID: src, DestinationBridgeID: dst, Limit: p.Limit, Offset: p.Offset()}
	if active != "" {
		b := active == "true"
		f.IsActive = &b
	}
	list, total, err := store.ListDispatchers(r.Context(), s.store.Pool, mustPrincipal(r).OrganizationID, f)
	if err != nil {
		return err
	}
	writeList(w, mapSlice(list, toDispatcherJSON), p, total)
	return nil
}

func (s *Server) getDispatcher(w http.ResponseWriter, r *http.Request) error {
	return writeByID(s, w, r, "dispatcher", store.DispatcherByID, toDispatcherJSON)
}

func (s *Server) createDispatcher(w http.ResponseWriter, r *http.Request) error {
	var body jsonBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	d := store.Dispatcher{ID: uuid.New(), OrganizationID: mustPrincipal(r).OrganizationID, IsActive: true, MatchMode: "all",
		TriggerOn: []string{rules.TriggerOrderCreated}, DestinationConfig: json.RawMessage(`{}`)}
	setPaths, err := applyDispatcherBody(&d, body, true)
	if err != nil {
		return err
	}
	out, err := store.CreateDispatcher(r.Context(), s.store, d)
	if err != nil {
		return dispatcherWriteError(err, setPaths)
	}
	writeData(w, http.StatusCreated, toDispatcherJSON(out))
	return nil
}

func (s *Server) updateDispatcher(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "dispatcher")
	if err != nil {
		return err
	}
	var body jsonBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	orgID := mustPrincipal(r).OrganizationID
	d, err := store.DispatcherByID(r.Context(), s.store.Pool, orgID, id)
	if err != nil {
		return notFoundAs(err, "dispatcher")
	}
	setPaths, err := applyDispatcherBody(&d, body, false)
	if err != nil {
		return err
	}
	out, err := store.UpdateDispatcher(r.Context(), s.store, d)
	if err != nil {
		return notFoundAs(dispatcherWriteError(err, setPaths), "dispatcher")
	}
	writeData(w, http.StatusOK, toDispatcherJSON(out))
	return nil
}

// dispatcherWriteError names the field a refused write came from.
func dispatcherWriteError(err error, setPaths map[uuid.UUID]string) error {
	switch {
	case errors.Is(err, store.ErrDispatcherSource):
		return errValidation(FieldError{Field: "sourceBridgeIds", Message: "must be bridges of this organization"})
	case errors.Is(err, store.ErrDispatcherDestination):
		return errValidation(FieldError{Field: "destinationBridgeId", Message: "must be a bridge of this organization"})
	case errors.Is(err, store.ErrConflict):
		return errConflict("a dispatcher with this name already exists")
	}
	return conditionSetsError(err, setPaths)
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

// uuidList reads an array of UUIDs of lo-hi elements, without repeats.
func (f bodyFields) uuidList(key string, required bool, lo, hi int) ([]uuid.UUID, bool) {
	raw, ok := f.get(key, required)
	if !ok {
		return nil, false
	}
	arr, isArr := raw.([]any)
	if !isArr {
		f.v.add(f.name(key), "must be an array of UUIDs")
		return nil, false
	}
	if len(arr) < lo || len(arr) > hi {
		f.v.add(f.name(key), fmt.Sprintf("must hold %d-%d ids", lo, hi))
		return nil, false
	}
	out := make([]uuid.UUID, 0, len(arr))
	seen := make(map[uuid.UUID]bool, len(arr))
	for i, el := range arr {
		str, isStr := el.(string)
		u, err := uuid.Parse(str)
		if !isStr || err != nil {
			f.v.add(fmt.Sprintf("%s[%d]", f.name(key), i), "must be a UUID")
			return nil, false
		}
		if !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	return out, true
}

// applyDispatcherBody validates a create (every field, with defaults) or
// update body onto d and returns where each referenced condition set is
// named (for errors).
func applyDispatcherBody(d *store.Dispatcher, body jsonBody, create bool) (map[uuid.UUID]string, error) {
	var v validator
	f := bodyFields{v: &v, m: body}
	has := func(k string) bool { _, ok := body[k]; return ok }
	sent := func(k string) bool { return create || has(k) }
	if sent("name") {
		d.Name = deref(f.str("name", true, dispatcherNameMax))
	}
	if sent("description") {
		d.Description = f.str("description", false, dispatcherDescMax)
	}
	if sent("sourceBridgeIds") {
		if ids, ok := f.uuidList("sourceBridgeIds", true, 1, dispatcherSourcesMax); ok {
			d.SourceBridgeIDs = ids
		}
	}
	// The destination is fixed at creation: PATCH does not list it (Part 2)
	// and its assignments name it, so an update ignores it.
	if create {
		if id := f.str("destinationBridgeId", true, 100); id != nil {
			if u, err := uuid.Parse(*id); err != nil {
				v.add("destinationBridgeId", "must be a UUID")
			} else {
				d.DestinationBridgeID = u
			}
		}
	}
	if has("destinationConfig") && body["destinationConfig"] != nil {
		if m, ok := body["destinationConfig"].(map[string]any); ok {
			d.DestinationConfig = orderJSONOf(m)
		} else {
			v.add("destinationConfig", "must be an object")
		}
	}
	if has("matchMode") && body["matchMode"] != nil {
		d.MatchMode = f.enum("matchMode", false, d.MatchMode, store.DispatcherMatchModes)
	}
	if has("triggerOn") && body["triggerOn"] != nil {
		arr, ok := body["triggerOn"].([]any)
		if !ok || len(arr) == 0 {
			v.add("triggerOn", "must be a non-empty array of "+fmt.Sprint(store.DispatcherTriggers))
		} else {
			var trig []string
			for i, el := range arr {
				s, _ := el.(string)
				if !v.oneOf(fmt.Sprintf("triggerOn[%d]", i), s, store.DispatcherTriggers...) {
					continue
				}
				dup := false
				for _, t := range trig {
					dup = dup || t == s
				}
				if !dup {
					trig = append(trig, s)
				}
			}
			d.TriggerOn = trig
		}
	}
	if has("isActive") && body["isActive"] != nil {
		if b := f.boolean("isActive", false); b != nil {
			d.IsActive = *b
		}
	}
	if has("priority") && body["priority"] != nil {
		if n := f.number("priority", false, 0, dispatcherPrioMax, true); n != nil {
			d.Priority = int(*n)
		}
	}
	var conds []cond.Condition
	if sent("conditions") {
		var errs []cond.FieldError
		if body["conditions"] == nil {
			errs = []cond.FieldError{{Field: "conditions", Message: "is required"}}
		} else {
			conds, errs = cond.Decode(body["conditions"], "conditions", 1, 50)
		}
		for _, e := range errs {
			v.add(e.Field, e.Message)
		}
		if errs == nil {
			d.Conditions = orderJSONOf(conds)
		}
	} else {
		_ = json.Unmarshal(d.Conditions, &conds)
	}
	for _, src := range d.SourceBridgeIDs {
		if src == d.DestinationBridgeID && d.DestinationBridgeID != uuid.Nil {
			v.add("destinationBridgeId", "must differ from every source bridge")
			break
		}
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	paths := map[uuid.UUID]string{}
	d.ConditionSetIDs = []uuid.UUID{}
	for i, c := range conds {
		if c.SetID != nil {
			if _, seen := paths[*c.SetID]; !seen {
				paths[*c.SetID] = fmt.Sprintf("conditions[%d].setId", i)
				d.ConditionSetIDs = append(d.ConditionSetIDs, *c.SetID)
			}
		}
	}
	return paths, nil
}

func (s *Server) deleteDispatcher(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "dispatcher")
	if err != nil {
		return err
	}
	err = store.DeleteDispatcher(r.Context(), s.store, mustPrincipal(r).OrganizationID, id)
	if errors.Is(err, store.ErrDispatcherBusy) {
		return errConflict("the dispatcher has pending or processing assignments")
	}
	if err != nil {
		return notFoundAs(err, "dispatcher")
	}
	writeSuccess(w)
	return nil
}

// listAssignments is a dispatcher's assignments, newest first.
func (s *Server) listAssignments(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "dispatcher")
	if err != nil {
		return err
	}
	var details fieldErrors
	p, err := parsePage(r, 20, 100)
	details.collect(err)
	status, err := queryEnum(r, "status", store.AssignmentStatuses...)
	details.collect(err)
	if len(details) > 0 {
		return errValidation(details...)
	}
	orgID := mustPrincipal(r).OrganizationID
	if _, err := store.DispatcherByID(r.Context(), s.store.Pool, orgID, id); err != nil {
		return notFoundAs(err, "dispatcher")
	}
	list, total, err := store.ListAssignments(r.Context(), s.store.Pool, orgID, id, status, p.Limit, p.Offset())
	if err != nil {
		return err
	}
	writeList(w, toAssignmentsJSON(list), p, total)
	return nil
}

// evaluateDispatchers runs every active dispatcher of the order's bridge
// on it, with trigger manual.
func (s *Server) evaluateDispatchers(w http.ResponseWriter, r *http.Request) error {
	orderID, err := pathID(r, "orderId", "order")
	if err != nil {
		return err
	}
	orgID := mustPrincipal(r).OrganizationID
	if _, err := store.OrderByID(r.Context(), s.store.Pool, orgID, orderID); err != nil {
		return notFoundAs(err, "order")
	}
	created, err := s.dispatchHooks().Dispatch(context.WithoutCancel(r.Context()), orgID, orderID, rules.TriggerManual)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, map[string]any{"orderId": orderID, "assignmentsCreated": len(created), "assignments": toAssignmentsJSON(created)})
	return nil
}

// bulkAssign assigns 1-200 orders to the dispatcher's destination,
// bypassing its conditions; orders already assigned to that destination
// (and ids that are not orders of the organization) are skipped.
func (s *Server) bulkAssign(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "dispatcher")
	if err != nil {
		return err
	}
	var body jsonBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	var v validator
	f := bodyFields{v: &v, m: body}
	ids, _ := f.uuidList("orderIds", true, 1, bulkAssignMax)
	if err := v.err(); err != nil {
		return err
	}
	orgID := mustPrincipal(r).OrganizationID
	d, err := store.DispatcherByID(r.Context(), s.store.Pool, orgID, id)
	if err != nil {
		return notFoundAs(err, "dispatcher")
	}
	created, err := store.CreateAssignments(r.Context(), s.store.Pool, d, ids, map[string]any{"trigger": "bulk_assign"})
	if err != nil {
		return err
	}
	if err := s.dispatchHooks().StartAssignments(context.WithoutCancel(r.Context()), orgID, created); err != nil {
		s.log.WarnContext(r.Context(), "start dispatch assignments; they stay pending", append(logAttrs(r), "error", err)...)
	}
	writeData(w, http.StatusOK, map[string]any{"assigned": len(created), "skipped": len(ids) - len(created)})
	return nil
}

// processAssignments starts the runs of pending assignments (optionally of
// one destination bridge), through the bulk queue.
func (s *Server) processAssignments(w http.ResponseWriter, r *http.Request) error {
	var body jsonBody
	if r.ContentLength != 0 {
		if err := decodeJSON(r, &body); err != nil {
			return err
		}
	}
	var v validator
	f := bodyFields{v: &v, m: body}
	var dest *uuid.UUID
	if raw := f.str("bridgeId", false, 100); raw != nil {
		if u, err := uuid.Parse(*raw); err != nil {
			v.add("bridgeId", "must be a UUID")
		} else {
			dest = &u
		}
	}
	limit := processDefaultLimit
	if n := f.number("limit", false, 1, processMaxLimit, true); n != nil {
		limit = int(*n)
	}
	if err := v.err(); err != nil {
		return err
	}
	orgID := mustPrincipal(r).OrganizationID
	pending, err := store.PendingAssignments(r.Context(), s.store.Pool, orgID, dest, limit)
	if err != nil {
		return err
	}
	queued, errCount := 0, 0
	if starter := s.dispatchStarter(); starter != nil && len(pending) > 0 {
		ids := make([]uuid.UUID, len(pending))
		for i, a := range pending {
			ids[i] = a.ID
		}
		queued, err = starter.StartAssignments(context.WithoutCancel(r.Context()), orgID, ids)
		errCount = len(ids) - queued
		if err != nil {
			s.log.WarnContext(r.Context(), "start dispatch assignments", append(logAttrs(r), "error", err)...)
		}
	} else {
		errCount = len(pending)
	}
	writeData(w, http.StatusOK, map[string]any{"processed": len(pending), "queued": queued, "errors": errCount})
	return nil
}

// retryAssignments resets failed assignments to pending (retryCount 0) and
// starts them again.
func (s *Server) retryAssignments(w http.ResponseWriter, r *http.Request) error {
	var body jsonBody
	if r.ContentLength != 0 {
		if err := decodeJSON(r, &body); err != nil {
			return err
		}
	}
	var v validator
	f := bodyFields{v: &v, m: body}
	var ids []uuid.UUID
	if has := body["assignmentIds"]; has != nil {
		ids, _ = f.uuidList("assignmentIds", false, 0, retryIDsMax)
		if ids == nil {
			ids = []uuid.UUID{}
		}
	}
	if err := v.err(); err != nil {
		return err
	}
	orgID := mustPrincipal(r).OrganizationID
	reset, err := store.ResetFailedAssignments(r.Context(), s.store.Pool, orgID, ids)
	if err != nil {
		return err
	}
	if starter := s.dispatchStarter(); starter != nil && len(reset) > 0 {
		if _, err := starter.StartAssignments(context.WithoutCancel(r.Context()), orgID, reset); err != nil {
			s.log.WarnContext(r.Context(), "start dispatch assignments; they stay pending", append(logAttrs(r), "error", err)...)
		}
	}
	writeData(w, http.StatusOK, map[string]any{"reset": len(reset)})
	return nil
}

// pageAssignments loads the assignments of a page of orders in one query
// (nil when not asked for).
func (s *Server) pageAssignments(r *http.Request, orgID uuid.UUID, want bool, items []store.OrderListItem) ([]store.DispatchAssignment, error) {
	if !want || len(items) == 0 {
		return nil, nil
	}
	ids := make([]uuid.UUID, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	return store.AssignmentsOfOrders(r.Context(), s.store.Pool, orgID, ids)
}

// assignmentsOf is the JSON array of an order's assignments, newest first.
func assignmentsOf(all []store.DispatchAssignment, orderID uuid.UUID) json.RawMessage {
	out := make([]assignmentJSON, 0)
	for _, a := range all {
		if a.OrderID == orderID {
			out = append(out, toAssignmentJSON(a))
		}
	}
	raw, _ := json.Marshal(out)
	return raw
}
