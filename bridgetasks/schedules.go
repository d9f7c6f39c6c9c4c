package bridgetasks

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/store"
)

// Schedules.
//
// A schedule is a row (the system of record) mirrored as the Temporal
// Schedule schedule/<id> behind the Schedules port. A create writes the
// row, then the Temporal Schedule (undoing the row when that fails); a
// change (update, pause, resume) is sent to Temporal first and written to
// the row once Temporal took it, so a refused or lost change leaves the row
// as it was (a Temporal Schedule changed by a lost answer is put back by
// the reconciler); a delete removes the row, then the Temporal Schedule (a
// fire of a schedule without a row runs nothing; the reconciler deletes
// it). No transaction is held across a Temporal call. NextRunAt is read
// back from the Temporal Schedule.

// Schedule is a schedule (store row, with its bridge's name and type).
type Schedule = store.Schedule

// Schedule statuses (IsActive true or false).
const (
	ScheduleActive = "active"
	SchedulePaused = "paused"
)

// ScheduleStatuses are the statuses a schedule shows.
var ScheduleStatuses = []string{ScheduleActive, SchedulePaused}

// ScheduleStatus is the status of an active or paused schedule.
func ScheduleStatus(active bool) string {
	if active {
		return ScheduleActive
	}
	return SchedulePaused
}

// ScheduleTemporalTimeout bounds the Temporal calls of one change (a
// describe, a create or update, a describe).
const ScheduleTemporalTimeout = 10 * time.Second

// Schedules keeps each schedule's Temporal Schedule in line with its row.
// Its errors are domain errors: a spec the scheduler refuses is invalid
// (naming cron or timezone), a scheduler that fails or does not answer is
// unavailable.
type Schedules interface {
	// SyncSchedule creates or updates the Temporal Schedule of sc and
	// answers its next fire (nil when paused or never again).
	SyncSchedule(ctx context.Context, sc Schedule) (next *time.Time, err error)
	// DeleteSchedule deletes the Temporal Schedule of a schedule (one
	// already gone is not an error).
	DeleteSchedule(ctx context.Context, id uuid.UUID) error
}

// ScheduleFilter selects schedules; IsActive nil: both statuses.
type ScheduleFilter struct {
	BridgeID      *uuid.UUID
	IsActive      *bool
	Limit, Offset int
}

// SchedulePage is one page of schedules and the number of all.
type SchedulePage struct {
	Items []Schedule
	Total int
}

// ListSchedules lists the organization's schedules. The actor needs
// bridges:read.
func (s *Service) ListSchedules(ctx context.Context, actor domain.Actor, f ScheduleFilter) (SchedulePage, error) {
	if err := actor.RequireScope(ScopeRead); err != nil {
		return SchedulePage{}, err
	}
	list, total, err := store.ListSchedules(ctx, s.store.Pool, actor.OrganizationID,
		store.ScheduleFilter{BridgeID: f.BridgeID, IsActive: f.IsActive, Limit: f.Limit, Offset: f.Offset})
	return SchedulePage{Items: list, Total: total}, err
}

// Schedule is one schedule of the organization. The actor needs
// bridges:read or bridges:write.
func (s *Service) Schedule(ctx context.Context, actor domain.Actor, id uuid.UUID) (Schedule, error) {
	if !actor.HasScope(ScopeWrite) {
		if err := actor.RequireScope(ScopeRead); err != nil {
			return Schedule{}, err
		}
	}
	sc, err := store.ScheduleByID(ctx, s.store.Pool, actor.OrganizationID, id)
	return sc, notFound(err, "schedule")
}

// ScheduleInput is a new schedule. BridgeField and TaskField name the
// request fields of BridgeID and TaskName in a refusal (default bridge_id
// and task); Timezone "" is UTC; Input nil is none.
type ScheduleInput struct {
	BridgeID               uuid.UUID
	TaskName               string
	Cron                   string
	Timezone               string
	IsActive               bool
	Input                  json.RawMessage
	BridgeField, TaskField string
}

