package worker

import (
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/workflows"
)

// registerDispatch registers the dispatch workflows — DispatchBatch, a
// destination's drainer (dispatch-batch/<bridgeId>), and
// DispatchAssignment, one assignment's own run for an explicit retry
// (dispatch/<assignmentId>), both started on the bulk task queue — and
// their activities.
func registerDispatch(r sdkworker.Registry, deps Deps) {
	r.RegisterWorkflowWithOptions(workflows.DispatchAssignment, workflow.RegisterOptions{Name: workflows.DispatchAssignmentWorkflowType})
	r.RegisterWorkflowWithOptions(workflows.DispatchBatch, workflow.RegisterOptions{Name: workflows.DispatchBatchWorkflowType})
	r.RegisterActivity(&activities.DispatchActivities{
		Store:     deps.Store,
		Secrets:   deps.Secrets,
		Platforms: deps.Platforms,
		Logger:    deps.Logger.With("component", "activities"),
	})
}

// dispatchDebounce is the process's memory of recent drainer signals,
// shared by every TemporalDispatch it builds.
var dispatchDebounce = rules.NewSignalDebounce()

// NewDispatchStarter is the one place the dispatch starts are configured:
// the drainers (DispatchBatch) and single runs (DispatchAssignment) on
// queue, with StartOptions, debounced per process. The API and the worker
// both build theirs here.
func NewDispatchStarter(c client.Client, st *store.Store, queue string) rules.TemporalDispatch {
	return rules.TemporalDispatch{Client: c, TaskQueue: queue, Store: st, Options: StartOptions, Debounce: dispatchDebounce}
}

func dispatchStarter(deps Deps) rules.TemporalDispatch {
	queue := deps.BulkTaskQueue
	if queue == "" {
		queue = deps.TaskQueue
	}
	return NewDispatchStarter(deps.Temporal, deps.Store, queue)
}

// DispatchStarter processes new assignments through their destinations'
// drainers on the bulk task queue with the worker's client (nil without a
// client).
func DispatchStarter(deps Deps) rules.DispatchStarter {
	if deps.Temporal == nil {
		return nil
	}
	return dispatchStarter(deps)
}

// SetDispatchYield sets the process's priority gate
// (activities.ProcessPriority): the assignments per second its dispatch
// drainers keep while a label purchase's steps (interactive), or a sync's
// pages (importing), run in the process; 0: they do not yield to it.
func SetDispatchYield(interactive, importing float64) {
	activities.ProcessPriority.SetYieldRate(activities.PriorityInteractive, interactive)
	activities.ProcessPriority.SetYieldRate(activities.PriorityImport, importing)
}
