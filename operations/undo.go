package operations

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/store"
)

// Undo undoes a history entry (the newest undoable one when historyID is
// nil) with an OperationUndo run (operation-undo/<historyId>, 202 in the
// API): it restores the affected items' previous state and, when the
// operation has executed, reverses the execution's effects on them (labels
// voided, dispatches not yet pushed cancelled). An entry undone (or being
// undone) is Conflict, as is undo while the operation runs.
func (s *Service) Undo(ctx context.Context, actor domain.Actor, opID uuid.UUID, historyID *uuid.UUID) (Operation, Entry, error) {
	if err := actor.RequireScope(ScopeExecute); err != nil {
		return Operation{}, Entry{}, err
	}
	orgID := actor.OrganizationID
	op, err := store.OperationByID(ctx, s.store.Pool, orgID, opID)
	if err != nil {
		return Operation{}, Entry{}, storeErr(err, "operation")
	}
	if op.Status == store.OperationExecuting || op.Status == store.OperationPaused {
		return Operation{}, Entry{}, domain.Conflict("an operation that is " + op.Status + " cannot be undone; cancel it or wait for it to end")
	}
	if s.runs == nil {
		return Operation{}, Entry{}, ErrWorkflowsUnavailable
	}
	var id uuid.UUID
	if historyID != nil {
		id = *historyID
	} else {
		e, err := store.LatestUndoable(ctx, s.store.Pool, orgID, opID)
		if errors.Is(err, store.ErrNotFound) {
			return Operation{}, Entry{}, domain.Conflict("the operation has no history entry left to undo")
		}
		if err != nil {
			return Operation{}, Entry{}, err
		}
		id = e.ID
	}
	e, err := store.BeginUndo(ctx, s.store.Pool, orgID, opID, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Operation{}, Entry{}, domain.InvalidField("historyId", "must name a history entry of this operation")
	case errors.Is(err, store.ErrConflict):
		return Operation{}, Entry{}, domain.Conflict("an " + e.Action + " entry cannot be undone")
	case errors.Is(err, store.ErrAlreadyUndone):
		return Operation{}, Entry{}, domain.Conflict("the history entry is already undone")
	case err != nil:
		return Operation{}, Entry{}, err
	}
	// A start whose outcome is unknown leaves undo_started_at for the
	// reconciler.
	if err := s.runs.Undo(ctx, UndoRun{OrganizationID: orgID, OperationID: opID, HistoryID: id, Actor: actor}); err != nil {
		return Operation{}, Entry{}, err
	}
	op, err = store.OperationByID(ctx, s.store.Pool, orgID, opID)
	return op, e, storeErr(err, "operation")
}

// UndoPlan is what an undo does.
type UndoPlan struct {
	// Executed: the operation executed, so effects are reversed.
	Executed bool `json:"executed"`
	// ItemIDs are the items whose effects are reversed (nil: all, for the
	// executed entry).
	ItemIDs []uuid.UUID `json:"itemIds"`
	Action  string      `json:"action"`
}

// PlanUndo reads the entry to undo.
func (s *Service) PlanUndo(ctx context.Context, orgID, opID, historyID uuid.UUID) (UndoPlan, error) {
	op, err := store.OperationByID(ctx, s.store.Pool, orgID, opID)
	if err != nil {
		return UndoPlan{}, storeErr(err, "operation")
	}
	e, err := store.HistoryByID(ctx, s.store.Pool, orgID, opID, historyID)
	if err != nil {
		return UndoPlan{}, storeErr(err, "history entry")
	}
	p := UndoPlan{Executed: op.ExecutedAt != nil, Action: e.Action}
	if e.Action != store.HistoryExecuted {
		p.ItemIDs = e.AffectedItemIDs
		if p.ItemIDs == nil {
			p.ItemIDs = []uuid.UUID{}
		}
	}
	return p, nil
}

// RefusedLabel is a label the carrier refused to void.
type RefusedLabel struct {
	ItemID     uuid.UUID `json:"itemId"`
	ShipmentID uuid.UUID `json:"shipmentId"`
	Reason     string    `json:"reason"`
}

// ReverseResult is what a reversal batch did.
type ReverseResult struct {
	LastSeq     int64          `json:"lastSeq"`
	Done        bool           `json:"done"`
	Voided      int            `json:"voided"`
	Cancelled   int            `json:"cancelled"`
	Refused     []RefusedLabel `json:"refused"`
	Unreachable []uuid.UUID    `json:"unreachable"`
}

