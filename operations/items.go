package operations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/store"
)

// Item is an item of an operation; ItemRow an item with its expansions.
type (
	Item    = store.OperationItem
	ItemRow = store.ItemRow
	Entry   = store.HistoryEntry
)

// checkIDs names the problem of a list of 1-500 ids and dedupes it.
func checkIDs(field string, ids []uuid.UUID) ([]uuid.UUID, error) {
	switch {
	case ids == nil:
		return nil, domain.InvalidField(field, "is required")
	case len(ids) == 0:
		return nil, domain.InvalidField(field, "must contain at least 1 id")
	case len(ids) > MaxIDs:
		return nil, domain.InvalidField(field, fmt.Sprintf("must contain at most %d ids", MaxIDs))
	}
	seen := make(map[uuid.UUID]bool, len(ids))
	out := make([]uuid.UUID, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out, nil
}

// inDraft runs fn in a transaction holding the draft operation locked:
// NotFound when it is not the organization's, Conflict unless draft.
func (s *Service) inDraft(ctx context.Context, orgID, opID uuid.UUID, fn func(tx pgx.Tx) error) error {
	err := pgx.BeginFunc(ctx, s.store.Pool, func(tx pgx.Tx) error {
		st, err := store.LockOperation(ctx, tx, orgID, opID)
		if err != nil {
			return err
		}
		if st != store.OperationDraft {
			return draftOnly(st)
		}
		if err := fn(tx); err != nil {
			return err
		}
		return store.TouchOperation(ctx, tx, opID)
	})
	return storeErr(err, "operation")
}

// draftOnly is the refusal of a change of items of an operation in status.
func draftOnly(status string) error {
	return domain.Conflict("the operation is " + status + "; its items change only while it is a draft")
}

func idsOf(items []store.ItemFields) (itemIDs, orderIDs []uuid.UUID) {
	for _, it := range items {
		itemIDs = append(itemIDs, it.ID)
		orderIDs = append(orderIDs, it.OrderID)
	}
	return itemIDs, orderIDs
}

func fieldsOf(items []Item) []store.ItemFields {
	out := make([]store.ItemFields, len(items))
	for i, it := range items {
		out[i] = store.FieldsOf(it)
	}
	return out
}

// record writes a history entry of changed items.
func record(ctx context.Context, tx pgx.Tx, actor domain.Actor, opID uuid.UUID, action string, prev, next []store.ItemFields) error {
	ref := next
	if ref == nil {
		ref = prev
	}
	itemIDs, orderIDs := idsOf(ref)
	return store.InsertHistory(ctx, tx, store.HistoryEntry{OrganizationID: actor.OrganizationID, OperationID: opID, Action: action,
		AffectedItemIDs: itemIDs, AffectedOrderIDs: orderIDs, PreviousState: store.StateOf(prev), NewState: store.StateOf(next),
		IsUndoable: true, PerformedBy: performer(actor)})
}

// AddItems adds an item per order (1-500 order ids; duplicates and orders
// already in the operation silently ignored; an order that is not the
// organization's is Invalid naming it). Draft only.
func (s *Service) AddItems(ctx context.Context, actor domain.Actor, opID uuid.UUID, orderIDs []uuid.UUID) ([]Item, error) {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return nil, err
	}
	orderIDs, err := checkIDs("orderIds", orderIDs)
	if err != nil {
		return nil, err
	}
	// One statement locks the draft, checks the orders, inserts, records
	// the history entry and touches the operation (store.AddItemsRecorded).
	res, err := store.AddItemsRecorded(ctx, s.store.Pool, actor.OrganizationID, opID, orderIDs, uuid.New(), performer(actor))
	switch {
	case err != nil:
		return nil, storeErr(err, "operation")
	case res.Status != store.OperationDraft:
		return nil, draftOnly(res.Status)
	case len(res.Foreign) > 0:
		names := make([]string, 0, min(len(res.Foreign), 20))
		for _, id := range res.Foreign[:min(len(res.Foreign), 20)] {
			names = append(names, id.String())
		}
		return nil, domain.InvalidField("orderIds", "holds orders that do not exist: "+strings.Join(names, ", "))
	}
	added := res.Added
	if added == nil {
		added = []Item{}
	}
	// Statistics after bulk adds (store.NoteBulkWrite), off the caller's
	// path: the item lists walk their index whatever the statistics say
	// (operation_item_page), so an add does not wait for an ANALYZE.
	go s.store.NoteBulkWrite(context.WithoutCancel(ctx), "operation_items", len(added))
	return added, nil
}

// ListItemsInput selects items.
type ListItemsInput struct {
	Status        string
	HasRate       *bool
	Limit, Offset int
}

// ListItems lists an operation's items with their expansions.
func (s *Service) ListItems(ctx context.Context, actor domain.Actor, opID uuid.UUID, in ListItemsInput) ([]ItemRow, int, error) {
	if err := actor.RequireScope(ScopeRead); err != nil {
		return nil, 0, err
	}
	if in.Status != "" && !slices.Contains(store.ItemStatuses, in.Status) {
		return nil, 0, domain.InvalidField("status", "must be one of "+strings.Join(store.ItemStatuses, ", "))
	}
	_, list, total, err := store.ListOperationItems(ctx, s.store.Pool, actor.OrganizationID, opID,
		store.ItemFilter{Status: in.Status, HasRate: in.HasRate, Limit: in.Limit, Offset: in.Offset})
	return list, total, storeErr(err, "operation")
}

