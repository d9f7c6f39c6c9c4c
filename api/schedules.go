package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"go.temporal.io/api/serviceerror"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/bridgetasks"
	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/workflows"
)

// mountSchedules registers the schedule endpoints (spec Part 2,
// Schedules; scopes bridges:*, CONTRACT 3) and the list of a schedule's
// runs (extension).
//
// A schedule is a row (the system of record) mirrored as the Temporal
// Schedule schedule/<id> (activities.SyncSchedule). A create writes the
// row, then the Temporal Schedule (undoing the row when that fails); a
// change (PATCH, pause, resume) is sent to Temporal first and written to
// the row once Temporal took it, so a refused or lost change leaves the row
// as it was (a Temporal Schedule changed by a lost answer is put back by
// the reconciler); a delete removes the row, then the Temporal Schedule
// (a fire of a schedule without a row runs nothing; the reconciler deletes
// it). No transaction is held across a Temporal call. nextRunAt is read
// back from the Temporal Schedule's description.
func (s *Server) mountSchedules(r chi.Router) {
	read := r.With(s.scope("bridges:read"))
	write := r.With(s.scope("bridges:write"))
	read.Get("/schedules", s.h(s.listSchedules))
	write.Post("/schedules", s.h(s.createSchedule))
	read.Get("/schedules/{id}", s.h(s.getSchedule))
	write.Patch("/schedules/{id}", s.h(s.updateSchedule))
	write.Delete("/schedules/{id}", s.h(s.deleteSchedule))
	write.Post("/schedules/{id}/pause", s.h(s.pauseSchedule))
	write.Post("/schedules/{id}/resume", s.h(s.resumeSchedule))
	write.Post("/schedules/{id}/trigger", s.h(s.triggerSchedule))
	read.Get("/schedules/{id}/executions", s.h(s.listScheduleExecutions))
}

// Schedule statuses (isActive true or false).
const (
	scheduleActive = "active"
	schedulePaused = "paused"
)

var scheduleStatuses = []string{scheduleActive, schedulePaused}

func scheduleStatus(active bool) string {
	if active {
		return scheduleActive
	}
	return schedulePaused
}

// scheduleTemporalTimeout bounds the Temporal calls of one request (a
// describe, a create or update, a describe).
const scheduleTemporalTimeout = 10 * time.Second

// scheduleJSON is the schedule detail (camelCase).
type scheduleJSON struct {
	ID             uuid.UUID          `json:"id"`
	OrganizationID uuid.UUID          `json:"organizationId"`
	BridgeID       uuid.UUID          `json:"bridgeId"`
	TaskName       string             `json:"taskName"`
	CronExpression string             `json:"cronExpression"`
	Timezone       string             `json:"timezone"`
	Input          json.RawMessage    `json:"input"`
	IsActive       bool               `json:"isActive"`
	LastRunAt      *time.Time         `json:"lastRunAt"`
	NextRunAt      *time.Time         `json:"nextRunAt"`
	RunCount       int                `json:"runCount"`
	ErrorCount     int                `json:"errorCount"`
	LastError      *string            `json:"lastError"`
	CreatedAt      time.Time          `json:"createdAt"`
	UpdatedAt      time.Time          `json:"updatedAt"`
	Bridge         scheduleBridgeJSON `json:"bridge"`
}

type scheduleBridgeJSON struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

func toScheduleJSON(sc store.Schedule) scheduleJSON {
	return scheduleJSON{
		ID: sc.ID, OrganizationID: sc.OrganizationID, BridgeID: sc.BridgeID, TaskName: sc.TaskName,
		CronExpression: sc.CronExpression, Timezone: sc.Timezone, Input: sc.Input, IsActive: sc.IsActive,
		LastRunAt: sc.LastRunAt, NextRunAt: sc.NextRunAt, RunCount: sc.RunCount, ErrorCount: sc.ErrorCount,
		LastError: sc.LastError, CreatedAt: sc.CreatedAt, UpdatedAt: sc.UpdatedAt,
		Bridge: scheduleBridgeJSON{Name: sc.BridgeName, Type: sc.BridgeType},
	}
}

