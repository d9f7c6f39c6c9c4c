package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/workflows"
)

// DefaultTrackingEvery is how often the tracking poller runs by default.
const DefaultTrackingEvery = 15 * time.Minute

// EnsureTrackingSchedule creates, or brings up to date, the Temporal
// Schedule schedule/tracking-poller that starts a TrackingPoller workflow
// on taskQueue every `every` (0: DefaultTrackingEvery). It is idempotent:
// call it at every worker start. A poll still running when the next is due
// makes that one skipped (overlap SKIP); missed polls are not caught up
// beyond one interval.
func EnsureTrackingSchedule(ctx context.Context, c client.Client, taskQueue string, every time.Duration) error {
	if every <= 0 {
		every = DefaultTrackingEvery
	}
	spec := client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: every}}}
	action := &client.ScheduleWorkflowAction{
		ID:        workflows.TrackingPollerWorkflowID,
		Workflow:  workflows.TrackingPollerWorkflowType,
		Args:      []any{workflows.TrackingPollerInput{}},
		TaskQueue: taskQueue,
		Memo:      map[string]any{"scheduleId": workflows.TrackingPollerScheduleID},
	}
	policy := client.SchedulePolicies{Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP, CatchupWindow: every}

	sc := c.ScheduleClient()
	_, err := sc.Create(ctx, client.ScheduleOptions{
		ID:            workflows.TrackingPollerScheduleID,
		Spec:          spec,
		Action:        action,
		Overlap:       policy.Overlap,
		CatchupWindow: policy.CatchupWindow,
		Note:          "tracks carrier-tracked shipments that are still moving",
	})
	if err == nil {
		return nil
	}
	if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return fmt.Errorf("create schedule %s: %w", workflows.TrackingPollerScheduleID, err)
	}
	h := sc.GetHandle(ctx, workflows.TrackingPollerScheduleID)
	err = h.Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			s := in.Description.Schedule
			s.Spec = &spec
			s.Action = action
			s.Policy = &policy
			return &client.ScheduleUpdate{Schedule: &s}, nil
		},
	})
	if err != nil {
		return fmt.Errorf("update schedule %s: %w", workflows.TrackingPollerScheduleID, err)
	}
	return nil
}
