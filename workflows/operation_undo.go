package workflows

import (
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/operations"
)

// Bounds of an undo.
const (
	DefaultUndoBatchSize = 50
	// maxRefusedKept bounds the refused labels a run carries (the undone
	// entry names at most these).
	maxRefusedKept = 500
)

// OperationUndoInput is the input of OperationUndo.
type OperationUndoInput struct {
	Actor       domain.Actor `json:"actor"`
	OperationID uuid.UUID    `json:"operationId"`
	HistoryID   uuid.UUID    `json:"historyId"`
	BatchSize   int          `json:"batchSize,omitempty"`
	// State is carried across continue-as-new.
	State *OperationUndoState `json:"state,omitempty"`
}

// OperationUndoState is an undo's progress.
type OperationUndoState struct {
	Plan      *operations.UndoPlan      `json:"plan,omitempty"`
	AfterSeq  int64                     `json:"afterSeq"`
	Reversed  bool                      `json:"reversed"`
	Voided    int                       `json:"voided"`
	Cancelled int                       `json:"cancelled"`
	Refused   []operations.RefusedLabel `json:"refused,omitempty"`
	// RefusedCount counts every refusal (Refused keeps the first ones).
	RefusedCount int `json:"refusedCount,omitempty"`
}

// OperationUndo undoes a history entry (operation-undo/<historyId>): when
// the operation executed, the affected items' labels are voided and their
// unpushed dispatches cancelled in batches (a label the carrier refuses is
// kept and named); then the items' previous state is restored and the
// entry marked undone with an undone entry recording what happened. Each
// step is idempotent; voids are retried durably.
func OperationUndo(ctx workflow.Context, in OperationUndoInput) (OperationUndoState, error) {
	if in.BatchSize <= 0 {
		in.BatchSize = DefaultUndoBatchSize
	}
	st := in.State
	if st == nil {
		st = &OperationUndoState{}
	}
	var a *activities.OperationActivities
	sctx := workflow.WithActivityOptions(ctx, opStepOptions)
	// Voids are retried until they are answered (a carrier outage).
	vctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: 2 * time.Second, BackoffCoefficient: 2, MaximumInterval: 5 * time.Minute,
			NonRetryableErrorTypes: []string{activities.ErrTypeOperationRefused}},
	})
	step := activities.UndoStepInput{Actor: in.Actor, OperationID: in.OperationID, HistoryID: in.HistoryID}
	if st.Plan == nil {
		var p operations.UndoPlan
		if err := workflow.ExecuteActivity(sctx, a.PlanUndo, step).Get(ctx, &p); err != nil {
			return *st, err
		}
		st.Plan = &p
	}
	for st.Plan.Executed && !st.Reversed {
		s := step
		s.ItemIDs, s.AfterSeq, s.Limit = st.Plan.ItemIDs, st.AfterSeq, in.BatchSize
		var res operations.ReverseResult
		if err := workflow.ExecuteActivity(vctx, a.ReverseUndoBatch, s).Get(ctx, &res); err != nil {
			return *st, err
		}
		st.AfterSeq, st.Reversed = res.LastSeq, res.Done
		st.Voided += res.Voided
		st.Cancelled += res.Cancelled
		st.RefusedCount += len(res.Refused)
		for _, r := range res.Refused {
			if len(st.Refused) < maxRefusedKept {
				st.Refused = append(st.Refused, r)
			}
		}
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("%d labels voided", st.Voided))
		if !st.Reversed && workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			next := in
			next.State = st
			return *st, workflow.NewContinueAsNewError(ctx, OperationUndo, next)
		}
	}
	if err := workflow.ExecuteActivity(sctx, a.RestoreUndoEntry, step).Get(ctx, nil); err != nil {
		return *st, err
	}
	fin := operations.FinishUndoInput{Actor: in.Actor, OperationID: in.OperationID, HistoryID: in.HistoryID, Voided: st.Voided, Cancelled: st.Cancelled, Refused: st.Refused, RefusedCount: st.RefusedCount}
	if err := workflow.ExecuteActivity(sctx, a.FinishUndo, fin).Get(ctx, nil); err != nil {
		return *st, err
	}
	return *st, nil
}