// CreateSchedule creates a schedule of one of the organization's bridges:
// its type must run the task on a schedule (invalid), the bridge must be
// active (conflict). The row is written, then its Temporal Schedule; when
// that fails, the row goes. The actor needs bridges:write.
func (s *Service) CreateSchedule(ctx context.Context, actor domain.Actor, in ScheduleInput) (Schedule, error) {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return Schedule{}, err
	}
	bridgeField, taskField := or(in.BridgeField, "bridge_id"), or(in.TaskField, "task")
	in.Cron = strings.Join(strings.Fields(in.Cron), " ")
	if in.Timezone == "" {
		in.Timezone = "UTC"
	}
	var v domain.FieldErrors
	if in.TaskName == "" {
		v.Add(taskField, "is required")
	}
	checkSpec(&v, "cron", in.Cron, in.Timezone)
	if err := v.Err(); err != nil {
		return Schedule{}, err
	}
	bridge, err := store.BridgeByID(ctx, s.store.Pool, actor.OrganizationID, in.BridgeID)
	if errors.Is(err, store.ErrNotFound) {
		return Schedule{}, domain.InvalidField(bridgeField, "must be a bridge of this organization")
	}
	if err != nil {
		return Schedule{}, err
	}
	CheckScheduleTask(&v, taskField, bridge.Type, in.TaskName)
	if err := v.Err(); err != nil {
		return Schedule{}, err
	}
	if bridge.Status != store.BridgeActive {
		return Schedule{}, domain.Conflict("bridge is " + bridge.Status + "; only an active bridge can be scheduled")
	}
	if s.schedules == nil {
		return Schedule{}, domain.WorkflowsUnavailable(nil)
	}
	sc, err := store.CreateSchedule(ctx, s.store.Pool, store.Schedule{ID: uuid.New(), OrganizationID: actor.OrganizationID,
		BridgeID: bridge.ID, TaskName: in.TaskName, CronExpression: in.Cron, Timezone: in.Timezone, IsActive: in.IsActive, Input: in.Input})
	if errors.Is(err, store.ErrNotFound) { // the bridge went away since it was read
		return Schedule{}, domain.InvalidField(bridgeField, "must be a bridge of this organization")
	}
	if err != nil {
		return Schedule{}, err
	}
	next, err := s.syncSchedule(ctx, sc)
	if err != nil {
		// Nothing is scheduled: the row goes. A Temporal Schedule a lost
		// answer created has no row: its fires run nothing and the
		// reconciler deletes it.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ScheduleTemporalTimeout)
		defer cancel()
		if derr := store.DeleteSchedule(uctx, s.store.Pool, actor.OrganizationID, sc.ID); derr != nil {
			s.log.WarnContext(ctx, "undo schedule", "schedule_id", sc.ID.String(), "error", derr.Error())
		}
		if derr := s.schedules.DeleteSchedule(uctx, sc.ID); derr != nil {
			s.log.WarnContext(ctx, "undo Temporal Schedule", "schedule_id", sc.ID.String(), "error", derr.Error())
		}
		return Schedule{}, err
	}
	if _, err := store.SetScheduleNextRun(ctx, s.store.Pool, actor.OrganizationID, sc.ID, sc.Revision, next, false); err != nil {
		return Schedule{}, err
	}
	sc.NextRunAt = next
	return sc, nil
}

// ScheduleChange changes the fields set (nil: unchanged). TaskField names
// the request field of TaskName in a refusal (default task).
type ScheduleChange struct {
	TaskName  *string
	Cron      *string
	Timezone  *string
	IsActive  *bool
	Input     json.RawMessage // nil: unchanged
	TaskField string
}

// UpdateSchedule sends the changed schedule to Temporal, then writes it
// with the next run Temporal gives. A refused or failed Temporal call
// writes nothing; a schedule changed meanwhile by another caller is a
// conflict (its state is sent to Temporal again). The actor needs
// bridges:write.
func (s *Service) UpdateSchedule(ctx context.Context, actor domain.Actor, id uuid.UUID, ch ScheduleChange) (Schedule, error) {
	return s.UpdateScheduleFrom(ctx, actor, id, func(Schedule) (ScheduleChange, error) { return ch, nil })
}

