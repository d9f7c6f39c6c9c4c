package shipping

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/store"
)

// The steps of a shipment action (the ShipmentAction workflow): send the
// pending record to the carrier, record the outcome.

// Error types of SendAction (StepError.Type).
const (
	// ErrTypeShipmentActionRejected: the carrier refused the action for good
	// (invalid request, unknown tracking number, credentials refused, the
	// carrier does not offer actions), or the shipment cannot be sent to a
	// carrier (no tracking number, carrier account deleted or not active).
	ErrTypeShipmentActionRejected = "ShipmentActionRejected"
	// ErrTypeShipmentCarrierUnavailable: the call never reached the carrier
	// (carriers.NotSent: connection refused, DNS failure, 429); worth
	// retrying.
	ErrTypeShipmentCarrierUnavailable = "ShipmentCarrierUnavailable"
	// ErrTypeShipmentActionOutcomeUnknown: the call may have reached the
	// carrier and no answer came back (timeout after sending, 5xx); not
	// repeated, since a delivery change may carry a fee.
	ErrTypeShipmentActionOutcomeUnknown = "ShipmentActionOutcomeUnknown"
	// ErrTypeShipmentActionGone: the action record (or its shipment) no
	// longer exists.
	ErrTypeShipmentActionGone = "ShipmentActionGone"
)

// ShipmentActionUnknownMessage is the error of an action whose outcome at
// the carrier is unknown.
const ShipmentActionUnknownMessage = "the carrier did not answer; the change may or may not have been made: check with the carrier before sending it again"

// SentAction is the carrier's acceptance of an action.
type SentAction struct {
	ConfirmationNumber string          `json:"confirmationNumber"`
	Status             string          `json:"status"`
	Messages           []string        `json:"messages"`
	Raw                json.RawMessage `json:"raw"`
	// AlreadyFinished: the record already had its outcome (an earlier run
	// recorded it); nothing was sent and nothing needs recording.
	AlreadyFinished bool   `json:"alreadyFinished"`
	FinishedStatus  string `json:"finishedStatus,omitempty"`
}

func actionRejected(msg string) error {
	return &StepError{Type: ErrTypeShipmentActionRejected, Message: msg, NonRetryable: true}
}

func actionGone(msg string) error {
	return &StepError{Type: ErrTypeShipmentActionGone, Message: msg, NonRetryable: true}
}

// SendAction sends a pending action record to the shipment's carrier. The
// action id is the carrier call's transaction reference, so a retried call
// is recognisable by the carrier. Permanent refusals are non-retryable
// StepErrors (the ErrTypeShipment* types).
func (s *Service) SendAction(ctx context.Context, orgID, actionID uuid.UUID) (SentAction, error) {
	act, err := store.ShipmentActionByID(ctx, s.store.Pool, orgID, actionID)
	if errors.Is(err, store.ErrNotFound) {
		return SentAction{}, actionGone("shipment action " + actionID.String() + " not found")
	}
	if err != nil {
		return SentAction{}, notCalledYet(ErrTypeShipmentCarrierUnavailable, "read the action", fmt.Errorf("read shipment action %s: %w", actionID, err))
	}
	if act.Status != store.ShipmentActionPending {
		return SentAction{AlreadyFinished: true, FinishedStatus: act.Status}, nil
	}
	sh, err := store.ShipmentByID(ctx, s.store.Pool, orgID, act.ShipmentID)
	if errors.Is(err, store.ErrNotFound) {
		return SentAction{}, actionGone("shipment " + act.ShipmentID.String() + " not found")
	}
	if err != nil {
		return SentAction{}, notCalledYet(ErrTypeShipmentCarrierUnavailable, "read the shipment", fmt.Errorf("read shipment %s: %w", act.ShipmentID, err))
	}
	if sh.TrackingNumber == nil || *sh.TrackingNumber == "" {
		return SentAction{}, actionRejected("the shipment has no tracking number")
	}
	if sh.CarrierAccountID == nil {
		return SentAction{}, actionRejected("the shipment's carrier account was deleted")
	}
	acct, err := store.CarrierAccountByID(ctx, s.store.Pool, orgID, *sh.CarrierAccountID)
	if errors.Is(err, store.ErrNotFound) {
		return SentAction{}, actionRejected("the shipment's carrier account was deleted")
	}
	if err != nil {
		return SentAction{}, notCalledYet(ErrTypeShipmentCarrierUnavailable, "read the carrier account", fmt.Errorf("read carrier account %s: %w", *sh.CarrierAccountID, err))
	}
	if acct.Status != store.CarrierAccountActive {
		return SentAction{}, actionRejected(fmt.Sprintf("carrier account %q is %s; only an active account sends actions", acct.Name, acct.Status))
	}
	if s.secrets == nil {
		return SentAction{}, actionRejected("carrier credentials cannot be opened: no encryption key configured")
	}
	adapterAcct, err := store.AdapterAccount(s.secrets, acct)
	if err != nil {
		return SentAction{}, actionRejected("carrier credentials cannot be opened")
	}
	if s.carriers == nil {
		return SentAction{}, actionRejected("no carrier adapters are configured")
	}
	carrier, err := s.carriers.Get(acct.Carrier)
	if err != nil {
		return SentAction{}, actionRejected(err.Error())
	}
	req, err := CarrierShipmentAction(act, *sh.TrackingNumber)
	if err != nil {
		return SentAction{}, invalidInput(err.Error(), nil)
	}
	res, err := carrier.SendAction(ctx, adapterAcct, req)
	if err != nil {
		return SentAction{}, ShipmentCarrierError(err)
	}
	var msgs []string
	if res.Message != "" {
		msgs = []string{res.Message}
	}
	s.log.InfoContext(ctx, "shipment action sent", "organization_id", orgID, "action_id", actionID,
		"shipment_id", sh.ID, "action_type", act.ActionType, "confirmation_number", res.ConfirmationNumber)
	return SentAction{ConfirmationNumber: res.ConfirmationNumber, Status: res.Status, Messages: msgs, Raw: res.Raw}, nil
}

