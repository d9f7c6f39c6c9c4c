package workflows

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/store"
)

var da *activities.DispatchActivities

func dispatchEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, rules.DispatchInput, *[]activities.FinishDispatchInput) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.RegisterActivity(&activities.DispatchActivities{})
	in := rules.DispatchInput{OrganizationID: uuid.New(), AssignmentID: uuid.New()}
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: rules.DispatchWorkflowID(in.AssignmentID)})
	var finished []activities.FinishDispatchInput
	env.OnActivity(da.FinishDispatch, mock.Anything, mock.Anything).Return(func(_ context.Context, f activities.FinishDispatchInput) (bool, error) {
		finished = append(finished, f)
		return true, nil
	})
	return env, in, &finished
}

func TestDispatchAssignmentCompletes(t *testing.T) {
	env, in, finished := dispatchEnv(t)
	env.OnActivity(da.BeginDispatch, mock.Anything, in).Return(activities.BeginDispatchResult{Status: store.AssignmentProcessing}, nil).Once()
	env.OnActivity(da.PushDispatch, mock.Anything, in).Return(activities.PushDispatchResult{ExternalID: "900", Kind: "fulfillment"}, nil).Once()
	env.ExecuteWorkflow(DispatchAssignment, in)
	require.NoError(t, env.GetWorkflowError())
	var res DispatchAssignmentResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, store.AssignmentCompleted, res.Status)
	require.Len(t, *finished, 1)
	f := (*finished)[0]
	require.Equal(t, store.AssignmentCompleted, f.Status)
	require.Equal(t, "900", f.Push.ExternalID)
	require.Equal(t, "dispatch/"+in.AssignmentID.String(), f.WorkflowID)
}

func TestDispatchAssignmentTransientThenDone(t *testing.T) {
	env, in, finished := dispatchEnv(t)
	env.OnActivity(da.BeginDispatch, mock.Anything, in).Return(activities.BeginDispatchResult{Status: store.AssignmentProcessing}, nil)
	env.OnActivity(da.PushDispatch, mock.Anything, in).Return(activities.PushDispatchResult{}, temporal.NewApplicationError("hub 503", activities.ErrTypePlatformUnavailable)).Once()
	env.OnActivity(da.PushDispatch, mock.Anything, in).Return(activities.PushDispatchResult{ExternalID: "901", Kind: "fulfillment"}, nil).Once()
	env.ExecuteWorkflow(DispatchAssignment, in)
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, store.AssignmentCompleted, (*finished)[0].Status, "a push is keyed by the order: retried")
}

func TestDispatchAssignmentCannotAcceptOrders(t *testing.T) {
	env, in, finished := dispatchEnv(t)
	env.OnActivity(da.BeginDispatch, mock.Anything, in).Return(activities.BeginDispatchResult{Status: store.AssignmentProcessing}, nil)
	env.OnActivity(da.PushDispatch, mock.Anything, in).Return(activities.PushDispatchResult{},
		temporal.NewNonRetryableApplicationError(`the destination bridge "Shop" (storefront_b) cannot accept orders`, activities.ErrTypeCannotAcceptOrders, nil)).Once()
	env.ExecuteWorkflow(DispatchAssignment, in)
	// The run ends Failed (the Temporal UI shows why), not Completed.
	err := env.GetWorkflowError()
	require.Error(t, err)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.Equal(t, ErrTypeDispatchFailed, appErr.Type())
	require.True(t, appErr.NonRetryable())
	require.Contains(t, appErr.Error(), "cannot accept orders")
	require.Len(t, *finished, 1)
	require.Equal(t, store.AssignmentFailed, (*finished)[0].Status)
	require.Contains(t, (*finished)[0].Error, "cannot accept orders")
}

func TestDispatchAssignmentSkippedAndAlreadyDone(t *testing.T) {
	env, in, finished := dispatchEnv(t)
	env.OnActivity(da.BeginDispatch, mock.Anything, in).Return(activities.BeginDispatchResult{Status: store.AssignmentProcessing}, nil)
	env.OnActivity(da.PushDispatch, mock.Anything, in).Return(activities.PushDispatchResult{Skipped: true, SkipReason: "the order is cancelled"}, nil)
	env.ExecuteWorkflow(DispatchAssignment, in)
	require.NoError(t, env.GetWorkflowError())
	require.Equal(t, store.AssignmentSkipped, (*finished)[0].Status)

	env, in, finished = dispatchEnv(t)
	env.OnActivity(da.BeginDispatch, mock.Anything, in).Return(activities.BeginDispatchResult{Status: store.AssignmentCompleted}, nil)
	env.ExecuteWorkflow(DispatchAssignment, in)
	require.NoError(t, env.GetWorkflowError())
	require.Empty(t, *finished, "a finished assignment is not pushed again")
}
