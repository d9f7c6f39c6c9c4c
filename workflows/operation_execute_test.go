package workflows

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/operations"
	"github.com/fos-dev/fos/store"
)

var opa *activities.OperationActivities

var (
	opOrg = uuid.MustParse("8e0c2f3a-5a8b-4d62-9a43-1f0b6f1e2d11")
	opID  = uuid.MustParse("3c1d2e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f")
)

// fakeOperation stands for the database: items pending, a status, and
// the batches that claimed items.
type fakeOperation struct {
	mu      sync.Mutex
	status  string
	pending int
	total   int
	claims  []string
	// during is called inside each batch (e.g. to check the paused state).
	during func()
}

func newFakeOperation(items int) *fakeOperation {
	return &fakeOperation{status: store.OperationDraft, pending: items, total: items}
}

func (f *fakeOperation) env(t *testing.T, _ int) *testsuite.TestWorkflowEnvironment {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(OperationExecute, workflow.RegisterOptions{Name: OperationExecuteWorkflowType})
	env.RegisterActivity(&activities.OperationActivities{})
	env.OnActivity(opa.BeginExecution, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.BeginExecutionInput) (activities.OperationProgress, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.status != store.OperationDraft && f.status != store.OperationPending && f.status != store.OperationExecuting {
				return activities.OperationProgress{}, temporal.NewNonRetryableApplicationError("an operation that is "+f.status+" cannot be executed", activities.ErrTypeOperationRefused, nil)
			}
			f.status = store.OperationExecuting
			return activities.OperationProgress{Status: f.status, Items: int64(f.total)}, nil
		})
	env.OnActivity(opa.SetOperationRunStatus, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.SetOperationRunStatusInput) (string, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.status = in.Status
			if in.Status == store.OperationCancelled {
				f.pending = 0
			}
			return f.status, nil
		})
	env.OnActivity(opa.ExecuteBatch, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ExecuteBatchInput) (operations.BatchResult, error) {
			if f.during != nil {
				f.during()
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			n := 0
			if f.status == store.OperationExecuting {
				n = min(in.Limit, f.pending)
			}
			f.pending -= n
			f.claims = append(f.claims, in.Claim)
			return operations.BatchResult{Items: n, Completed: n, Status: f.status, Total: int64(f.total), Processed: int64(f.total - f.pending)}, nil
		}).After(time.Second) // each batch takes a second of workflow time
	env.OnActivity(opa.FinishExecution, mock.Anything, mock.Anything).Return(
		func(_ context.Context, _ activities.FinishExecutionInput) (activities.OperationProgress, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.status = store.OperationCompleted
			return activities.OperationProgress{Status: f.status, Items: int64(f.total), Done: int64(f.total), Completed: int64(f.total)}, nil
		})
	return env
}

func opInput(bs, par, perRun int) OperationExecuteInput {
	in := NewOperationExecuteInput(opOrg, opID, domain.Actor{Kind: domain.ActorUser, OrganizationID: opOrg, Name: "Ada"})
	in.BatchSize, in.Parallelism, in.BatchesPerRun = bs, par, perRun
	return in
}

// update sends an update at delay and records its outcome.
func update(env *testsuite.TestWorkflowEnvironment, delay time.Duration, name string, out *error) {
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(name, uuid.NewString(), &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { *out = err },
			OnComplete: func(_ interface{}, err error) {
				if err != nil {
					*out = err
				}
			},
		})
	}, delay)
}