// scheduleListItemJSON is the schedule list item (snake_case).
type scheduleListItemJSON struct {
	ID         uuid.UUID  `json:"id"`
	BridgeID   uuid.UUID  `json:"bridge_id"`
	BridgeName string     `json:"bridge_name"`
	Task       string     `json:"task"`
	Cron       string     `json:"cron"`
	Status     string     `json:"status"`
	LastRunAt  *time.Time `json:"last_run_at"`
	NextRunAt  *time.Time `json:"next_run_at"`
	CreatedAt  time.Time  `json:"created_at"`
}

// scheduleTriggerJSON is the trigger result: the queued execution.
type scheduleTriggerJSON struct {
	ID             uuid.UUID       `json:"id"`
	OrganizationID uuid.UUID       `json:"organizationId"`
	BridgeID       uuid.UUID       `json:"bridgeId"`
	TaskName       string          `json:"taskName"`
	Status         string          `json:"status"`
	Input          json.RawMessage `json:"input"`
	CreatedAt      time.Time       `json:"createdAt"`
}

func (s *Server) listSchedules(w http.ResponseWriter, r *http.Request) error {
	var details fieldErrors
	p, err := parsePage(r, 20, 100)
	details.collect(err)
	bridgeID, err := queryUUID(r, "bridge_id")
	details.collect(err)
	status, err := queryEnum(r, "status", scheduleStatuses...)
	details.collect(err)
	if len(details) > 0 {
		return errValidation(details...)
	}
	f := store.ScheduleFilter{BridgeID: bridgeID, Limit: p.Limit, Offset: p.Offset()}
	if status != "" {
		active := status == scheduleActive
		f.IsActive = &active
	}
	list, total, err := store.ListSchedules(r.Context(), s.store.Pool, mustPrincipal(r).OrganizationID, f)
	if err != nil {
		return err
	}
	out := make([]scheduleListItemJSON, 0, len(list))
	for _, sc := range list {
		out = append(out, scheduleListItemJSON{
			ID: sc.ID, BridgeID: sc.BridgeID, BridgeName: sc.BridgeName, Task: sc.TaskName, Cron: sc.CronExpression,
			Status: scheduleStatus(sc.IsActive), LastRunAt: sc.LastRunAt, NextRunAt: sc.NextRunAt, CreatedAt: sc.CreatedAt,
		})
	}
	writeList(w, out, p, total)
	return nil
}

// scheduleFromPath loads the organization's schedule named by {id}; an
// unknown, malformed or foreign id is 404.
func (s *Server) scheduleFromPath(r *http.Request) (store.Schedule, error) {
	return loadByID(s, r, "schedule", store.ScheduleByID)
}

func (s *Server) getSchedule(w http.ResponseWriter, r *http.Request) error {
	sc, err := s.scheduleFromPath(r)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toScheduleJSON(sc))
	return nil
}

// scheduleBody reads the fields of a create or update body. Each field
// may be sent under the spec's name or the detail's (bridge_id or
// bridgeId, task or taskName, cron or cronExpression); errors name the
// key sent.
type scheduleBody struct {
	f    bodyFields
	body jsonBody
}

// key is the first of names the body holds (else the first).
func (b scheduleBody) key(names ...string) string {
	for _, n := range names {
		if _, ok := b.body[n]; ok {
			return n
		}
	}
	return names[0]
}

func (b scheduleBody) sent(names ...string) bool {
	_, ok := b.body[b.key(names...)]
	return ok
}

func (b scheduleBody) bridgeID() *uuid.UUID {
	k := b.key("bridge_id", "bridgeId")
	v := b.f.str(k, true, 100)
	if v == nil {
		return nil
	}
	id, err := uuid.Parse(*v)
	if err != nil {
		b.f.v.add(k, "must be a UUID")
		return nil
	}
	return &id
}

func (b scheduleBody) task() string {
	return deref(b.f.str(b.key("task", "taskName"), true, 100))
}

