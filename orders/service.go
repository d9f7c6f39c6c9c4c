// Package orders holds the orders domain: an organization's orders, their
// changes and notes (the order's activity history), and the resync of an
// order from its source bridge. The API's handlers, the agent's tools and
// operation execution call the one Service; none of them repeats its logic.
//
// Creating and updating an order runs its hooks (split rules and
// dispatchers, rules.OrderHooks) after the change is committed: a hook that
// fails is logged and never turns the change into an error. A resync is
// the OrderResync workflow, started through the Resyncs port (its Temporal
// adapter is worker.TemporalOrders).
package orders

import (
	"context"
	"errors"
	"io"
	"log/slog"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/store"
)

// Scopes of orders (Part 1).
const (
	ScopeRead  = "orders:read"
	ScopeWrite = "orders:write"
)

// The domain's model: the store's rows, under the domain's names.
type (
	// Order is an order of one organization (the jsonb fields stay raw
	// JSON, validated on the way in and written out unchanged).
	Order = store.Order
	// ListItem is an order as the list shows it.
	ListItem = store.OrderListItem
	// Bridge is the summary of an order's bridge (include=bridge).
	Bridge = store.OrderBridge
	// Activity is one entry of an order's history.
	Activity = store.OrderActivity
	// Patch changes an order; nil fields stay as they are (see
	// store.OrderPatch for the meaning of each field).
	Patch = store.OrderPatch
	// Filter narrows a list.
	Filter = store.OrderFilter
)

// Values an order's fields take (the CHECK constraints).
var (
	Statuses            = store.OrderStatuses
	PaymentStatuses     = store.PaymentStatuses
	FulfillmentStatuses = store.FulfillmentStatuses
	// SortColumns are the list's sort keys.
	SortColumns = store.OrderSortColumns
)

// Bounds the specification leaves open.
const (
	MaxLineItems = 1000
	MaxTags      = 100
	MaxTagLen    = 100
	MaxNoteLen   = 5000
	MaxSearchLen = 200
	MaxQuantity  = 1_000_000
	// MaxMoney keeps totals.total inside the numeric(14,2) column.
	MaxMoney = 999_999_999_999.99
	// MaxExternalIDLen bounds an external id (and its list filter).
	MaxExternalIDLen = 255
)

// Deps are the Service's dependencies.
type Deps struct {
	Store  *store.Store
	Logger *slog.Logger
	// Hooks runs the split rules and dispatchers of an order's events;
	// nil: none.
	Hooks rules.OrderHooks
	// Resyncs starts OrderResync runs; nil: a resync answers that
	// workflows are unavailable.
	Resyncs Resyncs
	// Events hears orders created and updated (the agent's standing
	// orders); nil: nobody listens.
	Events rules.Events
}

// Service is the orders domain's operations.
type Service struct {
	store   *store.Store
	log     *slog.Logger
	hooks   rules.OrderHooks
	resyncs Resyncs
	events  rules.Events
}

// New builds the Service.
func New(d Deps) *Service {
	log := d.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	hooks := d.Hooks
	if hooks == nil {
		hooks = rules.Noop{}
	}
	return &Service{store: d.Store, log: log, hooks: hooks, resyncs: d.Resyncs, events: d.Events}
}

// notify tells the events of an order change. The agent's own changes
// are not told: a standing order must not fire itself in a loop.
func (s *Service) notify(ctx context.Context, actor domain.Actor, trigger string, id uuid.UUID) {
	if actor.Kind == domain.ActorAgent {
		return
	}
	rules.Notify(ctx, s.events, actor.OrganizationID, trigger, []uuid.UUID{id})
}

// activityActor attributes a change to the actor (an order activity's
// actor: a user, an API key, the agent, an operation, the system).
func activityActor(a domain.Actor) store.OrderActor {
	kind, id, name := a.Attribution()
	return store.OrderActor{Type: kind, ID: id, Name: name}
}

// notFound maps the store's not found to the order's.
func notFound(err error) error {
	if isNotFound(err) {
		return domain.NotFound("order")
	}
	return err
}

func isNotFound(err error) bool { return err != nil && errors.Is(err, store.ErrNotFound) }

// ids are the distinct bridge ids of a page, in order.
func bridgeIDs(items []ListItem) []uuid.UUID {
	ids := make([]uuid.UUID, 0, len(items))
	seen := map[uuid.UUID]bool{}
	for _, it := range items {
		if it.BridgeID != nil && !seen[*it.BridgeID] {
			seen[*it.BridgeID] = true
			ids = append(ids, *it.BridgeID)
		}
	}
	return ids
}
