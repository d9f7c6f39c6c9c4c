package worker

import (
	"github.com/fos-dev/fos/rules"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/workflows"
)

// registerDispatch registers the DispatchAssignment workflow
// (dispatch/<assignmentId>, started on the bulk task queue) and its
// activities.
func registerDispatch(r sdkworker.Registry, deps Deps) {
	r.RegisterWorkflowWithOptions(workflows.DispatchAssignment, workflow.RegisterOptions{Name: workflows.DispatchAssignmentWorkflowType})
	r.RegisterActivity(&activities.DispatchActivities{
		Store:     deps.Store,
		Secrets:   deps.Secrets,
		Platforms: deps.Platforms,
		Logger:    deps.Logger.With("component", "activities"),
	})
}

// DispatchStarter starts DispatchAssignment runs on the bulk task queue
// with the worker's client (nil without a client).
func DispatchStarter(deps Deps) rules.DispatchStarter {
	if deps.Temporal == nil {
		return nil
	}
	queue := deps.BulkTaskQueue
	if queue == "" {
		queue = deps.TaskQueue
	}
	return rules.TemporalDispatch{Client: deps.Temporal, TaskQueue: queue, Options: StartOptions}
}
