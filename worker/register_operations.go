package worker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/operations"
	"github.com/fos-dev/fos/routing"
	"github.com/fos-dev/fos/shipping"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/transforms"
	"github.com/fos-dev/fos/workflows"
)

// registerOperations registers OperationExecute (operation/<operationId>)
// and OperationUndo (operation-undo/<historyId>), both started on the bulk
// task queue, and their activities over the operations Service.
func registerOperations(r sdkworker.Registry, deps Deps) {
	r.RegisterWorkflowWithOptions(workflows.OperationExecute, workflow.RegisterOptions{Name: workflows.OperationExecuteWorkflowType})
	r.RegisterWorkflowWithOptions(workflows.OperationUndo, workflow.RegisterOptions{Name: workflows.OperationUndoWorkflowType})
	r.RegisterActivity(&activities.OperationActivities{Operations: NewOperations(deps)})
}

// NewOperations builds the operations Service of the worker: labels
// through the shipping Service (the money-safe batch purchase), dispatches
// through the routing Service (DispatchToBridge), the runs
// through Temporal on the bulk task queue.
func NewOperations(deps Deps) *operations.Service {
	sh := shipping.New(shipping.Deps{Store: deps.Store, Secrets: deps.Secrets, Carriers: deps.Carriers, Logger: deps.Logger, Hooks: deps.OrderHooks,
		Events: agentEvents(deps)})
	rt := routing.New(routing.Deps{Store: deps.Store, Logger: deps.Logger, Hooks: deps.OrderHooks, Starter: DispatchStarter(deps)})
	d := operations.Deps{Store: deps.Store, Logger: deps.Logger, Labels: sh, Dispatches: operations.RoutingDispatches{Routing: rt}}
	if deps.Store != nil {
		d.Transforms = activities.OperationTransforms{Store: deps.Store, Transforms: transforms.New(deps.Store.Pool, nil)}
	}
	if deps.Temporal != nil {
		queue := deps.BulkTaskQueue
		if queue == "" {
			queue = deps.TaskQueue
		}
		d.Runs = TemporalOperations{Client: deps.Temporal, TaskQueue: queue, Log: deps.Logger}
	}
	return operations.New(d)
}

// OperationTune adjusts an operation execution's input before its run
// starts (tests and benchmarks: batch size, heartbeat).
type OperationTune = func(*workflows.OperationExecuteInput)

// TemporalOperations is the Temporal adapter of operations.Runs.
type TemporalOperations struct {
	Client    client.Client
	TaskQueue string
	Log       *slog.Logger
	// Tune, when set, adjusts the execution's input (tests, benchmarks).
	Tune OperationTune
}

// Execute implements operations.Runs: update-with-start of
// OperationExecute with the execute update. A closed run's id is started
// afresh (the database's status guards a second execution); a running
// one refuses the update (Conflict).
func (t TemporalOperations) Execute(ctx context.Context, in operations.ExecuteRun) error {
	wfIn := workflows.NewOperationExecuteInput(in.OrganizationID, in.OperationID, in.Actor)
	if t.Tune != nil {
		t.Tune(&wfIn)
	}
	opts := StartOptions(workflows.OperationWorkflowID(in.OperationID.String()), t.TaskQueue, in.OrganizationID.String(), map[string]any{"operationId": in.OperationID.String()})
	var err error
	for attempt := 1; attempt <= StartAttempts; attempt++ {
		var h client.WorkflowUpdateHandle
		h, err = t.Client.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
			StartWorkflowOperation: t.Client.NewWithStartWorkflowOperation(opts, workflows.OperationExecuteWorkflowType, wfIn),
			UpdateOptions: client.UpdateWorkflowOptions{WorkflowID: opts.ID, UpdateName: workflows.OperationUpdateExecute,
				WaitForStage: client.WorkflowUpdateStageCompleted},
		})
		if err == nil {
			err = h.Get(ctx, nil)
		}
		if err == nil || !StartMayHaveRun(err) || ctx.Err() != nil {
			break
		}
		t.starter().log().WarnContext(ctx, "operation execute outcome unknown; sending it again", "workflow_id", opts.ID, "attempt", attempt, "error", err.Error())
		time.Sleep(time.Duration(attempt) * 200 * time.Millisecond)
	}
	return t.mapErr(ctx, err)
}

