package routing

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/store"
)

// Assignment is a dispatch assignment: an order sent to a destination
// bridge (store row). DispatcherID is nil for a direct dispatch.
type Assignment = store.DispatchAssignment

// Assignment statuses (Part 2).
const (
	AssignmentPending    = store.AssignmentPending
	AssignmentProcessing = store.AssignmentProcessing
	AssignmentCompleted  = store.AssignmentCompleted
	AssignmentFailed     = store.AssignmentFailed
	AssignmentSkipped    = store.AssignmentSkipped
)

// AssignmentStatuses are the statuses an assignment list filters by.
var AssignmentStatuses = store.AssignmentStatuses

// Bounds of the assignment batch operations.
const (
	BulkAssignMax       = 200
	ProcessDefaultLimit = 100
	ProcessMaxLimit     = 1000
	RetryIDsMax         = 1000
)

// TriggerOperation is the metadata.trigger of an assignment made by an
// operation's execution (CONTRACT 10); TriggerBulkAssign of one made by
// BulkAssign. The dispatcher triggers are rules.Trigger*.
const (
	TriggerOperation  = "operation"
	TriggerBulkAssign = "bulk_assign"
)

// ListAssignmentsInput filters a dispatcher's assignments ("" status:
// all).
type ListAssignmentsInput struct {
	Status        string
	Limit, Offset int
}

// ListAssignments is a page of a dispatcher's assignments, newest first.
// The actor needs dispatchers:read.
func (s *Service) ListAssignments(ctx context.Context, actor domain.Actor, dispatcherID uuid.UUID, in ListAssignmentsInput) (Page[Assignment], error) {
	org, err := orgOf(actor, ScopeRead)
	if err != nil {
		return Page[Assignment]{}, err
	}
	if in.Status != "" && !slices.Contains(AssignmentStatuses, in.Status) {
		return Page[Assignment]{}, domain.InvalidField("status", "must be one of "+strings.Join(AssignmentStatuses, ", "))
	}
	if _, err := s.dispatcher(ctx, org, dispatcherID); err != nil {
		return Page[Assignment]{}, err
	}
	list, total, err := store.ListAssignments(ctx, s.store.Pool, org, dispatcherID, in.Status, in.Limit, in.Offset)
	return Page[Assignment]{Items: list, Total: total}, err
}

// AssignmentsOfOrders are the assignments of the organization's orders,
// newest first (a page of orders with include=assignments). The actor
// needs orders:read.
func (s *Service) AssignmentsOfOrders(ctx context.Context, actor domain.Actor, orderIDs []uuid.UUID) ([]Assignment, error) {
	if err := actor.RequireScope("orders:read"); err != nil {
		return nil, err
	}
	return store.AssignmentsOfOrders(ctx, s.store.Pool, actor.OrganizationID, orderIDs)
}

// EvaluateDispatchers runs every active dispatcher of the order's bridge on
// it with trigger manual (whatever their triggerOn) and returns the new
// assignments, started; an order already assigned to a destination is not
// assigned there again. The work is not cut short when ctx is cancelled.
// The actor needs dispatchers:write.
func (s *Service) EvaluateDispatchers(ctx context.Context, actor domain.Actor, orderID uuid.UUID) ([]Assignment, error) {
	org, err := orgOf(actor, ScopeWrite)
	if err != nil {
		return nil, err
	}
	if _, err := store.OrderByID(ctx, s.store.Pool, org, orderID); err != nil {
		return nil, notFound(err, "order")
	}
	return s.hooks.Dispatch(detached(ctx), org, orderID, rules.TriggerManual)
}

// BulkAssignResult counts a bulk assignment.
type BulkAssignResult struct {
	Assigned, Skipped int
}

// BulkAssign assigns 1-200 orders to the dispatcher's destination,
// bypassing its conditions, and starts them; orders already assigned to
// that destination, and ids that are not orders of the organization, are
// skipped. The actor needs dispatchers:write.
func (s *Service) BulkAssign(ctx context.Context, actor domain.Actor, dispatcherID uuid.UUID, orderIDs []uuid.UUID) (BulkAssignResult, error) {
	org, err := orgOf(actor, ScopeWrite)
	if err != nil {
		return BulkAssignResult{}, err
	}
	ids := uniqueIDs(orderIDs)
	if len(ids) < 1 || len(orderIDs) > BulkAssignMax {
		return BulkAssignResult{}, domain.InvalidField("orderIds", fmt.Sprintf("must hold %d-%d ids", 1, BulkAssignMax))
	}
	d, err := s.dispatcher(ctx, org, dispatcherID)
	if err != nil {
		return BulkAssignResult{}, err
	}
	ctx = detached(ctx)
	created, err := store.CreateAssignments(ctx, s.store.Pool, d, ids, map[string]any{"trigger": TriggerBulkAssign})
	if err != nil {
		return BulkAssignResult{}, err
	}
	if err := s.hooks.StartAssignments(ctx, org, created); err != nil {
		s.log.WarnContext(ctx, "start dispatch assignments; they stay pending", "error", err)
	}
	return BulkAssignResult{Assigned: len(created), Skipped: len(ids) - len(created)}, nil
}

