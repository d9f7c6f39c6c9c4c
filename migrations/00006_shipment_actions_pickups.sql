-- +goose Up
-- A label of several packages has one document per package: the piece
-- tracking numbers and documents, in package order (document keeps the
-- first package's label, or every ZPL piece concatenated).
ALTER TABLE shipment_labels
    ADD COLUMN tracking_numbers text[]  NOT NULL DEFAULT '{}',
    ADD COLUMN piece_documents  bytea[] NOT NULL DEFAULT '{}';

-- Hold / redirect / redeliver / instructions requests sent to the carrier by
-- the ShipmentAction workflow (shipment-action/<id>).
CREATE TABLE shipment_actions (
    id                  uuid PRIMARY KEY,
    organization_id     uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    shipment_id         uuid NOT NULL REFERENCES shipments (id) ON DELETE CASCADE,
    action_type         text NOT NULL CHECK (action_type IN ('hold', 'redirect', 'redeliver', 'instructions')),
    config              jsonb NOT NULL DEFAULT '{}',
    status              text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'completed', 'failed')),
    -- The shipment's status when the action was requested.
    shipment_status     text NOT NULL,
    confirmation_number text,
    messages            text[] NOT NULL DEFAULT '{}',
    error               text,
    carrier_response    jsonb,
    workflow_id         text,
    requested_by        jsonb,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    completed_at        timestamptz
);
CREATE INDEX shipment_actions_shipment_idx ON shipment_actions (organization_id, shipment_id, created_at DESC, id DESC);

-- Carrier pickups (carrier_a only). A confirmed pickup whose date has
-- passed reads as completed and is persisted as such by the
-- schedule/pickup-completion Temporal Schedule.
CREATE TABLE pickups (
    id                  uuid PRIMARY KEY,
    organization_id     uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    -- Deleting a carrier account keeps its pickups.
    carrier_account_id  uuid REFERENCES carrier_accounts (id) ON DELETE SET NULL,
    carrier             text NOT NULL,
    external_id         text,
    status              text NOT NULL DEFAULT 'confirmed' CHECK (status IN ('confirmed', 'completed', 'cancelled')),
    pickup_address      jsonb NOT NULL,
    pickup_date         date NOT NULL,
    ready_time          text NOT NULL,
    close_time          text NOT NULL,
    package_count       integer NOT NULL DEFAULT 1,
    total_weight        jsonb,
    confirmation_number text,
    carrier_response    jsonb,
    metadata            jsonb NOT NULL DEFAULT '{}',
    cancel_reason       text,
    cancelled_at        timestamptz,
    completed_at        timestamptz,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX pickups_org_date_idx ON pickups (organization_id, pickup_date DESC, created_at DESC, id DESC);
CREATE INDEX pickups_org_account_date_idx ON pickups (organization_id, carrier_account_id, pickup_date DESC, created_at DESC, id DESC);
CREATE INDEX pickups_org_status_date_idx ON pickups (organization_id, status, pickup_date DESC, created_at DESC, id DESC);
-- The completion job's work list.
CREATE INDEX pickups_due_completion_idx ON pickups (pickup_date) WHERE status = 'confirmed';

-- +goose Down
DROP TABLE pickups;
DROP TABLE shipment_actions;
ALTER TABLE shipment_labels
    DROP COLUMN piece_documents,
    DROP COLUMN tracking_numbers;
