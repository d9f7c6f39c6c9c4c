package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/store"
)

// DispatchAssignmentWorkflowType is the registered name of
// DispatchAssignment; its id is rules.DispatchWorkflowID
// (dispatch/<assignmentId>), on the bulk task queue.
const DispatchAssignmentWorkflowType = rules.DispatchWorkflow

// Activity options of DispatchAssignment.
var (
	// dispatchStepOptions: one transaction, run as a local activity (one
	// task-queue round trip less each).
	dispatchStepOptions = workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 10,
			NonRetryableErrorTypes: activities.PermanentDispatchErrorTypes,
		},
	}
	// dispatchPushOptions: one platform call. The push is a
	// create-or-update keyed by the order, so a retry after an unknown
	// outcome updates what the first attempt made: transient failures are
	// retried with backoff, permanent ones fail the assignment at once.
	dispatchPushOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second, MaximumAttempts: 5,
			NonRetryableErrorTypes: activities.PermanentDispatchErrorTypes,
		},
	}
)

// DispatchAssignmentResult is the assignment's final status.
type DispatchAssignmentResult struct {
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// DispatchAssignment processes one assignment: pending -> processing, the
// push to the destination bridge, then completed, skipped or failed (with
// the tenant-safe reason), recorded even when the run is cancelled.
func DispatchAssignment(ctx workflow.Context, in rules.DispatchInput) (DispatchAssignmentResult, error) {
	var a *activities.DispatchActivities
	var begun activities.BeginDispatchResult
	if err := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, dispatchStepOptions), a.BeginDispatch, in).Get(ctx, &begun); err != nil {
		msg, _ := failureOf(err)
		return dispatchEnd(ctx, DispatchAssignmentResult{Status: store.AssignmentFailed, Error: msg})
	}
	if begun.Status != store.AssignmentProcessing {
		return DispatchAssignmentResult{Status: begun.Status}, nil
	}
	var push activities.PushDispatchResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, dispatchPushOptions), a.PushDispatch, in).Get(ctx, &push)
	out := activities.FinishDispatchInput{
		OrganizationID: in.OrganizationID, AssignmentID: in.AssignmentID,
		WorkflowID: workflow.GetInfo(ctx).WorkflowExecution.ID, Status: store.AssignmentCompleted, Push: push,
	}
	switch {
	case err != nil:
		out.Status = store.AssignmentFailed
		out.Error, _ = failureOf(err)
	case push.Skipped:
		out.Status = store.AssignmentSkipped
	}
	rctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	if ferr := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(rctx, dispatchStepOptions), a.FinishDispatch, out).Get(rctx, nil); ferr != nil {
		return DispatchAssignmentResult{}, ferr
	}
	return dispatchEnd(ctx, DispatchAssignmentResult{Status: out.Status, Error: out.Error})
}

// dispatchFailsVersion: a run whose assignment failed ends Failed in the
// Temporal UI (it completed, with the failure only in its result, before).
const dispatchFailsVersion = "dispatch-failed-ends-failed"

// dispatchEnd ends the run: a failed assignment fails it with the reason,
// non-retryable (the assignment row already says failed; a retry goes
// through the API), so an operator sees it Failed; others complete.
func dispatchEnd(ctx workflow.Context, res DispatchAssignmentResult) (DispatchAssignmentResult, error) {
	if res.Status != store.AssignmentFailed || workflow.GetVersion(ctx, dispatchFailsVersion, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return res, nil
	}
	return res, temporal.NewNonRetryableApplicationError("dispatch failed: "+res.Error, ErrTypeDispatchFailed, nil)
}

// ErrTypeDispatchFailed is the failure type of a DispatchAssignment run
// whose assignment failed.
const ErrTypeDispatchFailed = "DispatchFailed"
