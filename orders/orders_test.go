package orders_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/orders"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Run(m)) }

func org(t *testing.T, s *store.Store) uuid.UUID {
	t.Helper()
	u, err := store.CreateUser(t.Context(), s.Pool, store.User{ID: uuid.New(), Email: "o" + uuid.NewString()[:12] + "@example.com", PasswordHash: "x", FirstName: "O"})
	require.NoError(t, err)
	o, err := store.CreateOrganization(t.Context(), s, "Orders "+u.Email, u.ID)
	require.NoError(t, err)
	return o.ID
}

func bridge(t *testing.T, s *store.Store, orgID uuid.UUID) uuid.UUID {
	t.Helper()
	b, err := store.CreateBridge(t.Context(), s.Pool, store.Bridge{ID: uuid.New(), OrganizationID: orgID, Type: "shopify", Name: "Shop"})
	require.NoError(t, err)
	return b.ID
}

func newOrder(bridgeID uuid.UUID, ext string) orders.NewOrder {
	return orders.NewOrder{
		BridgeID: &bridgeID, ExternalID: ext, Status: "pending", PaymentStatus: "paid", FulfillmentStatus: "unfulfilled",
		Customer: json.RawMessage(`{"email":"c@example.com","firstName":null,"lastName":null,"phone":null}`), CustomerEmail: "c@example.com",
		LineItems: json.RawMessage(`[{"sku":"A","name":"A","quantity":1,"unitPrice":1,"totalPrice":1,"requiresShipping":true,"taxable":true}]`),
		Totals:    json.RawMessage(`{"subtotal":1,"shipping":0,"tax":0,"discount":0,"total":12.5}`), Total: 12.5, Currency: "USD",
	}
}

// hooks records the orders the Service ran order_created hooks for.
type hooks struct {
	mu      sync.Mutex
	created []uuid.UUID
}

func (h *hooks) OrderCreated(_ context.Context, _ uuid.UUID, id uuid.UUID) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.created = append(h.created, id)
	return nil
}

