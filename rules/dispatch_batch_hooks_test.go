package rules

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// batchTestOrg makes an organization and returns it with a maker of its
// bridges (of a type).
func batchTestOrg(t *testing.T, s *store.Store) (store.Organization, func(typ string) uuid.UUID) {
	t.Helper()
	ctx := t.Context()
	u, err := store.CreateUser(ctx, s.Pool, store.User{ID: uuid.New(), Email: "d" + uuid.NewString()[:12] + "@example.com", PasswordHash: "x", FirstName: "D"})
	require.NoError(t, err)
	org, err := store.CreateOrganization(ctx, s, "Batch "+u.Email, u.ID)
	require.NoError(t, err)
	return org, func(typ string) uuid.UUID {
		id := uuid.New()
		_, err := s.Pool.Exec(ctx, `INSERT INTO bridges (id, organization_id, type, name) VALUES ($1, $2, $3, $4)`, id, org.ID, typ, typ+"-"+id.String()[:6])
		require.NoError(t, err)
		return id
	}
}

// OrdersCreated (a sync page's orders at once) assigns what OrderCreated
// assigns order by order: each order_created dispatcher's matches, none
// for a manual dispatcher or another bridge's orders, nothing twice when
// run again.
func TestOrdersCreatedDispatchesInBatch(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org, bridge := batchTestOrg(t, s)
	shop, other, hub, hub2 := bridge("storefront_a"), bridge("storefront_a"), bridge("shipping_hub_a"), bridge("shipping_hub_a")
	dispatcher := func(name string, to uuid.UUID, over float64, trigger string, priority ...int) uuid.UUID {
		d, err := store.CreateDispatcher(ctx, s, store.Dispatcher{ID: uuid.New(), OrganizationID: org.ID, Name: name, Priority: append(priority, 0)[0],
			SourceBridgeIDs: []uuid.UUID{shop}, DestinationBridgeID: to, DestinationConfig: json.RawMessage(`{}`),
			Conditions: json.RawMessage(fmt.Sprintf(`[{"field": "totals.total", "operator": "greater_than", "value": %v}]`, over)),
			MatchMode:  "all", TriggerOn: []string{trigger}, IsActive: true})
		require.NoError(t, err)
		return d.ID
	}
	over100 := dispatcher("Over 100", hub, 100, TriggerOrderCreated)
	// Higher priority, same destination: takes the orders over 200.
	top := dispatcher("Top", hub, 200, TriggerOrderCreated, 10)
	dispatcher("Over 300", hub2, 300, TriggerOrderCreated)
	dispatcher("Manual", hub2, 0, TriggerManual)
	order := func(b uuid.UUID, total float64) uuid.UUID {
		o, err := store.CreateOrder(ctx, s.Pool, store.Order{
			ID: uuid.New(), OrganizationID: org.ID, BridgeID: &b, ExternalID: uuid.NewString(), Status: "pending",
			PaymentStatus: "paid", FulfillmentStatus: "unfulfilled",
			Customer: json.RawMessage(`{"email":"a@example.com"}`), CustomerEmail: "a@example.com",
			LineItems: json.RawMessage(`[{"sku":"A","quantity":1,"totalPrice":1}]`),
			Totals:    json.RawMessage(fmt.Sprintf(`{"subtotal":%[1]v,"shipping":0,"tax":0,"discount":0,"total":%[1]v}`, total)), Total: total, Currency: "USD",
		})
		require.NoError(t, err)
		return o.ID
	}
	ids := []uuid.UUID{order(shop, 50), order(shop, 150), order(shop, 250), order(shop, 350), order(other, 500)}
	want := map[uuid.UUID][]uuid.UUID{hub: {ids[1], ids[2], ids[3]}, hub2: {ids[3]}}

	h := &Hooks{Store: s}
	got := func() map[uuid.UUID][]uuid.UUID {
		rows, err := s.Pool.Query(ctx, `SELECT destination_bridge_id, order_id FROM dispatch_assignments WHERE organization_id = $1`, org.ID)
		require.NoError(t, err)
		out := map[uuid.UUID][]uuid.UUID{}
		for rows.Next() {
			var d, o uuid.UUID
			require.NoError(t, rows.Scan(&d, &o))
			out[d] = append(out[d], o)
		}
		require.NoError(t, rows.Err())
		return out
	}
	require.NoError(t, h.OrdersCreated(ctx, org.ID, ids))
	g := got()
	require.Len(t, g, 2)
	require.ElementsMatch(t, want[hub], g[hub])
	require.ElementsMatch(t, want[hub2], g[hub2])
	by := func() map[uuid.UUID]uuid.UUID {
		rows, err := s.Pool.Query(ctx, `SELECT order_id, dispatcher_id FROM dispatch_assignments WHERE destination_bridge_id = $1`, hub)
		require.NoError(t, err)
		out := map[uuid.UUID]uuid.UUID{}
		for rows.Next() {
			var o, d uuid.UUID
			require.NoError(t, rows.Scan(&o, &d))
			out[o] = d
		}
		require.NoError(t, rows.Err())
		return out
	}
	wantBy := map[uuid.UUID]uuid.UUID{ids[1]: over100, ids[2]: top, ids[3]: top}
	require.Equal(t, wantBy, by())

	// Again (a retried page): nothing more.
	require.NoError(t, h.OrdersCreated(ctx, org.ID, ids))
	g = got()
	require.ElementsMatch(t, want[hub], g[hub])
	require.ElementsMatch(t, want[hub2], g[hub2])

	// Order by order, the same.
	_, err := s.Pool.Exec(ctx, `DELETE FROM dispatch_assignments WHERE organization_id = $1`, org.ID)
	require.NoError(t, err)
	for _, id := range ids {
		require.NoError(t, h.OrderCreated(ctx, org.ID, id))
	}
	g = got()
	require.ElementsMatch(t, want[hub], g[hub])
	require.ElementsMatch(t, want[hub2], g[hub2])
	require.Equal(t, wantBy, by())
}

