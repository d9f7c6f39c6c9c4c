package workflows

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/platforms"
)

const (
	btOrg  = "5b0c7e8e-0000-4000-8000-000000000001"
	btExec = "5b0c7e8e-0000-4000-8000-000000000002"
	btBrdg = "5b0c7e8e-0000-4000-8000-000000000003"
)

func newBridgeTaskEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, *activities.BridgeTaskActivities) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(BridgeTask, workflow.RegisterOptions{Name: BridgeTaskWorkflowType})
	var a *activities.BridgeTaskActivities
	env.RegisterActivity(a)
	return env, a
}

func expectStart(env *testsuite.TestWorkflowEnvironment, a *activities.BridgeTaskActivities, task string) {
	env.OnActivity(a.StartBridgeTask, mock.Anything, activities.StartBridgeTaskInput{OrganizationID: btOrg, TaskExecutionID: btExec}).
		Return(activities.StartBridgeTaskResult{BridgeID: btBrdg, TaskName: task}, nil).Once()
}

// expectFinish captures what the execution is recorded with.
func expectFinish(env *testsuite.TestWorkflowEnvironment, a *activities.BridgeTaskActivities, got *activities.FinishBridgeTaskInput) {
	env.OnActivity(a.FinishBridgeTask, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.FinishBridgeTaskInput) (activities.FinishBridgeTaskResult, error) {
			*got = in
			return activities.FinishBridgeTaskResult{Recorded: true}, nil
		}).Once()
}

func TestBridgeTaskGrabOrdersPages(t *testing.T) {
	env, a := newBridgeTaskEnv(t)
	since := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	expectStart(env, a, platforms.TaskGrabOrders)
	env.OnActivity(a.BeginSync, mock.Anything, activities.BeginSyncInput{OrganizationID: btOrg, BridgeID: btBrdg, TaskName: platforms.TaskGrabOrders}).
		Return(activities.BeginSyncResult{Since: since}, nil).Once()
	pages := map[string]activities.SyncPageResult{
		"":   {SyncCounts: activities.SyncCounts{Fetched: 2, Created: 2}, Next: "c1"},
		"c1": {SyncCounts: activities.SyncCounts{Fetched: 2, Updated: 1, Unchanged: 1}, Next: "c2"},
		"c2": {SyncCounts: activities.SyncCounts{Fetched: 1, Failed: 1}},
	}
	var seen []string
	env.OnActivity(a.SyncPage, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.SyncPageInput) (activities.SyncPageResult, error) {
			require.True(t, in.Since.Equal(since))
			require.Equal(t, btExec, in.TaskExecutionID)
			seen = append(seen, in.Cursor)
			return pages[in.Cursor], nil
		}).Times(3)
	var fin activities.FinishBridgeTaskInput
	expectFinish(env, a, &fin)

	env.ExecuteWorkflow(BridgeTask, BridgeTaskInput{OrganizationID: btOrg, TaskExecutionID: btExec})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, []string{"", "c1", "c2"}, seen)
	require.Empty(t, fin.Error)
	require.JSONEq(t, `{"fetched": 5, "created": 2, "updated": 1, "unchanged": 1, "failed": 1}`, string(fin.Output))
	env.AssertExpectations(t)
}

func TestBridgeTaskContinuesAsNewWithState(t *testing.T) {
	env, a := newBridgeTaskEnv(t)
	expectStart(env, a, platforms.TaskGrabOrders)
	env.OnActivity(a.BeginSync, mock.Anything, mock.Anything).Return(activities.BeginSyncResult{Cursor: "resume", Resumed: true}, nil).Once()
	n := 0
	env.OnActivity(a.SyncPage, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.SyncPageInput) (activities.SyncPageResult, error) {
			n++
			return activities.SyncPageResult{SyncCounts: activities.SyncCounts{Fetched: 1, Created: 1}, Next: "p" + string(rune('0'+n%10))}, nil
		})
	env.ExecuteWorkflow(BridgeTask, BridgeTaskInput{OrganizationID: btOrg, TaskExecutionID: btExec})
	require.True(t, env.IsWorkflowCompleted())
	err := env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, err, &can)
	require.Equal(t, BridgeTaskWorkflowType, can.WorkflowType.Name)
	var next BridgeTaskInput
	require.NoError(t, json.Unmarshal(can.Input.Payloads[0].Data, &next))
	require.Equal(t, platforms.TaskGrabOrders, next.TaskName)
	require.Equal(t, btBrdg, next.BridgeID)
	require.NotNil(t, next.Sync)
	require.Equal(t, maxPagesPerRun, next.Sync.Pages)
	require.Equal(t, maxPagesPerRun, next.Sync.Counts.Created)
	require.NotEmpty(t, next.Sync.Cursor)
}

