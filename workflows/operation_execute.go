package workflows

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/operations"
	"github.com/fos-dev/fos/store"
)

// Workflow types and ids of operations (CONTRACT 5).
const (
	OperationExecuteWorkflowType = "OperationExecute"
	OperationUndoWorkflowType    = "OperationUndo"
)

// OperationWorkflowID is the execution's id; OperationUndoWorkflowID an
// undo's.
func OperationWorkflowID(operationID string) string { return "operation/" + operationID }

// OperationUndoWorkflowID is the workflow id of the undo of a history entry.
func OperationUndoWorkflowID(historyID string) string { return "operation-undo/" + historyID }

// The updates of OperationExecute.
const (
	OperationUpdateExecute = "execute"
	OperationUpdatePause   = "pause"
	OperationUpdateResume  = "resume"
	OperationUpdateCancel  = "cancel"
)

// ErrTypeOperationState is an update refused by the run's state (the API's
// 409); ErrTypeOperationFailed a run whose operation ended failed.
const (
	ErrTypeOperationState  = "OperationState"
	ErrTypeOperationFailed = "OperationFailed"
)

// Defaults of the execution's tuning, pinned in the input.
const (
	DefaultOperationBatchSize       = 200
	DefaultOperationParallelism     = 4
	DefaultOperationItemParallelism = 8
	DefaultOperationBatchesPerRun   = 200
	DefaultOperationBatchHeartbeat  = 30 * time.Second
)

// OperationExecuteInput is the input of OperationExecute.
type OperationExecuteInput struct {
	OrganizationID uuid.UUID    `json:"organizationId"`
	OperationID    uuid.UUID    `json:"operationId"`
	Actor          domain.Actor `json:"actor"`
	// Tuning (0: the default): items per batch activity, batches in
	// flight, items at once inside a batch, batches per run before
	// continue-as-new (earlier when Temporal suggests it), and the batch's
	// heartbeat timeout (how soon a batch of a dead worker runs again).
	BatchSize       int           `json:"batchSize,omitempty"`
	Parallelism     int           `json:"parallelism,omitempty"`
	ItemParallelism int           `json:"itemParallelism,omitempty"`
	BatchesPerRun   int           `json:"batchesPerRun,omitempty"`
	BatchHeartbeat  time.Duration `json:"batchHeartbeat,omitempty"`
	// State is carried across continue-as-new (nil on the first run).
	State *OperationExecuteState `json:"state,omitempty"`
}

// NewOperationExecuteInput pins the defaults in the run's input.
func NewOperationExecuteInput(orgID, opID uuid.UUID, actor domain.Actor) OperationExecuteInput {
	return OperationExecuteInput{OrganizationID: orgID, OperationID: opID, Actor: actor, BatchSize: DefaultOperationBatchSize,
		Parallelism: DefaultOperationParallelism, ItemParallelism: DefaultOperationItemParallelism,
		BatchesPerRun: DefaultOperationBatchesPerRun, BatchHeartbeat: DefaultOperationBatchHeartbeat}
}

// OperationExecuteState is the run's state handed to the next run.
type OperationExecuteState struct {
	Started   bool  `json:"started"`
	Paused    bool  `json:"paused"`
	Cancelled bool  `json:"cancelled"`
	NextBatch int   `json:"nextBatch"`
	Runs      int   `json:"runs"`
	Total     int64 `json:"total"`
	Processed int64 `json:"processed"`
}

type operationRun struct {
	in       OperationExecuteInput
	st       *OperationExecuteState
	refused  bool
	starting bool
	// exhausted: a batch found no pending item; fatal: a batch failed.
	exhausted bool
	fatal     error
	thisRun   int
	can       bool
}

func (r *operationRun) details(ctx workflow.Context) {
	workflow.SetCurrentDetails(ctx, fmt.Sprintf("%d/%d", r.st.Processed, r.st.Total))
}

var (
	opStepOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
			NonRetryableErrorTypes: []string{activities.ErrTypeOperationRefused}},
	}
)

func stateError(msg string) error {
	return temporal.NewNonRetryableApplicationError(msg, ErrTypeOperationState, nil)
}

