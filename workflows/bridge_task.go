package workflows

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/platforms"
)

// BridgeTaskWorkflowType is the registered name of BridgeTask.
const BridgeTaskWorkflowType = "BridgeTask"

// BridgeTaskWorkflowID is the stable workflow ID of a task execution
// (CONTRACT section 5).
func BridgeTaskWorkflowID(taskExecutionID string) string { return "bridge-task/" + taskExecutionID }

// BridgeTaskInput is the input of BridgeTask. Sync is set when a paged
// sync continues as new.
type BridgeTaskInput struct {
	OrganizationID  string           `json:"organizationId"`
	TaskExecutionID string           `json:"taskExecutionId"`
	BridgeID        string           `json:"bridgeId"`
	TaskName        string           `json:"taskName"`
	Sync            *BridgeSyncState `json:"sync,omitempty"`
}

// BridgeSyncState is where a paged sync (grab-orders, grab-shipments) is:
// the since and cursor of the next page and the counts so far.
type BridgeSyncState struct {
	Since  time.Time             `json:"since"`
	Cursor string                `json:"cursor"`
	Pages  int                   `json:"pages"`
	Counts activities.SyncCounts `json:"counts"`
}

// BridgeTaskResult is the result of BridgeTask: the task's output, as
// recorded on the execution.
type BridgeTaskResult struct {
	TaskExecutionID string          `json:"taskExecutionId"`
	Output          json.RawMessage `json:"output"`
}

// maxPagesPerRun bounds a run's history when the server does not suggest
// continue-as-new first (three events per page).
const maxPagesPerRun = 500

// Activity options of BridgeTask.
var (
	// bridgeTaskDBOptions: one statement.
	bridgeTaskDBOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 10,
			NonRetryableErrorTypes: activities.PermanentTaskErrorTypes,
		},
	}
	// bridgeTaskPageOptions: one platform call and one transaction; it
	// heartbeats between them, so the heartbeat timeout is longer than a
	// platform call that waits out a rate-limit window inside (a minute on
	// the slowest marketplace). Transient platform failures are retried
	// with backoff (a rate-limited call after the wait the platform asked
	// for); permanent ones fail at once.
	bridgeTaskPageOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    3 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 8,
			NonRetryableErrorTypes: activities.PermanentTaskErrorTypes,
		},
	}
	// bridgeTaskLongOptions: a whole task in one activity (push-fulfillment
	// walks every shipment to push, heartbeating each).
	bridgeTaskLongOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Minute,
		HeartbeatTimeout:    3 * time.Minute,
		RetryPolicy:         bridgeTaskPageOptions.RetryPolicy,
	}
)

// BridgeTask runs one task execution: it marks the execution running,
// runs the task (grab-orders and grab-shipments page by page, continuing
// as new when the history grows; warehouse-sync; push-fulfillment) and
// records it completed with its output or failed with the reason; a failed
// task fails the run.
func BridgeTask(ctx workflow.Context, in BridgeTaskInput) (BridgeTaskResult, error) {
	var a *activities.BridgeTaskActivities
	dbCtx := workflow.WithActivityOptions(ctx, bridgeTaskDBOptions)
	if in.Sync == nil {
		var started activities.StartBridgeTaskResult
		if err := workflow.ExecuteActivity(dbCtx, a.StartBridgeTask, activities.StartBridgeTaskInput{
			OrganizationID: in.OrganizationID, TaskExecutionID: in.TaskExecutionID,
		}).Get(ctx, &started); err != nil {
			var appErr *temporal.ApplicationError
			if errors.As(err, &appErr) && appErr.Type() == activities.ErrTypeTaskFinished {
				// Already recorded (a start repeated after the outcome).
				return BridgeTaskResult{TaskExecutionID: in.TaskExecutionID}, nil
			}
			return BridgeTaskResult{}, finishFailed(ctx, in, err)
		}
		in.BridgeID, in.TaskName = started.BridgeID, started.TaskName
	}

	var output any
	var err error
	switch in.TaskName {
	case platforms.TaskGrabOrders, platforms.TaskGrabShipments:
		var counts activities.SyncCounts
		counts, err = runPagedSync(ctx, &in)
		output = counts
	case platforms.TaskWarehouseSync:
		var res activities.WarehouseSyncResult
		err = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, bridgeTaskPageOptions), a.WarehouseSync, activities.WarehouseSyncInput{
			OrganizationID: in.OrganizationID, BridgeID: in.BridgeID,
		}).Get(ctx, &res)
		output = res
	case platforms.TaskPushFulfillment:
		var res activities.PushFulfillmentsResult
		err = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, bridgeTaskLongOptions), a.PushFulfillments, activities.PushFulfillmentsInput{
			OrganizationID: in.OrganizationID, BridgeID: in.BridgeID,
		}).Get(ctx, &res)
		output = res
		// A run whose every push the platform refused ends failed, with
		// its counts recorded.
		if err == nil && res.NothingPushed() && workflow.GetVersion(ctx, pushRefusedFailsVersion, workflow.DefaultVersion, 1) == 1 {
			raw, _ := json.Marshal(res)
			return BridgeTaskResult{}, finishFailedWith(ctx, in, temporal.NewNonRetryableApplicationError(
				activities.TenantText(res.Failure()), activities.ErrTypePlatformPermanent, nil), raw)
		}
	default:
		err = temporal.NewNonRetryableApplicationError(in.TaskName+" is not supported by this bridge type", activities.ErrTypeTaskNotSupported, nil)
	}
	if err != nil {
		if workflow.IsContinueAsNewError(err) {
			return BridgeTaskResult{}, err
		}
		return BridgeTaskResult{}, finishFailed(ctx, in, err)
	}

	raw, jerr := json.Marshal(output)
	if jerr != nil {
		return BridgeTaskResult{}, finishFailed(ctx, in, jerr)
	}
	if err := workflow.ExecuteActivity(dbCtx, a.FinishBridgeTask, activities.FinishBridgeTaskInput{
		OrganizationID: in.OrganizationID, TaskExecutionID: in.TaskExecutionID, Output: raw,
	}).Get(ctx, nil); err != nil {
		return BridgeTaskResult{}, err
	}
	return BridgeTaskResult{TaskExecutionID: in.TaskExecutionID, Output: raw}, nil
}

