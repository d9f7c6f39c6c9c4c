package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/store"
)

// ErrTypePickupNotCancellable: the pickup is not confirmed (completed or
// cancelled), so it cannot be cancelled.
const ErrTypePickupNotCancellable = "PickupNotCancellable"

// PickupCarrierResponse is what a pickup keeps of the carrier's booking
// (carrierResponse): the location is needed to cancel an express pickup.
type PickupCarrierResponse struct {
	ConfirmationNumber string          `json:"confirmationNumber"`
	Location           string          `json:"location"`
	Messages           []string        `json:"messages"`
	Raw                json.RawMessage `json:"raw"`
}

// PickupAlreadyCancelled: carrier_a answers a repeated cancellation with
// PICKUP.ALREADY.CANCELLED (e.g. an earlier cancellation whose answer was
// lost); the pickup is cancelled either way.
func PickupAlreadyCancelled(err error) bool {
	ce, ok := carriers.AsError(err)
	return ok && ce.Code == "PICKUP.ALREADY.CANCELLED"
}

// BookPickupInput is the input of BookPickup: the booking request the API
// validated.
type BookPickupInput struct {
	OrganizationID   string                 `json:"organizationId"`
	PickupID         string                 `json:"pickupId"`
	CarrierAccountID string                 `json:"carrierAccountId"`
	Request          carriers.PickupRequest `json:"request"`
}

// BookPickupResult is the carrier's booking.
type BookPickupResult struct {
	Booking PickupCarrierResponse `json:"booking"`
	// AlreadyRecorded: the pickup is already booked (an earlier run, or an
	// operator's reset); nothing was booked.
	AlreadyRecorded bool `json:"alreadyRecorded"`
}

// BookPickup books a pending pickup with the carrier: one call. It books
// nothing when the pickup is gone or no longer pending
// (ErrTypePurchaseGone) or already booked (AlreadyRecorded). A failed call
// is an ErrTypeCarrier* error; only ErrTypeCarrierNotSent may be repeated.
func (a *ShipmentActivities) BookPickup(ctx context.Context, in BookPickupInput) (BookPickupResult, error) {
	ids, err := purchaseIDs("organizationId", in.OrganizationID, "pickupId", in.PickupID, "carrierAccountId", in.CarrierAccountID)
	if err != nil {
		return BookPickupResult{}, err
	}
	p, err := store.PickupByID(ctx, a.Store.Pool, ids[0], ids[1])
	if errors.Is(err, store.ErrNotFound) {
		return BookPickupResult{}, purchaseGone("the pickup was deleted before it was booked")
	}
	if err != nil {
		return BookPickupResult{}, notCalledYet(ErrTypeCarrierNotSent, "read the pickup", fmt.Errorf("read pickup %s: %w", in.PickupID, err))
	}
	if p.Status != store.PickupPending {
		if p.ConfirmationNumber != nil {
			return BookPickupResult{AlreadyRecorded: true, Booking: PickupCarrierResponse{ConfirmationNumber: *p.ConfirmationNumber}}, nil
		}
		return BookPickupResult{}, purchaseGone("the pickup is " + p.Status + ", no longer pending its booking")
	}
	carrier, acct, err := a.accountAdapter(ctx, ids[0], ids[2], true)
	if err != nil {
		return BookPickupResult{}, err
	}
	res, err := carrier.CreatePickup(ctx, acct, in.Request)
	if err != nil {
		a.log().WarnContext(ctx, "pickup booking failed", "organization_id", ids[0], "pickup_id", ids[1], "error", err.Error())
		return BookPickupResult{}, carrierCallError(err)
	}
	msgs := res.Messages
	if msgs == nil {
		msgs = []string{}
	}
	raw := res.Raw
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	a.log().InfoContext(ctx, "pickup booked", "organization_id", ids[0], "pickup_id", ids[1], "confirmation_number", res.ConfirmationNumber)
	return BookPickupResult{Booking: PickupCarrierResponse{ConfirmationNumber: res.ConfirmationNumber, Location: res.Location, Messages: msgs, Raw: raw}}, nil
}

// RecordPickupBookingInput is the input of RecordPickupBooking.
type RecordPickupBookingInput struct {
	OrganizationID string                `json:"organizationId"`
	PickupID       string                `json:"pickupId"`
	Booking        PickupCarrierResponse `json:"booking"`
}

