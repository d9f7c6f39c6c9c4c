-- +goose Up
-- Dispatchers (Part 2): route orders of source bridges to a destination
-- bridge when their conditions match. condition_set_ids lists the sets the
-- conditions use (kept by every write), so deleting a referenced set is
-- refused with one indexed query (store.conditionSetReferrers).
CREATE TABLE dispatchers (
    id                    uuid PRIMARY KEY,
    organization_id       uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name                  text NOT NULL,
    description           text,
    source_bridge_ids     uuid[] NOT NULL,
    destination_bridge_id uuid NOT NULL REFERENCES bridges (id) ON DELETE CASCADE,
    destination_config    jsonb NOT NULL DEFAULT '{}',
    conditions            jsonb NOT NULL,
    match_mode            text NOT NULL DEFAULT 'all' CHECK (match_mode IN ('all', 'any')),
    trigger_on            text[] NOT NULL DEFAULT '{order_created}',
    is_active             boolean NOT NULL DEFAULT true,
    priority              integer NOT NULL DEFAULT 0 CHECK (priority BETWEEN 0 AND 1000),
    orders_assigned       integer NOT NULL DEFAULT 0,
    last_assigned_at      timestamptz,
    condition_set_ids     uuid[] NOT NULL DEFAULT '{}',
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX dispatchers_org_name_key ON dispatchers (organization_id, name);
CREATE INDEX dispatchers_org_priority_idx ON dispatchers (organization_id, priority DESC, name, id);
CREATE INDEX dispatchers_set_ids_idx ON dispatchers USING gin (condition_set_ids);
CREATE INDEX dispatchers_sources_idx ON dispatchers USING gin (source_bridge_ids);

-- Dispatch assignments: an order sent to a destination bridge by a
-- dispatcher. One per order and destination (bulk assign and every
-- trigger skip an order already assigned there). The DispatchAssignment
-- workflow (dispatch/<id>) moves it pending -> processing -> completed |
-- failed | skipped; the reconciler ends rows whose run is gone.
CREATE TABLE dispatch_assignments (
    id                    uuid PRIMARY KEY,
    organization_id       uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    dispatcher_id         uuid NOT NULL REFERENCES dispatchers (id) ON DELETE CASCADE,
    order_id              uuid NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
    destination_bridge_id uuid NOT NULL REFERENCES bridges (id) ON DELETE CASCADE,
    status                text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'processing', 'completed', 'failed', 'skipped')),
    task_execution_id     uuid REFERENCES task_executions (id) ON DELETE SET NULL,
    processed_at          timestamptz,
    error_message         text,
    retry_count           integer NOT NULL DEFAULT 0,
    metadata              jsonb NOT NULL DEFAULT '{}',
    assigned_at           timestamptz NOT NULL DEFAULT now(),
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX dispatch_assignments_order_dest_key ON dispatch_assignments (organization_id, order_id, destination_bridge_id);
CREATE INDEX dispatch_assignments_dispatcher_idx ON dispatch_assignments (dispatcher_id, created_at DESC, id DESC);
CREATE INDEX dispatch_assignments_waiting_idx ON dispatch_assignments (updated_at) WHERE status IN ('pending', 'processing');
CREATE INDEX dispatch_assignments_failed_idx ON dispatch_assignments (organization_id) WHERE status = 'failed';

-- +goose Down
DROP TABLE dispatch_assignments;
DROP TABLE dispatchers;