// cron is a five-field cron expression (checkCron).
func (b scheduleBody) cron() string {
	k := b.key("cron", "cronExpression")
	v := b.f.str(k, true, 200)
	if v == nil {
		return ""
	}
	expr := strings.Join(strings.Fields(*v), " ")
	if msg := checkCron(expr); msg != "" {
		b.f.v.add(k, msg)
	}
	return expr
}

// timezone is an IANA time zone name.
func (b scheduleBody) timezone(required bool) string {
	v := b.f.str("timezone", required, 64)
	if v == nil {
		return "UTC"
	}
	if _, err := time.LoadLocation(*v); err != nil || *v == "Local" {
		b.f.v.add("timezone", "must be an IANA time zone name such as UTC or Europe/Paris")
	}
	return *v
}

func (b scheduleBody) status() bool {
	return b.f.enum("status", true, scheduleActive, scheduleStatuses) == scheduleActive
}

// checkScheduleTask answers whether a bridge type can run task on a
// schedule: a task of the type that supports scheduling (not a webhook
// task). The problem is reported on field.
func checkScheduleTask(v *validator, field, bridgeType, task string) {
	def, ok := platforms.TaskByName(bridgeType, task)
	switch {
	case !ok:
		v.add(field, "is not a task of bridge type "+bridgeType+": "+task)
	case !def.SupportsSchedule || def.Category == platforms.TaskCategoryWebhook:
		v.add(field, task+" cannot be scheduled")
	}
}

// createSchedule: body bridge_id, task, cron (required); status (active
// default, paused), timezone (IANA, default UTC), input (object). The
// bridge must be the organization's and its type must support the task
// (400), and it must be active (409). 201 {data: schedule detail}.
func (s *Server) createSchedule(w http.ResponseWriter, r *http.Request) error {
	var body jsonBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	orgID := mustPrincipal(r).OrganizationID
	var v validator
	b := scheduleBody{f: bodyFields{v: &v, m: body}, body: body}
	sc := store.Schedule{ID: uuid.New(), OrganizationID: orgID, IsActive: true}
	bridgeID := b.bridgeID()
	sc.TaskName = b.task()
	sc.CronExpression = b.cron()
	sc.Timezone = b.timezone(false)
	if b.sent("status") {
		sc.IsActive = b.status()
	}
	sc.Input = b.f.rawObject("input", false)
	if err := v.err(); err != nil {
		return err
	}
	bridgeField := b.key("bridge_id", "bridgeId")
	bridge, err := store.BridgeByID(r.Context(), s.store.Pool, orgID, *bridgeID)
	if errors.Is(err, store.ErrNotFound) {
		return errValidation(FieldError{Field: bridgeField, Message: "must be a bridge of this organization"})
	}
	if err != nil {
		return err
	}
	checkScheduleTask(&v, b.key("task", "taskName"), bridge.Type, sc.TaskName)
	if err := v.err(); err != nil {
		return err
	}
	if bridge.Status != store.BridgeActive {
		return errConflict("bridge is " + bridge.Status + "; only an active bridge can be scheduled")
	}
	if s.temporal == nil {
		return errTemporalUnavailable()
	}
	sc.BridgeID = bridge.ID
	sc, err = store.CreateSchedule(r.Context(), s.store.Pool, sc)
	if errors.Is(err, store.ErrNotFound) { // the bridge went away since it was read
		return errValidation(FieldError{Field: bridgeField, Message: "must be a bridge of this organization"})
	}
	if err != nil {
		return err
	}
	res, err := s.syncSchedule(r, sc)
	if err != nil {
		// Nothing is scheduled: the row goes. A Temporal Schedule a lost
		// answer created has no row: its fires run nothing and the
		// reconciler deletes it.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), scheduleTemporalTimeout)
		defer cancel()
		if derr := store.DeleteSchedule(ctx, s.store.Pool, orgID, sc.ID); derr != nil {
			s.log.WarnContext(r.Context(), "undo schedule", append(logAttrs(r), "schedule_id", sc.ID.String(), "error", derr.Error())...)
		}
		if _, derr := activities.DeleteTemporalSchedule(ctx, s.temporal, sc.ID.String()); derr != nil {
			s.log.WarnContext(r.Context(), "undo Temporal Schedule", append(logAttrs(r), "schedule_id", sc.ID.String(), "error", derr.Error())...)
		}
		return err
	}
	if _, err := store.SetScheduleNextRun(r.Context(), s.store.Pool, orgID, sc.ID, sc.Revision, res.Next, false); err != nil {
		return err
	}
	sc.NextRunAt = res.Next
	writeData(w, http.StatusCreated, toScheduleJSON(sc))
	return nil
}

