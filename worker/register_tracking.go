package worker

import sdkworker "go.temporal.io/sdk/worker"

// registerTracking registers the tracking workflows and activities.
func registerTracking(r sdkworker.Registry, deps Deps) {}
