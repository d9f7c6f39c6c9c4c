package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/store"
)

// MaintenanceActivities keep the database tidy and reconcile the rows that
// wait on a workflow with their runs.
type MaintenanceActivities struct {
	Store  *store.Store
	Logger *slog.Logger
	// Temporal describes the runs rows wait on (nil: nothing is
	// reconciled).
	Temporal client.Client
	// StartRateComparison starts (or joins) a comparison's RateComparison
	// workflow under its stable id; the worker wires it to the same
	// options and input as the API's process endpoint.
	StartRateComparison func(ctx context.Context, orgID, comparisonID string) error
	// StartDispatch starts (or joins) an assignment's DispatchAssignment
	// run (activities/dispatch.go).
	StartDispatch func(ctx context.Context, orgID, assignmentID uuid.UUID) error
	// DrainDispatch signals (or starts) a destination bridge's DispatchBatch
	// drainer (activities/dispatch.go).
	DrainDispatch func(ctx context.Context, orgID, bridgeID uuid.UUID) error
	// Repaired counts a row the reconciler settled: kind is the
	// WaitingKind's name, outcome "restarted" or "failed" (nil: not
	// counted; the worker counts into fos_reconciler_repairs_total).
	Repaired func(kind, outcome string)
	// WebhookEventRetention keeps a settled inbound webhook event's payload
	// (default store.DefaultWebhookEventRetention, 30 days);
	// WebhookDedupeRetention its row and dedupe key (default 90 days).
	WebhookEventRetention, WebhookDedupeRetention time.Duration
	// StartOperation and StartOperationUndo start an operation's
	// OperationExecute run again (resuming) and an entry's OperationUndo
	// (activities/maintenance_operations.go).
	StartOperation     func(ctx context.Context, orgID, operationID uuid.UUID) error
	StartOperationUndo func(ctx context.Context, orgID, historyID uuid.UUID) error
}

// PurgeExpiredInput is the input of PurgeExpired.
type PurgeExpiredInput struct{}

// PurgeExpiredResult counts what PurgeExpired removed.
type PurgeExpiredResult struct {
	IdempotencyKeys int64 `json:"idempotencyKeys"`
	LabelStashes    int64 `json:"labelStashes,omitempty"`
	// OrderCountRows is the number of order counter rows folded or dropped.
	OrderCountRows int64 `json:"orderCountRows,omitempty"`
	// WebhookPayloadsEmptied and WebhookEventsDeleted count the inbound
	// webhook events past their retention (store.PurgeWebhookEvents).
	WebhookPayloadsEmptied int64 `json:"webhookPayloadsEmptied,omitempty"`
	WebhookEventsDeleted   int64 `json:"webhookEventsDeleted,omitempty"`
}

// webhookPurgeBatch and webhookPurgeRounds bound one PurgeExpired's work
// on webhook events (the next run goes on).
const (
	webhookPurgeBatch  = 5000
	webhookPurgeRounds = 20
)

// purgeWebhookEvents applies the webhook event retention in batches.
func (a *MaintenanceActivities) purgeWebhookEvents(ctx context.Context, res *PurgeExpiredResult) error {
	keepEvents, keepKeys := a.WebhookEventRetention, a.WebhookDedupeRetention
	if keepEvents <= 0 {
		keepEvents = store.DefaultWebhookEventRetention
	}
	if keepKeys <= 0 {
		keepKeys = store.DefaultWebhookDedupeRetention
	}
	for range webhookPurgeRounds {
		emptied, deleted, err := store.PurgeWebhookEvents(ctx, a.Store.Pool, keepEvents, keepKeys, webhookPurgeBatch)
		res.WebhookPayloadsEmptied += emptied
		res.WebhookEventsDeleted += deleted
		if err != nil || (emptied < webhookPurgeBatch && deleted < webhookPurgeBatch) {
			return err
		}
	}
	return nil
}

// PurgeExpired deletes Idempotency-Key records older than their 24-hour
// lifetime (one DELETE over an index) and the label stashes of settled
// shipments, and folds the order counters concurrent writers spread over
// several rows; idempotent.
func (a *MaintenanceActivities) PurgeExpired(ctx context.Context, _ PurgeExpiredInput) (PurgeExpiredResult, error) {
	n, err := store.PurgeIdempotencyKeys(ctx, a.Store.Pool)
	if err != nil {
		return PurgeExpiredResult{}, err
	}
	if n > 0 && a.Logger != nil {
		a.Logger.Info("purged expired idempotency keys", "count", n)
	}
	stashes, err := store.PurgeSettledLabelStashes(ctx, a.Store.Pool)
	if err != nil {
		return PurgeExpiredResult{IdempotencyKeys: n}, err
	}
	if stashes > 0 && a.Logger != nil {
		a.Logger.Info("purged label stashes of settled shipments", "count", stashes)
	}
	res := PurgeExpiredResult{IdempotencyKeys: n, LabelStashes: stashes}
	res.OrderCountRows, err = store.CompactOrderCounts(ctx, a.Store.Pool)
	if err != nil {
		return res, err
	}
	return res, a.purgeWebhookEvents(ctx, &res)
}