// updateSchedule changes the fields sent: cron, task, status (the spec's),
// timezone and input. 200 {data: schedule detail}.
func (s *Server) updateSchedule(w http.ResponseWriter, r *http.Request) error {
	cur, err := s.scheduleFromPath(r)
	if err != nil {
		return err
	}
	var body jsonBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	var v validator
	b := scheduleBody{f: bodyFields{v: &v, m: body}, body: body}
	next := cur
	if b.sent("task", "taskName") {
		if next.TaskName = b.task(); next.TaskName != "" {
			checkScheduleTask(&v, b.key("task", "taskName"), cur.BridgeType, next.TaskName)
		}
	}
	if b.sent("cron", "cronExpression") {
		next.CronExpression = b.cron()
	}
	if b.sent("timezone") {
		next.Timezone = b.timezone(true)
	}
	if b.sent("status") {
		next.IsActive = b.status()
	}
	if b.sent("input") {
		next.Input = b.f.rawObject("input", true)
	}
	if err := v.err(); err != nil {
		return err
	}
	return s.changeSchedule(w, r, cur, next)
}

// pauseSchedule: no new runs, a running one completes, nextRunAt null.
func (s *Server) pauseSchedule(w http.ResponseWriter, r *http.Request) error {
	cur, err := s.scheduleFromPath(r)
	if err != nil {
		return err
	}
	next := cur
	next.IsActive = false
	return s.changeSchedule(w, r, cur, next)
}

// resumeSchedule: the next run is computed from the cron in the
// schedule's time zone (by Temporal, read back).
func (s *Server) resumeSchedule(w http.ResponseWriter, r *http.Request) error {
	cur, err := s.scheduleFromPath(r)
	if err != nil {
		return err
	}
	next := cur
	next.IsActive = true
	return s.changeSchedule(w, r, cur, next)
}

// changeSchedule sends next to Temporal, then writes it (with the next run
// Temporal gives) over cur, and answers the detail. A refused or failed
// Temporal call writes nothing; a row changed meanwhile by another request
// is 409 (its state is sent to Temporal again).
func (s *Server) changeSchedule(w http.ResponseWriter, r *http.Request, cur, next store.Schedule) error {
	if s.temporal == nil {
		return errTemporalUnavailable()
	}
	res, err := s.syncSchedule(r, next)
	if err != nil {
		return err
	}
	next.NextRunAt = res.Next
	out, err := store.UpdateSchedule(r.Context(), s.store.Pool, next, cur.Revision)
	if errors.Is(err, store.ErrConflict) {
		if now, err := store.ScheduleByID(r.Context(), s.store.Pool, cur.OrganizationID, cur.ID); err == nil {
			if _, err := s.syncSchedule(r, now); err != nil {
				s.log.WarnContext(r.Context(), "resync schedule", append(logAttrs(r), "schedule_id", cur.ID.String(), "error", err.Error())...)
			}
		}
		return errConflict("the schedule was changed by another request meanwhile; read it and try again")
	}
	if err != nil {
		// Gone meanwhile: a Temporal Schedule recreated for it has no row
		// (the reconciler deletes it).
		return notFoundAs(err, "schedule")
	}
	writeData(w, http.StatusOK, toScheduleJSON(out))
	return nil
}

