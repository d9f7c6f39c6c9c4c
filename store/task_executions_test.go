package store_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

func batchTestOrder(ext string, updated time.Time) platforms.Order {
	return platforms.Order{
		ExternalID: ext, OrderNumber: "#" + ext, Status: platforms.StatusPending,
		PaymentStatus: platforms.PaymentPaid, FulfillmentStatus: platforms.FulfillmentUnfulfilled,
		Customer:  platforms.Customer{Email: ext + "@example.com", FirstName: "Ann", LastName: "Lee"},
		LineItems: []platforms.LineItem{{ExternalID: "l1", SKU: "MUG", Name: "Mug", Quantity: 1, UnitPrice: 5, TotalPrice: 5}},
		Totals:    platforms.Totals{Subtotal: 5, Total: 5}, Currency: "USD", Tags: []string{"a"},
		OrderedAt: updated.Add(-time.Hour), UpdatedAt: updated,
		SourceData: map[string]any{"id": ext},
	}
}

func TestUpsertOrderBatchCountsAndActivities(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	box := bridgeTestBox(t)
	org := bridgeTestOrg(t, s)
	b := bridgeTestCreate(t, s, box, org, platforms.TypeStorefrontA, "Shop", map[string]any{"shopDomain": "x.example.com", "accessToken": "t"})
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

	run := 0
	batch := func(orders ...platforms.Order) store.OrderBatchResult {
		run++
		r := run
		res, err := store.UpsertOrderBatch(ctx, s, store.OrderBatch{
			OrganizationID: org, BridgeID: b.ID, Orders: orders, BridgeName: "Shop", ActorName: "grab-orders",
			ActivityID: func(ext string) uuid.UUID { return uuid.NewSHA1(uuid.Nil, fmt.Appendf(nil, "%d/%s", r, ext)) },
			Metadata:   map[string]any{"taskExecutionId": "x"},
		})
		require.NoError(t, err)
		return res
	}

	a, bb, c := batchTestOrder("1", t0), batchTestOrder("2", t0), batchTestOrder("3", t0)
	bad := batchTestOrder("4", t0)
	bad.Status = "weird"
	res := batch(a, bb, c, bad, a) // a twice: counted once
	require.Equal(t, 3, res.Created)
	require.Equal(t, 0, res.Updated)
	require.Equal(t, 0, res.Unchanged)
	require.Equal(t, 1, res.Failed)
	require.Len(t, res.CreatedID, 3)
	require.Contains(t, res.Problems[0], "weird")

	// Same data again: nothing changes and no activity is recorded.
	res = batch(a, bb, c)
	require.Equal(t, store.OrderBatchResult{Fetched: 3, Unchanged: 3, CreatedID: []uuid.UUID{}}, res)

	// One order changes status and tags.
	c.Status = platforms.StatusShipped
	c.Tags = []string{"b"}
	res = batch(a, bb, c)
	require.Equal(t, 1, res.Updated)
	require.Equal(t, 2, res.Unchanged)

	var n int
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT count(*) FROM orders WHERE bridge_id = $1`, b.ID).Scan(&n))
	require.Equal(t, 3, n)
	var meta []byte
	var desc string
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT a.description, a.metadata FROM order_activities a JOIN orders o ON o.id = a.order_id
		WHERE o.external_id = '3' AND a.type = 'sync' ORDER BY a.created_at DESC LIMIT 1`).Scan(&desc, &meta))
	require.Equal(t, "Synced from Shop", desc)
	var m map[string]any
	require.NoError(t, json.Unmarshal(meta, &m))
	require.Equal(t, []any{"status", "tags"}, m["changedFields"])
	require.Equal(t, false, m["created"])
	require.Equal(t, "x", m["taskExecutionId"])
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT count(*) FROM order_activities a JOIN orders o ON o.id = a.order_id WHERE o.bridge_id = $1`, b.ID).Scan(&n))
	require.Equal(t, 4, n) // 3 imports + 1 update

	// A deleted bridge stores nothing.
	require.NoError(t, store.DeleteBridge(ctx, s.Pool, org, b.ID))
	_, err := store.UpsertOrderBatch(ctx, s, store.OrderBatch{OrganizationID: org, BridgeID: b.ID, Orders: []platforms.Order{a},
		ActivityID: func(string) uuid.UUID { return uuid.New() }})
	require.ErrorIs(t, err, store.ErrNotFound)
}

func TestSyncCursorResumesAndNeverMovesBack(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org := bridgeTestOrg(t, s)
	b := bridgeTestCreate(t, s, bridgeTestBox(t), org, platforms.TypeStorefrontA, "Shop", map[string]any{"shopDomain": "x.example.com", "accessToken": "t"})
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

	c, err := store.GetSyncCursor(ctx, s.Pool, org, b.ID, "grab-orders")
	require.NoError(t, err)
	require.Nil(t, c.Since)
	require.Nil(t, c.PageCursor)

	page := func(next string, hw time.Time, orders ...platforms.Order) {
		_, err := store.UpsertOrderBatch(ctx, s, store.OrderBatch{
			OrganizationID: org, BridgeID: b.ID, Orders: orders, ActivityID: func(string) uuid.UUID { return uuid.New() },
			Cursor: &store.SyncPageAdvance{OrganizationID: org, BridgeID: b.ID, Task: "grab-orders", RunSince: t0.Add(-time.Hour),
				Next: next, HighWater: hw, PageKey: "k-" + next},
		})
		require.NoError(t, err)
	}
	// Page 1 of a run: the paging is kept, since is not moved yet.
	page("p2", t0.Add(2*time.Minute), batchTestOrder("1", t0))
	c, err = store.GetSyncCursor(ctx, s.Pool, org, b.ID, "grab-orders")
	require.NoError(t, err)
	require.Nil(t, c.Since)
	require.Equal(t, "p2", *c.PageCursor)
	require.True(t, c.RunSince.Equal(t0.Add(-time.Hour)))
	var last store.SyncLastPage
	require.NoError(t, json.Unmarshal(c.LastPage, &last))
	require.Equal(t, "k-p2", last.Key)
	require.Equal(t, "p2", last.Next)
	var lastRes store.OrderBatchResult
	require.NoError(t, json.Unmarshal(last.Result, &lastRes))
	require.Equal(t, 1, lastRes.Created)

	// Another organization neither reads nor resets the bridge's cursor.
	other := bridgeTestOrg(t, s)
	c, err = store.GetSyncCursor(ctx, s.Pool, other, b.ID, "grab-orders")
	require.NoError(t, err)
	require.Nil(t, c.PageCursor)
	require.Nil(t, c.LastPage)
	require.NoError(t, store.ResetSyncPaging(ctx, s.Pool, other, b.ID, "grab-orders"))
	c, err = store.GetSyncCursor(ctx, s.Pool, org, b.ID, "grab-orders")
	require.NoError(t, err)
	require.Equal(t, "p2", *c.PageCursor, "untouched by another organization")

	// Last page with an older high-water: since is the run's newest.
	page("", t0.Add(time.Minute), batchTestOrder("2", t0))
	c, err = store.GetSyncCursor(ctx, s.Pool, org, b.ID, "grab-orders")
	require.NoError(t, err)
	require.True(t, c.Since.Equal(t0.Add(2*time.Minute)), "%v", c.Since)
	require.Nil(t, c.PageCursor)
	require.Nil(t, c.RunHighWater)

	// A later run that saw only older orders never moves since back.
	page("", t0)
	c, err = store.GetSyncCursor(ctx, s.Pool, org, b.ID, "grab-orders")
	require.NoError(t, err)
	require.True(t, c.Since.Equal(t0.Add(2*time.Minute)))
}

func TestTaskExecutionLifecycle(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org := bridgeTestOrg(t, s)
	other := bridgeTestOrg(t, s)
	b := bridgeTestCreate(t, s, bridgeTestBox(t), org, platforms.TypeStorefrontA, "Shop", map[string]any{"shopDomain": "x.example.com", "accessToken": "t"})

	id := uuid.New()
	_, err := store.CreateTaskExecution(ctx, s.Pool, store.TaskExecution{ID: id, OrganizationID: other, BridgeID: b.ID, TaskName: "grab-orders", WorkflowID: "w"})
	require.ErrorIs(t, err, store.ErrNotFound)
	e, err := store.CreateTaskExecution(ctx, s.Pool, store.TaskExecution{ID: id, OrganizationID: org, BridgeID: b.ID, TaskName: "grab-orders", WorkflowID: "bridge-task/" + id.String()})
	require.NoError(t, err)
	require.Equal(t, store.TaskQueued, e.Status)
	require.JSONEq(t, `{}`, string(e.Input))
	_, err = store.TaskExecutionByID(ctx, s.Pool, other, id)
	require.ErrorIs(t, err, store.ErrNotFound)
	// One run of a task per bridge at a time.
	_, err = store.CreateTaskExecution(ctx, s.Pool, store.TaskExecution{ID: uuid.New(), OrganizationID: org, BridgeID: b.ID, TaskName: "grab-orders", WorkflowID: "w3"})
	require.ErrorIs(t, err, store.ErrConflict)

	stale, err := store.StaleTaskExecutions(ctx, s.Pool, time.Now().Add(time.Minute), 10)
	require.NoError(t, err)
	require.Len(t, stale, 1)

	e, err = store.StartTaskExecution(ctx, s.Pool, org, id)
	require.NoError(t, err)
	require.Equal(t, store.TaskRunning, e.Status)
	require.NotNil(t, e.StartedAt)
	changed, err := store.FinishTaskExecution(ctx, s.Pool, org, id, map[string]int{"fetched": 2}, "")
	require.NoError(t, err)
	require.True(t, changed)
	changed, err = store.FinishTaskExecution(ctx, s.Pool, org, id, nil, "late failure")
	require.NoError(t, err)
	require.False(t, changed)
	_, err = store.StartTaskExecution(ctx, s.Pool, org, id)
	require.ErrorIs(t, err, store.ErrConflict)
	e, err = store.TaskExecutionByID(ctx, s.Pool, org, id)
	require.NoError(t, err)
	require.Equal(t, store.TaskCompleted, e.Status)
	require.JSONEq(t, `{"fetched": 2}`, string(e.Output))
	require.NotNil(t, e.FinishedAt)

	// A second one, newest first in the list.
	id2 := uuid.New()
	_, err = store.CreateTaskExecution(ctx, s.Pool, store.TaskExecution{ID: id2, OrganizationID: org, BridgeID: b.ID, TaskName: "warehouse-sync", WorkflowID: "w2"})
	require.NoError(t, err)
	list, total, err := store.ListTaskExecutions(ctx, s.Pool, org, b.ID, 1, 0)
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Equal(t, id2, list[0].ID)
}
