package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// opTestOrders inserts n orders of the organization (one statement).
func opTestOrders(t testing.TB, s *store.Store, org uuid.UUID, n int) []uuid.UUID {
	t.Helper()
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = uuid.New()
	}
	_, err := s.Pool.Exec(context.Background(), `INSERT INTO orders (id, organization_id, external_id, status, customer, customer_email, line_items, totals, ordered_at)
SELECT x, $1, x::text, 'confirmed', '{}', 'c@example.com', '[]', '{}', now() FROM unnest($2::uuid[]) AS x`, org, ids)
	require.NoError(t, err)
	return ids
}

func opTestAdd(t testing.TB, s *store.Store, org, op uuid.UUID, orders []uuid.UUID) []store.OperationItem {
	t.Helper()
	var out []store.OperationItem
	require.NoError(t, pgx.BeginFunc(context.Background(), s.Pool, func(tx pgx.Tx) error {
		var err error
		out, err = store.AddItems(context.Background(), tx, org, op, orders)
		return err
	}))
	return out
}

func TestStoreOperationCountersStayExact(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org, other := bridgeTestOrg(t, s), bridgeTestOrg(t, s)
	op, err := store.CreateOperation(ctx, s.Pool, store.Operation{ID: uuid.New(), OrganizationID: org, Name: "Bulk"})
	require.NoError(t, err)
	require.Equal(t, "draft", op.Status)
	require.Equal(t, "USD", op.Currency)
	require.Zero(t, op.ItemCount)

	// Eight writers add overlapping batches at once: duplicates ignored,
	// counters exact.
	orders := opTestOrders(t, s, org, 400)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			lo := w * 40
			opTestAdd(t, s, org, op.ID, orders[lo:lo+80])
		}(w)
	}
	wg.Wait()
	got, err := store.OperationByID(ctx, s.Pool, org, op.ID)
	require.NoError(t, err)
	require.EqualValues(t, 360, got.ItemCount)
	require.EqualValues(t, 360, got.PendingCount)

	// Orders of another organization are never added.
	foreign := opTestOrders(t, s, other, 2)
	bad, err := store.ForeignOrders(ctx, s.Pool, org, append([]uuid.UUID{orders[0]}, foreign...))
	require.NoError(t, err)
	require.ElementsMatch(t, foreign, bad)
	require.Empty(t, opTestAdd(t, s, org, op.ID, foreign))

	// Claims by four batches at once never share an item.
	require.NoError(t, pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		_, err := store.SetOperationStatus(ctx, tx, org, op.ID, []string{"draft"}, "executing", nil)
		return err
	}))
	seen := make(chan uuid.UUID, 400)
	for b := 0; b < 4; b++ {
		wg.Add(1)
		go func(b int) {
			defer wg.Done()
			for n := 0; ; n++ {
				claimed, resumed, err := claimItems(context.Background(), s.Pool, op.ID, fmt.Sprintf("b%d-%d", b, n), 25)
				require.NoError(t, err)
				require.Empty(t, resumed)
				if len(claimed) == 0 {
					return
				}
				res := make([]store.ItemResult, len(claimed))
				for i, it := range claimed {
					seen <- it.ID
					cost := 2.5
					res[i] = store.ItemResult{ID: it.ID, Status: []string{"completed", "failed", "skipped"}[i%3], Cost: &cost}
				}
				settled, err := store.SettleItems(context.Background(), s.Pool, op.ID, res)
				require.NoError(t, err)
				require.EqualValues(t, len(res), settled)
			}
		}(b)
	}
	wg.Wait()
	close(seen)
	uniq := map[uuid.UUID]bool{}
	for id := range seen {
		require.False(t, uniq[id], "item claimed twice")
		uniq[id] = true
	}
	require.Len(t, uniq, 360)
	got, err = store.OperationByID(ctx, s.Pool, org, op.ID)
	require.NoError(t, err)
	require.EqualValues(t, 360, got.ItemCount)
	require.Zero(t, got.PendingCount)
	require.Zero(t, got.ProcessingCount)
	require.EqualValues(t, 360, got.CompletedCount+got.FailedCount+got.SkippedCount)
	require.InDelta(t, 900.0, got.TotalEstimatedCost, 0.001)

	// A settled item is not settled again (a batch run twice).
	settled, err := store.SettleItems(ctx, s.Pool, op.ID, []store.ItemResult{{ID: orders[0], Status: "failed"}})
	require.NoError(t, err)
	require.Zero(t, settled)
}