// syncSchedule brings the Temporal Schedule of sc in line with it
// (activities.SyncSchedule). Temporal refusing the spec is 400 naming
// cron or timezone; Temporal failing or not answering is 503.
func (s *Server) syncSchedule(r *http.Request, sc store.Schedule) (activities.SyncResult, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), scheduleTemporalTimeout)
	defer cancel()
	res, err := activities.SyncSchedule(ctx, s.temporal, s.bridgeTaskQueue(), sc)
	if err == nil {
		return res, nil
	}
	var invalid *serviceerror.InvalidArgument
	if errors.As(err, &invalid) {
		field := "cron"
		if strings.Contains(strings.ToLower(invalid.Error()), "zone") {
			field = "timezone"
		}
		return res, errValidation(FieldError{Field: field, Message: "is refused by the scheduler: " + invalid.Error()})
	}
	s.log.WarnContext(r.Context(), "sync Temporal Schedule", append(logAttrs(r), "schedule_id", sc.ID.String(), "error", err.Error())...)
	return res, errTemporalUnavailable()
}

// deleteSchedule removes the row, then its Temporal Schedule: a running
// task completes, nothing starts later (a fire without a row runs
// nothing; a Temporal Schedule left behind is the reconciler's to delete).
func (s *Server) deleteSchedule(w http.ResponseWriter, r *http.Request) error {
	sc, err := s.scheduleFromPath(r)
	if err != nil {
		return err
	}
	if err := store.DeleteSchedule(r.Context(), s.store.Pool, sc.OrganizationID, sc.ID); err != nil {
		return notFoundAs(err, "schedule")
	}
	if s.temporal != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), scheduleTemporalTimeout)
		defer cancel()
		if _, err := activities.DeleteTemporalSchedule(ctx, s.temporal, sc.ID.String()); err != nil {
			s.log.WarnContext(r.Context(), "delete Temporal Schedule", append(logAttrs(r), "schedule_id", sc.ID.String(), "error", err.Error())...)
		}
	}
	writeSuccess(w)
	return nil
}

// triggerSchedule queues a run now, paused or not, without touching the
// schedule's timing: the execution is recorded linked to the schedule
// (its outcome counts in runCount, errorCount, lastError) and its
// BridgeTask is started. 201 {data: trigger result}. The bridge must be
// active and no run of the task may be queued or running (409).
func (s *Server) triggerSchedule(w http.ResponseWriter, r *http.Request) error {
	sc, err := s.scheduleFromPath(r)
	if err != nil {
		return err
	}
	bridge, err := store.BridgeByID(r.Context(), s.store.Pool, sc.OrganizationID, sc.BridgeID)
	if err != nil {
		return err
	}
	if bridge.Status != store.BridgeActive {
		return errConflict("bridge is " + bridge.Status + "; only an active bridge runs tasks")
	}
	if s.temporal == nil {
		return errTemporalUnavailable()
	}
	id := uuid.New()
	e, _, err := store.QueueScheduleRun(r.Context(), s.store.Pool, store.ScheduleRun{
		Schedule: sc, ExecutionID: id, WorkflowID: workflows.BridgeTaskWorkflowID(id.String()), FireKey: "trigger/" + id.String(),
	})
	if errors.Is(err, store.ErrConflict) {
		return errConflict("a " + sc.TaskName + " run of this bridge is already queued or running")
	}
	if err != nil {
		return err
	}
	if err := s.startTaskExecution(r, e, sc.ID); err != nil {
		return err
	}
	writeData(w, http.StatusCreated, scheduleTriggerJSON{
		ID: e.ID, OrganizationID: e.OrganizationID, BridgeID: e.BridgeID, TaskName: e.TaskName,
		Status: e.Status, Input: e.Input, CreatedAt: e.CreatedAt,
	})
	return nil
}

// bridgeTaskQueue is the task queue BridgeTask runs on: the bulk queue
// (syncs page through thousands of orders; interactive work must not wait
// behind them).
func (s *Server) bridgeTaskQueue() string { return s.bulkTaskQueue }

