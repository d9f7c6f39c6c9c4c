package activities

import (
	"context"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/shipping"
)

// ErrTypePickupNotCancellable: the pickup is not confirmed (completed or
// cancelled), so it cannot be cancelled.
const ErrTypePickupNotCancellable = shipping.ErrTypePickupNotCancellable

// PickupCarrierResponse is what a pickup keeps of the carrier's booking
// (carrierResponse): the location is needed to cancel an express pickup.
type PickupCarrierResponse = shipping.PickupBooking

// PickupAlreadyCancelled: carrier_a answers a repeated cancellation with
// PICKUP.ALREADY.CANCELLED; the pickup is cancelled either way.
func PickupAlreadyCancelled(err error) bool { return shipping.PickupAlreadyCancelled(err) }

// BookPickupInput is the input of BookPickup: the booking request the API
// validated.
type BookPickupInput struct {
	OrganizationID   string                 `json:"organizationId"`
	PickupID         string                 `json:"pickupId"`
	CarrierAccountID string                 `json:"carrierAccountId"`
	Request          carriers.PickupRequest `json:"request"`
}

// BookPickupResult is the carrier's booking.
type BookPickupResult = shipping.BookPickupResult

// BookPickup books a pending pickup with the carrier
// (shipping.Service.BookWithCarrier): one call; only ErrTypeCarrierNotSent may
// be repeated.
func (a *ShipmentActivities) BookPickup(ctx context.Context, in BookPickupInput) (BookPickupResult, error) {
	defer priorityOf(a.Priority).Begin(PriorityInteractive)()
	ids, err := purchaseIDs("organizationId", in.OrganizationID, "pickupId", in.PickupID, "carrierAccountId", in.CarrierAccountID)
	if err != nil {
		return BookPickupResult{}, err
	}
	res, err := a.shipping().BookWithCarrier(ctx, shipping.BookPickupInput{OrganizationID: ids[0], PickupID: ids[1], CarrierAccountID: ids[2], Request: in.Request})
	return res, stepError(err)
}

// RecordPickupBookingInput is the input of RecordPickupBooking.
type RecordPickupBookingInput struct {
	OrganizationID string                `json:"organizationId"`
	PickupID       string                `json:"pickupId"`
	Booking        PickupCarrierResponse `json:"booking"`
}

// RecordPickupBooking records the carrier's booking on its pending pickup
// (shipping.Service.RecordPickupBooking).
func (a *ShipmentActivities) RecordPickupBooking(ctx context.Context, in RecordPickupBookingInput) error {
	defer priorityOf(a.Priority).Begin(PriorityInteractive)()
	ids, err := purchaseIDs("organizationId", in.OrganizationID, "pickupId", in.PickupID)
	if err != nil {
		return err
	}
	return stepError(a.shipping().RecordPickupBooking(ctx, ids[0], ids[1], in.Booking))
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
// recorded (shipping.Service.CancelBookedPickup).
func (a *ShipmentActivities) CancelBookedPickup(ctx context.Context, in CancelBookedPickupInput) error {
	defer priorityOf(a.Priority).Begin(PriorityInteractive)()
	ids, err := purchaseIDs("organizationId", in.OrganizationID, "carrierAccountId", in.CarrierAccountID)
	if err != nil {
		return err
	}
	return stepError(a.shipping().CancelBookedPickup(ctx, shipping.CancelBookedPickupInput{
		OrganizationID: ids[0], CarrierAccountID: ids[1], ConfirmationNumber: in.ConfirmationNumber,
		PickupDate: in.PickupDate, Location: in.Location, Reason: in.Reason,
	}))
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

// EndPickupBooking ends a pending pickup that was not booked
// (shipping.Service.EndPickupBooking).
func (a *ShipmentActivities) EndPickupBooking(ctx context.Context, in EndPickupBookingInput) error {
	defer priorityOf(a.Priority).Begin(PriorityInteractive)()
	ids, err := purchaseIDs("organizationId", in.OrganizationID, "pickupId", in.PickupID)
	if err != nil {
		return err
	}
	return stepError(a.shipping().EndPickupBooking(ctx, ids[0], ids[1], in.Unknown, in.Reason))
}

// CancelPickupInput is the input of CancelPickup.
type CancelPickupInput struct {
	OrganizationID string `json:"organizationId"`
	PickupID       string `json:"pickupId"`
	Reason         string `json:"reason"`
}

// CancelPickupResult is the carrier's answer to a cancellation.
type CancelPickupResult = shipping.CancelPickupResult

// CancelPickup cancels a confirmed pickup with the carrier and records it
// (shipping.Service.CancelConfirmedPickup).
func (a *ShipmentActivities) CancelPickup(ctx context.Context, in CancelPickupInput) (CancelPickupResult, error) {
	defer priorityOf(a.Priority).Begin(PriorityInteractive)()
	ids, err := purchaseIDs("organizationId", in.OrganizationID, "pickupId", in.PickupID)
	if err != nil {
		return CancelPickupResult{}, err
	}
	res, err := a.shipping().CancelConfirmedPickup(ctx, ids[0], ids[1], in.Reason)
	return res, stepError(err)
}
