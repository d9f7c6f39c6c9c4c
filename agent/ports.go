package agent

import (
	"context"
	"errors"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/insights"
	"github.com/fos-dev/fos/operations"
	"github.com/fos-dev/fos/routing"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/shipping"
	"github.com/fos-dev/fos/store"
)

// The domain operations the tools call, as small ports: the shipping
// domain's Service implements Shipping; Orders is implemented here over
// the store until the orders domain service lands (another area), and the
// operations, insights and routing tools are offered only when their port
// is wired (Ports.Operations, Ports.Performance, Ports.Dispatchers).

// Shipping is the part of shipping.Service the tools use.
type Shipping interface {
	ListShipments(ctx context.Context, actor domain.Actor, in shipping.ListShipmentsInput) (shipping.ShipmentPage, error)
	GetShipment(ctx context.Context, actor domain.Actor, id uuid.UUID, includeBridge, includeOrder bool) (shipping.ShipmentPage, error)
	RequestAction(ctx context.Context, actor domain.Actor, shipmentID uuid.UUID, in shipping.ActionInput) (shipping.RequestedAction, error)
	CreateShipment(ctx context.Context, actor domain.Actor, in shipping.CreateShipmentInput) (shipping.Shipment, error)
	QuoteOrder(ctx context.Context, actor domain.Actor, orderID uuid.UUID, opts shipping.RateOptions) (shipping.RateQuote, error)
}

// OrderQuery narrows list_orders.
type OrderQuery struct {
	Status string
	Search string
	Limit  int
}

// OrderUpdate is update_order's change; nil fields stay.
type OrderUpdate struct {
	Status *string
	Tags   []string
}

// Orders is what the tools need of the orders domain.
type Orders interface {
	ListOrders(ctx context.Context, actor domain.Actor, q OrderQuery) ([]rules.OrderJSON, int, error)
	// GetOrder finds an order by id or by order number.
	GetOrder(ctx context.Context, actor domain.Actor, ref string) (rules.OrderDetailJSON, error)
	AddOrderNote(ctx context.Context, actor domain.Actor, orderID uuid.UUID, note string) (map[string]any, error)
	UpdateOrder(ctx context.Context, actor domain.Actor, orderID uuid.UUID, u OrderUpdate) (rules.OrderDetailJSON, error)
	// OrderTotals are the orders' totals (the auto-approval's
	// max_order_value); an id of another organization is absent.
	OrderTotals(ctx context.Context, orgID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]float64, error)
}

// StoreOrders implements Orders over the store (the order rows and their
// activity history), as the order handlers do.
type StoreOrders struct {
	Store *store.Store
	// Hooks runs an order's events (order updated); nil: none.
	Hooks rules.OrderHooks
}

func orderActorOf(a domain.Actor) store.OrderActor {
	kind, id, name := a.Attribution()
	return store.OrderActor{Type: kind, ID: id, Name: name}
}

// ListOrders implements Orders.
func (o StoreOrders) ListOrders(ctx context.Context, actor domain.Actor, q OrderQuery) ([]rules.OrderJSON, int, error) {
	if err := actor.RequireScope("orders:read"); err != nil {
		return nil, 0, err
	}
	items, total, err := store.ListOrders(ctx, o.Store.Pool, actor.OrganizationID, store.OrderListParams{
		Filter: store.OrderFilter{Status: q.Status, Search: q.Search}, Desc: true, Limit: q.Limit,
	})
	if err != nil {
		return nil, 0, err
	}
	ids := make([]uuid.UUID, 0, len(items))
	for _, it := range items {
		ids = append(ids, it.ID)
	}
	out := make([]rules.OrderJSON, 0, len(items))
	for _, id := range ids {
		full, err := store.OrderByID(ctx, o.Store.Pool, actor.OrganizationID, id)
		if err != nil {
			continue
		}
		out = append(out, rules.OrderJSONOf(full))
	}
	return out, total, nil
}

// GetOrder implements Orders.
func (o StoreOrders) GetOrder(ctx context.Context, actor domain.Actor, ref string) (rules.OrderDetailJSON, error) {
	if err := actor.RequireScope("orders:read"); err != nil {
		return rules.OrderDetailJSON{}, err
	}
	id, err := o.resolve(ctx, actor.OrganizationID, ref)
	if err != nil {
		return rules.OrderDetailJSON{}, err
	}
	full, err := store.OrderByID(ctx, o.Store.Pool, actor.OrganizationID, id)
	if errors.Is(err, store.ErrNotFound) {
		return rules.OrderDetailJSON{}, domain.NotFound("order")
	}
	if err != nil {
		return rules.OrderDetailJSON{}, err
	}
	return rules.OrderDetailJSONOf(full), nil
}

