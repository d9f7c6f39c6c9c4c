package store_test

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

func webhookTestEvent(org, bridge uuid.UUID, key string) store.WebhookEvent {
	return store.WebhookEvent{ID: uuid.New(), OrganizationID: org, BridgeID: bridge, Topic: "orders/create",
		DedupeKey: key, Payload: json.RawMessage(`{"id": 1}`)}
}

func TestWebhookEventsInsertDedupeAndLifecycle(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	box := bridgeTestBox(t)
	org := bridgeTestOrg(t, s)
	b := bridgeTestCreate(t, s, box, org, platforms.TypeStorefrontA, "Shop", map[string]any{"shopDomain": "a.example.com", "accessToken": "t"})

	e := webhookTestEvent(org, b.ID, "event:1")
	id, inserted, err := store.InsertActiveBridgeWebhookEvent(ctx, s.Pool, e)
	require.NoError(t, err)
	require.True(t, inserted)
	require.Equal(t, e.ID, id)

	// Same key: the stored event, not a new one.
	again, inserted, err := store.InsertActiveBridgeWebhookEvent(ctx, s.Pool, webhookTestEvent(org, b.ID, "event:1"))
	require.NoError(t, err)
	require.False(t, inserted)
	require.Equal(t, id, again)

	// Another organization's id for the bridge: not found.
	_, _, err = store.InsertActiveBridgeWebhookEvent(ctx, s.Pool, webhookTestEvent(uuid.New(), b.ID, "event:2"))
	require.ErrorIs(t, err, store.ErrNotFound)
	// A paused bridge takes no events.
	paused := store.BridgePaused
	_, err = store.UpdateBridge(ctx, s.Pool, org, b.ID, store.BridgePatch{Status: &paused})
	require.NoError(t, err)
	_, _, err = store.InsertActiveBridgeWebhookEvent(ctx, s.Pool, webhookTestEvent(org, b.ID, "event:3"))
	require.ErrorIs(t, err, store.ErrNotFound)
	active := store.BridgeActive
	_, err = store.UpdateBridge(ctx, s.Pool, org, b.ID, store.BridgePatch{Status: &active})
	require.NoError(t, err)

	// Claim: each row once per lease, even for concurrent claimers.
	refs, err := store.ClaimWebhookEvents(ctx, s.Pool, 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, refs, 1)
	require.Equal(t, store.WebhookEventRef{ID: id, OrganizationID: org, BridgeID: b.ID, Topic: "orders/create"}, refs[0])
	refs, err = store.ClaimWebhookEvents(ctx, s.Pool, 10, time.Minute)
	require.NoError(t, err)
	require.Empty(t, refs)
	// A failed start puts it back.
	require.NoError(t, store.DelayWebhookEvents(ctx, s.Pool, []uuid.UUID{id}, 0))
	refs, err = store.ClaimWebhookEvents(ctx, s.Pool, 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, refs, 1)
	require.NoError(t, store.MarkWebhookEventsRelayed(ctx, s.Pool, []uuid.UUID{id}, time.Hour))
	ev, err := store.WebhookEventByID(ctx, s.Pool, org, id)
	require.NoError(t, err)
	require.NotNil(t, ev.RelayedAt)
	require.Equal(t, store.WebhookEventReceived, ev.Status)

	// Processing counts attempts; a processed event stays processed.
	ev, err = store.BeginWebhookEventProcessing(ctx, s.Pool, org, id)
	require.NoError(t, err)
	require.Equal(t, store.WebhookEventProcessing, ev.Status)
	require.Equal(t, 1, ev.Attempts)
	require.NoError(t, store.FinishWebhookEvent(ctx, s.Pool, org, id, store.WebhookEventProcessed, "", map[string]any{"orderIds": []string{"x"}}))
	ev, err = store.BeginWebhookEventProcessing(ctx, s.Pool, org, id)
	require.NoError(t, err)
	require.Equal(t, store.WebhookEventProcessed, ev.Status)
	require.Equal(t, 1, ev.Attempts)
	require.NotNil(t, ev.ProcessedAt)
	require.JSONEq(t, `{"orderIds": ["x"]}`, string(ev.Result))
	require.NoError(t, store.FinishWebhookEvent(ctx, s.Pool, org, id, store.WebhookEventFailed, "late", nil))
	ev, _ = store.WebhookEventByID(ctx, s.Pool, org, id)
	require.Equal(t, store.WebhookEventProcessed, ev.Status, "a processed event keeps its outcome")
	require.ErrorIs(t, store.FinishWebhookEvent(ctx, s.Pool, uuid.New(), id, store.WebhookEventFailed, "x", nil), store.ErrNotFound)

	// Deleting the bridge deletes its events.
	require.NoError(t, store.DeleteBridge(ctx, s.Pool, org, b.ID))
	_, err = store.WebhookEventByID(ctx, s.Pool, org, id)
	require.ErrorIs(t, err, store.ErrNotFound)
}

