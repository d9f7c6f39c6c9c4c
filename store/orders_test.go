package store_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// orderTestOrg creates an organization with one bridge.
func orderTestOrg(t *testing.T, s *store.Store) (orgID, bridgeID uuid.UUID) {
	t.Helper()
	ctx := t.Context()
	u, err := store.CreateUser(ctx, s.Pool, store.User{ID: uuid.New(), Email: "o" + uuid.NewString()[:12] + "@example.com", PasswordHash: "x", FirstName: "O"})
	require.NoError(t, err)
	org, err := store.CreateOrganization(ctx, s, "Orders "+u.Email, u.ID)
	require.NoError(t, err)
	bridgeID = uuid.New()
	_, err = s.Pool.Exec(ctx, `INSERT INTO bridges (id, organization_id, type, name) VALUES ($1, $2, 'storefront_a', 'Shop')`, bridgeID, org.ID)
	require.NoError(t, err)
	return org.ID, bridgeID
}

func orderTestNew(orgID, bridgeID uuid.UUID, ext string) store.Order {
	return store.Order{
		ID: uuid.New(), OrganizationID: orgID, BridgeID: &bridgeID, ExternalID: ext, Status: "pending",
		PaymentStatus: "pending", FulfillmentStatus: "unfulfilled",
		Customer:      json.RawMessage(`{"email":"a@example.com","firstName":"Ann","lastName":"Lee"}`),
		CustomerEmail: "a@example.com", CustomerName: "Ann Lee",
		LineItems: json.RawMessage(`[{"sku":"S","name":"N","quantity":1,"unitPrice":1,"totalPrice":1,"requiresShipping":true,"taxable":true}]`),
		Totals:    json.RawMessage(`{"subtotal":1,"shipping":0,"tax":0,"discount":0,"total":1}`), Total: 1, Currency: "USD",
	}
}

func TestStoreCreateOrder(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	orgID, bridgeID := orderTestOrg(t, s)

	o, err := store.CreateOrder(ctx, s.Pool, orderTestNew(orgID, bridgeID, "1"))
	require.NoError(t, err)
	require.False(t, o.CreatedAt.IsZero())
	require.WithinDuration(t, time.Now(), o.OrderedAt, time.Minute, "ordered_at defaults to now")
	require.Equal(t, []string{}, o.Tags)
	got, err := store.OrderByID(ctx, s.Pool, orgID, o.ID)
	require.NoError(t, err)
	require.Equal(t, o.CreatedAt, got.CreatedAt)
	require.Equal(t, o.OrderedAt, got.OrderedAt)
	require.JSONEq(t, `{}`, string(got.Metadata))
	require.Nil(t, got.ShippingAddress, "SQL NULL, not JSON null")
	require.Nil(t, got.SourceData)

	_, err = store.CreateOrder(ctx, s.Pool, orderTestNew(orgID, bridgeID, "1"))
	require.ErrorIs(t, err, store.ErrConflict)

	// A bridge of another organization, or none at all.
	otherOrg, otherBridge := orderTestOrg(t, s)
	_, err = store.CreateOrder(ctx, s.Pool, orderTestNew(orgID, otherBridge, "2"))
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = store.CreateOrder(ctx, s.Pool, orderTestNew(orgID, uuid.New(), "2"))
	require.ErrorIs(t, err, store.ErrNotFound)

	// Scoped reads and deletes.
	_, err = store.OrderByID(ctx, s.Pool, otherOrg, o.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.ErrorIs(t, store.DeleteOrder(ctx, s.Pool, otherOrg, o.ID), store.ErrNotFound)
	require.NoError(t, store.DeleteOrder(ctx, s.Pool, orgID, o.ID))
	require.ErrorIs(t, store.DeleteOrder(ctx, s.Pool, orgID, o.ID), store.ErrNotFound)
}

func TestStoreOrderActivities(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	orgID, bridgeID := orderTestOrg(t, s)
	o, err := store.CreateOrder(ctx, s.Pool, orderTestNew(orgID, bridgeID, "A"))
	require.NoError(t, err)

	// Defaults: id, system actor, empty metadata, the database clock.
	a, err := store.InsertOrderActivity(ctx, s.Pool, store.OrderActivity{OrganizationID: orgID, OrderID: o.ID, Type: "sync", Description: "synced"})
	require.NoError(t, err)
	require.NotEqual(t, uuid.Nil, a.ID)
	require.Equal(t, store.ActorSystem, a.ActorType)
	require.Nil(t, a.ActorID)
	require.Equal(t, map[string]any{}, a.Metadata)
	require.False(t, a.CreatedAt.IsZero())

	name, id := "Key", uuid.NewString()
	b, err := store.InsertOrderActivity(ctx, s.Pool, store.OrderActivity{
		OrganizationID: orgID, OrderID: o.ID, Type: store.ActivityNote, Description: "hi",
		ActorType: store.ActorAPIKey, ActorID: &id, ActorName: &name, Metadata: map[string]any{"n": 1},
	})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"n": 1.0}, b.Metadata)

	list, err := store.OrderActivities(ctx, s.Pool, orgID, o.ID)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, a.ID, list[0].ID)
	require.Equal(t, b.ID, list[1].ID)
	require.Equal(t, &name, list[1].ActorName)

	// Another organization cannot read or write this history.
	otherOrg, _ := orderTestOrg(t, s)
	_, err = store.InsertOrderActivity(ctx, s.Pool, store.OrderActivity{OrganizationID: otherOrg, OrderID: o.ID, Type: "note", Description: "x"})
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = store.OrderActivities(ctx, s.Pool, otherOrg, o.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	empty, err := store.CreateOrder(ctx, s.Pool, orderTestNew(orgID, bridgeID, "B"))
	require.NoError(t, err)
	none, err := store.OrderActivities(ctx, s.Pool, orgID, empty.ID)
	require.NoError(t, err)
	require.Empty(t, none)
}

