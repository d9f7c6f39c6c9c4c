package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
)

// Error types of the dispatch activities.
const (
	// ErrTypeAssignmentNotFound: the assignment is gone (its order,
	// dispatcher or destination was deleted).
	ErrTypeAssignmentNotFound = "AssignmentNotFound"
	// ErrTypeCannotAcceptOrders: the destination's platform does not take
	// orders from the service.
	ErrTypeCannotAcceptOrders = "CannotAcceptOrders"
)

// PermanentDispatchErrorTypes are the non-retryable error types of the
// dispatch activities, for retry policies.
var PermanentDispatchErrorTypes = []string{
	ErrTypeAssignmentNotFound, ErrTypeCannotAcceptOrders, ErrTypePlatformPermanent, ErrTypeBridgeUnavailable,
	ErrTypeInvalidInput, ErrTypeTaskNotSupported,
}

// DispatchClaimedElsewhere is BeginDispatch's status for an assignment
// its destination's drainer (DispatchBatch) claimed first: the single run
// leaves it to the drainer.
const DispatchClaimedElsewhere = "claimed"

// DispatchPushTask is the task name of the task execution a push records
// on the destination bridge.
const DispatchPushTask = "push-order"

// DispatchActivities are the activities of the DispatchAssignment workflow.
type DispatchActivities struct {
	Store     *store.Store
	Secrets   *secrets.Box
	Platforms *platforms.Registry
	Logger    *slog.Logger
	// Priority paces the drainer's pages below the work that has
	// priority (nil: ProcessPriority).
	Priority *PriorityGate
}

// DispatchInput names an assignment.
type DispatchInput = rules.DispatchInput

// BeginDispatchResult is the assignment's status after BeginDispatch:
// processing, a final status when it was already finished, or
// DispatchClaimedElsewhere.
type BeginDispatchResult struct {
	Status string `json:"status"`
}

// BeginDispatch moves the assignment from pending to processing.
func (a *DispatchActivities) BeginDispatch(ctx context.Context, in DispatchInput) (BeginDispatchResult, error) {
	as, err := store.BeginAssignment(ctx, a.Store.Pool, in.OrganizationID, in.AssignmentID)
	if errors.Is(err, store.ErrNotFound) {
		return BeginDispatchResult{}, temporal.NewNonRetryableApplicationError("dispatch assignment "+in.AssignmentID.String()+" not found", ErrTypeAssignmentNotFound, nil)
	}
	if err != nil {
		return BeginDispatchResult{}, fmt.Errorf("begin assignment: %w", err)
	}
	if as.Status == store.AssignmentProcessing && as.ClaimedBy != nil && *as.ClaimedBy != store.SingleRunClaimant(as.ID) {
		return BeginDispatchResult{Status: DispatchClaimedElsewhere}, nil
	}
	return BeginDispatchResult{Status: as.Status}, nil
}

// PushDispatchResult is what the destination made of the order; Skipped
// (with SkipReason) when nothing was sent.
type PushDispatchResult struct {
	ExternalID string `json:"externalId"`
	Kind       string `json:"kind"`
	Skipped    bool   `json:"skipped"`
	SkipReason string `json:"skipReason"`
}

