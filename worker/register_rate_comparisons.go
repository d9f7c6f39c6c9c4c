package worker

import (
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/workflows"
)

// registerRateComparisons registers the rate comparisons workflows and activities.
func registerRateComparisons(r sdkworker.Registry, deps Deps) {
	r.RegisterWorkflowWithOptions(workflows.RateComparison, workflow.RegisterOptions{Name: workflows.RateComparisonWorkflowType})
	r.RegisterActivity(&activities.RateComparisonActivities{
		Store:    deps.Store,
		Secrets:  deps.Secrets,
		Carriers: deps.Carriers,
		Logger:   deps.Logger.With("component", "activities", "domain", "rate_comparisons"),
	})
}