func TestStoreListOrders(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	orgID, bridgeID := orderTestOrg(t, s)
	for i := range 7 {
		o := orderTestNew(orgID, bridgeID, fmt.Sprint(i))
		num := fmt.Sprintf("N%d", i)
		if i == 3 {
			num = "100%_sure"
		}
		o.OrderNumber = &num
		o.Total = float64(i)
		_, err := store.CreateOrder(ctx, s.Pool, o)
		require.NoError(t, err)
	}
	list := func(p store.OrderListParams) ([]string, int) {
		t.Helper()
		items, total, err := store.ListOrders(ctx, s.Pool, orgID, p)
		require.NoError(t, err)
		var exts []string
		for _, it := range items {
			exts = append(exts, it.ExternalID)
		}
		return exts, total
	}
	exts, total := list(store.OrderListParams{Limit: 3, Desc: true})
	require.Equal(t, []string{"6", "5", "4"}, exts)
	require.Equal(t, 7, total, "a full page counts")
	exts, total = list(store.OrderListParams{Limit: 3, Offset: 6, Desc: true})
	require.Equal(t, []string{"0"}, exts)
	require.Equal(t, 7, total, "a partial page tells the total")
	exts, total = list(store.OrderListParams{Limit: 3, Offset: 30})
	require.Empty(t, exts)
	require.Equal(t, 7, total, "past the end counts")
	exts, _ = list(store.OrderListParams{Limit: 3, Sort: "total"})
	require.Equal(t, []string{"0", "1", "2"}, exts)
	exts, _ = list(store.OrderListParams{Limit: 3, Sort: "id; DROP TABLE orders", Desc: true})
	require.Equal(t, []string{"6", "5", "4"}, exts, "an unknown sort is created_at")
	exts, total = list(store.OrderListParams{Limit: 10, Filter: store.OrderFilter{Search: "%_"}})
	require.Equal(t, []string{"3"}, exts, "LIKE wildcards are literal")
	require.Equal(t, 1, total)
	exts, _ = list(store.OrderListParams{Limit: 10, Filter: store.OrderFilter{Search: "ANN LEE"}})
	require.Len(t, exts, 7)
	otherOrg, _ := orderTestOrg(t, s)
	items, total, err := store.ListOrders(ctx, s.Pool, otherOrg, store.OrderListParams{Limit: 10})
	require.NoError(t, err)
	require.Empty(t, items)
	require.Zero(t, total)
}

