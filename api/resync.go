package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"go.temporal.io/api/serviceerror"

	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/worker"
	"github.com/fos-dev/fos/workflows"
)

// mountOrderResync registers POST /orders/{id}/resync, which starts the
// OrderResync workflow.
func (s *Server) mountOrderResync(r chi.Router) {
	r.With(s.scope("orders:write")).Post("/orders/{id}/resync", s.resyncOrder)
}

// startWorkflowTimeout bounds a workflow start, so that an unreachable
// Temporal answers 503 instead of holding the request.
const startWorkflowTimeout = 10 * time.Second

// resyncQueued is the answer of POST /orders/{id}/resync. workflowId and
// runId are extensions: the run to look for in the Temporal UI.
type resyncQueued struct {
	ID         string `json:"id"`
	Status     string `json:"status"`
	Message    string `json:"message"`
	WorkflowID string `json:"workflowId"`
	RunID      string `json:"runId"`
}

// resyncOrder starts (or joins, while one is running) the order's
// OrderResync workflow and answers 202 at once; the workflow records a
// "sync" or "sync_failed" order activity when it is done.
func (s *Server) resyncOrder(w http.ResponseWriter, r *http.Request) {
	orderID, err := pathID(r, "id", "order")
	if err != nil {
		s.respondError(w, r, err)
		return
	}
	p := mustPrincipal(r)
	src, err := store.GetOrderSyncSource(r.Context(), s.store.Pool, p.OrganizationID, orderID)
	if errors.Is(err, store.ErrNotFound) {
		s.respondError(w, r, errNotFound("order"))
		return
	}
	if err != nil {
		s.respondError(w, r, err)
		return
	}
	if !src.HasBridge() {
		s.respondError(w, r, errConflict("order has no source bridge"))
		return
	}
	if s.temporal == nil {
		s.respondError(w, r, errTemporalUnavailable())
		return
	}

	in := workflows.OrderResyncInput{
		OrganizationID: p.OrganizationID.String(),
		OrderID:        orderID.String(),
		RequestedBy:    workflows.Actor{Type: p.Kind, ID: p.ActorID().String(), Name: p.Name},
	}
	opts := worker.Start{ID: workflows.OrderResyncWorkflowID(in.OrderID), TaskQueue: s.taskQueue, OrganizationID: in.OrganizationID,
		Summary:  fmt.Sprintf("Resync of order %s from bridge %q (%s)", src.ExternalID, deref(src.BridgeName), deref(src.BridgeType)),
		BridgeID: src.BridgeID.String(),
		Memo:     map[string]any{"orderId": in.OrderID, "order": src.ExternalID, "bridgeId": src.BridgeID.String(), "bridge": deref(src.BridgeName)}}.Options()
	// Nothing is written before the start, so a start whose outcome stays
	// unknown is a 503 like any outage; a repeat joins the run if it exists.
	run, err := s.startStableWorkflow(r, opts, time.Now(), workflows.OrderResync, in)
	if err != nil {
		if isTemporalUnavailable(r.Context(), err) {
			s.log.WarnContext(r.Context(), "start workflow", append(logAttrs(r), "workflow_id", opts.ID, "error", err.Error())...)
			err = errTemporalUnavailable()
		}
		s.respondError(w, r, err)
		return
	}
	writeData(w, http.StatusAccepted, resyncQueued{
		ID:         in.OrderID,
		Status:     "queued",
		Message:    "Resync queued: the order will be re-fetched from its source bridge",
		WorkflowID: run.GetID(),
		RunID:      run.GetRunID(),
	})
}

func errTemporalUnavailable() *Error {
	return &Error{Status: http.StatusServiceUnavailable, Code: "temporal_unavailable",
		Message: "the workflow service (Temporal) is unavailable; try again later"}
}

// isTemporalUnavailable tells a Temporal that cannot be reached (or did not
// answer in time) from a refused request.
func isTemporalUnavailable(reqCtx context.Context, err error) bool {
	var (
		unavailable *serviceerror.Unavailable
		deadline    *serviceerror.DeadlineExceeded
		nsUnavail   *serviceerror.NamespaceUnavailable
		exhausted   *serviceerror.ResourceExhausted
	)
	switch {
	case errors.As(err, &unavailable), errors.As(err, &deadline), errors.As(err, &nsUnavail), errors.As(err, &exhausted):
		return true
	case errors.Is(err, context.DeadlineExceeded) && reqCtx.Err() == nil:
		return true
	}
	return false
}