func TestBridgeTaskContinuedRunSkipsStart(t *testing.T) {
	env, a := newBridgeTaskEnv(t)
	env.OnActivity(a.SyncPage, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.SyncPageInput) (activities.SyncPageResult, error) {
			require.Equal(t, "c9", in.Cursor)
			return activities.SyncPageResult{SyncCounts: activities.SyncCounts{Fetched: 1, Unchanged: 1}}, nil
		}).Once()
	var fin activities.FinishBridgeTaskInput
	expectFinish(env, a, &fin)
	env.ExecuteWorkflow(BridgeTask, BridgeTaskInput{OrganizationID: btOrg, TaskExecutionID: btExec, BridgeID: btBrdg, TaskName: platforms.TaskGrabOrders,
		Sync: &BridgeSyncState{Cursor: "c9", Pages: 500, Counts: activities.SyncCounts{Fetched: 500, Created: 500}}})
	require.NoError(t, env.GetWorkflowError())
	require.JSONEq(t, `{"fetched": 501, "created": 500, "updated": 0, "unchanged": 1, "failed": 0}`, string(fin.Output))
	env.AssertExpectations(t)
}

func TestBridgeTaskFailureIsRecordedAndFailsTheRun(t *testing.T) {
	env, a := newBridgeTaskEnv(t)
	expectStart(env, a, platforms.TaskGrabOrders)
	env.OnActivity(a.BeginSync, mock.Anything, mock.Anything).Return(activities.BeginSyncResult{}, nil).Once()
	env.OnActivity(a.SyncPage, mock.Anything, mock.Anything).Return(activities.SyncPageResult{},
		temporal.NewNonRetryableApplicationError(`bridge "Shop" refused its credentials: bad token (unauthorized)`, activities.ErrTypePlatformPermanent, nil)).Once()
	var fin activities.FinishBridgeTaskInput
	expectFinish(env, a, &fin)
	env.ExecuteWorkflow(BridgeTask, BridgeTaskInput{OrganizationID: btOrg, TaskExecutionID: btExec})
	require.Error(t, env.GetWorkflowError())
	require.Contains(t, fin.Error, "refused its credentials")
	env.AssertExpectations(t)
}

func TestBridgeTaskRetriesTransientPagesAndHidesInternalErrors(t *testing.T) {
	env, a := newBridgeTaskEnv(t)
	expectStart(env, a, platforms.TaskGrabOrders)
	env.OnActivity(a.BeginSync, mock.Anything, mock.Anything).Return(activities.BeginSyncResult{}, nil).Once()
	// A platform hiccup is retried; then the database fails for good.
	env.OnActivity(a.SyncPage, mock.Anything, mock.Anything).Return(activities.SyncPageResult{},
		temporal.NewApplicationError("platform 503", activities.ErrTypePlatformUnavailable)).Once()
	env.OnActivity(a.SyncPage, mock.Anything, mock.Anything).Return(activities.SyncPageResult{},
		temporal.NewNonRetryableApplicationError("store: ERROR: relation orders does not exist (SQLSTATE 42P01)", "wrapError", nil)).Once()
	var fin activities.FinishBridgeTaskInput
	expectFinish(env, a, &fin)
	env.ExecuteWorkflow(BridgeTask, BridgeTaskInput{OrganizationID: btOrg, TaskExecutionID: btExec})
	require.Error(t, env.GetWorkflowError())
	require.NotContains(t, fin.Error, "SQLSTATE")
	require.Contains(t, fin.Error, "internal error")
	env.AssertExpectations(t)
}

func TestBridgeTaskWarehouseSyncAndPush(t *testing.T) {
	for _, task := range []string{platforms.TaskWarehouseSync, platforms.TaskPushFulfillment} {
		t.Run(task, func(t *testing.T) {
			env, a := newBridgeTaskEnv(t)
			expectStart(env, a, task)
			if task == platforms.TaskWarehouseSync {
				env.OnActivity(a.WarehouseSync, mock.Anything, activities.WarehouseSyncInput{OrganizationID: btOrg, BridgeID: btBrdg}).
					Return(activities.WarehouseSyncResult{Fetched: 1, Created: 1, LocationIDs: []string{"l1"}}, nil).Once()
			} else {
				env.OnActivity(a.PushFulfillments, mock.Anything, activities.PushFulfillmentsInput{OrganizationID: btOrg, BridgeID: btBrdg}).
					Return(activities.PushFulfillmentsResult{Pushed: 2, Problems: []string{}}, nil).Once()
			}
			var fin activities.FinishBridgeTaskInput
			expectFinish(env, a, &fin)
			env.ExecuteWorkflow(BridgeTask, BridgeTaskInput{OrganizationID: btOrg, TaskExecutionID: btExec})
			require.NoError(t, env.GetWorkflowError())
			var res BridgeTaskResult
			require.NoError(t, env.GetWorkflowResult(&res))
			require.JSONEq(t, string(fin.Output), string(res.Output))
			env.AssertExpectations(t)
		})
	}
}

