package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/shipping"
)

// PickupBooking books a carrier pickup (CONTRACT 8b) the way ShipmentLabel
// buys a label: the API inserts the pickup as pending, starts the run with
// update-with-start and waits for PurchaseUpdateResult. The booking is one
// activity attempt, repeated only when the call never reached the carrier;
// an unknown outcome ends the pickup failed with the reason; a booking that
// cannot be recorded is cancelled with the carrier by a compensation inside
// the workflow.
//
// PickupCancel cancels a confirmed pickup with the carrier (a cancellation
// is safe to repeat, so it is retried) and records it with a
// compare-and-set; the API waits for its result.
const (
	PickupBookingWorkflowType = "PickupBooking"
	PickupCancelWorkflowType  = "PickupCancel"
)

// PickupBookingWorkflowID is the stable workflow ID of a pickup's booking
// (CONTRACT 8b); PickupCancelWorkflowID that of its cancellation.
func PickupBookingWorkflowID(pickupID string) string {
	return activities.PickupBookingIDPrefix + pickupID
}

// PickupCancelWorkflowID is the stable workflow ID of a pickup's
// cancellation: concurrent requests share one run.
func PickupCancelWorkflowID(pickupID string) string { return "pickup-cancel/" + pickupID }

// PickupBookingInput is the input of PickupBooking: the booking request
// the API validated.
type PickupBookingInput struct {
	OrganizationID   string                 `json:"organizationId"`
	PickupID         string                 `json:"pickupId"`
	CarrierAccountID string                 `json:"carrierAccountId"`
	Request          carriers.PickupRequest `json:"request"`
}

// PickupUnknownMessage is the reason of a booking whose outcome is unknown.
const PickupUnknownMessage = shipping.PickupUnknownMessage

// PickupBooking books, records (or cancels) a pickup.
func PickupBooking(ctx workflow.Context, in PickupBookingInput) (PurchaseResult, error) {
	return servePurchase(ctx, func(ctx workflow.Context) PurchaseResult { return bookPickup(ctx, in) })
}

func bookPickup(ctx workflow.Context, in PickupBookingInput) PurchaseResult {
	var a *activities.ShipmentActivities
	var booked activities.BookPickupResult
	return purchase{
		id: in.PickupID, words: shipping.PickupWords, unknown: PickupUnknownMessage,
		buy: func(ctx workflow.Context) (string, []string, bool, error) {
			err := spendOnce(ctx, a.BookPickup, activities.BookPickupInput{
				OrganizationID: in.OrganizationID, PickupID: in.PickupID, CarrierAccountID: in.CarrierAccountID, Request: in.Request,
			}, &booked)
			return booked.Booking.ConfirmationNumber, booked.Booking.Messages, booked.AlreadyRecorded, err
		},
		record: func(ctx workflow.Context) error {
			return workflow.ExecuteLocalActivity(ctx, a.RecordPickupBooking, activities.RecordPickupBookingInput{
				OrganizationID: in.OrganizationID, PickupID: in.PickupID, Booking: booked.Booking,
			}).Get(ctx, nil)
		},
		undo: func(ctx workflow.Context, confirmation string) error {
			return workflow.ExecuteActivity(ctx, a.CancelBookedPickup, activities.CancelBookedPickupInput{
				OrganizationID: in.OrganizationID, CarrierAccountID: in.CarrierAccountID, ConfirmationNumber: confirmation,
				PickupDate: in.Request.PickupDate, Location: booked.Booking.Location, Reason: "the booking could not be recorded",
			}).Get(ctx, nil)
		},
		end: func(ctx workflow.Context, unknown bool, reason string) error {
			return workflow.ExecuteLocalActivity(ctx, a.EndPickupBooking, activities.EndPickupBookingInput{
				OrganizationID: in.OrganizationID, PickupID: in.PickupID, Unknown: unknown, Reason: reason,
			}).Get(ctx, nil)
		},
	}.run(ctx)
}

// cancelPickupOptions: a cancellation is safe to repeat (a repeated one is
// PICKUP.ALREADY.CANCELLED), so failures that are not definite refusals are
// retried a few times while the client waits.
var cancelPickupOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 40 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:    500 * time.Millisecond,
		BackoffCoefficient: 2,
		MaximumAttempts:    3,
		NonRetryableErrorTypes: []string{activities.ErrTypeCarrierRefused, activities.ErrTypePickupNotCancellable,
			activities.ErrTypePurchaseGone, activities.ErrTypeInvalidInput},
	},
}

// PickupCancel cancels a pickup with the carrier and records it; its
// failure is the activity's (see activities.CancelPickup).
func PickupCancel(ctx workflow.Context, in activities.CancelPickupInput) (activities.CancelPickupResult, error) {
	var a *activities.ShipmentActivities
	var res activities.CancelPickupResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, cancelPickupOptions), a.CancelPickup, in).Get(ctx, &res)
	return res, err
}
