// Package workflows holds the Temporal workflows. Workflow code is
// deterministic: all I/O happens in activities (package activities), called
// through nil pointers of their structs.
package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
)

// OrderResyncWorkflowType is the registered name of OrderResync.
const OrderResyncWorkflowType = "OrderResync"

// OrderResyncWorkflowID is the stable workflow ID of an order's resync
// (CONTRACT section 5): a repeated request joins the running resync.
func OrderResyncWorkflowID(orderID string) string { return "order-resync/" + orderID }

// Actor is who asked for a workflow (attribution).
type Actor = activities.Actor

// OrderResyncInput is the input of OrderResync.
type OrderResyncInput struct {
	OrganizationID string `json:"organizationId"`
	OrderID        string `json:"orderId"`
	RequestedBy    Actor  `json:"requestedBy"`
}

// OrderResyncResult is the result of OrderResync.
type OrderResyncResult struct {
	OrderID  string `json:"orderId"`
	BridgeID string `json:"bridgeId"`
	// ChangedFields names the order fields the resync changed.
	ChangedFields []string `json:"changedFields"`
}

// Activity options of OrderResync.
var (
	// resyncOrderOptions: a platform call plus one transaction. Transient
	// platform failures are retried with backoff; permanent ones (order
	// unknown to the platform, credentials refused, bridge gone or not
	// active) fail at once.
	resyncOrderOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        30 * time.Second,
			MaximumAttempts:        5,
			NonRetryableErrorTypes: activities.PermanentOrderErrorTypes,
		},
	}
	// recordFailureOptions: one insert; retried longer, since it is the only
	// trace of the failure in the order's history.
	recordFailureOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        time.Minute,
			MaximumAttempts:        10,
			NonRetryableErrorTypes: []string{activities.ErrTypeInvalidInput},
		},
	}
)

// OrderResync re-fetches an order from its source bridge and updates it,
// recording a "sync" activity on the order. When the resync fails for good
// it records a "sync_failed" activity and fails, so the run shows as failed
// in the Temporal UI.
func OrderResync(ctx workflow.Context, in OrderResyncInput) (OrderResyncResult, error) {
	r := &orderResync{in: in, exec: workflow.GetInfo(ctx).WorkflowExecution}
	return r.run(ctx)
}

type orderResync struct {
	in   OrderResyncInput
	exec workflow.Execution
}

func (r *orderResync) run(ctx workflow.Context) (OrderResyncResult, error) {
	log := workflow.GetLogger(ctx)
	var a *activities.OrderActivities

	var res activities.ResyncOrderResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, resyncOrderOptions), a.ResyncOrder, activities.ResyncOrderInput{
		OrganizationID: r.in.OrganizationID,
		OrderID:        r.in.OrderID,
		WorkflowID:     r.exec.ID,
		RunID:          r.exec.RunID,
		RequestedBy:    r.in.RequestedBy,
	}).Get(ctx, &res)
	if err == nil {
		log.Info("order resynced", "OrderId", r.in.OrderID, "ChangedFields", res.ChangedFields)
		return OrderResyncResult{OrderID: r.in.OrderID, BridgeID: res.BridgeID, ChangedFields: res.ChangedFields}, nil
	}

	// Record the failure even when the run is being cancelled.
	msg, typ := failureOf(err)
	rctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	if recErr := workflow.ExecuteActivity(workflow.WithActivityOptions(rctx, recordFailureOptions), a.RecordResyncFailure, activities.RecordResyncFailureInput{
		OrganizationID: r.in.OrganizationID,
		OrderID:        r.in.OrderID,
		WorkflowID:     r.exec.ID,
		RunID:          r.exec.RunID,
		Error:          msg,
		ErrorType:      typ,
		RequestedBy:    r.in.RequestedBy,
	}).Get(rctx, nil); recErr != nil {
		log.Warn("could not record the resync failure on the order", "OrderId", r.in.OrderID, "Error", recErr)
	}
	return OrderResyncResult{}, err
}

// failureOf is an activity failure's message for people and its type.
func failureOf(err error) (msg, typ string) {
	var appErr *temporal.ApplicationError
	var timeoutErr *temporal.TimeoutError
	var canceledErr *temporal.CanceledError
	switch {
	case errors.As(err, &appErr):
		return appErr.Message(), appErr.Type()
	case errors.As(err, &timeoutErr):
		return "the platform did not answer in time", "Timeout"
	case errors.As(err, &canceledErr):
		return "the resync was cancelled", "Canceled"
	}
	return activities.TenantMessage(err), ""
}
