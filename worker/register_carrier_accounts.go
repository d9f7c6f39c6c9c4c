package worker

import (
	"log/slog"

	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/workflows"
)

// registerCarrierAccounts registers the carrier accounts workflows and
// activities: the carrier_a CarrierRegistration workflow and its activities.
func registerCarrierAccounts(r sdkworker.Registry, deps Deps) {
	logger := deps.Logger
	if logger == nil {
		logger = slog.Default()
	}
	r.RegisterWorkflowWithOptions(workflows.CarrierRegistration, workflow.RegisterOptions{Name: workflows.CarrierRegistrationWorkflowType})
	r.RegisterActivity(&activities.CarrierAccountActivities{
		Store:    deps.Store,
		Secrets:  deps.Secrets,
		Carriers: deps.Carriers,
		Logger:   logger.With("component", "activities"),
	})
}
