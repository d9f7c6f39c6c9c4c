package workflows

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/rules"
)

// batchEnv runs DispatchBatch with DrainDispatchPage answering pages in
// turn (the last one forever); it records the inputs.
func batchEnv(t *testing.T, pages ...activities.DrainPageResult) (*testsuite.TestWorkflowEnvironment, rules.DispatchBatchInput, *[]activities.DrainPageInput) {
	t.Helper()
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.RegisterActivity(&activities.DispatchActivities{})
	in := rules.DispatchBatchInput{OrganizationID: uuid.New(), BridgeID: uuid.New()}
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: rules.DispatchBatchWorkflowID(in.BridgeID)})
	var calls []activities.DrainPageInput
	env.OnActivity(da.DrainDispatchPage, mock.Anything, mock.Anything).Return(func(_ context.Context, p activities.DrainPageInput) (activities.DrainPageResult, error) {
		calls = append(calls, p)
		i := min(len(calls), len(pages)) - 1
		return pages[i], nil
	})
	return env, in, &calls
}

// A drainer claims pages until one is empty, waits the idle time for a
// signal, claims once more and ends completed; each page has its own
// claim token, on the drainer's id.
func TestDispatchBatchDrainsAndEnds(t *testing.T) {
	env, in, calls := batchEnv(t,
		activities.DrainPageResult{Claimed: 500, Completed: 499, Skipped: 1},
		activities.DrainPageResult{Claimed: 20, Completed: 20},
		activities.DrainPageResult{})
	env.ExecuteWorkflow(DispatchBatch, in)
	require.NoError(t, env.GetWorkflowError())
	var res DispatchBatchResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, 519, res.Completed)
	require.Equal(t, 1, res.Skipped)
	require.Equal(t, 520, res.Claimed)
	require.Len(t, *calls, 4, "two pages, an empty one, the idle wait, one more claim")
	tokens := map[string]bool{}
	for _, c := range *calls {
		require.Equal(t, in.BridgeID, c.BridgeID)
		require.Equal(t, "dispatch-batch/"+in.BridgeID.String(), c.WorkflowID)
		require.True(t, strings.HasPrefix(c.Token, c.WorkflowID+"/"), c.Token)
		tokens[c.Token] = true
	}
	require.Len(t, tokens, 4, "one claim token per page")
}

// A signal while the drainer waits idle makes it claim again at once.
func TestDispatchBatchSignalWakesIdleDrainer(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.RegisterActivity(&activities.DispatchActivities{})
	in := rules.DispatchBatchInput{OrganizationID: uuid.New(), BridgeID: uuid.New()}
	var signalled bool
	var afterSignal int
	env.OnActivity(da.DrainDispatchPage, mock.Anything, mock.Anything).Return(func(context.Context, activities.DrainPageInput) (activities.DrainPageResult, error) {
		if signalled {
			afterSignal++
			if afterSignal == 1 {
				return activities.DrainPageResult{Claimed: 3, Completed: 3}, nil
			}
		}
		return activities.DrainPageResult{}, nil
	})
	env.RegisterDelayedCallback(func() {
		signalled = true
		env.SignalWorkflow(rules.DispatchBatchSignal, nil)
	}, 3*time.Second)
	env.ExecuteWorkflow(DispatchBatch, in)
	require.NoError(t, env.GetWorkflowError())
	var res DispatchBatchResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, 3, res.Completed, "the signal's assignments were claimed")
}

// A drainer whose assignments failed ends Failed (the UI shows it), with
// the count and the last reason, after draining everything.
func TestDispatchBatchEndsFailedWhenAssignmentsFailed(t *testing.T) {
	env, in, calls := batchEnv(t,
		activities.DrainPageResult{Claimed: 10, Completed: 8, Failed: 2, LastError: `the destination bridge "Hub" (shipping_hub_a) cannot accept orders`},
		activities.DrainPageResult{})
	env.ExecuteWorkflow(DispatchBatch, in)
	err := env.GetWorkflowError()
	require.Error(t, err)
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "%v", err)
	require.Equal(t, ErrTypeDispatchBatchFailed, appErr.Type())
	require.Contains(t, appErr.Message(), "2 of 10 assignments failed")
	require.Contains(t, appErr.Message(), "cannot accept orders")
	require.Len(t, *calls, 3)
}

// A long drain continues as new with its totals.
func TestDispatchBatchContinuesAsNew(t *testing.T) {
	env, in, _ := batchEnv(t, activities.DrainPageResult{Claimed: 500, Completed: 500})
	in.Totals = rules.DispatchBatchTotal{Pages: 7, Claimed: 3500, Completed: 3500}
	env.ExecuteWorkflow(DispatchBatch, in)
	err := env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(err, &can), "%v", err)
	require.Equal(t, DispatchBatchWorkflowType, can.WorkflowType.Name)
}
