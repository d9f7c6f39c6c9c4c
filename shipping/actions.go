package shipping

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/store"
)

// ActionRuns is the port through which the Service starts a shipment
// action's ShipmentAction workflow (shipment-action/<actionId>,
// implemented by worker.TemporalShipping). The id is never reused: a run
// that closed without recording its outcome may have sent the change.
// StartAction answers ErrRunClosed when the id's run already closed, a
// *RunMayExist when the start's outcome stayed unknown (the record must
// stay), domain.WorkflowsUnavailable when Temporal refused or could not be
// reached (nothing runs).
type ActionRuns interface {
	StartAction(ctx context.Context, in ActionRun) error
}

// ActionRun is a shipment action to send.
type ActionRun struct {
	OrganizationID uuid.UUID
	ShipmentID     uuid.UUID
	ActionID       uuid.UUID
	// Since is when the record was written (a run started before it is
	// not its).
	Since time.Time
}

// ErrRunClosed: the workflow run of that id already closed; the record it
// served holds the outcome.
var ErrRunClosed = errors.New("the workflow run already closed")

// RunMayExist is a start whose outcome stayed unknown: the run may exist,
// whatever was written for it must stay.
type RunMayExist struct{ Err error }

func (e *RunMayExist) Error() string { return "workflow start outcome unknown: " + e.Err.Error() }
func (e *RunMayExist) Unwrap() error { return e.Err }

// Shipment action types, and the reasons of a hold.
var (
	ActionTypes = []string{carriers.ActionHold, carriers.ActionRedirect, carriers.ActionRedeliver, carriers.ActionInstructions}
	HoldReasons = []string{"customer_request", "address_issue", "payment_issue", "inventory_issue", "other"}
)

// MaxActionText bounds an action's notes and instructions.
const MaxActionText = 500

// ShipmentAction is an action record.
type ShipmentAction = store.ShipmentAction

// ActionInput is a delivery change to send to a shipment's carrier.
type ActionInput struct {
	// ID names the action; the same ID is the same request (an
	// Idempotency-Key's). Zero: a new one.
	ID   uuid.UUID
	Type string // hold, redirect, redeliver, instructions
	// Reason (hold, one of HoldReasons) and Notes (hold, redirect).
	Reason, Notes string
	// Address is the new destination (redirect): street, city, state and
	// zip required, the country a two-letter code (default US).
	Address *Address
	// PreferredDate (redeliver, optional) and Instructions (redeliver;
	// required for instructions).
	PreferredDate *time.Time
	Instructions  string
}

// Validate names every problem of the action: actionType, then its own
// fields (reason, notes, address.street, …, preferredDate, instructions).
func (in ActionInput) Validate() domain.FieldErrors {
	var v domain.FieldErrors
	if !containsStatus(ActionTypes, in.Type) {
		v.Add("actionType", "must be one of "+strings.Join(ActionTypes, ", "))
		return v
	}
	switch in.Type {
	case carriers.ActionHold:
		if !containsStatus(HoldReasons, in.Reason) {
			if in.Reason == "" {
				v.Add("reason", "is required")
			} else {
				v.Add("reason", "must be one of "+strings.Join(HoldReasons, ", "))
			}
		}
		v.MaxLen("notes", in.Notes, MaxActionText)
	case carriers.ActionRedirect:
		if in.Address == nil {
			v.Add("address", "is required")
		} else {
			a := *in.Address
			for _, f := range []struct{ name, val string }{{"street", a.Street}, {"city", a.City}, {"state", a.State}, {"zip", a.Zip}} {
				if f.val == "" {
					v.Add("address."+f.name, "is required")
				}
				v.MaxLen("address."+f.name, f.val, MaxAddressField)
			}
			if CountryCode(a.Country) != a.Country {
				v.Add("address.country", "must be a two-letter country code")
			}
		}
		v.MaxLen("notes", in.Notes, MaxActionText)
	case carriers.ActionRedeliver:
		v.MaxLen("instructions", in.Instructions, MaxActionText)
	case carriers.ActionInstructions:
		if strings.TrimSpace(in.Instructions) == "" {
			v.Add("instructions", "is required")
		}
		v.MaxLen("instructions", in.Instructions, MaxActionText)
	}
	return v
}

