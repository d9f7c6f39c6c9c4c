package worker

import sdkworker "go.temporal.io/sdk/worker"

// registerShipments registers the shipments workflows and activities.
func registerShipments(r sdkworker.Registry, deps Deps) {}
