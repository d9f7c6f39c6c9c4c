package api

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/operations"
)

// mountOperations registers the operations endpoints (spec Part 3,
// CONTRACT 5 and 10): HTTP over operations.Service. Reads need
// operations:read, changes operations:write, and execute, pause, resume,
// cancel and undo operations:execute. Execute and undo answer 202: the
// work runs in OperationExecute / OperationUndo.
func (s *Server) mountOperations(r chi.Router) {
	read := r.With(s.scope(operations.ScopeRead))
	write := r.With(s.scope(operations.ScopeWrite))
	exec := r.With(s.scope(operations.ScopeExecute))
	read.Get("/operations/types", s.h(s.listOperationTypes))
	read.Get("/operations/types/{typeId}", s.h(s.getOperationType))
	read.Get("/operations", s.h(s.listOperations))
	write.Post("/operations", s.h(s.createOperation))
	read.Get("/operations/{id}", s.h(s.getOperation))
	write.Patch("/operations/{id}", s.h(s.updateOperation))
	write.Delete("/operations/{id}", s.h(s.deleteOperation))
	read.Get("/operations/{id}/items", s.h(s.listOperationItems))
	write.Post("/operations/{id}/items", s.h(s.addOperationItems))
	write.Patch("/operations/{id}/items/{itemId}", s.h(s.updateOperationItem))
	write.Delete("/operations/{id}/items/{itemId}", s.h(s.deleteOperationItem))
	write.Post("/operations/{id}/items/bulk-remove", s.h(s.bulkRemoveOperationItems))
	write.Post("/operations/{id}/actions/apply", s.h(s.applyOperationAction))
	read.Get("/operations/{id}/history", s.h(s.operationHistory))
	exec.Post("/operations/{id}/execute", s.h(s.executeOperation))
	exec.Post("/operations/{id}/pause", s.h(s.pauseOperation))
	exec.Post("/operations/{id}/resume", s.h(s.resumeOperation))
	exec.Post("/operations/{id}/cancel", s.h(s.cancelOperation))
	exec.Post("/operations/{id}/undo", s.h(s.undoOperation))
}

// operationJSON is an operation as the API shows it.
type operationJSON struct {
	ID                 uuid.UUID  `json:"id"`
	OrganizationID     uuid.UUID  `json:"organizationId"`
	Name               string     `json:"name"`
	Description        *string    `json:"description"`
	Status             string     `json:"status"`
	ItemCount          int64      `json:"itemCount"`
	PendingCount       int64      `json:"pendingCount"`
	ProcessingCount    int64      `json:"processingCount"`
	CompletedCount     int64      `json:"completedCount"`
	FailedCount        int64      `json:"failedCount"`
	SkippedCount       int64      `json:"skippedCount"`
	TotalEstimatedCost float64    `json:"totalEstimatedCost"`
	Currency           string     `json:"currency"`
	CreatedBy          *string    `json:"createdBy"`
	StartedAt          *time.Time `json:"startedAt"`
	CompletedAt        *time.Time `json:"completedAt"`
	ErrorMessage       *string    `json:"errorMessage"`
	CreatedAt          time.Time  `json:"createdAt"`
	UpdatedAt          time.Time  `json:"updatedAt"`
}

func toOperationJSON(o operations.Operation) operationJSON {
	return operationJSON{ID: o.ID, OrganizationID: o.OrganizationID, Name: o.Name, Description: o.Description, Status: o.Status,
		ItemCount: o.ItemCount, PendingCount: o.PendingCount, ProcessingCount: o.ProcessingCount, CompletedCount: o.CompletedCount,
		FailedCount: o.FailedCount, SkippedCount: o.SkippedCount, TotalEstimatedCost: o.TotalEstimatedCost, Currency: o.Currency,
		CreatedBy: o.CreatedBy, StartedAt: o.StartedAt, CompletedAt: o.CompletedAt, ErrorMessage: o.ErrorMessage,
		CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt}
}

// itemJSON is an item; the list adds its expansions.
type itemJSON struct {
	ID                       uuid.UUID       `json:"id"`
	OrganizationID           uuid.UUID       `json:"organizationId"`
	OperationID              uuid.UUID       `json:"operationId"`
	OrderID                  uuid.UUID       `json:"orderId"`
	Status                   string          `json:"status"`
	RateSnapshotID           *uuid.UUID      `json:"rateSnapshotId"`
	OverrideCarrierAccountID *uuid.UUID      `json:"overrideCarrierAccountId"`
	OverrideDispatchBridgeID *uuid.UUID      `json:"overrideDispatchBridgeId"`
	PendingActions           json.RawMessage `json:"pendingActions"`
	AppliedActions           json.RawMessage `json:"appliedActions"`
	RetryCount               int             `json:"retryCount"`
	ErrorMessage             *string         `json:"errorMessage"`
	ShipmentID               *uuid.UUID      `json:"shipmentId"`
	CreatedAt                time.Time       `json:"createdAt"`
	UpdatedAt                time.Time       `json:"updatedAt"`
}

