package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// Order writes keep the newest platform state: a copy fetched earlier
// (older platform updated_at) that commits after a newer one leaves the
// order as the newer one made it, through the page upsert and the single
// order resync alike.
func TestOrderWritesKeepTheNewestPlatformState(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org := bridgeTestOrg(t, s)
	b := bridgeTestCreate(t, s, bridgeTestBox(t), org, platforms.TypeStorefrontA, "Shop", map[string]any{"shopDomain": "x.example.com", "accessToken": "t"})
	t1 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	t2 := t1.Add(time.Minute)

	run := 0
	batch := func(orders ...platforms.Order) store.OrderBatchResult {
		run++
		r := run
		res, err := store.UpsertOrderBatch(ctx, s, store.OrderBatch{
			OrganizationID: org, BridgeID: b.ID, Orders: orders, BridgeName: "Shop", ActorName: "grab-orders",
			ActivityID: func(ext string) uuid.UUID { return uuid.NewSHA1(uuid.Nil, fmt.Appendf(nil, "stale/%d/%s", r, ext)) },
		})
		require.NoError(t, err)
		return res
	}
	state := func() (string, time.Time) {
		var status string
		var at time.Time
		require.NoError(t, s.Pool.QueryRow(ctx, `SELECT status, platform_updated_at FROM orders WHERE bridge_id = $1 AND external_id = '1'`, b.ID).Scan(&status, &at))
		return status, at
	}

	old := batchTestOrder("1", t1) // pending at t1
	newer := batchTestOrder("1", t2)
	newer.Status = platforms.StatusShipped
	require.Equal(t, 1, batch(old).Created)
	require.Equal(t, 1, batch(newer).Updated)

	// The older copy commits later: nothing changes.
	res := batch(old)
	require.Equal(t, 1, res.Unchanged)
	status, at := state()
	require.Equal(t, platforms.StatusShipped, status)
	require.True(t, at.Equal(t2))

	// The same through the resync of one order.
	var id uuid.UUID
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT id FROM orders WHERE bridge_id = $1 AND external_id = '1'`, b.ID).Scan(&id))
	out, err := store.ApplyOrderSync(ctx, s, store.OrderSyncUpdate{OrganizationID: org, OrderID: id, BridgeID: b.ID, Order: old,
		Activity: store.OrderSyncActivity{ID: uuid.New(), Description: "Synced", ActorType: "system", ActorName: "resync"}})
	require.NoError(t, err)
	require.True(t, out.Stale)
	require.Empty(t, out.ChangedFields)
	status, _ = state()
	require.Equal(t, platforms.StatusShipped, status)

	// A newer copy applies; so does one that names no updated_at.
	newest := batchTestOrder("1", t2.Add(time.Minute))
	newest.Status = platforms.StatusDelivered
	out, err = store.ApplyOrderSync(ctx, s, store.OrderSyncUpdate{OrganizationID: org, OrderID: id, BridgeID: b.ID, Order: newest,
		Activity: store.OrderSyncActivity{ID: uuid.New(), Description: "Synced", ActorType: "system", ActorName: "resync"}})
	require.NoError(t, err)
	require.False(t, out.Stale)
	require.Equal(t, []string{"status", "source_data"}[0], out.ChangedFields[0])
	status, at = state()
	require.Equal(t, platforms.StatusDelivered, status)
	require.True(t, at.Equal(t2.Add(time.Minute)))
	undated := batchTestOrder("1", time.Time{})
	undated.OrderedAt = t1
	undated.Status = platforms.StatusCancelled
	require.Equal(t, 1, batch(undated).Updated)
	status, at = state()
	require.Equal(t, platforms.StatusCancelled, status)
	require.True(t, at.Equal(t2.Add(time.Minute)), "an undated copy keeps the known platform time")
}
