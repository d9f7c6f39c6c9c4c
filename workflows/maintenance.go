package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
)

// Maintenance runs on the schedule schedule/maintenance (hourly) and purges
// expired records (Idempotency-Key responses older than 24 hours).
const (
	MaintenanceWorkflowType = "Maintenance"
	MaintenanceWorkflowID   = "maintenance"
	MaintenanceScheduleID   = "schedule/maintenance"
)

// MaintenanceResult is what one run removed.
type MaintenanceResult struct {
	IdempotencyKeys int64 `json:"idempotencyKeys"`
}

var purgeOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 5 * time.Minute,
	RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 5 * time.Second, BackoffCoefficient: 2, MaximumAttempts: 5},
}

// Maintenance purges expired records.
func Maintenance(ctx workflow.Context) (MaintenanceResult, error) {
	var a *activities.MaintenanceActivities
	var res activities.PurgeExpiredResult
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, purgeOptions), a.PurgeExpired, activities.PurgeExpiredInput{}).Get(ctx, &res); err != nil {
		return MaintenanceResult{}, err
	}
	return MaintenanceResult{IdempotencyKeys: res.IdempotencyKeys}, nil
}
