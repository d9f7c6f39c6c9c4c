package api

import (
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/routing"
	"github.com/fos-dev/fos/rules/cond"
)

// mountDispatchers registers the dispatcher endpoints (Part 2,
// Dispatchers; scopes dispatchers:*). The operations are routing.Service's.
func (s *Server) mountDispatchers(r chi.Router) {
	read := r.With(s.scope("dispatchers:read"))
	write := r.With(s.scope("dispatchers:write"))
	read.Get("/dispatchers", s.h(s.listDispatchers))
	routingCRUD[routing.DispatcherInput, routing.Dispatcher, dispatcherJSON]{path: "/dispatchers", noun: "dispatcher", decode: decodeDispatcher, toJSON: toDispatcherJSON,
		get: s.Routing.GetDispatcher, create: s.Routing.CreateDispatcher, update: s.Routing.UpdateDispatcher, remove: s.Routing.DeleteDispatcher}.mount(s, read, write)
	write.Post("/dispatchers/evaluate/{orderId}", s.h(s.evaluateDispatchers))
	write.Post("/dispatchers/assignments/process", s.h(s.processAssignments))
	write.Post("/dispatchers/assignments/retry", s.h(s.retryAssignments))
	read.Get("/dispatchers/{id}/assignments", s.h(s.listAssignments))
	write.Post("/dispatchers/{id}/assign", s.h(s.bulkAssign))
}

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

func toDispatcherJSON(d routing.Dispatcher) dispatcherJSON {
	return dispatcherJSON{
		ID: d.ID, OrganizationID: d.OrganizationID, Name: d.Name, Description: d.Description,
		SourceBridgeIDs: d.SourceBridgeIDs, DestinationBridgeID: d.DestinationBridgeID, DestinationConfig: d.DestinationConfig,
		Conditions: normalizedJSON[[]cond.Condition](d.Conditions), MatchMode: d.MatchMode, TriggerOn: d.TriggerOn, IsActive: d.IsActive, Priority: d.Priority,
		OrdersAssigned: d.OrdersAssigned, LastAssignedAt: d.LastAssignedAt, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt,
	}
}

// assignmentJSON is the Dispatch assignment resource (camelCase);
// dispatcherId is null for an order dispatched directly (an operation's).
type assignmentJSON struct {
	ID                  uuid.UUID       `json:"id"`
	OrganizationID      uuid.UUID       `json:"organizationId"`
	DispatcherID        *uuid.UUID      `json:"dispatcherId"`
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

func toAssignmentJSON(a routing.Assignment) assignmentJSON {
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
	in := routing.ListDispatchersInput{SourceBridgeID: src, DestinationBridgeID: dst, Limit: p.Limit, Offset: p.Offset()}
	if active != "" {
		b := active == "true"
		in.IsActive = &b
	}
	page, err := s.Routing.ListDispatchers(r.Context(), actorOf(r), in)
	if err != nil {
		return err
	}
	writeList(w, mapSlice(page.Items, toDispatcherJSON), p, page.Total)
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
	status, err := queryEnum(r, "status", routing.AssignmentStatuses...)
	details.collect(err)
	if len(details) > 0 {
		return errValidation(details...)
	}
	page, err := s.Routing.ListAssignments(r.Context(), actorOf(r), id, routing.ListAssignmentsInput{Status: status, Limit: p.Limit, Offset: p.Offset()})
	if err != nil {
		return err
	}
	writeList(w, mapSlice(page.Items, toAssignmentJSON), p, page.Total)
	return nil
}

// evaluateDispatchers runs every active dispatcher of the order's bridge
// on it, with trigger manual.
func (s *Server) evaluateDispatchers(w http.ResponseWriter, r *http.Request) error {
	orderID, err := pathID(r, "orderId", "order")
	if err != nil {
		return err
	}
	created, err := s.Routing.EvaluateDispatchers(r.Context(), actorOf(r), orderID)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, map[string]any{"orderId": orderID, "assignmentsCreated": len(created), "assignments": mapSlice(created, toAssignmentJSON)})
	return nil
}