// PushDispatch sends the assignment's order to its destination bridge
// through the connector's OrderPusher, keyed by the order (a retry updates
// the order the platform already has, never duplicates it). A cancelled
// order is skipped.
func (a *DispatchActivities) PushDispatch(ctx context.Context, in DispatchInput) (PushDispatchResult, error) {
	as, err := store.AssignmentByID(ctx, a.Store.Pool, in.OrganizationID, in.AssignmentID)
	if errors.Is(err, store.ErrNotFound) {
		return PushDispatchResult{}, temporal.NewNonRetryableApplicationError("dispatch assignment "+in.AssignmentID.String()+" not found", ErrTypeAssignmentNotFound, nil)
	}
	if err != nil {
		return PushDispatchResult{}, fmt.Errorf("read assignment: %w", err)
	}
	order, err := store.OrderByID(ctx, a.Store.Pool, in.OrganizationID, as.OrderID)
	if errors.Is(err, store.ErrNotFound) {
		return PushDispatchResult{}, temporal.NewNonRetryableApplicationError("the order was deleted", ErrTypeAssignmentNotFound, nil)
	}
	if err != nil {
		return PushDispatchResult{}, fmt.Errorf("read order: %w", err)
	}
	if order.Status == "cancelled" {
		return PushDispatchResult{Skipped: true, SkipReason: "the order is cancelled"}, nil
	}
	bt := &BridgeTaskActivities{Store: a.Store, Secrets: a.Secrets, Platforms: a.Platforms}
	b, pb, conn, err := bt.openBridge(ctx, in.OrganizationID, as.DestinationBridgeID.String())
	if err != nil {
		return PushDispatchResult{}, err
	}
	pusher, ok := conn.(platforms.OrderPusher)
	if !ok {
		return PushDispatchResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("the destination bridge %q (%s) cannot accept orders", b.Name, b.Type), ErrTypeCannotAcceptOrders, nil)
	}
	res, err := pusher.PushOrder(ctx, pb, PlatformOrder(order),
		platforms.PushRef{Key: "fos-" + order.ID.String(), Since: as.CreatedAt.Add(-time.Minute)})
	if errors.Is(err, platforms.ErrOrdersNotAccepted) {
		return PushDispatchResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("the destination bridge %q (%s) cannot accept orders", b.Name, b.Type), ErrTypeCannotAcceptOrders, nil)
	}
	if err != nil {
		return PushDispatchResult{}, bt.taskPlatformError(ctx, b, err)
	}
	return PushDispatchResult{ExternalID: res.ExternalID, Kind: res.Kind}, nil
}

// FinishDispatchInput is the outcome to record: Status completed, failed
// or skipped.
type FinishDispatchInput struct {
	OrganizationID uuid.UUID          `json:"organizationId"`
	AssignmentID   uuid.UUID          `json:"assignmentId"`
	WorkflowID     string             `json:"workflowId"`
	Status         string             `json:"status"`
	Error          string             `json:"error"`
	Push           PushDispatchResult `json:"push"`
}

// FinishDispatch records the assignment's outcome once, with a task
// execution of the push on the destination bridge and the order's
// sentToFulfillment / sentToCart.
func (a *DispatchActivities) FinishDispatch(ctx context.Context, in FinishDispatchInput) (bool, error) {
	o := store.AssignmentOutcome{Status: in.Status, ErrorMessage: in.Error, TaskName: DispatchPushTask, WorkflowID: in.WorkflowID,
		Input: map[string]any{"assignmentId": in.AssignmentID}}
	switch in.Status {
	case store.AssignmentCompleted:
		o.Metadata = map[string]any{"externalOrderId": in.Push.ExternalID}
		o.Output = map[string]any{"externalOrderId": in.Push.ExternalID, "kind": in.Push.Kind}
		o.SentTo = in.Push.Kind
	case store.AssignmentSkipped:
		o.ErrorMessage = in.Push.SkipReason
		o.Metadata = map[string]any{"skipReason": in.Push.SkipReason}
		o.TaskName = ""
	}
	ok, err := store.FinishAssignment(ctx, a.Store, in.OrganizationID, in.AssignmentID, o)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("finish assignment: %w", err)
	}
	return ok, nil
}

// PlatformOrder is a stored order in the connectors' shape.
func PlatformOrder(o store.Order) platforms.Order {
	out := platforms.Order{
		ExternalID: o.ExternalID, Status: o.Status, PaymentStatus: o.PaymentStatus, FulfillmentStatus: o.FulfillmentStatus,
		Currency: o.Currency, Tags: o.Tags, OrderedAt: o.OrderedAt, UpdatedAt: o.UpdatedAt,
	}
	if o.OrderNumber != nil {
		out.OrderNumber = *o.OrderNumber
	}
	if o.Note != nil {
		out.Note = *o.Note
	}
	_ = json.Unmarshal(o.Customer, &out.Customer)
	if out.Customer.Email == "" {
		out.Customer.Email = o.CustomerEmail
	}
	if out.Customer.FirstName == "" && out.Customer.LastName == "" {
		out.Customer.FirstName = o.CustomerName
	}
	if len(o.ShippingAddress) > 0 && string(o.ShippingAddress) != "null" {
		out.ShippingAddress = &platforms.Address{}
		_ = json.Unmarshal(o.ShippingAddress, out.ShippingAddress)
	}
	if len(o.BillingAddress) > 0 && string(o.BillingAddress) != "null" {
		out.BillingAddress = &platforms.Address{}
		_ = json.Unmarshal(o.BillingAddress, out.BillingAddress)
	}
	_ = json.Unmarshal(o.LineItems, &out.LineItems)
	_ = json.Unmarshal(o.Totals, &out.Totals)
	if out.Totals.Total == 0 {
		out.Totals.Total = o.Total
	}
	return out
}