func TestWebhookEventsConcurrentSameKey(t *testing.T) {
	s := storetest.New(t)
	box := bridgeTestBox(t)
	org := bridgeTestOrg(t, s)
	b := bridgeTestCreate(t, s, box, org, platforms.TypeStorefrontA, "Shop", map[string]any{"shopDomain": "a.example.com", "accessToken": "t"})
	var wg sync.WaitGroup
	ids := make([]uuid.UUID, 20)
	errs := make([]error, 20)
	for i := range ids {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ids[i], _, errs[i] = store.InsertActiveBridgeWebhookEvent(t.Context(), s.Pool, webhookTestEvent(org, b.ID, "same"))
		}(i)
	}
	wg.Wait()
	for i := range ids {
		require.NoError(t, errs[i])
		require.Equal(t, ids[0], ids[i])
	}
	counts, err := store.WebhookEventCounts(t.Context(), s.Pool, b.ID)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"received": 1}, counts)
}

func TestUpsertPlatformOrder(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	box := bridgeTestBox(t)
	org := bridgeTestOrg(t, s)
	b := bridgeTestCreate(t, s, box, org, platforms.TypeStorefrontA, "Shop", map[string]any{"shopDomain": "a.example.com", "accessToken": "t"})
	o := platforms.Order{ExternalID: "4001", OrderNumber: "#1001", Status: "confirmed", PaymentStatus: "paid",
		Customer:  platforms.Customer{Email: "a@example.com", FirstName: "A", LastName: "B"},
		LineItems: []platforms.LineItem{{SKU: "X", Name: "X", Quantity: 1, UnitPrice: 5, TotalPrice: 5}},
		Totals:    platforms.Totals{Subtotal: 5, Total: 5}, Currency: "USD", OrderedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	u := store.OrderUpsert{OrganizationID: org, BridgeID: b.ID, NewOrderID: uuid.New(), Order: o,
		Activity: store.OrderSyncActivity{ID: uuid.New(), Description: "webhook", ActorType: "system", ActorName: "inbound webhook"}}

	out, err := store.UpsertPlatformOrder(ctx, s, u)
	require.NoError(t, err)
	require.True(t, out.Created)
	require.Equal(t, u.NewOrderID, out.OrderID)
	// The same activity again (a retried attempt): created as before, once.
	again, err := store.UpsertPlatformOrder(ctx, s, u)
	require.NoError(t, err)
	require.Equal(t, out, again)
	stored, err := store.OrderByID(ctx, s.Pool, org, out.OrderID)
	require.NoError(t, err)
	require.Equal(t, "confirmed", stored.Status)
	require.Equal(t, "A B", stored.CustomerName)

	// A later event updates the same order.
	u2 := u
	u2.NewOrderID = uuid.New()
	u2.Activity.ID = uuid.New()
	u2.Order.Status = "shipped"
	up, err := store.UpsertPlatformOrder(ctx, s, u2)
	require.NoError(t, err)
	require.False(t, up.Created)
	require.Equal(t, out.OrderID, up.OrderID)
	require.Equal(t, []string{"status"}, up.ChangedFields)
	var n int
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT count(*) FROM orders WHERE bridge_id = $1`, b.ID).Scan(&n))
	require.Equal(t, 1, n)
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT count(*) FROM order_activities WHERE order_id = $1 AND type = 'sync'`, out.OrderID).Scan(&n))
	require.Equal(t, 2, n)
}
