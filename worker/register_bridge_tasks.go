package worker

import (
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/workflows"
)

// registerBridgeTasks registers the BridgeTask workflow
// (bridge-task/<taskExecutionId>) and its activities, among them the
// reconciler of task executions that Maintenance calls.
func registerBridgeTasks(r sdkworker.Registry, deps Deps) {
	r.RegisterWorkflowWithOptions(workflows.BridgeTask, workflow.RegisterOptions{Name: workflows.BridgeTaskWorkflowType})
	r.RegisterActivity(&activities.BridgeTaskActivities{
		Store:      deps.Store,
		Secrets:    deps.Secrets,
		Platforms:  deps.Platforms,
		OrderHooks: deps.OrderHooks,
		Logger:     deps.Logger.With("component", "activities"),
	})
}
