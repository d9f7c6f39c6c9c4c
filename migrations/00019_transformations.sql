-- +goose Up
-- Transformations: tenant JavaScript that reshapes data at a trigger point
-- (spec Part 2). bridge_id NULL means every bridge of the organization;
-- a bridge's transformations go away with it. Higher priority runs first.
CREATE TABLE transformations (
    id              uuid PRIMARY KEY,
    organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name            text NOT NULL,
    description     text,
    trigger_point   text NOT NULL CHECK (trigger_point IN ('before_sync', 'after_sync', 'before_operation', 'after_operation')),
    bridge_id       uuid REFERENCES bridges (id) ON DELETE CASCADE,
    code            text NOT NULL,
    is_active       boolean NOT NULL DEFAULT true,
    priority        integer NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
-- The list (priority descending) and the trigger lookup (active ones of a
-- trigger point, the bridge's and the global ones, in priority order).
CREATE INDEX transformations_org_priority_idx ON transformations (organization_id, priority DESC, created_at, id);
CREATE INDEX transformations_trigger_idx ON transformations (organization_id, trigger_point, priority DESC)
    WHERE is_active;

-- +goose Down
DROP TABLE transformations;