// ProcessResult counts a ProcessAssignments call: the pending assignments
// found, the runs queued, and those that could not be started.
type ProcessResult struct {
	Processed, Queued, Errors int
}

// ProcessAssignmentsInput picks pending assignments: of one destination
// bridge (nil: all), at most Limit (1-1000; nil: 100).
type ProcessAssignmentsInput struct {
	BridgeID *uuid.UUID
	Limit    *int
}

// Validate names the input's problems.
func (in ProcessAssignmentsInput) Validate() domain.FieldErrors {
	var v domain.FieldErrors
	if in.Limit != nil && (*in.Limit < 1 || *in.Limit > ProcessMaxLimit) {
		v.Add("limit", fmt.Sprintf("must be between 1 and %d", ProcessMaxLimit))
	}
	return v
}

// ProcessAssignments has the pending assignments processed: the drainers
// (DispatchBatch) of their destination bridges are signalled, which claim
// them oldest first. Processed counts the pending assignments found (at
// most Limit), Queued those whose drainer was signalled. Without a
// workflow starter every one is counted as an error. The actor needs
// dispatchers:write.
func (s *Service) ProcessAssignments(ctx context.Context, actor domain.Actor, in ProcessAssignmentsInput) (ProcessResult, error) {
	org, err := orgOf(actor, ScopeWrite)
	if err != nil {
		return ProcessResult{}, err
	}
	if err := in.Validate().Err(); err != nil {
		return ProcessResult{}, err
	}
	limit := ProcessDefaultLimit
	if in.Limit != nil {
		limit = *in.Limit
	}
	pending, err := store.PendingAssignments(ctx, s.store.Pool, org, in.BridgeID, limit)
	if err != nil {
		return ProcessResult{}, err
	}
	res := ProcessResult{Processed: len(pending), Errors: len(pending)}
	if s.starter == nil || len(pending) == 0 {
		return res, nil
	}
	ctx = detached(ctx)
	if d, ok := s.starter.(rules.DispatchDrainer); ok {
		bridges, err := store.PendingDestinationsOf(ctx, s.store.Pool, org, in.BridgeID)
		if err != nil {
			return ProcessResult{}, err
		}
		if err := d.DrainBridges(ctx, org, bridges); err != nil {
			s.log.WarnContext(ctx, "signal dispatch drainers", "error", err)
			return res, nil
		}
		res.Queued, res.Errors = len(pending), 0
		return res, nil
	}
	ids := make([]uuid.UUID, len(pending))
	for i, a := range pending {
		ids[i] = a.ID
	}
	res.Queued, err = s.starter.StartAssignments(ctx, org, ids)
	res.Errors = len(ids) - res.Queued
	if err != nil {
		s.log.WarnContext(ctx, "start dispatch assignments", "error", err)
	}
	return res, nil
}

// RetryAssignments resets failed assignments to pending (retryCount 0) and
// has them processed again: the ids given (nil: every failed one of the
// organization; at most 1000) and returns how many were reset. One
// assignment retried on its own runs its own DispatchAssignment run
// (dispatch/<id>); more go to their destinations' drainers. The actor
// needs dispatchers:write.
func (s *Service) RetryAssignments(ctx context.Context, actor domain.Actor, ids []uuid.UUID) (int, error) {
	org, err := orgOf(actor, ScopeWrite)
	if err != nil {
		return 0, err
	}
	if len(ids) > RetryIDsMax {
		return 0, domain.InvalidField("assignmentIds", fmt.Sprintf("must hold %d-%d ids", 0, RetryIDsMax))
	}
	if ids != nil {
		ids = uniqueIDs(ids)
	}
	ctx = detached(ctx)
	reset, err := store.ResetFailedAssignments(ctx, s.store.Pool, org, ids)
	if err != nil {
		return 0, err
	}
	if s.starter == nil || len(reset) == 0 {
		return len(reset), nil
	}
	if r, ok := s.starter.(rules.DispatchRetrier); ok && len(ids) == 1 && len(reset) == 1 {
		err = r.StartSingle(ctx, org, reset[0])
	} else {
		_, err = s.starter.StartAssignments(ctx, org, reset)
	}
	if err != nil {
		s.log.WarnContext(ctx, "start dispatch assignments; they stay pending", "error", err)
	}
	return len(reset), nil
}

