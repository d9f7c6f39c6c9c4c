package worker

import (
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/workflows"
)

// registerTracking registers the tracking workflows and activities: the
// TrackingPoller workflow (started by the schedule/tracking-poller
// Temporal Schedule, see EnsureTrackingSchedule) and its activities.
func registerTracking(r sdkworker.Registry, deps Deps) {
	r.RegisterWorkflowWithOptions(workflows.TrackingPoller, workflow.RegisterOptions{Name: workflows.TrackingPollerWorkflowType})
	r.RegisterActivity(&activities.TrackingActivities{
		Store:    deps.Store,
		Secrets:  deps.Secrets,
		Carriers: deps.Carriers,
		Events:   agentEvents(deps),
		Logger:   deps.Logger.With("component", "activities", "domain", "tracking"),
	})
}