// config is what the record keeps of the action.
func (in ActionInput) config() store.ShipmentActionConfig {
	var cfg store.ShipmentActionConfig
	switch in.Type {
	case carriers.ActionHold:
		cfg.Reason, cfg.Notes = in.Reason, in.Notes
	case carriers.ActionRedirect:
		if a := in.Address; a != nil {
			cfg.Address = &store.ShipmentActionAddress{Street: a.Street, City: a.City, State: a.State, Zip: a.Zip, Country: a.Country}
		}
		cfg.Notes = in.Notes
	case carriers.ActionRedeliver:
		if in.PreferredDate != nil {
			cfg.PreferredDate = in.PreferredDate.Format("2006-01-02")
		}
		cfg.Instructions = in.Instructions
	case carriers.ActionInstructions:
		cfg.Instructions = in.Instructions
	}
	return cfg
}

// RequestedAction is the answer to an action request: the record's id and
// status (pending until the carrier answers).
type RequestedAction struct {
	ActionID uuid.UUID
	Status   string
}

// RequestAction records a pending action and starts its ShipmentAction
// workflow, which sends it to the carrier and records the outcome; the
// shipment's status does not change (the agent's shipment-action tool,
// POST /shipments/{id}/actions). An action the shipment's status does not
// allow (the specification's table) is a Conflict. The same in.ID answers
// with the record's status and never sends twice. The actor needs
// shipments:write.
func (s *Service) RequestAction(ctx context.Context, actor domain.Actor, shipmentID uuid.UUID, in ActionInput) (RequestedAction, error) {
	if err := actor.RequireScope("shipments:write"); err != nil {
		return RequestedAction{}, err
	}
	if err := in.Validate().Err(); err != nil {
		return RequestedAction{}, err
	}
	orgID := actor.OrganizationID
	sh, err := s.shipment(ctx, orgID, shipmentID)
	if err != nil {
		return RequestedAction{}, err
	}
	if allowed := store.ShipmentActionAllowed[in.Type]; !containsStatus(allowed, sh.Status) {
		return RequestedAction{}, domain.Conflict(fmt.Sprintf("a %s action is allowed only while the shipment is %s; it is %s", in.Type, strings.Join(allowed, " or "), sh.Status))
	}
	if sh.TrackingNumber == nil || *sh.TrackingNumber == "" {
		return RequestedAction{}, domain.InvalidCode("missing_tracking_number", "the shipment has no tracking number to send the action for")
	}
	deleted := domain.InvalidCode("carrier_account_not_active", "the shipment's carrier account was deleted")
	if sh.CarrierAccountID == nil {
		return RequestedAction{}, deleted
	}
	acct, err := store.CarrierAccountByID(ctx, s.store.Pool, orgID, *sh.CarrierAccountID)
	if errors.Is(err, store.ErrNotFound) {
		return RequestedAction{}, deleted
	}
	if err != nil {
		return RequestedAction{}, err
	}
	if acct.Status != store.CarrierAccountActive {
		return RequestedAction{}, accountNotActive(acct)
	}
	// A carrier without a delivery-change API (none of the built-in
	// adapters has one) is not refused here: the specification records the
	// action pending and notifies the carrier asynchronously, so the
	// ShipmentAction run ends the record failed with the carrier's reason
	// ("does not support shipment actions"), readable on the action.
	if s.actions == nil {
		return RequestedAction{}, ErrWorkflowsUnavailable
	}
	actionID := in.ID
	if actionID == uuid.Nil {
		actionID = uuid.New()
	}
	kind, id, name := actor.Attribution()
	requestedBy, _ := json.Marshal(struct {
		Type string `json:"type"`
		ID   string `json:"id"`
		Name string `json:"name"`
	}{kind, deref(id), deref(name)})
	wfID := ActionWorkflowID(actionID)
	act, err := store.InsertShipmentAction(ctx, s.store.Pool, store.ShipmentAction{
		ID: actionID, OrganizationID: orgID, ShipmentID: sh.ID, ActionType: in.Type,
		Config: jsonOf(in.config()), ShipmentStatus: sh.Status, WorkflowID: &wfID, RequestedBy: requestedBy,
	})
	if errors.Is(err, store.ErrNotFound) {
		return RequestedAction{}, domain.NotFound("shipment")
	}
	if err != nil {
		return RequestedAction{}, err
	}
	if act.Status != store.ShipmentActionPending {
		return RequestedAction{ActionID: actionID, Status: act.Status}, nil // a retry of an action already sent
	}
	err = s.actions.StartAction(ctx, ActionRun{OrganizationID: orgID, ShipmentID: sh.ID, ActionID: actionID, Since: act.CreatedAt})
	var unknown *RunMayExist
	switch {
	case err == nil:
		return RequestedAction{ActionID: actionID, Status: store.ShipmentActionPending}, nil
	case errors.Is(err, ErrRunClosed):
		// A closed run: the record's status is the answer; a record still
		// pending is the reconciler's (Maintenance) to settle.
		s.log.WarnContext(ctx, "shipment action run already closed", "workflow_id", wfID, "status", act.Status)
		cur, err := store.ShipmentActionByID(ctx, s.store.Pool, orgID, actionID)
		if err != nil {
			return RequestedAction{}, err
		}
		return RequestedAction{ActionID: actionID, Status: cur.Status}, nil
	case errors.As(err, &unknown):
		// The run may exist: the pending record stays, for it or for the
		// reconciler, which fails it if no run does.
		s.log.WarnContext(ctx, "start workflow", "workflow_id", wfID, "error", err.Error())
		return RequestedAction{}, domain.WorkflowsUnavailable(err)
	}
	// Refused, or no run after all: nothing will send it, the record goes.
	if delErr := store.DeleteShipmentAction(context.WithoutCancel(ctx), s.store.Pool, orgID, actionID); delErr != nil {
		s.log.ErrorContext(ctx, "delete unsent shipment action", "action_id", actionID, "error", delErr)
	}
	return RequestedAction{}, err
}

