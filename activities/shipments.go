package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
)

// Error types (temporal.ApplicationError.Type) of the shipment activities.
const (
	// ErrTypeShipmentActionRejected: the carrier refused the action for good
	// (invalid request, unknown tracking number, credentials refused, the
	// carrier does not offer actions), or the shipment cannot be sent to a
	// carrier (no tracking number, carrier account deleted or not active).
	ErrTypeShipmentActionRejected = "ShipmentActionRejected"
	// ErrTypeShipmentCarrierUnavailable: a carrier failure worth retrying
	// (network, timeout, 429, 5xx).
	ErrTypeShipmentCarrierUnavailable = "ShipmentCarrierUnavailable"
	// ErrTypeShipmentActionGone: the action record (or its shipment) no
	// longer exists.
	ErrTypeShipmentActionGone = "ShipmentActionGone"
)

// PermanentShipmentActionErrorTypes are the non-retryable error types of
// SendShipmentAction, for retry policies.
var PermanentShipmentActionErrorTypes = []string{
	ErrTypeShipmentActionRejected, ErrTypeShipmentActionGone, ErrTypeInvalidInput,
}

// ShipmentActivities are the activities on shipments, shipment actions and
// pickups.
type ShipmentActivities struct {
	Store    *store.Store
	Secrets  *secrets.Box
	Carriers *carriers.Registry
	Logger   *slog.Logger
}

// SendShipmentActionInput is the input of SendShipmentAction.
type SendShipmentActionInput struct {
	OrganizationID string `json:"organizationId"`
	ActionID       string `json:"actionId"`
}

// SendShipmentActionResult is the carrier's acceptance of an action.
type SendShipmentActionResult struct {
	ConfirmationNumber string          `json:"confirmationNumber"`
	Status             string          `json:"status"`
	Messages           []string        `json:"messages"`
	Raw                json.RawMessage `json:"raw"`
	// AlreadyFinished: the record already had its outcome (an earlier run
	// recorded it); nothing was sent and nothing needs recording.
	AlreadyFinished bool   `json:"alreadyFinished"`
	FinishedStatus  string `json:"finishedStatus,omitempty"`
}