// Ref is an optional reference of an item update: Set false leaves it,
// Set with a nil ID clears it.
type Ref struct {
	Set bool
	ID  *uuid.UUID
}

// UpdateItemInput is a change of an item.
type UpdateItemInput struct {
	RateSnapshotID           Ref
	OverrideCarrierAccountID Ref
	OverrideDispatchBridgeID Ref
	Status                   *string
}

// checkRef checks that a reference is the organization's: Invalid naming
// field otherwise.
func (s *Service) checkRef(ctx context.Context, db store.DBTX, orgID uuid.UUID, field string, id uuid.UUID) error {
	var err error
	switch field {
	case "rateSnapshotId":
		_, err = store.RateSnapshotByID(ctx, db, orgID, id)
	case "carrierAccountId", "overrideCarrierAccountId":
		_, err = store.CarrierAccountByID(ctx, db, orgID, id)
	case "bridgeId", "overrideDispatchBridgeId":
		_, err = store.BridgeByID(ctx, db, orgID, id)
	}
	if errors.Is(err, store.ErrNotFound) {
		return domain.InvalidField(field, "must name a resource of this organization")
	}
	return err
}

// UpdateItem changes an item's references or status (references checked
// in the organization; draft only).
func (s *Service) UpdateItem(ctx context.Context, actor domain.Actor, opID, itemID uuid.UUID, in UpdateItemInput) (Item, error) {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return Item{}, err
	}
	if in.Status != nil && !slices.Contains(store.ItemStatuses, *in.Status) {
		return Item{}, domain.InvalidField("status", "must be one of "+strings.Join(store.ItemStatuses, ", "))
	}
	orgID := actor.OrganizationID
	var out Item
	err := s.inDraft(ctx, orgID, opID, func(tx pgx.Tx) error {
		cur, err := store.ItemsByID(ctx, tx, opID, []uuid.UUID{itemID}, true)
		if err != nil {
			return err
		}
		if len(cur) == 0 {
			return domain.NotFound("operation item")
		}
		prev := store.FieldsOf(cur[0])
		next := prev
		for _, r := range []struct {
			field string
			ref   Ref
			dst   **uuid.UUID
		}{{"rateSnapshotId", in.RateSnapshotID, &next.RateSnapshotID}, {"overrideCarrierAccountId", in.OverrideCarrierAccountID, &next.OverrideCarrierAccountID},
			{"overrideDispatchBridgeId", in.OverrideDispatchBridgeID, &next.OverrideDispatchBridgeID}} {
			if !r.ref.Set {
				continue
			}
			if r.ref.ID != nil {
				if err := s.checkRef(ctx, tx, orgID, r.field, *r.ref.ID); err != nil {
					return err
				}
			}
			*r.dst = r.ref.ID
		}
		if in.Status != nil {
			next.Status = *in.Status
		}
		if err := store.SetItemFields(ctx, tx, opID, []store.ItemFields{next}, nil); err != nil {
			return err
		}
		if err := record(ctx, tx, actor, opID, store.HistoryItemUpdated, []store.ItemFields{prev}, []store.ItemFields{next}); err != nil {
			return err
		}
		out, err = store.ItemByID(ctx, tx, orgID, opID, itemID)
		return err
	})
	return out, err
}

// RemoveItems removes items (1-500 ids; unknown ids are ignored) and
// returns how many were removed. Draft only.
func (s *Service) RemoveItems(ctx context.Context, actor domain.Actor, opID uuid.UUID, itemIDs []uuid.UUID) (int, error) {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return 0, err
	}
	itemIDs, err := checkIDs("itemIds", itemIDs)
	if err != nil {
		return 0, err
	}
	var n int
	err = s.inDraft(ctx, actor.OrganizationID, opID, func(tx pgx.Tx) error {
		removed, err := store.DeleteItems(ctx, tx, opID, itemIDs)
		if err != nil || len(removed) == 0 {
			return err
		}
		n = len(removed)
		return record(ctx, tx, actor, opID, store.HistoryItemsRemoved, fieldsOf(removed), nil)
	})
	return n, err
}

// RemoveItem removes one item (NotFound when it is not the operation's).
func (s *Service) RemoveItem(ctx context.Context, actor domain.Actor, opID, itemID uuid.UUID) error {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return err
	}
	return s.inDraft(ctx, actor.OrganizationID, opID, func(tx pgx.Tx) error {
		removed, err := store.DeleteItems(ctx, tx, opID, []uuid.UUID{itemID})
		if err != nil {
			return err
		}
		if len(removed) == 0 {
			return domain.NotFound("operation item")
		}
		return record(ctx, tx, actor, opID, store.HistoryItemsRemoved, fieldsOf(removed), nil)
	})
}