func TestStoreOperationClaimResumesItsOwnItems(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org := bridgeTestOrg(t, s)
	op, err := store.CreateOperation(ctx, s.Pool, store.Operation{ID: uuid.New(), OrganizationID: org, Name: "Resume"})
	require.NoError(t, err)
	opTestAdd(t, s, org, op.ID, opTestOrders(t, s, org, 10))

	// Not executing: nothing is claimed.
	claimed, _, err := claimItems(ctx, s.Pool, op.ID, "b0", 4)
	require.NoError(t, err)
	require.Empty(t, claimed)

	_, err = store.SetOperationStatus(ctx, s.Pool, org, op.ID, []string{"draft"}, "executing", nil)
	require.NoError(t, err)
	claimed, resumed, err := claimItems(ctx, s.Pool, op.ID, "b0", 4)
	require.NoError(t, err)
	require.Len(t, claimed, 4)
	require.Len(t, resumed, 0)
	// The batch settles one and dies; run again, it finds its three
	// unsettled items and claims nothing more.
	_, err = store.SettleItems(ctx, s.Pool, op.ID, []store.ItemResult{{ID: claimed[0].ID, Status: "completed"}})
	require.NoError(t, err)
	again, resumed, err := claimItems(ctx, s.Pool, op.ID, "b0", 4)
	require.NoError(t, err)
	require.Empty(t, again)
	require.Len(t, resumed, 3)
	require.Equal(t, claimed[1].ID, resumed[0].ID)

	// Paused: the next batch claims nothing.
	_, err = store.SetOperationStatus(ctx, s.Pool, org, op.ID, []string{"executing"}, "paused", nil)
	require.NoError(t, err)
	claimed, _, err = claimItems(ctx, s.Pool, op.ID, "b1", 4)
	require.NoError(t, err)
	require.Empty(t, claimed)
	skipped, err := store.SkipPendingItems(ctx, s.Pool, op.ID, "cancelled")
	require.NoError(t, err)
	require.EqualValues(t, 6, skipped)
	got, err := store.OperationByID(ctx, s.Pool, org, op.ID)
	require.NoError(t, err)
	require.EqualValues(t, 6, got.SkippedCount)
	require.EqualValues(t, 3, got.ProcessingCount)
	require.EqualValues(t, 1, got.CompletedCount)
}

// opTestRated is an organization with a rate snapshot and a draft
// operation of n new orders' items.
func opTestRated(t *testing.T, n int) (*store.Store, uuid.UUID, store.RateSnapshot, store.Operation, []store.OperationItem) {
	t.Helper()
	s := storetest.New(t)
	org := bridgeTestOrg(t, s)
	snap, err := store.CreateRateSnapshot(t.Context(), s.Pool, snapTestNew(org, snapTestAccount(t, s, org)))
	require.NoError(t, err)
	op, err := store.CreateOperation(t.Context(), s.Pool, store.Operation{ID: uuid.New(), OrganizationID: org, Name: "Items"})
	require.NoError(t, err)
	return s, org, snap, op, opTestAdd(t, s, org, op.ID, opTestOrders(t, s, org, n))
}

