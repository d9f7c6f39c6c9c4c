package rules

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/fos-dev/fos/rules/cond"
	"github.com/fos-dev/fos/store"
)

// Dispatcher triggers (Part 2).
const (
	TriggerOrderCreated    = "order_created"
	TriggerOrderUpdated    = "order_updated"
	TriggerShipmentCreated = "shipment_created"
	TriggerManual          = "manual"
)

// DispatchWorkflow is the type name of the workflow that processes one
// dispatch assignment (workflows.DispatchAssignment), started with a
// DispatchInput under DispatchWorkflowID.
const DispatchWorkflow = "DispatchAssignment"

// DispatchInput is the DispatchAssignment workflow's input.
type DispatchInput struct {
	OrganizationID uuid.UUID `json:"organizationId"`
	AssignmentID   uuid.UUID `json:"assignmentId"`
}

// DispatchWorkflowID is the stable id of an assignment's run.
func DispatchWorkflowID(assignmentID uuid.UUID) string { return "dispatch/" + assignmentID.String() }

// DispatchBatchWorkflow is the type name of a destination bridge's
// drainer (workflows.DispatchBatch), started with a DispatchBatchInput
// under DispatchBatchWorkflowID by signal-with-start of
// DispatchBatchSignal.
const (
	DispatchBatchWorkflow = "DispatchBatch"
	DispatchBatchSignal   = "dispatch"
)

// DispatchBatchInput is the DispatchBatch workflow's input; Totals carry
// the counts over continue-as-new.
type DispatchBatchInput struct {
	OrganizationID uuid.UUID          `json:"organizationId"`
	BridgeID       uuid.UUID          `json:"bridgeId"`
	Totals         DispatchBatchTotal `json:"totals"`
	// PageSize and Concurrency tune the pages (0: the activity's
	// defaults).
	PageSize    int `json:"pageSize,omitempty"`
	Concurrency int `json:"concurrency,omitempty"`
}

// DispatchBatchTotal counts a drainer's assignments over its runs.
type DispatchBatchTotal struct {
	Pages     int    `json:"pages"`
	Claimed   int    `json:"claimed"`
	Completed int    `json:"completed"`
	Failed    int    `json:"failed"`
	Skipped   int    `json:"skipped"`
	LastError string `json:"lastError,omitempty"`
}

// DispatchBatchWorkflowID is the stable id of a destination bridge's
// drainer.
func DispatchBatchWorkflowID(bridgeID uuid.UUID) string { return "dispatch-batch/" + bridgeID.String() }

// DispatchStarter starts the processing of new (pending) assignments.
type DispatchStarter interface {
	StartAssignments(ctx context.Context, orgID uuid.UUID, ids []uuid.UUID) (started int, err error)
}

// DispatchDrainer is a DispatchStarter that signals the drainers of
// destination bridges directly (the assignments' destinations known).
type DispatchDrainer interface {
	DrainBridges(ctx context.Context, orgID uuid.UUID, bridgeIDs []uuid.UUID) error
}

// DispatchRetrier is a DispatchStarter that can run one assignment on its
// own DispatchAssignment run (an explicit retry of a single assignment).
type DispatchRetrier interface {
	StartSingle(ctx context.Context, orgID, assignmentID uuid.UUID) error
}

// TemporalDispatch processes pending assignments through the drainer of
// their destination bridge (DispatchBatch, dispatch-batch/<bridgeId>):
// StartAssignments and DrainBridges signal it with start, once per bridge
// (a bridge signalled successfully within signalDebounce is not signalled
// again: its drainer claims after every signal and only ends once no
// signal came for longer than that). StartSingle starts one assignment's
// own DispatchAssignment run. An assignment whose signal fails stays
// pending: the process endpoint and the reconciler pick it up.
type TemporalDispatch struct {
	Client    client.Client
	TaskQueue string
	// Store finds the destinations of assignment ids (StartAssignments).
	Store *store.Store
	// Options builds a start's options (worker.StartOptions: the search
	// attribute and memo every run carries); nil: id and queue only.
	Options func(id, taskQueue, orgID string, memo map[string]any) client.StartWorkflowOptions
	// Tune sets the drainer's page size and concurrency (0: defaults).
	PageSize, Concurrency int
	// Debounce remembers recent signals (nil: every call signals).
	Debounce *SignalDebounce
}

// signalDebounce: see TemporalDispatch; shorter than the drainer's idle
// wait (workflows.DispatchBatchIdle).
const signalDebounce = 2 * time.Second

// SignalDebounce remembers when each drainer was last signalled
// successfully (shared by the TemporalDispatch values of one process).
type SignalDebounce struct {
	mu   sync.Mutex
	last map[uuid.UUID]time.Time
}

