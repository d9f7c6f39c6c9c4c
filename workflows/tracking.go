package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
)

// TrackingPollerWorkflowType is the registered name of TrackingPoller.
const TrackingPollerWorkflowType = "TrackingPoller"

// TrackingPollerScheduleID is the Temporal Schedule that starts the poller
// (CONTRACT 5: schedule/<scheduleId>); TrackingPollerWorkflowID is the
// workflow ID of its action (Temporal appends the scheduled time to it).
const (
	TrackingPollerScheduleID = "schedule/tracking-poller"
	TrackingPollerWorkflowID = "tracking-poller"
)

// Defaults of TrackingPollerInput.
const (
	TrackingDefaultBatchSize   = 200
	TrackingDefaultConcurrency = 4
	// TrackingDefaultMaxHistory is the history length after which a run
	// continues as new (each round adds about 3 events per activity).
	TrackingDefaultMaxHistory = 1000
)

// TrackingPollerInput is the input of TrackingPoller. The zero value is a
// poll with the defaults.
type TrackingPollerInput struct {
	// BatchSize is the number of shipments one TrackingPollShipments
	// activity tracks (default 200, max 1000).
	BatchSize int `json:"batchSize"`
	// Concurrency is how many of those activities run at once (default 4,
	// max 32).
	Concurrency int `json:"concurrency"`
	// MaxHistoryEvents: past this history length the run continues as new
	// (default 1000).
	MaxHistoryEvents int `json:"maxHistoryEvents"`

	// Carried across continue-as-new: the poll's cutoff (shipments tracked
	// since are done) and the totals so far.
	Cutoff *time.Time            `json:"cutoff,omitempty"`
	Carry  *TrackingPollerResult `json:"carry,omitempty"`
}

// TrackingPollerResult is the result of TrackingPoller: totals over every
// run of the poll.
type TrackingPollerResult struct {
	Totals activities.TrackingPollResult `json:"totals"`
	// Rounds is the number of pages processed; Runs the number of runs
	// (1 + continue-as-new count).
	Rounds int `json:"rounds"`
	Runs   int `json:"runs"`
}

// Activity options of TrackingPoller.
var (
	// trackingListOptions: one indexed query.
	trackingListOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        30 * time.Second,
			MaximumAttempts:        5,
			NonRetryableErrorTypes: []string{activities.ErrTypeInvalidInput},
		},
	}
	// trackingPollOptions: carrier calls for up to BatchSize numbers, then
	// one transaction. Carrier failures do not fail the activity (they are
	// counted); what fails it (the database) is retried.
	trackingPollOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		HeartbeatTimeout:    2 * time.Minute, // a heartbeat per carrier account done
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        5 * time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        time.Minute,
			MaximumAttempts:        3,
			NonRetryableErrorTypes: []string{activities.ErrTypeInvalidInput},
		},
	}
)

func (in TrackingPollerInput) withDefaults() TrackingPollerInput {
	if in.BatchSize <= 0 {
		in.BatchSize = TrackingDefaultBatchSize
	}
	in.BatchSize = min(in.BatchSize, 1000)
	if in.Concurrency <= 0 {
		in.Concurrency = TrackingDefaultConcurrency
	}
	in.Concurrency = min(in.Concurrency, 32)
	if in.MaxHistoryEvents <= 0 {
		in.MaxHistoryEvents = TrackingDefaultMaxHistory
	}
	return in
}

// TrackingPoller tracks every carrier-tracked shipment that is still
// moving, in rounds: list up to BatchSize × Concurrency due shipments (not
// tracked since the poll began, never-tracked first), track them in
// Concurrency parallel TrackingPollShipments activities of BatchSize each,
// and go on until a page comes back short. Every shipment an activity
// handles is stamped (last_tracked_at), so the next page is the next
// shipments. A run whose history grows past MaxHistoryEvents continues as
// new with the same cutoff. An activity that fails for good ends the poll
// with its error after its round (the schedule's next poll tries again).
func TrackingPoller(ctx workflow.Context, in TrackingPollerInput) (TrackingPollerResult, error) {
	in = in.withDefaults()
	var res TrackingPollerResult
	if in.Carry != nil {
		res = *in.Carry
	}
	res.Runs++
	log := workflow.GetLogger(ctx)
	var a *activities.TrackingActivities
	listCtx := workflow.WithActivityOptions(ctx, trackingListOptions)
	pollCtx := workflow.WithActivityOptions(ctx, trackingPollOptions)
	page := in.BatchSize * in.Concurrency

	for {
		var due activities.TrackingListDueResult
		if err := workflow.ExecuteActivity(listCtx, a.TrackingListDue, activities.TrackingListDueInput{
			Cutoff: in.Cutoff, Limit: page,
		}).Get(ctx, &due); err != nil {
			return res, err
		}
		cutoff := due.Cutoff
		in.Cutoff = &cutoff
		if len(due.ShipmentIDs) == 0 {
			break
		}

		var futures []workflow.Future
		for start := 0; start < len(due.ShipmentIDs); start += in.BatchSize {
			chunk := due.ShipmentIDs[start:min(start+in.BatchSize, len(due.ShipmentIDs))]
			futures = append(futures, workflow.ExecuteActivity(pollCtx, a.TrackingPollShipments, activities.TrackingPollInput{ShipmentIDs: chunk}))
		}
		var firstErr error
		for _, f := range futures {
			var r activities.TrackingPollResult
			if err := f.Get(ctx, &r); err != nil {
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			res.Totals.Add(r)
		}
		res.Rounds++
		if firstErr != nil {
			log.Warn("tracking poll stopped: an activity failed", "Error", firstErr)
			return res, firstErr
		}
		if len(due.ShipmentIDs) < page {
			break
		}
		info := workflow.GetInfo(ctx)
		if info.GetCurrentHistoryLength() >= in.MaxHistoryEvents || info.GetContinueAsNewSuggested() {
			carry := res
			in.Carry = &carry
			return res, workflow.NewContinueAsNewError(ctx, TrackingPollerWorkflowType, in)
		}
	}
	log.Info("tracking poll done", "Rounds", res.Rounds, "Runs", res.Runs, "Shipments", res.Totals.Shipments,
		"Checkpoints", res.Totals.Checkpoints, "StatusChanges", res.Totals.StatusChanges, "Failed", res.Totals.Failed)
	return res, nil
}
