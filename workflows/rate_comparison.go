package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/store"
)

// RateComparisonWorkflowType is the registered name of RateComparison.
const RateComparisonWorkflowType = "RateComparison"

// RateComparisonWorkflowID is the stable workflow ID of a comparison's
// processing (CONTRACT section 5).
func RateComparisonWorkflowID(comparisonID string) string { return "rate-comparison/" + comparisonID }

// Defaults of the RateComparison tuning knobs.
const (
	// DefaultRateComparisonBatchSize items per batch activity.
	DefaultRateComparisonBatchSize = 250
	// DefaultRateComparisonParallelism batch activities in flight.
	DefaultRateComparisonParallelism = 4
	// DefaultRateComparisonBatchesPerRun batches per run before the
	// workflow continues as new (earlier when Temporal suggests it).
	DefaultRateComparisonBatchesPerRun = 25
	// DefaultRateComparisonBatchScheduleToClose bounds a batch with all its
	// retries: a carrier outage is retried (backoff up to two minutes) for
	// this long before the comparison fails.
	DefaultRateComparisonBatchScheduleToClose = time.Hour
)

// RateComparisonInput is the input of RateComparison.
type RateComparisonInput struct {
	OrganizationID string `json:"organizationId"`
	ComparisonID   string `json:"comparisonId"`
	RequestedBy    Actor  `json:"requestedBy"`
	// Tuning; 0 means the default.
	BatchSize     int `json:"batchSize,omitempty"`
	Parallelism   int `json:"parallelism,omitempty"`
	BatchesPerRun int `json:"batchesPerRun,omitempty"`
	// BatchScheduleToClose is the schedule-to-close timeout of a batch
	// activity, its retries included (0: the default, one hour).
	BatchScheduleToClose time.Duration `json:"batchScheduleToClose,omitempty"`
	// State is carried across continue-as-new (nil on the first run).
	State *RateComparisonState `json:"state,omitempty"`
}

// NewRateComparisonInput is the input of a comparison's processing, as
// the API and the reconciler start it: the tuning defaults are pinned in
// the run's input, so that changing a default later does not change how a
// running comparison replays.
func NewRateComparisonInput(orgID, comparisonID string, by Actor) RateComparisonInput {
	return RateComparisonInput{
		OrganizationID: orgID,
		ComparisonID:   comparisonID,
		RequestedBy:    by,
		BatchSize:      DefaultRateComparisonBatchSize,
		Parallelism:    DefaultRateComparisonParallelism,
		BatchesPerRun:  DefaultRateComparisonBatchesPerRun,
		// How long a batch is retried through a carrier outage.
		BatchScheduleToClose: DefaultRateComparisonBatchScheduleToClose,
	}
}

