package worker

import (
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/transforms"
	"github.com/fos-dev/fos/workflows"
)

// registerBridgeTasks registers the BridgeTask workflow
// (bridge-task/<taskExecutionId>) and its activities, among them the
// reconciler of task executions that Maintenance calls.
func registerBridgeTasks(r sdkworker.Registry, deps Deps) {
	hooks := deps.OrderHooks
	if hooks == nil { // as the API's order create: the organization's split rules
		hooks = &rules.Hooks{Store: deps.Store, Log: deps.Logger, Dispatcher: DispatchStarter(deps)}
	}
	// One transformations service per worker: its sandbox caches the
	// compiled programs and bounds the concurrent runs.
	var tf transforms.Loader
	if deps.Store != nil {
		tf = transforms.New(deps.Store.Pool, nil)
	}
	r.RegisterWorkflowWithOptions(workflows.BridgeTask, workflow.RegisterOptions{Name: workflows.BridgeTaskWorkflowType})
	r.RegisterActivity(&activities.BridgeTaskActivities{
		Store:      deps.Store,
		Secrets:    deps.Secrets,
		Platforms:  deps.Platforms,
		OrderHooks: hooks,
		Events:     agentEvents(deps),
		Transforms: tf,
		Logger:     deps.Logger.With("component", "activities"),
	})
}