// runPagedSync runs the pages of a sync, one activity each, and continues
// as new (carrying the state) when the server suggests it.
func runPagedSync(ctx workflow.Context, in *BridgeTaskInput) (activities.SyncCounts, error) {
	var a *activities.BridgeTaskActivities
	if in.Sync == nil {
		var begin activities.BeginSyncResult
		if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, bridgeTaskDBOptions), a.BeginSync, activities.BeginSyncInput{
			OrganizationID: in.OrganizationID, BridgeID: in.BridgeID, TaskName: in.TaskName,
		}).Get(ctx, &begin); err != nil {
			return activities.SyncCounts{}, err
		}
		in.Sync = &BridgeSyncState{Since: begin.Since, Cursor: begin.Cursor}
	}
	st := in.Sync
	pageCtx := workflow.WithActivityOptions(ctx, bridgeTaskPageOptions)
	for pages := 0; ; pages++ {
		var res activities.SyncPageResult
		if err := workflow.ExecuteActivity(pageCtx, a.SyncPage, activities.SyncPageInput{
			OrganizationID: in.OrganizationID, TaskExecutionID: in.TaskExecutionID, BridgeID: in.BridgeID,
			TaskName: in.TaskName, Since: st.Since, Cursor: st.Cursor,
		}).Get(ctx, &res); err != nil {
			return st.Counts, err
		}
		st.Counts.Add(res.SyncCounts)
		st.Pages++
		st.Cursor = res.Next
		// The run's current details in the Temporal UI (not a command:
		// replay-safe).
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("%s: %d pages synced; %d orders fetched, %d created, %d updated, %d failed",
			in.TaskName, st.Pages, st.Counts.Fetched, st.Counts.Created, st.Counts.Updated, st.Counts.Failed))
		if res.Next == "" {
			return st.Counts, nil
		}
		if workflow.GetInfo(ctx).GetContinueAsNewSuggested() || pages+1 >= maxPagesPerRun {
			return st.Counts, workflow.NewContinueAsNewError(ctx, BridgeTaskWorkflowType, *in)
		}
	}
}

// finishFailed records the execution failed with the failure's message
// (even while the run is being cancelled) and returns the failure, so the
// run fails in Temporal too.
func finishFailed(ctx workflow.Context, in BridgeTaskInput, err error) error {
	return finishFailedWith(ctx, in, err, nil)
}

// pushRefusedFailsVersion: a push-fulfillment run that pushed nothing
// because the platform refused every push fails (it completed before).
const pushRefusedFailsVersion = "push-refused-fails"

// finishFailedWith is finishFailed recording the task's output (its
// counts) with the failure.
func finishFailedWith(ctx workflow.Context, in BridgeTaskInput, err error, output json.RawMessage) error {
	var a *activities.BridgeTaskActivities
	msg, _ := taskFailureOf(err)
	rctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	if recErr := workflow.ExecuteActivity(workflow.WithActivityOptions(rctx, bridgeTaskDBOptions), a.FinishBridgeTask, activities.FinishBridgeTaskInput{
		OrganizationID: in.OrganizationID, TaskExecutionID: in.TaskExecutionID, Error: msg, Output: output,
	}).Get(rctx, nil); recErr != nil {
		workflow.GetLogger(ctx).Warn("could not record the task failure", "TaskExecutionId", in.TaskExecutionID, "Error", recErr)
	}
	return err
}

// taskFailureOf is a task failure's message for the tenant and its type.
func taskFailureOf(err error) (msg, typ string) {
	var appErr *temporal.ApplicationError
	var timeoutErr *temporal.TimeoutError
	var canceledErr *temporal.CanceledError
	switch {
	case errors.As(err, &appErr) && slices.Contains(tenantErrorTypes, appErr.Type()):
		return activities.TenantText(appErr.Message()), appErr.Type()
	case errors.As(err, &timeoutErr):
		return "the platform did not answer in time", "Timeout"
	case errors.As(err, &canceledErr):
		return "the task was cancelled", "Canceled"
	}
	// Anything else (a database failure, a bug) is not the tenant's to read.
	return "the task failed on an internal error; it can be run again", "Internal"
}

// tenantErrorTypes are the error types whose messages are written for the
// tenant.
var tenantErrorTypes = []string{
	activities.ErrTypePlatformPermanent, activities.ErrTypePlatformUnavailable, activities.ErrTypeBridgeUnavailable,
	activities.ErrTypeTaskNotSupported, activities.ErrTypeInvalidInput, activities.ErrTypeTaskNotFound,
}