// NewSignalDebounce returns an empty SignalDebounce.
func NewSignalDebounce() *SignalDebounce { return &SignalDebounce{last: map[uuid.UUID]time.Time{}} }

func (d *SignalDebounce) recent(bridge uuid.UUID) bool {
	if d == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return time.Since(d.last[bridge]) < signalDebounce
}

func (d *SignalDebounce) mark(bridge uuid.UUID) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.last) > 10000 {
		clear(d.last)
	}
	d.last[bridge] = time.Now()
}

// StartAssignments implements DispatchStarter: the drainers of the
// destinations of ids still pending are signalled; started counts the
// ids whose drainer was signalled.
func (t TemporalDispatch) StartAssignments(ctx context.Context, orgID uuid.UUID, ids []uuid.UUID) (int, error) {
	if t.Client == nil || len(ids) == 0 {
		return 0, nil
	}
	if t.Store == nil {
		return 0, fmt.Errorf("dispatch: no store to find the destinations of %d assignments", len(ids))
	}
	bridges, err := store.PendingDestinations(ctx, t.Store.Pool, orgID, ids)
	if err != nil {
		return 0, err
	}
	if err := t.DrainBridges(ctx, orgID, bridges); err != nil {
		return 0, err
	}
	return len(ids), nil
}

// DrainBridges implements DispatchDrainer.
func (t TemporalDispatch) DrainBridges(ctx context.Context, orgID uuid.UUID, bridgeIDs []uuid.UUID) error {
	if t.Client == nil {
		return nil
	}
	var firstErr error
	for _, b := range bridgeIDs {
		if t.Debounce.recent(b) {
			continue
		}
		if err := t.signal(ctx, orgID, b); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		t.Debounce.mark(b)
	}
	return firstErr
}

// DrainOptions are the start options of a bridge's drainer, in one place.
func (t TemporalDispatch) DrainOptions(orgID, bridgeID uuid.UUID) client.StartWorkflowOptions {
	id := DispatchBatchWorkflowID(bridgeID)
	if t.Options != nil {
		return t.Options(id, t.TaskQueue, orgID.String(), map[string]any{"bridgeId": bridgeID.String()})
	}
	return client.StartWorkflowOptions{ID: id, TaskQueue: t.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING}
}

func (t TemporalDispatch) signal(ctx context.Context, orgID, bridgeID uuid.UUID) error {
	opts := t.DrainOptions(orgID, bridgeID)
	// Signal-with-start joins the open run whatever the conflict policy.
	opts.WorkflowIDConflictPolicy = enumspb.WORKFLOW_ID_CONFLICT_POLICY_UNSPECIFIED
	_, err := t.Client.SignalWithStartWorkflow(ctx, opts.ID, DispatchBatchSignal, nil, opts, DispatchBatchWorkflow,
		DispatchBatchInput{OrganizationID: orgID, BridgeID: bridgeID, PageSize: t.PageSize, Concurrency: t.Concurrency})
	if err != nil {
		return fmt.Errorf("signal %s: %w", opts.ID, err)
	}
	return nil
}

// StartSingle implements DispatchRetrier.
func (t TemporalDispatch) StartSingle(ctx context.Context, orgID, id uuid.UUID) error {
	if t.Client == nil {
		return nil
	}
	opts := client.StartWorkflowOptions{
		ID: DispatchWorkflowID(id), TaskQueue: t.TaskQueue,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}
	if t.Options != nil {
		opts = t.Options(DispatchWorkflowID(id), t.TaskQueue, orgID.String(), map[string]any{"assignmentId": id.String()})
	}
	if _, err := t.Client.ExecuteWorkflow(ctx, opts, DispatchWorkflow, DispatchInput{OrganizationID: orgID, AssignmentID: id}); err != nil {
		return fmt.Errorf("start %s: %w", DispatchWorkflowID(id), err)
	}
	return nil
}

// OrderEvent runs the dispatchers of an order event (order_updated,
// shipment_created) when hooks dispatch (*Hooks); other hooks ignore it.
// Errors are logged by the hooks, never returned: the event already
// happened.
func OrderEvent(ctx context.Context, hooks OrderHooks, orgID, orderID uuid.UUID, trigger string) {
	h, ok := hooks.(*Hooks)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), hookTimeout)
	defer cancel()
	if _, err := h.Dispatch(ctx, orgID, orderID, trigger); err != nil {
		h.logger().ErrorContext(ctx, "dispatch order", "order_id", orderID, "trigger", trigger, "error", err)
	}
}

