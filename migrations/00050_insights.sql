-- +goose Up
-- Insights (spec Part 3, CONTRACT 11): findings computed from the
-- organization's data by the detectors of the insights package. One row
-- per (organization, fingerprint): the fingerprint names the detector, what
-- it is about (a carrier and service, a bridge…) and the scope it ran in
-- (the organization, an operation, a set of orders), so generating again
-- refreshes the row instead of piling up copies. A row lives 24 h after it
-- was last generated (expires_at); an expired row is replaced as a new
-- insight the next time its detector fires.
CREATE TABLE insights (
    id              uuid PRIMARY KEY,
    organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    fingerprint     text NOT NULL,
    detector        text NOT NULL,
    category        text NOT NULL CHECK (category IN ('anomaly', 'optimization', 'prediction', 'trend', 'alert', 'recommendation')),
    severity        text NOT NULL CHECK (severity IN ('info', 'low', 'medium', 'high', 'critical')),
    status          text NOT NULL DEFAULT 'new' CHECK (status IN ('new', 'acknowledged', 'resolved', 'dismissed')),
    title           text NOT NULL,
    summary         text NOT NULL,
    metrics         jsonb NOT NULL DEFAULT '[]',
    actions         jsonb NOT NULL DEFAULT '[]',
    confidence      double precision NOT NULL CHECK (confidence BETWEEN 0 AND 1),
    tags            text[] NOT NULL DEFAULT '{}',
    source          text NOT NULL CHECK (source IN ('rules', 'model')),
    -- The operation the insight was generated for (no foreign key: the
    -- operations tables belong to another area and an insight outlives
    -- nothing but its 24 h).
    operation_id    uuid,
    detected_at     timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL,
    acknowledged_at timestamptz,
    acknowledged_by jsonb,
    note            text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX insights_org_fingerprint_key ON insights (organization_id, fingerprint);
-- GET /insights: the organization's unexpired insights, newest first.
CREATE INDEX insights_org_detected_idx ON insights (organization_id, detected_at DESC, id DESC);
-- An operation's insights (GET /insights/operations/:id).
CREATE INDEX insights_org_operation_idx ON insights (organization_id, operation_id) WHERE operation_id IS NOT NULL;

-- The detectors' reads.
-- Orders stuck in a status: the organization's status changes (the
-- baseline of how long an order stays in each status) and an order's
-- newest status change.
CREATE INDEX order_activities_org_status_change_idx ON order_activities (organization_id, created_at)
    INCLUDE (order_id) WHERE type = 'status_change';
CREATE INDEX order_activities_order_status_change_idx ON order_activities (order_id, created_at)
    WHERE type = 'status_change';
-- Exception checkpoints of a window (a carrier's exception rate).
CREATE INDEX tracking_checkpoints_org_exception_idx ON tracking_checkpoints (organization_id, checkpoint_time)
    INCLUDE (shipment_id) WHERE is_exception;
-- Alternative quotes of the same request: snapshots with the same
-- addresses and packages (jsonb text is canonical: keys are sorted).
CREATE INDEX rate_snapshots_org_request_idx ON rate_snapshots
    (organization_id, md5(ship_from::text || ship_to::text || packages::text), total_price);
-- A shipment's rate comparison quotes (the cheaper-quote detector joins
-- shipments to the comparison items of their tracking numbers).
CREATE INDEX rate_comparison_items_org_tracking_idx ON rate_comparison_items (organization_id, tracking_number)
    WHERE status = 'completed' AND quoted_price IS NOT NULL;
-- Failed syncs and dispatch assignments of a window (alerts).
CREATE INDEX task_executions_org_failed_idx ON task_executions (organization_id, finished_at) WHERE status = 'failed';
CREATE INDEX dispatch_assignments_org_failed_updated_idx ON dispatch_assignments (organization_id, updated_at) WHERE status = 'failed';
-- Manual dispatch runs (the dispatcher recommendation).
CREATE INDEX dispatch_assignments_org_created_idx ON dispatch_assignments (organization_id, created_at)
    INCLUDE (dispatcher_id) WHERE metadata ->> 'trigger' = 'manual';

-- +goose Down
DROP INDEX dispatch_assignments_org_created_idx;
DROP INDEX dispatch_assignments_org_failed_updated_idx;
DROP INDEX task_executions_org_failed_idx;
DROP INDEX rate_comparison_items_org_tracking_idx;
DROP INDEX rate_snapshots_org_request_idx;
DROP INDEX tracking_checkpoints_org_exception_idx;
DROP INDEX order_activities_order_status_change_idx;
DROP INDEX order_activities_org_status_change_idx;
DROP TABLE insights;
