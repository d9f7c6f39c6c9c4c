package operations_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/operations"
	"github.com/fos-dev/fos/routing"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Run(m)) }

type noStarts struct{}

func (noStarts) StartAssignments(context.Context, uuid.UUID, []uuid.UUID) (int, error) { return 0, nil }

// An item's dispatch goes through the routing Service: its own assignment
// (also when its batch runs again) is answered and cancelled by its undo;
// an assignment of the order to the bridge that another dispatch made is
// not the item's (uuid.Nil), so its undo cannot cancel it; a pushed one is
// reported pushed; another organization's order is not found.
func TestRoutingDispatches(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	newOrder := func(org, bridge uuid.UUID) uuid.UUID {
		o, err := store.CreateOrder(ctx, s.Pool, store.Order{
			ID: uuid.New(), OrganizationID: org, BridgeID: &bridge, ExternalID: "ext-" + uuid.NewString()[:8], Status: "pending",
			PaymentStatus: "pending", FulfillmentStatus: "unfulfilled",
			Customer:      json.RawMessage(`{"email":"a@example.com","firstName":"Ann","lastName":"Lee"}`),
			CustomerEmail: "a@example.com", CustomerName: "Ann Lee",
			LineItems: json.RawMessage(`[{"sku":"S","name":"N","quantity":1,"unitPrice":1,"totalPrice":1,"requiresShipping":true,"taxable":true}]`),
			Totals:    json.RawMessage(`{"subtotal":1,"shipping":0,"tax":0,"discount":0,"total":1}`), Total: 1, Currency: "USD",
		})
		require.NoError(t, err)
		return o.ID
	}
	newOrg := func() (org, shop, hub uuid.UUID) {
		u, err := store.CreateUser(ctx, s.Pool, store.User{ID: uuid.New(), Email: "o" + uuid.NewString()[:12] + "@example.com", PasswordHash: "x", FirstName: "O"})
		require.NoError(t, err)
		o, err := store.CreateOrganization(ctx, s, "Ops "+u.Email, u.ID)
		require.NoError(t, err)
		shop, hub = uuid.New(), uuid.New()
		_, err = s.Pool.Exec(ctx, `INSERT INTO bridges (id, organization_id, type, name) VALUES ($1, $3, 'storefront_a', 'Shop'), ($2, $3, 'shipping_hub_a', 'Hub')`, shop, hub, o.ID)
		require.NoError(t, err)
		return o.ID, shop, hub
	}
	org, shop, hub := newOrg()
	other, otherShop, _ := newOrg()
	rt := routing.New(routing.Deps{Store: s, Starter: noStarts{}})
	d := operations.RoutingDispatches{Routing: rt}
	actor := domain.Actor{Kind: domain.ActorOperation, ID: uuid.New(), OrganizationID: org, Name: "operation",
		Scopes: []string{"operations:write"}, Scoped: true, OnBehalfOf: &domain.Actor{Kind: domain.ActorUser, ID: uuid.New(), OrganizationID: org}}

	order, item := newOrder(org, shop), uuid.New()
	aid, err := d.DispatchToBridge(ctx, actor, operations.DispatchInput{OrderID: order, BridgeID: hub, Key: item})
	require.NoError(t, err)
	require.NotEqual(t, uuid.Nil, aid)
	again, err := d.DispatchToBridge(ctx, actor, operations.DispatchInput{OrderID: order, BridgeID: hub, Key: item})
	require.NoError(t, err)
	require.Equal(t, aid, again, "the batch ran again: the same, own assignment")
	notMine, err := d.DispatchToBridge(ctx, actor, operations.DispatchInput{OrderID: order, BridgeID: hub, Key: uuid.New()})
	require.NoError(t, err)
	require.Equal(t, uuid.Nil, notMine, "another item's (or dispatcher's) assignment is not this item's")

	pushed, err := d.CancelAssignment(ctx, actor, aid)
	require.NoError(t, err)
	require.False(t, pushed)
	var status string
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT status FROM dispatch_assignments WHERE id = $1`, aid).Scan(&status))
	require.Equal(t, "skipped", status)

	order2 := newOrder(org, shop)
	aid2, err := d.DispatchToBridge(ctx, actor, operations.DispatchInput{OrderID: order2, BridgeID: hub, Key: uuid.New()})
	require.NoError(t, err)
	_, err = s.Pool.Exec(ctx, `UPDATE dispatch_assignments SET status = 'completed' WHERE id = $1`, aid2)
	require.NoError(t, err)
	pushed, err = d.CancelAssignment(ctx, actor, aid2)
	require.NoError(t, err)
	require.True(t, pushed, "an order already pushed cannot be taken back")

	_, err = d.DispatchToBridge(ctx, actor, operations.DispatchInput{OrderID: newOrder(other, otherShop), BridgeID: hub, Key: uuid.New()})
	require.Equal(t, domain.KindNotFound, domain.KindOf(err), "%v", err)
}
