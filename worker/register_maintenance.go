package worker

import (
	"context"
	"os"
	"time"

	"github.com/google/uuid"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/workflows"
)

// ReconcilerActor is who a reconciler's restart is attributed to.
var ReconcilerActor = activities.Actor{Type: "system", Name: "reconciler"}

// registerMaintenance registers the Maintenance workflow and its
// activities; the reconciler describes runs and restarts them with the
// worker's Temporal client (nil: nothing is reconciled).
func registerMaintenance(r sdkworker.Registry, deps Deps) {
	r.RegisterWorkflowWithOptions(workflows.Maintenance, workflow.RegisterOptions{Name: workflows.MaintenanceWorkflowType})
	a := &activities.MaintenanceActivities{
		Store:    deps.Store,
		Logger:   deps.Logger.With("component", "activities", "domain", "maintenance"),
		Temporal: deps.Temporal,
		Repaired: deps.Metrics.Repaired,
		// Inbound webhook event retention (Go durations, e.g. 720h;
		// defaults 30 and 90 days).
		WebhookEventRetention:  envDuration(deps, "FOS_WEBHOOK_EVENT_RETENTION"),
		WebhookDedupeRetention: envDuration(deps, "FOS_WEBHOOK_DEDUPE_RETENTION"),
	}
	if deps.Temporal != nil {
		queue := deps.BulkTaskQueue
		if queue == "" {
			queue = deps.TaskQueue
		}
		// The same queue, options and input as POST
		// /rate-comparisons/{id}/process, joining a run that exists.
		a.StartRateComparison = func(ctx context.Context, orgID, id string) error {
			opts := StartOptions(workflows.RateComparisonWorkflowID(id), queue, orgID, map[string]any{"comparisonId": id})
			_, err := deps.Temporal.ExecuteWorkflow(ctx, opts, workflows.RateComparison, workflows.NewRateComparisonInput(orgID, id, ReconcilerActor))
			return err
		}
		dispatch := dispatchStarter(deps)
		a.StartDispatch = func(ctx context.Context, orgID, id uuid.UUID) error {
			return dispatch.StartSingle(ctx, orgID, id)
		}
		a.DrainDispatch = func(ctx context.Context, orgID, bridgeID uuid.UUID) error {
			// Not debounced: the reconciler signals a drainer it found gone.
			d := dispatch
			d.Debounce = nil
			return d.DrainBridges(ctx, orgID, []uuid.UUID{bridgeID})
		}
		ops := TemporalOperations{Client: deps.Temporal, TaskQueue: queue, Log: deps.Logger}
		a.StartOperation = func(ctx context.Context, orgID, id uuid.UUID) error { return ops.Restart(ctx, deps.Store, orgID, id) }
		a.StartOperationUndo = func(ctx context.Context, orgID, id uuid.UUID) error {
			return ops.RestartUndo(ctx, deps.Store, orgID, id)
		}
	}
	r.RegisterActivity(a)
}

// envDuration reads a duration from the environment (zero: unset or
// invalid, then the default applies; an invalid value is logged).
func envDuration(deps Deps, name string) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		deps.Logger.Warn("ignoring an invalid duration", "variable", name, "value", v)
		return 0
	}
	return d
}