// RecordPickupBooking records the carrier's booking on its pending pickup
// (confirmed). Repeating it changes nothing. A pickup deleted meanwhile, or
// holding another booking, is ErrTypePurchaseGone: the booking must then be
// cancelled with the carrier.
func (a *ShipmentActivities) RecordPickupBooking(ctx context.Context, in RecordPickupBookingInput) error {
	ids, err := purchaseIDs("organizationId", in.OrganizationID, "pickupId", in.PickupID)
	if err != nil {
		return err
	}
	answer, err := json.Marshal(in.Booking)
	if err != nil {
		return temporal.NewNonRetryableApplicationError("the booking cannot be encoded", ErrTypeInvalidInput, err)
	}
	p, err := store.ConfirmPickup(ctx, a.Store.Pool, ids[0], ids[1], in.Booking.ConfirmationNumber, answer)
	if errors.Is(err, store.ErrNotFound) {
		return purchaseGone("the pickup was deleted while it was being booked")
	}
	if err != nil {
		return fmt.Errorf("record the booking of pickup %s: %w", in.PickupID, err)
	}
	if p.ConfirmationNumber == nil || *p.ConfirmationNumber != in.Booking.ConfirmationNumber {
		return purchaseGone("the pickup is " + p.Status + " without this booking; it cannot take it")
	}
	return nil
}

// CancelBookedPickupInput is the input of CancelBookedPickup.
type CancelBookedPickupInput struct {
	OrganizationID     string `json:"organizationId"`
	CarrierAccountID   string `json:"carrierAccountId"`
	ConfirmationNumber string `json:"confirmationNumber"`
	PickupDate         string `json:"pickupDate"`
	Location           string `json:"location"`
	Reason             string `json:"reason"`
}

// CancelBookedPickup cancels with the carrier a booking that could not be
// recorded (the compensation of PickupBooking). Cancelling is safe to
// repeat (a repeated one is PICKUP.ALREADY.CANCELLED), so every failure but
// a definite refusal is retryable.
func (a *ShipmentActivities) CancelBookedPickup(ctx context.Context, in CancelBookedPickupInput) error {
	ids, err := purchaseIDs("organizationId", in.OrganizationID, "carrierAccountId", in.CarrierAccountID)
	if err != nil {
		return err
	}
	carrier, acct, err := a.accountAdapter(ctx, ids[0], ids[1], false)
	if err != nil {
		return err
	}
	_, err = carrier.CancelPickup(ctx, acct, carriers.CancelPickupRequest{ConfirmationNumber: in.ConfirmationNumber,
		PickupDate: in.PickupDate, Location: in.Location, Reason: in.Reason})
	return cancelPickupError(err)
}

// cancelPickupError maps a carrier cancellation's failure: none (also when
// the carrier reports it already cancelled), retryable when the outcome is
// unknown or the call never left (cancelling again is safe), else a
// non-retryable ErrTypeCarrierRefused with a CarrierFailure.
func cancelPickupError(err error) error {
	if err == nil || PickupAlreadyCancelled(err) {
		return nil
	}
	return compensationError(err)
}

// compensationError classifies a failed void or cancellation, which is
// safe to repeat: a call that never arrived or was not answered is retried
// (ErrTypeCarrierOutcomeUnknown), a definite refusal is not.
func compensationError(err error) error {
	if carriers.NotSent(err) || carriers.Unanswered(err) {
		return temporal.NewApplicationErrorWithCause(CarrierErrorMessage(err), ErrTypeCarrierOutcomeUnknown, err, CarrierFailureOf(err))
	}
	return temporal.NewNonRetryableApplicationError(CarrierErrorMessage(err), ErrTypeCarrierRefused, err, CarrierFailureOf(err))
}

// EndPickupBookingInput is the input of EndPickupBooking.
type EndPickupBookingInput struct {
	OrganizationID string `json:"organizationId"`
	PickupID       string `json:"pickupId"`
	// Unknown: the booking's outcome is unknown (the pickup becomes failed
	// with Reason); else nothing was booked (it is deleted).
	Unknown bool   `json:"unknown"`
	Reason  string `json:"reason"`
}

