package workflows

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/platforms"
)

const sbSchedule = "5b0c7e8e-0000-4000-8000-000000000004"

func newScheduledEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, *activities.ScheduleActivities) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(ScheduledBridgeTask, workflow.RegisterOptions{Name: ScheduledBridgeTaskWorkflowType})
	env.RegisterWorkflowWithOptions(BridgeTask, workflow.RegisterOptions{Name: BridgeTaskWorkflowType})
	var a *activities.ScheduleActivities
	env.RegisterActivity(a)
	var bt *activities.BridgeTaskActivities
	env.RegisterActivity(bt)
	return env, a
}

// A fire queues its execution (keyed by the fire's workflow id), runs
// BridgeTask as the child bridge-task/<executionId> with the organization's
// search attribute, and reads the next run back.
func TestScheduledBridgeTaskRunsTheTask(t *testing.T) {
	env, a := newScheduledEnv(t)
	var fire string
	env.OnActivity(a.QueueScheduledRun, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.QueueScheduledRunInput) (activities.QueueScheduledRunResult, error) {
			require.Equal(t, btOrg, in.OrganizationID)
			require.Equal(t, sbSchedule, in.ScheduleID)
			fire = in.FireKey
			return activities.QueueScheduledRunResult{TaskExecutionID: btExec, BridgeID: btBrdg, TaskName: platforms.TaskWarehouseSync}, nil
		}).Once()
	var child BridgeTaskInput
	var childID string
	env.OnWorkflow(BridgeTaskWorkflowType, mock.Anything, mock.Anything).Return(
		func(ctx workflow.Context, in BridgeTaskInput) (BridgeTaskResult, error) {
			child, childID = in, workflow.GetInfo(ctx).WorkflowExecution.ID
			org, ok := workflow.GetTypedSearchAttributes(ctx).GetKeyword(temporal.NewSearchAttributeKeyKeyword("OrganizationId"))
			require.True(t, ok)
			require.Equal(t, btOrg, org)
			return BridgeTaskResult{TaskExecutionID: in.TaskExecutionID}, nil
		}).Once()
	env.OnActivity(a.RefreshNextRun, mock.Anything, activities.RefreshNextRunInput{OrganizationID: btOrg, ScheduleID: sbSchedule}).
		Return(activities.RefreshNextRunResult{}, nil).Once()
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "scheduled-bridge-task/" + sbSchedule + "-2026-11-24T08:00:00Z"})

	env.ExecuteWorkflow(ScheduledBridgeTask, ScheduledBridgeTaskInput{OrganizationID: btOrg, ScheduleID: sbSchedule, TaskName: platforms.TaskWarehouseSync})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res ScheduledBridgeTaskResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, ScheduledBridgeTaskResult{TaskExecutionID: btExec}, res)
	require.Equal(t, "scheduled-bridge-task/"+sbSchedule+"-2026-11-24T08:00:00Z", fire)
	require.Equal(t, BridgeTaskWorkflowID(btExec), childID)
	require.Equal(t, BridgeTaskInput{OrganizationID: btOrg, TaskExecutionID: btExec, BridgeID: btBrdg, TaskName: platforms.TaskWarehouseSync}, child)
	env.AssertExpectations(t)
}

// A skipped fire (schedule paused or deleted, bridge inactive, a run of
// the task going) runs nothing.
func TestScheduledBridgeTaskSkipped(t *testing.T) {
	env, a := newScheduledEnv(t)
	env.OnActivity(a.QueueScheduledRun, mock.Anything, mock.Anything).
		Return(activities.QueueScheduledRunResult{Skipped: "the schedule is paused"}, nil).Once()
	env.ExecuteWorkflow(ScheduledBridgeTask, ScheduledBridgeTaskInput{OrganizationID: btOrg, ScheduleID: sbSchedule})
	require.NoError(t, env.GetWorkflowError())
	var res ScheduledBridgeTaskResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, "the schedule is paused", res.Skipped)
	env.AssertExpectations(t) // no child, no refresh
}

// A failed task fails the fire too (the execution and the schedule's
// counters are written by the task's run); the next run is still read.
func TestScheduledBridgeTaskFailedTaskFailsTheFire(t *testing.T) {
	env, a := newScheduledEnv(t)
	env.OnActivity(a.QueueScheduledRun, mock.Anything, mock.Anything).
		Return(activities.QueueScheduledRunResult{TaskExecutionID: btExec, BridgeID: btBrdg, TaskName: platforms.TaskGrabOrders}, nil).Once()
	env.OnWorkflow(BridgeTaskWorkflowType, mock.Anything, mock.Anything).
		Return(BridgeTaskResult{}, temporal.NewNonRetryableApplicationError("refused", activities.ErrTypePlatformPermanent, nil)).Once()
	env.OnActivity(a.RefreshNextRun, mock.Anything, mock.Anything).Return(activities.RefreshNextRunResult{}, nil).Once()
	env.ExecuteWorkflow(ScheduledBridgeTask, ScheduledBridgeTaskInput{OrganizationID: btOrg, ScheduleID: sbSchedule})
	err := env.GetWorkflowError()
	require.Error(t, err)
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr))
	require.Equal(t, "refused", appErr.Message())
	env.AssertExpectations(t)
}
