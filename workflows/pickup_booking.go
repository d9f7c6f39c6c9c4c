package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/carriers"
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
const PickupUnknownMessage = "the carrier did not answer; the pickup may or may not have been booked: check with the carrier before booking it again"

// PickupBooking books, records (or cancels) a pickup.
func PickupBooking(ctx workflow.Context, in PickupBookingInput) (PurchaseResult, error) {
	return servePurchase(ctx, func(ctx workflow.Context) PurchaseResult { return bookPickup(ctx, in) })
}

func bookPickup(ctx workflow.Context, in PickupBookingInput) PurchaseResult {
	log := workflow.GetLogger(ctx)
	var a *activities.ShipmentActivities
	out := PurchaseResult{ID: in.PickupID}
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	rctx := workflow.WithLocalActivityOptions(dctx, recordPurchaseOptions)
	end := func(unknown bool, reason string) {
		if err := workflow.ExecuteLocalActivity(rctx, a.EndPickupBooking, activities.EndPickupBookingInput{
			OrganizationID: in.OrganizationID, PickupID: in.PickupID, Unknown: unknown, Reason: reason,
		}).Get(rctx, nil); err != nil {
			log.Warn("could not end the pending pickup; the reconciler will", "PickupId", in.PickupID, "Error", err)
		}
	}

	var booked activities.BookPickupResult
	err := spendOnce(ctx, a.BookPickup, activities.BookPickupInput{
		OrganizationID: in.OrganizationID, PickupID: in.PickupID, CarrierAccountID: in.CarrierAccountID, Request: in.Request,
	}, &booked)
	switch typ := errorType(err); {
	case err == nil && booked.AlreadyRecorded:
		out.Outcome, out.Reference = PurchaseDone, booked.Booking.ConfirmationNumber
		return out
	case err == nil:
		out.Reference, out.Messages = booked.Booking.ConfirmationNumber, booked.Booking.Messages
		rerr := workflow.ExecuteLocalActivity(rctx, a.RecordPickupBooking, activities.RecordPickupBookingInput{
			OrganizationID: in.OrganizationID, PickupID: in.PickupID, Booking: booked.Booking,
		}).Get(rctx, nil)
		if rerr == nil {
			out.Outcome = PurchaseDone
			return out
		}
		msg, _ := failureOf(rerr)
		log.Warn("pickup booked but not recorded; cancelling it", "PickupId", in.PickupID, "ConfirmationNumber", out.Reference, "Error", msg)
		cctx := workflow.WithActivityOptions(dctx, compensateOptions)
		if cerr := workflow.ExecuteActivity(cctx, a.CancelBookedPickup, activities.CancelBookedPickupInput{
			OrganizationID: in.OrganizationID, CarrierAccountID: in.CarrierAccountID, ConfirmationNumber: out.Reference,
			PickupDate: in.Request.PickupDate, Location: booked.Booking.Location, Reason: "the booking could not be recorded",
		}).Get(cctx, nil); cerr != nil {
			cmsg, _ := failureOf(cerr)
			out.Outcome = PurchaseUnknown
			out.Message = "the pickup " + out.Reference + " was booked but could not be recorded (" + msg + ") nor cancelled (" + cmsg + "): cancel it with the carrier"
			end(true, out.Message)
			return out
		}
		out.Outcome = PurchaseVoided
		out.Message = "the pickup could not be recorded (" + msg + "); it was cancelled with the carrier"
		end(false, "")
		return out
	case typ == activities.ErrTypePurchaseGone:
		out.Outcome, out.Message = PurchaseRefused, failureMessage(err)
		return out
	case typ == activities.ErrTypeCarrierRefused, typ == activities.ErrTypeCarrierNotSent, typ == activities.ErrTypeInvalidInput:
		out.Outcome, out.Message, out.Failure = PurchaseRefused, failureMessage(err), carrierFailure(err)
		end(false, "")
		return out
	}
	out.Failure = carrierFailure(err)
	out.Outcome, out.Message = PurchaseUnknown, PickupUnknownMessage
	if out.Failure != nil {
		out.Message += " (" + out.Failure.Message + ")"
	}
	log.Warn("pickup booking outcome unknown", "PickupId", in.PickupID, "Message", out.Message)
	end(true, out.Message)
	return out
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