// CarrierShipmentAction builds the carrier request of an action record.
func CarrierShipmentAction(act store.ShipmentAction, trackingNumber string) (carriers.ShipmentAction, error) {
	var cfg store.ShipmentActionConfig
	if len(act.Config) > 0 {
		if err := json.Unmarshal(act.Config, &cfg); err != nil {
			return carriers.ShipmentAction{}, fmt.Errorf("action config is not valid: %w", err)
		}
	}
	out := carriers.ShipmentAction{
		Type: act.ActionType, TrackingNumber: trackingNumber, Reason: cfg.Reason, Notes: cfg.Notes,
		PreferredDate: cfg.PreferredDate, Instructions: cfg.Instructions, Reference: act.ID.String(),
	}
	if cfg.Address != nil {
		country := cfg.Address.Country
		if country == "" {
			country = "US"
		}
		out.Address = &carriers.Address{Address1: cfg.Address.Street, City: cfg.Address.City,
			ProvinceCode: cfg.Address.State, Zip: cfg.Address.Zip, CountryCode: country}
	}
	return out, nil
}

// ShipmentCarrierError classifies a carrier adapter error of a delivery
// change (which may carry a fee): a call that never reached the carrier
// (carriers.NotSent) may be repeated; one whose outcome is unknown (a
// timeout after sending, a 5xx) is ErrTypeShipmentActionOutcomeUnknown,
// never blindly repeated; every other failure is a rejection. Its message
// is CarrierErrorMessage; Err keeps the detail.
func ShipmentCarrierError(err error) error {
	msg := CarrierErrorMessage(err)
	switch {
	case carriers.NotSent(err):
		return &StepError{Type: ErrTypeShipmentCarrierUnavailable, Message: msg, Err: err}
	case carriers.Unanswered(err):
		return &StepError{Type: ErrTypeShipmentActionOutcomeUnknown, Message: ShipmentActionUnknownMessage + " (" + msg + ")", NonRetryable: true, Err: err}
	}
	return &StepError{Type: ErrTypeShipmentActionRejected, Message: msg, NonRetryable: true, Err: err}
}

// ActionOutcome is the outcome of a sent action, to record.
type ActionOutcome struct {
	// Status is completed or failed.
	Status             string
	ConfirmationNumber string
	Messages           []string
	Error              string
	CarrierResponse    json.RawMessage
}

// RecordActionOutcome moves a pending action record to completed or
// failed. The first outcome wins: repeating the call changes nothing
// (recorded is false then, and when the record no longer exists).
func (s *Service) RecordActionOutcome(ctx context.Context, orgID, actionID uuid.UUID, o ActionOutcome) (recorded bool, err error) {
	if o.Status != store.ShipmentActionCompleted && o.Status != store.ShipmentActionFailed {
		return false, invalidInput("status must be completed or failed", nil)
	}
	updated, err := store.FinishShipmentAction(ctx, s.store.Pool, orgID, actionID, store.ShipmentActionOutcome{
		Status: o.Status, ConfirmationNumber: o.ConfirmationNumber, Messages: o.Messages,
		Error: domain.TenantText(o.Error), CarrierResponse: o.CarrierResponse,
	})
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("record shipment action %s: %w", actionID, err)
	}
	return updated, nil
}