// ReverseBatch reverses the execution's effects on up to limit items after
// afterSeq (among ids; nil: all): each label is voided and its shipment
// deleted (shipping.DeleteShipment: money-safe, safe to repeat), each
// dispatch not yet pushed cancelled; the item becomes skipped naming the
// undo. A label the carrier refuses to void stays with its item and is
// reported; a carrier that cannot be reached is an error (retried).
func (s *Service) ReverseBatch(ctx context.Context, actor domain.Actor, opID, historyID uuid.UUID, ids []uuid.UUID, afterSeq int64, limit int) (ReverseResult, error) {
	items, err := store.ItemsWithEffects(ctx, s.store.Pool, opID, ids, afterSeq, limit)
	if err != nil {
		return ReverseResult{}, err
	}
	res := ReverseResult{LastSeq: afterSeq, Done: len(items) < limit}
	msg := "undone by history entry " + historyID.String()
	for _, it := range items {
		res.LastSeq = it.Seq
		clearShip, clearDispatch := false, false
		if it.ShipmentID != nil {
			if s.labels == nil {
				return res, ErrWorkflowsUnavailable
			}
			err := s.labels.DeleteShipment(ctx, actor, *it.ShipmentID)
			switch k := domain.KindOf(err); {
			case err == nil:
				clearShip = true
				res.Voided++
			case k == domain.KindNotFound:
				clearShip = true
			case k == domain.KindUpstream || k == domain.KindConflict || k == domain.KindInvalid:
				res.Refused = append(res.Refused, RefusedLabel{ItemID: it.ID, ShipmentID: *it.ShipmentID, Reason: domain.TenantText(errText(err))})
			default:
				return res, err
			}
		}
		if it.DispatchAssignmentID != nil && s.dispatches != nil {
			pushed, err := s.dispatches.CancelAssignment(ctx, actor, *it.DispatchAssignmentID)
			if err != nil && domain.KindOf(err) != domain.KindNotFound {
				return res, err
			}
			clearDispatch = !pushed
			if !pushed {
				res.Cancelled++
			}
		}
		if err := store.ReverseItem(ctx, s.store.Pool, opID, it.ID, clearShip, clearDispatch, msg); err != nil {
			return res, err
		}
	}
	return res, nil
}

// RestoreEntry restores the items an entry changed to their previous state:
// items added are removed (skipped instead once the operation executed),
// items removed come back, updated items get their previous references
// (and status, unless the operation executed).
func (s *Service) RestoreEntry(ctx context.Context, orgID, opID, historyID uuid.UUID) error {
	err := pgx.BeginFunc(ctx, s.store.Pool, func(tx pgx.Tx) error {
		if _, err := store.LockOperation(ctx, tx, orgID, opID); err != nil {
			return err
		}
		e, err := store.HistoryByID(ctx, tx, orgID, opID, historyID)
		if err != nil || e.IsUndone {
			return err
		}
		op, err := store.OperationByID(ctx, tx, orgID, opID)
		if err != nil {
			return err
		}
		executed := op.ExecutedAt != nil
		var prev store.ItemsState
		_ = json.Unmarshal(e.PreviousState, &prev)
		switch e.Action {
		case store.HistoryItemsAdded:
			if !executed {
				_, err = store.DeleteItems(ctx, tx, opID, e.AffectedItemIDs)
			}
		case store.HistoryItemsRemoved:
			err = store.RestoreItems(ctx, tx, orgID, opID, prev.Items)
		case store.HistoryItemUpdated, store.HistoryActionApply:
			if executed {
				cur, err := store.ItemsByID(ctx, tx, opID, e.AffectedItemIDs, true)
				if err != nil {
					return err
				}
				status := map[uuid.UUID]string{}
				for _, it := range cur {
					status[it.ID] = it.Status
				}
				kept := prev.Items[:0]
				for _, it := range prev.Items {
					if st, ok := status[it.ID]; ok {
						it.Status = st
						kept = append(kept, it)
					}
				}
				prev.Items = kept
			}
			err = store.SetItemFields(ctx, tx, opID, prev.Items, nil)
		}
		if err != nil {
			return err
		}
		return store.TouchOperation(ctx, tx, opID)
	})
	return storeErr(err, "operation")
}

// FinishUndoInput is the end of an undo.
type FinishUndoInput struct {
	Actor       domain.Actor
	OperationID uuid.UUID
	HistoryID   uuid.UUID
	Voided      int
	Cancelled   int
	// Refused names the labels the carrier refused to void (at most a
	// few hundred); RefusedCount counts them all.
	Refused      []RefusedLabel
	RefusedCount int
}

// FinishUndo marks the entry undone and records the undone entry (what was
// reversed and what the carrier refused), once.
func (s *Service) FinishUndo(ctx context.Context, in FinishUndoInput) error {
	orgID := in.Actor.OrganizationID
	err := pgx.BeginFunc(ctx, s.store.Pool, func(tx pgx.Tx) error {
		e, err := store.HistoryByID(ctx, tx, orgID, in.OperationID, in.HistoryID)
		if err != nil || e.IsUndone {
			return err
		}
		if err := store.FinishUndo(ctx, tx, in.HistoryID); err != nil {
			return err
		}
		refused := in.Refused
		if refused == nil {
			refused = []RefusedLabel{}
		}
		prev, _ := json.Marshal(map[string]any{"historyId": in.HistoryID, "action": e.Action, "state": e.NewState})
		next, _ := json.Marshal(map[string]any{"historyId": in.HistoryID, "state": e.PreviousState, "labelsVoided": in.Voided,
			"dispatchesCancelled": in.Cancelled, "labelsRefused": max(in.RefusedCount, len(refused)), "refusedLabels": refused})
		return store.InsertHistory(ctx, tx, store.HistoryEntry{ID: uuid.NewSHA1(in.HistoryID, []byte("undone")), OrganizationID: orgID,
			OperationID: in.OperationID, Action: store.HistoryUndone, AffectedItemIDs: e.AffectedItemIDs, AffectedOrderIDs: e.AffectedOrderIDs,
			PreviousState: prev, NewState: next, IsUndoable: false, PerformedBy: performer(in.Actor)})
	})
	return storeErr(err, "operation")
}
