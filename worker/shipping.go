package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/shipping"
	"github.com/fos-dev/fos/workflows"
)

// TemporalShipping is the Temporal adapter of the shipping domain's ports:
// it runs the purchases (ShipmentLabel, PickupBooking), cancellations
// (PickupCancel) and shipment actions (ShipmentAction) the shipping
// Service asks for, on TaskQueue.
type TemporalShipping struct {
	Client    client.Client
	TaskQueue string
	Log       *slog.Logger
}

func (t TemporalShipping) starter() Starter { return Starter{Client: t.Client, Log: t.Log} }

// RunLabelPurchase implements shipping.LabelRuns: the ShipmentLabel run
// shipment-label/<shipmentId>, started with update-with-start (or joined),
// and its PurchaseUpdateResult. A closed run answers with its recorded
// outcome; an outcome that stayed unknown is domain.WorkflowsUnavailable.
func (t TemporalShipping) RunLabelPurchase(ctx context.Context, in shipping.LabelRun) (shipping.PurchaseResult, error) {
	wfIn := workflows.ShipmentLabelInput{
		OrganizationID: in.OrganizationID.String(), ShipmentID: in.ShipmentID.String(), CarrierAccountID: in.CarrierAccountID.String(),
		Request: in.Request,
	}
	opts := StartOptions(workflows.ShipmentLabelWorkflowID(wfIn.ShipmentID), t.TaskQueue, wfIn.OrganizationID, map[string]any{"shipmentId": wfIn.ShipmentID})
	return t.awaitPurchase(ctx, opts, workflows.ShipmentLabel, wfIn)
}

// awaitPurchase runs a purchase workflow (ShipmentLabel, PickupBooking)
// and waits for its outcome.
func (t TemporalShipping) awaitPurchase(ctx context.Context, opts client.StartWorkflowOptions, wf, in any) (shipping.PurchaseResult, error) {
	var res shipping.PurchaseResult
	err := t.starter().AwaitUpdateWithStart(ctx, opts, workflows.PurchaseUpdateResult, wf, in, &res, func(ctx context.Context, id string) error {
		var err error
		res, err = t.closedPurchase(ctx, id)
		return err
	})
	if err != nil {
		t.starter().log().WarnContext(ctx, "purchase workflow", "workflow_id", opts.ID, "error", err.Error())
	}
	// The caller waits on a context of its own: a deadline here is
	// Temporal's, not the caller's.
	return res, Unavailable(context.Background(), err)
}

// closedPurchase is the outcome of a closed purchase run.
func (t TemporalShipping) closedPurchase(ctx context.Context, wfID string) (shipping.PurchaseResult, error) {
	var res shipping.PurchaseResult
	err := t.Client.GetWorkflow(ctx, wfID, "").Get(ctx, &res)
	var appErr *temporal.ApplicationError
	if err != nil && errors.As(err, &appErr) && appErr.Type() == workflows.ErrTypePurchaseFailed && appErr.Details(&res) == nil {
		return res, nil
	}
	return res, err
}

// StartAction implements shipping.ActionRuns: the ShipmentAction run
// shipment-action/<actionId>, whose id is never reused (a run that closed
// without recording its outcome may have sent the change).
func (t TemporalShipping) StartAction(ctx context.Context, in shipping.ActionRun) error {
	wfIn := workflows.ShipmentActionInput{OrganizationID: in.OrganizationID.String(), ShipmentID: in.ShipmentID.String(), ActionID: in.ActionID.String()}
	opts := StartOptions(workflows.ShipmentActionWorkflowID(wfIn.ActionID), t.TaskQueue, wfIn.OrganizationID, map[string]any{"shipmentId": wfIn.ShipmentID, "actionId": wfIn.ActionID})
	opts.WorkflowIDReusePolicy = enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE
	_, err := t.starter().StartStable(ctx, opts, in.Since, workflows.ShipmentAction, wfIn)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	switch {
	case err == nil:
		return nil
	case errors.As(err, &started):
		return shipping.ErrRunClosed
	case IsStartUnknown(err):
		return &shipping.RunMayExist{Err: err}
	case IsTemporalUnavailable(ctx, err):
		return domain.WorkflowsUnavailable(err)
	}
	return err
}

// BookPickup implements shipping.PickupRuns: the PickupBooking run
// pickup/<pickupId> with update-with-start.
func (t TemporalShipping) BookPickup(ctx context.Context, in shipping.PickupRun) (shipping.PurchaseResult, error) {
	wfIn := workflows.PickupBookingInput{OrganizationID: in.OrganizationID.String(), PickupID: in.PickupID.String(), CarrierAccountID: in.CarrierAccountID.String(), Request: in.Request}
	opts := StartOptions(workflows.PickupBookingWorkflowID(wfIn.PickupID), t.TaskQueue, wfIn.OrganizationID, map[string]any{"pickupId": wfIn.PickupID})
	return t.awaitPurchase(ctx, opts, workflows.PickupBooking, wfIn)
}

// CancelPickup implements shipping.PickupRuns: the PickupCancel run
// pickup-cancel/<pickupId> (concurrent requests share it), waited for.
func (t TemporalShipping) CancelPickup(ctx context.Context, orgID, pickupID uuid.UUID, reason string) (shipping.CancelPickupResult, error) {
	in := activities.CancelPickupInput{OrganizationID: orgID.String(), PickupID: pickupID.String(), Reason: reason}
	opts := StartOptions(workflows.PickupCancelWorkflowID(in.PickupID), t.TaskQueue, in.OrganizationID, map[string]any{"pickupId": in.PickupID})
	var res shipping.CancelPickupResult
	run, err := t.starter().StartStable(ctx, opts, time.Now(), workflows.PickupCancel, in)
	if err == nil {
		err = run.Get(ctx, &res)
	}
	if err == nil {
		return res, nil
	}
	return res, pickupCancelError(err)
}

// pickupCancelError classifies a PickupCancel run's failure for the
// shipping domain: the activity's failure as the StepError it was made
// from; a start whose outcome stayed unknown, or a Temporal out of reach,
// domain.WorkflowsUnavailable; a run that ended without an answer (timed
// out, cancelled, terminated) shipping.ErrRunOutcomeUnknown.
func pickupCancelError(err error) error {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		se := &shipping.StepError{Type: appErr.Type(), Message: appErr.Message(), NonRetryable: appErr.NonRetryable(), Err: err}
		var f shipping.CarrierFailure
		if appErr.HasDetails() && appErr.Details(&f) == nil {
			se.Failure = &f
		}
		return se
	}
	if IsStartUnknown(err) || IsTemporalUnavailable(context.Background(), err) {
		return domain.WorkflowsUnavailable(err)
	}
	var timeoutErr *temporal.TimeoutError
	var canceledErr *temporal.CanceledError
	var terminatedErr *temporal.TerminatedError
	var runErr *temporal.WorkflowExecutionError
	if errors.As(err, &timeoutErr) || errors.As(err, &canceledErr) || errors.As(err, &terminatedErr) || errors.As(err, &runErr) {
		return fmt.Errorf("%w: %w", shipping.ErrRunOutcomeUnknown, err)
	}
	return err
}
