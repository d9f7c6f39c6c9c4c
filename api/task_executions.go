package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"go.temporal.io/sdk/client"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/worker"
	"github.com/fos-dev/fos/workflows"
)

// mountTaskExecutions registers the bridge task run endpoints (extensions,
// CONTRACT 5): run a task, list a bridge's executions, read one.
func (s *Server) mountTaskExecutions(r chi.Router) {
	read := r.With(s.scope("bridges:read"))
	write := r.With(s.scope("bridges:write"))
	read.Get("/task-executions/{id}", s.h(s.getTaskExecution))
	read.Get("/bridges/{id}/executions", s.h(s.listTaskExecutions))
	write.Post("/bridges/{id}/tasks/{taskName}/run", s.h(s.runBridgeTaskHandler))
}

// bridgeTaskQueue is the task queue BridgeTask runs on: the bulk queue
// (syncs page through thousands of orders; interactive work must not wait
// behind them).
func (s *Server) bridgeTaskQueue() string { return s.bulkTaskQueue }

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

func toTaskExecutionJSON(e store.TaskExecution) taskExecutionJSON {
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
	return writeByID(s, w, r, "task execution", store.TaskExecutionByID, toTaskExecutionJSON)
}

func (s *Server) listTaskExecutions(w http.ResponseWriter, r *http.Request) error {
	b, err := s.bridgeFromPath(r)
	if err != nil {
		return err
	}
	p, err := parsePage(r, 20, 100)
	if err != nil {
		return err
	}
	list, total, err := store.ListTaskExecutions(r.Context(), s.store.Pool, b.OrganizationID, b.ID, p.Limit, p.Offset())
	if err != nil {
		return err
	}
	writeList(w, mapSlice(list, toTaskExecutionJSON), p, total)
	return nil
}

// runBridgeTaskHandler queues a task execution and starts its BridgeTask
// workflow: 202 with the queued execution. Body (optional): {input: {…}}.
func (s *Server) runBridgeTaskHandler(w http.ResponseWriter, r *http.Request) error {
	b, err := s.bridgeFromPath(r)
	if err != nil {
		return err
	}
	var body struct {
		Input map[string]any `json:"input"`
	}
	if err := decodeOptionalJSON(r, &body); err != nil {
		return err
	}
	e, _, err := s.runBridgeTask(r, b, chi.URLParam(r, "taskName"), "taskName", body.Input)
	if err != nil {
		return err
	}
	writeData(w, http.StatusAccepted, toTaskExecutionJSON(e))
	return nil
}

