-- +goose Up
-- Bridge task runs (CONTRACT 5): a row is inserted queued, then the
-- BridgeTask workflow (bridge-task/<id>) marks it running and records it
-- completed (output) or failed (error). The reconciler (Maintenance) fails
-- rows whose run is gone or closed without recording.
CREATE TABLE task_executions (
    id              uuid PRIMARY KEY,
    organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    bridge_id       uuid NOT NULL REFERENCES bridges (id) ON DELETE CASCADE,
    task_name       text NOT NULL,
    status          text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'completed', 'failed')),
    input           jsonb NOT NULL DEFAULT '{}',
    output          jsonb,
    error           text,
    workflow_id     text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    started_at      timestamptz,
    finished_at     timestamptz
);
-- A bridge's executions, newest first.
CREATE INDEX task_executions_bridge_created_idx ON task_executions (organization_id, bridge_id, created_at DESC, id DESC);
-- The reconciler's work list: rows still waiting on their run.
CREATE INDEX task_executions_waiting_idx ON task_executions (created_at) WHERE status IN ('queued', 'running');
-- One run of a task per bridge at a time (two syncs would move one cursor).
CREATE UNIQUE INDEX task_executions_one_active_key ON task_executions (bridge_id, task_name) WHERE status IN ('queued', 'running');

-- A bridge's sync position per task (grab-orders, grab-shipments): since
-- is the high-water mark (the newest platform updated_at of the last
-- completed sync); page_cursor, run_since and run_high_water are the
-- paging in flight, advanced in the transaction that stores each page, so
-- a crashed run resumes at the page after the last one stored and never
-- skips. last_page replays the outcome of a page stored by an attempt
-- whose answer was lost.
CREATE TABLE bridge_sync_cursors (
    bridge_id       uuid NOT NULL REFERENCES bridges (id) ON DELETE CASCADE,
    task_name       text NOT NULL,
    organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    since           timestamptz,
    page_cursor     text,
    run_since       timestamptz,
    run_high_water  timestamptz,
    last_page       jsonb,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bridge_id, task_name)
);

-- Why a bridge is in error (credentials refused), set by its tasks.
ALTER TABLE bridges ADD COLUMN last_error text;

-- Shipments imported from a platform (grab-shipments) carry the
-- platform's id, unique per bridge.
ALTER TABLE shipments ADD COLUMN external_id text;
CREATE UNIQUE INDEX shipments_bridge_external_key ON shipments (organization_id, bridge_id, external_id)
    WHERE bridge_id IS NOT NULL AND external_id IS NOT NULL;

-- What push-fulfillment sent: each shipment goes to a bridge once.
CREATE TABLE fulfillment_pushes (
    bridge_id       uuid NOT NULL REFERENCES bridges (id) ON DELETE CASCADE,
    shipment_id     uuid NOT NULL REFERENCES shipments (id) ON DELETE CASCADE,
    organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    external_id     text,
    created         boolean NOT NULL,
    pushed_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bridge_id, shipment_id)
);

-- +goose Down
DROP TABLE fulfillment_pushes;
DROP INDEX shipments_bridge_external_key;
ALTER TABLE shipments DROP COLUMN external_id;
ALTER TABLE bridges DROP COLUMN last_error;
DROP TABLE bridge_sync_cursors;
DROP TABLE task_executions;
