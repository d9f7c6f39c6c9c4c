package worker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/domain"
)

// Workflow starts, for the Temporal adapters of the domain services' ports
// (a service declares what it needs started; an adapter here starts it).
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

// StartAttempts is how often a start is sent while its outcome is unknown.
const StartAttempts = 3

// StartTimeout bounds a first workflow start; StartRetryTimeout each
// re-sent start and the describe after them.
const (
	StartTimeout      = 10 * time.Second
	StartRetryTimeout = 5 * time.Second
)

// StartMayHaveRun reports whether a failed workflow start (or
// update-with-start) may nonetheless have started its run: true for every
// error except Temporal's own refusals (invalid argument, not found,
// permission denied, failed precondition, already started, rate limited,
// unimplemented, a namespace problem) and an answer of the workflow itself
// (an update's application error). Start sites use it to decide whether
// they may undo what they wrote before the start.
func StartMayHaveRun(err error) bool {
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

// StartUnknownError is a start whose outcome stayed unknown: the run may
// exist. Whatever was written for it must stay.
type StartUnknownError struct{ Err error }

func (e *StartUnknownError) Error() string { return "workflow start outcome unknown: " + e.Err.Error() }
func (e *StartUnknownError) Unwrap() error { return e.Err }

// IsStartUnknown reports whether err is a start whose outcome is unknown.
func IsStartUnknown(err error) bool {
	var u *StartUnknownError
	return errors.As(err, &u)
}

// IsTemporalUnavailable tells a Temporal that cannot be reached (or did
// not answer in time, while the caller still waits) from a refused
// request.
func IsTemporalUnavailable(callerCtx context.Context, err error) bool {
	var (
		unavailable *serviceerror.Unavailable
		deadline    *serviceerror.DeadlineExceeded
		nsUnavail   *serviceerror.NamespaceUnavailable
		exhausted   *serviceerror.ResourceExhausted
	)
	switch {
	case errors.As(err, &unavailable), errors.As(err, &deadline), errors.As(err, &nsUnavail), errors.As(err, &exhausted):
		return true
	case errors.Is(err, context.DeadlineExceeded) && callerCtx.Err() == nil:
		return true
	}
	return false
}

// Starter starts workflows for the domain services with one client and
// logger.
type Starter struct {
	Client client.Client
	Log    *slog.Logger
}

func (s Starter) log() *slog.Logger {
	if s.Log == nil {
		return slog.Default()
	}
	return s.Log
}

// StartStable starts wf (opts.ID is a stable business id) and returns its
// run. An answer lost to a deadline or an outage (StartMayHaveRun) is
// followed by the same start again, with USE_EXISTING so that it joins a
// run the lost answer started, up to StartAttempts times; then the
// workflow is described (RunStartedSince). The error is either a refusal
// or a start that answered "no run" when described — nothing runs, the
// caller may undo its row — or a *StartUnknownError: the run may exist,
// the caller must leave its row as it is. ctx is the caller's (the first
// start is bounded by StartTimeout; the retries outlive the caller).
func (s Starter) StartStable(ctx context.Context, opts client.StartWorkflowOptions, since time.Time, wf any, args ...any) (client.WorkflowRun, error) {
	sctx, cancel := context.WithTimeout(ctx, StartTimeout)
	run, err := s.Client.ExecuteWorkflow(sctx, opts, wf, args...)
	cancel()
	if err == nil || !StartMayHaveRun(err) {
		return run, err
	}
	// The caller going away must not leave the outcome unknown.
	base := context.WithoutCancel(ctx)
	opts.WorkflowIDConflictPolicy = enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING
	for attempt := 1; attempt < StartAttempts; attempt++ {
		s.log().WarnContext(ctx, "workflow start outcome unknown; sending it again", "workflow_id", opts.ID, "attempt", attempt, "error", err.Error())
		time.Sleep(time.Duration(attempt) * 200 * time.Millisecond)
		rctx, cancel := context.WithTimeout(base, StartRetryTimeout)
		run, err = s.Client.ExecuteWorkflow(rctx, opts, wf, args...)
		cancel()
		if err == nil || !StartMayHaveRun(err) {
			return run, err
		}
	}
	dctx, cancel := context.WithTimeout(base, StartRetryTimeout)
	defer cancel()
	run, found, derr := s.RunStartedSince(dctx, opts.ID, since)
	switch {
	case derr != nil:
		return nil, &StartUnknownError{Err: err}
	case found:
		return run, nil
	}
	return nil, err
}

// RunStartedSince describes workflow id: found is true for a run that is
// open, or that started at or after since (allowing for a few seconds of
// clock skew); false when Temporal knows no such run — then nothing that
// was started for since runs. A describe that fails is an error: the
// outcome stays unknown.
func (s Starter) RunStartedSince(ctx context.Context, id string, since time.Time) (client.WorkflowRun, bool, error) {
	desc, err := s.Client.DescribeWorkflowExecution(ctx, id, "")
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
	return s.Client.GetWorkflow(ctx, id, info.GetExecution().GetRunId()), true, nil
}

// AwaitUpdateWithStart starts wf with update-with-start, or joins the run
// already going under the same id, and waits for the update's result in
// out (WaitForStage completed). The id is never reused
// (REJECT_DUPLICATE): a closed run (a caller's retry after the outcome)
// answers with its own result through closed instead of running again. A
// request whose answer is lost (StartMayHaveRun: a deadline, an outage) is
// sent again, which the stable id makes safe, up to StartAttempts times;
// if the outcome stays unknown the error is a *StartUnknownError.
func (s Starter) AwaitUpdateWithStart(ctx context.Context, opts client.StartWorkflowOptions, update string, wf, in, out any,
	closed func(ctx context.Context, wfID string) error) error {
	opts.WorkflowIDReusePolicy = enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE
	var err error
	for attempt := 1; attempt <= StartAttempts; attempt++ {
		var h client.WorkflowUpdateHandle
		h, err = s.Client.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
			StartWorkflowOperation: s.Client.NewWithStartWorkflowOperation(opts, wf, in),
			UpdateOptions: client.UpdateWorkflowOptions{
				WorkflowID: opts.ID, UpdateName: update, WaitForStage: client.WorkflowUpdateStageCompleted,
			},
		})
		if err == nil {
			err = h.Get(ctx, out)
		}
		if err == nil {
			return nil
		}
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		var notFound *serviceerror.NotFound
		if errors.As(err, &started) || errors.As(err, &notFound) {
			// The run is closed: its outcome is the answer.
			return closed(ctx, opts.ID)
		}
		if !StartMayHaveRun(err) || ctx.Err() != nil {
			break
		}
		s.log().WarnContext(ctx, "start or update outcome unknown; sending it again", "workflow_id", opts.ID, "attempt", attempt, "error", err.Error())
		time.Sleep(time.Duration(attempt) * 200 * time.Millisecond)
	}
	if StartMayHaveRun(err) {
		return &StartUnknownError{Err: err}
	}
	return err
}

// Unavailable maps a start's failure for a domain service: an outcome
// that stayed unknown, or a Temporal that cannot be reached, is
// domain.WorkflowsUnavailable (the caller keeps what it wrote); anything
// else is returned as it is.
func Unavailable(callerCtx context.Context, err error) error {
	if err != nil && (IsStartUnknown(err) || IsTemporalUnavailable(callerCtx, err)) {
		return domain.WorkflowsUnavailable(err)
	}
	return err
}
