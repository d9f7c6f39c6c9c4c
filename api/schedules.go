package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/bridgetasks"
	"github.com/fos-dev/fos/domain"
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

func toScheduleJSON(sc bridgetasks.Schedule) scheduleJSON {
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
	status, err := queryEnum(r, "status", bridgetasks.ScheduleStatuses...)
	details.collect(err)
	if len(details) > 0 {
		return errValidation(details...)
	}
	f := bridgetasks.ScheduleFilter{BridgeID: bridgeID, Limit: p.Limit, Offset: p.Offset()}
	if status != "" {
		active := status == bridgetasks.ScheduleActive
		f.IsActive = &active
	}
	page, err := s.BridgeTasks.ListSchedules(r.Context(), actorOf(r), f)
	if err != nil {
		return err
	}
	out := make([]scheduleListItemJSON, 0, len(page.Items))
	for _, sc := range page.Items {
		out = append(out, scheduleListItemJSON{
			ID: sc.ID, BridgeID: sc.BridgeID, BridgeName: sc.BridgeName, Task: sc.TaskName, Cron: sc.CronExpression,
			Status: bridgetasks.ScheduleStatus(sc.IsActive), LastRunAt: sc.LastRunAt, NextRunAt: sc.NextRunAt, CreatedAt: sc.CreatedAt,
		})
	}
	writeList(w, out, p, page.Total)
	return nil
}

// scheduleFromPath loads the organization's schedule named by {id}; an
// unknown, malformed or foreign id is 404.
func (s *Server) scheduleFromPath(r *http.Request) (bridgetasks.Schedule, error) {
	id, err := pathID(r, "id", "schedule")
	if err != nil {
		return bridgetasks.Schedule{}, err
	}
	return s.BridgeTasks.Schedule(r.Context(), actorOf(r), id)
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

// cron is a five-field cron expression (bridgetasks.CheckCron).
func (b scheduleBody) cron() string {
	k := b.key("cron", "cronExpression")
	v := b.f.str(k, true, 200)
	if v == nil {
		return ""
	}
	expr := strings.Join(strings.Fields(*v), " ")
	if msg := bridgetasks.CheckCron(expr); msg != "" {
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
	if msg := bridgetasks.CheckTimezone(*v); msg != "" {
		b.f.v.add("timezone", msg)
	}
	return *v
}

func (b scheduleBody) status() bool {
	return b.f.enum("status", true, bridgetasks.ScheduleActive, bridgetasks.ScheduleStatuses) == bridgetasks.ScheduleActive
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
	var v validator
	b := scheduleBody{f: bodyFields{v: &v, m: body}, body: body}
	in := bridgetasks.ScheduleInput{IsActive: true, BridgeField: b.key("bridge_id", "bridgeId"), TaskField: b.key("task", "taskName")}
	bridgeID := b.bridgeID()
	in.TaskName = b.task()
	in.Cron = b.cron()
	in.Timezone = b.timezone(false)
	if b.sent("status") {
		in.IsActive = b.status()
	}
	in.Input = b.f.rawObject("input", false)
	if err := v.err(); err != nil {
		return err
	}
	in.BridgeID = *bridgeID
	sc, err := s.BridgeTasks.CreateSchedule(r.Context(), actorOf(r), in)
	if err != nil {
		return err
	}
	writeData(w, http.StatusCreated, toScheduleJSON(sc))
	return nil
}

// updateSchedule changes the fields sent: cron, task, status (the spec's),
// timezone and input. 200 {data: schedule detail}.
func (s *Server) updateSchedule(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "schedule")
	if err != nil {
		return err
	}
	// The body is read once the schedule is found (another organization's
	// is 404 whatever the body), and its task checked against the
	// schedule's bridge type with the other fields.
	return s.writeSchedule(w)(s.BridgeTasks.UpdateScheduleFrom(r.Context(), actorOf(r), id, func(cur bridgetasks.Schedule) (bridgetasks.ScheduleChange, error) {
		var body jsonBody
		if err := decodeJSON(r, &body); err != nil {
			return bridgetasks.ScheduleChange{}, err
		}
		var v validator
		b := scheduleBody{f: bodyFields{v: &v, m: body}, body: body}
		ch := bridgetasks.ScheduleChange{TaskField: b.key("task", "taskName")}
		if b.sent("task", "taskName") {
			task := b.task()
			if task != "" {
				var fe domain.FieldErrors
				bridgetasks.CheckScheduleTask(&fe, ch.TaskField, cur.BridgeType, task)
				for _, e := range fe {
					v.add(e.Field, e.Message)
				}
			}
			ch.TaskName = &task
		}
		if b.sent("cron", "cronExpression") {
			cron := b.cron()
			ch.Cron = &cron
		}
		if b.sent("timezone") {
			tz := b.timezone(true)
			ch.Timezone = &tz
		}
		if b.sent("status") {
			active := b.status()
			ch.IsActive = &active
		}
		if b.sent("input") {
			ch.Input = b.f.rawObject("input", true)
		}
		return ch, v.err()
	}))
}

// writeSchedule answers 200 with a changed schedule's detail.
func (s *Server) writeSchedule(w http.ResponseWriter) func(bridgetasks.Schedule, error) error {
	return func(sc bridgetasks.Schedule, err error) error {
		if err != nil {
			return err
		}
		writeData(w, http.StatusOK, toScheduleJSON(sc))
		return nil
	}
}

// pauseSchedule: no new runs, a running one completes, nextRunAt null.
func (s *Server) pauseSchedule(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "schedule")
	if err != nil {
		return err
	}
	return s.writeSchedule(w)(s.BridgeTasks.PauseSchedule(r.Context(), actorOf(r), id))
}

// resumeSchedule: the next run is computed from the cron in the
// schedule's time zone (by Temporal, read back).
func (s *Server) resumeSchedule(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "schedule")
	if err != nil {
		return err
	}
	return s.writeSchedule(w)(s.BridgeTasks.ResumeSchedule(r.Context(), actorOf(r), id))
}

// deleteSchedule removes the schedule and its Temporal Schedule
// (bridgetasks.Service.DeleteSchedule).
func (s *Server) deleteSchedule(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "schedule")
	if err != nil {
		return err
	}
	if err := s.BridgeTasks.DeleteSchedule(r.Context(), actorOf(r), id); err != nil {
		return err
	}
	writeSuccess(w)
	return nil
}

// triggerSchedule queues a run now (bridgetasks.Service.TriggerSchedule).
// 201 {data: trigger result}.
func (s *Server) triggerSchedule(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "schedule")
	if err != nil {
		return err
	}
	e, err := s.BridgeTasks.TriggerSchedule(r.Context(), actorOf(r), id)
	if err != nil {
		return err
	}
	writeData(w, http.StatusCreated, scheduleTriggerJSON{
		ID: e.ID, OrganizationID: e.OrganizationID, BridgeID: e.BridgeID, TaskName: e.TaskName,
		Status: e.Status, Input: e.Input, CreatedAt: e.CreatedAt,
	})
	return nil
}

// listScheduleExecutions lists a schedule's runs, newest first
// (extension).
func (s *Server) listScheduleExecutions(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "schedule")
	if err != nil {
		return err
	}
	p, err := parsePage(r, 20, 100)
	if err != nil {
		return err
	}
	page, err := s.BridgeTasks.ScheduleExecutions(r.Context(), actorOf(r), id, p.Limit, p.Offset())
	if err != nil {
		return err
	}
	writeList(w, mapSlice(page.Items, toTaskExecutionJSON), p, page.Total)
	return nil
}