// ActionWorkflowID is the stable workflow id of an action record
// (CONTRACT section 5).
func ActionWorkflowID(actionID uuid.UUID) string { return ActionIDPrefix + actionID.String() }

// Workflow id prefixes of the rows that wait on a shipping workflow.
const (
	LabelIDPrefix  = "shipment-label/"
	PickupIDPrefix = "pickup/"
	ActionIDPrefix = "shipment-action/"
)

// ListActions is a shipment's action records, newest first. The actor
// needs shipments:read.
func (s *Service) ListActions(ctx context.Context, actor domain.Actor, shipmentID uuid.UUID) ([]ShipmentAction, error) {
	if err := actor.RequireScope("shipments:read"); err != nil {
		return nil, err
	}
	if _, err := s.shipment(ctx, actor.OrganizationID, shipmentID); err != nil {
		return nil, err
	}
	return store.ShipmentActions(ctx, s.store.Pool, actor.OrganizationID, shipmentID)
}

// GetAction is one action record of a shipment. The actor needs
// shipments:read.
func (s *Service) GetAction(ctx context.Context, actor domain.Actor, shipmentID, actionID uuid.UUID) (ShipmentAction, error) {
	if err := actor.RequireScope("shipments:read"); err != nil {
		return ShipmentAction{}, err
	}
	a, err := store.ShipmentActionByID(ctx, s.store.Pool, actor.OrganizationID, actionID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && a.ShipmentID != shipmentID) {
		return ShipmentAction{}, domain.NotFound("shipment action")
	}
	return a, err
}