// startTaskExecution starts the BridgeTask of a queued execution
// (bridgetasks.Service.Start): a start whose outcome stays unknown leaves
// it queued (the reconciler settles it); one that certainly did not run
// fails it.
func (s *Server) startTaskExecution(r *http.Request, e store.TaskExecution, scheduleID uuid.UUID) error {
	return s.bridgeTasks.Start(r.Context(), bridgetasks.Run{Execution: e, ScheduleID: &scheduleID})
}

// listScheduleExecutions lists a schedule's runs, newest first
// (extension).
func (s *Server) listScheduleExecutions(w http.ResponseWriter, r *http.Request) error {
	sc, err := s.scheduleFromPath(r)
	if err != nil {
		return err
	}
	p, err := parsePage(r, 20, 100)
	if err != nil {
		return err
	}
	list, total, err := store.ListScheduleExecutions(r.Context(), s.store.Pool, sc.OrganizationID, sc.ID, p.Limit, p.Offset())
	if err != nil {
		return err
	}
	writeList(w, mapSlice(list, toTaskExecutionJSON), p, total)
	return nil
}

// ---- cron ----

// cronField is one of the five fields of a cron expression.
type cronField struct {
	name   string
	lo, hi int
	names  []string // three-letter names of the values from lo (month, day of week)
}

var cronFields = [5]cronField{
	{name: "minute", lo: 0, hi: 59},
	{name: "hour", lo: 0, hi: 23},
	{name: "day of month", lo: 1, hi: 31},
	{name: "month", lo: 1, hi: 12, names: []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}},
	// 0 and 7 are Sunday.
	{name: "day of week", lo: 0, hi: 7, names: []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}},
}

// checkCron checks a five-field cron expression (minute hour day-of-month
// month day-of-week) and says what is wrong ("" when nothing). It accepts
// the standard syntax — values, names (JAN-DEC, SUN-SAT), *, ranges a-b,
// steps /n, lists — which is a subset of what Temporal's schedule spec
// parses, with the same meaning; Temporal has the last word (a spec it
// refuses is 400 too). Shorthands (@daily), seconds and year fields, time
// zone prefixes and comments are refused: the time zone is its own field.
func checkCron(expr string) string {
	fields := strings.Fields(expr)
	if len(fields) != len(cronFields) {
		return "must have 5 fields: minute hour day-of-month month day-of-week"
	}
	for i, f := range fields {
		if msg := cronFields[i].check(f); msg != "" {
			return cronFields[i].name + " field " + strconv.Quote(f) + ": " + msg
		}
	}
	return ""
}

func (c cronField) check(f string) string {
	for part := range strings.SplitSeq(f, ",") {
		base, step, hasStep := strings.Cut(part, "/")
		if hasStep {
			n, ok := cronNumber(step)
			if !ok || n < 1 || n > c.hi-c.lo+1 {
				return fmt.Sprintf("the step must be a number from 1 to %d", c.hi-c.lo+1)
			}
		}
		if base == "*" {
			continue
		}
		from, to, isRange := strings.Cut(base, "-")
		start, ok := c.value(from)
		if !ok {
			return c.valuesMessage()
		}
		if isRange {
			end, ok := c.value(to)
			if !ok {
				return c.valuesMessage()
			}
			if end < start {
				return "a range must not end before it starts"
			}
		}
	}
	return ""
}

func (c cronField) value(s string) (int, bool) {
	if n, ok := cronNumber(s); ok {
		return n, n >= c.lo && n <= c.hi
	}
	for i, name := range c.names {
		if strings.EqualFold(s, name) {
			return c.lo + i, true
		}
	}
	return 0, false
}

func (c cronField) valuesMessage() string {
	msg := fmt.Sprintf("values must be *, numbers from %d to %d", c.lo, c.hi)
	if c.names != nil {
		msg += " or names (" + strings.ToUpper(c.names[0]) + "-" + strings.ToUpper(c.names[len(c.names)-1]) + ")"
	}
	return msg + ", ranges a-b, steps /n and lists a,b"
}

// cronNumber is a number of one or two digits.
func cronNumber(s string) (int, bool) {
	if len(s) == 0 || len(s) > 2 || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}
