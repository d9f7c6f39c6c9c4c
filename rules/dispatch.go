package rules

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

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

// DispatchStarter starts the processing of new (pending) assignments.
type DispatchStarter interface {
	StartAssignments(ctx context.Context, orgID uuid.UUID, ids []uuid.UUID) (started int, err error)
}

// TemporalDispatch starts DispatchAssignment workflows on a task queue
// (the bulk queue). A run of the same id that is still open is joined; a
// closed one (an assignment reset by retry) is started again. An
// assignment whose start fails stays pending: the process endpoint and the
// reconciler pick it up.
type TemporalDispatch struct {
	Client    client.Client
	TaskQueue string
	// Options builds a start's options (worker.StartOptions: the search
	// attribute and memo every run carries); nil: id and queue only.
	Options func(id, taskQueue, orgID string, memo map[string]any) client.StartWorkflowOptions
}

// startParallel bounds the concurrent starts of one batch.
const startParallel = 16

// StartAssignments implements DispatchStarter.
func (t TemporalDispatch) StartAssignments(ctx context.Context, orgID uuid.UUID, ids []uuid.UUID) (int, error) {
	if t.Client == nil || len(ids) == 0 {
		return 0, nil
	}
	var (
		mu       sync.Mutex
		started  int
		firstErr error
		wg       sync.WaitGroup
		sem      = make(chan struct{}, startParallel)
	)
	for _, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func(id uuid.UUID) {
			defer func() { <-sem; wg.Done() }()
			opts := client.StartWorkflowOptions{
				ID: DispatchWorkflowID(id), TaskQueue: t.TaskQueue,
				WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
				WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
			}
			if t.Options != nil {
				opts = t.Options(DispatchWorkflowID(id), t.TaskQueue, orgID.String(), map[string]any{"assignmentId": id.String()})
			}
			_, err := t.Client.ExecuteWorkflow(ctx, opts, DispatchWorkflow, DispatchInput{OrganizationID: orgID, AssignmentID: id})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("start %s: %w", DispatchWorkflowID(id), err)
				}
				return
			}
			started++
		}(id)
	}
	wg.Wait()
	return started, firstErr
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
	if err := h.StartAssignments(ctx, orgID, created); err != nil {
		h.logger().WarnContext(ctx, "start dispatch assignments; they stay pending", "order_id", orderID, "error", err)
	}
	return created, nil
}

// StartAssignments starts the processing of new assignments (nothing
// without a Dispatcher: they stay pending for the process endpoint).
func (h *Hooks) StartAssignments(ctx context.Context, orgID uuid.UUID, as []store.DispatchAssignment) error {
	if h.Dispatcher == nil || len(as) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, len(as))
	for i, a := range as {
		ids[i] = a.ID
	}
	_, err := h.Dispatcher.StartAssignments(ctx, orgID, ids)
	return err
}