// ---- reconciliation ----

// Bounds of the rows ReconcileRuns looks at: a row that waits on a
// workflow is only looked at once it has waited longer than its job needs
// to get its run going, so a start in flight is never mistaken for a
// missing run.
const (
	// RateComparisonStartBound: the process endpoint writes processing,
	// then starts the run within about half a minute (re-sent starts
	// included).
	RateComparisonStartBound = 2 * time.Minute
	// CarrierRegistrationStartBound: the register endpoint writes the
	// pending account, then waits at most 90 seconds for the run's answer.
	CarrierRegistrationStartBound = 10 * time.Minute
	// WebhookEventStartBound: the relay starts an event's run within
	// seconds and starts a received one again after 10 minutes; one run
	// retries its processing for about 5 minutes.
	WebhookEventStartBound = 15 * time.Minute
	// WebhookEventMaxAttempts bounds an event's attempts (processing
	// attempts and re-queues together; one run makes at most 8) before
	// the reconciler fails it instead of re-queuing it.
	WebhookEventMaxAttempts = 20
	// ReconcileBatch is how many rows of a kind one scan looks at;
	// ReconcilePages how many scans of a kind one run makes at most.
	ReconcileBatch = 200
	ReconcilePages = 5
)

// ReconcileRunsInput is the input of ReconcileRuns.
type ReconcileRunsInput struct{}

// ReconcileRunsResult counts what ReconcileRuns found and did.
type ReconcileRunsResult struct {
	// Checked rows; Restarted runs (started again under their id); Failed
	// rows marked failed with the reason.
	Checked   int `json:"checked"`
	Restarted int `json:"restarted"`
	Failed    int `json:"failed"`
}

func (r *ReconcileRunsResult) add(o ReconcileRunsResult) {
	r.Checked += o.Checked
	r.Restarted += o.Restarted
	r.Failed += o.Failed
}

// WaitingKind is one kind of row that waits on a workflow run, as the
// reconciler sees it. Adding a kind is one more WaitingKind and a call to
// ReconcileKind (see ReconcileRuns).
type WaitingKind struct {
	// Name names the kind in logs ("rate comparison").
	Name string
	// Stale lists up to limit rows that have waited since before cutoff,
	// the least recently checked first (reconcile_checked_at NULLS FIRST).
	Stale func(ctx context.Context, db store.DBTX, cutoff time.Time, limit int) ([]store.WaitingRow, error)
	// Table is the rows' table: each row looked at is marked checked
	// (store.MarkReconcileChecked), so rows that legitimately wait go to
	// the back of the next scan instead of hiding the lost ones.
	Table string
	// Bound is how long a row may wait before it is looked at: longer than
	// its job needs to get its run going, so that a start in flight is
	// never mistaken for a missing run.
	Bound time.Duration
	// WorkflowID is the row's stable workflow id.
	WorkflowID func(row store.WaitingRow) string
	// AnyRun: every run of the id belongs to the row (its run settles the
	// row before it closes); else only runs started since the row waits.
	AnyRun bool
	// Restart starts the row's run again under its id (nil: the job
	// cannot resume; a missing run fails the row).
	Restart func(ctx context.Context, row store.WaitingRow) error
	// Fail marks the row failed with reason (WaitingRun.Reason, tenant-safe:
	// "stopped by an operator: …"), unless it changed meanwhile; it
	// reports whether it did.
	Fail func(ctx context.Context, row store.WaitingRow, reason string) (bool, error)
}

