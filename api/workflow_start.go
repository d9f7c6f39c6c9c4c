package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/worker"
)

// Workflow starts whose answer is lost.
//
// A start (ExecuteWorkflow, UpdateWithStartWorkflow) that fails with a
// deadline, Unavailable, a cancelled request or any error that is not a
// refusal by Temporal may have started the run all the same: the request
// reached the server and only the answer was lost. Such an error never
// undoes a row written for the run (delete, revert): the start is sent
// again, which the stable business workflow id makes safe (USE_EXISTING
// joins the run the lost answer started), and when the outcome is still
// unknown the workflow is described. A row left waiting for a run that
// does not exist is then the reconciler's (Maintenance) to settle.

// startAttempts is how often a start is sent while its outcome is unknown.
const startAttempts = 3

// startRetryTimeout bounds each re-sent start and the describe after them.
const startRetryTimeout = 5 * time.Second

// startMayHaveRun reports whether a failed workflow start (or
// update-with-start) may nonetheless have started its run: true for every
// error except Temporal's own refusals (invalid argument, not found,
// permission denied, failed precondition, already started, rate limited,
// unimplemented, a namespace problem) and an answer of the workflow itself
// (an update's application error). Start sites use it to decide whether
// they may undo what they wrote before the start.
func startMayHaveRun(err error) bool {
	if err == nil {
		return false
	}
	var (
		invalid    *serviceerror.InvalidArgument
		notFound   *serviceerror.NotFound
		nsNotFound *serviceerror.NamespaceNotFound
		nsInactive *serviceerror.NamespaceNotActive
		nsInvalid  *serviceerror.NamespaceInvalidState
		denied     *serviceerror.PermissionDenied
		precond    *serviceerror.FailedPrecondition
		exhausted  *serviceerror.ResourceExhausted
		unimpl     *serviceerror.Unimplemented
		started    *serviceerror.WorkflowExecutionAlreadyStarted
		appErr     *temporal.ApplicationError
	)
	switch {
	case errors.As(err, &invalid), errors.As(err, &notFound), errors.As(err, &nsNotFound),
		errors.As(err, &nsInactive), errors.As(err, &nsInvalid), errors.As(err, &denied),
		errors.As(err, &precond), errors.As(err, &exhausted), errors.As(err, &unimpl),
		errors.As(err, &started), errors.As(err, &appErr):
		return false
	}
	return true
}

// startUnknownError is a start whose outcome stayed unknown: the run may
// exist. Whatever was written for it must stay.
type startUnknownError struct{ err error }

func (e *startUnknownError) Error() string { return "workflow start outcome unknown: " + e.err.Error() }
func (e *startUnknownError) Unwrap() error { return e.err }

// isStartUnknown reports whether err is a start whose outcome is unknown.
func isStartUnknown(err error) bool {
	var u *startUnknownError
	return errors.As(err, &u)
}

// startStableWorkflow starts wf (opts.ID is a stable business id) and returns its
// run. An answer lost to a deadline or an outage (startMayHaveRun) is
// followed by the same start again, with USE_EXISTING so that it joins a
// run the lost answer started, up to startAttempts times; then the
// workflow is described (runStartedSince). The error is either a refusal
// or a start that answered "no run" when described — nothing runs, the
// caller may undo its row — or a *startUnknownError: the run may exist,
// the caller must leave its row as it is.
func (s *Server) startStableWorkflow(r *http.Request, opts client.StartWorkflowOptions, since time.Time, wf any, args ...any) (client.WorkflowRun, error) {
	opts = s.withOrganizationName(r.Context(), opts)
	ctx, cancel := context.WithTimeout(r.Context(), startWorkflowTimeout)
	run, err := s.temporal.ExecuteWorkflow(ctx, opts, wf, args...)
	cancel()
	if err == nil || !startMayHaveRun(err) {
		return run, err
	}
	// The client going away must not leave the outcome unknown.
	base := context.WithoutCancel(r.Context())
	opts.WorkflowIDConflictPolicy = enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING
	for attempt := 1; attempt < startAttempts; attempt++ {
		s.log.WarnContext(r.Context(), "workflow start outcome unknown; sending it again", append(logAttrs(r), "workflow_id", opts.ID, "attempt", attempt, "error", err.Error())...)
		time.Sleep(time.Duration(attempt) * 200 * time.Millisecond)
		ctx, cancel := context.WithTimeout(base, startRetryTimeout)
		run, err = s.temporal.ExecuteWorkflow(ctx, opts, wf, args...)
		cancel()
		if err == nil || !startMayHaveRun(err) {
			return run, err
		}
	}
	ctx, cancel = context.WithTimeout(base, startRetryTimeout)
	defer cancel()
	run, found, derr := s.runStartedSince(ctx, opts.ID, since)
	switch {
	case derr != nil:
		return nil, &startUnknownError{err: err}
	case found:
		return run, nil
	}
	return nil, err
}

// runStartedSince describes workflow id: found is true for a run that is
// open, or that started at or after since (allowing for a few seconds of
// clock skew); false when Temporal knows no such run — then nothing that
// was started for since runs. A describe that fails is an error: the
// outcome stays unknown.
func (s *Server) runStartedSince(ctx context.Context, id string, since time.Time) (client.WorkflowRun, bool, error) {
	desc, err := s.temporal.DescribeWorkflowExecution(ctx, id, "")
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	info := desc.GetWorkflowExecutionInfo()
	open := info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	if !open && info.GetStartTime().AsTime().Before(since.Add(-5*time.Second)) {
		return nil, false, nil
	}
	return s.temporal.GetWorkflow(ctx, id, info.GetExecution().GetRunId()), true, nil
}

// withOrganizationName names the run's organization in its memo and
// summary (worker.WithOrganizationName), from the OrganizationId search
// attribute the options carry.
func (s *Server) withOrganizationName(ctx context.Context, opts client.StartWorkflowOptions) client.StartWorkflowOptions {
	orgID, ok := opts.TypedSearchAttributes.GetKeyword(worker.OrganizationIDKey)
	if !ok || s.orgNames == nil {
		return opts
	}
	return worker.WithOrganizationName(opts, s.orgNames.Name(ctx, orgID))
}

// startWorkflowTimeout bounds a workflow start, so that an unreachable
// Temporal answers 503 instead of holding the request.
const startWorkflowTimeout = 10 * time.Second

func errTemporalUnavailable() *Error {
	return &Error{Status: http.StatusServiceUnavailable, Code: "temporal_unavailable",
		Message: "the workflow service (Temporal) is unavailable; try again later"}
}

// isTemporalUnavailable tells a Temporal that cannot be reached (or did not
// answer in time) from a refused request (worker.IsTemporalUnavailable).
func isTemporalUnavailable(reqCtx context.Context, err error) bool {
	return worker.IsTemporalUnavailable(reqCtx, err)
}
