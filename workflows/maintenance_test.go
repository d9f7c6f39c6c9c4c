package workflows

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/fos-dev/fos/activities"
)

func TestMaintenancePurges(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var a *activities.MaintenanceActivities
	env.RegisterActivity(a)
	env.OnActivity(a.PurgeExpired, mock.Anything, activities.PurgeExpiredInput{}).Return(activities.PurgeExpiredResult{IdempotencyKeys: 7}, nil).Once()
	env.ExecuteWorkflow(Maintenance)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res MaintenanceResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, int64(7), res.IdempotencyKeys)
	env.AssertExpectations(t)
}

func TestMaintenanceRetriesThenFails(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var a *activities.MaintenanceActivities
	env.RegisterActivity(a)
	env.OnActivity(a.PurgeExpired, mock.Anything, mock.Anything).Return(activities.PurgeExpiredResult{}, errors.New("db down")).Times(5)
	env.ExecuteWorkflow(Maintenance)
	require.Error(t, env.GetWorkflowError())
	env.AssertExpectations(t)
}