// ReconcileRuns settles the rows outside shipments, pickups and shipment
// actions that wait on a workflow longer than their job's bound: rate
// comparisons processing, carrier accounts pending registration and task
// executions queued or running, dispatch assignments, and inbound webhook
// events processing (ReconcileKind). It fails when Temporal cannot be
// asked at all.
func (a *MaintenanceActivities) ReconcileRuns(ctx context.Context, _ ReconcileRunsInput) (ReconcileRunsResult, error) {
	var out ReconcileRunsResult
	if a.Temporal == nil {
		return out, nil
	}
	for _, kind := range []WaitingKind{a.rateComparisonKind(), a.carrierRegistrationKind(), a.taskExecutionKind(), a.dispatchKind(), a.webhookEventKind(), a.operationKind(), a.operationUndoKind()} {
		res, err := a.ReconcileKind(ctx, kind)
		out.add(res)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// ReconcileKind settles the rows of kind that waited longer than its
// bound: each row's run is described (DescribeWaitingRun); an open run is
// left alone; a missing run is started again under the same id when the
// kind can Restart, else the row fails ("the workflow never started"); a
// run that closed without settling the row — terminated or reset in the
// Temporal UI, timed out, failed — fails it with the reason. A row that
// cannot be settled is logged and looked at again by the next run.
func (a *MaintenanceActivities) ReconcileKind(ctx context.Context, kind WaitingKind) (ReconcileRunsResult, error) {
	var out ReconcileRunsResult
	log := a.log().With("kind", kind.Name)
	// Rows of one workflow (a destination's dispatch backlog waits on one
	// drainer) are described once per run.
	described := map[string]WaitingRun{}
	restarted := map[string]bool{}
	seen := map[uuid.UUID]bool{}
	for page := 0; page < ReconcilePages; page++ {
		rows, err := kind.Stale(ctx, a.Store.Pool, time.Now().Add(-kind.Bound), ReconcileBatch)
		if err != nil {
			return out, fmt.Errorf("list waiting %s rows: %w", kind.Name, err)
		}
		fresh := make([]store.WaitingRow, 0, len(rows))
		for _, row := range rows {
			if !seen[row.ID] {
				seen[row.ID] = true
				fresh = append(fresh, row)
			}
		}
		for _, row := range fresh {
			out.Checked++
			if err := a.reconcileRow(ctx, log, kind, row, described, restarted, &out); err != nil {
				a.markChecked(ctx, log, kind, fresh)
				return out, err
			}
		}
		a.markChecked(ctx, log, kind, fresh)
		// Wrapped around (every row was looked at this run) or no more.
		if len(rows) < ReconcileBatch || len(fresh) < len(rows) || kind.Table == "" {
			break
		}
	}
	return out, nil
}

// markChecked records that rows were looked at (best effort: a failure
// only means they are looked at first again).
func (a *MaintenanceActivities) markChecked(ctx context.Context, log *slog.Logger, kind WaitingKind, rows []store.WaitingRow) {
	if kind.Table == "" || len(rows) == 0 {
		return
	}
	if err := store.MarkReconcileChecked(context.WithoutCancel(ctx), a.Store.Pool, kind.Table, rowIDs(rows)); err != nil {
		log.Warn("reconcile: mark rows checked", "error", err)
	}
}

// reconcileRow settles one row (see ReconcileKind); an error stops the
// run (Temporal cannot be asked).
func (a *MaintenanceActivities) reconcileRow(ctx context.Context, log *slog.Logger, kind WaitingKind, row store.WaitingRow,
	described map[string]WaitingRun, restarted map[string]bool, out *ReconcileRunsResult) error {
	wfID := kind.WorkflowID(row)
	since := row.Since
	if kind.AnyRun {
		since = time.Time{}
	}
	run, ok := described[wfID]
	if !ok {
		var err error
		run, err = DescribeWaitingRun(ctx, a.Temporal, wfID, since)
		if err != nil {
			if ctx.Err() != nil || isUnavailable(err) {
				return err
			}
			log.Warn("reconcile: describe", "id", row.ID, "workflow_id", wfID, "error", err)
			return nil
		}
		described[wfID] = run
	}
	if run.Open {
		return nil
	}
	if run.Missing && kind.Restart != nil {
		if restarted[wfID] {
			return nil
		}
		if err := kind.Restart(ctx, row); err != nil {
			log.Warn("reconcile: restart", "id", row.ID, "workflow_id", wfID, "error", err)
			return nil
		}
		restarted[wfID] = true
		log.Info("reconcile: restarted a missing run", "id", row.ID, "workflow_id", wfID)
		out.Restarted++
		a.repaired(kind.Name, "restarted")
		return nil
	}
	reason := run.Reason
	if run.Missing {
		reason = "the workflow never started"
	}
	changed, err := kind.Fail(ctx, row, reason)
	if err != nil {
		log.Warn("reconcile: mark failed", "id", row.ID, "workflow_id", wfID, "error", err)
		return nil
	}
	if changed {
		log.Info("reconcile: marked failed, its run ended without settling it", "id", row.ID, "workflow_id", wfID, "reason", reason, "detail", run.Detail)
		out.Failed++
		a.repaired(kind.Name, "failed")
	}
	return nil
}

func (a *MaintenanceActivities) repaired(kind, outcome string) {
	if a.Repaired != nil {
		a.Repaired(kind, outcome)
	}
}

func (a *MaintenanceActivities) log() *slog.Logger {
	if a.Logger == nil {
		return slog.Default()
	}
	return a.Logger
}

// rateComparisonKind: a comparison processing; a missing run is started
// again (it resumes from its items), a closed one fails the comparison
// (unfinished items stay pending for a later process).
func (a *MaintenanceActivities) rateComparisonKind() WaitingKind {
	k := WaitingKind{
		Name:  "rate comparison",
		Stale: store.StaleRateComparisons,
		Table: "rate_comparisons",
		Bound: RateComparisonStartBound,
		// Mirrors workflows.RateComparisonWorkflowID (workflows imports this package).
		WorkflowID: func(row store.WaitingRow) string { return "rate-comparison/" + row.ID.String() },
		Fail: func(ctx context.Context, row store.WaitingRow, reason string) (bool, error) {
			msg := "processing stopped: " + reason + "; process the comparison again to finish the remaining items"
			c, err := store.FinishRateComparison(ctx, a.Store.Pool, row.OrganizationID, row.ID, store.FinishFailed, msg)
			if errors.Is(err, store.ErrNotFound) {
				return false, nil
			}
			return err == nil && c.Status == store.RateComparisonFailed && c.Error != nil && *c.Error == msg, err
		},
	}
	if a.StartRateComparison != nil {
		k.Restart = func(ctx context.Context, row store.WaitingRow) error {
			return a.StartRateComparison(ctx, row.OrganizationID.String(), row.ID.String())
		}
	}
	return k
}

// carrierRegistrationKind: a carrier account pending registration. A
// registration cannot be restarted without the customer's answers: it
// ends with the account in error, to be registered again.
func (a *MaintenanceActivities) carrierRegistrationKind() WaitingKind {
	return WaitingKind{
		Name:  "carrier registration",
		Stale: store.StalePendingCarrierAccounts,
		Table: "carrier_accounts",
		Bound: CarrierRegistrationStartBound,
		// Mirrors workflows.CarrierRegistrationWorkflowID.
		WorkflowID: func(row store.WaitingRow) string { return "carrier-registration/" + row.ID.String() },
		// A registration run settles the account (active, error or
		// deleted) before it closes, so a pending account and a closed run
		// never belong together.
		AnyRun: true,
		Fail: func(ctx context.Context, row store.WaitingRow, reason string) (bool, error) {
			return store.FailOrphanedCarrierRegistration(ctx, a.Store.Pool, row.OrganizationID, row.ID, row.Since,
				"registration ended: "+reason+"; register the account again")
		},
	}
}

// webhookEventKind: an inbound webhook event processing, or received
// although its run was started. Its run settles it before it closes and
// its id is the event's own, so a missing run or one that closed (terminated
// in the Temporal UI, timed out) re-queues the event for the relay, which
// starts a new run; once the event used WebhookEventMaxAttempts it is
// failed with the reason instead.
func (a *MaintenanceActivities) webhookEventKind() WaitingKind {
	settle := func(ctx context.Context, row store.WaitingRow, reason string) (string, error) {
		return store.SettleStaleWebhookEvent(ctx, a.Store.Pool, row.OrganizationID, row.ID, row.Since, WebhookEventMaxAttempts, reason)
	}
	return WaitingKind{
		Name:  "webhook event",
		Stale: store.StaleWebhookEvents,
		Table: "webhook_events",
		Bound: WebhookEventStartBound,
		// Mirrors workflows.InboundWebhookWorkflowID.
		WorkflowID: func(row store.WaitingRow) string { return "inbound-webhook/" + row.ID.String() },
		AnyRun:     true,
		Restart: func(ctx context.Context, row store.WaitingRow) error {
			outcome, err := settle(ctx, row, "the workflow never started")
			if err == nil && outcome == store.StaleEventFailed {
				a.log().Info("reconcile: webhook event failed after its last attempt", "id", row.ID, "reason", "the workflow never started")
			}
			return err
		},
		// Fail re-queues the event while it has attempts left (logged, not
		// counted as failed).
		Fail: func(ctx context.Context, row store.WaitingRow, reason string) (bool, error) {
			outcome, err := settle(ctx, row, reason)
			if err == nil && outcome == store.StaleEventRequeued {
				a.log().Info("reconcile: webhook event re-queued, its run ended without settling it", "id", row.ID, "reason", reason)
			}
			return outcome == store.StaleEventFailed, err
		},
	}
}

func isUnavailable(err error) bool {
	var unavailable *serviceerror.Unavailable
	var deadline *serviceerror.DeadlineExceeded
	return errors.As(err, &unavailable) || errors.As(err, &deadline) || errors.Is(err, context.DeadlineExceeded)
}

// WaitingRun is what Temporal knows of the run a row waits on.
type WaitingRun struct {
	// Open: a run of the row is open; leave the row alone.
	Open bool
	// Missing: no run of the row exists (none with the id, or only runs
	// that started before the row began to wait).
	Missing bool
	// Otherwise the row's run closed without settling the row: Status is
	// how it closed and Reason says so as a tenant may read it ("stopped by
	// an operator: <reason>", "the workflow run timed out", …): every
	// settle path stores it. Detail is the operator's account (who
	// terminated the run, the failure's full text), for the logs only.
	Status enumspb.WorkflowExecutionStatus
	RunID  string
	Reason string
	Detail string
}

// DescribeWaitingRun describes workflow id for a row that waits on it
// since since (zero: any run of the id belongs to the row). Describing is
// strongly consistent (not visibility). It is the one reading every
// reconciler uses: a row waiting longer than its job's bound is left alone
// when Open, started again or failed when Missing, failed with Reason
// otherwise.
func DescribeWaitingRun(ctx context.Context, c client.Client, id string, since time.Time) (WaitingRun, error) {
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return WaitingRun{Missing: true}, nil
	}
	if err != nil {
		return WaitingRun{}, fmt.Errorf("describe workflow %s: %w", id, err)
	}
	info := desc.GetWorkflowExecutionInfo()
	out := WaitingRun{Status: info.GetStatus(), RunID: info.GetExecution().GetRunId()}
	if out.Status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		out.Open = true
		return out, nil
	}
	// Clocks of the database and of Temporal may differ by a little.
	if !since.IsZero() && info.GetStartTime().AsTime().Before(since.Add(-5*time.Second)) {
		return WaitingRun{Missing: true}, nil
	}
	out.Reason, out.Detail = closeReason(ctx, c, id, out.RunID, out.Status)
	return out, nil
}