func TestOperationExecuteRunsEveryBatch(t *testing.T) {
	f := newFakeOperation(1050)
	env := f.env(t, 100)
	var execErr, again error
	update(env, 0, OperationUpdateExecute, &execErr)
	// A second execute is refused by the validator.
	update(env, time.Millisecond, OperationUpdateExecute, &again)
	env.ExecuteWorkflow(OperationExecuteWorkflowType, opInput(100, 4, 1000))
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.NoError(t, execErr)
	require.Error(t, again)
	var prog activities.OperationProgress
	require.NoError(t, env.GetWorkflowResult(&prog))
	require.Equal(t, store.OperationCompleted, prog.Status)
	require.Zero(t, f.pending)
	// Eleven batches with items, then one empty batch per slot; every
	// claim is used once.
	seen := map[string]bool{}
	for _, c := range f.claims {
		require.False(t, seen[c], "claim %s reused", c)
		seen[c] = true
	}
	require.GreaterOrEqual(t, len(f.claims), 12)
	require.LessOrEqual(t, len(f.claims), 15)
}

func TestOperationExecuteRefusedEnds(t *testing.T) {
	f := newFakeOperation(10)
	f.status = store.OperationCompleted
	env := f.env(t, 100)
	var execErr error
	update(env, 0, OperationUpdateExecute, &execErr)
	env.ExecuteWorkflow(OperationExecuteWorkflowType, opInput(100, 2, 100))
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	require.Error(t, execErr)
	require.Empty(t, f.claims)
}

func TestOperationExecutePauseResumeCancel(t *testing.T) {
	t.Run("pause then resume", func(t *testing.T) {
		f := newFakeOperation(1000)
		env := f.env(t, 10)
		pausedBatches := 0
		f.during = func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.status == store.OperationPaused {
				pausedBatches++
			}
		}
		var execErr, badResume, pauseErr, resumeErr error
		update(env, 0, OperationUpdateExecute, &execErr)
		update(env, time.Millisecond, OperationUpdateResume, &badResume) // not paused: refused
		update(env, 3*time.Second, OperationUpdatePause, &pauseErr)
		var claimsWhilePaused int
		env.RegisterDelayedCallback(func() {
			f.mu.Lock()
			claimsWhilePaused = len(f.claims)
			require.Equal(t, store.OperationPaused, f.status)
			f.mu.Unlock()
		}, time.Hour)
		update(env, 2*time.Hour, OperationUpdateResume, &resumeErr)
		env.RegisterDelayedCallback(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			// No batch was started while paused.
			require.Equal(t, claimsWhilePaused, len(f.claims))
		}, 2*time.Hour-time.Minute)
		env.ExecuteWorkflow(OperationExecuteWorkflowType, opInput(10, 1, 1000))
		require.True(t, env.IsWorkflowCompleted())
		require.NoError(t, env.GetWorkflowError())
		require.NoError(t, execErr)
		require.Error(t, badResume)
		require.NoError(t, pauseErr)
		require.NoError(t, resumeErr)
		require.Zero(t, f.pending)
		// At most the batch racing the pause found the operation paused
		// (it claims nothing then).
		require.LessOrEqual(t, pausedBatches, 1)
	})
	t.Run("cancel", func(t *testing.T) {
		f := newFakeOperation(1000)
		env := f.env(t, 10)
		var execErr, pauseErr, cancelErr, again error
		update(env, 0, OperationUpdateExecute, &execErr)
		update(env, 2*time.Second, OperationUpdatePause, &pauseErr)
		update(env, time.Hour, OperationUpdateCancel, &cancelErr)
		update(env, time.Hour, OperationUpdateCancel, &again)
		env.ExecuteWorkflow(OperationExecuteWorkflowType, opInput(10, 2, 1000))
		require.True(t, env.IsWorkflowCompleted())
		require.NoError(t, env.GetWorkflowError())
		require.NoError(t, execErr)
		require.NoError(t, pauseErr)
		require.NoError(t, cancelErr)
		require.Error(t, again, "a second cancel is refused")
		var prog activities.OperationProgress
		require.NoError(t, env.GetWorkflowResult(&prog))
		require.Equal(t, store.OperationCancelled, prog.Status)
		require.Equal(t, store.OperationCancelled, f.status)
	})
}