// DispatchToBridgeInput sends one order to one bridge.
type DispatchToBridgeInput struct {
	OrderID  uuid.UUID
	BridgeID uuid.UUID
	// Trigger is the assignment's metadata.trigger; "" is
	// TriggerOperation for an operation actor, rules.TriggerManual for
	// any other.
	Trigger string
	// Metadata is stored with the assignment (e.g. operationId, itemId);
	// its "trigger" key is Trigger's.
	Metadata map[string]any
}

// DispatchResult is the order's assignment to the bridge; Created is false
// when the order already had one there (made by a dispatcher or an earlier
// call), which is returned as it is, whatever its status: a caller that
// undoes its own work cancels only an assignment it created.
type DispatchResult struct {
	Assignment Assignment
	Created    bool
}

// DispatchToBridge assigns the organization's order to its bridge without
// a dispatcher (a dispatch assignment whose DispatcherID is nil) and starts
// its destination's drainer (DispatchBatch) that pushes it; without a workflow starter, or
// when the start fails, the assignment stays pending for
// ProcessAssignments and the reconciler. It is idempotent: one assignment
// per order and bridge (see DispatchResult). An order or a bridge that is
// not the organization's is NotFound ("order", "bridge"). The work is not
// cut short when ctx is cancelled.
//
// The actor needs dispatchers:write; an operation actor
// (domain.ActorOperation) operations:write, the scope its execution was
// authorized with. Safe to call from an activity: it only writes one row
// and asks Temporal to start a workflow with a stable id
// (rules.DispatchWorkflowID).
func (s *Service) DispatchToBridge(ctx context.Context, actor domain.Actor, in DispatchToBridgeInput) (DispatchResult, error) {
	scope := ScopeWrite
	if actor.Kind == domain.ActorOperation {
		scope = "operations:write"
	}
	org, err := orgOf(actor, scope)
	if err != nil {
		return DispatchResult{}, err
	}
	trigger := in.Trigger
	if trigger == "" {
		trigger = rules.TriggerManual
		if actor.Kind == domain.ActorOperation {
			trigger = TriggerOperation
		}
	}
	md := maps.Clone(in.Metadata)
	if md == nil {
		md = map[string]any{}
	}
	md["trigger"] = trigger
	ctx = detached(ctx)
	if _, err := store.OrderByID(ctx, s.store.Pool, org, in.OrderID); err != nil {
		return DispatchResult{}, notFound(err, "order")
	}
	if _, err := store.BridgeByID(ctx, s.store.Pool, org, in.BridgeID); err != nil {
		return DispatchResult{}, notFound(err, "bridge")
	}
	a, created, err := store.CreateDirectAssignment(ctx, s.store.Pool, org, in.OrderID, in.BridgeID, md)
	if errors.Is(err, store.ErrNotFound) { // deleted between the checks and the insert
		return DispatchResult{}, domain.NotFound("order")
	}
	if err != nil {
		return DispatchResult{}, err
	}
	if created {
		if err := s.hooks.StartAssignments(ctx, org, []Assignment{a}); err != nil {
			s.log.WarnContext(ctx, "start dispatch assignment; it stays pending", "assignment_id", a.ID, "error", err)
		}
	}
	return DispatchResult{Assignment: a, Created: created}, nil
}

// CancelAssignment cancels an assignment of the organization that was not
// pushed: a pending or failed one becomes skipped, with errorMessage
// reason ("" : "cancelled") and metadata.cancelled true; its run, if it
// was started, then does nothing. One already skipped is returned as it is
// (cancelling twice is harmless). One processing or completed (its order
// is being or was pushed) is Conflict; a missing one NotFound. The actor
// needs dispatchers:write (an operation actor operations:write).
func (s *Service) CancelAssignment(ctx context.Context, actor domain.Actor, assignmentID uuid.UUID, reason string) (Assignment, error) {
	scope := ScopeWrite
	if actor.Kind == domain.ActorOperation {
		scope = "operations:write"
	}
	org, err := orgOf(actor, scope)
	if err != nil {
		return Assignment{}, err
	}
	if reason = strings.TrimSpace(reason); reason == "" {
		reason = "cancelled"
	}
	a, err := store.CancelAssignment(detached(ctx), s.store.Pool, org, assignmentID, reason)
	if errors.Is(err, store.ErrAssignmentNotCancellable) {
		return a, domain.Conflict(fmt.Sprintf("the assignment is %s: its order is being or was pushed to the bridge", a.Status))
	}
	return a, notFound(err, "dispatch assignment")
}