func TestStoreOperationItemsHistoryAndDelete(t *testing.T) {
	s, org, snap, op, items := opTestRated(t, 5)
	ctx := t.Context()
	require.Len(t, items, 5)

	// Assign the snapshot to two items: cost and the rated counter follow.
	f := []store.ItemFields{store.FieldsOf(items[0]), store.FieldsOf(items[1])}
	f[0].RateSnapshotID, f[1].RateSnapshotID = &snap.ID, &snap.ID
	require.NoError(t, store.SetItemFields(ctx, s.Pool, op.ID, f, []byte(`{"type":"assign-rate"}`)))
	got, err := store.OperationByID(ctx, s.Pool, org, op.ID)
	require.NoError(t, err)
	require.EqualValues(t, 2, got.RatedCount)
	require.InDelta(t, 24.68, got.TotalEstimatedCost, 0.001)

	yes := true
	list, total, err := listItems(ctx, s.Pool, org, op.ID, store.ItemFilter{HasRate: &yes, Limit: 50})
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Len(t, list, 2)
	require.NotNil(t, list[0].RateSnapshot)
	require.JSONEq(t, `[{"type":"assign-rate"}]`, string(list[0].AppliedActions))
	list, total, err = listItems(ctx, s.Pool, org, op.ID, store.ItemFilter{Status: "pending", Limit: 2, Offset: 2})
	require.NoError(t, err)
	require.Equal(t, 5, total)
	require.Len(t, list, 2)
	require.Equal(t, items[2].ID, list[0].ID)
	// Another organization sees nothing.
	list, _, err = listItems(ctx, s.Pool, bridgeTestOrg(t, s), op.ID, store.ItemFilter{Limit: 50})
	require.NoError(t, err)
	require.Empty(t, list)

	removed, err := store.DeleteItems(ctx, s.Pool, op.ID, []uuid.UUID{items[0].ID, items[3].ID})
	require.NoError(t, err)
	require.Len(t, removed, 2)
	got, err = store.OperationByID(ctx, s.Pool, org, op.ID)
	require.NoError(t, err)
	require.EqualValues(t, 3, got.ItemCount)
	require.EqualValues(t, 1, got.RatedCount)
	// Restored (an undone removal) under the same ids.
	var back []store.ItemFields
	for _, it := range removed {
		back = append(back, store.FieldsOf(it))
	}
	require.NoError(t, store.RestoreItems(ctx, s.Pool, org, op.ID, back))
	got, err = store.OperationByID(ctx, s.Pool, org, op.ID)
	require.NoError(t, err)
	require.EqualValues(t, 5, got.ItemCount)
	require.InDelta(t, 24.68, got.TotalEstimatedCost, 0.001)

	// History: newest first; undo begins once.
	h1, h2 := uuid.New(), uuid.New()
	require.NoError(t, store.InsertHistory(ctx, s.Pool, store.HistoryEntry{ID: h1, OrganizationID: org, OperationID: op.ID, Action: "items_added", IsUndoable: true}))
	require.NoError(t, store.InsertHistory(ctx, s.Pool, store.HistoryEntry{ID: h2, OrganizationID: org, OperationID: op.ID, Action: "action_applied", IsUndoable: true}))
	hist, err := store.ListHistory(ctx, s.Pool, org, op.ID, 50)
	require.NoError(t, err)
	require.Len(t, hist, 2)
	require.Equal(t, h2, hist[0].ID)
	latest, err := store.LatestUndoable(ctx, s.Pool, org, op.ID)
	require.NoError(t, err)
	require.Equal(t, h2, latest.ID)
	_, err = store.BeginUndo(ctx, s.Pool, org, op.ID, h2)
	require.NoError(t, err)
	_, err = store.BeginUndo(ctx, s.Pool, org, op.ID, h2)
	require.ErrorIs(t, err, store.ErrAlreadyUndone)
	_, err = store.BeginUndo(ctx, s.Pool, bridgeTestOrg(t, s), op.ID, h1)
	require.ErrorIs(t, err, store.ErrNotFound)

	// Only a draft is deleted; with it go its items, counters and history.
	_, err = store.SetOperationStatus(ctx, s.Pool, org, op.ID, []string{"draft"}, "pending", nil)
	require.NoError(t, err)
	require.ErrorIs(t, store.DeleteDraftOperation(ctx, s, org, op.ID), store.ErrConflict)
	_, err = store.SetOperationStatus(ctx, s.Pool, org, op.ID, []string{"pending"}, "draft", nil)
	require.NoError(t, err)
	require.ErrorIs(t, store.DeleteDraftOperation(ctx, s, bridgeTestOrg(t, s), op.ID), store.ErrNotFound)
	require.NoError(t, store.DeleteDraftOperation(ctx, s, org, op.ID))
	var left int
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM operation_items WHERE operation_id = $1) + (SELECT count(*) FROM operation_counts WHERE operation_id = $1)`, op.ID).Scan(&left))
	require.Zero(t, left)
}

// The items_added entry's state is built in SQL (addItemsRecordedSQL), the
// other item entries' by StateOf: over every status, each reference set or
// null, and one item or several (in order), both are the same jsonb.
func TestStoreItemsStateSQLIsStateOf(t *testing.T) {
	s := storetest.New(t)
	ref := func(set bool) *uuid.UUID {
		if !set {
			return nil
		}
		id := uuid.New()
		return &id
	}
	var all []store.ItemFields
	for _, st := range store.ItemStatuses {
		for mask := range 8 {
			all = append(all, store.ItemFields{ID: uuid.New(), OrderID: uuid.New(), Status: st,
				RateSnapshotID: ref(mask&1 != 0), OverrideCarrierAccountID: ref(mask&2 != 0), OverrideDispatchBridgeID: ref(mask&4 != 0)})
		}
	}
	q := `SELECT ` + store.ItemsStateSQL("i", "i.n") + ` = $7::jsonb, ` + store.ItemsStateSQL("i", "i.n") + `::text
  FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::uuid[], $5::uuid[], $6::uuid[])
       WITH ORDINALITY AS i(id, order_id, status, rate_snapshot_id, override_carrier_account_id, override_dispatch_bridge_id, n)`
	check := func(items []store.ItemFields) {
		t.Helper()
		var ids, orders []uuid.UUID
		var snaps, accts, bridges []*uuid.UUID
		var statuses []string
		for _, it := range items {
			ids, orders, statuses = append(ids, it.ID), append(orders, it.OrderID), append(statuses, it.Status)
			snaps, accts, bridges = append(snaps, it.RateSnapshotID), append(accts, it.OverrideCarrierAccountID), append(bridges, it.OverrideDispatchBridgeID)
		}
		want := store.StateOf(items)
		var same bool
		var got string
		require.NoError(t, s.Pool.QueryRow(t.Context(), q, ids, orders, statuses, snaps, accts, bridges, string(want)).Scan(&same, &got))
		require.True(t, same, "SQL %s\nGo  %s", got, want)
	}
	for _, it := range all {
		check([]store.ItemFields{it})
	}
	check(all)
}

func TestStoreOperationAddItemsRecorded(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org, other := bridgeTestOrg(t, s), bridgeTestOrg(t, s)
	op, err := store.CreateOperation(ctx, s.Pool, store.Operation{ID: uuid.New(), OrganizationID: org, Name: "Add"})
	require.NoError(t, err)
	orders := opTestOrders(t, s, org, 5)
	by := "api_key:bench"
	h1 := uuid.New()
	res, err := store.AddItemsRecorded(ctx, s.Pool, org, op.ID, orders[:3], h1, &by)
	require.NoError(t, err)
	require.Equal(t, "draft", res.Status)
	require.Empty(t, res.Foreign)
	require.Len(t, res.Added, 3)
	for i, it := range res.Added {
		require.Equal(t, orders[i], it.OrderID)
		require.Equal(t, "pending", it.Status)
		require.Equal(t, org, it.OrganizationID)
		if i > 0 {
			require.Greater(t, it.Seq, res.Added[i-1].Seq)
		}
	}
	entry, err := store.HistoryByID(ctx, s.Pool, org, op.ID, h1)
	require.NoError(t, err)
	require.Equal(t, "items_added", entry.Action)
	require.Equal(t, []uuid.UUID{res.Added[0].ID, res.Added[1].ID, res.Added[2].ID}, entry.AffectedItemIDs)
	require.Equal(t, orders[:3], entry.AffectedOrderIDs)
	require.JSONEq(t, `{"items": []}`, string(entry.PreviousState))
	require.JSONEq(t, string(store.StateOf(nil)), string(entry.PreviousState))
	var next struct{ Items []store.ItemFields }
	require.NoError(t, json.Unmarshal(entry.NewState, &next))
	require.Equal(t, []store.ItemFields{store.FieldsOf(res.Added[0]), store.FieldsOf(res.Added[1]), store.FieldsOf(res.Added[2])}, next.Items)
	require.JSONEq(t, string(store.StateOf(next.Items)), string(entry.NewState), "the SQL writes what StateOf writes")
	require.Equal(t, by, *entry.PerformedBy)
	require.True(t, entry.IsUndoable)
	got, err := store.OperationByID(ctx, s.Pool, org, op.ID)
	require.NoError(t, err)
	require.EqualValues(t, 3, got.ItemCount)
	require.True(t, got.UpdatedAt.After(op.UpdatedAt), "the operation was touched")

	// Duplicates are left out; nothing added records no entry.
	res, err = store.AddItemsRecorded(ctx, s.Pool, org, op.ID, orders[2:], uuid.New(), &by)
	require.NoError(t, err)
	require.Len(t, res.Added, 2)
	require.Equal(t, orders[3], res.Added[0].OrderID)
	h3 := uuid.New()
	res, err = store.AddItemsRecorded(ctx, s.Pool, org, op.ID, orders[:2], h3, &by)
	require.NoError(t, err)
	require.Empty(t, res.Added)
	_, err = store.HistoryByID(ctx, s.Pool, org, op.ID, h3)
	require.ErrorIs(t, err, store.ErrNotFound)

	// A foreign or unknown order: named, nothing written.
	foreign, unknown := opTestOrders(t, s, other, 1)[0], uuid.New()
	fresh := opTestOrders(t, s, org, 1)[0]
	h4 := uuid.New()
	res, err = store.AddItemsRecorded(ctx, s.Pool, org, op.ID, []uuid.UUID{fresh, foreign, unknown}, h4, &by)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{foreign, unknown}, res.Foreign)
	require.Empty(t, res.Added)
	_, err = store.HistoryByID(ctx, s.Pool, org, op.ID, h4)
	require.ErrorIs(t, err, store.ErrNotFound)
	got, err = store.OperationByID(ctx, s.Pool, org, op.ID)
	require.NoError(t, err)
	require.EqualValues(t, 5, got.ItemCount)

	// Not a draft: the status is told and nothing is written.
	_, err = store.SetOperationStatus(ctx, s.Pool, org, op.ID, []string{"draft"}, "pending", nil)
	require.NoError(t, err)
	res, err = store.AddItemsRecorded(ctx, s.Pool, org, op.ID, []uuid.UUID{fresh}, uuid.New(), &by)
	require.NoError(t, err)
	require.Equal(t, "pending", res.Status)
	require.Empty(t, res.Added)
	got, err = store.OperationByID(ctx, s.Pool, org, op.ID)
	require.NoError(t, err)
	require.EqualValues(t, 5, got.ItemCount)

	// Another organization's operation: not found.
	_, err = store.AddItemsRecorded(ctx, s.Pool, other, op.ID, []uuid.UUID{fresh}, uuid.New(), &by)
	require.ErrorIs(t, err, store.ErrNotFound)
}

// TestStoreOperationItemPages: every filter's pages are the matching items
// in order (operation_item_page walks the filter's index), with the total.
func TestStoreOperationItemPages(t *testing.T) {
	s, org, snap, op, items := opTestRated(t, 12)
	ctx := t.Context()
	// Items 0, 3, 6, 9 rated; items 0-5 failed, the rest pending.
	var f []store.ItemFields
	for i, it := range items {
		x := store.FieldsOf(it)
		if i%3 == 0 {
			x.RateSnapshotID = &snap.ID
		}
		if i < 6 {
			x.Status = "failed"
		}
		f = append(f, x)
	}
	require.NoError(t, store.SetItemFields(ctx, s.Pool, op.ID, f, nil))
	yes, no := true, false
	for _, c := range []struct {
		status string
		rated  *bool
	}{{"", nil}, {"failed", nil}, {"pending", nil}, {"", &yes}, {"", &no}, {"failed", &yes}, {"pending", &no}, {"skipped", &yes}} {
		var want []uuid.UUID
		for i, it := range items {
			if (c.status == "" || f[i].Status == c.status) && (c.rated == nil || (f[i].RateSnapshotID != nil) == *c.rated) {
				want = append(want, it.ID)
			}
		}
		var got []uuid.UUID
		for off := 0; off < len(items)+2; off += 2 {
			page, total, err := listItems(ctx, s.Pool, org, op.ID, store.ItemFilter{Status: c.status, HasRate: c.rated, Limit: 2, Offset: off})
			require.NoError(t, err)
			require.Equal(t, len(want), total, "%+v", c)
			for _, r := range page {
				got = append(got, r.ID)
				require.Equal(t, org, r.OrganizationID)
				require.Contains(t, string(r.Order), r.OrderID.String())
			}
		}
		require.Equal(t, want, got, "%+v", c)
	}
	_, _, _, err := store.ListOperationItems(ctx, s.Pool, bridgeTestOrg(t, s), op.ID, store.ItemFilter{Limit: 10})
	require.ErrorIs(t, err, store.ErrNotFound)
}

// claimItems is how a batch claims (ClaimHeld, then ClaimMoreItems up to
// limit): the items just claimed and those the claim already held in
// processing (resumed).
func claimItems(ctx context.Context, db store.DBTX, opID uuid.UUID, claim string, limit int) (claimed, resumed []store.OperationItem, err error) {
	resumed, held, err := store.ClaimHeld(ctx, db, opID, claim)
	if err != nil {
		return nil, nil, err
	}
	if n := limit - held; n > 0 {
		if claimed, err = store.ClaimMoreItems(ctx, db, opID, claim, n); err != nil {
			return nil, nil, err
		}
	}
	return claimed, resumed, nil
}

// listItems is ListOperationItems' page and total; nothing (and 0) when
// the operation is not the organization's.
func listItems(ctx context.Context, db store.DBTX, orgID, opID uuid.UUID, f store.ItemFilter) ([]store.ItemRow, int, error) {
	_, list, total, err := store.ListOperationItems(ctx, db, orgID, opID, f)
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, nil
	}
	return list, total, err
}