// SendShipmentAction sends a pending action record to the shipment's
// carrier. The action id is the carrier call's transaction reference, so a
// retried call is recognisable by the carrier. Permanent refusals are
// non-retryable application errors (see the ErrType constants).
func (a *ShipmentActivities) SendShipmentAction(ctx context.Context, in SendShipmentActionInput) (SendShipmentActionResult, error) {
	orgID, err := uuid.Parse(in.OrganizationID)
	if err != nil {
		return SendShipmentActionResult{}, temporal.NewNonRetryableApplicationError("organizationId is not a UUID", ErrTypeInvalidInput, nil)
	}
	actionID, err := uuid.Parse(in.ActionID)
	if err != nil {
		return SendShipmentActionResult{}, temporal.NewNonRetryableApplicationError("actionId is not a UUID", ErrTypeInvalidInput, nil)
	}
	act, err := store.ShipmentActionByID(ctx, a.Store.Pool, orgID, actionID)
	if errors.Is(err, store.ErrNotFound) {
		return SendShipmentActionResult{}, temporal.NewNonRetryableApplicationError("shipment action "+in.ActionID+" not found", ErrTypeShipmentActionGone, nil)
	}
	if err != nil {
		return SendShipmentActionResult{}, fmt.Errorf("read shipment action %s: %w", in.ActionID, err)
	}
	if act.Status != store.ShipmentActionPending {
		return SendShipmentActionResult{AlreadyFinished: true, FinishedStatus: act.Status}, nil
	}
	sh, err := store.ShipmentByID(ctx, a.Store.Pool, orgID, act.ShipmentID)
	if errors.Is(err, store.ErrNotFound) {
		return SendShipmentActionResult{}, temporal.NewNonRetryableApplicationError("shipment "+act.ShipmentID.String()+" not found", ErrTypeShipmentActionGone, nil)
	}
	if err != nil {
		return SendShipmentActionResult{}, fmt.Errorf("read shipment %s: %w", act.ShipmentID, err)
	}
	if sh.TrackingNumber == nil || *sh.TrackingNumber == "" {
		return SendShipmentActionResult{}, shipmentActionRejected("the shipment has no tracking number")
	}
	if sh.CarrierAccountID == nil {
		return SendShipmentActionResult{}, shipmentActionRejected("the shipment's carrier account was deleted")
	}
	acct, err := store.CarrierAccountByID(ctx, a.Store.Pool, orgID, *sh.CarrierAccountID)
	if errors.Is(err, store.ErrNotFound) {
		return SendShipmentActionResult{}, shipmentActionRejected("the shipment's carrier account was deleted")
	}
	if err != nil {
		return SendShipmentActionResult{}, fmt.Errorf("read carrier account %s: %w", *sh.CarrierAccountID, err)
	}
	if acct.Status != store.CarrierAccountActive {
		return SendShipmentActionResult{}, shipmentActionRejected(fmt.Sprintf("carrier account %q is %s; only an active account sends actions", acct.Name, acct.Status))
	}
	if a.Secrets == nil {
		return SendShipmentActionResult{}, shipmentActionRejected("carrier credentials cannot be opened: no encryption key configured")
	}
	adapterAcct, err := store.AdapterAccount(a.Secrets, acct)
	if err != nil {
		return SendShipmentActionResult{}, shipmentActionRejected("carrier credentials cannot be opened")
	}
	carrier, err := a.Carriers.Get(acct.Carrier)
	if err != nil {
		return SendShipmentActionResult{}, shipmentActionRejected(err.Error())
	}
	req, err := CarrierShipmentAction(act, *sh.TrackingNumber)
	if err != nil {
		return SendShipmentActionResult{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeInvalidInput, nil)
	}
	res, err := carrier.SendAction(ctx, adapterAcct, req)
	if err != nil {
		return SendShipmentActionResult{}, ShipmentCarrierError(err)
	}
	var msgs []string
	if res.Message != "" {
		msgs = []string{res.Message}
	}
	a.log().InfoContext(ctx, "shipment action sent", "organization_id", orgID, "action_id", actionID,
		"shipment_id", sh.ID, "action_type", act.ActionType, "confirmation_number", res.ConfirmationNumber)
	return SendShipmentActionResult{ConfirmationNumber: res.ConfirmationNumber, Status: res.Status, Messages: msgs, Raw: res.Raw}, nil
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

// ShipmentCarrierError maps a carrier adapter error to an activity error:
// retryable failures (network, 429, 5xx) stay retryable, every other one is
// a non-retryable rejection. Its message is CarrierErrorMessage (never
// credentials, internal addresses or Go error text); the cause keeps the
// detail.
func ShipmentCarrierError(err error) error {
	msg := CarrierErrorMessage(err)
	if carriers.IsRetryable(err) {
		return temporal.NewApplicationErrorWithCause(msg, ErrTypeShipmentCarrierUnavailable, err)
	}
	return temporal.NewNonRetryableApplicationError(msg, ErrTypeShipmentActionRejected, err)
}

// CarrierErrorMessage is what a client may read of a failed carrier call:
// the carrier's own code and message when the carrier answered, a timeout,
// or a generic message. The text of network, decoding and internal errors
// (which may name internal addresses) is never part of it: log that
// separately.
func CarrierErrorMessage(err error) string {
	timedOut := errors.Is(err, context.DeadlineExceeded)
	ce, ok := carriers.AsError(err)
	switch {
	case timedOut:
		return "the carrier did not answer in time"
	case !ok:
		return "the carrier could not be called"
	case ce.Code == carriers.ErrCodeNetwork:
		return "the carrier could not be reached"
	case ce.Code == carriers.ErrCodeBadResponse:
		return "the carrier's answer could not be read"
	}
	return TenantText(ce.Error())
}

func shipmentActionRejected(msg string) error {
	return temporal.NewNonRetryableApplicationError(msg, ErrTypeShipmentActionRejected, nil)
}

// RecordShipmentActionOutcomeInput is the input of RecordShipmentActionOutcome.
type RecordShipmentActionOutcomeInput struct {
	OrganizationID string `json:"organizationId"`
	ActionID       string `json:"actionId"`
	// Status is completed or failed.
	Status             string          `json:"status"`
	ConfirmationNumber string          `json:"confirmationNumber"`
	Messages           []string        `json:"messages"`
	Error              string          `json:"error"`
	CarrierResponse    json.RawMessage `json:"carrierResponse,omitempty"`
}

// RecordShipmentActionOutcomeResult is the result of RecordShipmentActionOutcome.
type RecordShipmentActionOutcomeResult struct {
	// Recorded is false when the record already had an outcome or no
	// longer exists.
	Recorded bool `json:"recorded"`
}

// RecordShipmentActionOutcome moves a pending action record to completed or
// failed. The first outcome wins: repeating the call changes nothing.
func (a *ShipmentActivities) RecordShipmentActionOutcome(ctx context.Context, in RecordShipmentActionOutcomeInput) (RecordShipmentActionOutcomeResult, error) {
	orgID, err := uuid.Parse(in.OrganizationID)
	if err != nil {
		return RecordShipmentActionOutcomeResult{}, temporal.NewNonRetryableApplicationError("organizationId is not a UUID", ErrTypeInvalidInput, nil)
	}
	actionID, err := uuid.Parse(in.ActionID)
	if err != nil {
		return RecordShipmentActionOutcomeResult{}, temporal.NewNonRetryableApplicationError("actionId is not a UUID", ErrTypeInvalidInput, nil)
	}
	if in.Status != store.ShipmentActionCompleted && in.Status != store.ShipmentActionFailed {
		return RecordShipmentActionOutcomeResult{}, temporal.NewNonRetryableApplicationError("status must be completed or failed", ErrTypeInvalidInput, nil)
	}
	updated, err := store.FinishShipmentAction(ctx, a.Store.Pool, orgID, actionID, store.ShipmentActionOutcome{
		Status: in.Status, ConfirmationNumber: in.ConfirmationNumber, Messages: in.Messages,
		Error: TenantText(in.Error), CarrierResponse: in.CarrierResponse,
	})
	if errors.Is(err, store.ErrNotFound) {
		return RecordShipmentActionOutcomeResult{}, nil
	}
	if err != nil {
		return RecordShipmentActionOutcomeResult{}, fmt.Errorf("record shipment action %s: %w", in.ActionID, err)
	}
	return RecordShipmentActionOutcomeResult{Recorded: updated}, nil
}

// CompletePastPickupsInput is the input of CompletePastPickups.
type CompletePastPickupsInput struct {
	// AsOf is the moment whose UTC date is "today": confirmed pickups dated
	// before it become completed. Zero means now.
	AsOf time.Time `json:"asOf"`
}

// CompletePastPickupsResult is the result of CompletePastPickups.
type CompletePastPickupsResult struct {
	Completed int64 `json:"completed"`
}

// CompletePastPickups persists the completion of every confirmed pickup
// whose date has passed, in every organization, with one UPDATE.
func (a *ShipmentActivities) CompletePastPickups(ctx context.Context, in CompletePastPickupsInput) (CompletePastPickupsResult, error) {
	asOf := in.AsOf
	if asOf.IsZero() {
		asOf = time.Now()
	}
	n, err := store.CompletePastPickups(ctx, a.Store.Pool, asOf)
	if err != nil {
		return CompletePastPickupsResult{}, fmt.Errorf("complete past pickups: %w", err)
	}
	if n > 0 {
		a.log().InfoContext(ctx, "pickups completed", "count", n)
	}
	return CompletePastPickupsResult{Completed: n}, nil
}

func (a *ShipmentActivities) log() *slog.Logger {
	if a.Logger == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return a.Logger
}
