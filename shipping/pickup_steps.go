package shipping

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/store"
)

// The steps of a pickup booking (the Course of PickupBooking) and of a
// pickup's cancellation (PickupCancel). As the label steps, they are
// idempotent and not entry points.

// ErrTypePickupNotCancellable: the pickup is not confirmed (completed or
// cancelled), so it cannot be cancelled.
const ErrTypePickupNotCancellable = "PickupNotCancellable"

// PickupBooking is what a pickup keeps of the carrier's booking (its
// carrierResponse): the location is needed to cancel an express pickup.
// Its JSON is stable (workflow payloads, stored responses).
type PickupBooking struct {
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

// BookPickupInput is a booking to make for a pending pickup.
type BookPickupInput struct {
	OrganizationID   uuid.UUID
	PickupID         uuid.UUID
	CarrierAccountID uuid.UUID
	Request          carriers.PickupRequest
}

// BookPickupResult is the carrier's booking.
type BookPickupResult struct {
	Booking PickupBooking `json:"booking"`
	// AlreadyRecorded: the pickup is already booked (an earlier run, or an
	// operator's reset); nothing was booked.
	AlreadyRecorded bool `json:"alreadyRecorded"`
}

// BookWithCarrier books a pending pickup with the carrier: one call. It books
// nothing when the pickup is gone or no longer pending
// (ErrTypePurchaseGone) or already booked (AlreadyRecorded). A failed call
// is a StepError; only ErrTypeCarrierNotSent may be repeated.
func (s *Service) BookWithCarrier(ctx context.Context, in BookPickupInput) (BookPickupResult, error) {
	p, err := store.PickupByID(ctx, s.store.Pool, in.OrganizationID, in.PickupID)
	if errors.Is(err, store.ErrNotFound) {
		return BookPickupResult{}, purchaseGone("the pickup was deleted before it was booked")
	}
	if err != nil {
		return BookPickupResult{}, notCalledYet(ErrTypeCarrierNotSent, "read the pickup", fmt.Errorf("read pickup %s: %w", in.PickupID, err))
	}
	if p.Status != store.PickupPending {
		if p.ConfirmationNumber != nil {
			return BookPickupResult{AlreadyRecorded: true, Booking: PickupBooking{ConfirmationNumber: *p.ConfirmationNumber}}, nil
		}
		return BookPickupResult{}, purchaseGone("the pickup is " + p.Status + ", no longer pending its booking")
	}
	carrier, acct, err := s.accountAdapter(ctx, in.OrganizationID, in.CarrierAccountID, true)
	if err != nil {
		return BookPickupResult{}, err
	}
	res, err := carrier.CreatePickup(ctx, acct, in.Request)
	if err != nil {
		s.log.WarnContext(ctx, "pickup booking failed", "organization_id", in.OrganizationID, "pickup_id", in.PickupID, "error", err.Error())
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
	s.log.InfoContext(ctx, "pickup booked", "organization_id", in.OrganizationID, "pickup_id", in.PickupID, "confirmation_number", res.ConfirmationNumber)
	return BookPickupResult{Booking: PickupBooking{ConfirmationNumber: res.ConfirmationNumber, Location: res.Location, Messages: msgs, Raw: raw}}, nil
}

// RecordPickupBooking records the carrier's booking on its pending pickup
// (confirmed). Repeating it changes nothing. A pickup deleted meanwhile, or
// holding another booking, is ErrTypePurchaseGone: the booking must then be
// cancelled with the carrier.
func (s *Service) RecordPickupBooking(ctx context.Context, orgID, pickupID uuid.UUID, booking PickupBooking) error {
	answer, err := json.Marshal(booking)
	if err != nil {
		return invalidInput("the booking cannot be encoded", err)
	}
	p, err := store.ConfirmPickup(ctx, s.store.Pool, orgID, pickupID, booking.ConfirmationNumber, answer)
	if errors.Is(err, store.ErrNotFound) {
		return purchaseGone("the pickup was deleted while it was being booked")
	}
	if err != nil {
		return fmt.Errorf("record the booking of pickup %s: %w", pickupID, err)
	}
	if p.ConfirmationNumber == nil || *p.ConfirmationNumber != booking.ConfirmationNumber {
		return purchaseGone("the pickup is " + p.Status + " without this booking; it cannot take it")
	}
	return nil
}

// CancelBookedPickupInput is a booking to cancel with the carrier.
type CancelBookedPickupInput struct {
	OrganizationID     uuid.UUID
	CarrierAccountID   uuid.UUID
	ConfirmationNumber string
	PickupDate         string
	Location           string
	Reason             string
}

// CancelBookedPickup cancels with the carrier a booking that could not be
// recorded (the compensation of PickupBooking). Cancelling is safe to
// repeat (a repeated one is PICKUP.ALREADY.CANCELLED), so every failure but
// a definite refusal may be repeated.
func (s *Service) CancelBookedPickup(ctx context.Context, in CancelBookedPickupInput) error {
	carrier, acct, err := s.accountAdapter(ctx, in.OrganizationID, in.CarrierAccountID, false)
	if err != nil {
		return err
	}
	_, err = carrier.CancelPickup(ctx, acct, carriers.CancelPickupRequest{ConfirmationNumber: in.ConfirmationNumber,
		PickupDate: in.PickupDate, Location: in.Location, Reason: in.Reason})
	return cancelPickupError(err)
}

// cancelPickupError maps a carrier cancellation's failure: none (also when
// the carrier reports it already cancelled), repeatable when the outcome
// is unknown or the call never left (cancelling again is safe), else a
// definite refusal.
func cancelPickupError(err error) error {
	if err == nil || PickupAlreadyCancelled(err) {
		return nil
	}
	return compensationError(err)
}

// EndPickupBooking ends a pending pickup that was not booked: deleted when
// nothing was booked, failed with the reason when the outcome is unknown.
// A pickup no longer pending is left as it is. The reason is stored as a
// tenant may read it (domain.TenantText).
func (s *Service) EndPickupBooking(ctx context.Context, orgID, pickupID uuid.UUID, unknown bool, reason string) error {
	var err error
	if unknown {
		_, err = store.FailPendingPickup(ctx, s.store.Pool, orgID, pickupID, domain.TenantText(reason))
	} else {
		_, err = store.DeletePendingPickup(ctx, s.store.Pool, orgID, pickupID)
	}
	if err != nil {
		return fmt.Errorf("end the booking of pickup %s: %w", pickupID, err)
	}
	return nil
}

// CancelPickupResult is the carrier's answer to a cancellation.
type CancelPickupResult struct {
	Messages []string `json:"messages"`
}

// CancelConfirmedPickup cancels a confirmed pickup with the carrier, then
// records it with a compare-and-set (confirmed → cancelled): no row lock
// or transaction is held across the carrier call, and a repeated
// cancellation is harmless (the carrier reports it already cancelled). A
// pickup not confirmed is ErrTypePickupNotCancellable; a gone one
// ErrTypePurchaseGone; a carrier refusal ErrTypeCarrierRefused (the pickup
// stays confirmed).
func (s *Service) CancelConfirmedPickup(ctx context.Context, orgID, id uuid.UUID, reason string) (CancelPickupResult, error) {
	p, err := store.PickupByID(ctx, s.store.Pool, orgID, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && !p.Visible() {
		return CancelPickupResult{}, purchaseGone("pickup not found")
	}
	if err != nil {
		return CancelPickupResult{}, fmt.Errorf("read pickup %s: %w", id, err)
	}
	if st := p.StatusOn(time.Now()); st != store.PickupConfirmed {
		return CancelPickupResult{}, &StepError{Type: ErrTypePickupNotCancellable, Message: "only a confirmed pickup can be cancelled; this one is " + st, NonRetryable: true}
	}
	gone := refusedBeforeCall("carrier_account_not_active", "the pickup's carrier account was deleted; it cannot be cancelled with the carrier")
	if p.CarrierAccountID == nil {
		return CancelPickupResult{}, gone
	}
	carrier, acct, err := s.accountAdapter(ctx, orgID, *p.CarrierAccountID, false)
	if err != nil {
		if StepErrorType(err) == ErrTypeCarrierRefused {
			return CancelPickupResult{}, gone
		}
		return CancelPickupResult{}, err
	}
	var booked PickupBooking
	_ = json.Unmarshal(p.CarrierResponse, &booked)
	res, err := carrier.CancelPickup(ctx, acct, carriers.CancelPickupRequest{
		ConfirmationNumber: deref(p.ConfirmationNumber), PickupDate: p.PickupDate.Format("2006-01-02"),
		Location: booked.Location, Reason: reason,
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
	var why *string
	if reason != "" {
		why = &reason
	}
	if _, err := store.MarkPickupCancelled(ctx, s.store.Pool, orgID, id, why, answer); err != nil && !errors.Is(err, store.ErrNotFound) {
		return CancelPickupResult{}, fmt.Errorf("record the cancellation of pickup %s: %w", id, err)
	}
	// ErrNotFound: no longer confirmed; a concurrent cancellation recorded it.
	if msgs == nil {
		msgs = []string{}
	}
	return CancelPickupResult{Messages: msgs}, nil
}
