package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Task execution statuses (CONTRACT 5).
const (
	TaskQueued    = "queued"
	TaskRunning   = "running"
	TaskCompleted = "completed"
	TaskFailed    = "failed"
)

// TaskExecution is one run of a bridge task (the BridgeTask workflow).
type TaskExecution struct {
	ID             uuid.UUID       `db:"id"`
	OrganizationID uuid.UUID       `db:"organization_id"`
	BridgeID       uuid.UUID       `db:"bridge_id"`
	TaskName       string          `db:"task_name"`
	Status         string          `db:"status"`
	Input          json.RawMessage `db:"input"`
	Output         json.RawMessage `db:"output"` // nil: SQL NULL
	Error          *string         `db:"error"`
	WorkflowID     string          `db:"workflow_id"`
	CreatedAt      time.Time       `db:"created_at"`
	StartedAt      *time.Time      `db:"started_at"`
	FinishedAt     *time.Time      `db:"finished_at"`
}

const taskExecutionCols = `id, organization_id, bridge_id, task_name, status, input, output, error, workflow_id, created_at, started_at, finished_at`

// CreateTaskExecution inserts a queued execution (ID, OrganizationID,
// BridgeID, TaskName, WorkflowID set by the caller; nil Input is {}).
// ErrNotFound when the bridge is not the organization's; ErrConflict when
// a run of the same task of the bridge is queued or running.
func CreateTaskExecution(ctx context.Context, db DBTX, e TaskExecution) (TaskExecution, error) {
	if e.Input == nil {
		e.Input = json.RawMessage(`{}`)
	}
	rows, _ := db.Query(ctx, `
INSERT INTO task_executions (id, organization_id, bridge_id, task_name, status, input, workflow_id)
SELECT $1, $2, $3, $4, 'queued', $5, $6
 WHERE EXISTS (SELECT 1 FROM bridges WHERE id = $3 AND organization_id = $2)
RETURNING `+taskExecutionCols, e.ID, e.OrganizationID, e.BridgeID, e.TaskName, e.Input, e.WorkflowID)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[TaskExecution])
	return out, mapErr(err)
}

// TaskExecutionByID finds an execution of the organization.
func TaskExecutionByID(ctx context.Context, db DBTX, orgID, id uuid.UUID) (TaskExecution, error) {
	rows, _ := db.Query(ctx, `SELECT `+taskExecutionCols+` FROM task_executions WHERE organization_id = $1 AND id = $2`, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[TaskExecution])
	return out, mapErr(err)
}

// ListTaskExecutions returns one page of a bridge's executions, newest
// first, and their number.
func ListTaskExecutions(ctx context.Context, db DBTX, orgID, bridgeID uuid.UUID, limit, offset int) ([]TaskExecution, int, error) {
	const where = ` FROM task_executions WHERE organization_id = $1 AND bridge_id = $2`
	var total int
	if err := db.QueryRow(ctx, `SELECT count(*)`+where, orgID, bridgeID).Scan(&total); err != nil {
		return nil, 0, mapErr(err)
	}
	rows, _ := db.Query(ctx, `SELECT `+taskExecutionCols+where+`
 ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4`, orgID, bridgeID, limit, offset)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[TaskExecution])
	if err != nil {
		return nil, 0, mapErr(err)
	}
	return out, total, nil
}

// StartTaskExecution moves a queued execution to running (started_at now)
// and returns it; a running one is returned as it is (a retried
// activity, a continued run). ErrConflict when it already finished;
// ErrNotFound when it does not exist.
func StartTaskExecution(ctx context.Context, db DBTX, orgID, id uuid.UUID) (TaskExecution, error) {
	rows, _ := db.Query(ctx, `
UPDATE task_executions
   SET status = 'running', started_at = coalesce(started_at, now())
 WHERE organization_id = $1 AND id = $2 AND status IN ('queued', 'running')
RETURNING `+taskExecutionCols, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[TaskExecution])
	if mapErr(err) == ErrNotFound {
		if _, err := TaskExecutionByID(ctx, db, orgID, id); err != nil {
			return TaskExecution{}, err
		}
		return TaskExecution{}, ErrConflict
	}
	return out, mapErr(err)
}

// FinishTaskExecution records the outcome of an execution that is not
// finished yet: completed with output when errMsg is "", else failed with
// errMsg. It reports whether it changed the row (false: already finished).
func FinishTaskExecution(ctx context.Context, db DBTX, orgID, id uuid.UUID, output any, errMsg string) (bool, error) {
	status, out := TaskCompleted, output
	var msg *string
	if errMsg != "" {
		status, msg = TaskFailed, &errMsg
	}
	tag, err := db.Exec(ctx, `
UPDATE task_executions
   SET status = $3, output = $4, error = $5, finished_at = now(), started_at = coalesce(started_at, now())
 WHERE organization_id = $1 AND id = $2 AND status IN ('queued', 'running')`, orgID, id, status, out, msg)
	if err != nil {
		return false, mapErr(err)
	}
	return tag.RowsAffected() == 1, nil
}

// StaleTaskExecutions lists up to limit executions queued or running
// since before cutoff (by creation), oldest first, across organizations
// (the reconciler).
func StaleTaskExecutions(ctx context.Context, db DBTX, cutoff time.Time, limit int) ([]WaitingRow, error) {
	rows, _ := db.Query(ctx, `SELECT organization_id, id, created_at AS since FROM task_executions
 WHERE status IN ('queued', 'running') AND created_at < $1 ORDER BY reconcile_checked_at NULLS FIRST, created_at LIMIT $2`, cutoff, limit)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[WaitingRow])
	return out, mapErr(err)
}