func TestStorePatchOrder(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	orgID, bridgeID := orderTestOrg(t, s)
	in := orderTestNew(orgID, bridgeID, "P")
	in.Metadata = json.RawMessage(`{"keep":1,"drop":2,"over":3}`)
	o, err := store.CreateOrder(ctx, s.Pool, in)
	require.NoError(t, err)
	uid, uname := uuid.NewString(), "Ada"
	actor := store.OrderActor{Type: store.ActorUser, ID: &uid, Name: &uname}

	// Metadata is merged; null removes a key.
	out, err := store.PatchOrder(ctx, s, orgID, o.ID, store.OrderPatch{Metadata: map[string]any{"drop": nil, "over": "x", "new": true}}, actor)
	require.NoError(t, err)
	require.JSONEq(t, `{"keep":1,"over":"x","new":true}`, string(out.Metadata))

	// Nothing changed: nothing written.
	same := "pending"
	out2, err := store.PatchOrder(ctx, s, orgID, o.ID, store.OrderPatch{Status: &same, Metadata: map[string]any{"keep": 1}, LineItems: in.LineItems}, actor)
	require.NoError(t, err)
	require.Equal(t, out.UpdatedAt, out2.UpdatedAt)
	acts, err := store.OrderActivities(ctx, s.Pool, orgID, o.ID)
	require.NoError(t, err)
	require.Len(t, acts, 1)
	require.Equal(t, store.ActivityEdit, acts[0].Type)
	require.Equal(t, []any{"metadata"}, acts[0].Metadata["fields"])
	require.Equal(t, &uname, acts[0].ActorName)

	// Line items are locked once shipped; the refusal changes nothing.
	shipped := "shipped"
	_, err = store.PatchOrder(ctx, s, orgID, o.ID, store.OrderPatch{Status: &shipped}, actor)
	require.NoError(t, err)
	back := "processing"
	_, err = store.PatchOrder(ctx, s, orgID, o.ID, store.OrderPatch{Status: &back, LineItems: json.RawMessage(`[{"sku":"X"}]`)}, actor)
	require.ErrorIs(t, err, store.ErrOrderLineItemsLocked)
	cur, err := store.OrderByID(ctx, s.Pool, orgID, o.ID)
	require.NoError(t, err)
	require.Equal(t, "shipped", cur.Status)

	// Another organization's order.
	otherOrg, _ := orderTestOrg(t, s)
	_, err = store.PatchOrder(ctx, s, otherOrg, o.ID, store.OrderPatch{Status: &back}, actor)
	require.ErrorIs(t, err, store.ErrNotFound)
}

// Concurrent status changes serialize on the row lock: every activity's
// "from" is the previous activity's "to".
func TestStorePatchOrderConcurrentStatusChain(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	orgID, bridgeID := orderTestOrg(t, s)
	o, err := store.CreateOrder(ctx, s.Pool, orderTestNew(orgID, bridgeID, "C"))
	require.NoError(t, err)
	statuses := []string{"confirmed", "processing", "shipped", "delivered", "on_hold", "cancelled", "refunded", "pending"}
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := statuses[i%len(statuses)]
			if _, err := store.PatchOrder(ctx, s, orgID, o.ID, store.OrderPatch{Status: &st}, store.OrderActor{Type: store.ActorSystem}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	acts, err := store.OrderActivities(ctx, s.Pool, orgID, o.ID)
	require.NoError(t, err)
	require.NotEmpty(t, acts)
	prev := "pending"
	for _, a := range acts {
		require.Equal(t, store.ActivityStatusChange, a.Type)
		require.Equal(t, prev, a.Metadata["from"])
		require.NotEqual(t, a.Metadata["from"], a.Metadata["to"])
		prev = a.Metadata["to"].(string)
	}
	cur, err := store.OrderByID(ctx, s.Pool, orgID, o.ID)
	require.NoError(t, err)
	require.Equal(t, prev, cur.Status)
}