// failedRunMessage is the failure of a failed run as the client reads it:
// the history holds the message encrypted (payloadcodec encodes failures),
// the client's failure converter decodes it.
func failedRunMessage(ctx context.Context, c client.Client, id, runID string) string {
	err := c.GetWorkflow(ctx, id, runID).Get(ctx, nil)
	var wee *temporal.WorkflowExecutionError
	if !errors.As(err, &wee) {
		return ""
	}
	cause := errors.Unwrap(wee)
	var appErr *temporal.ApplicationError
	switch {
	case cause == nil:
		return ""
	case errors.As(cause, &appErr):
		return appErr.Message()
	default:
		return cause.Error()
	}
}

// closeReason says how a run closed: reason as a tenant may read it (the
// operator's reason for a termination, a failure's message, each through
// TenantText; never who terminated it), detail with everything for the
// operators' logs (read from the run's close event; best effort).
func closeReason(ctx context.Context, c client.Client, id, runID string, status enumspb.WorkflowExecutionStatus) (reason, detail string) {
	var closeEvent *historypb.HistoryEvent
	it := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			break
		}
		closeEvent = ev
	}
	switch status {
	case enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED:
		reason, detail = "stopped by an operator", "the workflow run was terminated in Temporal"
		if attrs := closeEvent.GetWorkflowExecutionTerminatedEventAttributes(); attrs != nil {
			if why := strings.TrimSpace(attrs.GetReason()); why != "" {
				reason += ": " + TenantText(why)
				detail += ": " + why
			}
			if attrs.GetIdentity() != "" {
				detail += " (by " + attrs.GetIdentity() + ")"
			}
		}
		return reason, detail
	case enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		return "the workflow run timed out", "the workflow run timed out"
	case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		return "the workflow run was cancelled", "the workflow run was cancelled"
	case enumspb.WORKFLOW_EXECUTION_STATUS_FAILED:
		reason, detail = "the workflow run failed", "the workflow run failed"
		why := failedRunMessage(ctx, c, id, runID)
		if why == "" {
			why = closeEvent.GetWorkflowExecutionFailedEventAttributes().GetFailure().GetMessage()
		}
		if why != "" {
			reason += ": " + TenantText(why)
			detail += ": " + why
		}
		return reason, detail
	}
	return "the workflow run ended without recording its outcome", "the workflow run ended without recording its outcome"
}