// CompiledDispatcher is a dispatcher with its compiled conditions.
type CompiledDispatcher struct {
	store.Dispatcher
	Program *cond.Program
}

// CompileDispatcher compiles a stored dispatcher's conditions.
func CompileDispatcher(d store.Dispatcher) (*CompiledDispatcher, error) {
	var conds []cond.Condition
	if err := json.Unmarshal(d.Conditions, &conds); err != nil {
		return nil, fmt.Errorf("dispatcher %s conditions: %w", d.ID, err)
	}
	p, err := cond.Compile(conds, d.MatchMode)
	if err != nil {
		return nil, fmt.Errorf("dispatcher %s conditions: %w", d.ID, err)
	}
	return &CompiledDispatcher{Dispatcher: d, Program: p}, nil
}

// Dispatch evaluates the organization's active dispatchers of the order's
// bridge for a trigger (manual: every active dispatcher, whatever its
// triggerOn) and assigns the order to the destination of each that
// matches, in priority order; an order already assigned to a destination
// is not assigned there again. A split parent is routed through its
// children. The new assignments are started (Hooks.Dispatcher) and
// returned.
func (h *Hooks) Dispatch(ctx context.Context, orgID, orderID uuid.UUID, trigger string) ([]store.DispatchAssignment, error) {
	filter := trigger
	if trigger == TriggerManual {
		filter = ""
	}
	// Most orders meet no dispatcher: one query decides.
	stored, err := store.ActiveDispatchersForOrder(ctx, h.Store.Pool, orgID, orderID, filter)
	if err != nil || len(stored) == 0 {
		return nil, err
	}
	o, err := store.OrderByID(ctx, h.Store.Pool, orgID, orderID)
	if err != nil {
		return nil, fmt.Errorf("dispatch: load order: %w", err)
	}
	orders := []store.Order{o}
	if IsSplitParent(o.Metadata) {
		var md struct {
			SplitInto []uuid.UUID `json:"splitInto"`
		}
		_ = json.Unmarshal(o.Metadata, &md)
		orders = orders[:0]
		for _, id := range md.SplitInto {
			c, err := store.OrderByID(ctx, h.Store.Pool, orgID, id)
			if err == nil {
				orders = append(orders, c)
			}
		}
	}
	if len(orders) == 0 {
		return nil, nil
	}
	compiled, sets, err := h.compileDispatchers(ctx, orgID, stored)
	if err != nil {
		return nil, err
	}
	docs := make([]map[string]any, len(orders))
	for i, ord := range orders {
		if docs[i], err = OrderDoc(ord); err != nil {
			return nil, err
		}
	}
	var created []store.DispatchAssignment
	for _, d := range compiled {
		var match []uuid.UUID
		for i, ord := range orders {
			if d.Program.Match(docs[i], sets) {
				match = append(match, ord.ID)
			}
		}
		if len(match) == 0 {
			continue
		}
		as, err := store.CreateAssignments(ctx, h.Store.Pool, d.Dispatcher, match, map[string]any{"trigger": trigger})
		if err != nil {
			return created, fmt.Errorf("dispatcher %s: %w", d.ID, err)
		}
		created = append(created, as...)
	}
	h.Store.NoteBulkWrite(ctx, "dispatch_assignments", len(created))
	if err := h.StartAssignments(ctx, orgID, created); err != nil {
		h.logger().WarnContext(ctx, "start dispatch assignments; they stay pending", "order_id", orderID, "error", err)
	}
	return created, nil
}

// DispatchOrders is Dispatch for many orders of the organization (of
// trigger, not manual) in a few round trips: their dispatchers in one
// query, the orders in one read, each dispatcher compiled once and its
// matches assigned in one statement, the drainers signalled once. A split
// parent among them is dispatched alone (Dispatch routes its children).
func (h *Hooks) DispatchOrders(ctx context.Context, orgID uuid.UUID, orderIDs []uuid.UUID, trigger string) ([]store.DispatchAssignment, error) {
	dispatchers, err := store.DispatchersForOrders(ctx, h.Store.Pool, orgID, orderIDs, trigger)
	if err != nil {
		return nil, err
	}
	return h.dispatchOrders(ctx, orgID, orderIDs, dispatchers, trigger)
}

