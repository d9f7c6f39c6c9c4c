// Package worker builds the Temporal worker: the one place where every
// workflow and activity is registered, and the options every workflow start
// uses (search attributes, memo, ID conflict policy).
package worker

import (
	"log/slog"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/agent"
	"github.com/fos-dev/fos/agent/llm"
	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/telemetry"
	"github.com/fos-dev/fos/workflows"
)

// Deps are the dependencies of the activities.
type Deps struct {
	Store   *store.Store
	Secrets *secrets.Box
	// Platforms maps bridge types to platform connectors (the sandbox
	// connector for every type under FOS_SANDBOX=1).
	Platforms *platforms.Registry
	// Carriers maps carrier codes to carrier adapters.
	Carriers *carriers.Registry
	// OrderHooks runs for each order a bridge sync creates (nil:
	// rules.Hooks over Store, as the API).
	OrderHooks rules.OrderHooks
	Logger     *slog.Logger
	// Options tunes the Temporal worker (zero value: SDK defaults).
	Options sdkworker.Options
	// Temporal and TaskQueue are the worker's client and queue, for the
	// activities that start or describe workflows (set by New).
	Temporal  client.Client
	TaskQueue string
	// BulkTaskQueue is where bulk work (rate comparisons) is started, as
	// the API starts it (empty: TaskQueue).
	BulkTaskQueue string
	// Embed configures the embed activities; EmbedTaskQueue is where
	// delivery retries start (empty: WebhookTaskQueue(TaskQueue)).
	Embed          EmbedDeps
	EmbedTaskQueue string
	// Metrics counts the reconciler's repairs (nil: not counted).
	Metrics *telemetry.Metrics
	// LLM is the agent's model (FOS_LLM_PROVIDER; nil: none) and Agent
	// its settings (approval TTL, turn budget).
	LLM   llm.Provider
	Agent agent.Config
}

// New returns a worker on taskQueue with every workflow and activity
// registered. The caller starts and stops it (Run, Start, Stop).
func New(c client.Client, taskQueue string, deps Deps) sdkworker.Worker {
	w := sdkworker.New(c, taskQueue, deps.Options)
	deps.Temporal, deps.TaskQueue = c, taskQueue
	Register(w, deps)
	return w
}

// Register registers every workflow and activity on r.
func Register(r sdkworker.Registry, deps Deps) {
	logger := deps.Logger
	if logger == nil {
		logger = slog.Default()
	}

	r.RegisterWorkflowWithOptions(workflows.OrderResync, workflow.RegisterOptions{Name: workflows.OrderResyncWorkflowType})
	r.RegisterActivity(&activities.OrderActivities{
		Store:     deps.Store,
		Secrets:   deps.Secrets,
		Platforms: deps.Platforms,
		Logger:    logger.With("component", "activities"),
	})
	deps.Logger = logger
	registerMaintenance(r, deps)
	// One function per domain, each in its own file (register_<domain>.go).
	registerCarrierAccounts(r, deps)
	registerShipments(r, deps)
	registerTracking(r, deps)
	registerRateComparisons(r, deps)
	registerBridgeTasks(r, deps)
	registerWebhooks(r, deps)
	registerSchedules(r, deps)
	registerDispatch(r, deps)
	registerOperations(r, deps)
	registerEmbed(r, deps)
	registerAgent(r, deps)
}

// OrganizationIDKey is the search attribute every workflow carries
// (CONTRACT section 5).
var OrganizationIDKey = temporal.NewSearchAttributeKeyKeyword("OrganizationId")
