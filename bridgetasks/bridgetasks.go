// Package bridgetasks holds the bridge tasks domain: a bridge's task runs
// (order syncs, warehouse syncs, fulfillment pushes; CONTRACT 5), each a
// task execution row and its BridgeTask workflow on the bulk task queue,
// started through the Runs port (its Temporal adapter is
// worker.TemporalBridgeTasks). The API's run endpoint, the location sync
// and a schedule's manual trigger all start runs through the one Service.
package bridgetasks

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
)

// Scopes of bridges and their tasks (Part 2).
const (
	ScopeRead  = "bridges:read"
	ScopeWrite = "bridges:write"
)

// The domain's model (store rows).
type (
	Execution = store.TaskExecution
	Bridge    = store.Bridge
)

// StatusActive is the status of a bridge that runs tasks and takes
// webhooks.
const StatusActive = store.BridgeActive

// Execution statuses.
const (
	StatusCompleted = store.TaskCompleted
	StatusFailed    = store.TaskFailed
)

// Run is an execution's workflow to start; ScheduleID is set for a run a
// schedule triggered.
type Run struct {
	Execution  Execution
	ScheduleID *uuid.UUID
	// BridgeName and BridgeType name the bridge to an operator (the run's
	// summary); empty when the caller did not load the bridge.
	BridgeName, BridgeType string
}

// Runs runs the executions' workflows. Start's error is a domain error:
// unavailable and domain.ErrRunMayExist when the run may exist; otherwise
// nothing runs.
type Runs interface {
	// WorkflowID is an execution's stable workflow id.
	WorkflowID(executionID uuid.UUID) string
	// Start starts the run; wait waits until it closes or ctx ends.
	Start(ctx context.Context, in Run) (wait func(ctx context.Context) error, err error)
}

// Deps are the Service's dependencies.
type Deps struct {
	Store  *store.Store
	Logger *slog.Logger
	// Runs runs the workflows; nil: a run answers that workflows are
	// unavailable.
	Runs Runs
	// Schedules keeps the Temporal Schedules of schedules; nil: a change
	// of a schedule answers that workflows are unavailable.
	Schedules Schedules
	// Secrets seals and opens bridge credentials.
	Secrets *secrets.Box
	// Platforms are the bridge types' connectors: a config is checked
	// against its connector's rules, webhooks are registered through it
	// (nil: not checked; webhooks cannot be registered).
	Platforms *platforms.Registry
	// AllowPrivateURLs accepts tenant URLs naming loopback, private,
	// link-local or metadata addresses (fos dev).
	AllowPrivateURLs bool
	// BaseURL is the service's public base URL (a bridge's inbound
	// webhook URL).
	BaseURL string
	// TenantMessage is a platform failure as a tenant may read it
	// (activities.TenantMessage; nil: a fixed sentence).
	TenantMessage func(error) string
}

// Service is the bridge tasks domain's operations.
type Service struct {
	store     *store.Store
	log       *slog.Logger
	runs      Runs
	schedules Schedules
	secrets   *secrets.Box
	platforms *platforms.Registry
	// allowPrivateURLs: see Deps.AllowPrivateURLs.
	allowPrivateURLs bool
	baseURL          string
	tenantMessage    func(error) string
	// relay wakes the worker's relay after inbound deliveries (one per
	// Service).
	relay *relayWaker
}

// New builds the Service.
func New(d Deps) *Service {
	log := d.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Service{store: d.Store, log: log, runs: d.Runs, schedules: d.Schedules, secrets: d.Secrets,
		platforms: d.Platforms, allowPrivateURLs: d.AllowPrivateURLs, baseURL: d.BaseURL,
		tenantMessage: d.TenantMessage, relay: &relayWaker{store: d.Store}}
}

// Bridge is one bridge of the organization. The actor needs bridges:read
// or bridges:write.
func (s *Service) Bridge(ctx context.Context, actor domain.Actor, id uuid.UUID) (Bridge, error) {
	if !actor.HasScope(ScopeWrite) {
		if err := actor.RequireScope(ScopeRead); err != nil {
			return Bridge{}, err
		}
	}
	return s.bridge(ctx, actor, id)
}