func TestBridgeTaskNotSupported(t *testing.T) {
	env, a := newBridgeTaskEnv(t)
	expectStart(env, a, platforms.TaskWarehouseSync)
	env.OnActivity(a.WarehouseSync, mock.Anything, mock.Anything).Return(activities.WarehouseSyncResult{},
		temporal.NewNonRetryableApplicationError("warehouse-sync is not supported by this bridge type (storefront_b)", activities.ErrTypeTaskNotSupported, nil)).Once()
	var fin activities.FinishBridgeTaskInput
	expectFinish(env, a, &fin)
	env.ExecuteWorkflow(BridgeTask, BridgeTaskInput{OrganizationID: btOrg, TaskExecutionID: btExec})
	require.Error(t, env.GetWorkflowError())
	require.Equal(t, "warehouse-sync is not supported by this bridge type (storefront_b)", fin.Error)
}

func TestBridgeTaskAlreadyFinished(t *testing.T) {
	env, a := newBridgeTaskEnv(t)
	env.OnActivity(a.StartBridgeTask, mock.Anything, mock.Anything).Return(activities.StartBridgeTaskResult{},
		temporal.NewNonRetryableApplicationError("already finished", activities.ErrTypeTaskFinished, nil)).Once()
	env.ExecuteWorkflow(BridgeTask, BridgeTaskInput{OrganizationID: btOrg, TaskExecutionID: btExec})
	require.NoError(t, env.GetWorkflowError())
	env.AssertExpectations(t) // no FinishBridgeTask
}

// TestBridgeTaskReplay replays a completed grab-orders run and a run that
// failed on refused credentials, recorded by the end-to-end test
// (FOS_UPDATE_HISTORY=1 go test ./e2e/ -run TestBridgeTasksEndToEnd).
func TestBridgeTaskReplay(t *testing.T) {
	for _, file := range []string{"bridge_task_history.json", "bridge_task_failed_history.json"} {
		t.Run(file, func(t *testing.T) {
			r := newReplayer(t)
			r.RegisterWorkflowWithOptions(BridgeTask, workflow.RegisterOptions{Name: BridgeTaskWorkflowType})
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/"+file))
		})
	}
}

// A push-fulfillment run whose every push the platform refused ends
// failed (not completed as if all went well), its counts recorded with
// the reason; one that pushed some and had some refused completes.
func TestBridgeTaskPushRefusedFails(t *testing.T) {
	for _, tc := range []struct {
		name   string
		res    activities.PushFulfillmentsResult
		failed bool
	}{
		{"all refused", activities.PushFulfillmentsResult{Refused: 2, Problems: []string{"shipment s1 (order 5001): unknown carrier"}}, true},
		{"some pushed", activities.PushFulfillmentsResult{Pushed: 1, Refused: 1, Problems: []string{"x"}}, false},
		{"already there", activities.PushFulfillmentsResult{AlreadyThere: 1, Refused: 1, Problems: []string{"x"}}, false},
		{"nothing to push", activities.PushFulfillmentsResult{Problems: []string{}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, a := newBridgeTaskEnv(t)
			expectStart(env, a, platforms.TaskPushFulfillment)
			env.OnActivity(a.PushFulfillments, mock.Anything, mock.Anything).Return(tc.res, nil).Once()
			var fin activities.FinishBridgeTaskInput
			expectFinish(env, a, &fin)
			env.ExecuteWorkflow(BridgeTask, BridgeTaskInput{OrganizationID: btOrg, TaskExecutionID: btExec})
			var out activities.PushFulfillmentsResult
			require.NoError(t, json.Unmarshal(fin.Output, &out))
			require.Equal(t, tc.res, out)
			if !tc.failed {
				require.NoError(t, env.GetWorkflowError())
				require.Empty(t, fin.Error)
				return
			}
			require.Error(t, env.GetWorkflowError())
			require.Contains(t, fin.Error, "refused all 2 fulfillment pushes")
			require.Contains(t, fin.Error, "unknown carrier")
		})
	}
}
