package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/rules"
)

// DispatchBatchWorkflowType is the registered name of DispatchBatch, a
// destination bridge's drainer; its id is rules.DispatchBatchWorkflowID
// (dispatch-batch/<bridgeId>), on the bulk task queue, started by
// signal-with-start of rules.DispatchBatchSignal.
const DispatchBatchWorkflowType = rules.DispatchBatchWorkflow

// ErrTypeDispatchBatchFailed is the failure type of a drainer that ended with
// failed assignments.
const ErrTypeDispatchBatchFailed = "DispatchAssignmentsFailed"

// Bounds of DispatchBatch.
const (
	// DispatchBatchIdle is how long an idle drainer waits for a signal
	// after the last one before it ends (it claims once more first).
	// Longer than rules.TemporalDispatch's signal debounce.
	DispatchBatchIdle = 10 * time.Second
	// dispatchBatchPagesPerRun: a run continues as new after this many
	// pages (or sooner when Temporal suggests it).
	dispatchBatchPagesPerRun = 250
)

// drainPageOptions: one page claims, pushes and records up to a few
// hundred assignments (activities.DispatchPageSeconds of the bridge's
// rate); it heartbeats its counts. Its retries are unbounded (a database
// or platform outage waits it out) and take the page's own rows back.
var drainPageOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 10 * time.Minute,
	HeartbeatTimeout:    time.Minute,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
		NonRetryableErrorTypes: []string{activities.ErrTypeInvalidInput},
	},
}

// DispatchBatchResult is what a drainer did over its runs.
type DispatchBatchResult = rules.DispatchBatchTotal

// DispatchBatch drains a destination bridge's pending assignments: it
// claims and pushes them a page at a time (activities.DrainDispatchPage:
// bounded concurrency, the bridge's rate), continues as new every
// dispatchBatchPagesPerRun pages with its totals, and, once a page finds
// nothing and no signal came for DispatchBatchIdle, ends: Failed (with
// the count and the last reason) when assignments failed, else completed.
// A signal (new assignments) while it waits makes it claim again; one
// that arrives as it ends starts a new run (signal-with-start).
func DispatchBatch(ctx workflow.Context, in rules.DispatchBatchInput) (DispatchBatchResult, error) {
	ctx = workflow.WithActivityOptions(ctx, drainPageOptions)
	var a *activities.DispatchActivities
	info := workflow.GetInfo(ctx)
	sig := workflow.GetSignalChannel(ctx, rules.DispatchBatchSignal)
	received := func() bool {
		got := false
		for sig.ReceiveAsync(nil) {
			got = true
		}
		return got
	}
	total := in.Totals
	lastSignal := workflow.Now(ctx)
	received()
	for pages := 0; ; {
		if received() {
			lastSignal = workflow.Now(ctx)
		}
		var page activities.DrainPageResult
		err := workflow.ExecuteActivity(ctx, a.DrainDispatchPage, activities.DrainPageInput{
			OrganizationID: in.OrganizationID, BridgeID: in.BridgeID,
			Token:      fmt.Sprintf("%s/%s/%d", info.WorkflowExecution.ID, info.WorkflowExecution.RunID, pages),
			WorkflowID: info.WorkflowExecution.ID, PageSize: in.PageSize, Concurrency: in.Concurrency,
		}).Get(ctx, &page)
		if err != nil {
			return total, err
		}
		pages++
		total.Pages++
		total.Claimed += page.Claimed
		total.Completed += page.Completed
		total.Failed += page.Failed
		total.Skipped += page.Skipped
		if page.LastError != "" {
			total.LastError = page.LastError
		}
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("pages %d; assignments pushed %d, failed %d, skipped %d",
			total.Pages, total.Completed, total.Failed, total.Skipped))
		if page.Claimed == 0 {
			wait := DispatchBatchIdle - workflow.Now(ctx).Sub(lastSignal)
			if wait <= 0 {
				if received() { // came in during the page: claim again
					lastSignal = workflow.Now(ctx)
					continue
				}
				break
			}
			// Wait for a signal or the end of the idle time, then claim
			// once more.
			tctx, cancel := workflow.WithCancel(ctx)
			timer := workflow.NewTimer(tctx, wait)
			sel := workflow.NewSelector(ctx)
			sel.AddReceive(sig, func(c workflow.ReceiveChannel, _ bool) {
				c.Receive(ctx, nil)
				lastSignal = workflow.Now(ctx)
			})
			sel.AddFuture(timer, func(workflow.Future) {})
			sel.Select(ctx)
			cancel()
			continue
		}
		if pages >= dispatchBatchPagesPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			next := in
			next.Totals = total
			// Signals not received yet are not lost: the next run claims
			// first thing.
			return total, workflow.NewContinueAsNewError(ctx, DispatchBatch, next)
		}
	}
	if total.Failed > 0 {
		return total, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("%d of %d assignments failed to dispatch; last reason: %s", total.Failed, total.Claimed, total.LastError),
			ErrTypeDispatchBatchFailed, nil, total)
	}
	return total, nil
}
