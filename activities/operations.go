package activities

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/operations"
)

// OperationActivities are the steps of OperationExecute and OperationUndo:
// each calls the operations Service (no logic of its own).
type OperationActivities struct {
	Operations *operations.Service
}

// ErrTypeOperationRefused is a step the operation's state refuses
// (Conflict, NotFound, Invalid): not retried.
const ErrTypeOperationRefused = "OperationRefused"

// operationErr makes a domain refusal non-retryable; anything else is
// retried by the activity's policy.
func operationErr(err error) error {
	if err == nil {
		return nil
	}
	var de *domain.Error
	if errors.As(err, &de) && !de.Kind.Retryable() {
		return temporal.NewNonRetryableApplicationError(de.Message, ErrTypeOperationRefused, nil)
	}
	return err
}

// BeginExecutionInput is the input of BeginExecution.
type BeginExecutionInput struct {
	Actor       domain.Actor `json:"actor"`
	OperationID uuid.UUID    `json:"operationId"`
	HistoryID   uuid.UUID    `json:"historyId"`
}

// OperationProgress is an operation's status and counters.
type OperationProgress struct {
	Status    string `json:"status"`
	Items     int64  `json:"items"`
	Done      int64  `json:"done"`
	Completed int64  `json:"completed"`
	Failed    int64  `json:"failed"`
	Skipped   int64  `json:"skipped"`
}

func progressOf(op operations.Operation) OperationProgress {
	return OperationProgress{Status: op.Status, Items: op.ItemCount, Done: op.CompletedCount + op.FailedCount + op.SkippedCount,
		Completed: op.CompletedCount, Failed: op.FailedCount, Skipped: op.SkippedCount}
}

// BeginExecution moves the operation to executing (operations.Service.BeginExecution).
func (a *OperationActivities) BeginExecution(ctx context.Context, in BeginExecutionInput) (OperationProgress, error) {
	op, err := a.Operations.BeginExecution(ctx, in.Actor, in.OperationID, in.HistoryID)
	return progressOf(op), operationErr(err)
}

// SetOperationRunStatusInput is the input of SetOperationRunStatus.
type SetOperationRunStatusInput struct {
	OrganizationID uuid.UUID `json:"organizationId"`
	OperationID    uuid.UUID `json:"operationId"`
	Status         string    `json:"status"`
}

// SetOperationRunStatus pauses, resumes or cancels in the database.
func (a *OperationActivities) SetOperationRunStatus(ctx context.Context, in SetOperationRunStatusInput) (string, error) {
	st, err := a.Operations.SetRunStatus(ctx, in.OrganizationID, in.OperationID, in.Status)
	return st, operationErr(err)
}

// ExecuteBatchInput is the input of ExecuteBatch.
type ExecuteBatchInput struct {
	Actor       domain.Actor `json:"actor"`
	OperationID uuid.UUID    `json:"operationId"`
	Owner       string       `json:"owner"`
	Claim       string       `json:"claim"`
	Limit       int          `json:"limit"`
	Parallelism int          `json:"parallelism"`
}

// ExecuteBatch executes one batch of items (operations.Service.ProcessBatch),
// heartbeating after each item.
func (a *OperationActivities) ExecuteBatch(ctx context.Context, in ExecuteBatchInput) (operations.BatchResult, error) {
	res, err := a.Operations.ProcessBatch(ctx, operations.BatchInput{Actor: in.Actor, OperationID: in.OperationID, Owner: in.Owner,
		Claim: in.Claim, Limit: in.Limit, Parallelism: in.Parallelism,
		Heartbeat: func(done int) { activity.RecordHeartbeat(ctx, done) }})
	return res, operationErr(err)
}

// FinishExecutionInput is the input of FinishExecution.
type FinishExecutionInput struct {
	OrganizationID uuid.UUID `json:"organizationId"`
	OperationID    uuid.UUID `json:"operationId"`
}

// FinishExecution ends the operation completed or failed when no item is
// left (operations.Service.FinishExecution).
func (a *OperationActivities) FinishExecution(ctx context.Context, in FinishExecutionInput) (OperationProgress, error) {
	op, err := a.Operations.FinishExecution(ctx, in.OrganizationID, in.OperationID)
	return progressOf(op), operationErr(err)
}

// UndoStepInput is the input of the undo steps.
type UndoStepInput struct {
	Actor       domain.Actor `json:"actor"`
	OperationID uuid.UUID    `json:"operationId"`
	HistoryID   uuid.UUID    `json:"historyId"`
	// ItemIDs and AfterSeq, Limit: ReverseUndoBatch.
	ItemIDs  []uuid.UUID `json:"itemIds,omitempty"`
	AfterSeq int64       `json:"afterSeq,omitempty"`
	Limit    int         `json:"limit,omitempty"`
}

// PlanUndo reads what the undo does.
func (a *OperationActivities) PlanUndo(ctx context.Context, in UndoStepInput) (operations.UndoPlan, error) {
	p, err := a.Operations.PlanUndo(ctx, in.Actor.OrganizationID, in.OperationID, in.HistoryID)
	return p, operationErr(err)
}

// ReverseUndoBatch reverses the execution's effects on a batch of items.
func (a *OperationActivities) ReverseUndoBatch(ctx context.Context, in UndoStepInput) (operations.ReverseResult, error) {
	actor := domain.Actor{Kind: domain.ActorOperation, ID: in.OperationID, OrganizationID: in.Actor.OrganizationID,
		Name: "operation undo " + in.HistoryID.String(), OnBehalfOf: &in.Actor}
	r, err := a.Operations.ReverseBatch(ctx, actor, in.OperationID, in.HistoryID, in.ItemIDs, in.AfterSeq, in.Limit)
	return r, operationErr(err)
}

// RestoreUndoEntry restores the items' previous state.
func (a *OperationActivities) RestoreUndoEntry(ctx context.Context, in UndoStepInput) error {
	return operationErr(a.Operations.RestoreEntry(ctx, in.Actor.OrganizationID, in.OperationID, in.HistoryID))
}

// FinishUndo records the undo.
func (a *OperationActivities) FinishUndo(ctx context.Context, in operations.FinishUndoInput) error {
	return operationErr(a.Operations.FinishUndo(ctx, in))
}
