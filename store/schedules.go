package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Schedule is a bridge task run on a cron (spec Part 2), mirrored as the
// Temporal Schedule schedule/<id>. BridgeName and BridgeType are read
// with it.
type Schedule struct {
	ID             uuid.UUID       `db:"id"`
	OrganizationID uuid.UUID       `db:"organization_id"`
	BridgeID       uuid.UUID       `db:"bridge_id"`
	TaskName       string          `db:"task_name"`
	CronExpression string          `db:"cron_expression"`
	Timezone       string          `db:"timezone"`
	Input          json.RawMessage `db:"input"`
	IsActive       bool            `db:"is_active"`
	LastRunAt      *time.Time      `db:"last_run_at"`
	NextRunAt      *time.Time      `db:"next_run_at"`
	RunCount       int             `db:"run_count"`
	ErrorCount     int             `db:"error_count"`
	LastError      *string         `db:"last_error"`
	// Revision counts the changes that reach Temporal (see
	// migrations/00023_schedules.sql).
	Revision   int       `db:"revision"`
	CreatedAt  time.Time `db:"created_at"`
	UpdatedAt  time.Time `db:"updated_at"`
	BridgeName string    `db:"bridge_name"`
	BridgeType string    `db:"bridge_type"`
}

// scheduleSelect reads schedules with their bridge's name and type.
const scheduleSelect = `SELECT s.id, s.organization_id, s.bridge_id, s.task_name, s.cron_expression, s.timezone, s.input,
       s.is_active, s.last_run_at, s.next_run_at, s.run_count, s.error_count, s.last_error, s.revision,
       s.created_at, s.updated_at, b.name AS bridge_name, b.type AS bridge_type
  FROM schedules s JOIN bridges b ON b.id = s.bridge_id`

func collectSchedule(rows pgx.Rows, err error) (Schedule, error) {
	if err != nil {
		return Schedule{}, mapErr(err)
	}
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Schedule])
	return out, mapErr(err)
}

// CreateSchedule inserts a schedule (ID, OrganizationID, BridgeID,
// TaskName, CronExpression, Timezone, IsActive set by the caller; nil
// Input is {}); NextRunAt is set once Temporal answers. ErrNotFound when
// the bridge is not the organization's.
func CreateSchedule(ctx context.Context, db DBTX, s Schedule) (Schedule, error) {
	if s.Input == nil {
		s.Input = json.RawMessage(`{}`)
	}
	tag, err := db.Exec(ctx, `
INSERT INTO schedules (id, organization_id, bridge_id, task_name, cron_expression, timezone, input, is_active)
SELECT $1, $2, $3, $4, $5, $6, $7, $8
 WHERE EXISTS (SELECT 1 FROM bridges WHERE id = $3 AND organization_id = $2)`,
		s.ID, s.OrganizationID, s.BridgeID, s.TaskName, s.CronExpression, s.Timezone, s.Input, s.IsActive)
	if err != nil {
		return Schedule{}, mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		return Schedule{}, ErrNotFound
	}
	return ScheduleByID(ctx, db, s.OrganizationID, s.ID)
}

// ScheduleByID finds a schedule of the organization.
func ScheduleByID(ctx context.Context, db DBTX, orgID, id uuid.UUID) (Schedule, error) {
	rows, err := db.Query(ctx, scheduleSelect+` WHERE s.organization_id = $1 AND s.id = $2`, orgID, id)
	return collectSchedule(rows, err)
}

// ScheduleFilter narrows ListSchedules; zero fields do not filter.
type ScheduleFilter struct {
	BridgeID *uuid.UUID
	IsActive *bool
	Limit    int
	Offset   int
}