// resolve finds an order by id or order number in the organization.
func (o StoreOrders) resolve(ctx context.Context, orgID uuid.UUID, ref string) (uuid.UUID, error) {
	ref = strings.TrimPrefix(strings.TrimSpace(ref), "#")
	if id, err := uuid.Parse(ref); err == nil {
		return id, nil
	}
	var id uuid.UUID
	err := o.Store.Pool.QueryRow(ctx, `SELECT id FROM orders WHERE organization_id = $1 AND (order_number = $2 OR order_number = '#' || $2 OR external_id = $2)
 ORDER BY created_at DESC LIMIT 1`, orgID, ref).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, domain.NotFound("order")
	}
	return id, err
}

// AddOrderNote implements Orders: a note activity attributed to the actor.
func (o StoreOrders) AddOrderNote(ctx context.Context, actor domain.Actor, orderID uuid.UUID, note string) (map[string]any, error) {
	if err := actor.RequireScope("orders:write"); err != nil {
		return nil, err
	}
	who := orderActorOf(actor)
	a, err := store.InsertOrderActivity(ctx, o.Store.Pool, store.OrderActivity{
		OrganizationID: actor.OrganizationID, OrderID: orderID, Type: store.ActivityNote, Description: note,
		ActorType: who.Type, ActorID: who.ID, ActorName: who.Name,
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, domain.NotFound("order")
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{"id": a.ID, "type": a.Type, "description": a.Description, "order_id": orderID, "created_at": a.CreatedAt}, nil
}

// UpdateOrder implements Orders.
func (o StoreOrders) UpdateOrder(ctx context.Context, actor domain.Actor, orderID uuid.UUID, u OrderUpdate) (rules.OrderDetailJSON, error) {
	if err := actor.RequireScope("orders:write"); err != nil {
		return rules.OrderDetailJSON{}, err
	}
	full, err := store.PatchOrder(ctx, o.Store, actor.OrganizationID, orderID, store.OrderPatch{Status: u.Status, Tags: u.Tags}, orderActorOf(actor))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return rules.OrderDetailJSON{}, domain.NotFound("order")
	case errors.Is(err, store.ErrOrderLineItemsLocked):
		return rules.OrderDetailJSON{}, domain.Conflict(err.Error())
	case err != nil:
		return rules.OrderDetailJSON{}, err
	}
	if o.Hooks != nil {
		rules.OrderEvent(ctx, o.Hooks, actor.OrganizationID, orderID, rules.TriggerOrderUpdated)
	}
	return rules.OrderDetailJSONOf(full), nil
}

// OrderTotals implements Orders.
func (o StoreOrders) OrderTotals(ctx context.Context, orgID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]float64, error) {
	rows, err := o.Store.Pool.Query(ctx, `SELECT id, total::float8 FROM orders WHERE organization_id = $1 AND id = ANY($2)`, orgID, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[uuid.UUID]float64, len(ids))
	for rows.Next() {
		var id uuid.UUID
		var total float64
		if err := rows.Scan(&id, &total); err != nil {
			return nil, err
		}
		out[id] = total
	}
	return out, rows.Err()
}

// Operations is the part of operations.Service the operations tools use.
type Operations interface {
	List(ctx context.Context, actor domain.Actor, in operations.ListInput) ([]operations.Operation, int, error)
	Get(ctx context.Context, actor domain.Actor, id uuid.UUID) (operations.Operation, error)
	Create(ctx context.Context, actor domain.Actor, in operations.CreateInput) (operations.Operation, error)
	AddItems(ctx context.Context, actor domain.Actor, opID uuid.UUID, orderIDs []uuid.UUID) ([]operations.Item, error)
	ApplyAction(ctx context.Context, actor domain.Actor, opID uuid.UUID, itemIDs []uuid.UUID, a operations.Action) (int, error)
	Execute(ctx context.Context, actor domain.Actor, id uuid.UUID) (operations.Operation, error)
	// ItemOrders are the orders of the operation's items (nil: all).
	ItemOrders(ctx context.Context, actor domain.Actor, opID uuid.UUID, itemIDs []uuid.UUID) ([]uuid.UUID, error)
}

// Performance is the part of insights.Service carrier_performance uses.
type Performance interface {
	CarrierPerformance(ctx context.Context, actor domain.Actor, days int) ([]insights.CarrierPerformance, error)
}

// Dispatchers is the part of routing.Service evaluate_dispatchers uses.
type Dispatchers interface {
	EvaluateDispatchers(ctx context.Context, actor domain.Actor, orderID uuid.UUID) ([]routing.Assignment, error)
}