// Action is an action to apply: a registered type and its config.
type Action struct {
	Type   string          `json:"type"`
	Config json.RawMessage `json:"config"`
}

// checkAction validates the action against its type's configSchema and
// returns the referenced id.
func checkAction(a Action) (Type, uuid.UUID, error) {
	if strings.TrimSpace(a.Type) == "" {
		return Type{}, uuid.Nil, domain.InvalidField("action.type", "is required")
	}
	t, ok := typeOf(a.Type)
	if !ok {
		names := make([]string, 0, len(types))
		for _, t := range types {
			names = append(names, t.ID)
		}
		return Type{}, uuid.Nil, domain.InvalidField("action.type", "must be a registered operation type: "+strings.Join(names, ", "))
	}
	var cfg map[string]any
	if len(a.Config) == 0 || json.Unmarshal(a.Config, &cfg) != nil || cfg == nil {
		return t, uuid.Nil, domain.InvalidField("action.config", "must be an object")
	}
	path := "action.config." + t.field
	raw, ok := cfg[t.field]
	if !ok || raw == nil {
		return t, uuid.Nil, domain.InvalidField(path, "is required")
	}
	str, ok := raw.(string)
	if !ok {
		return t, uuid.Nil, domain.InvalidField(path, "must be a string")
	}
	id, err := uuid.Parse(str)
	if err != nil {
		return t, uuid.Nil, domain.InvalidField(path, "must be a UUID")
	}
	return t, id, nil
}

// ApplyAction applies an action to items (1-500 ids, all of the
// operation: an unknown id is Invalid). The reference is checked in the
// organization. Draft only.
func (s *Service) ApplyAction(ctx context.Context, actor domain.Actor, opID uuid.UUID, itemIDs []uuid.UUID, a Action) (int, error) {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return 0, err
	}
	itemIDs, err := checkIDs("itemIds", itemIDs)
	if err != nil {
		return 0, err
	}
	t, ref, err := checkAction(a)
	if err != nil {
		return 0, err
	}
	orgID := actor.OrganizationID
	var n int
	err = s.inDraft(ctx, orgID, opID, func(tx pgx.Tx) error {
		if err := s.checkRef(ctx, tx, orgID, t.field, ref); err != nil {
			if de := (*domain.Error)(nil); errors.As(err, &de) && de.Kind == domain.KindInvalid {
				return domain.InvalidField("action.config."+t.field, "must name a resource of this organization")
			}
			return err
		}
		cur, err := store.ItemsByID(ctx, tx, opID, itemIDs, true)
		if err != nil {
			return err
		}
		if len(cur) != len(itemIDs) {
			return domain.InvalidField("itemIds", fmt.Sprintf("holds %d ids that are not items of this operation", len(itemIDs)-len(cur)))
		}
		prev := fieldsOf(cur)
		next := fieldsOf(cur)
		for i := range next {
			id := ref
			switch t.ID {
			case ActionAssignRate:
				next[i].RateSnapshotID = &id
			case ActionOverrideCarrier:
				next[i].OverrideCarrierAccountID = &id
			case ActionOverrideDispatcher:
				next[i].OverrideDispatchBridgeID = &id
			}
		}
		applied, _ := json.Marshal(map[string]any{"type": t.ID, "config": json.RawMessage(a.Config)})
		if err := store.SetItemFields(ctx, tx, opID, next, applied); err != nil {
			return err
		}
		n = len(next)
		return record(ctx, tx, actor, opID, store.HistoryActionApply, prev, next)
	})
	return n, err
}

// History is the operation's newest 50 entries, newest first.
func (s *Service) History(ctx context.Context, actor domain.Actor, opID uuid.UUID) ([]Entry, error) {
	if err := actor.RequireScope(ScopeRead); err != nil {
		return nil, err
	}
	if _, err := store.OperationByID(ctx, s.store.Pool, actor.OrganizationID, opID); err != nil {
		return nil, storeErr(err, "operation")
	}
	list, err := store.ListHistory(ctx, s.store.Pool, actor.OrganizationID, opID, HistoryLimit)
	return list, storeErr(err, "operation")
}

// ItemOrders are the order ids of the operation's items (itemIDs nil:
// every item; ids that are not items of the operation are left out), for
// callers that weigh what a change touches (the agent's auto-approval
// limits). NotFound when the operation is not the organization's.
func (s *Service) ItemOrders(ctx context.Context, actor domain.Actor, opID uuid.UUID, itemIDs []uuid.UUID) ([]uuid.UUID, error) {
	if err := actor.RequireScope(ScopeRead); err != nil {
		return nil, err
	}
	if _, err := store.OperationByID(ctx, s.store.Pool, actor.OrganizationID, opID); err != nil {
		return nil, storeErr(err, "operation")
	}
	rows, err := s.store.Pool.Query(ctx, `SELECT order_id FROM operation_items
 WHERE organization_id = $1 AND operation_id = $2 AND ($3::uuid[] IS NULL OR id = ANY($3)) ORDER BY seq`, actor.OrganizationID, opID, itemIDs)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	return ids, storeErr(err, "operation")
}
