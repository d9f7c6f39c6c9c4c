-- +goose Up
-- Bulk operations (spec Part 3, CONTRACT 5 and 10): an operation, its
-- items (one per order), its history, and its counters.
CREATE TABLE operations (
    id              uuid PRIMARY KEY,
    organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name            text NOT NULL,
    description     text,
    status          text NOT NULL DEFAULT 'draft'
                    CHECK (status IN ('draft', 'pending', 'executing', 'paused', 'completed', 'cancelled', 'failed')),
    currency        text NOT NULL DEFAULT 'USD',
    created_by      text,
    -- executed_at is set when execution first starts: undo then also
    -- reverses the execution's effects (labels, dispatches).
    executed_at     timestamptz,
    started_at      timestamptz,
    completed_at    timestamptz,
    -- error_message says why the run failed (tenant-safe).
    error_message   text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX operations_org_updated_idx ON operations (organization_id, updated_at DESC, id DESC);
CREATE INDEX operations_org_status_updated_idx ON operations (organization_id, status, updated_at DESC, id DESC);
-- The reconciler looks for runs that should be going.
CREATE INDEX operations_running_idx ON operations (updated_at) WHERE status IN ('executing', 'paused');

CREATE TABLE operation_items (
    id                          uuid PRIMARY KEY,
    organization_id             uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    operation_id                uuid NOT NULL REFERENCES operations (id) ON DELETE CASCADE,
    -- seq orders the items of an operation (lists, execution ranges).
    seq                         bigint GENERATED ALWAYS AS IDENTITY,
    order_id                    uuid NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
    status                      text NOT NULL DEFAULT 'pending'
                                CHECK (status IN ('pending', 'processing', 'completed', 'failed', 'skipped')),
    rate_snapshot_id            uuid REFERENCES rate_snapshots (id) ON DELETE SET NULL,
    override_carrier_account_id uuid REFERENCES carrier_accounts (id) ON DELETE SET NULL,
    override_dispatch_bridge_id uuid REFERENCES bridges (id) ON DELETE SET NULL,
    pending_actions             jsonb NOT NULL DEFAULT '[]',
    applied_actions             jsonb NOT NULL DEFAULT '[]',
    retry_count                 integer NOT NULL DEFAULT 0,
    error_message               text,
    -- shipment_id is the label bought for the item; it is chosen before
    -- the purchase (the shipment's stable id) and kept when it succeeded.
    shipment_id                 uuid,
    dispatch_assignment_id      uuid,
    -- claim names the execution batch that moved the item to processing:
    -- a batch run again finds the items it claimed and settles them
    -- without repeating their effect.
    claim                       text,
    -- cost is the item's share of totalEstimatedCost: its snapshot's
    -- totalPrice, then the price of the label bought.
    cost                        numeric(14, 2) NOT NULL DEFAULT 0,
    created_at                  timestamptz NOT NULL DEFAULT now(),
    updated_at                  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (operation_id, order_id)
);
CREATE UNIQUE INDEX operation_items_op_seq_idx ON operation_items (operation_id, seq);
CREATE INDEX operation_items_op_status_seq_idx ON operation_items (operation_id, status, seq);
CREATE INDEX operation_items_op_rated_seq_idx ON operation_items (operation_id, seq) WHERE rate_snapshot_id IS NOT NULL;
CREATE INDEX operation_items_op_unrated_seq_idx ON operation_items (operation_id, seq) WHERE rate_snapshot_id IS NULL;
CREATE INDEX operation_items_order_idx ON operation_items (order_id);
CREATE INDEX operation_items_claim_idx ON operation_items (operation_id, claim) WHERE claim IS NOT NULL;
-- Undo of an execution walks the items that hold a label or a dispatch.
CREATE INDEX operation_items_effects_idx ON operation_items (operation_id, seq)
    WHERE shipment_id IS NOT NULL OR dispatch_assignment_id IS NOT NULL;

-- The counters of an operation, spread over shards so that concurrent
-- writers (batches of an execution, add calls) do not queue on one row.
-- Statement-level triggers on operation_items keep them exact in the same
-- transaction as the items' change; a read sums the shards.
CREATE TABLE operation_counts (
    operation_id uuid NOT NULL REFERENCES operations (id) ON DELETE CASCADE,
    shard        smallint NOT NULL,
    items        bigint NOT NULL DEFAULT 0,
    pending      bigint NOT NULL DEFAULT 0,
    processing   bigint NOT NULL DEFAULT 0,
    completed    bigint NOT NULL DEFAULT 0,
    failed       bigint NOT NULL DEFAULT 0,
    skipped      bigint NOT NULL DEFAULT 0,
    rated        bigint NOT NULL DEFAULT 0,
    cost         numeric(16, 2) NOT NULL DEFAULT 0,
    PRIMARY KEY (operation_id, shard)
);

-- +goose StatementBegin
CREATE FUNCTION operation_items_count_ins() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO operation_counts AS c (operation_id, shard, items, pending, processing, completed, failed, skipped, rated, cost)
    SELECT n.operation_id, pg_backend_pid() % 16, count(*),
           count(*) FILTER (WHERE n.status = 'pending'), count(*) FILTER (WHERE n.status = 'processing'),
           count(*) FILTER (WHERE n.status = 'completed'), count(*) FILTER (WHERE n.status = 'failed'),
           count(*) FILTER (WHERE n.status = 'skipped'), count(*) FILTER (WHERE n.rate_snapshot_id IS NOT NULL),
           coalesce(sum(n.cost), 0)
      FROM new_rows n GROUP BY n.operation_id
    ON CONFLICT (operation_id, shard) DO UPDATE SET
        items = c.items + excluded.items, pending = c.pending + excluded.pending, processing = c.processing + excluded.processing,
        completed = c.completed + excluded.completed, failed = c.failed + excluded.failed, skipped = c.skipped + excluded.skipped,
        rated = c.rated + excluded.rated, cost = c.cost + excluded.cost;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION operation_items_count_del() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Rows deleted with their operation (cascade) have no counters left.
    INSERT INTO operation_counts AS c (operation_id, shard, items, pending, processing, completed, failed, skipped, rated, cost)
    SELECT o.operation_id, pg_backend_pid() % 16, -count(*),
           -count(*) FILTER (WHERE o.status = 'pending'), -count(*) FILTER (WHERE o.status = 'processing'),
           -count(*) FILTER (WHERE o.status = 'completed'), -count(*) FILTER (WHERE o.status = 'failed'),
           -count(*) FILTER (WHERE o.status = 'skipped'), -count(*) FILTER (WHERE o.rate_snapshot_id IS NOT NULL),
           -coalesce(sum(o.cost), 0)
      FROM old_rows o
     WHERE EXISTS (SELECT 1 FROM operations op WHERE op.id = o.operation_id)
     GROUP BY o.operation_id
    ON CONFLICT (operation_id, shard) DO UPDATE SET
        items = c.items + excluded.items, pending = c.pending + excluded.pending, processing = c.processing + excluded.processing,
        completed = c.completed + excluded.completed, failed = c.failed + excluded.failed, skipped = c.skipped + excluded.skipped,
        rated = c.rated + excluded.rated, cost = c.cost + excluded.cost;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION operation_items_count_upd() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO operation_counts AS c (operation_id, shard, items, pending, processing, completed, failed, skipped, rated, cost)
    SELECT d.operation_id, pg_backend_pid() % 16, 0,
           sum(d.pending), sum(d.processing), sum(d.completed), sum(d.failed), sum(d.skipped), sum(d.rated), sum(d.cost)
      FROM (SELECT n.operation_id,
                   (n.status = 'pending')::int - (o.status = 'pending')::int AS pending,
                   (n.status = 'processing')::int - (o.status = 'processing')::int AS processing,
                   (n.status = 'completed')::int - (o.status = 'completed')::int AS completed,
                   (n.status = 'failed')::int - (o.status = 'failed')::int AS failed,
                   (n.status = 'skipped')::int - (o.status = 'skipped')::int AS skipped,
                   (n.rate_snapshot_id IS NOT NULL)::int - (o.rate_snapshot_id IS NOT NULL)::int AS rated,
                   n.cost - o.cost AS cost
              FROM new_rows n JOIN old_rows o ON o.id = n.id
             WHERE n.status IS DISTINCT FROM o.status OR n.cost <> o.cost
                OR (n.rate_snapshot_id IS NULL) <> (o.rate_snapshot_id IS NULL)) d
     GROUP BY d.operation_id
    ON CONFLICT (operation_id, shard) DO UPDATE SET
        pending = c.pending + excluded.pending, processing = c.processing + excluded.processing,
        completed = c.completed + excluded.completed, failed = c.failed + excluded.failed, skipped = c.skipped + excluded.skipped,
        rated = c.rated + excluded.rated, cost = c.cost + excluded.cost;
    RETURN NULL;
END $$;
-- +goose StatementEnd

CREATE TRIGGER operation_items_count_ins AFTER INSERT ON operation_items
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION operation_items_count_ins();
CREATE TRIGGER operation_items_count_del AFTER DELETE ON operation_items
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION operation_items_count_del();
CREATE TRIGGER operation_items_count_upd AFTER UPDATE ON operation_items
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION operation_items_count_upd();

CREATE TABLE operation_history (
    id                 uuid PRIMARY KEY,
    organization_id    uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    operation_id       uuid NOT NULL REFERENCES operations (id) ON DELETE CASCADE,
    action             text NOT NULL CHECK (action IN ('items_added', 'items_removed', 'item_updated', 'action_applied', 'executed', 'undone')),
    affected_item_ids  uuid[] NOT NULL DEFAULT '{}',
    affected_order_ids uuid[] NOT NULL DEFAULT '{}',
    previous_state     jsonb NOT NULL DEFAULT '{}',
    new_state          jsonb NOT NULL DEFAULT '{}',
    is_undoable        boolean NOT NULL DEFAULT true,
    is_undone          boolean NOT NULL DEFAULT false,
    -- undo_started_at: an OperationUndo run was asked for (the reconciler
    -- restarts one that vanished before is_undone).
    undo_started_at    timestamptz,
    performed_by       text,
    performed_at       timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX operation_history_op_idx ON operation_history (operation_id, performed_at DESC, id DESC);
CREATE INDEX operation_history_undoing_idx ON operation_history (undo_started_at) WHERE undo_started_at IS NOT NULL AND NOT is_undone;

-- +goose Down
DROP TABLE operation_history;
DROP TABLE operation_counts;
DROP TABLE operation_items;
DROP FUNCTION operation_items_count_ins();
DROP FUNCTION operation_items_count_del();
DROP FUNCTION operation_items_count_upd();
DROP TABLE operations;