func TestOperationExecuteContinuesAsNew(t *testing.T) {
	f := newFakeOperation(100)
	env := f.env(t, 10)
	var execErr error
	update(env, 0, OperationUpdateExecute, &execErr)
	env.ExecuteWorkflow(OperationExecuteWorkflowType, opInput(10, 2, 3))
	require.True(t, env.IsWorkflowCompleted())
	err := env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, err, &can)
	require.NoError(t, execErr)
	// The next run starts executing, with the claims moved on.
	require.Less(t, f.pending, 100)
	f2 := f
	env2 := f2.env(t, 10)
	var next OperationExecuteInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.NotNil(t, next.State)
	require.True(t, next.State.Started)
	require.Equal(t, len(f.claims), next.State.NextBatch)
	env2.ExecuteWorkflow(OperationExecuteWorkflowType, next)
	require.True(t, env2.IsWorkflowCompleted())
	if err := env2.GetWorkflowError(); err != nil {
		// It may continue as new again; follow once more.
		require.ErrorAs(t, err, &can)
	}
}

func TestOperationUndoVoidsThenRestores(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(OperationUndo, workflow.RegisterOptions{Name: OperationUndoWorkflowType})
	env.RegisterActivity(&activities.OperationActivities{})
	hist := uuid.New()
	env.OnActivity(opa.PlanUndo, mock.Anything, mock.Anything).Return(operations.UndoPlan{Executed: true, Action: store.HistoryExecuted}, nil).Once()
	refused := operations.RefusedLabel{ItemID: uuid.New(), ShipmentID: uuid.New(), Reason: "already scanned"}
	env.OnActivity(opa.ReverseUndoBatch, mock.Anything, mock.MatchedBy(func(in activities.UndoStepInput) bool { return in.AfterSeq == 0 })).
		Return(operations.ReverseResult{LastSeq: 50, Voided: 49, Refused: []operations.RefusedLabel{refused}}, nil).Once()
	env.OnActivity(opa.ReverseUndoBatch, mock.Anything, mock.MatchedBy(func(in activities.UndoStepInput) bool { return in.AfterSeq == 50 })).
		Return(operations.ReverseResult{LastSeq: 70, Voided: 20, Done: true}, nil).Once()
	env.OnActivity(opa.RestoreUndoEntry, mock.Anything, mock.Anything).Return(nil).Once()
	var fin operations.FinishUndoInput
	env.OnActivity(opa.FinishUndo, mock.Anything, mock.Anything).Return(func(_ context.Context, in operations.FinishUndoInput) error {
		fin = in
		return nil
	}).Once()
	env.ExecuteWorkflow(OperationUndoWorkflowType, OperationUndoInput{Actor: domain.Actor{Kind: domain.ActorUser, OrganizationID: opOrg}, OperationID: opID, HistoryID: hist})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	env.AssertExpectations(t)
	require.Equal(t, 69, fin.Voided)
	require.Equal(t, []operations.RefusedLabel{refused}, fin.Refused)
	require.Equal(t, hist, fin.HistoryID)
}

func TestOperationUndoOfDraftChangeOnlyRestores(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(OperationUndo, workflow.RegisterOptions{Name: OperationUndoWorkflowType})
	env.RegisterActivity(&activities.OperationActivities{})
	env.OnActivity(opa.PlanUndo, mock.Anything, mock.Anything).Return(operations.UndoPlan{Action: store.HistoryActionApply, ItemIDs: []uuid.UUID{uuid.New()}}, nil).Once()
	env.OnActivity(opa.RestoreUndoEntry, mock.Anything, mock.Anything).Return(nil).Once()
	env.OnActivity(opa.FinishUndo, mock.Anything, mock.Anything).Return(nil).Once()
	env.ExecuteWorkflow(OperationUndoWorkflowType, OperationUndoInput{OperationID: opID, HistoryID: uuid.New()})
	require.NoError(t, env.GetWorkflowError())
	env.AssertExpectations(t)
}