// runBridgeTask checks that the bridge can run the task now, records a
// queued execution and starts its workflow (startStableWorkflow). The row
// is inserted first; a start whose outcome stays unknown leaves it queued
// (the run may exist; the reconciler settles it), while a start that
// certainly did not run marks it failed. field names the request field of
// taskName in a 400.
func (s *Server) runBridgeTask(r *http.Request, b store.Bridge, taskName, field string, input map[string]any) (store.TaskExecution, client.WorkflowRun, error) {
	def, ok := platforms.TaskByName(b.Type, taskName)
	if !ok {
		return store.TaskExecution{}, nil, errValidation(FieldError{Field: field, Message: "is not a task of bridge type " + b.Type + ": " + taskName})
	}
	if def.Category == platforms.TaskCategoryWebhook {
		return store.TaskExecution{}, nil, errValidation(FieldError{Field: field, Message: taskName + " runs on inbound webhooks only"})
	}
	if b.Status != store.BridgeActive {
		return store.TaskExecution{}, nil, errConflict("bridge is " + b.Status + "; only an active bridge runs tasks")
	}
	if s.temporal == nil {
		return store.TaskExecution{}, nil, errTemporalUnavailable()
	}
	if input == nil {
		input = map[string]any{}
	}
	raw, err := json.Marshal(input)
	if err != nil {
		return store.TaskExecution{}, nil, errValidation(FieldError{Field: "input", Message: "must be a JSON object"})
	}
	p := mustPrincipal(r)
	id := uuid.New()
	wfID := workflows.BridgeTaskWorkflowID(id.String())
	e, err := store.CreateTaskExecution(r.Context(), s.store.Pool, store.TaskExecution{
		ID: id, OrganizationID: p.OrganizationID, BridgeID: b.ID, TaskName: taskName, Input: raw, WorkflowID: wfID,
	})
	if errors.Is(err, store.ErrConflict) {
		return store.TaskExecution{}, nil, errConflict("a " + taskName + " run of this bridge is already queued or running")
	}
	if err != nil {
		return store.TaskExecution{}, nil, notFoundAs(err, "bridge")
	}
	in := workflows.BridgeTaskInput{OrganizationID: p.OrganizationID.String(), TaskExecutionID: id.String(), BridgeID: b.ID.String(), TaskName: taskName}
	opts := worker.Start{ID: wfID, TaskQueue: s.bridgeTaskQueue(), OrganizationID: in.OrganizationID,
		Summary:  fmt.Sprintf("%s of bridge %q (%s)", taskName, b.Name, b.Type),
		BridgeID: in.BridgeID, TaskName: taskName,
		Memo: map[string]any{"taskExecutionId": in.TaskExecutionID, "bridgeId": in.BridgeID, "bridge": b.Name, "bridgeType": b.Type, "taskName": taskName}}.Options()
	run, err := s.startStableWorkflow(r, opts, e.CreatedAt, workflows.BridgeTask, in)
	if err != nil {
		s.log.WarnContext(r.Context(), "start workflow", append(logAttrs(r), "workflow_id", wfID, "error", err.Error())...)
		if !isStartUnknown(err) {
			// Nothing runs: the execution fails, kept as a record.
			if _, ferr := store.FinishTaskExecution(context.WithoutCancel(r.Context()), s.store.Pool, p.OrganizationID, id, nil,
				"the task could not be started"); ferr != nil {
				s.log.WarnContext(r.Context(), "fail task execution", append(logAttrs(r), "task_execution_id", id.String(), "error", ferr.Error())...)
			}
		}
		if isStartUnknown(err) || isTemporalUnavailable(r.Context(), err) {
			return store.TaskExecution{}, nil, errTemporalUnavailable()
		}
		return store.TaskExecution{}, nil, err
	}
	return e, run, nil
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
	orgID := mustPrincipal(r).OrganizationID
	b, err := store.BridgeByID(r.Context(), s.store.Pool, orgID, id)
	if err != nil {
		return notFoundAs(err, "bridge")
	}
	if _, ok := platforms.TaskByName(b.Type, platforms.TaskWarehouseSync); !ok {
		return errValidation(FieldError{Field: "bridgeId", Message: "bridge type " + b.Type + " has no warehouse sync"})
	}
	e, run, err := s.runBridgeTask(r, b, platforms.TaskWarehouseSync, "bridgeId", nil)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), locationSyncWait)
	defer cancel()
	_ = run.Get(ctx, nil) // the outcome is read from the execution row
	if r.Context().Err() != nil {
		return r.Context().Err()
	}
	e, err = store.TaskExecutionByID(r.Context(), s.store.Pool, orgID, e.ID)
	if err != nil {
		return err
	}
	switch e.Status {
	case store.TaskFailed:
		msg := "the warehouse sync failed"
		if e.Error != nil {
			msg += ": " + *e.Error
		}
		return &Error{Status: http.StatusBadGateway, Code: "platform_error", Message: msg}
	case store.TaskCompleted:
	default:
		writeData(w, http.StatusAccepted, toTaskExecutionJSON(e))
		return nil
	}
	var out struct {
		LocationIDs []uuid.UUID `json:"locationIds"`
	}
	if err := json.Unmarshal(e.Output, &out); err != nil {
		return err
	}
	locs, err := store.LocationsByIDs(r.Context(), s.store.Pool, orgID, out.LocationIDs)
	if err != nil {
		return err
	}
	list := make([]locationJSON, 0, len(locs))
	for _, l := range locs {
		list = append(list, toLocationJSON(l))
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": list, "taskExecution": toTaskExecutionJSON(e)})
	return nil
}