// RateComparisonState is the progress a run hands to the next one.
type RateComparisonState struct {
	SourceAccountID string `json:"sourceAccountId"`
	TargetAccountID string `json:"targetAccountId"`
	// MaxSeq is the last item position.
	MaxSeq int `json:"maxSeq"`
	// Cursor: every item with seq <= Cursor went through a finished batch.
	Cursor int `json:"cursor"`
	// Runs is how many runs ended in continue-as-new.
	Runs int `json:"runs"`
	// Batches, Completed and Failed add up the finished batches.
	Batches   int `json:"batches"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
}

// RateComparisonResult is the result of RateComparison.
type RateComparisonResult struct {
	ComparisonID string `json:"comparisonId"`
	// Status is the comparison's final status ("" when it was deleted).
	Status         string  `json:"status"`
	CompletedItems int     `json:"completedItems"`
	FailedItems    int     `json:"failedItems"`
	SkippedItems   int     `json:"skippedItems"`
	PendingItems   int     `json:"pendingItems"`
	TotalSavings   float64 `json:"totalSavings"`
	Batches        int     `json:"batches"`
	Runs           int     `json:"runs"`
}

// Activity options of RateComparison.
var (
	// rcPrepareOptions: a few reads.
	rcPrepareOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        30 * time.Second,
			MaximumAttempts:        5,
			NonRetryableErrorTypes: activities.PermanentRateComparisonErrorTypes,
		},
	}
	// rcBatchOptions: up to a few hundred carrier calls with bounded
	// concurrency. The activity heartbeats; cancelling waits for it to
	// write what it finished. No attempt limit: a carrier outage
	// (ErrTypeRateComparisonCarrierUnavailable) is retried, backing off up
	// to two minutes, until ScheduleToCloseTimeout (set from the input by
	// rcBatchActivityOptions); the activity makes any other failure
	// permanent after activities.DefaultRateComparisonMaxOtherAttempts
	// attempts. Retry policies and timeouts are not part of the commands a
	// history replays, so changing them is replay-safe.
	rcBatchOptions = workflow.ActivityOptions{
		StartToCloseTimeout:    10 * time.Minute,
		ScheduleToCloseTimeout: DefaultRateComparisonBatchScheduleToClose,
		HeartbeatTimeout:       10 * time.Second,
		WaitForCancellation:    true,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        2 * time.Minute,
			MaximumAttempts:        0,
			NonRetryableErrorTypes: activities.PermanentRateComparisonErrorTypes,
		},
	}
	// rcFinishOptions: one statement; retried longer, it closes the
	// comparison.
	rcFinishOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        time.Minute,
			MaximumAttempts:        10,
			NonRetryableErrorTypes: []string{activities.ErrTypeInvalidInput},
		},
	}
)

// RateComparison processes a comparison's items in batches: a batch
// activity per BatchSize items (tracking with the source carrier, rating
// with the comparison's account, one batched write each), Parallelism
// batches in flight. After BatchesPerRun batches, or when Temporal suggests
// it, it drains and continues as new with the cursor. Cancelling it stops
// the batches at their next item, skips what is left and marks the
// comparison cancelled. It ends completed (failed when every item failed),
// or failed with the reason when the comparison cannot go on.
func RateComparison(ctx workflow.Context, in RateComparisonInput) (RateComparisonResult, error) {
	r := &rateComparison{in: in}
	return r.run(ctx)
}

type rateComparison struct {
	in RateComparisonInput
	st RateComparisonState
}

func (r *rateComparison) run(ctx workflow.Context) (RateComparisonResult, error) {
	var a *activities.RateComparisonActivities
	if r.in.State == nil {
		var prep activities.PrepareRateComparisonResult
		err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, rcPrepareOptions), a.PrepareRateComparison,
			activities.PrepareRateComparisonInput{OrganizationID: r.in.OrganizationID, ComparisonID: r.in.ComparisonID}).Get(ctx, &prep)
		if err != nil {
			return r.end(ctx, err)
		}
		r.st = RateComparisonState{SourceAccountID: prep.SourceAccountID, TargetAccountID: prep.TargetAccountID, MaxSeq: prep.MaxSeq}
	} else {
		r.st = *r.in.State
	}

	size := rcPositiveOr(r.in.BatchSize, DefaultRateComparisonBatchSize)
	parallelism := rcPositiveOr(r.in.Parallelism, DefaultRateComparisonParallelism)
	perRun := rcPositiveOr(r.in.BatchesPerRun, DefaultRateComparisonBatchesPerRun)
	bctx := workflow.WithActivityOptions(ctx, rcBatchActivityOptions(r.in))

	var (
		sel      = workflow.NewSelector(ctx)
		inflight int
		started  int // batches started in this run
		next     = r.st.Cursor + 1
		stop     bool // no more batches in this run
		failure  error
	)
	for {
		for !stop && failure == nil && ctx.Err() == nil && inflight < parallelism && next <= r.st.MaxSeq {
			in := activities.RateComparisonBatchInput{
				OrganizationID: r.in.OrganizationID, ComparisonID: r.in.ComparisonID,
				SourceAccountID: r.st.SourceAccountID, TargetAccountID: r.st.TargetAccountID,
				FromSeq: next, ToSeq: min(next+size-1, r.st.MaxSeq),
			}
			f := workflow.ExecuteActivity(bctx, a.ProcessRateComparisonBatch, in)
			sel.AddFuture(f, func(f workflow.Future) {
				inflight--
				var res activities.RateComparisonBatchResult
				if err := f.Get(ctx, &res); err != nil {
					if failure == nil && !temporal.IsCanceledError(err) {
						failure = err
					}
					return
				}
				r.st.Batches++
				r.st.Completed += res.Completed
				r.st.Failed += res.Failed
			})
			inflight++
			started++
			next = in.ToSeq + 1
			if started >= perRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
				stop = true
			}
		}
		if inflight == 0 {
			break
		}
		sel.Select(ctx)
	}

	if ctx.Err() != nil || failure != nil {
		return r.end(ctx, failure)
	}
	if next <= r.st.MaxSeq {
		// Every batch of this run finished: the next run starts after them.
		r.st.Cursor = next - 1
		r.st.Runs++
		in := r.in
		st := r.st
		in.State = &st
		workflow.GetLogger(ctx).Info("rate comparison continues as new", "ComparisonId", r.in.ComparisonID, "Cursor", st.Cursor, "MaxSeq", st.MaxSeq)
		return RateComparisonResult{}, workflow.NewContinueAsNewError(ctx, RateComparison, in)
	}
	r.st.Cursor = r.st.MaxSeq
	return r.end(ctx, nil)
}

// end closes the comparison: cancelled when the run is being cancelled,
// failed with the reason of cause, else completed. A comparison that was
// deleted or is no longer processing is left alone.
func (r *rateComparison) end(ctx workflow.Context, cause error) (RateComparisonResult, error) {
	var a *activities.RateComparisonActivities
	log := workflow.GetLogger(ctx)
	res := RateComparisonResult{ComparisonID: r.in.ComparisonID, Batches: r.st.Batches, Runs: r.st.Runs}

	cancelled := ctx.Err() != nil
	var appErr *temporal.ApplicationError
	if !cancelled && errors.As(cause, &appErr) && appErr.Type() == activities.ErrTypeRateComparisonGone {
		log.Info("rate comparison is gone; nothing more to do", "ComparisonId", r.in.ComparisonID, "Reason", appErr.Message())
		if rcFailedOutcomeFailsRun(ctx) {
			// E.g. a run reset in the UI after the comparison was deleted.
			return res, temporal.NewNonRetryableApplicationError("the rate comparison is gone: "+appErr.Message(), activities.ErrTypeRateComparisonGone, nil)
		}
		return res, nil
	}
	in := activities.FinishRateComparisonInput{OrganizationID: r.in.OrganizationID, ComparisonID: r.in.ComparisonID, Outcome: store.FinishCompleted}
	switch {
	case cancelled:
		in.Outcome = store.FinishCancelled
	case cause != nil:
		in.Outcome = store.FinishFailed
		in.Error = rcFailureMessage(cause)
	}
	// Close the comparison even when the run is being cancelled.
	fctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	var fin activities.FinishRateComparisonResult
	if err := workflow.ExecuteActivity(workflow.WithActivityOptions(fctx, rcFinishOptions), a.FinishRateComparison, in).Get(fctx, &fin); err != nil {
		log.Warn("could not close the rate comparison", "ComparisonId", r.in.ComparisonID, "Error", err)
		if cause == nil && !cancelled {
			return res, err
		}
	}
	res.Status, res.CompletedItems, res.FailedItems, res.SkippedItems, res.PendingItems, res.TotalSavings =
		fin.Status, fin.CompletedItems, fin.FailedItems, fin.SkippedItems, fin.PendingItems, fin.TotalSavings
	switch {
	case cancelled:
		return res, temporal.NewCanceledError("rate comparison cancelled")
	case cause != nil:
		return res, cause
	case fin.Status == store.RateComparisonFailed && rcFailedOutcomeFailsRun(ctx):
		// Every item failed: the comparison is failed, so is the run.
		return res, temporal.NewNonRetryableApplicationError("rate comparison failed: "+store.ErrEveryItemFailed, ErrTypeRateComparisonFailed, nil, res)
	}
	return res, nil
}

// ErrTypeRateComparisonFailed: every item of the comparison failed (the
// run fails with the result as the error's details).
const ErrTypeRateComparisonFailed = "RateComparisonFailed"

// rcFailedOutcomeFailsRun: runs recorded before failed outcomes failed the
// run complete as they did.
func rcFailedOutcomeFailsRun(ctx workflow.Context) bool {
	return workflow.GetVersion(ctx, versionFailedOutcomeFailsRun, workflow.DefaultVersion, 1) != workflow.DefaultVersion
}

// rcFailureMessage is the comparison's error for a failed run.
func rcFailureMessage(err error) string {
	var appErr *temporal.ApplicationError
	var timeoutErr *temporal.TimeoutError
	switch {
	case errors.As(err, &appErr) && appErr.Type() == activities.ErrTypeRateComparisonFatal:
		return appErr.Message()
	case errors.As(err, &appErr) && appErr.Type() == activities.ErrTypeRateComparisonCarrierUnavailable:
		return appErr.Message() + "; process the comparison again to finish the remaining items"
	case errors.As(err, &timeoutErr):
		return "processing timed out; process the comparison again to finish the remaining items"
	}
	return "processing failed; process the comparison again to finish the remaining items"
}

// rcBatchActivityOptions are rcBatchOptions with the input's
// schedule-to-close timeout.
func rcBatchActivityOptions(in RateComparisonInput) workflow.ActivityOptions {
	o := rcBatchOptions
	if in.BatchScheduleToClose > 0 {
		o.ScheduleToCloseTimeout = in.BatchScheduleToClose
	}
	return o
}

func rcPositiveOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}
