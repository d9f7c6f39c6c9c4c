package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"
)

// mountOrderResync registers POST /orders/{id}/resync, which starts the
// OrderResync workflow.
func (s *Server) mountOrderResync(r chi.Router) {
	r.With(s.scope("orders:write")).Post("/orders/{id}/resync", s.h(s.resyncOrder))
}

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
func (s *Server) resyncOrder(w http.ResponseWriter, r *http.Request) error {
	orderID, err := pathID(r, "id", "order")
	if err != nil {
		return err
	}
	run, err := s.Orders.Resync(r.Context(), actorOf(r), orderID)
	if err != nil {
		return err
	}
	writeData(w, http.StatusAccepted, resyncQueued{
		ID:         orderID.String(),
		Status:     "queued",
		Message:    "Resync queued: the order will be re-fetched from its source bridge",
		WorkflowID: run.WorkflowID,
		RunID:      run.RunID,
	})
	return nil
}