// UpdateScheduleFrom is UpdateSchedule with the change that change makes
// of the schedule as it is (read once, after the not-found check; an
// error of change is the answer): a caller that checks a change against
// the schedule (its bridge type) needs no read of its own.
func (s *Service) UpdateScheduleFrom(ctx context.Context, actor domain.Actor, id uuid.UUID, change func(cur Schedule) (ScheduleChange, error)) (Schedule, error) {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return Schedule{}, err
	}
	cur, err := s.Schedule(ctx, actor, id)
	if err != nil {
		return Schedule{}, err
	}
	ch, err := change(cur)
	if err != nil {
		return Schedule{}, err
	}
	next := cur
	var v domain.FieldErrors
	if ch.TaskName != nil {
		next.TaskName = *ch.TaskName
		CheckScheduleTask(&v, or(ch.TaskField, "task"), cur.BridgeType, next.TaskName)
	}
	if ch.Cron != nil {
		next.CronExpression = strings.Join(strings.Fields(*ch.Cron), " ")
	}
	if ch.Timezone != nil {
		next.Timezone = *ch.Timezone
	}
	if ch.IsActive != nil {
		next.IsActive = *ch.IsActive
	}
	if ch.Input != nil {
		next.Input = ch.Input
	}
	checkSpec(&v, "cron", next.CronExpression, next.Timezone)
	if err := v.Err(); err != nil {
		return Schedule{}, err
	}
	return s.changeSchedule(ctx, cur, next)
}

// PauseSchedule: no new runs, a running one completes, NextRunAt nil.
// The actor needs bridges:write.
func (s *Service) PauseSchedule(ctx context.Context, actor domain.Actor, id uuid.UUID) (Schedule, error) {
	paused := false
	return s.UpdateSchedule(ctx, actor, id, ScheduleChange{IsActive: &paused})
}

// ResumeSchedule: the next run is computed from the cron in the
// schedule's time zone (by Temporal, read back). The actor needs
// bridges:write.
func (s *Service) ResumeSchedule(ctx context.Context, actor domain.Actor, id uuid.UUID) (Schedule, error) {
	active := true
	return s.UpdateSchedule(ctx, actor, id, ScheduleChange{IsActive: &active})
}

func (s *Service) changeSchedule(ctx context.Context, cur, next Schedule) (Schedule, error) {
	if s.schedules == nil {
		return Schedule{}, domain.WorkflowsUnavailable(nil)
	}
	nextRun, err := s.syncSchedule(ctx, next)
	if err != nil {
		return Schedule{}, err
	}
	next.NextRunAt = nextRun
	out, err := store.UpdateSchedule(ctx, s.store.Pool, next, cur.Revision)
	if errors.Is(err, store.ErrConflict) {
		if now, err := store.ScheduleByID(ctx, s.store.Pool, cur.OrganizationID, cur.ID); err == nil {
			if _, err := s.syncSchedule(ctx, now); err != nil {
				s.log.WarnContext(ctx, "resync schedule", "schedule_id", cur.ID.String(), "error", err.Error())
			}
		}
		return Schedule{}, domain.Conflict("the schedule was changed by another request meanwhile; read it and try again")
	}
	// Gone meanwhile: a Temporal Schedule recreated for it has no row (the
	// reconciler deletes it).
	return out, notFound(err, "schedule")
}

// syncSchedule is the port's SyncSchedule under ScheduleTemporalTimeout,
// not cancelled with the caller (a change Temporal took is written).
func (s *Service) syncSchedule(ctx context.Context, sc Schedule) (*time.Time, error) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ScheduleTemporalTimeout)
	defer cancel()
	next, err := s.schedules.SyncSchedule(sctx, sc)
	if err != nil && domain.KindOf(err) != domain.KindInvalid {
		s.log.WarnContext(ctx, "sync Temporal Schedule", "schedule_id", sc.ID.String(), "error", err.Error())
	}
	return next, err
}

