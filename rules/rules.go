// Package rules evaluates what happens to an order after it enters the
// service: split rules (child orders) and, later, dispatchers (routing to a
// destination bridge). The condition engine both use is rules/cond.
//
// Evaluating conditions, for any rule kind:
//
//	conds, errs := cond.Decode(body["conditions"], "conditions", 1, 50) // 400 details by path
//	prog, err := cond.Compile(conds, matchMode)                         // once per rule version
//	sets, err := hooks.Sets.Load(ctx, db, orgID, prog.SetIDs())         // once per batch
//	doc, err := rules.OrderDoc(order)                                   // the order as the API shows it
//	ok := prog.Match(doc, sets)
//
// A table whose rows reference condition sets keeps a condition_set_ids
// uuid[] column (from Program.SetIDs), locks the sets it names with
// store.LockConditionSets in the writing transaction, and is listed in
// store's conditionSetReferrers so that deleting a referenced set is 409.
// A split parent (IsSplitParent) lives on in its children: route those.
package rules

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/fos-dev/fos/rules/cond"
	"github.com/fos-dev/fos/store"
)

// OrderHooks is called after an order is committed: by the API's order
// create, and by order imports (grab-orders, inbound webhooks).
type OrderHooks interface {
	// OrderCreated runs after an order was created. The order is already
	// stored: an error is reported by the caller, never undoes the create.
	OrderCreated(ctx context.Context, orgID, orderID uuid.UUID) error
}

// Noop is the OrderHooks that does nothing.
type Noop struct{}

// OrderCreated does nothing.
func (Noop) OrderCreated(context.Context, uuid.UUID, uuid.UUID) error { return nil }

var _ OrderHooks = Noop{}

// Hooks is the service's OrderHooks: it runs the organization's split
// rules on every new order, then its dispatchers (rules/dispatch.go).
type Hooks struct {
	Store *store.Store
	Log   *slog.Logger
	// Sets caches condition sets between orders (the zero value works).
	Sets SetCache
	// Dispatcher starts the processing of the assignments dispatchers
	// make (nil: they stay pending for POST /dispatchers/assignments/process).
	Dispatcher DispatchStarter
}

var _ OrderHooks = (*Hooks)(nil)

// hookTimeout bounds one hook run (the caller's context may have no
// deadline: the API detaches it from the request).
const hookTimeout = 30 * time.Second

// OrderCreated splits the order by the first active split rule that splits
// it, then runs the order_created dispatchers (on the children of a split).
func (h *Hooks) OrderCreated(ctx context.Context, orgID, orderID uuid.UUID) error {
	// One query for the common case of an order no rule applies to (none
	// when the caller asked it already, with the insert).
	split, dispatch, known := rulesKnown(ctx)
	ctx, cancel := context.WithTimeout(ctx, hookTimeout)
	defer cancel()
	var err error
	if !known {
		if split, dispatch, err = store.OrderRulesApply(ctx, h.Store.Pool, orgID, orderID, TriggerOrderCreated); err != nil {
			return fmt.Errorf("order rules: %w", err)
		}
	}
	var splitErr error
	if split {
		_, splitErr = h.SplitOrder(ctx, orgID, orderID)
	}
	if dispatch {
		_, err = h.Dispatch(ctx, orgID, orderID, TriggerOrderCreated)
	}
	if splitErr != nil {
		return splitErr
	}
	return err
}

// OrderBatchHooks is implemented by OrderHooks that run a batch of new
// orders of one organization (a sync page) in a few round trips rather
// than a few per order.
type OrderBatchHooks interface {
	OrdersCreated(ctx context.Context, orgID uuid.UUID, orderIDs []uuid.UUID) error
}

var _ OrderBatchHooks = (*Hooks)(nil)

