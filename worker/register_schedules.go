package worker

import (
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/workflows"
)

// registerSchedules registers ScheduledBridgeTask (started by the fires
// of the schedules' Temporal Schedules) and its activities, among them
// the schedules' reconciler that Maintenance calls. Fires run on the bulk
// queue, as BridgeTask and as the API creates them.
func registerSchedules(r sdkworker.Registry, deps Deps) {
	queue := deps.BulkTaskQueue
	if queue == "" {
		queue = deps.TaskQueue
	}
	r.RegisterWorkflowWithOptions(workflows.ScheduledBridgeTask, workflow.RegisterOptions{Name: workflows.ScheduledBridgeTaskWorkflowType})
	r.RegisterActivity(&activities.ScheduleActivities{
		Store:     deps.Store,
		Logger:    deps.Logger.With("component", "activities", "domain", "schedules"),
		Temporal:  deps.Temporal,
		TaskQueue: queue,
	})
}