// OperationExecute executes an operation (operation/<operationId>): the
// execute update (update-with-start) moves it to executing; then batches
// of items run as activities, Parallelism at a time, each claiming its
// items in the database, until none is pending; the run continues as new
// after BatchesPerRun batches or when Temporal suggests it. The updates
// pause, resume and cancel change the run (their validators refuse what
// the state does not allow, without touching history); PostgreSQL holds
// the operation's status the API reads. The run fails (Failed in the UI)
// when the operation ends failed.
func OperationExecute(ctx workflow.Context, in OperationExecuteInput) (activities.OperationProgress, error) {
	if in.BatchSize <= 0 {
		in.BatchSize = DefaultOperationBatchSize
	}
	if in.Parallelism <= 0 {
		in.Parallelism = DefaultOperationParallelism
	}
	if in.BatchesPerRun <= 0 {
		in.BatchesPerRun = DefaultOperationBatchesPerRun
	}
	if in.BatchHeartbeat <= 0 {
		in.BatchHeartbeat = DefaultOperationBatchHeartbeat
	}
	r := &operationRun{in: in, st: in.State}
	if r.st == nil {
		r.st = &OperationExecuteState{}
	}
	var a *activities.OperationActivities
	sctx := workflow.WithActivityOptions(ctx, opStepOptions)
	if err := r.registerUpdates(ctx, sctx, a); err != nil {
		return activities.OperationProgress{}, err
	}
	// Started by update-with-start: the execute update comes first. A run
	// nobody asked to execute ends.
	ok, err := workflow.AwaitWithTimeout(ctx, 10*time.Minute, func() bool { return r.st.Started || r.refused })
	if err != nil || !ok || r.refused {
		_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
		return activities.OperationProgress{}, err
	}
	r.details(ctx)

	bctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Minute,
		HeartbeatTimeout:    in.BatchHeartbeat,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
			NonRetryableErrorTypes: []string{activities.ErrTypeOperationRefused}},
	})
	var prog activities.OperationProgress
	for {
		running := in.Parallelism
		for i := 0; i < in.Parallelism; i++ {
			workflow.Go(ctx, func(ctx workflow.Context) {
				defer func() { running-- }()
				r.batches(ctx, bctx, a)
			})
		}
		_ = workflow.Await(ctx, func() bool { return running == 0 })
		if !r.exhausted || r.fatal != nil || r.st.Cancelled {
			break
		}
		// No batch found an item: the operation ends, unless items are
		// left (a claim that raced another, a batch run again): then
		// batches go on.
		if err := workflow.ExecuteActivity(sctx, a.FinishExecution, activities.FinishExecutionInput{OrganizationID: in.OrganizationID, OperationID: in.OperationID}).Get(ctx, &prog); err != nil {
			return prog, err
		}
		if prog.Status != store.OperationExecuting && prog.Status != store.OperationPaused {
			break
		}
		r.exhausted = false
		_ = workflow.Sleep(ctx, time.Second)
	}

	switch {
	case r.fatal != nil:
		msg := "a batch failed: " + r.fatal.Error()
		_ = workflow.ExecuteActivity(sctx, a.SetOperationRunStatus, activities.SetOperationRunStatusInput{
			OrganizationID: in.OrganizationID, OperationID: in.OperationID, Status: store.OperationFailed}).Get(ctx, nil)
		_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
		return activities.OperationProgress{}, temporal.NewNonRetryableApplicationError(msg, ErrTypeOperationFailed, nil)
	case r.st.Cancelled:
		_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
		return activities.OperationProgress{Status: store.OperationCancelled, Items: r.st.Total, Done: r.st.Processed}, nil
	case !r.exhausted:
		// Continue as new with the state (no update may be lost).
		_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
		next := in
		st := *r.st
		st.Runs++
		next.State = &st
		return activities.OperationProgress{}, workflow.NewContinueAsNewError(ctx, OperationExecute, next)
	}
	r.st.Total, r.st.Processed = prog.Items, prog.Done
	r.details(ctx)
	_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
	if prog.Status == store.OperationFailed {
		return prog, temporal.NewNonRetryableApplicationError(fmt.Sprintf("all %d items that were not skipped failed", prog.Failed), ErrTypeOperationFailed, nil, prog)
	}
	return prog, nil
}