// OrdersCreated is OrderCreated for each of the orders, in batch: one
// round trip tells which orders split rules apply to and which
// order_created dispatchers apply to which orders (store.OrdersRules); an
// order a split rule applies to runs OrderCreated alone (its children
// are dispatched); the others' dispatchers run together (DispatchOrders).
// The errors are joined.
func (h *Hooks) OrdersCreated(ctx context.Context, orgID uuid.UUID, orderIDs []uuid.UUID) error {
	if len(orderIDs) == 0 {
		return nil
	}
	// The batch's own statements share one hookTimeout; an order run
	// alone (OrderCreated) gets its own, as it would outside a batch.
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, hookTimeout)
	defer cancel()
	split, dispatchers, err := store.OrdersRules(ctx, h.Store.Pool, orgID, orderIDs, TriggerOrderCreated)
	if err != nil {
		return fmt.Errorf("order rules: %w", err)
	}
	dispatch := map[uuid.UUID]bool{}
	for _, d := range dispatchers {
		for _, id := range d.OrderIDs {
			dispatch[id] = true
		}
	}
	var errs []error
	for _, id := range orderIDs {
		if split[id] {
			if err := h.OrderCreated(WithRulesKnown(parent, true, dispatch[id]), orgID, id); err != nil {
				errs = append(errs, fmt.Errorf("order %s: %w", id, err))
			}
		}
	}
	// The others' dispatchers, without the orders run alone.
	if len(split) > 0 {
		for i := range dispatchers {
			dispatchers[i].OrderIDs = slices.DeleteFunc(dispatchers[i].OrderIDs, func(id uuid.UUID) bool { return split[id] })
		}
	}
	if _, err := h.dispatchOrders(ctx, orgID, orderIDs, dispatchers, TriggerOrderCreated); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

type rulesKnownKey struct{}

type rulesKnownValue struct{ split, dispatch bool }

// WithRulesKnown tells OrderCreated that the caller already asked whether
// split rules and dispatchers of order_created apply to the new order
// (store.CreateOrderProbeEvents, in the insert's round trip), so it does not ask
// again.
func WithRulesKnown(ctx context.Context, split, dispatch bool) context.Context {
	return context.WithValue(ctx, rulesKnownKey{}, rulesKnownValue{split, dispatch})
}

func rulesKnown(ctx context.Context) (split, dispatch, known bool) {
	v, ok := ctx.Value(rulesKnownKey{}).(rulesKnownValue)
	return v.split, v.dispatch, ok
}

// SplitResult is what SplitOrder did; RuleID is zero when no rule split the
// order.
type SplitResult struct {
	RuleID   uuid.UUID
	ChildIDs []uuid.UUID
}

// SplitOrder tries the active split rules that apply to the order's bridge
// in priority order (priority descending, then name); the first whose plan
// splits the order wins. The child orders, the mark on the parent, an
// activity on each and the rule's counters are written in one transaction
// that holds the parent's row lock, so an order is split at most once
// (a split parent or a child is never split again).
func (h *Hooks) SplitOrder(ctx context.Context, orgID, orderID uuid.UUID) (SplitResult, error) {
	o, err := store.OrderByID(ctx, h.Store.Pool, orgID, orderID)
	if err != nil {
		return SplitResult{}, fmt.Errorf("split: load order: %w", err)
	}
	if o.BridgeID == nil || IsSplitParent(o.Metadata) || IsSplitChild(o.Metadata) {
		return SplitResult{}, nil
	}
	stored, err := store.ActiveSplitRules(ctx, h.Store.Pool, orgID, o.BridgeID)
	if err != nil || len(stored) == 0 {
		return SplitResult{}, err
	}
	compiled := make([]*SplitRule, 0, len(stored))
	var setIDs []uuid.UUID
	for _, r := range stored {
		c, err := CompileSplitRule(r)
		if err != nil { // cannot happen for rules written through the API
			h.logger().ErrorContext(ctx, "split rule does not compile", "split_rule_id", r.ID, "error", err)
			continue
		}
		compiled = append(compiled, c)
		setIDs = append(setIDs, c.SetIDs()...)
	}
	sets, err := h.Sets.Load(ctx, h.Store.Pool, orgID, setIDs)
	if err != nil {
		return SplitResult{}, err
	}
	var res SplitResult
	err = h.Store.InTx(ctx, func(tx pgx.Tx) error {
		o, err := store.OrderForUpdate(ctx, tx, orgID, orderID)
		if err != nil {
			return err
		}
		if IsSplitParent(o.Metadata) || IsSplitChild(o.Metadata) {
			return nil
		}
		doc, err := OrderDoc(o)
		if err != nil {
			return err
		}
		for _, r := range compiled {
			plan := r.Plan(doc, sets)
			if !plan.WouldSplit {
				continue
			}
			res, err = writeSplit(ctx, tx, o, doc, r.Rule, plan)
			return err
		}
		return nil
	})
	if err != nil {
		return SplitResult{}, fmt.Errorf("split order %s: %w", orderID, err)
	}
	return res, nil
}

