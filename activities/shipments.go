package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
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

// PermanentShipmentActionErrorTypes are the non-retryable error types of
// SendShipmentAction, for retry policies.
var PermanentShipmentActionErrorTypes = []string{
	ErrTypeShipmentActionRejected, ErrTypeShipmentActionGone, ErrTypeShipmentActionOutcomeUnknown, ErrTypeInvalidInput,
}

// ShipmentActivities are the activities on shipments, shipment actions and
// pickups.
type ShipmentActivities struct {
	Store    *store.Store
	Secrets  *secrets.Box
	Carriers *carriers.Registry
	Logger   *slog.Logger
	// Temporal describes workflows (ReconcileShipments); nil uses the
	// worker's client.
	Temporal client.Client
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
		return SendShipmentActionResult{}, notCalledYet(ErrTypeShipmentCarrierUnavailable, "read the action", fmt.Errorf("read shipment action %s: %w", in.ActionID, err))
	}
	if act.Status != store.ShipmentActionPending {
		return SendShipmentActionResult{AlreadyFinished: true, FinishedStatus: act.Status}, nil
	}
	sh, err := store.ShipmentByID(ctx, a.Store.Pool, orgID, act.ShipmentID)
	if errors.Is(err, store.ErrNotFound) {
		return SendShipmentActionResult{}, temporal.NewNonRetryableApplicationError("shipment "+act.ShipmentID.String()+" not found", ErrTypeShipmentActionGone, nil)
	}
	if err != nil {
		return SendShipmentActionResult{}, notCalledYet(ErrTypeShipmentCarrierUnavailable, "read the shipment", fmt.Errorf("read shipment %s: %w", act.ShipmentID, err))
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
		return SendShipmentActionResult{}, notCalledYet(ErrTypeShipmentCarrierUnavailable, "read the carrier account", fmt.Errorf("read carrier account %s: %w", *sh.CarrierAccountID, err))
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

// ShipmentCarrierError maps a carrier adapter error of a delivery change
// (which may carry a fee) to an activity error: a call that never reached
// the carrier (carriers.NotSent) stays retryable; one whose outcome is
// unknown (a timeout after sending, a 5xx) is a non-retryable
// ErrTypeShipmentActionOutcomeUnknown, never blindly repeated; every other
// failure is a non-retryable rejection. Its message is CarrierErrorMessage
// (never credentials, internal addresses or Go error text); the cause keeps
// the detail.
func ShipmentCarrierError(err error) error {
	msg := CarrierErrorMessage(err)
	switch {
	case carriers.NotSent(err):
		return temporal.NewApplicationErrorWithCause(msg, ErrTypeShipmentCarrierUnavailable, err)
	case carriers.Unanswered(err):
		return temporal.NewNonRetryableApplicationError(ShipmentActionUnknownMessage+" ("+msg+")", ErrTypeShipmentActionOutcomeUnknown, err)
	}
	return temporal.NewNonRetryableApplicationError(msg, ErrTypeShipmentActionRejected, err)
}

// ShipmentActionUnknownMessage is the error of an action whose outcome at
// the carrier is unknown.
const ShipmentActionUnknownMessage = "the carrier did not answer; the change may or may not have been made: check with the carrier before sending it again"

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

// --- calls that spend money: label purchase (ShipmentLabel) ---

// Error types of the activities that call a carrier to spend money or book
// something (BuyShipmentLabel, BookPickup). Only ErrTypeCarrierNotSent is
// worth repeating: the call provably never reached the carrier
// (carriers.NotSent). The workflows run these activities once per attempt
// (no Temporal retries: a Temporal retry would also repeat a call that timed
// out after it was sent) and repeat them themselves on ErrTypeCarrierNotSent
// only.
const (
	// ErrTypeCarrierNotSent: the call never reached the carrier
	// (connection refused, DNS failure, 429); repeating it is safe.
	ErrTypeCarrierNotSent = "CarrierNotSent"
	// ErrTypeCarrierRefused: the carrier answered with a definite refusal
	// (or the adapter refused before calling); nothing was bought. Its
	// details are a CarrierFailure.
	ErrTypeCarrierRefused = "CarrierRefused"
	// ErrTypeCarrierOutcomeUnknown: the call may have reached the carrier
	// and no definite answer came back (a timeout after sending, a reset, a
	// 5xx, an unreadable answer). Its details are a CarrierFailure.
	ErrTypeCarrierOutcomeUnknown = "CarrierOutcomeUnknown"
	// ErrTypePurchaseGone: the shipment or pickup being bought or booked
	// was deleted, or is no longer pending.
	ErrTypePurchaseGone = "PurchaseGone"
)

// CarrierFailure is what a client may read of a failed carrier call (the
// details of ErrTypeCarrierRefused and ErrTypeCarrierOutcomeUnknown): never
// credentials, internal addresses or Go error text.
type CarrierFailure struct {
	Carrier string `json:"carrier"`
	// Code is the carrier's error code ("" when the carrier gave none).
	Code string `json:"code"`
	// Message is CarrierErrorMessage of the failure; CarrierMessage the
	// carrier's own message, when it answered.
	Message        string `json:"message"`
	CarrierMessage string `json:"carrierMessage"`
	StatusCode     int    `json:"statusCode"`
	// Invalid: the carrier refused the request itself as invalid (the
	// client's to fix); NotSupported: the carrier does not offer it.
	Invalid      bool `json:"invalid"`
	NotSupported bool `json:"notSupported"`
	// APICode, when set, is the API error code of a refusal that happened
	// before any carrier call (e.g. carrier_account_not_active).
	APICode string `json:"apiCode,omitempty"`
	// RetryAfter is how long a carrier that throttled the call (429) asked
	// to wait.
	RetryAfter time.Duration `json:"retryAfter,omitempty"`
}

// CarrierFailureOf describes a failed carrier call.
func CarrierFailureOf(err error) CarrierFailure {
	f := CarrierFailure{Message: CarrierErrorMessage(err), Invalid: CarrierRefusedRequest(err), NotSupported: errors.Is(err, carriers.ErrNotSupported)}
	if ce, ok := carriers.AsError(err); ok {
		f.Carrier, f.Code, f.CarrierMessage, f.StatusCode, f.RetryAfter = ce.Carrier, ce.Code, ce.Message, ce.StatusCode, ce.RetryAfter
	}
	return f
}

// CarrierRefusedRequest reports whether the carrier refused the request
// itself as invalid (ErrInvalidRequest, or another 4xx that is neither a
// credentials refusal, a not-found, a timeout nor a rate limit): the
// client's to fix, not the carrier's failure.
func CarrierRefusedRequest(err error) bool {
	if errors.Is(err, carriers.ErrUnauthorized) || errors.Is(err, carriers.ErrNotSupported) || errors.Is(err, carriers.ErrNotConfigured) {
		return false
	}
	if errors.Is(err, carriers.ErrInvalidRequest) {
		return true
	}
	ce, ok := carriers.AsError(err)
	if !ok || ce.Retryable || ce.StatusCode < 400 || ce.StatusCode >= 500 {
		return false
	}
	switch ce.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusRequestTimeout, http.StatusTooManyRequests:
		return false
	}
	return true
}