// batches runs batches one after the other until none is left, the run
// is cancelled, a batch fails, or the run should continue as new.
func (r *operationRun) batches(ctx, bctx workflow.Context, a *activities.OperationActivities) {
	for {
		_ = workflow.Await(ctx, func() bool { return !r.st.Paused || r.st.Cancelled })
		if r.st.Cancelled || r.exhausted || r.fatal != nil || r.can {
			return
		}
		claim := fmt.Sprintf("b%d", r.st.NextBatch)
		r.st.NextBatch++
		r.thisRun++
		var res operations.BatchResult
		err := workflow.ExecuteActivity(bctx, a.ExecuteBatch, activities.ExecuteBatchInput{Actor: r.in.Actor, OperationID: r.in.OperationID,
			Owner: OperationWorkflowID(r.in.OperationID.String()), Claim: claim, Limit: r.in.BatchSize, Parallelism: r.in.ItemParallelism}).Get(ctx, &res)
		if err != nil {
			if r.fatal == nil {
				r.fatal = err
			}
			return
		}
		if res.Total > 0 {
			r.st.Total = res.Total
		}
		if res.Processed > r.st.Processed {
			r.st.Processed = res.Processed
		}
		r.details(ctx)
		if res.Items == 0 {
			switch res.Status {
			case store.OperationPaused:
				r.st.Paused = true // the database says so: wait for resume
				continue
			case store.OperationCancelled:
				r.st.Cancelled = true
				return
			default:
				r.exhausted = true
				return
			}
		}
		if r.thisRun >= r.in.BatchesPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			r.can = true
			return
		}
	}
}

// registerUpdates registers execute, pause, resume and cancel.
func (r *operationRun) registerUpdates(ctx, sctx workflow.Context, a *activities.OperationActivities) error {
	in := r.in
	setStatus := func(ctx workflow.Context, to string) (string, error) {
		var st string
		err := workflow.ExecuteActivity(sctx, a.SetOperationRunStatus, activities.SetOperationRunStatusInput{
			OrganizationID: in.OrganizationID, OperationID: in.OperationID, Status: to}).Get(ctx, &st)
		if err == nil && st != to {
			err = stateError("the operation is " + st)
		}
		return st, err
	}
	err := workflow.SetUpdateHandlerWithOptions(ctx, OperationUpdateExecute, func(ctx workflow.Context) (activities.OperationProgress, error) {
		r.starting = true // a concurrent execute is refused
		historyID := uuid.NewSHA1(in.OperationID, []byte(workflow.GetInfo(ctx).WorkflowExecution.RunID))
		var prog activities.OperationProgress
		err := workflow.ExecuteActivity(sctx, a.BeginExecution, activities.BeginExecutionInput{Actor: in.Actor, OperationID: in.OperationID, HistoryID: historyID}).Get(ctx, &prog)
		if err != nil {
			r.refused, r.starting = !r.st.Started, false
			return prog, err
		}
		r.st.Started, r.st.Total, r.st.Processed = true, prog.Items, prog.Done
		return prog, nil
	}, workflow.UpdateHandlerOptions{Validator: func() error {
		if r.st.Started || r.starting || r.refused {
			return stateError("the operation is executing already")
		}
		return nil
	}})
	if err != nil {
		return err
	}
	err = workflow.SetUpdateHandlerWithOptions(ctx, OperationUpdatePause, func(ctx workflow.Context) (string, error) {
		r.st.Paused = true // before the database: no batch starts meanwhile
		st, err := setStatus(ctx, store.OperationPaused)
		if err != nil {
			r.st.Paused = st == store.OperationPaused
		}
		return st, err
	}, workflow.UpdateHandlerOptions{Validator: func() error {
		if !r.st.Started || r.st.Paused || r.st.Cancelled {
			return stateError("only an executing operation can be paused")
		}
		return nil
	}})
	if err != nil {
		return err
	}
	err = workflow.SetUpdateHandlerWithOptions(ctx, OperationUpdateResume, func(ctx workflow.Context) (string, error) {
		st, err := setStatus(ctx, store.OperationExecuting)
		if err == nil {
			r.st.Paused = false
		}
		return st, err
	}, workflow.UpdateHandlerOptions{Validator: func() error {
		if !r.st.Paused || r.st.Cancelled {
			return stateError("only a paused operation can be resumed")
		}
		return nil
	}})
	if err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(ctx, OperationUpdateCancel, func(ctx workflow.Context) (string, error) {
		r.st.Cancelled = true // before the database: no batch starts meanwhile
		st, err := setStatus(ctx, store.OperationCancelled)
		if err != nil {
			r.st.Cancelled = st == store.OperationCancelled
		}
		return st, err
	}, workflow.UpdateHandlerOptions{Validator: func() error {
		if !r.st.Started || r.st.Cancelled {
			return stateError("the operation is not running")
		}
		return nil
	}})
}

// IsOperationStateError reports whether err is an update refused by the
// run's state.
func IsOperationStateError(err error) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && (appErr.Type() == ErrTypeOperationState || appErr.Type() == activities.ErrTypeOperationRefused)
}