// DispatchStartBound is how long an assignment may stay pending or
// processing before the reconciler asks Temporal about its run.
const DispatchStartBound = 5 * time.Minute

// dispatchKind: an assignment pending or processing. A pending one, or
// one a drainer claimed, waits on its destination's drainer
// (dispatch-batch/<bridgeId>): when no drainer runs it is signalled with
// start (safe: it only claims what is pending or whose lease ran out). One
// a single DispatchAssignment run claimed waits on that run
// (dispatch/<id>): a missing run is started again (the push is keyed by
// the order); a closed run that left the row waiting (terminated in the
// Temporal UI) fails it with the reason, for retry.
func (a *MaintenanceActivities) dispatchKind() WaitingKind {
	// The rows of the last scan, by id: which workflow each waits on.
	rows := map[uuid.UUID]store.StaleAssignment{}
	drained := func(row store.WaitingRow) (uuid.UUID, bool) {
		r, ok := rows[row.ID]
		if !ok {
			return uuid.Nil, false
		}
		single := r.Status == store.AssignmentProcessing && (r.ClaimedBy == nil || *r.ClaimedBy == store.SingleRunClaimant(r.ID))
		return r.DestinationBridgeID, !single
	}
	k := WaitingKind{
		Name:  "dispatch assignment",
		Table: "dispatch_assignments",
		Stale: func(ctx context.Context, db store.DBTX, cutoff time.Time, limit int) ([]store.WaitingRow, error) {
			list, err := store.StaleAssignments(ctx, db, cutoff, limit)
			out := make([]store.WaitingRow, len(list))
			for i, r := range list {
				rows[r.ID] = r
				out[i] = r.WaitingRow
			}
			return out, err
		},
		Bound: DispatchStartBound,
		WorkflowID: func(row store.WaitingRow) string {
			if bridge, ok := drained(row); ok {
				return rules.DispatchBatchWorkflowID(bridge)
			}
			return rules.DispatchWorkflowID(row.ID)
		},
		Fail: func(ctx context.Context, row store.WaitingRow, reason string) (bool, error) {
			if bridge, ok := drained(row); ok {
				// The drainer ended while the row waits: run it again.
				if a.DrainDispatch == nil {
					return false, nil
				}
				return false, a.DrainDispatch(ctx, row.OrganizationID, bridge)
			}
			ok, err := store.FinishAssignment(ctx, a.Store, row.OrganizationID, row.ID, store.AssignmentOutcome{
				Status: store.AssignmentFailed, ErrorMessage: "the dispatch did not finish: " + reason})
			if errors.Is(err, store.ErrNotFound) {
				return false, nil
			}
			return ok, err
		},
	}
	k.Restart = func(ctx context.Context, row store.WaitingRow) error {
		if bridge, ok := drained(row); ok {
			if a.DrainDispatch == nil {
				return errors.New("no dispatch drainer configured")
			}
			return a.DrainDispatch(ctx, row.OrganizationID, bridge)
		}
		if a.StartDispatch == nil {
			_, err := store.FinishAssignment(ctx, a.Store, row.OrganizationID, row.ID, store.AssignmentOutcome{
				Status: store.AssignmentFailed, ErrorMessage: "the dispatch did not finish: the workflow never started"})
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			return err
		}
		return a.StartDispatch(ctx, row.OrganizationID, row.ID)
	}
	return k
}
