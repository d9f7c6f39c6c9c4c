package e2e

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/routing"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/worker"
)

// An operation's execution dispatches an order no dispatcher matches
// straight to a bridge (routing.DispatchToBridge, CONTRACT 10): the
// DispatchAssignment workflow pushes it to the hub, the order is marked
// sent, and the assignment (no dispatcher, trigger operation) is on the
// order. Dispatching it again changes nothing; cancelling it now that it
// was pushed is refused.
func TestDispatchToBridgeEndToEnd(t *testing.T) {
	s := start(t)
	ctx := t.Context()
	key, shop, hub, _, _ := s.dispatchAccount()
	small := data(s.mustCall(201, key, "POST", "/api/v1/orders", dispatchOrderBody(shop, "D-OP", 20)))["id"].(string)
	var org uuid.UUID
	require.NoError(t, s.store.Pool.QueryRow(ctx, `SELECT organization_id FROM orders WHERE id = $1`, small).Scan(&org))

	svc := routing.New(routing.Deps{Store: s.store,
		Starter: rules.TemporalDispatch{Client: s.temporal, TaskQueue: bulkTaskQueue, Options: worker.StartOptions}})
	op := domain.Actor{Kind: domain.ActorOperation, ID: uuid.New(), OrganizationID: org, Scoped: true, Scopes: []string{"operations:write"}}
	in := routing.DispatchToBridgeInput{OrderID: uuid.MustParse(small), BridgeID: uuid.MustParse(hub), Metadata: map[string]any{"operationId": op.ID.String()}}
	res, err := svc.DispatchToBridge(ctx, op, in)
	require.NoError(t, err)
	require.True(t, res.Created)

	var order map[string]any
	deadline := time.Now().Add(dispatchWait)
	for {
		order = data(s.mustCall(200, key, "GET", "/api/v1/orders/"+small+"?include=dispatch_assignments", nil))
		as := order["dispatchAssignments"].([]any)
		require.Len(t, as, 1)
		a := as[0].(map[string]any)
		if a["status"] == "completed" {
			require.Nil(t, a["dispatcherId"])
			md := a["metadata"].(map[string]any)
			require.Equal(t, "operation", md["trigger"])
			require.Equal(t, op.ID.String(), md["operationId"])
			require.NotEmpty(t, md["externalOrderId"])
			break
		}
		require.Contains(t, []any{"pending", "processing"}, a["status"], "%v", a)
		require.False(t, time.Now().After(deadline), "the assignment is still %v after %s", a["status"], dispatchWait)
		time.Sleep(100 * time.Millisecond)
	}
	require.NotNil(t, order["sentToFulfillment"])

	again, err := svc.DispatchToBridge(ctx, op, in)
	require.NoError(t, err)
	require.False(t, again.Created)
	require.Equal(t, res.Assignment.ID, again.Assignment.ID)
	_, err = svc.CancelAssignment(ctx, op, res.Assignment.ID, "undo")
	require.ErrorIs(t, err, domain.ErrConflict)
}