type itemRowJSON struct {
	itemJSON
	Order                  json.RawMessage `json:"order"`
	RateSnapshot           json.RawMessage `json:"rateSnapshot"`
	OverrideCarrierAccount json.RawMessage `json:"overrideCarrierAccount"`
	OverrideDispatchBridge json.RawMessage `json:"overrideDispatchBridge"`
}

func toItemJSON(i operations.Item) itemJSON {
	return itemJSON{ID: i.ID, OrganizationID: i.OrganizationID, OperationID: i.OperationID, OrderID: i.OrderID, Status: i.Status,
		RateSnapshotID: i.RateSnapshotID, OverrideCarrierAccountID: i.OverrideCarrierAccountID, OverrideDispatchBridgeID: i.OverrideDispatchBridgeID,
		PendingActions: shipmentRaw(i.PendingActions, "[]"), AppliedActions: shipmentRaw(i.AppliedActions, "[]"), RetryCount: i.RetryCount,
		ErrorMessage: i.ErrorMessage, ShipmentID: i.ShipmentID, CreatedAt: i.CreatedAt, UpdatedAt: i.UpdatedAt}
}

func toItemRowJSON(i operations.ItemRow) itemRowJSON {
	return itemRowJSON{itemJSON: toItemJSON(i.OperationItem), Order: shipmentRaw(i.Order, "null"), RateSnapshot: shipmentRaw(i.RateSnapshot, "null"),
		OverrideCarrierAccount: shipmentRaw(i.OverrideCarrierAccount, "null"), OverrideDispatchBridge: shipmentRaw(i.OverrideDispatchBridge, "null")}
}

// historyJSON is a history entry.
type historyJSON struct {
	ID               uuid.UUID       `json:"id"`
	OrganizationID   uuid.UUID       `json:"organizationId"`
	OperationID      uuid.UUID       `json:"operationId"`
	Action           string          `json:"action"`
	AffectedItemIDs  []uuid.UUID     `json:"affectedItemIds"`
	AffectedOrderIDs []uuid.UUID     `json:"affectedOrderIds"`
	PreviousState    json.RawMessage `json:"previousState"`
	NewState         json.RawMessage `json:"newState"`
	IsUndoable       bool            `json:"isUndoable"`
	IsUndone         bool            `json:"isUndone"`
	PerformedBy      *string         `json:"performedBy"`
	PerformedAt      time.Time       `json:"performedAt"`
}

func toHistoryJSON(e operations.Entry) historyJSON {
	h := historyJSON{ID: e.ID, OrganizationID: e.OrganizationID, OperationID: e.OperationID, Action: e.Action, AffectedItemIDs: e.AffectedItemIDs,
		AffectedOrderIDs: e.AffectedOrderIDs, PreviousState: shipmentRaw(e.PreviousState, "{}"), NewState: shipmentRaw(e.NewState, "{}"),
		IsUndoable: e.IsUndoable && !e.IsUndone && e.Action != operations.HistoryUndone, IsUndone: e.IsUndone, PerformedBy: e.PerformedBy, PerformedAt: e.PerformedAt}
	if h.AffectedItemIDs == nil {
		h.AffectedItemIDs = []uuid.UUID{}
	}
	if h.AffectedOrderIDs == nil {
		h.AffectedOrderIDs = []uuid.UUID{}
	}
	return h
}

// --- types ---

func (s *Server) listOperationTypes(w http.ResponseWriter, r *http.Request) error {
	list, err := s.Operations.Types(r.Context(), actorOf(r))
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, list)
	return nil
}

func (s *Server) getOperationType(w http.ResponseWriter, r *http.Request) error {
	t, err := s.Operations.TypeByID(r.Context(), actorOf(r), chi.URLParam(r, "typeId"))
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, t)
	return nil
}

// --- operations ---

func (s *Server) listOperations(w http.ResponseWriter, r *http.Request) error {
	var details fieldErrors
	page, err := parsePage(r, 20, 100)
	details.collect(err)
	status, err := queryEnum(r, "status", operations.Statuses...)
	details.collect(err)
	if len(details) > 0 {
		return errValidation(details...)
	}
	list, total, err := s.Operations.List(r.Context(), actorOf(r), operations.ListInput{Status: status, Limit: page.Limit, Offset: page.Offset()})
	if err != nil {
		return err
	}
	writeList(w, mapSlice(list, toOperationJSON), page, total)
	return nil
}

type operationBody struct {
	Name        *string         `json:"name"`
	Description json.RawMessage `json:"description"`
	Status      *string         `json:"status"`
}