// bridge loads the organization's bridge (the caller checked the scope).
func (s *Service) bridge(ctx context.Context, actor domain.Actor, id uuid.UUID) (Bridge, error) {
	b, err := store.BridgeByID(ctx, s.store.Pool, actor.OrganizationID, id)
	return b, notFound(err, "bridge")
}

// Execution is one execution of the organization. The actor needs
// bridges:read.
func (s *Service) Execution(ctx context.Context, actor domain.Actor, id uuid.UUID) (Execution, error) {
	if err := actor.RequireScope(ScopeRead); err != nil {
		return Execution{}, err
	}
	e, err := store.TaskExecutionByID(ctx, s.store.Pool, actor.OrganizationID, id)
	return e, notFound(err, "task execution")
}

// Page is one page of executions and the number of all.
type Page struct {
	Items []Execution
	Total int
}

// Executions lists a bridge's executions, newest first. The actor needs
// bridges:read.
func (s *Service) Executions(ctx context.Context, actor domain.Actor, bridgeID uuid.UUID, limit, offset int) (Page, error) {
	b, err := s.Bridge(ctx, actor, bridgeID)
	if err != nil {
		return Page{}, err
	}
	list, total, err := store.ListTaskExecutions(ctx, s.store.Pool, b.OrganizationID, b.ID, limit, offset)
	return Page{Items: list, Total: total}, err
}

// RunInput is a task run: Field names the request field of TaskName in
// a refusal ("taskName"); Input is the task's input (nil: {}).
type RunInput struct {
	TaskName string
	Field    string
	Input    map[string]any
}

// RunTask checks that the bridge can run the task now (a task of its
// type, not a webhook task, the bridge active, no run of it queued or
// running), records a queued execution and starts its workflow. The row is
// inserted first; a start whose outcome stays unknown leaves it queued
// (the run may exist; the reconciler settles it), while a start that
// certainly did not run marks it failed. The actor needs bridges:write.
func (s *Service) RunTask(ctx context.Context, actor domain.Actor, bridgeID uuid.UUID, in RunInput) (Execution, error) {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return Execution{}, err
	}
	b, err := s.bridge(ctx, actor, bridgeID)
	if err != nil {
		return Execution{}, err
	}
	e, _, err := s.runTask(ctx, actor, b, in)
	return e, err
}

// runTask is RunTask for a loaded bridge; wait waits for the run.
func (s *Service) runTask(ctx context.Context, actor domain.Actor, b Bridge, in RunInput) (e Execution, wait func(context.Context) error, err error) {
	def, ok := platforms.TaskByName(b.Type, in.TaskName)
	if !ok {
		return Execution{}, nil, domain.InvalidField(in.Field, "is not a task of bridge type "+b.Type+": "+in.TaskName)
	}
	if def.Category == platforms.TaskCategoryWebhook {
		return Execution{}, nil, domain.InvalidField(in.Field, in.TaskName+" runs on inbound webhooks only")
	}
	if b.Status != store.BridgeActive {
		return Execution{}, nil, domain.Conflict("bridge is " + b.Status + "; only an active bridge runs tasks")
	}
	if s.runs == nil {
		return Execution{}, nil, domain.WorkflowsUnavailable(nil)
	}
	input := in.Input
	if input == nil {
		input = map[string]any{}
	}
	raw, err := json.Marshal(input)
	if err != nil {
		return Execution{}, nil, domain.InvalidField("input", "must be a JSON object")
	}
	id := uuid.New()
	e, err = store.CreateTaskExecution(ctx, s.store.Pool, store.TaskExecution{
		ID: id, OrganizationID: actor.OrganizationID, BridgeID: b.ID, TaskName: in.TaskName, Input: raw, WorkflowID: s.runs.WorkflowID(id),
	})
	if errors.Is(err, store.ErrConflict) {
		return Execution{}, nil, domain.Conflict("a " + in.TaskName + " run of this bridge is already queued or running")
	}
	if err != nil {
		return Execution{}, nil, notFound(err, "bridge")
	}
	if wait, err = s.start(ctx, Run{Execution: e, BridgeName: b.Name, BridgeType: b.Type}); err != nil {
		return Execution{}, nil, err
	}
	return e, wait, nil
}