// carrierCallError is the activity error of a failed money-spending call:
// retryable ErrTypeCarrierNotSent when the call never reached the carrier,
// else non-retryable ErrTypeCarrierOutcomeUnknown or ErrTypeCarrierRefused
// with the CarrierFailure as details.
func carrierCallError(err error) error {
	f := CarrierFailureOf(err)
	switch {
	case carriers.NotSent(err):
		return temporal.NewApplicationErrorWithCause(f.Message, ErrTypeCarrierNotSent, err, f)
	case carriers.Unanswered(err):
		return temporal.NewNonRetryableApplicationError(f.Message, ErrTypeCarrierOutcomeUnknown, err, f)
	}
	return temporal.NewNonRetryableApplicationError(f.Message, ErrTypeCarrierRefused, err, f)
}

// notCalledYet is the error of a failure before the carrier call (a
// database read that failed): nothing reached the carrier, so it is the
// retryable never-sent type errType (ErrTypeCarrierNotSent,
// ErrTypeShipmentCarrierUnavailable) that the workflow repeats
// (spendOnceWith) and never an unknown outcome. The message is for people
// ("could not read the shipment"); the cause keeps the error for the
// operators.
func notCalledYet(errType, what string, err error) error {
	msg := "the service could not " + what + " before calling the carrier; nothing was sent to the carrier"
	if errType == ErrTypeCarrierNotSent {
		return temporal.NewApplicationErrorWithCause(msg, errType, err, CarrierFailure{Message: msg})
	}
	return temporal.NewApplicationErrorWithCause(msg, errType, err)
}