// ResetSyncPaging drops the paging in flight of a bridge's sync (a page
// cursor the platform no longer accepts): the next sync starts again from
// the high-water mark, so nothing is skipped.
func ResetSyncPaging(ctx context.Context, db DBTX, orgID, bridgeID uuid.UUID, task string) error {
	_, err := db.Exec(ctx, `UPDATE bridge_sync_cursors SET page_cursor = NULL, run_since = NULL, run_high_water = NULL,
 last_page = NULL, updated_at = now() WHERE organization_id = $1 AND bridge_id = $2 AND task_name = $3`, orgID, bridgeID, task)
	return mapErr(err)
}

// SetBridgeError moves a bridge to error with the reason (credentials
// refused by its platform).
func SetBridgeError(ctx context.Context, db DBTX, orgID, id uuid.UUID, reason string) error {
	_, err := db.Exec(ctx, `UPDATE bridges SET status = 'error', last_error = $3, updated_at = now()
 WHERE organization_id = $1 AND id = $2`, orgID, id, reason)
	return mapErr(err)
}

// SyncCursor is a bridge's sync position for one task (see
// migrations/00017_bridge_tasks.sql).
type SyncCursor struct {
	// Since is the high-water mark of the last completed sync (nil: never).
	Since *time.Time `db:"since"`
	// PageCursor is the platform cursor of the next page of a sync in
	// flight ("" when none is); RunSince the since it pages with and
	// RunHighWater the newest updated_at it has stored.
	PageCursor   *string    `db:"page_cursor"`
	RunSince     *time.Time `db:"run_since"`
	RunHighWater *time.Time `db:"run_high_water"`
	LastPage     []byte     `db:"last_page"`
}

// GetSyncCursor reads a bridge's cursor for a task (the zero SyncCursor
// when there is none yet, or the bridge is another organization's).
func GetSyncCursor(ctx context.Context, db DBTX, orgID, bridgeID uuid.UUID, task string) (SyncCursor, error) {
	rows, _ := db.Query(ctx, `SELECT since, page_cursor, run_since, run_high_water, last_page
 FROM bridge_sync_cursors WHERE organization_id = $1 AND bridge_id = $2 AND task_name = $3`, orgID, bridgeID, task)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[SyncCursor])
	if mapErr(err) == ErrNotFound {
		return SyncCursor{}, nil
	}
	return out, mapErr(err)
}

// SyncPageAdvance is the cursor move of one stored page.
type SyncPageAdvance struct {
	OrganizationID uuid.UUID
	BridgeID       uuid.UUID
	Task           string
	// RunSince is the since the sync pages with; Next the cursor of the
	// following page ("" on the last page); HighWater the newest platform
	// updated_at of the page (zero: none).
	RunSince  time.Time
	Next      string
	HighWater time.Time
	// PageKey names the page (run and cursor); with the page's outcome it
	// is kept in last_page to answer a retried attempt of the same page.
	PageKey string
	// LastPage is that outcome (UpsertOrderBatch fills it in).
	LastPage any
}

// SyncLastPage is what last_page holds.
type SyncLastPage struct {
	Key    string          `json:"key"`
	Next   string          `json:"next"`
	Result json.RawMessage `json:"result"`
}

// AdvanceSyncCursor records a stored page, inside the page's transaction.
// On the last page (Next "") the high-water mark becomes since, the
// paging state is cleared and the bridge's last_sync_at moves; since never
// moves backwards.
func AdvanceSyncCursor(ctx context.Context, db DBTX, a SyncPageAdvance) error {
	var hw *time.Time
	if !a.HighWater.IsZero() {
		hw = &a.HighWater
	}
	result, err := json.Marshal(a.LastPage)
	if err != nil {
		return err
	}
	last := SyncLastPage{Key: a.PageKey, Next: a.Next, Result: result}
	var runSince *time.Time
	if !a.RunSince.IsZero() {
		runSince = &a.RunSince
	}
	_, err = db.Exec(ctx, `
INSERT INTO bridge_sync_cursors AS c (bridge_id, task_name, organization_id, since, page_cursor, run_since, run_high_water, last_page)
VALUES ($1, $2, $3,
        CASE WHEN $4 = '' THEN $6::timestamptz END,
        nullif($4, ''),
        CASE WHEN $4 <> '' THEN $5::timestamptz END,
        CASE WHEN $4 <> '' THEN $6::timestamptz END,
        $7)
ON CONFLICT (bridge_id, task_name) DO UPDATE SET
    since = CASE WHEN $4 = '' THEN greatest(c.since, c.run_high_water, $6::timestamptz) ELSE c.since END,
    page_cursor = nullif($4, ''),
    run_since = CASE WHEN $4 <> '' THEN $5::timestamptz END,
    run_high_water = CASE WHEN $4 <> '' THEN greatest(c.run_high_water, $6::timestamptz) END,
    last_page = $7,
    updated_at = now()`, a.BridgeID, a.Task, a.OrganizationID, a.Next, runSince, hw, last)
	if err != nil || a.Next != "" {
		return mapErr(err)
	}
	// The sync is complete: the bridge's lastSyncAt moves, and a reason
	// for an earlier error is gone.
	_, err = db.Exec(ctx, `UPDATE bridges SET last_sync_at = now(), last_error = NULL
 WHERE organization_id = $1 AND id = $2`, a.OrganizationID, a.BridgeID)
	return mapErr(err)
}
