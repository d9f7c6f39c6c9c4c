package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

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
}

// PurgeExpiredInput is the input of PurgeExpired.
type PurgeExpiredInput struct{}

// PurgeExpiredResult counts what PurgeExpired removed.
type PurgeExpiredResult struct {
	IdempotencyKeys int64 `json:"idempotencyKeys"`
}

// PurgeExpired deletes Idempotency-Key records older than their 24-hour
// lifetime (one DELETE over an index; idempotent).
func (a *MaintenanceActivities) PurgeExpired(ctx context.Context, _ PurgeExpiredInput) (PurgeExpiredResult, error) {
	n, err := store.PurgeIdempotencyKeys(ctx, a.Store.Pool)
	if err != nil {
		return PurgeExpiredResult{}, err
	}
	if n > 0 && a.Logger != nil {
		a.Logger.Info("purged expired idempotency keys", "count", n)
	}
	return PurgeExpiredResult{IdempotencyKeys: n}, nil
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
	// ReconcileBatch is how many rows of a kind one run looks at.
	ReconcileBatch = 200
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

// ReconcileRuns settles the rows outside shipments, pickups and shipment
// actions that wait on a workflow longer than their job's bound (rate
// comparisons processing, carrier accounts pending registration): each
// row's run is described (DescribeWaitingRun); an open run is left alone;
// a missing run is started again under the same id when the job can resume
// (a comparison resumes from its items), else the row is marked failed; a
// run that closed without settling the row — terminated or reset in the
// Temporal UI, timed out — marks it failed with the reason. A row that
// fails to reconcile is logged and retried at the next run; the activity
// fails when Temporal cannot be asked at all.
func (a *MaintenanceActivities) ReconcileRuns(ctx context.Context, _ ReconcileRunsInput) (ReconcileRunsResult, error) {
	var out ReconcileRunsResult
	if a.Temporal == nil {
		return out, nil
	}
	for _, kind := range []func(context.Context) (ReconcileRunsResult, error){
		a.reconcileRateComparisons,
		a.reconcileCarrierRegistrations,
	} {
		res, err := kind(ctx)
		out.add(res)
		if err != nil {
			return out, err
		}
	}
	if out.Restarted+out.Failed > 0 {
		a.log().Info("reconciled rows waiting on workflows", "checked", out.Checked, "restarted", out.Restarted, "failed", out.Failed)
	}
	return out, nil
}

func (a *MaintenanceActivities) log() *slog.Logger {
	if a.Logger == nil {
		return slog.Default()
	}
	return a.Logger
}

// rateComparisonWorkflowID mirrors workflows.RateComparisonWorkflowID
// (workflows imports this package).
func rateComparisonWorkflowID(id string) string { return "rate-comparison/" + id }

// carrierRegistrationWorkflowID mirrors workflows.CarrierRegistrationWorkflowID.
func carrierRegistrationWorkflowID(id string) string { return "carrier-registration/" + id }

func (a *MaintenanceActivities) reconcileRateComparisons(ctx context.Context) (ReconcileRunsResult, error) {
	var out ReconcileRunsResult
	rows, err := store.StaleRateComparisons(ctx, a.Store.Pool, time.Now().Add(-RateComparisonStartBound), ReconcileBatch)
	if err != nil {
		return out, fmt.Errorf("list processing rate comparisons: %w", err)
	}
	for _, row := range rows {
		out.Checked++
		wfID := rateComparisonWorkflowID(row.ID.String())
		run, err := DescribeWaitingRun(ctx, a.Temporal, wfID, row.Since)
		if err != nil {
			if ctx.Err() != nil || isUnavailable(err) {
				return out, err
			}
			a.log().Warn("reconcile rate comparison: describe", "comparison_id", row.ID, "error", err)
			continue
		}
		switch {
		case run.Open:
		case run.Missing:
			// The process endpoint wrote processing but its run never
			// started (the process died in between, or Temporal lost the
			// start): start it; it resumes from the items.
			if a.StartRateComparison == nil {
				continue
			}
			if err := a.StartRateComparison(ctx, row.OrganizationID.String(), row.ID.String()); err != nil {
				a.log().Warn("reconcile rate comparison: restart", "comparison_id", row.ID, "error", err)
				continue
			}
			a.log().Info("restarted a rate comparison whose run was missing", "comparison_id", row.ID, "workflow_id", wfID)
			out.Restarted++
		default:
			msg := "processing stopped: " + run.Reason + "; process the comparison again to finish the remaining items"
			c, err := store.FinishRateComparison(ctx, a.Store.Pool, row.OrganizationID, row.ID, store.FinishFailed, msg)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				a.log().Warn("reconcile rate comparison: mark failed", "comparison_id", row.ID, "error", err)
				continue
			}
			if err == nil && c.Status == store.RateComparisonFailed {
				a.log().Info("marked a rate comparison failed: its run ended without closing it", "comparison_id", row.ID, "reason", run.Reason)
				out.Failed++
			}
		}
	}
	return out, nil
}

