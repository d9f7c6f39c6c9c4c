package orders

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/store"
)

// NewOrder is an order to create: every field of an Order except ID,
// OrganizationID and the timestamps the database sets (a zero OrderedAt
// means now). The caller has validated its shape (api/order_bodies.go).
type NewOrder = store.Order

// Create creates an order of the organization and runs its
// order_created hooks. The actor needs orders:write. A bridge_id that is
// not the organization's is invalid; a second order with the bridge's
// external_id is a conflict naming the existing order's id in its
// external_id field.
func (s *Service) Create(ctx context.Context, actor domain.Actor, in NewOrder) (Order, error) {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return Order{}, err
	}
	in.ID = uuid.New()
	in.OrganizationID = actor.OrganizationID
	// The bridge check and the insert are one statement, sent with the
	// question whether any split rule or dispatcher applies (one round
	// trip; most orders meet none, and the hooks then cost nothing more).
	// The standing orders' question (does any listen to the event?) goes
	// with it too, so an order nothing listens to is one statement. Once
	// the organization's answers are known they are kept (until a rule of
	// it changes), and the statement is the plain insert.
	created, probe, err := store.CreateOrderProbed(ctx, s.store.Pool, in, rules.TriggerOrderCreated, rules.EventOrderCreated)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Order{}, domain.InvalidField("bridge_id", "must be a bridge of this organization")
	case errors.Is(err, store.ErrConflict):
		return Order{}, s.duplicate(ctx, in)
	case err != nil:
		return Order{}, err
	}
	// The order is committed, so a failing hook is logged and never turns
	// the create into an error, and a caller that goes away does not
	// cancel it.
	hctx := rules.WithRulesKnown(context.WithoutCancel(ctx), probe.Split, probe.Dispatch)
	if err := s.hooks.OrderCreated(hctx, actor.OrganizationID, created.ID); err != nil {
		s.log.ErrorContext(ctx, "order created hook", "order_id", created.ID, "error", err)
	}
	s.notify(rules.WithStandingKnown(hctx, rules.EventOrderCreated, probe.Standing), actor, rules.EventOrderCreated, created.ID)
	return created, nil
}

// duplicate is the conflict of an external id the bridge already has; it
// names the order that holds it, so a client can use that order.
func (s *Service) duplicate(ctx context.Context, in NewOrder) error {
	conflict := domain.Conflict("the bridge already has an order with this external_id")
	if in.BridgeID != nil {
		if id, err := store.OrderIDByExternalID(ctx, s.store.Pool, in.OrganizationID, *in.BridgeID, in.ExternalID); err == nil {
			conflict.Fields = []domain.FieldError{{Field: "external_id", Message: "already used by order " + id.String()}}
		}
	}
	return conflict
}

// ListInput is a list's filter, sort and page, and what to include.
type ListInput struct {
	Filter Filter
	// Sort is a key of SortColumns ("" is created_at).
	Sort   string
	Desc   bool
	Limit  int
	Offset int
	// IncludeBridges fills Page.Bridges with the page's bridges.
	IncludeBridges bool
}

// Validate names the input's problems (the filter's bounds).
func (in ListInput) Validate() domain.FieldErrors {
	var v domain.FieldErrors
	v.MaxLen("search", in.Filter.Search, MaxSearchLen)
	v.MaxLen("external_id", in.Filter.ExternalID, MaxExternalIDLen)
	return v
}

// Page is one page of orders, the number of all that match and, when
// asked, the page's bridges by id (a bridge that is gone is absent).
type Page struct {
	Items   []ListItem
	Total   int
	Bridges map[uuid.UUID]Bridge
}

// List lists the organization's orders. The actor needs orders:read.
func (s *Service) List(ctx context.Context, actor domain.Actor, in ListInput) (Page, error) {
	if err := actor.RequireScope(ScopeRead); err != nil {
		return Page{}, err
	}
	if err := in.Validate().Err(); err != nil {
		return Page{}, err
	}
	items, total, err := store.ListOrders(ctx, s.store.Pool, actor.OrganizationID, store.OrderListParams{
		Filter: in.Filter, Sort: in.Sort, Desc: in.Desc, Limit: in.Limit, Offset: in.Offset,
	})
	if err != nil {
		return Page{}, err
	}
	page := Page{Items: items, Total: total}
	if in.IncludeBridges {
		// All bridges of the page in one query.
		if page.Bridges, err = store.OrderBridges(ctx, s.store.Pool, actor.OrganizationID, bridgeIDs(items)); err != nil {
			return Page{}, err
		}
	}
	return page, nil
}

