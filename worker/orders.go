package worker

import (
	"context"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/fos-dev/fos/orders"
	"github.com/fos-dev/fos/workflows"
)

// TemporalOrders is the Temporal adapter of the orders domain's port: it
// starts (or joins) the OrderResync runs the orders Service asks for, on
// TaskQueue.
type TemporalOrders struct {
	Client    client.Client
	TaskQueue string
	Log       *slog.Logger
}

// StartResync implements orders.Resyncs: the OrderResync run
// order-resync/<orderId>. A start whose outcome stays unknown, or a
// Temporal that cannot be reached, is domain.WorkflowsUnavailable.
func (t TemporalOrders) StartResync(ctx context.Context, in orders.ResyncRun) (orders.RunRef, error) {
	wfIn := workflows.OrderResyncInput{
		OrganizationID: in.OrganizationID.String(),
		OrderID:        in.OrderID.String(),
		RequestedBy:    workflows.Actor{Type: string(in.RequestedBy.Kind), ID: in.RequestedBy.ID.String(), Name: in.RequestedBy.Name},
	}
	opts := StartOptions(workflows.OrderResyncWorkflowID(wfIn.OrderID), t.TaskQueue, wfIn.OrganizationID, map[string]any{"orderId": wfIn.OrderID})
	st := Starter{Client: t.Client, Log: t.Log}
	run, err := st.StartStable(ctx, opts, time.Now(), workflows.OrderResync, wfIn)
	if err != nil {
		st.log().WarnContext(ctx, "start workflow", "workflow_id", opts.ID, "error", err.Error())
		return orders.RunRef{}, Unavailable(ctx, err)
	}
	return orders.RunRef{WorkflowID: run.GetID(), RunID: run.GetRunID()}, nil
}