// ListSchedules returns one page of the organization's schedules, newest
// first, and their number.
func ListSchedules(ctx context.Context, db DBTX, orgID uuid.UUID, f ScheduleFilter) ([]Schedule, int, error) {
	const where = ` WHERE s.organization_id = $1 AND ($2::uuid IS NULL OR s.bridge_id = $2) AND ($3::boolean IS NULL OR s.is_active = $3)`
	var total int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM schedules s`+where, orgID, f.BridgeID, f.IsActive).Scan(&total); err != nil {
		return nil, 0, mapErr(err)
	}
	rows, err := db.Query(ctx, scheduleSelect+where+` ORDER BY s.created_at DESC, s.id DESC LIMIT $4 OFFSET $5`,
		orgID, f.BridgeID, f.IsActive, f.Limit, f.Offset)
	if err != nil {
		return nil, 0, mapErr(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[Schedule])
	if err != nil {
		return nil, 0, mapErr(err)
	}
	return out, total, nil
}

// UpdateSchedule writes s's task, cron, time zone, input, active flag and
// next run, provided the row is still at revision (the one s was computed
// from), and moves it to the next revision. ErrNotFound when the schedule
// is gone; ErrConflict when it changed meanwhile.
func UpdateSchedule(ctx context.Context, db DBTX, s Schedule, revision int) (Schedule, error) {
	tag, err := db.Exec(ctx, `
UPDATE schedules
   SET task_name = $4, cron_expression = $5, timezone = $6, input = $7, is_active = $8, next_run_at = $9,
       revision = revision + 1, updated_at = now()
 WHERE organization_id = $1 AND id = $2 AND revision = $3`,
		s.OrganizationID, s.ID, revision, s.TaskName, s.CronExpression, s.Timezone, s.Input, s.IsActive, s.NextRunAt)
	if err != nil {
		return Schedule{}, mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		if _, err := ScheduleByID(ctx, db, s.OrganizationID, s.ID); err != nil {
			return Schedule{}, err
		}
		return Schedule{}, ErrConflict
	}
	return ScheduleByID(ctx, db, s.OrganizationID, s.ID)
}

// SetScheduleNextRun records the next run read back from Temporal for the
// schedule at revision (a paused schedule has none); a row that changed
// meanwhile is left alone. checked also records that the reconciler
// compared it. It reports whether it wrote.
func SetScheduleNextRun(ctx context.Context, db DBTX, orgID, id uuid.UUID, revision int, next *time.Time, checked bool) (bool, error) {
	tag, err := db.Exec(ctx, `
UPDATE schedules
   SET next_run_at = CASE WHEN is_active THEN $4::timestamptz END,
       checked_at = CASE WHEN $5 THEN now() ELSE checked_at END
 WHERE organization_id = $1 AND id = $2 AND revision = $3`, orgID, id, revision, next, checked)
	if err != nil {
		return false, mapErr(err)
	}
	return tag.RowsAffected() == 1, nil
}

// DeleteSchedule removes a schedule; its executions stay as records.
func DeleteSchedule(ctx context.Context, db DBTX, orgID, id uuid.UUID) error {
	tag, err := db.Exec(ctx, `DELETE FROM schedules WHERE organization_id = $1 AND id = $2`, orgID, id)
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// SchedulesToCheck lists up to limit schedules across organizations, those
// whose next run has passed (Temporal skipped a fire) first, then the
// least recently checked, leaving out those changed since cutoff
// (a request may be bringing their Temporal Schedule in line).
func SchedulesToCheck(ctx context.Context, db DBTX, cutoff time.Time, limit int) ([]Schedule, error) {
	rows, err := db.Query(ctx, scheduleSelect+` WHERE s.updated_at < $1
 ORDER BY (s.is_active AND s.next_run_at < now()) DESC NULLS LAST, s.checked_at NULLS FIRST, s.id LIMIT $2`, cutoff, limit)
	if err != nil {
		return nil, mapErr(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[Schedule])
	return out, mapErr(err)
}

// ExistingScheduleIDs returns which of ids are schedules (of any
// organization).
func ExistingScheduleIDs(ctx context.Context, db DBTX, ids []uuid.UUID) (map[uuid.UUID]bool, error) {
	rows, err := db.Query(ctx, `SELECT id FROM schedules WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, mapErr(err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, mapErr(err)
	}
	out := make(map[uuid.UUID]bool, len(found))
	for _, id := range found {
		out[id] = true
	}
	return out, nil
}

