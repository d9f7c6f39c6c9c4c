package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
)

// Maintenance runs on the schedule schedule/maintenance (every five
// minutes): it purges expired records (Idempotency-Key responses older
// than 24 hours) and reconciles the rows that wait on a workflow with their
// runs.
const (
	MaintenanceWorkflowType = "Maintenance"
	MaintenanceWorkflowID   = "maintenance"
	MaintenanceScheduleID   = "schedule/maintenance"
)

// MaintenanceResult is what one run removed and reconciled.
type MaintenanceResult struct {
	// What PurgeExpired removed (its fields, at the top level).
	activities.PurgeExpiredResult
	// Runs: rate comparisons and carrier registrations.
	Runs activities.ReconcileRunsResult `json:"runs"`
	// Shipments: shipments, pickups and shipment actions.
	Shipments activities.ReconcileShipmentsResult `json:"shipments"`
}

var (
	purgeOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 5 * time.Second, BackoffCoefficient: 2, MaximumAttempts: 5},
	}
	// reconcileOptions: a few hundred describes at most; the next run (in
	// five minutes) picks up what one could not finish.
	reconcileOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 3 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: 5 * time.Second, BackoffCoefficient: 2, MaximumAttempts: 3},
	}
)

// Maintenance is a plain sequence of independent steps, one activity each.
// A failed step does not stop the later ones; the run fails at the end
// when any step failed, so the Temporal UI shows it. Add a step by
// appending one more call: a step appended after the others keeps the
// histories of earlier runs replayable.
func Maintenance(ctx workflow.Context) (MaintenanceResult, error) {
	var a *activities.MaintenanceActivities
	var res MaintenanceResult
	var errs []error
	step := func(opts workflow.ActivityOptions, fn, in, out any) {
		if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), fn, in).Get(ctx, out); err != nil {
			workflow.GetLogger(ctx).Warn("maintenance step failed", "Error", err)
			errs = append(errs, err)
		}
	}

	step(purgeOptions, a.PurgeExpired, activities.PurgeExpiredInput{}, &res.PurgeExpiredResult)
	step(reconcileOptions, a.ReconcileRuns, activities.ReconcileRunsInput{}, &res.Runs)
	var sa *activities.ShipmentActivities
	step(reconcileOptions, sa.ReconcileShipments, activities.ReconcileShipmentsInput{}, &res.Shipments)
	step(reconcileOptions, (*activities.ScheduleActivities)(nil).ReconcileSchedules, activities.ReconcileSchedulesInput{}, nil)

	return res, errors.Join(errs...)
}
