package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/store"
)

// ShipmentActionWorkflowType is the registered name of ShipmentAction.
const ShipmentActionWorkflowType = "ShipmentAction"

// ShipmentActionWorkflowID is the stable workflow ID of an action record
// (CONTRACT section 5).
func ShipmentActionWorkflowID(actionID string) string {
	return activities.ShipmentActionIDPrefix + actionID
}

// ShipmentActionInput is the input of ShipmentAction.
type ShipmentActionInput struct {
	OrganizationID string `json:"organizationId"`
	ShipmentID     string `json:"shipmentId"`
	ActionID       string `json:"actionId"`
}

// ShipmentActionResult is the result of ShipmentAction.
type ShipmentActionResult struct {
	ActionID string `json:"actionId"`
	// Status is the record's outcome: completed or failed.
	Status             string `json:"status"`
	ConfirmationNumber string `json:"confirmationNumber"`
	Error              string `json:"error"`
}

// Activity options of ShipmentAction.
var (
	// sendShipmentActionOptions: one carrier call (a delivery change may
	// carry a fee), one attempt per execution: the workflow repeats it only
	// when the call never reached the carrier (spendOnceWith,
	// ErrTypeShipmentCarrierUnavailable). A timeout after sending, a 5xx or
	// a worker that died during the call is an unknown outcome, never
	// repeated.
	sendShipmentActionOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 45 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	}
	// recordShipmentActionOptions: one UPDATE; retried longer, since the
	// record would stay pending otherwise.
	recordShipmentActionOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        time.Minute,
			MaximumAttempts:        20,
			NonRetryableErrorTypes: []string{activities.ErrTypeInvalidInput},
		},
	}
)

// ShipmentAction sends a shipment action (hold, redirect, redeliver,
// instructions) to the carrier and moves its record from pending to
// completed (with the carrier's confirmation) or failed (with the error).
// The shipment's status is not changed. When the carrier refuses for good
// the run fails after recording the failure, so it shows as failed in the
// Temporal UI.
func ShipmentAction(ctx workflow.Context, in ShipmentActionInput) (ShipmentActionResult, error) {
	log := workflow.GetLogger(ctx)
	var a *activities.ShipmentActivities

	var sent activities.SendShipmentActionResult
	sendErr := spendOnceWith(ctx, sendShipmentActionOptions, activities.ErrTypeShipmentCarrierUnavailable, a.SendShipmentAction,
		activities.SendShipmentActionInput{OrganizationID: in.OrganizationID, ActionID: in.ActionID}, &sent)
	if sendErr == nil && sent.AlreadyFinished {
		return ShipmentActionResult{ActionID: in.ActionID, Status: sent.FinishedStatus}, nil
	}

	rec := activities.RecordShipmentActionOutcomeInput{OrganizationID: in.OrganizationID, ActionID: in.ActionID}
	if sendErr == nil {
		rec.Status = store.ShipmentActionCompleted
		rec.ConfirmationNumber = sent.ConfirmationNumber
		rec.Messages = sent.Messages
		rec.CarrierResponse = sent.Raw
	} else {
		rec.Status = store.ShipmentActionFailed
		rec.Error, _ = shipmentActionFailure(sendErr)
	}
	// Record the outcome even when the run is being cancelled.
	rctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(rctx, recordShipmentActionOptions), a.RecordShipmentActionOutcome, rec).Get(rctx, nil); err != nil {
		log.Warn("could not record the shipment action outcome", "ActionId", in.ActionID, "Error", err)
		if sendErr == nil {
			return ShipmentActionResult{}, err
		}
	}
	out := ShipmentActionResult{ActionID: in.ActionID, Status: rec.Status, ConfirmationNumber: rec.ConfirmationNumber, Error: rec.Error}
	if sendErr != nil {
		log.Warn("shipment action failed", "ActionId", in.ActionID, "Error", rec.Error)
		return out, sendErr
	}
	log.Info("shipment action completed", "ActionId", in.ActionID, "ConfirmationNumber", sent.ConfirmationNumber)
	return out, nil
}

// shipmentActionFailure is a send failure's message for people and its type.
func shipmentActionFailure(err error) (msg, typ string) {
	msg, typ = failureOf(err)
	if typ == "Timeout" {
		// The attempt timed out (or its worker died) after it may have
		// reached the carrier.
		msg = activities.ShipmentActionUnknownMessage
	}
	if typ == "Canceled" {
		msg = "the action was cancelled"
	}
	return msg, typ
}

// PickupCompletionWorkflowType is the registered name of PickupCompletion.
const PickupCompletionWorkflowType = "PickupCompletion"

// PickupCompletionScheduleID is the Temporal Schedule that starts
// PickupCompletion every hour; PickupCompletionWorkflowID the id of the
// runs it starts (Temporal appends the scheduled time).
const (
	PickupCompletionScheduleID = "schedule/pickup-completion"
	PickupCompletionWorkflowID = "pickup-completion"
)

// PickupCompletionResult is the result of PickupCompletion.
type PickupCompletionResult struct {
	Completed int64 `json:"completed"`
}

var completePickupsOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 2 * time.Minute,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval:        5 * time.Second,
		BackoffCoefficient:     2,
		MaximumInterval:        time.Minute,
		MaximumAttempts:        5,
		NonRetryableErrorTypes: []string{activities.ErrTypeInvalidInput},
	},
}

// PickupCompletion persists the completion of confirmed pickups whose date
// has passed (as of the run's start, UTC), across every organization, with
// one UPDATE. Reads already report such pickups as completed; this makes
// the stored status agree.
func PickupCompletion(ctx workflow.Context) (PickupCompletionResult, error) {
	var a *activities.ShipmentActivities
	var res activities.CompletePastPickupsResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, completePickupsOptions), a.CompletePastPickups,
		activities.CompletePastPickupsInput{AsOf: workflow.Now(ctx)}).Get(ctx, &res)
	if err != nil {
		return PickupCompletionResult{}, err
	}
	return PickupCompletionResult{Completed: res.Completed}, nil
}