func (a *MaintenanceActivities) reconcileCarrierRegistrations(ctx context.Context) (ReconcileRunsResult, error) {
	var out ReconcileRunsResult
	rows, err := store.StalePendingCarrierAccounts(ctx, a.Store.Pool, time.Now().Add(-CarrierRegistrationStartBound), ReconcileBatch)
	if err != nil {
		return out, fmt.Errorf("list pending carrier accounts: %w", err)
	}
	for _, row := range rows {
		out.Checked++
		// Every run of the account counts: a registration run settles the
		// account (active, error or deleted) before it closes, so a pending
		// account and a closed run never belong together.
		run, err := DescribeWaitingRun(ctx, a.Temporal, carrierRegistrationWorkflowID(row.ID.String()), time.Time{})
		if err != nil {
			if ctx.Err() != nil || isUnavailable(err) {
				return out, err
			}
			a.log().Warn("reconcile carrier registration: describe", "carrier_account_id", row.ID, "error", err)
			continue
		}
		if run.Open {
			continue
		}
		// A registration cannot be restarted without the customer's
		// answers: it ends, and the account can be registered again.
		reason := run.Reason
		if run.Missing {
			reason = "the registration never started"
		}
		changed, err := store.FailOrphanedCarrierRegistration(ctx, a.Store.Pool, row.OrganizationID, row.ID, row.Since,
			"registration ended: "+reason+"; register the account again")
		if err != nil {
			a.log().Warn("reconcile carrier registration: mark error", "carrier_account_id", row.ID, "error", err)
			continue
		}
		if changed {
			a.log().Info("ended a carrier registration left pending without a run", "carrier_account_id", row.ID, "reason", reason)
			out.Failed++
		}
	}
	return out, nil
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
	// how it closed and Reason says so for people ("the workflow run was
	// terminated in Temporal: <reason> (by <identity>)", "… timed out", …).
	Status enumspb.WorkflowExecutionStatus
	RunID  string
	Reason string
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
	out.Reason = closeReason(ctx, c, id, out.RunID, out.Status)
	return out, nil
}

// closeReason says how a run closed, with the operator's reason for a
// termination (read from the run's close event; best effort).
func closeReason(ctx context.Context, c client.Client, id, runID string, status enumspb.WorkflowExecutionStatus) string {
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
		msg := "the workflow run was terminated in Temporal"
		if attrs := closeEvent.GetWorkflowExecutionTerminatedEventAttributes(); attrs != nil {
			if attrs.GetReason() != "" {
				msg += ": " + attrs.GetReason()
			}
			if attrs.GetIdentity() != "" {
				msg += " (by " + attrs.GetIdentity() + ")"
			}
		}
		return msg
	case enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		return "the workflow run timed out"
	case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		return "the workflow run was cancelled"
	case enumspb.WORKFLOW_EXECUTION_STATUS_FAILED:
		msg := "the workflow run failed"
		if f := closeEvent.GetWorkflowExecutionFailedEventAttributes().GetFailure(); f != nil && f.GetMessage() != "" {
			msg += ": " + f.GetMessage()
		}
		return msg
	}
	return "the workflow run ended without recording its outcome"
}
