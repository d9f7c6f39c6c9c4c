package workflows

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/fos-dev/fos/activities"
)

func TestMaintenancePurgesAndReconciles(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var a *activities.MaintenanceActivities
	env.RegisterActivity(a)
	env.OnActivity(a.PurgeExpired, mock.Anything, activities.PurgeExpiredInput{}).Return(activities.PurgeExpiredResult{IdempotencyKeys: 7}, nil).Once()
	env.OnActivity(a.ReconcileRuns, mock.Anything, activities.ReconcileRunsInput{}).Return(activities.ReconcileRunsResult{Checked: 3, Restarted: 1, Failed: 1}, nil).Once()
	var sa *activities.ShipmentActivities
	env.RegisterActivity(sa)
	env.OnActivity(sa.ReconcileShipments, mock.Anything, activities.ReconcileShipmentsInput{}).Return(activities.ReconcileShipmentsResult{Running: 1, Removed: 2, Failed: 3}, nil).Once()
	var sc *activities.ScheduleActivities
	env.RegisterActivity(sc)
	env.OnActivity(sc.ReconcileSchedules, mock.Anything, activities.ReconcileSchedulesInput{}).Return(activities.ReconcileSchedulesResult{Checked: 2, Created: 1}, nil).Once()
	env.ExecuteWorkflow(Maintenance)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res MaintenanceResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, MaintenanceResult{PurgeExpiredResult: activities.PurgeExpiredResult{IdempotencyKeys: 7}, Runs: activities.ReconcileRunsResult{Checked: 3, Restarted: 1, Failed: 1},
		Shipments: activities.ReconcileShipmentsResult{Running: 1, Removed: 2, Failed: 3}}, res)
	env.AssertExpectations(t)
}

// A failed step does not stop the next one, and fails the run.
func TestMaintenanceStepFailsRunButNextStepRuns(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var a *activities.MaintenanceActivities
	env.RegisterActivity(a)
	env.OnActivity(a.PurgeExpired, mock.Anything, mock.Anything).Return(activities.PurgeExpiredResult{}, errors.New("db down")).Times(5)
	env.OnActivity(a.ReconcileRuns, mock.Anything, mock.Anything).Return(activities.ReconcileRunsResult{Checked: 1}, nil).Once()
	var sa *activities.ShipmentActivities
	env.RegisterActivity(sa)
	env.OnActivity(sa.ReconcileShipments, mock.Anything, mock.Anything).Return(activities.ReconcileShipmentsResult{}, nil).Once()
	var sc *activities.ScheduleActivities
	env.RegisterActivity(sc)
	env.OnActivity(sc.ReconcileSchedules, mock.Anything, mock.Anything).Return(activities.ReconcileSchedulesResult{}, nil).Once()
	env.ExecuteWorkflow(Maintenance)
	require.Error(t, env.GetWorkflowError())
	require.Contains(t, env.GetWorkflowError().Error(), "db down")
	env.AssertExpectations(t)
}
