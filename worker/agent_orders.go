package worker

import (
	"context"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/agent"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/orders"
	"github.com/fos-dev/fos/rules"
)

// AgentOrders adapts the orders domain's Service to the agent's Orders
// port: the agent's order tools call the same operations as the order
// endpoints (scopes, validation, history attribution, hooks).
type AgentOrders struct{ Orders *orders.Service }

var _ agent.Orders = AgentOrders{}

// ListOrders implements agent.Orders: the newest orders, each in full.
func (a AgentOrders) ListOrders(ctx context.Context, actor domain.Actor, q agent.OrderQuery) ([]rules.OrderJSON, int, error) {
	page, err := a.Orders.List(ctx, actor, orders.ListInput{
		Filter: orders.Filter{Status: q.Status, Search: q.Search}, Desc: true, Limit: q.Limit,
	})
	if err != nil {
		return nil, 0, err
	}
	out := make([]rules.OrderJSON, 0, len(page.Items))
	for _, it := range page.Items {
		o, err := a.Orders.Get(ctx, actor, it.ID)
		if err != nil {
			continue // deleted meanwhile
		}
		out = append(out, rules.OrderJSONOf(o))
	}
	return out, page.Total, nil
}

// GetOrder implements agent.Orders (by id, order number or external id).
func (a AgentOrders) GetOrder(ctx context.Context, actor domain.Actor, ref string) (rules.OrderDetailJSON, error) {
	o, err := a.Orders.Find(ctx, actor, ref)
	if err != nil {
		return rules.OrderDetailJSON{}, err
	}
	return rules.OrderDetailJSONOf(o), nil
}

// AddOrderNote implements agent.Orders.
func (a AgentOrders) AddOrderNote(ctx context.Context, actor domain.Actor, orderID uuid.UUID, note string) (map[string]any, error) {
	act, err := a.Orders.AddNote(ctx, actor, orderID, note)
	if err != nil {
		return nil, err
	}
	return map[string]any{"id": act.ID, "type": act.Type, "description": act.Description, "order_id": orderID, "created_at": act.CreatedAt}, nil
}

// UpdateOrder implements agent.Orders.
func (a AgentOrders) UpdateOrder(ctx context.Context, actor domain.Actor, orderID uuid.UUID, u agent.OrderUpdate) (rules.OrderDetailJSON, error) {
	o, err := a.Orders.Update(ctx, actor, orderID, orders.Patch{Status: u.Status, Tags: u.Tags})
	if err != nil {
		return rules.OrderDetailJSON{}, err
	}
	return rules.OrderDetailJSONOf(o), nil
}

// OrderTotals implements agent.Orders.
func (a AgentOrders) OrderTotals(ctx context.Context, orgID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]float64, error) {
	return a.Orders.Totals(ctx, orgID, ids)
}
