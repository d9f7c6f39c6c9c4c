package workflows

import (
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
)

// ScheduledBridgeTaskWorkflowType is the registered name of
// ScheduledBridgeTask, started by each fire of a schedule's Temporal
// Schedule (schedule/<scheduleId>) under
// scheduled-bridge-task/<scheduleId>-<fire time>.
const ScheduledBridgeTaskWorkflowType = activities.ScheduledBridgeTaskWorkflowType

// ScheduleWorkflowID is the Temporal Schedule id of a schedule (CONTRACT 5).
func ScheduleWorkflowID(scheduleID string) string { return activities.ScheduleTemporalID(scheduleID) }

// ScheduledBridgeTaskInput is the input of ScheduledBridgeTask.
type ScheduledBridgeTaskInput = activities.ScheduledBridgeTaskInput

// ScheduledBridgeTaskResult is the execution a fire queued and ran, or why
// it was skipped.
type ScheduledBridgeTaskResult struct {
	TaskExecutionID string `json:"taskExecutionId,omitempty"`
	Skipped         string `json:"skipped,omitempty"`
}

// scheduleDBOptions: one or two statements and a describe.
var scheduleDBOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 30 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 10,
		NonRetryableErrorTypes: []string{activities.ErrTypeInvalidInput},
	},
}

// ScheduledBridgeTask is one fire of a schedule: it queues a task
// execution linked to the schedule (once per fire, keyed by this
// workflow's id), runs BridgeTask for it as the child
// bridge-task/<executionId> and waits for it, so a fire due meanwhile is
// skipped (overlap SKIP). The run records the execution and the
// schedule's lastRunAt, runCount, errorCount and lastError; a failed task
// fails this run too. A fire of a deleted or paused schedule, of an
// inactive bridge, or while a run of the same task is going, runs nothing.
// Finally the schedule's next run is read back from Temporal.
func ScheduledBridgeTask(ctx workflow.Context, in ScheduledBridgeTaskInput) (ScheduledBridgeTaskResult, error) {
	var a *activities.ScheduleActivities
	dbCtx := workflow.WithActivityOptions(ctx, scheduleDBOptions)
	info := workflow.GetInfo(ctx)
	var queued activities.QueueScheduledRunResult
	if err := workflow.ExecuteActivity(dbCtx, a.QueueScheduledRun, activities.QueueScheduledRunInput{
		OrganizationID: in.OrganizationID, ScheduleID: in.ScheduleID, FireKey: info.WorkflowExecution.ID,
	}).Get(ctx, &queued); err != nil {
		return ScheduledBridgeTaskResult{}, err
	}
	if queued.Skipped != "" {
		workflow.GetLogger(ctx).Info("scheduled run skipped", "ScheduleId", in.ScheduleID, "Reason", queued.Skipped)
		return ScheduledBridgeTaskResult{Skipped: queued.Skipped}, nil
	}

	childCtx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID: BridgeTaskWorkflowID(queued.TaskExecutionID),
		// Abandoned, not stopped, when this run closes first: the task
		// finishes and records itself.
		ParentClosePolicy:     enumspb.PARENT_CLOSE_POLICY_ABANDON,
		TypedSearchAttributes: activities.BridgeSearchAttributes(in.OrganizationID, queued.BridgeID, queued.TaskName),
		StaticSummary:         fmt.Sprintf("%s of bridge %s, scheduled (schedule %s)", queued.TaskName, queued.BridgeID, in.ScheduleID),
		Memo: map[string]any{
			"taskExecutionId": queued.TaskExecutionID, "bridgeId": queued.BridgeID, "taskName": queued.TaskName, "scheduleId": in.ScheduleID,
		},
	})
	err := workflow.ExecuteChildWorkflow(childCtx, BridgeTaskWorkflowType, BridgeTaskInput{
		OrganizationID: in.OrganizationID, TaskExecutionID: queued.TaskExecutionID, BridgeID: queued.BridgeID, TaskName: queued.TaskName,
	}).Get(ctx, nil)
	var started *temporal.ChildWorkflowExecutionAlreadyStartedError
	if errors.As(err, &started) {
		// A reset of this run: the task's run exists and records itself.
		err = nil
	}

	_ = workflow.ExecuteActivity(dbCtx, a.RefreshNextRun, activities.RefreshNextRunInput{
		OrganizationID: in.OrganizationID, ScheduleID: in.ScheduleID,
	}).Get(ctx, nil)
	return ScheduledBridgeTaskResult{TaskExecutionID: queued.TaskExecutionID}, err
}