// The agent's tools and an operation change orders as the API does: the
// scopes bound them, the history names them, a duplicate external id names
// the order that holds it, another organization's order is not found.
func TestOrdersAsAgentAndOperation(t *testing.T) {
	s := storetest.New(t)
	h := &hooks{}
	svc := orders.New(orders.Deps{Store: s, Hooks: h})
	ctx := t.Context()
	orgID := org(t, s)
	b := bridge(t, s, orgID)
	agent := domain.Actor{Kind: domain.ActorAgent, ID: uuid.New(), Name: "Assistant", OrganizationID: orgID, Scoped: true, Scopes: []string{"orders:read", "orders:write"}}
	op := domain.Actor{Kind: domain.ActorOperation, ID: uuid.New(), Name: "Bulk hold", OrganizationID: orgID}

	o, err := svc.Create(ctx, op, newOrder(b, "ext-1"))
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{o.ID}, h.created)

	_, err = svc.Create(ctx, op, newOrder(b, "ext-1"))
	var de *domain.Error
	require.ErrorAs(t, err, &de)
	require.Equal(t, domain.KindConflict, de.Kind)
	require.Equal(t, []domain.FieldError{{Field: "external_id", Message: "already used by order " + o.ID.String()}}, de.Fields)

	_, err = svc.Create(ctx, op, newOrder(bridge(t, s, org(t, s)), "ext-2"))
	require.ErrorAs(t, err, &de)
	require.Equal(t, domain.KindInvalid, de.Kind)
	require.Equal(t, "bridge_id", de.Fields[0].Field)

	// Found by id, order number or external id.
	got, err := svc.Find(ctx, agent, "ext-1")
	require.NoError(t, err)
	require.Equal(t, o.ID, got.ID)
	page, err := svc.List(ctx, agent, orders.ListInput{Filter: orders.Filter{ExternalID: "ext-1"}, Limit: 10, IncludeBridges: true})
	require.NoError(t, err)
	require.Equal(t, 1, page.Total)
	require.Equal(t, "Shop", page.Bridges[b].Name)
	_, err = svc.List(ctx, agent, orders.ListInput{Filter: orders.Filter{Search: strings.Repeat("x", orders.MaxSearchLen+1)}})
	require.ErrorIs(t, err, domain.ErrInvalid)

	held := "on_hold"
	u, err := svc.Update(ctx, agent, o.ID, orders.Patch{Status: &held, Tags: []string{"vip"}})
	require.NoError(t, err)
	require.Equal(t, "on_hold", u.Status)

	_, err = svc.AddNote(ctx, agent, o.ID, "   ")
	require.ErrorAs(t, err, &de)
	require.Equal(t, []domain.FieldError{{Field: "note", Message: "is required"}}, de.Fields)
	note, err := svc.AddNote(ctx, op, o.ID, "  checked by the bulk run ")
	require.NoError(t, err)
	require.Equal(t, "checked by the bulk run", note.Description)

	acts, err := svc.Activities(ctx, agent, o.ID)
	require.NoError(t, err)
	byType := map[string]store.OrderActivity{}
	for _, a := range acts {
		byType[a.Type] = a
	}
	require.Equal(t, "agent", byType["status_change"].ActorType)
	require.Equal(t, "Assistant", *byType["status_change"].ActorName)
	require.Equal(t, "operation", byType["note"].ActorType)
	require.Equal(t, op.ID.String(), *byType["note"].ActorID)

	totals, err := svc.Totals(ctx, orgID, []uuid.UUID{o.ID, uuid.New()})
	require.NoError(t, err)
	require.Equal(t, map[uuid.UUID]float64{o.ID: 12.5}, totals)

	// A read-only caller cannot write; another organization sees nothing.
	reader := domain.Actor{Kind: domain.ActorAPIKey, OrganizationID: orgID, Scoped: true, Scopes: []string{"orders:read"}}
	_, err = svc.AddNote(ctx, reader, o.ID, "x")
	require.ErrorIs(t, err, domain.ErrForbidden)
	require.ErrorIs(t, svc.Delete(ctx, reader, o.ID), domain.ErrForbidden)
	other := domain.Actor{Kind: domain.ActorAgent, OrganizationID: org(t, s)}
	_, err = svc.Get(ctx, other, o.ID)
	require.ErrorIs(t, err, domain.ErrNotFound)
	_, err = svc.Find(ctx, other, "ext-1")
	require.ErrorIs(t, err, domain.ErrNotFound)
	_, err = svc.Update(ctx, other, o.ID, orders.Patch{Status: &held})
	require.ErrorIs(t, err, domain.ErrNotFound)
	totals, err = svc.Totals(ctx, other.OrganizationID, []uuid.UUID{o.ID})
	require.NoError(t, err)
	require.Empty(t, totals)

	// Resync: without a Temporal adapter, unavailable; without a bridge,
	// a conflict.
	_, err = svc.Resync(ctx, agent, o.ID)
	require.ErrorIs(t, err, domain.ErrUnavailable)
	require.NoError(t, svc.Delete(ctx, op, o.ID))
	_, err = svc.Resync(ctx, agent, o.ID)
	require.ErrorIs(t, err, domain.ErrNotFound)
}

// runs records the resyncs the Service starts.
type runs struct{ got []orders.ResyncRun }

func (r *runs) StartResync(_ context.Context, in orders.ResyncRun) (orders.RunRef, error) {
	r.got = append(r.got, in)
	return orders.RunRef{WorkflowID: "order-resync/" + in.OrderID.String(), RunID: "r1"}, nil
}

// A resync is started through the port with the actor who asked; an
// order whose bridge is gone cannot be resynced.
func TestResyncAsAgent(t *testing.T) {
	s := storetest.New(t)
	r := &runs{}
	svc := orders.New(orders.Deps{Store: s, Resyncs: r})
	ctx := t.Context()
	orgID := org(t, s)
	b := bridge(t, s, orgID)
	agent := domain.Actor{Kind: domain.ActorAgent, ID: uuid.New(), OrganizationID: orgID}
	o, err := svc.Create(ctx, agent, newOrder(b, "ext-r"))
	require.NoError(t, err)
	ref, err := svc.Resync(ctx, agent, o.ID)
	require.NoError(t, err)
	require.Equal(t, "order-resync/"+o.ID.String(), ref.WorkflowID)
	require.Len(t, r.got, 1)
	require.Equal(t, domain.ActorAgent, r.got[0].RequestedBy.Kind)

	_, err = s.Pool.Exec(ctx, `DELETE FROM bridges WHERE id = $1`, b)
	require.NoError(t, err)
	_, err = svc.Resync(ctx, agent, o.ID)
	require.ErrorIs(t, err, domain.ErrConflict)
}