// description reads an optional string-or-null field.
func optionalString(raw json.RawMessage, field string) (*string, bool, error) {
	if raw == nil {
		return nil, false, nil
	}
	if string(raw) == "null" {
		return nil, true, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, true, errValidation(FieldError{Field: field, Message: "must be a string"})
	}
	return &s, true, nil
}

func (s *Server) createOperation(w http.ResponseWriter, r *http.Request) error {
	var b operationBody
	if err := decodeJSON(r, &b); err != nil {
		return err
	}
	desc, _, err := optionalString(b.Description, "description")
	if err != nil {
		return err
	}
	op, err := s.Operations.Create(r.Context(), actorOf(r), operations.CreateInput{Name: deref(b.Name), Description: desc})
	if err != nil {
		return err
	}
	writeData(w, http.StatusCreated, toOperationJSON(op))
	return nil
}

func operationID(r *http.Request) (uuid.UUID, error) { return pathID(r, "id", "operation") }

// withOperation answers a route on one operation: the id parsed (404
// when malformed) and the operation written as {data: operation}.
func (s *Server) withOperation(status int, call func(r *http.Request, id uuid.UUID) (operations.Operation, error)) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := operationID(r)
		if err != nil {
			return err
		}
		op, err := call(r, id)
		if err != nil {
			return err
		}
		writeData(w, status, toOperationJSON(op))
		return nil
	}
}

func (s *Server) getOperation(w http.ResponseWriter, r *http.Request) error {
	return s.withOperation(http.StatusOK, func(r *http.Request, id uuid.UUID) (operations.Operation, error) {
		return s.Operations.Get(r.Context(), actorOf(r), id)
	})(w, r)
}

func (s *Server) updateOperation(w http.ResponseWriter, r *http.Request) error {
	return s.withOperation(http.StatusOK, func(r *http.Request, id uuid.UUID) (operations.Operation, error) {
		var b operationBody
		if err := decodeJSON(r, &b); err != nil {
			return operations.Operation{}, err
		}
		desc, set, err := optionalString(b.Description, "description")
		if err != nil {
			return operations.Operation{}, err
		}
		return s.Operations.Update(r.Context(), actorOf(r), id, operations.UpdateInput{Name: b.Name, Description: desc, SetDescription: set, Status: b.Status})
	})(w, r)
}

func (s *Server) deleteOperation(w http.ResponseWriter, r *http.Request) error {
	id, err := operationID(r)
	if err != nil {
		return err
	}
	if err := s.Operations.Delete(r.Context(), actorOf(r), id); err != nil {
		return err
	}
	writeSuccess(w)
	return nil
}

func (s *Server) executeOperation(w http.ResponseWriter, r *http.Request) error {
	return s.withOperation(http.StatusAccepted, func(r *http.Request, id uuid.UUID) (operations.Operation, error) {
		return s.Operations.Execute(r.Context(), actorOf(r), id)
	})(w, r)
}

func (s *Server) pauseOperation(w http.ResponseWriter, r *http.Request) error {
	return s.withOperation(http.StatusOK, func(r *http.Request, id uuid.UUID) (operations.Operation, error) {
		return s.Operations.Pause(r.Context(), actorOf(r), id)
	})(w, r)
}

func (s *Server) resumeOperation(w http.ResponseWriter, r *http.Request) error {
	return s.withOperation(http.StatusOK, func(r *http.Request, id uuid.UUID) (operations.Operation, error) {
		return s.Operations.Resume(r.Context(), actorOf(r), id)
	})(w, r)
}

func (s *Server) cancelOperation(w http.ResponseWriter, r *http.Request) error {
	return s.withOperation(http.StatusOK, func(r *http.Request, id uuid.UUID) (operations.Operation, error) {
		return s.Operations.Cancel(r.Context(), actorOf(r), id)
	})(w, r)
}

func (s *Server) undoOperation(w http.ResponseWriter, r *http.Request) error {
	id, err := operationID(r)
	if err != nil {
		return err
	}
	var b struct {
		HistoryID *string `json:"historyId"`
	}
	if err := decodeOptionalJSON(r, &b); err != nil {
		return err
	}
	var hid *uuid.UUID
	if b.HistoryID != nil {
		u, err := uuid.Parse(*b.HistoryID)
		if err != nil {
			return errValidation(FieldError{Field: "historyId", Message: "must be a UUID"})
		}
		hid = &u
	}
	op, e, err := s.Operations.Undo(r.Context(), actorOf(r), id, hid)
	if err != nil {
		return err
	}
	writeData(w, http.StatusAccepted, map[string]any{"operation": toOperationJSON(op), "historyId": e.ID, "workflowId": "operation-undo/" + e.ID.String()})
	return nil
}