func (h *Hooks) logger() *slog.Logger {
	if h.Log == nil {
		return slog.Default()
	}
	return h.Log
}

// LoadSets loads the organization's condition sets among ids, each once,
// for one batch of evaluations.
func LoadSets(ctx context.Context, db store.DBTX, orgID uuid.UUID, ids []uuid.UUID) (cond.Sets, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	loaded, err := store.LoadConditionSets(ctx, db, orgID, ids)
	if err != nil {
		return nil, fmt.Errorf("load condition sets: %w", err)
	}
	sets := make(cond.Sets, len(loaded))
	for id, s := range loaded {
		sets[id] = cond.NewSet(s.ValueType, s.Values)
	}
	return sets, nil
}

// writeSplit creates the children of plan and marks the parent.
func writeSplit(ctx context.Context, tx pgx.Tx, parent store.Order, doc map[string]any, rule store.SplitRule, plan Plan) (SplitResult, error) {
	totals, _ := doc["totals"].(map[string]any)
	childTotals := childTotals(totals, plan.Groups)
	res := SplitResult{RuleID: rule.ID}
	for i, g := range plan.Groups {
		n := strconv.Itoa(i + 1)
		items, err := json.Marshal(g.Items)
		if err != nil {
			return SplitResult{}, err
		}
		tot, err := json.Marshal(childTotals[i])
		if err != nil {
			return SplitResult{}, err
		}
		total, _ := childTotals[i]["total"].(json.Number).Float64()
		md, _ := json.Marshal(map[string]any{"parentOrderId": parent.ID, "splitRuleId": rule.ID, "splitGroup": g.Label})
		child := store.Order{
			ID: uuid.New(), OrganizationID: parent.OrganizationID, BridgeID: parent.BridgeID,
			ExternalID: parent.ExternalID + splitExternalSuffix + n, Status: parent.Status,
			PaymentStatus: parent.PaymentStatus, FulfillmentStatus: parent.FulfillmentStatus,
			Customer: parent.Customer, CustomerEmail: parent.CustomerEmail, CustomerName: parent.CustomerName,
			ShippingAddress: parent.ShippingAddress, BillingAddress: parent.BillingAddress,
			LineItems: items, Totals: tot, Total: total, Currency: parent.Currency,
			Tags: append([]string{}, parent.Tags...), Note: parent.Note, Metadata: md, OrderedAt: parent.OrderedAt,
		}
		if parent.OrderNumber != nil {
			num := *parent.OrderNumber + "-" + n
			child.OrderNumber = &num
		}
		if _, err := store.CreateOrder(ctx, tx, child); err != nil {
			return SplitResult{}, fmt.Errorf("create child %d: %w", i+1, err)
		}
		res.ChildIDs = append(res.ChildIDs, child.ID)
		if _, err := store.InsertOrderActivity(ctx, tx, store.OrderActivity{
			OrganizationID: parent.OrganizationID, OrderID: child.ID, Type: ActivitySplit,
			Description: fmt.Sprintf("Created by split rule %q from order %s (group %q)", rule.Name, parent.ID, g.Label),
			Metadata:    map[string]any{"parentOrderId": parent.ID, "splitRuleId": rule.ID, "group": g.Label, "itemCount": len(g.Items)},
		}); err != nil {
			return SplitResult{}, err
		}
	}
	mark := map[string]any{"splitInto": res.ChildIDs, "splitRuleId": rule.ID, "splitAt": time.Now().UTC().Format(time.RFC3339)}
	if err := store.MarkOrderSplit(ctx, tx, parent.OrganizationID, parent.ID, mark, splitTag, maxOrderTags); err != nil {
		return SplitResult{}, err
	}
	if _, err := store.InsertOrderActivity(ctx, tx, store.OrderActivity{
		OrganizationID: parent.OrganizationID, OrderID: parent.ID, Type: ActivitySplit,
		Description: fmt.Sprintf("Split into %d orders by split rule %q", len(res.ChildIDs), rule.Name),
		Metadata:    map[string]any{"splitRuleId": rule.ID, "childOrderIds": res.ChildIDs},
	}); err != nil {
		return SplitResult{}, err
	}
	if err := store.RecordSplitRuleUse(ctx, tx, parent.OrganizationID, rule.ID); err != nil {
		return SplitResult{}, err
	}
	return res, nil
}

// ActivitySplit is the order activity type of a split (on the parent and on
// each child).
const ActivitySplit = "split"
