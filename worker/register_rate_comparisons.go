package worker

import sdkworker "go.temporal.io/sdk/worker"

// registerRateComparisons registers the rate comparisons workflows and activities.
func registerRateComparisons(r sdkworker.Registry, deps Deps) {}
