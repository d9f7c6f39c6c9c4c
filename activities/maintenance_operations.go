package activities

import (
	"context"
	"time"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/store"
)

// Bounds of the operations' rows before the reconciler looks at them: an
// operation executing or paused that has not changed for this long, an
// undo begun this long ago.
const (
	OperationStartBound = 10 * time.Minute
	UndoStartBound      = 10 * time.Minute
)

// operationKind: an operation executing or paused. A missing run is
// started again under operation/<id> (it resumes from the items: claimed
// ones are settled, pending ones claimed); a run that closed without
// ending the operation fails it with the reason.
func (a *MaintenanceActivities) operationKind() WaitingKind {
	k := WaitingKind{
		Name:       "operation",
		Stale:      store.StaleOperations,
		Table:      "operations",
		Bound:      OperationStartBound,
		WorkflowID: func(row store.WaitingRow) string { return "operation/" + row.ID.String() },
		Fail: func(ctx context.Context, row store.WaitingRow, reason string) (bool, error) {
			msg := domain.TenantText("execution stopped: " + reason)
			return store.SetOperationStatus(ctx, a.Store.Pool, row.OrganizationID, row.ID,
				[]string{store.OperationExecuting, store.OperationPaused}, store.OperationFailed, &msg)
		},
	}
	if a.StartOperation != nil {
		k.Restart = func(ctx context.Context, row store.WaitingRow) error {
			return a.StartOperation(ctx, row.OrganizationID, row.ID)
		}
	}
	return k
}

// operationUndoKind: an undo begun and not finished. A missing run is
// started again under operation-undo/<historyId> (its steps are
// idempotent); one that closed without finishing clears the undo, so that
// the entry can be undone again.
func (a *MaintenanceActivities) operationUndoKind() WaitingKind {
	k := WaitingKind{
		Name:       "operation undo",
		Stale:      store.StaleUndos,
		Table:      "operation_history",
		Bound:      UndoStartBound,
		WorkflowID: func(row store.WaitingRow) string { return "operation-undo/" + row.ID.String() },
		AnyRun:     true,
		Fail: func(ctx context.Context, row store.WaitingRow, _ string) (bool, error) {
			return store.AbandonUndo(ctx, a.Store.Pool, row.OrganizationID, row.ID)
		},
	}
	if a.StartOperationUndo != nil {
		k.Restart = func(ctx context.Context, row store.WaitingRow) error {
			return a.StartOperationUndo(ctx, row.OrganizationID, row.ID)
		}
	}
	return k
}