// DeleteSchedule removes the row, then its Temporal Schedule: a running
// task completes, nothing starts later (a Temporal Schedule left behind is
// the reconciler's to delete). The actor needs bridges:write.
func (s *Service) DeleteSchedule(ctx context.Context, actor domain.Actor, id uuid.UUID) error {
	sc, err := s.Schedule(ctx, actor, id)
	if err != nil {
		return err
	}
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return err
	}
	if err := store.DeleteSchedule(ctx, s.store.Pool, sc.OrganizationID, sc.ID); err != nil {
		return notFound(err, "schedule")
	}
	if s.schedules != nil {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ScheduleTemporalTimeout)
		defer cancel()
		if err := s.schedules.DeleteSchedule(dctx, sc.ID); err != nil {
			s.log.WarnContext(ctx, "delete Temporal Schedule", "schedule_id", sc.ID.String(), "error", err.Error())
		}
	}
	return nil
}

// TriggerSchedule queues a run now, paused or not, without touching the
// schedule's timing: the execution is recorded linked to the schedule
// (its outcome counts in the schedule's runs, errors and last error) and
// its BridgeTask is started. The bridge must be active and no run of the
// task may be queued or running (conflict). The actor needs bridges:write.
func (s *Service) TriggerSchedule(ctx context.Context, actor domain.Actor, id uuid.UUID) (Execution, error) {
	sc, err := s.Schedule(ctx, actor, id)
	if err != nil {
		return Execution{}, err
	}
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return Execution{}, err
	}
	bridge, err := store.BridgeByID(ctx, s.store.Pool, sc.OrganizationID, sc.BridgeID)
	if err != nil {
		return Execution{}, err
	}
	if bridge.Status != store.BridgeActive {
		return Execution{}, domain.Conflict("bridge is " + bridge.Status + "; only an active bridge runs tasks")
	}
	if s.runs == nil {
		return Execution{}, domain.WorkflowsUnavailable(nil)
	}
	execID := uuid.New()
	e, _, err := store.QueueScheduleRun(ctx, s.store.Pool, store.ScheduleRun{
		Schedule: sc, ExecutionID: execID, WorkflowID: s.runs.WorkflowID(execID), FireKey: "trigger/" + execID.String(),
	})
	if errors.Is(err, store.ErrConflict) {
		return Execution{}, domain.Conflict("a " + sc.TaskName + " run of this bridge is already queued or running")
	}
	if err != nil {
		return Execution{}, err
	}
	if err := s.Start(ctx, Run{Execution: e, ScheduleID: &sc.ID}); err != nil {
		return Execution{}, err
	}
	return e, nil
}

// ScheduleExecutions lists a schedule's runs, newest first. The actor
// needs bridges:read.
func (s *Service) ScheduleExecutions(ctx context.Context, actor domain.Actor, id uuid.UUID, limit, offset int) (Page, error) {
	sc, err := s.Schedule(ctx, actor, id)
	if err != nil {
		return Page{}, err
	}
	list, total, err := store.ListScheduleExecutions(ctx, s.store.Pool, sc.OrganizationID, sc.ID, limit, offset)
	return Page{Items: list, Total: total}, err
}

// CheckScheduleTask names, on field, a task a bridge type cannot run on
// a schedule: not a task of the type, or a task that does not support
// scheduling (a webhook task).
func CheckScheduleTask(v *domain.FieldErrors, field, bridgeType, task string) {
	def, ok := platforms.TaskByName(bridgeType, task)
	switch {
	case !ok:
		v.Add(field, "is not a task of bridge type "+bridgeType+": "+task)
	case !def.SupportsSchedule || def.Category == platforms.TaskCategoryWebhook:
		v.Add(field, task+" cannot be scheduled")
	}
}

// CheckTimezone says what is wrong with an IANA time zone name ("" when
// nothing).
func CheckTimezone(tz string) string {
	if _, err := time.LoadLocation(tz); err != nil || tz == "Local" {
		return "must be an IANA time zone name such as UTC or Europe/Paris"
	}
	return ""
}

// checkSpec names a cron expression or time zone a schedule cannot have
// (callers that read a request body name them on its fields first).
func checkSpec(v *domain.FieldErrors, cronField, cron, tz string) {
	if msg := CheckCron(cron); msg != "" {
		v.Add(cronField, msg)
	}
	if msg := CheckTimezone(tz); msg != "" {
		v.Add("timezone", msg)
	}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
