package worker

import (
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/transforms"
	"github.com/fos-dev/fos/workflows"
)

// registerWebhooks registers the InboundWebhook workflow
// (inbound-webhook/<eventId>, started by the WebhookRelay) and its
// activities. Events are re-fetched through deps.Platforms.
func registerWebhooks(r sdkworker.Registry, deps Deps) {
	plat := deps.Platforms
	hooks := deps.OrderHooks
	if hooks == nil { // as the API's order create and the bridge tasks
		hooks = &rules.Hooks{Store: deps.Store, Log: deps.Logger, Dispatcher: DispatchStarter(deps)}
	}
	var tf transforms.Loader
	if deps.Store != nil {
		tf = transforms.New(deps.Store.Pool, nil)
	}
	r.RegisterWorkflowWithOptions(workflows.InboundWebhook, workflow.RegisterOptions{Name: workflows.InboundWebhookWorkflowType})
	r.RegisterActivity(&activities.WebhookActivities{
		Store:      deps.Store,
		Secrets:    deps.Secrets,
		Platforms:  plat,
		Hooks:      hooks,
		Events:     agentEvents(deps),
		Transforms: tf,
		Logger:     deps.Logger.With("component", "activities", "domain", "webhooks"),
	})
}