// EndPickupBooking ends a pending pickup that was not booked: deleted when
// nothing was booked, failed with the reason when the outcome is unknown.
// A pickup no longer pending is left as it is. The reason is stored as a
// tenant may read it (TenantText).
func (a *ShipmentActivities) EndPickupBooking(ctx context.Context, in EndPickupBookingInput) error {
	ids, err := purchaseIDs("organizationId", in.OrganizationID, "pickupId", in.PickupID)
	if err != nil {
		return err
	}
	if in.Unknown {
		_, err = store.FailPendingPickup(ctx, a.Store.Pool, ids[0], ids[1], TenantText(in.Reason))
	} else {
		_, err = store.DeletePendingPickup(ctx, a.Store.Pool, ids[0], ids[1])
	}
	if err != nil {
		return fmt.Errorf("end the booking of pickup %s: %w", in.PickupID, err)
	}
	return nil
}

// CancelPickupInput is the input of CancelPickup.
type CancelPickupInput struct {
	OrganizationID string `json:"organizationId"`
	PickupID       string `json:"pickupId"`
	Reason         string `json:"reason"`
}

// CancelPickupResult is the carrier's answer to a cancellation.
type CancelPickupResult struct {
	Messages []string `json:"messages"`
}

// CancelPickup cancels a confirmed pickup with the carrier, then records it
// with a compare-and-set (confirmed → cancelled): no row lock or
// transaction is held across the carrier call, and a repeated cancellation
// is harmless (the carrier reports it already cancelled). A pickup not
// confirmed is ErrTypePickupNotCancellable; a gone one ErrTypePurchaseGone;
// a carrier refusal ErrTypeCarrierRefused (the pickup stays confirmed).
func (a *ShipmentActivities) CancelPickup(ctx context.Context, in CancelPickupInput) (CancelPickupResult, error) {
	ids, err := purchaseIDs("organizationId", in.OrganizationID, "pickupId", in.PickupID)
	if err != nil {
		return CancelPickupResult{}, err
	}
	orgID, id := ids[0], ids[1]
	p, err := store.PickupByID(ctx, a.Store.Pool, orgID, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && !p.Visible() {
		return CancelPickupResult{}, purchaseGone("pickup not found")
	}
	if err != nil {
		return CancelPickupResult{}, fmt.Errorf("read pickup %s: %w", in.PickupID, err)
	}
	if st := p.StatusOn(time.Now()); st != store.PickupConfirmed {
		return CancelPickupResult{}, temporal.NewNonRetryableApplicationError("only a confirmed pickup can be cancelled; this one is "+st, ErrTypePickupNotCancellable, nil)
	}
	if p.CarrierAccountID == nil {
		return CancelPickupResult{}, refusedBeforeCall("carrier_account_not_active", "the pickup's carrier account was deleted; it cannot be cancelled with the carrier")
	}
	carrier, acct, err := a.accountAdapter(ctx, orgID, *p.CarrierAccountID, false)
	if err != nil {
		var appErr *temporal.ApplicationError
		if errors.As(err, &appErr) && appErr.Type() == ErrTypeCarrierRefused {
			return CancelPickupResult{}, refusedBeforeCall("carrier_account_not_active", "the pickup's carrier account was deleted; it cannot be cancelled with the carrier")
		}
		return CancelPickupResult{}, err
	}
	var booked PickupCarrierResponse
	_ = json.Unmarshal(p.CarrierResponse, &booked)
	res, err := carrier.CancelPickup(ctx, acct, carriers.CancelPickupRequest{
		ConfirmationNumber: deref(p.ConfirmationNumber), PickupDate: p.PickupDate.Format("2006-01-02"),
		Location: booked.Location, Reason: in.Reason,
	})
	if cerr := cancelPickupError(err); cerr != nil {
		return CancelPickupResult{}, cerr
	}
	var msgs []string
	var answer json.RawMessage
	if err == nil {
		raw := res.Raw
		if len(raw) == 0 {
			raw = json.RawMessage("null")
		}
		msgs = res.Messages
		answer, _ = json.Marshal(map[string]any{"messages": res.Messages, "raw": raw})
	} else {
		msgs = []string{"the carrier reports the pickup as already cancelled"}
		answer, _ = json.Marshal(map[string]any{"messages": msgs, "raw": nil})
	}
	var reason *string
	if in.Reason != "" {
		reason = &in.Reason
	}
	if _, err := store.MarkPickupCancelled(ctx, a.Store.Pool, orgID, id, reason, answer); err != nil && !errors.Is(err, store.ErrNotFound) {
		return CancelPickupResult{}, fmt.Errorf("record the cancellation of pickup %s: %w", in.PickupID, err)
	}
	// ErrNotFound: no longer confirmed; a concurrent cancellation recorded it.
	if msgs == nil {
		msgs = []string{}
	}
	return CancelPickupResult{Messages: msgs}, nil
}