// Start starts the workflow of a queued execution (a schedule's trigger
// queues its own): a start whose outcome stays unknown leaves it queued
// (the reconciler settles it); one that certainly did not run fails it.
// Either way the error is returned.
func (s *Service) Start(ctx context.Context, in Run) error {
	_, err := s.start(ctx, in)
	return err
}

func (s *Service) start(ctx context.Context, in Run) (func(context.Context) error, error) {
	if s.runs == nil {
		return nil, domain.WorkflowsUnavailable(nil)
	}
	wait, err := s.runs.Start(ctx, in)
	if err == nil {
		return wait, nil
	}
	e := in.Execution
	s.log.WarnContext(ctx, "start workflow", "workflow_id", e.WorkflowID, "error", err.Error())
	if !errors.Is(err, domain.ErrRunMayExist) {
		// Nothing runs: the execution fails, kept as a record.
		if _, ferr := store.FinishTaskExecution(context.WithoutCancel(ctx), s.store.Pool, e.OrganizationID, e.ID, nil,
			"the task could not be started"); ferr != nil {
			s.log.WarnContext(ctx, "fail task execution", "task_execution_id", e.ID.String(), "error", ferr.Error())
		}
	}
	return nil, err
}

// SyncOutcome is a warehouse sync: the execution and, once it completed,
// the locations it upserted.
type SyncOutcome struct {
	Execution Execution
	Locations []store.Location
}

// SyncLocations runs the bridge's warehouse-sync task and waits for it at
// most wait: a completed sync answers with its locations, one still
// running with its execution only, a failed one is an upstream
// platform_error with the reason. The actor needs locations:write.
func (s *Service) SyncLocations(ctx context.Context, actor domain.Actor, bridgeID uuid.UUID, wait time.Duration) (SyncOutcome, error) {
	if err := actor.RequireScope("locations:write"); err != nil {
		return SyncOutcome{}, err
	}
	b, err := s.bridge(ctx, actor, bridgeID)
	if err != nil {
		return SyncOutcome{}, err
	}
	if _, ok := platforms.TaskByName(b.Type, platforms.TaskWarehouseSync); !ok {
		return SyncOutcome{}, domain.InvalidField("bridgeId", "bridge type "+b.Type+" has no warehouse sync")
	}
	e, awaitRun, err := s.runTask(ctx, actor, b, RunInput{TaskName: platforms.TaskWarehouseSync, Field: "bridgeId"})
	if err != nil {
		return SyncOutcome{}, err
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	_ = awaitRun(wctx) // the outcome is read from the execution row
	cancel()
	if ctx.Err() != nil {
		return SyncOutcome{}, ctx.Err()
	}
	e, err = store.TaskExecutionByID(ctx, s.store.Pool, actor.OrganizationID, e.ID)
	if err != nil {
		return SyncOutcome{}, err
	}
	switch e.Status {
	case StatusFailed:
		msg := "the warehouse sync failed"
		if e.Error != nil {
			msg += ": " + *e.Error
		}
		return SyncOutcome{}, domain.Upstream("platform_error", msg, nil)
	case StatusCompleted:
	default:
		return SyncOutcome{Execution: e}, nil
	}
	var out struct {
		LocationIDs []uuid.UUID `json:"locationIds"`
	}
	if err := json.Unmarshal(e.Output, &out); err != nil {
		return SyncOutcome{}, err
	}
	locs, err := store.LocationsByIDs(ctx, s.store.Pool, actor.OrganizationID, out.LocationIDs)
	if err != nil {
		return SyncOutcome{}, err
	}
	return SyncOutcome{Execution: e, Locations: locs}, nil
}

func notFound(err error, what string) error {
	if errors.Is(err, store.ErrNotFound) {
		return domain.NotFound(what)
	}
	return err
}
