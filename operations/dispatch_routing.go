package operations

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/routing"
)

// RoutingDispatches is the Dispatches port over the routing Service: an
// item's order is assigned to the bridge directly (metadata.trigger
// operation, metadata.operationItemId the item) and pushed by its
// DispatchAssignment run.
type RoutingDispatches struct{ Routing *routing.Service }

var _ Dispatches = RoutingDispatches{}

// itemKey is the metadata key naming the item that made an assignment.
const itemKey = "operationItemId"

// DispatchToBridge implements Dispatches. The routing Service keeps one
// assignment per order and bridge: one the item did not make (another
// dispatch of the same order to the same bridge) is answered as uuid.Nil,
// so the item's undo never cancels a dispatch that was not its own; one
// the item made on an earlier attempt of its batch is its own again.
func (d RoutingDispatches) DispatchToBridge(ctx context.Context, actor domain.Actor, in DispatchInput) (uuid.UUID, error) {
	res, err := d.Routing.DispatchToBridge(ctx, actor, routing.DispatchToBridgeInput{
		OrderID: in.OrderID, BridgeID: in.BridgeID, Metadata: map[string]any{itemKey: in.Key.String()},
	})
	if err != nil {
		return uuid.Nil, err
	}
	if res.Created || madeBy(res.Assignment.Metadata, in.Key) {
		return res.Assignment.ID, nil
	}
	return uuid.Nil, nil
}

func madeBy(metadata json.RawMessage, key uuid.UUID) bool {
	var m map[string]any
	if json.Unmarshal(metadata, &m) != nil {
		return false
	}
	s, _ := m[itemKey].(string)
	return s == key.String()
}

// CancelAssignment implements Dispatches: a pending or failed assignment
// is cancelled (skipped); one being or already pushed is reported pushed.
func (d RoutingDispatches) CancelAssignment(ctx context.Context, actor domain.Actor, assignmentID uuid.UUID) (bool, error) {
	_, err := d.Routing.CancelAssignment(ctx, actor, assignmentID, "the operation was undone")
	if domain.KindOf(err) == domain.KindConflict {
		return true, nil
	}
	return false, err
}
