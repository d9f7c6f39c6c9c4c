package worker

import sdkworker "go.temporal.io/sdk/worker"

// registerCarrierAccounts registers the carrier accounts workflows and activities.
func registerCarrierAccounts(r sdkworker.Registry, deps Deps) {}
