package worker

import (
	"context"
	"time"

	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/workflows"
)

// registerShipments registers the shipments workflows and activities:
// ShipmentLabel (shipment-label/<shipmentId>), PickupBooking
// (pickup/<pickupId>), PickupCancel (pickup-cancel/<pickupId>),
// ShipmentAction (shipment-action/<actionId>) and PickupCompletion (run by
// the schedule/pickup-completion Schedule, see
// EnsurePickupCompletionSchedule).
func registerShipments(r sdkworker.Registry, deps Deps) {
	r.RegisterWorkflowWithOptions(workflows.ShipmentLabel, workflow.RegisterOptions{Name: workflows.ShipmentLabelWorkflowType})
	r.RegisterWorkflowWithOptions(workflows.PickupBooking, workflow.RegisterOptions{Name: workflows.PickupBookingWorkflowType})
	r.RegisterWorkflowWithOptions(workflows.PickupCancel, workflow.RegisterOptions{Name: workflows.PickupCancelWorkflowType})
	r.RegisterWorkflowWithOptions(workflows.ShipmentAction, workflow.RegisterOptions{Name: workflows.ShipmentActionWorkflowType})
	r.RegisterWorkflowWithOptions(workflows.PickupCompletion, workflow.RegisterOptions{Name: workflows.PickupCompletionWorkflowType})
	r.RegisterActivity(&activities.ShipmentActivities{
		Store:    deps.Store,
		Secrets:  deps.Secrets,
		Carriers: deps.Carriers,
		Logger:   deps.Logger.With("component", "activities"),
		Temporal: deps.Temporal,
	})
}

// PickupCompletionInterval is how often the pickup-completion schedule runs.
const PickupCompletionInterval = time.Hour

// EnsurePickupCompletionSchedule creates (or, when it exists, updates) the
// Temporal Schedule schedule/pickup-completion, which starts the
// PickupCompletion workflow on taskQueue every hour (and once right after
// it is created) to persist the completion of confirmed pickups whose date
// has passed. Overlapping runs are skipped. It is idempotent: call it at
// worker startup.
func EnsurePickupCompletionSchedule(ctx context.Context, c client.Client, taskQueue string) error {
	return ensureSchedule(ctx, c, scheduleSpec{
		id:    workflows.PickupCompletionScheduleID,
		every: PickupCompletionInterval,
		action: &client.ScheduleWorkflowAction{
			ID:                       workflows.PickupCompletionWorkflowID,
			Workflow:                 workflows.PickupCompletionWorkflowType,
			TaskQueue:                taskQueue,
			WorkflowExecutionTimeout: 30 * time.Minute,
			Memo:                     map[string]any{"job": "pickup-completion"},
		},
		note:       "marks confirmed pickups whose date has passed completed",
		triggerNow: true,
	})
}