// dispatchOrders is DispatchOrders once the dispatchers that apply to the
// orders are known (each with its orders, in priority order).
func (h *Hooks) dispatchOrders(ctx context.Context, orgID uuid.UUID, orderIDs []uuid.UUID, dispatchers []store.DispatcherOrders, trigger string) ([]store.DispatchAssignment, error) {
	byOrder := map[uuid.UUID][]uuid.UUID{}
	stored := make([]store.Dispatcher, 0, len(dispatchers))
	for _, d := range dispatchers {
		if len(d.OrderIDs) == 0 {
			continue
		}
		stored = append(stored, d.Dispatcher)
		for _, id := range d.OrderIDs {
			byOrder[id] = append(byOrder[id], d.ID)
		}
	}
	if len(stored) == 0 {
		return nil, nil
	}
	ids := make([]uuid.UUID, 0, len(byOrder))
	for _, id := range orderIDs {
		if len(byOrder[id]) > 0 {
			ids = append(ids, id)
		}
	}
	// Each dispatcher compiled once, in priority order.
	compiled, sets, err := h.compileDispatchers(ctx, orgID, stored)
	if err != nil {
		return nil, err
	}
	// Only the JSON fields some dispatcher reads are read and decoded.
	fields := map[string]bool{}
	var docs []string
	for _, c := range compiled {
		for _, f := range c.Program.Fields() {
			if !fields[f] {
				fields[f] = true
				docs = append(docs, f)
			}
		}
	}
	orders, err := store.OrdersForConditions(ctx, h.Store.Pool, orgID, ids, docs)
	if err != nil {
		return nil, fmt.Errorf("dispatch: load orders: %w", err)
	}
	var created []store.DispatchAssignment
	var errs []error
	matches := map[uuid.UUID][]uuid.UUID{}
	for _, o := range orders {
		if IsSplitParent(o.Metadata) { // its children are routed
			as, err := h.Dispatch(ctx, orgID, o.ID, trigger)
			created = append(created, as...)
			if err != nil {
				errs = append(errs, err)
			}
			continue
		}
		doc, err := orderDoc(o, fields)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, c := range compiled {
			if slices.Contains(byOrder[o.ID], c.ID) && c.Program.Match(doc, sets) {
				matches[c.ID] = append(matches[c.ID], o.ID)
			}
		}
	}
	var batch []store.DispatchAssignment
	for _, c := range compiled {
		if len(matches[c.ID]) == 0 {
			continue
		}
		as, err := store.CreateAssignments(ctx, h.Store.Pool, c.Dispatcher, matches[c.ID], map[string]any{"trigger": trigger})
		if err != nil {
			errs = append(errs, fmt.Errorf("dispatcher %s: %w", c.ID, err))
			continue
		}
		batch = append(batch, as...)
	}
	h.Store.NoteBulkWrite(ctx, "dispatch_assignments", len(batch))
	if err := h.StartAssignments(ctx, orgID, batch); err != nil {
		h.logger().WarnContext(ctx, "start dispatch assignments; they stay pending", "orders", len(orderIDs), "error", err)
	}
	return append(created, batch...), errors.Join(errs...)
}

// compileDispatchers compiles the stored dispatchers (in their order) and
// loads the condition sets they name. A dispatcher that does not compile is
// logged and left out.
func (h *Hooks) compileDispatchers(ctx context.Context, orgID uuid.UUID, stored []store.Dispatcher) ([]*CompiledDispatcher, cond.Sets, error) {
	compiled := make([]*CompiledDispatcher, 0, len(stored))
	var setIDs []uuid.UUID
	for _, d := range stored {
		c, err := CompileDispatcher(d)
		if err != nil { // cannot happen for dispatchers written through the API
			h.logger().ErrorContext(ctx, "dispatcher does not compile", "dispatcher_id", d.ID, "error", err)
			continue
		}
		compiled = append(compiled, c)
		setIDs = append(setIDs, c.Program.SetIDs()...)
	}
	sets, err := h.Sets.Load(ctx, h.Store.Pool, orgID, setIDs)
	return compiled, sets, err
}

// StartAssignments starts the processing of new assignments: the
// drainers of their destinations are signalled (nothing without a
// Dispatcher: they stay pending for the process endpoint).
func (h *Hooks) StartAssignments(ctx context.Context, orgID uuid.UUID, as []store.DispatchAssignment) error {
	if h.Dispatcher == nil || len(as) == 0 {
		return nil
	}
	if d, ok := h.Dispatcher.(DispatchDrainer); ok {
		var bridges []uuid.UUID
		for _, a := range as {
			if !slices.Contains(bridges, a.DestinationBridgeID) {
				bridges = append(bridges, a.DestinationBridgeID)
			}
		}
		return d.DrainBridges(ctx, orgID, bridges)
	}
	ids := make([]uuid.UUID, len(as))
	for i, a := range as {
		ids[i] = a.ID
	}
	_, err := h.Dispatcher.StartAssignments(ctx, orgID, ids)
	return err
}