// refusedBeforeCall is a non-retryable ErrTypeCarrierRefused for a call
// that was never made (apiCode: the API's error code for it).
func refusedBeforeCall(apiCode, msg string) error {
	return temporal.NewNonRetryableApplicationError(msg, ErrTypeCarrierRefused, nil, CarrierFailure{Message: msg, APICode: apiCode})
}

func purchaseGone(msg string) error {
	return temporal.NewNonRetryableApplicationError(msg, ErrTypePurchaseGone, nil)
}

// purchaseIDs parses UUIDs of an activity input (name, value pairs).
func purchaseIDs(pairs ...any) ([]uuid.UUID, error) {
	out := make([]uuid.UUID, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		id, err := uuid.Parse(pairs[i+1].(string))
		if err != nil {
			return nil, temporal.NewNonRetryableApplicationError(pairs[i].(string)+" is not a UUID", ErrTypeInvalidInput, nil)
		}
		out = append(out, id)
	}
	return out, nil
}

// accountAdapter loads a carrier account of the organization with its
// adapter and opened credentials; a deleted or (with active) not active
// account is a non-retryable ErrTypeCarrierRefused.
func (a *ShipmentActivities) accountAdapter(ctx context.Context, orgID, acctID uuid.UUID, active bool) (carriers.Carrier, carriers.Account, error) {
	acct, err := store.CarrierAccountByID(ctx, a.Store.Pool, orgID, acctID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, carriers.Account{}, refusedBeforeCall("carrier_account_not_active", "the carrier account was deleted")
	}
	if err != nil {
		return nil, carriers.Account{}, notCalledYet(ErrTypeCarrierNotSent, "read the carrier account", fmt.Errorf("read carrier account %s: %w", acctID, err))
	}
	if active && acct.Status != store.CarrierAccountActive {
		return nil, carriers.Account{}, refusedBeforeCall("carrier_account_not_active", fmt.Sprintf("carrier account %q is %s; only an active account can be used", acct.Name, acct.Status))
	}
	if a.Secrets == nil {
		return nil, carriers.Account{}, refusedBeforeCall("", "carrier credentials cannot be opened: no encryption key configured")
	}
	adapterAcct, err := store.AdapterAccount(a.Secrets, acct)
	if err != nil {
		return nil, carriers.Account{}, refusedBeforeCall("", "carrier credentials cannot be opened")
	}
	c, err := a.Carriers.Get(acct.Carrier)
	if err != nil {
		return nil, carriers.Account{}, refusedBeforeCall("", err.Error())
	}
	return c, adapterAcct, nil
}

// BuyShipmentLabelInput is the input of BuyShipmentLabel: the label request
// the API validated (its Reference is the shipment id).
type BuyShipmentLabelInput struct {
	OrganizationID   string                `json:"organizationId"`
	ShipmentID       string                `json:"shipmentId"`
	CarrierAccountID string                `json:"carrierAccountId"`
	Request          carriers.LabelRequest `json:"request"`
}

// BuyShipmentLabelResult is the bought label, as the shipment records it.
type BuyShipmentLabelResult struct {
	Label store.ShipmentLabelDoc `json:"label"`
	// AlreadyRecorded: the shipment already holds its label (an earlier
	// run, or an operator's reset); nothing was bought.
	AlreadyRecorded bool `json:"alreadyRecorded"`
}