func (t TemporalOperations) starter() Starter { return Starter{Client: t.Client, Log: t.Log} }

// mapErr maps a run's answer for the Service.
func (t TemporalOperations) mapErr(ctx context.Context, err error) error {
	var notFound *serviceerror.NotFound
	switch {
	case err == nil:
		return nil
	case workflows.IsOperationStateError(err):
		return domain.Conflict(rootMessage(err))
	case errors.As(err, &notFound):
		return operations.ErrNoRun
	case StartMayHaveRun(err):
		return domain.WorkflowsUnavailable(err)
	}
	return Unavailable(ctx, err)
}

// rootMessage is the innermost application error's message.
func rootMessage(err error) string {
	msg := err.Error()
	for e := err; e != nil; e = errors.Unwrap(e) {
		msg = e.Error()
	}
	return msg
}

func (t TemporalOperations) update(ctx context.Context, opID uuid.UUID, name string) error {
	h, err := t.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: workflows.OperationWorkflowID(opID.String()),
		UpdateName: name, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = h.Get(ctx, nil)
	}
	return t.mapErr(ctx, err)
}

// Pause implements operations.Runs.
func (t TemporalOperations) Pause(ctx context.Context, _, opID uuid.UUID) error {
	return t.update(ctx, opID, workflows.OperationUpdatePause)
}

// Resume implements operations.Runs.
func (t TemporalOperations) Resume(ctx context.Context, _, opID uuid.UUID) error {
	return t.update(ctx, opID, workflows.OperationUpdateResume)
}

// Cancel implements operations.Runs.
func (t TemporalOperations) Cancel(ctx context.Context, _, opID uuid.UUID) error {
	return t.update(ctx, opID, workflows.OperationUpdateCancel)
}

// Undo implements operations.Runs: OperationUndo started once per entry.
func (t TemporalOperations) Undo(ctx context.Context, in operations.UndoRun) error {
	wfIn := workflows.OperationUndoInput{Actor: in.Actor, OperationID: in.OperationID, HistoryID: in.HistoryID}
	opts := StartOptions(workflows.OperationUndoWorkflowID(in.HistoryID.String()), t.TaskQueue, in.OrganizationID.String(),
		map[string]any{"operationId": in.OperationID.String(), "historyId": in.HistoryID.String()})
	opts.WorkflowIDReusePolicy = enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE
	_, err := t.starter().StartStable(ctx, opts, time.Now(), workflows.OperationUndoWorkflowType, wfIn)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return nil // the undo ran already
	}
	return Unavailable(ctx, err)
}

// Restart starts an operation's OperationExecute run again (the
// reconciler, for a run that vanished): executing already, paused when the
// operation is, acting as the system.
func (t TemporalOperations) Restart(ctx context.Context, st *store.Store, orgID, opID uuid.UUID) error {
	op, err := store.OperationByID(ctx, st.Pool, orgID, opID)
	if err != nil {
		return err
	}
	in := workflows.NewOperationExecuteInput(orgID, opID, domain.System(orgID))
	if t.Tune != nil {
		t.Tune(&in)
	}
	in.State = &workflows.OperationExecuteState{Started: true, Paused: op.Status == store.OperationPaused, Total: op.ItemCount}
	opts := StartOptions(workflows.OperationWorkflowID(opID.String()), t.TaskQueue, orgID.String(), map[string]any{"operationId": opID.String()})
	_, err = t.Client.ExecuteWorkflow(ctx, opts, workflows.OperationExecuteWorkflowType, in)
	return err
}

// RestartUndo starts an entry's OperationUndo run again.
func (t TemporalOperations) RestartUndo(ctx context.Context, st *store.Store, orgID, historyID uuid.UUID) error {
	e, err := store.HistoryEntryByID(ctx, st.Pool, orgID, historyID)
	if err != nil {
		return err
	}
	return t.Undo(ctx, operations.UndoRun{OrganizationID: orgID, OperationID: e.OperationID, HistoryID: historyID, Actor: domain.System(orgID)})
}