// ScheduleRun is a queued run of a schedule: its execution (ID and
// WorkflowID set by the caller) and the fire that queues it.
type ScheduleRun struct {
	Schedule    Schedule
	ExecutionID uuid.UUID
	WorkflowID  string
	FireKey     string
}

// QueueScheduleRun inserts the queued task execution of one fire of a
// schedule, linked to it, with the schedule's bridge, task and input. A
// fire that already queued its execution gets that one back (created
// false), whatever became of it. ErrConflict when a run of the same task
// of the bridge is queued or running (the fire is skipped).
func QueueScheduleRun(ctx context.Context, db DBTX, r ScheduleRun) (e TaskExecution, created bool, err error) {
	s := r.Schedule
	rows, err := db.Query(ctx, `
INSERT INTO task_executions (id, organization_id, bridge_id, task_name, status, input, workflow_id, schedule_id, fire_key)
VALUES ($1, $2, $3, $4, 'queued', $5, $6, $7, $8)
ON CONFLICT (fire_key) WHERE fire_key IS NOT NULL DO NOTHING
RETURNING `+taskExecutionCols, r.ExecutionID, s.OrganizationID, s.BridgeID, s.TaskName, s.Input, r.WorkflowID, s.ID, r.FireKey)
	if err != nil {
		return TaskExecution{}, false, mapErr(err)
	}
	e, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[TaskExecution])
	switch err = mapErr(err); {
	case err == nil:
		return e, true, nil
	case !errors.Is(err, ErrNotFound):
		return TaskExecution{}, false, err
	}
	// The fire's execution exists.
	rows, err = db.Query(ctx, `SELECT `+taskExecutionCols+` FROM task_executions WHERE fire_key = $1`, r.FireKey)
	if err != nil {
		return TaskExecution{}, false, mapErr(err)
	}
	e, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[TaskExecution])
	return e, false, mapErr(err)
}

// ListScheduleExecutions returns one page of a schedule's runs (its task
// executions), newest first, and their number.
func ListScheduleExecutions(ctx context.Context, db DBTX, orgID, scheduleID uuid.UUID, limit, offset int) ([]TaskExecution, int, error) {
	const where = ` FROM task_executions WHERE organization_id = $1 AND schedule_id = $2`
	var total int
	if err := db.QueryRow(ctx, `SELECT count(*)`+where, orgID, scheduleID).Scan(&total); err != nil {
		return nil, 0, mapErr(err)
	}
	rows, err := db.Query(ctx, `SELECT `+taskExecutionCols+where+` ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4`, orgID, scheduleID, limit, offset)
	if err != nil {
		return nil, 0, mapErr(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[TaskExecution])
	if err != nil {
		return nil, 0, mapErr(err)
	}
	return out, total, nil
}

// ScheduleIDsBefore lists the ids of the schedules (of every
// organization) not changed since cutoff.
func ScheduleIDsBefore(ctx context.Context, db DBTX, cutoff time.Time) ([]uuid.UUID, error) {
	rows, err := db.Query(ctx, `SELECT id FROM schedules WHERE updated_at < $1`, cutoff)
	if err != nil {
		return nil, mapErr(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	return out, mapErr(err)
}

// SchedulesByIDs reads the schedules of ids (of any organization) that
// exist.
func SchedulesByIDs(ctx context.Context, db DBTX, ids []uuid.UUID) ([]Schedule, error) {
	rows, err := db.Query(ctx, scheduleSelect+` WHERE s.id = ANY($1) ORDER BY s.id`, ids)
	if err != nil {
		return nil, mapErr(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[Schedule])
	return out, mapErr(err)
}
