package api

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/bridgetasks"
)

// mountTaskExecutions registers the bridge task run endpoints (extensions,
// CONTRACT 5): run a task, list a bridge's executions, read one
// (bridgetasks.Service).
func (s *Server) mountTaskExecutions(r chi.Router) {
	read := r.With(s.scope("bridges:read"))
	write := r.With(s.scope("bridges:write"))
	read.Get("/task-executions/{id}", s.h(s.getTaskExecution))
	read.Get("/bridges/{id}/executions", s.h(s.listTaskExecutions))
	write.Post("/bridges/{id}/tasks/{taskName}/run", s.h(s.runBridgeTaskHandler))
}

// taskExecutionJSON is the task execution resource (camelCase); every
// field present.
type taskExecutionJSON struct {
	ID             uuid.UUID       `json:"id"`
	OrganizationID uuid.UUID       `json:"organizationId"`
	BridgeID       uuid.UUID       `json:"bridgeId"`
	TaskName       string          `json:"taskName"`
	Status         string          `json:"status"`
	Input          json.RawMessage `json:"input"`
	Output         json.RawMessage `json:"output"`
	Error          *string         `json:"error"`
	WorkflowID     string          `json:"workflowId"`
	CreatedAt      time.Time       `json:"createdAt"`
	StartedAt      *time.Time      `json:"startedAt"`
	FinishedAt     *time.Time      `json:"finishedAt"`
}

func toTaskExecutionJSON(e bridgetasks.Execution) taskExecutionJSON {
	out := taskExecutionJSON{
		ID: e.ID, OrganizationID: e.OrganizationID, BridgeID: e.BridgeID, TaskName: e.TaskName, Status: e.Status,
		Input: e.Input, Output: e.Output, Error: e.Error, WorkflowID: e.WorkflowID,
		CreatedAt: e.CreatedAt, StartedAt: e.StartedAt, FinishedAt: e.FinishedAt,
	}
	if out.Output == nil {
		out.Output = json.RawMessage("null")
	}
	return out
}

func (s *Server) getTaskExecution(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "task execution")
	if err != nil {
		return err
	}
	e, err := s.BridgeTasks.Execution(r.Context(), actorOf(r), id)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toTaskExecutionJSON(e))
	return nil
}

func (s *Server) listTaskExecutions(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "bridge")
	if err != nil {
		return err
	}
	// The bridge is found before the page is checked.
	if _, err := s.BridgeTasks.Bridge(r.Context(), actorOf(r), id); err != nil {
		return err
	}
	p, err := parsePage(r, 20, 100)
	if err != nil {
		return err
	}
	page, err := s.BridgeTasks.Executions(r.Context(), actorOf(r), id, p.Limit, p.Offset())
	if err != nil {
		return err
	}
	writeList(w, mapSlice(page.Items, toTaskExecutionJSON), p, page.Total)
	return nil
}

// runBridgeTaskHandler queues a task execution and starts its BridgeTask
// workflow: 202 with the queued execution. Body (optional): {input: {…}}.
func (s *Server) runBridgeTaskHandler(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "bridge")
	if err != nil {
		return err
	}
	// The bridge is found before the body is read.
	if _, err := s.BridgeTasks.Bridge(r.Context(), actorOf(r), id); err != nil {
		return err
	}
	var body struct {
		Input map[string]any `json:"input"`
	}
	if err := decodeOptionalJSON(r, &body); err != nil {
		return err
	}
	e, err := s.BridgeTasks.RunTask(r.Context(), actorOf(r), id, bridgetasks.RunInput{
		TaskName: chi.URLParam(r, "taskName"), Field: "taskName", Input: body.Input,
	})
	if err != nil {
		return err
	}
	writeData(w, http.StatusAccepted, toTaskExecutionJSON(e))
	return nil
}

// locationSyncWait bounds how long POST /locations/sync/:bridgeId waits for
// the warehouse sync before it answers 202 with the execution.
const locationSyncWait = 30 * time.Second

// syncLocations runs the bridge's warehouse-sync task and answers, once it
// is done, with the locations it upserted: 200 {data: [location],
// taskExecution}. A sync still running after locationSyncWait answers 202
// {data: execution}; a failed one 502 platform_error with the reason.
func (s *Server) syncLocations(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "bridgeId", "bridge")
	if err != nil {
		return err
	}
	res, err := s.BridgeTasks.SyncLocations(r.Context(), actorOf(r), id, locationSyncWait)
	if err != nil {
		return err
	}
	if res.Execution.Status != bridgetasks.StatusCompleted {
		writeData(w, http.StatusAccepted, toTaskExecutionJSON(res.Execution))
		return nil
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": mapSlice(res.Locations, toLocationJSON), "taskExecution": toTaskExecutionJSON(res.Execution)})
	return nil
}