// BuyShipmentLabel buys the label of a pending shipment: one carrier call,
// with the shipment id as the carrier reference. It buys nothing when the
// shipment is gone or no longer pending (ErrTypePurchaseGone) or already
// holds its label (AlreadyRecorded). A failed call is an ErrTypeCarrier*
// error (see carrierCallError); only ErrTypeCarrierNotSent may be repeated.
func (a *ShipmentActivities) BuyShipmentLabel(ctx context.Context, in BuyShipmentLabelInput) (BuyShipmentLabelResult, error) {
	ids, err := purchaseIDs("organizationId", in.OrganizationID, "shipmentId", in.ShipmentID, "carrierAccountId", in.CarrierAccountID)
	if err != nil {
		return BuyShipmentLabelResult{}, err
	}
	orgID, shipmentID, acctID := ids[0], ids[1], ids[2]
	sh, err := store.ShipmentByID(ctx, a.Store.Pool, orgID, shipmentID)
	if errors.Is(err, store.ErrNotFound) {
		return BuyShipmentLabelResult{}, purchaseGone("the shipment was deleted before its label was bought")
	}
	if err != nil {
		return BuyShipmentLabelResult{}, notCalledYet(ErrTypeCarrierNotSent, "read the shipment", fmt.Errorf("read shipment %s: %w", shipmentID, err))
	}
	if sh.HasLabel() {
		return BuyShipmentLabelResult{AlreadyRecorded: true, Label: store.ShipmentLabelDoc{TrackingNumber: deref(sh.TrackingNumber)}}, nil
	}
	if sh.Status != store.ShipmentPending {
		return BuyShipmentLabelResult{}, purchaseGone("the shipment is " + sh.Status + ", no longer pending its label")
	}
	// A label already bought for this shipment (an earlier execution whose
	// answer was lost, a run reset in the UI) is recorded, not bought again.
	if stashed, found, err := store.StashedShipmentLabel(ctx, a.Store.Pool, orgID, shipmentID); err != nil {
		return BuyShipmentLabelResult{}, notCalledYet(ErrTypeCarrierNotSent, "read the label stash", fmt.Errorf("read the label stash of shipment %s: %w", shipmentID, err))
	} else if found {
		a.log().InfoContext(ctx, "label already bought for this shipment; recording it", "organization_id", orgID, "shipment_id", shipmentID, "tracking_number", stashed.TrackingNumber)
		return BuyShipmentLabelResult{Label: stashed}, nil
	}
	carrier, acct, err := a.accountAdapter(ctx, orgID, acctID, true)
	if err != nil {
		return BuyShipmentLabelResult{}, err
	}
	req := in.Request
	req.Reference = in.ShipmentID
	l, err := carrier.CreateLabel(ctx, acct, req)
	if err != nil {
		a.log().WarnContext(ctx, "label purchase failed", "organization_id", orgID, "shipment_id", shipmentID, "error", err.Error())
		return BuyShipmentLabelResult{}, carrierCallError(err)
	}
	a.log().InfoContext(ctx, "label bought", "organization_id", orgID, "shipment_id", shipmentID, "tracking_number", l.TrackingNumber)
	doc := ShipmentLabelDoc(l)
	// The documents go to the stash at once: they need not travel through
	// Temporal (whatever their size), and a lost answer can be found there.
	// If the stash cannot be written they travel in the result as before.
	if err := store.StashShipmentLabel(ctx, a.Store.Pool, orgID, shipmentID, doc); err != nil {
		a.log().WarnContext(ctx, "label documents not stashed; they travel in the result", "shipment_id", shipmentID, "error", err.Error())
	} else {
		doc.Document, doc.Pieces, doc.Stashed = nil, nil, true
	}
	return BuyShipmentLabelResult{Label: doc}, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ShipmentLabelDoc is what the store keeps of a bought label.
func ShipmentLabelDoc(l *carriers.Label) store.ShipmentLabelDoc {
	cur := l.Currency
	if cur == "" {
		cur = "USD"
	}
	doc := store.ShipmentLabelDoc{
		TrackingNumber: l.TrackingNumber, RateAmount: math.Round(l.TotalPrice*100) / 100, RateCurrency: cur,
		Format: l.Format, ContentType: l.ContentType, Document: l.Document,
	}
	if doc.Format == "" {
		doc.Format = carriers.FormatPDF
	}
	if doc.ContentType == "" {
		doc.ContentType = "application/pdf"
		if doc.Format == carriers.FormatZPL {
			doc.ContentType = "application/x-zpl"
		}
	}
	if !l.ShipDate.IsZero() {
		d := l.ShipDate
		doc.ShipDate = &d
	}
	if len(l.Pieces) > 1 {
		for _, p := range l.Pieces {
			doc.TrackingNumbers = append(doc.TrackingNumbers, p.TrackingNumber)
			doc.Pieces = append(doc.Pieces, p.Document)
		}
		if doc.Format == carriers.FormatZPL {
			// ZPL labels print one after the other from one stream.
			doc.Document = bytes.Join(doc.Pieces, []byte("\n"))
		}
	}
	if len(doc.Document) == 0 && len(l.Pieces) > 0 {
		doc.Document = l.Pieces[0].Document
	}
	raw := l.Raw
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	doc.CarrierResponse, _ = json.Marshal(map[string]any{
		"serviceType": l.ServiceType, "serviceName": l.ServiceName, "zone": l.Zone,
		"estimatedDelivery": l.EstimatedDelivery, "breakdown": l.Breakdown, "trackingNumbers": doc.TrackingNumbers,
		"raw": raw,
	})
	return doc
}

// RecordShipmentLabelInput is the input of RecordShipmentLabel.
type RecordShipmentLabelInput struct {
	OrganizationID string                 `json:"organizationId"`
	ShipmentID     string                 `json:"shipmentId"`
	Label          store.ShipmentLabelDoc `json:"label"`
}

// RecordShipmentLabel records a bought label on its pending shipment
// (label_created). Repeating it changes nothing. A shipment deleted
// meanwhile, or holding another label, is ErrTypePurchaseGone: the label
// must then be voided.
func (a *ShipmentActivities) RecordShipmentLabel(ctx context.Context, in RecordShipmentLabelInput) error {
	ids, err := purchaseIDs("organizationId", in.OrganizationID, "shipmentId", in.ShipmentID)
	if err != nil {
		return err
	}
	sh, err := store.CompleteShipmentLabel(ctx, a.Store.Pool, ids[0], ids[1], in.Label)
	if errors.Is(err, store.ErrNotFound) {
		return purchaseGone("the shipment was deleted while its label was being bought")
	}
	if errors.Is(err, store.ErrLabelStashMissing) {
		return purchaseGone("the label's documents were lost before it was recorded")
	}
	if err != nil {
		return fmt.Errorf("record the label of shipment %s: %w", in.ShipmentID, err)
	}
	if !in.Label.Recorded(sh) {
		return purchaseGone("the shipment is " + sh.Status + " without this label; it cannot take it")
	}
	return nil
}

// VoidShipmentLabelInput is the input of VoidShipmentLabel.
type VoidShipmentLabelInput struct {
	OrganizationID   string `json:"organizationId"`
	CarrierAccountID string `json:"carrierAccountId"`
	TrackingNumber   string `json:"trackingNumber"`
}

// VoidShipmentLabel voids a bought label that could not be recorded (the
// compensation of ShipmentLabel). Voiding is safe to repeat, so every
// failure but a definite refusal is retryable; a label the carrier does not
// know has nothing to void.
func (a *ShipmentActivities) VoidShipmentLabel(ctx context.Context, in VoidShipmentLabelInput) error {
	ids, err := purchaseIDs("organizationId", in.OrganizationID, "carrierAccountId", in.CarrierAccountID)
	if err != nil {
		return err
	}
	carrier, acct, err := a.accountAdapter(ctx, ids[0], ids[1], false)
	if err != nil {
		return err
	}
	if err := carrier.VoidLabel(ctx, acct, in.TrackingNumber); err != nil && !errors.Is(err, carriers.ErrNotFound) {
		return compensationError(err)
	}
	a.log().InfoContext(ctx, "unrecorded label voided", "organization_id", ids[0], "tracking_number", in.TrackingNumber)
	// Its stash goes too, so that no later run records a voided label.
	return store.DropLabelStash(ctx, a.Store.Pool, ids[0], in.TrackingNumber)
}

// FindShipmentLabelInput is the input of FindShipmentLabel.
type FindShipmentLabelInput struct {
	OrganizationID   string `json:"organizationId"`
	CarrierAccountID string `json:"carrierAccountId"`
	Reference        string `json:"reference"`
}

// FindShipmentLabelResult tells what the carrier knows of a label bought
// with a reference.
type FindShipmentLabelResult struct {
	// Supported is false when the carrier offers no lookup by reference.
	Supported      bool   `json:"supported"`
	Found          bool   `json:"found"`
	TrackingNumber string `json:"trackingNumber"`
}

// FindShipmentLabel tells whether a purchase whose answer was lost bought a
// label: from the shipment's label stash (the activity wrote it before its
// answer was lost), else by asking the carrier when it offers a lookup by
// reference (carriers.LabelFinder). Only a label found is conclusive (it is
// then voided): a carrier may index a label some time after selling it.
func (a *ShipmentActivities) FindShipmentLabel(ctx context.Context, in FindShipmentLabelInput) (FindShipmentLabelResult, error) {
	ids, err := purchaseIDs("organizationId", in.OrganizationID, "carrierAccountId", in.CarrierAccountID)
	if err != nil {
		return FindShipmentLabelResult{}, err
	}
	// The purchase stashed what the carrier sold before its answer was lost.
	if shipmentID, perr := uuid.Parse(in.Reference); perr == nil {
		stashed, found, err := store.StashedShipmentLabel(ctx, a.Store.Pool, ids[0], shipmentID)
		if err != nil {
			return FindShipmentLabelResult{}, fmt.Errorf("read the label stash of shipment %s: %w", shipmentID, err)
		}
		if found {
			return FindShipmentLabelResult{Supported: true, Found: true, TrackingNumber: stashed.TrackingNumber}, nil
		}
	}
	carrier, acct, err := a.accountAdapter(ctx, ids[0], ids[1], false)
	if err != nil {
		return FindShipmentLabelResult{}, err
	}
	finder, ok := carrier.(carriers.LabelFinder)
	if !ok {
		return FindShipmentLabelResult{}, nil
	}
	tn, found, err := finder.FindLabel(ctx, acct, in.Reference)
	if err != nil {
		return FindShipmentLabelResult{}, fmt.Errorf("look up the label of reference %s: %s", in.Reference, CarrierErrorMessage(err))
	}
	return FindShipmentLabelResult{Supported: true, Found: found, TrackingNumber: tn}, nil
}

// EndShipmentPurchaseInput is the input of EndShipmentPurchase.
type EndShipmentPurchaseInput struct {
	OrganizationID string `json:"organizationId"`
	ShipmentID     string `json:"shipmentId"`
	// Unknown: the purchase's outcome is unknown (the shipment becomes
	// exception with Reason); else nothing was bought (it is deleted).
	Unknown bool   `json:"unknown"`
	Reason  string `json:"reason"`
}

// EndShipmentPurchase ends a pending shipment whose label was not bought:
// deleted when nothing was bought, exception with the reason when the
// outcome is unknown. A shipment no longer pending is left as it is. The
// reason is stored as a tenant may read it (TenantText): the workflow's
// text may carry a failed record step's error.
func (a *ShipmentActivities) EndShipmentPurchase(ctx context.Context, in EndShipmentPurchaseInput) error {
	ids, err := purchaseIDs("organizationId", in.OrganizationID, "shipmentId", in.ShipmentID)
	if err != nil {
		return err
	}
	if in.Unknown {
		_, err = store.FailPendingShipment(ctx, a.Store.Pool, ids[0], ids[1], TenantText(in.Reason))
	} else {
		_, err = store.DeletePendingShipment(ctx, a.Store.Pool, ids[0], ids[1])
	}
	if err != nil {
		return fmt.Errorf("end the purchase of shipment %s: %w", in.ShipmentID, err)
	}
	return nil
}

// --- reconciliation of rows waiting on a workflow ---

// Workflow ID prefixes of the rows ReconcileShipments checks; the
// workflows package builds its IDs from them (CONTRACT 5 and 8b).
const (
	ShipmentLabelIDPrefix  = "shipment-label/"
	PickupBookingIDPrefix  = "pickup/"
	ShipmentActionIDPrefix = "shipment-action/"
)

// ReconcileBound is how long a shipment, pickup or shipment action may
// stay pending before ReconcileShipments looks at its workflow: far longer
// than a purchase takes (its carrier attempts, the records and the void).
const ReconcileBound = 15 * time.Minute

// reconcileBatch bounds the rows of each kind one run checks.
const reconcileBatch = 500

// ReconcileShipmentsInput is the input of ReconcileShipments.
type ReconcileShipmentsInput struct {
	// OlderThan overrides ReconcileBound (tests).
	OlderThan time.Duration `json:"olderThan,omitempty"`
}

// ReconcileShipmentsResult counts what ReconcileShipments found.
type ReconcileShipmentsResult struct {
	// Running: rows whose workflow still runs (left alone).
	Running int `json:"running"`
	// Removed: rows whose workflow never started (nothing reached the
	// carrier), or whose purchase the carrier proved empty or voided.
	Removed int `json:"removed"`
	// Failed: rows whose workflow ended without recording the outcome
	// (terminated or timed out in the UI, …), marked failed with the reason.
	Failed int `json:"failed"`
}

// ReconcileShipments finds shipments, pickups and shipment actions left
// pending longer than ReconcileBound and reconciles each with its workflow
// (DescribeWaitingRun, the reconciler's one reading of a run): a row whose
// workflow never started
// (the process died between the insert and the start) is removed (a
// shipment or pickup: nothing reached the carrier) or failed with the
// reason (an action); a row whose run ended without recording its outcome
// (terminated or timed out in the UI) is failed with the reason, a label
// first looked up by its reference and voided where the carrier can; a row
// whose run still goes is left alone. Every step is idempotent (each write
// applies only to a row still pending).
func (a *ShipmentActivities) ReconcileShipments(ctx context.Context, in ReconcileShipmentsInput) (ReconcileShipmentsResult, error) {
	c := a.Temporal
	if c == nil {
		c = activity.GetClient(ctx)
	}
	bound := in.OlderThan
	if bound <= 0 {
		bound = ReconcileBound
	}
	cutoff := time.Now().Add(-bound)
	var out ReconcileShipmentsResult
	count := func(removed bool, err error) error {
		if err == nil && removed {
			out.Removed++
		} else if err == nil {
			out.Failed++
		}
		return err
	}
	kinds := []struct {
		prefix string
		list   func(context.Context, store.DBTX, time.Time, int) ([]store.WaitingRow, error)
		settle func(context.Context, store.WaitingRow, WaitingRun) (removed bool, err error)
	}{
		{ShipmentLabelIDPrefix, store.StalePendingShipments, a.settleShipment},
		{PickupBookingIDPrefix, store.StalePendingPickups, a.settlePickup},
		{ShipmentActionIDPrefix, store.StalePendingShipmentActions, a.settleShipmentAction},
	}
	for _, k := range kinds {
		rows, err := k.list(ctx, a.Store.Pool, cutoff, reconcileBatch)
		if err != nil {
			return out, fmt.Errorf("list pending %s rows: %w", strings.TrimSuffix(k.prefix, "/"), err)
		}
		for _, row := range rows {
			run, err := DescribeWaitingRun(ctx, c, k.prefix+row.ID.String(), row.Since)
			if err != nil {
				// Temporal unavailable ends the step (the next run tries
				// again); any other failure is this row's: the others are
				// still settled (as ReconcileKind does).
				if ctx.Err() != nil || isUnavailable(err) {
					return out, err
				}
				a.log().WarnContext(ctx, "reconcile: describe", "workflow_id", k.prefix+row.ID.String(),
					"organization_id", row.OrganizationID, "error", err)
				continue
			}
			if run.Open {
				out.Running++
				continue
			}
			if err := count(k.settle(ctx, row, run)); err != nil {
				return out, err
			}
			a.log().WarnContext(ctx, "pending row reconciled", "workflow_id", k.prefix+row.ID.String(),
				"organization_id", row.OrganizationID, "missing", run.Missing, "reason", run.Reason, "detail", run.Detail)
		}
	}
	return out, nil
}

// settleShipment ends a pending shipment whose label workflow is not
// running.
func (a *ShipmentActivities) settleShipment(ctx context.Context, row store.WaitingRow, run WaitingRun) (bool, error) {
	if run.Missing {
		// The process died before the start: no carrier call happened.
		_, err := store.DeletePendingShipment(ctx, a.Store.Pool, row.OrganizationID, row.ID)
		return true, err
	}
	// The run ended without recording the purchase: the label its
	// activity stashed, else the carrier's lookup where it has one (a label
	// found is voided).
	if sh, err := store.ShipmentByID(ctx, a.Store.Pool, row.OrganizationID, row.ID); err == nil && sh.CarrierAccountID != nil {
		if carrier, acct, err := a.accountAdapter(ctx, row.OrganizationID, *sh.CarrierAccountID, false); err == nil {
			stashed, found, err := store.StashedShipmentLabel(ctx, a.Store.Pool, row.OrganizationID, row.ID)
			if err != nil {
				return false, err // looked at again by the next run
			}
			tn, ferr := stashed.TrackingNumber, error(nil)
			if finder, ok := carrier.(carriers.LabelFinder); ok && !found {
				tn, found, ferr = finder.FindLabel(ctx, acct, row.ID.String())
			}
			// Only a label found and voided settles it: not found proves
			// nothing.
			if ferr == nil && found {
				if verr := carrier.VoidLabel(ctx, acct, tn); verr == nil || errors.Is(verr, carriers.ErrNotFound) {
					if err := store.DropLabelStash(ctx, a.Store.Pool, row.OrganizationID, tn); err != nil {
						return false, err
					}
					_, err := store.DeletePendingShipment(ctx, a.Store.Pool, row.OrganizationID, row.ID)
					return true, err
				}
				_, err := store.FailPendingShipment(ctx, a.Store.Pool, row.OrganizationID, row.ID, fmt.Sprintf(
					"the label purchase stopped before its outcome was recorded (%s); the label %s was bought and could not be voided: void it with the carrier", run.Reason, tn))
				return false, err
			}
		}
	}
	_, err := store.FailPendingShipment(ctx, a.Store.Pool, row.OrganizationID, row.ID, fmt.Sprintf(
		"the label purchase stopped before its outcome was recorded (%s): the label may or may not have been bought; check with the carrier (the label's reference is %s)", run.Reason, row.ID))
	return false, err
}

// settlePickup ends a pending pickup whose booking workflow is not
// running.
func (a *ShipmentActivities) settlePickup(ctx context.Context, row store.WaitingRow, run WaitingRun) (bool, error) {
	if run.Missing {
		_, err := store.DeletePendingPickup(ctx, a.Store.Pool, row.OrganizationID, row.ID)
		return true, err
	}
	_, err := store.FailPendingPickup(ctx, a.Store.Pool, row.OrganizationID, row.ID, fmt.Sprintf(
		"the pickup booking stopped before its outcome was recorded (%s): the pickup may or may not have been booked; check with the carrier", run.Reason))
	return false, err
}

// settleShipmentAction fails a pending action whose workflow is not
// running.
func (a *ShipmentActivities) settleShipmentAction(ctx context.Context, row store.WaitingRow, run WaitingRun) (bool, error) {
	msg := "the action was never sent to the carrier (the service stopped before its workflow started); send it again"
	if !run.Missing {
		msg = fmt.Sprintf("the action stopped before the carrier's answer was recorded (%s): the change may or may not have been made; check with the carrier", run.Reason)
	}
	_, err := store.FinishShipmentAction(ctx, a.Store.Pool, row.OrganizationID, row.ID, store.ShipmentActionOutcome{Status: store.ShipmentActionFailed, Error: msg})
	if errors.Is(err, store.ErrNotFound) {
		err = nil
	}
	return false, err
}
