package orders

import (
	"context"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/store"
)

// ResyncRun is a resync to start: the OrderResync run of one order,
// requested by an actor.
type ResyncRun struct {
	OrganizationID uuid.UUID
	OrderID        uuid.UUID
	RequestedBy    domain.Actor
}

// RunRef names a workflow run (to look for in the Temporal UI).
type RunRef struct {
	WorkflowID string
	RunID      string
}

// Resyncs starts resyncs: the Temporal adapter (worker.TemporalOrders)
// starts, or joins while one runs, the order's OrderResync run. A start
// Temporal did not take is domain.WorkflowsUnavailable.
type Resyncs interface {
	StartResync(ctx context.Context, in ResyncRun) (RunRef, error)
}

// Resync queues a re-fetch of the order from its source bridge: the
// order's OrderResync run, which records a "sync" or "sync_failed"
// activity when it is done. A repeat while one runs joins it. An order
// without a source bridge (or whose bridge is gone) is a conflict. The
// actor needs orders:write.
func (s *Service) Resync(ctx context.Context, actor domain.Actor, id uuid.UUID) (RunRef, error) {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return RunRef{}, err
	}
	src, err := store.GetOrderSyncSource(ctx, s.store.Pool, actor.OrganizationID, id)
	if err != nil {
		return RunRef{}, notFound(err)
	}
	if !src.HasBridge() {
		return RunRef{}, domain.Conflict("order has no source bridge")
	}
	if s.resyncs == nil {
		return RunRef{}, domain.WorkflowsUnavailable(nil)
	}
	// Nothing is written before the start, so a start whose outcome stays
	// unknown is unavailable like any outage; a repeat joins the run.
	return s.resyncs.StartResync(ctx, ResyncRun{OrganizationID: actor.OrganizationID, OrderID: id, RequestedBy: actor})
}
