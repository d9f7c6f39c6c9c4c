package api

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/shipping"
)

// Shipment actions (hold, redirect, redeliver, instructions): HTTP over
// shipping.Service.RequestAction, ListActions and GetAction.

// shipmentActionStatus is the status of an accepted action request: the
// carrier is told asynchronously.
const shipmentActionStatus = http.StatusAccepted

// shipmentActionCreatedJSON is the answer to an action request.
type shipmentActionCreatedJSON struct {
	ActionID uuid.UUID `json:"actionId"`
	Status   string    `json:"status"`
}

// shipmentActionJSON is an action record (extension: GET .../actions).
type shipmentActionJSON struct {
	ActionID           uuid.UUID       `json:"actionId"`
	ShipmentID         uuid.UUID       `json:"shipmentId"`
	ActionType         string          `json:"actionType"`
	Status             string          `json:"status"`
	Config             json.RawMessage `json:"config"`
	ShipmentStatus     string          `json:"shipmentStatus"`
	ConfirmationNumber *string         `json:"confirmationNumber"`
	Messages           []string        `json:"messages"`
	Error              *string         `json:"error"`
	CreatedAt          time.Time       `json:"createdAt"`
	UpdatedAt          time.Time       `json:"updatedAt"`
	CompletedAt        *time.Time      `json:"completedAt"`
}

func toShipmentActionJSON(a shipping.ShipmentAction) shipmentActionJSON {
	msgs := a.Messages
	if msgs == nil {
		msgs = []string{}
	}
	return shipmentActionJSON{
		ActionID: a.ID, ShipmentID: a.ShipmentID, ActionType: a.ActionType, Status: a.Status,
		Config: shipmentRaw(a.Config, "{}"), ShipmentStatus: a.ShipmentStatus, ConfirmationNumber: a.ConfirmationNumber,
		Messages: msgs, Error: a.Error, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt, CompletedAt: a.CompletedAt,
	}
}

// decodeShipmentAction reads an action body: actionType and its fields,
// given inside a config object or at the top level of the body (the
// field errors name them where they were sent). ShipmentActionCreate
// names what is of the wrong type (v), the domain the rest.
func decodeShipmentAction(v *validator, body jsonBody) (shipping.ActionInput, error) {
	var in shipping.ActionInput
	in.Type, _ = body["actionType"].(string)
	fields, prefix := map[string]any(body), ""
	if c := objectOf(body["config"]); c != nil {
		fields, prefix = c, "config."
	}
	switch in.Type {
	case carriers.ActionHold:
		in.Reason, in.Notes = textOf(fields["reason"]), textOf(fields["notes"])
	case carriers.ActionRedirect:
		if a := objectOf(fields["address"]); a != nil {
			addr := shipping.AddressOf(a).DefaultCountry()
			in.Address = &addr
		}
		in.Notes = textOf(fields["notes"])
	case carriers.ActionRedeliver:
		if t, ok := shipmentParseDate(textOf(fields["preferredDate"])); ok {
			in.PreferredDate = &t
		}
		in.Instructions = textOf(fields["instructions"])
	case carriers.ActionInstructions:
		in.Instructions = textOf(fields["instructions"])
	}
	dom := in.Validate()
	for i := range dom {
		if dom[i].Field != "actionType" {
			dom[i].Field = prefix + dom[i].Field
		}
	}
	return in, validation(v, dom)
}

// createShipmentAction records a pending action and starts its
// ShipmentAction workflow, which sends it to the carrier and records the
// outcome; the shipment's status does not change. It answers 202
// {actionId, status: pending}. An action the shipment's status does not
// allow (the specification's table) is 409 conflict.
func (s *Server) createShipmentAction(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "shipment")
	if err != nil {
		return err
	}
	var body jsonBody
	v, err := decodeCheckedJSON(r, &body)
	if err != nil {
		return err
	}
	in, err := decodeShipmentAction(v, body)
	if err != nil {
		return err
	}
	actor := actorOf(r)
	// A delivery change may carry a fee: with an Idempotency-Key, a
	// client's retry names the same record and workflow.
	in.ID = purchaseID(r, actor.OrganizationID, "shipment-action")
	res, err := s.Shipping.RequestAction(r.Context(), actor, id, in)
	if err != nil {
		return err
	}
	writeJSON(w, shipmentActionStatus, shipmentActionCreatedJSON{ActionID: res.ActionID, Status: res.Status})
	return nil
}

func (s *Server) listShipmentActions(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "shipment")
	if err != nil {
		return err
	}
	list, err := s.Shipping.ListActions(r.Context(), actorOf(r), id)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, mapSlice(list, toShipmentActionJSON))
	return nil
}

func (s *Server) getShipmentAction(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "shipment")
	if err != nil {
		return err
	}
	actionID, err := pathID(r, "actionId", "shipment action")
	if err != nil {
		return err
	}
	a, err := s.Shipping.GetAction(r.Context(), actorOf(r), id, actionID)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toShipmentActionJSON(a))
	return nil
}