// In a batch, an order a split rule applies to runs alone (its children
// are dispatched, not it), the others together; a dispatcher whose
// conditions read a JSON field (the orders read with only it) matches as
// on the whole order.
func TestOrdersCreatedSplitsAloneInBatch(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org, bridge := batchTestOrg(t, s)
	shop, splitShop, hub := bridge("storefront_a"), bridge("storefront_a"), bridge("shipping_hub_a")
	_, err := store.CreateDispatcher(ctx, s, store.Dispatcher{ID: uuid.New(), OrganizationID: org.ID, Name: "Over 1",
		SourceBridgeIDs: []uuid.UUID{shop, splitShop}, DestinationBridgeID: hub, DestinationConfig: json.RawMessage(`{}`),
		Conditions: json.RawMessage(`[{"field": "totals.total", "operator": "greater_than", "value": 0.5}]`),
		MatchMode:  "all", TriggerOn: []string{TriggerOrderCreated}, IsActive: true})
	require.NoError(t, err)
	gf := "vendor"
	_, err = store.CreateSplitRule(ctx, s, store.SplitRule{ID: uuid.New(), OrganizationID: org.ID, Name: "By vendor", Method: MethodFieldGroup,
		GroupField: &gf, BridgeID: &splitShop, IsActive: true})
	require.NoError(t, err)
	order := func(b uuid.UUID, items string, total float64) uuid.UUID {
		o, err := store.CreateOrder(ctx, s.Pool, store.Order{
			ID: uuid.New(), OrganizationID: org.ID, BridgeID: &b, ExternalID: uuid.NewString(), Status: "pending",
			PaymentStatus: "pending", FulfillmentStatus: "unfulfilled",
			Customer: json.RawMessage(`{"email":"a@example.com"}`), CustomerEmail: "a@example.com", LineItems: json.RawMessage(items),
			Totals: json.RawMessage(fmt.Sprintf(`{"subtotal":%[1]v,"shipping":0,"tax":0,"discount":0,"total":%[1]v}`, total)), Total: total, Currency: "USD",
		})
		require.NoError(t, err)
		return o.ID
	}
	two := `[{"sku":"A","vendor":"n","totalPrice":1},{"sku":"B","vendor":"s","totalPrice":2}]`
	one := `[{"sku":"A","vendor":"n","totalPrice":3}]`
	free := `[{"sku":"F","vendor":"n","totalPrice":0}]`
	plain, parent, whole := order(shop, two, 3), order(splitShop, two, 3), order(splitShop, one, 3)
	below, belowSplit := order(shop, free, 0), order(splitShop, free, 0)
	batch := []uuid.UUID{plain, below, parent, whole, belowSplit}

	h := &Hooks{Store: s}
	require.NoError(t, h.OrdersCreated(ctx, org.ID, batch))
	p, err := store.OrderByID(ctx, s.Pool, org.ID, parent)
	require.NoError(t, err)
	require.True(t, IsSplitParent(p.Metadata))
	var md struct {
		SplitInto []uuid.UUID `json:"splitInto"`
	}
	require.NoError(t, json.Unmarshal(p.Metadata, &md))
	require.Len(t, md.SplitInto, 2)
	assigned := func() []uuid.UUID {
		rows, err := s.Pool.Query(ctx, `SELECT order_id FROM dispatch_assignments WHERE organization_id = $1`, org.ID)
		require.NoError(t, err)
		ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		require.NoError(t, err)
		return ids
	}
	want := append([]uuid.UUID{plain, whole}, md.SplitInto...)
	require.ElementsMatch(t, want, assigned(), "the children, not the split parent; none with a total of 0")

	// A retried page: nothing more, nothing split again.
	require.NoError(t, h.OrdersCreated(ctx, org.ID, batch))
	require.ElementsMatch(t, want, assigned())
}