// Get is one order of the organization. The actor needs orders:read.
func (s *Service) Get(ctx context.Context, actor domain.Actor, id uuid.UUID) (Order, error) {
	if err := actor.RequireScope(ScopeRead); err != nil {
		return Order{}, err
	}
	o, err := store.OrderByID(ctx, s.store.Pool, actor.OrganizationID, id)
	return o, notFound(err)
}

// Bridge is the order's bridge, or nil when it has none or the bridge is
// gone. The actor needs orders:read.
func (s *Service) Bridge(ctx context.Context, actor domain.Actor, o Order) (*Bridge, error) {
	if err := actor.RequireScope(ScopeRead); err != nil {
		return nil, err
	}
	if o.BridgeID == nil {
		return nil, nil
	}
	bridges, err := store.OrderBridges(ctx, s.store.Pool, actor.OrganizationID, []uuid.UUID{*o.BridgeID})
	if err != nil {
		return nil, err
	}
	b, ok := bridges[*o.BridgeID]
	if !ok {
		return nil, nil
	}
	return &b, nil
}

// Find is an order of the organization by its id, its order number (with
// or without a leading #) or its external id; the newest when several
// match. The actor needs orders:read.
func (s *Service) Find(ctx context.Context, actor domain.Actor, ref string) (Order, error) {
	if err := actor.RequireScope(ScopeRead); err != nil {
		return Order{}, err
	}
	ref = strings.TrimPrefix(strings.TrimSpace(ref), "#")
	id, err := uuid.Parse(ref)
	if err != nil {
		if id, err = store.OrderIDByRef(ctx, s.store.Pool, actor.OrganizationID, ref); err != nil {
			return Order{}, notFound(err)
		}
	}
	return s.Get(ctx, actor, id)
}

// Totals are the orders' totals (totals.total) by id; an id of another
// organization is absent.
func (s *Service) Totals(ctx context.Context, orgID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]float64, error) {
	return store.OrderTotals(ctx, s.store.Pool, orgID, ids)
}

// Update applies p, records the change in the order's history attributed
// to the actor and runs the order_updated hooks. Any status may move to
// any other; line items cannot change once the order is shipped or
// delivered (a conflict). The actor needs orders:write.
func (s *Service) Update(ctx context.Context, actor domain.Actor, id uuid.UUID, p Patch) (Order, error) {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return Order{}, err
	}
	o, err := store.PatchOrder(ctx, s.store, actor.OrganizationID, id, p, activityActor(actor))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Order{}, domain.NotFound("order")
	case errors.Is(err, store.ErrOrderLineItemsLocked):
		return Order{}, domain.Conflict("line items cannot change once an order is shipped or delivered")
	case err != nil:
		return Order{}, err
	}
	rules.OrderEvent(ctx, s.hooks, actor.OrganizationID, id, rules.TriggerOrderUpdated)
	s.notify(ctx, actor, rules.EventOrderUpdated, id)
	return o, nil
}

// Delete deletes an order and its history for good. The actor needs
// orders:write.
func (s *Service) Delete(ctx context.Context, actor domain.Actor, id uuid.UUID) error {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return err
	}
	return notFound(store.DeleteOrder(ctx, s.store.Pool, actor.OrganizationID, id))
}

// Activities is the order's history, oldest first. The actor needs
// orders:read.
func (s *Service) Activities(ctx context.Context, actor domain.Actor, id uuid.UUID) ([]Activity, error) {
	if err := actor.RequireScope(ScopeRead); err != nil {
		return nil, err
	}
	acts, err := store.OrderActivities(ctx, s.store.Pool, actor.OrganizationID, id)
	return acts, notFound(err)
}

// AddNote adds a note to the order's history, attributed to the actor.
// The note is trimmed and must be 1-MaxNoteLen characters. The actor needs
// orders:write.
func (s *Service) AddNote(ctx context.Context, actor domain.Actor, id uuid.UUID, note string) (Activity, error) {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return Activity{}, err
	}
	note = strings.TrimSpace(note)
	var v domain.FieldErrors
	if note == "" {
		v.Add("note", "is required")
	} else if n := len([]rune(note)); n > MaxNoteLen {
		v.Add("note", fmt.Sprintf("must be 1-%d characters", MaxNoteLen))
	}
	if err := v.Err(); err != nil {
		return Activity{}, err
	}
	who := activityActor(actor)
	a, err := store.InsertOrderActivity(ctx, s.store.Pool, store.OrderActivity{
		OrganizationID: actor.OrganizationID, OrderID: id, Type: store.ActivityNote, Description: note,
		ActorType: who.Type, ActorID: who.ID, ActorName: who.Name,
	})
	return a, notFound(err)
}
