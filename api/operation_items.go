package api

import (
	"encoding/json"
	"net/http"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/operations"
)

// The items, actions and history of an operation (spec Part 3, Operation
// item and Operation history entry): HTTP over operations.Service.

func (s *Server) listOperationItems(w http.ResponseWriter, r *http.Request) error {
	id, err := operationID(r)
	if err != nil {
		return err
	}
	var details fieldErrors
	page, err := parsePage(r, 50, 100)
	details.collect(err)
	status, err := queryEnum(r, "status", operations.ItemStatuses...)
	details.collect(err)
	hasRate, err := queryEnum(r, "hasRate", "true", "false")
	details.collect(err)
	if len(details) > 0 {
		return errValidation(details...)
	}
	in := operations.ListItemsInput{Status: status, Limit: page.Limit, Offset: page.Offset()}
	if hasRate != "" {
		v := hasRate == "true"
		in.HasRate = &v
	}
	list, total, err := s.Operations.ListItems(r.Context(), actorOf(r), id, in)
	if err != nil {
		return err
	}
	writeList(w, mapSlice(list, toItemRowJSON), page, total)
	return nil
}

func (s *Server) addOperationItems(w http.ResponseWriter, r *http.Request) error {
	var b struct {
		OrderIDs []string `json:"orderIds"`
	}
	id, ids, err := operationIDList(r, &b, "orderIds", &b.OrderIDs)
	if err != nil {
		return err
	}
	added, err := s.Operations.AddItems(r.Context(), actorOf(r), id, ids)
	if err != nil {
		return err
	}
	writeData(w, http.StatusCreated, map[string]any{"added": len(added), "items": mapSlice(added, toItemJSON)})
	return nil
}

// refOf reads an optional reference: absent, null (clear) or a UUID.
func refOf(body map[string]json.RawMessage, field string) (operations.Ref, error) {
	raw, ok := body[field]
	if !ok {
		return operations.Ref{}, nil
	}
	if string(raw) == "null" {
		return operations.Ref{Set: true}, nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return operations.Ref{}, errValidation(FieldError{Field: field, Message: "must be a string or null"})
	}
	id, err := uuid.Parse(s)
	if err != nil {
		return operations.Ref{}, errValidation(FieldError{Field: field, Message: "must be a UUID or null"})
	}
	return operations.Ref{Set: true, ID: &id}, nil
}

func (s *Server) updateOperationItem(w http.ResponseWriter, r *http.Request) error {
	id, err := operationID(r)
	if err != nil {
		return err
	}
	itemID, err := pathID(r, "itemId", "operation item")
	if err != nil {
		return err
	}
	var body map[string]json.RawMessage
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	var in operations.UpdateItemInput
	for _, f := range []struct {
		name string
		dst  *operations.Ref
	}{{"rateSnapshotId", &in.RateSnapshotID}, {"overrideCarrierAccountId", &in.OverrideCarrierAccountID}, {"overrideDispatchBridgeId", &in.OverrideDispatchBridgeID}} {
		if *f.dst, err = refOf(body, f.name); err != nil {
			return err
		}
	}
	if raw, ok := body["status"]; ok {
		var st string
		if json.Unmarshal(raw, &st) != nil {
			return errValidation(FieldError{Field: "status", Message: "must be a string"})
		}
		in.Status = &st
	}
	it, err := s.Operations.UpdateItem(r.Context(), actorOf(r), id, itemID, in)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toItemJSON(it))
	return nil
}

func (s *Server) deleteOperationItem(w http.ResponseWriter, r *http.Request) error {
	id, err := operationID(r)
	if err != nil {
		return err
	}
	itemID, err := pathID(r, "itemId", "operation item")
	if err != nil {
		return err
	}
	if err := s.Operations.RemoveItem(r.Context(), actorOf(r), id, itemID); err != nil {
		return err
	}
	writeSuccess(w)
	return nil
}

func (s *Server) bulkRemoveOperationItems(w http.ResponseWriter, r *http.Request) error {
	var b struct {
		ItemIDs []string `json:"itemIds"`
	}
	id, ids, err := operationIDList(r, &b, "itemIds", &b.ItemIDs)
	if err != nil {
		return err
	}
	n, err := s.Operations.RemoveItems(r.Context(), actorOf(r), id, ids)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "removed": n})
	return nil
}

func (s *Server) applyOperationAction(w http.ResponseWriter, r *http.Request) error {
	var b struct {
		ItemIDs []string           `json:"itemIds"`
		Action  *operations.Action `json:"action"`
	}
	id, ids, err := operationIDList(r, &b, "itemIds", &b.ItemIDs)
	if err != nil {
		return err
	}
	if b.Action == nil {
		return errValidation(FieldError{Field: "action", Message: "is required"})
	}
	n, err := s.Operations.ApplyAction(r.Context(), actorOf(r), id, ids, *b.Action)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "applied": n, "action": b.Action})
	return nil
}

func (s *Server) operationHistory(w http.ResponseWriter, r *http.Request) error {
	id, err := operationID(r)
	if err != nil {
		return err
	}
	list, err := s.Operations.History(r.Context(), actorOf(r), id)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, mapSlice(list, toHistoryJSON))
	return nil
}

// operationIDList reads the path's operation id and the body into b, whose
// list (the body's field) holds 1 to operations.MaxIDs ids.
func operationIDList(r *http.Request, b any, field string, list *[]string) (uuid.UUID, []uuid.UUID, error) {
	id, err := operationID(r)
	if err != nil {
		return uuid.Nil, nil, err
	}
	if err := decodeJSON(r, b); err != nil {
		return uuid.Nil, nil, err
	}
	ids, err := idList(field, *list, operations.MaxIDs)
	if err != nil {
		return uuid.Nil, nil, err
	}
	return id, ids, nil
}
