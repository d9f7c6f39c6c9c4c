-- +goose Up
-- Reconciler without head-of-line blocking (issue 22 item 7): every row
-- that waits on a workflow records when the reconciler last looked at it,
-- and the reconciler scans the least recently checked first (never checked
-- first), so rows that legitimately wait (a long registration, a dispatch
-- backlog) go to the back after each look instead of hiding the lost rows
-- behind them. Each index matches its table's waiting predicate.
ALTER TABLE dispatch_assignments ADD COLUMN reconcile_checked_at timestamptz;
ALTER TABLE rate_comparisons ADD COLUMN reconcile_checked_at timestamptz;
ALTER TABLE carrier_accounts ADD COLUMN reconcile_checked_at timestamptz;
ALTER TABLE task_executions ADD COLUMN reconcile_checked_at timestamptz;
ALTER TABLE webhook_events ADD COLUMN reconcile_checked_at timestamptz;
ALTER TABLE operations ADD COLUMN reconcile_checked_at timestamptz;
ALTER TABLE operation_history ADD COLUMN reconcile_checked_at timestamptz;

CREATE INDEX dispatch_assignments_reconcile_idx ON dispatch_assignments (reconcile_checked_at NULLS FIRST, updated_at)
    WHERE status IN ('pending', 'processing');
CREATE INDEX rate_comparisons_reconcile_idx ON rate_comparisons (reconcile_checked_at NULLS FIRST, started_at)
    WHERE status = 'processing';
CREATE INDEX carrier_accounts_reconcile_idx ON carrier_accounts (reconcile_checked_at NULLS FIRST, updated_at)
    WHERE status = 'pending';
CREATE INDEX task_executions_reconcile_idx ON task_executions (reconcile_checked_at NULLS FIRST, created_at)
    WHERE status IN ('queued', 'running');
CREATE INDEX webhook_events_reconcile_idx ON webhook_events (reconcile_checked_at NULLS FIRST, (coalesce(relayed_at, created_at)))
    WHERE status = 'processing' OR (status = 'received' AND relayed_at IS NOT NULL);
CREATE INDEX operations_reconcile_idx ON operations (reconcile_checked_at NULLS FIRST, updated_at)
    WHERE status IN ('executing', 'paused');
CREATE INDEX operation_history_reconcile_idx ON operation_history (reconcile_checked_at NULLS FIRST, undo_started_at)
    WHERE undo_started_at IS NOT NULL AND NOT is_undone;

-- +goose Down
DROP INDEX operation_history_reconcile_idx;
DROP INDEX operations_reconcile_idx;
DROP INDEX webhook_events_reconcile_idx;
DROP INDEX task_executions_reconcile_idx;
DROP INDEX carrier_accounts_reconcile_idx;
DROP INDEX rate_comparisons_reconcile_idx;
DROP INDEX dispatch_assignments_reconcile_idx;
ALTER TABLE operation_history DROP COLUMN reconcile_checked_at;
ALTER TABLE operations DROP COLUMN reconcile_checked_at;
ALTER TABLE webhook_events DROP COLUMN reconcile_checked_at;
ALTER TABLE task_executions DROP COLUMN reconcile_checked_at;
ALTER TABLE carrier_accounts DROP COLUMN reconcile_checked_at;
ALTER TABLE rate_comparisons DROP COLUMN reconcile_checked_at;
ALTER TABLE dispatch_assignments DROP COLUMN reconcile_checked_at;
