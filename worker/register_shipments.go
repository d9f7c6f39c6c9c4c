package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/workflows"
)

// registerShipments registers the shipments workflows and activities:
// ShipmentAction (shipment-action/<actionId>) and PickupCompletion (run by
// the schedule/pickup-completion Schedule, see
// EnsurePickupCompletionSchedule).
func registerShipments(r sdkworker.Registry, deps Deps) {
	r.RegisterWorkflowWithOptions(workflows.ShipmentAction, workflow.RegisterOptions{Name: workflows.ShipmentActionWorkflowType})
	r.RegisterWorkflowWithOptions(workflows.PickupCompletion, workflow.RegisterOptions{Name: workflows.PickupCompletionWorkflowType})
	r.RegisterActivity(&activities.ShipmentActivities{
		Store:    deps.Store,
		Secrets:  deps.Secrets,
		Carriers: deps.Carriers,
		Logger:   deps.Logger.With("component", "activities"),
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
	action := &client.ScheduleWorkflowAction{
		ID:                       workflows.PickupCompletionWorkflowID,
		Workflow:                 workflows.PickupCompletionWorkflowType,
		TaskQueue:                taskQueue,
		WorkflowExecutionTimeout: 30 * time.Minute,
		Memo:                     map[string]any{"job": "pickup-completion"},
	}
	spec := client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: PickupCompletionInterval}}}
	_, err := c.ScheduleClient().Create(ctx, client.ScheduleOptions{
		ID:                 workflows.PickupCompletionScheduleID,
		Spec:               spec,
		Action:             action,
		Overlap:            enumspb.SCHEDULE_OVERLAP_POLICY_SKIP,
		CatchupWindow:      PickupCompletionInterval,
		TriggerImmediately: true,
		Memo:               map[string]any{"job": "pickup-completion"},
	})
	if err == nil {
		return nil
	}
	if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return fmt.Errorf("create schedule %s: %w", workflows.PickupCompletionScheduleID, err)
	}
	// It exists: make its spec and action the current ones (e.g. another
	// task queue).
	h := c.ScheduleClient().GetHandle(ctx, workflows.PickupCompletionScheduleID)
	err = h.Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			s := in.Description.Schedule
			s.Spec = &spec
			s.Action = action
			if s.Policy == nil {
				s.Policy = &client.SchedulePolicies{}
			}
			s.Policy.Overlap = enumspb.SCHEDULE_OVERLAP_POLICY_SKIP
			s.Policy.CatchupWindow = PickupCompletionInterval
			return &client.ScheduleUpdate{Schedule: &s}, nil
		},
	})
	if err != nil {
		return fmt.Errorf("update schedule %s: %w", workflows.PickupCompletionScheduleID, err)
	}
	return nil
}
