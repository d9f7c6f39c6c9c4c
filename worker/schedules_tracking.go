package worker

import (
	"context"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/fos-dev/fos/workflows"
)

// DefaultTrackingEvery is how often the tracking poller runs by default.
const DefaultTrackingEvery = 15 * time.Minute

// TrackingExecutionTimeout bounds one poll (continue-as-new runs
// included): two intervals, at least 30 minutes, so a stuck poll delays at
// most one later poll.
func TrackingExecutionTimeout(every time.Duration) time.Duration {
	return max(2*every, 30*time.Minute)
}

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
	return ensureSchedule(ctx, c, scheduleSpec{
		id:    workflows.TrackingPollerScheduleID,
		every: every,
		action: &client.ScheduleWorkflowAction{
			ID:        workflows.TrackingPollerWorkflowID,
			Workflow:  workflows.TrackingPollerWorkflowType,
			Args:      []any{workflows.TrackingPollerInput{}},
			TaskQueue: taskQueue,
			// A stuck poll ends in time: with overlap SKIP it would
			// otherwise block every later one.
			WorkflowExecutionTimeout: TrackingExecutionTimeout(every),
			Memo:                     map[string]any{"scheduleId": workflows.TrackingPollerScheduleID},
		},
		note: "tracks carrier-tracked shipments that are still moving",
	})
}
