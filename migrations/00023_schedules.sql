-- +goose Up
-- Schedules (spec Part 2): a bridge task run on a cron in a time zone. The
-- row is the system of record; each is mirrored as the Temporal Schedule
-- schedule/<id> whose fires start ScheduledBridgeTask. revision counts the
-- changes that reach Temporal (task, cron, time zone, input, paused), so a
-- write computed from an older row (a next run read back from Temporal)
-- can tell it is stale. checked_at is when the reconciler last compared the
-- row with its Temporal Schedule (it looks at the least recent first).
CREATE TABLE schedules (
    id              uuid PRIMARY KEY,
    organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    bridge_id       uuid NOT NULL REFERENCES bridges (id) ON DELETE CASCADE,
    task_name       text NOT NULL,
    cron_expression text NOT NULL,
    timezone        text NOT NULL DEFAULT 'UTC',
    input           jsonb NOT NULL DEFAULT '{}',
    is_active       boolean NOT NULL DEFAULT true,
    last_run_at     timestamptz,
    next_run_at     timestamptz,
    run_count       integer NOT NULL DEFAULT 0,
    error_count     integer NOT NULL DEFAULT 0,
    last_error      text,
    revision        integer NOT NULL DEFAULT 1,
    checked_at      timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
-- The list, newest first, and its bridge filter.
CREATE INDEX schedules_org_created_idx ON schedules (organization_id, created_at DESC, id DESC);
CREATE INDEX schedules_bridge_idx ON schedules (bridge_id);
-- The reconciler's rotation.
CREATE INDEX schedules_checked_idx ON schedules (checked_at NULLS FIRST);

-- A run of a schedule is a task execution linked to it; fire_key names the
-- fire that queued it (the ScheduledBridgeTask workflow id, or the trigger),
-- so a retried fire finds its execution instead of queuing another. A
-- deleted schedule leaves its executions as plain records.
ALTER TABLE task_executions ADD COLUMN schedule_id uuid REFERENCES schedules (id) ON DELETE SET NULL;
ALTER TABLE task_executions ADD COLUMN fire_key text;
CREATE UNIQUE INDEX task_executions_fire_key ON task_executions (fire_key) WHERE fire_key IS NOT NULL;
-- A schedule's runs, newest first (and the lookup of its delete).
CREATE INDEX task_executions_schedule_idx ON task_executions (schedule_id, created_at DESC, id DESC) WHERE schedule_id IS NOT NULL;

-- The runs write the schedule's counters themselves, in the statement that
-- moves their execution: lastRunAt when the run leaves queued, runCount,
-- errorCount and lastError when it finishes (once: an execution finishes
-- once). lastError keeps the newest failure's reason.
-- +goose StatementBegin
CREATE FUNCTION task_executions_schedule_stats() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.status = 'queued' THEN
        UPDATE schedules SET last_run_at = coalesce(NEW.started_at, now()) WHERE id = NEW.schedule_id;
    END IF;
    IF NEW.status IN ('completed', 'failed') THEN
        UPDATE schedules
           SET run_count = run_count + 1,
               error_count = error_count + CASE WHEN NEW.status = 'failed' THEN 1 ELSE 0 END,
               last_error = CASE WHEN NEW.status = 'failed' THEN NEW.error ELSE last_error END
         WHERE id = NEW.schedule_id;
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER task_executions_schedule_stats AFTER UPDATE OF status ON task_executions
    FOR EACH ROW
    WHEN (NEW.schedule_id IS NOT NULL AND OLD.status IN ('queued', 'running') AND NEW.status IS DISTINCT FROM OLD.status)
    EXECUTE FUNCTION task_executions_schedule_stats();

-- +goose Down
DROP TRIGGER task_executions_schedule_stats ON task_executions;
DROP FUNCTION task_executions_schedule_stats();
DROP INDEX task_executions_schedule_idx;
DROP INDEX task_executions_fire_key;
ALTER TABLE task_executions DROP COLUMN fire_key;
ALTER TABLE task_executions DROP COLUMN schedule_id;
DROP TABLE schedules;