// bulkAssign assigns 1-200 orders to the dispatcher's destination,
// bypassing its conditions (routing.BulkAssign). The body is
// DispatchBulkAssignRequest (api/openapi.yaml).
func (s *Server) bulkAssign(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "dispatcher")
	if err != nil {
		return err
	}
	var body struct {
		OrderIDs []uuid.UUID `json:"orderIds"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	res, err := s.Routing.BulkAssign(r.Context(), actorOf(r), id, body.OrderIDs)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, map[string]any{"assigned": res.Assigned, "skipped": res.Skipped})
	return nil
}

// processAssignments starts the runs of pending assignments (optionally of
// one destination bridge), through the bulk queue. The body (optional) is
// DispatchProcessRequest.
func (s *Server) processAssignments(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		BridgeID *string  `json:"bridgeId"`
		Limit    *float64 `json:"limit"`
	}
	if err := decodeOptionalJSON(r, &body); err != nil {
		return err
	}
	var in routing.ProcessAssignmentsInput
	if id := blankNil(body.BridgeID); id != nil {
		u, err := uuid.Parse(strings.TrimSpace(*id))
		if err != nil {
			return errValidation(FieldError{Field: "bridgeId", Message: "must be a UUID"})
		}
		in.BridgeID = &u
	}
	if body.Limit != nil {
		n := int(math.Max(math.Min(*body.Limit, math.MaxInt32), math.MinInt32))
		in.Limit = &n
	}
	res, err := s.Routing.ProcessAssignments(r.Context(), actorOf(r), in)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, map[string]any{"processed": res.Processed, "queued": res.Queued, "errors": res.Errors})
	return nil
}

// retryAssignments resets failed assignments to pending (retryCount 0) and
// starts them again. The body (optional) is DispatchRetryRequest.
func (s *Server) retryAssignments(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		AssignmentIDs *[]uuid.UUID `json:"assignmentIds"`
	}
	if err := decodeOptionalJSON(r, &body); err != nil {
		return err
	}
	var ids []uuid.UUID
	if body.AssignmentIDs != nil {
		ids = append([]uuid.UUID{}, *body.AssignmentIDs...)
	}
	reset, err := s.Routing.RetryAssignments(r.Context(), actorOf(r), ids)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, map[string]any{"reset": reset})
	return nil
}

// pageAssignments loads the assignments of a page of orders in one query
// (nil when not asked for).
func (s *Server) pageAssignments(r *http.Request, want bool, ids []uuid.UUID) ([]routing.Assignment, error) {
	if !want || len(ids) == 0 {
		return nil, nil
	}
	return s.Routing.AssignmentsOfOrders(r.Context(), actorOf(r), ids)
}

// assignmentsOf is the JSON array of an order's assignments, newest first.
func assignmentsOf(all []routing.Assignment, orderID uuid.UUID) json.RawMessage {
	out := make([]assignmentJSON, 0)
	for _, a := range all {
		if a.OrderID == orderID {
			out = append(out, toAssignmentJSON(a))
		}
	}
	raw, _ := json.Marshal(out)
	return raw
}

// Request bodies of the routing endpoints, decoded into routing's inputs.
// Decoding names what is of the wrong JSON type; the domain names the
// rest (required fields, bounds, enums, conditions), and one response
// names every problem (bodyError).

// dispatcherFields is the order a dispatcher body's problems are named in.
var dispatcherFields = []string{"name", "description", "sourceBridgeIds", "destinationBridgeId", "destinationConfig",
	"matchMode", "triggerOn", "isActive", "priority", "conditions"}

// decodeDispatcher reads a dispatcher create (every field, null is
// missing) or update (the fields sent) body.
func decodeDispatcher(r *http.Request, create bool) (routing.DispatcherInput, error) {
	var body jsonBody
	v, err := decodeCheckedJSON(r, &body)
	if err != nil {
		return routing.DispatcherInput{}, err
	}
	has := func(k string) bool { _, ok := body[k]; return ok }
	sent := func(k string) bool { return create || has(k) }
	var in routing.DispatcherInput
	in.Name, in.Description = nameDescription(body, create)
	if sent("sourceBridgeIds") {
		ids := uuidsOf(body["sourceBridgeIds"])
		in.SourceBridgeIDs = &ids
	}
	if create {
		if id := uuidOf(body["destinationBridgeId"]); id != uuid.Nil {
			in.DestinationBridgeID = &id
		}
	}
	in.DestinationConfig = objectOf(body["destinationConfig"])
	if body["matchMode"] != nil {
		mode, _ := body["matchMode"].(string)
		in.MatchMode = &mode
	}
	if arr, ok := body["triggerOn"].([]any); ok && len(arr) > 0 {
		in.TriggerOn = make([]string, len(arr))
		for i, el := range arr {
			in.TriggerOn[i], _ = el.(string)
		}
	}
	if b, ok := body["isActive"].(bool); ok {
		in.IsActive = &b
	}
	in.Priority = integerOf(body["priority"])
	if sent("conditions") {
		in.ConditionsSet, in.Conditions = true, body["conditions"]
	}
	if v.ok() {
		return in, nil // the domain validates the rest
	}
	return in, validation(v, in.Validate(create), dispatcherFields...)
}
