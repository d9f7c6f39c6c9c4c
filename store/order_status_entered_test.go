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

// statusChange is a row of order_status_changes.
type statusChange struct {
	From, To               string
	FromEntered, ChangedAt time.Time
}

// statusEntered reads an order's status, status_entered_at, updated_at and
// its recorded status changes, oldest first.
func statusEntered(t *testing.T, s *store.Store, id uuid.UUID) (status string, entered, updated time.Time, changes []statusChange) {
	t.Helper()
	ctx := t.Context()
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT status, status_entered_at, updated_at FROM orders WHERE id = $1`, id).Scan(&status, &entered, &updated))
	rows, err := s.Pool.Query(ctx, `SELECT from_status, to_status, from_entered_at, changed_at FROM order_status_changes WHERE order_id = $1 ORDER BY id`, id)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var c statusChange
		require.NoError(t, rows.Scan(&c.From, &c.To, &c.FromEntered, &c.ChangedAt))
		changes = append(changes, c)
	}
	require.NoError(t, rows.Err())
	return status, entered, updated, changes
}

// Every write that changes an order's status moves status_entered_at to
// the write's time and records the change (from, to, when the order had
// entered from, when it left it); a write that keeps the status leaves
// both alone. The writers: the API's and the agent's edit (PatchOrder), the
// page upsert of a sync (UpsertOrderBatch), the resync of one order
// (ApplyOrderSync), the transformation write-back (RewriteOrders).
func TestOrderStatusEnteredOnEveryStatusWrite(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org := bridgeTestOrg(t, s)
	b := bridgeTestCreate(t, s, bridgeTestBox(t), org, platforms.TypeStorefrontA, "Shop", map[string]any{"shopDomain": "x.example.com", "accessToken": "t"})
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	run := 0
	batch := func(o platforms.Order) {
		run++
		r := run
		_, err := store.UpsertOrderBatch(ctx, s, store.OrderBatch{
			OrganizationID: org, BridgeID: b.ID, Orders: []platforms.Order{o}, BridgeName: "Shop", ActorName: "grab-orders",
			ActivityID: func(ext string) uuid.UUID { return uuid.NewSHA1(uuid.Nil, fmt.Appendf(nil, "entered/%d/%s", r, ext)) },
		})
		require.NoError(t, err)
	}

	// Created: in its status since its creation, no change recorded.
	o := batchTestOrder("1", t0)
	batch(o)
	var id uuid.UUID
	var created time.Time
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT id, created_at FROM orders WHERE bridge_id = $1 AND external_id = '1'`, b.ID).Scan(&id, &created))
	status, entered, _, changes := statusEntered(t, s, id)
	require.Equal(t, "pending", status)
	require.True(t, entered.Equal(created))
	require.Empty(t, changes)

	// want checks that the last write changed the status from→to at its
	// own time, after the order had been in from since since.
	want := func(n int, from, to string, since time.Time) time.Time {
		t.Helper()
		status, entered, updated, changes := statusEntered(t, s, id)
		require.Equal(t, to, status)
		require.True(t, entered.Equal(updated), "entered at the write's time")
		require.True(t, entered.After(since))
		require.Len(t, changes, n)
		last := changes[n-1]
		require.Equal(t, from, last.From)
		require.Equal(t, to, last.To)
		require.True(t, last.FromEntered.Equal(since))
		require.True(t, last.ChangedAt.Equal(entered))
		return entered
	}
	// unchanged checks that the last write kept the status and its time.
	unchanged := func(n int, since time.Time) {
		t.Helper()
		_, entered, updated, changes := statusEntered(t, s, id)
		require.True(t, entered.Equal(since))
		require.True(t, updated.After(since), "the write happened")
		require.Len(t, changes, n)
	}

	// The page upsert: a status change, then another field only.
	o.Status, o.UpdatedAt = platforms.StatusProcessing, t0.Add(time.Minute)
	batch(o)
	since := want(1, "pending", "processing", created)
	o.Tags, o.UpdatedAt = []string{"b"}, t0.Add(2*time.Minute)
	batch(o)
	unchanged(1, since)

	// The resync of one order.
	resync := func(o platforms.Order) {
		_, err := store.ApplyOrderSync(ctx, s, store.OrderSyncUpdate{OrganizationID: org, OrderID: id, BridgeID: b.ID, Order: o,
			Activity: store.OrderSyncActivity{ID: uuid.New(), Description: "Synced", ActorType: "system", ActorName: "resync"}})
		require.NoError(t, err)
	}
	o.Status, o.UpdatedAt = platforms.StatusShipped, t0.Add(3*time.Minute)
	resync(o)
	since = want(2, "processing", "shipped", since)
	o.Tags, o.UpdatedAt = []string{"c"}, t0.Add(4*time.Minute)
	resync(o)
	unchanged(2, since)

	// The API's (and the agent's) edit.
	actor := store.OrderActor{Type: store.ActorSystem}
	onHold, note := "on_hold", "n"
	_, err := store.PatchOrder(ctx, s, org, id, store.OrderPatch{Status: &onHold}, actor)
	require.NoError(t, err)
	since = want(3, "shipped", "on_hold", since)
	np := &note
	_, err = store.PatchOrder(ctx, s, org, id, store.OrderPatch{Status: &onHold, Note: &np}, actor)
	require.NoError(t, err)
	unchanged(3, since)

	// The transformation write-back.
	rewrite := func(status string) {
		cur, err := store.OrderByID(ctx, s.Pool, org, id)
		require.NoError(t, err)
		written, err := store.RewriteOrders(ctx, s.Pool, org, []store.OrderRewrite{{OrderID: id, ActivityID: uuid.New(), ReadAt: cur.UpdatedAt,
			Status: status, Metadata: json.RawMessage(`{}`), Tags: []string{"t", status}, Fields: []string{"status"}, Description: "d"}}, "t", nil)
		require.NoError(t, err)
		require.Len(t, written, 1)
	}
	rewrite("confirmed")
	since = want(4, "on_hold", "confirmed", since)
	rewrite("confirmed")
	unchanged(4, since)

	// A write that sets the time itself (a backdated import) keeps it.
	at := since.Add(time.Hour)
	_, err = s.Pool.Exec(ctx, `UPDATE orders SET status = 'processing', status_entered_at = $2 WHERE id = $1`, id, at)
	require.NoError(t, err)
	status, entered, _, changes = statusEntered(t, s, id)
	require.Equal(t, "processing", status)
	require.True(t, entered.Equal(at))
	last := changes[len(changes)-1]
	require.Len(t, changes, 5)
	require.Equal(t, []string{"confirmed", "processing"}, []string{last.From, last.To})
	require.True(t, last.FromEntered.Equal(since))
	require.True(t, last.ChangedAt.Equal(at))

	// The changes go with their order.
	_, err = s.Pool.Exec(ctx, `DELETE FROM orders WHERE id = $1`, id)
	require.NoError(t, err)
	var n int
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT count(*) FROM order_status_changes WHERE order_id = $1`, id).Scan(&n))
	require.Zero(t, n)
}
