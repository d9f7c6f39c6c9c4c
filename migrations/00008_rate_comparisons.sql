-- +goose Up
-- A rate comparison: up to 10,000 tracking numbers of a source carrier,
-- each tracked to learn its route, weight and service, then rated with one
-- carrier account to show what that carrier would have cost.
CREATE TABLE rate_comparisons (
    id                 uuid PRIMARY KEY,
    organization_id    uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name               text NOT NULL,
    -- The account quotes are asked from; deleting it keeps the comparison.
    carrier_account_id uuid REFERENCES carrier_accounts (id) ON DELETE SET NULL,
    -- The carrier of that account at creation, kept when it is deleted.
    carrier            text NOT NULL,
    source_carrier     text NOT NULL CHECK (source_carrier IN ('carrier_a', 'carrier_b')),
    status             text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'processing', 'completed', 'failed', 'cancelled')),
    -- Counters, maintained by every batch write (one statement with the
    -- item update). pending_items counts the items not yet finished
    -- (pending, tracking or rating).
    total_items        integer NOT NULL,
    pending_items      integer NOT NULL,
    completed_items    integer NOT NULL DEFAULT 0,
    failed_items       integer NOT NULL DEFAULT 0,
    skipped_items      integer NOT NULL DEFAULT 0,
    -- Money aggregates over completed items: net cost of those that have
    -- one, quoted cost of all, savings of those that have a net cost.
    total_net_cost     numeric(16, 2) NOT NULL DEFAULT 0,
    total_quoted_cost  numeric(16, 2) NOT NULL DEFAULT 0,
    total_savings      numeric(16, 2) NOT NULL DEFAULT 0,
    error              text,
    workflow_id        text,
    started_at         timestamptz,
    completed_at       timestamptz,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);
-- The list: newest first, optionally by status.
CREATE INDEX rate_comparisons_org_created_idx ON rate_comparisons (organization_id, created_at DESC, id DESC);
CREATE INDEX rate_comparisons_org_status_created_idx ON rate_comparisons (organization_id, status, created_at DESC, id DESC);

CREATE TABLE rate_comparison_items (
    id                  uuid PRIMARY KEY,
    comparison_id       uuid NOT NULL REFERENCES rate_comparisons (id) ON DELETE CASCADE,
    organization_id     uuid NOT NULL,
    -- Position in the upload (1-based): the workflow's batches are seq ranges.
    seq                 integer NOT NULL,
    tracking_number     text NOT NULL,
    net_cost            numeric(12, 2),
    -- The source service: as uploaded, else as tracked.
    service_type        text,
    -- The service level it maps to (ground, 3_day, 2_day, overnight, …).
    service_level       text,
    status              text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'tracking', 'rating', 'completed', 'failed', 'skipped')),
    origin_city         text,
    origin_state        text,
    origin_zip          text,
    origin_country      text,
    destination_city    text,
    destination_state   text,
    destination_zip     text,
    destination_country text,
    weight_value        numeric(10, 2),
    weight_unit         text,
    zone                text,
    quoted_service      text,
    quoted_service_name text,
    quoted_price        numeric(12, 2),
    currency            text,
    transit_days        integer,
    -- net_cost - quoted_price; null without a net cost.
    savings             numeric(12, 2),
    error               text,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now()
);
-- Batches (seq ranges) and the default item order.
CREATE UNIQUE INDEX rate_comparison_items_seq_key ON rate_comparison_items (comparison_id, seq);
-- One tracking number once per comparison (case-insensitive); also serves
-- an exact or prefix search.
CREATE UNIQUE INDEX rate_comparison_items_tracking_key ON rate_comparison_items (comparison_id, upper(tracking_number) text_pattern_ops);
-- The items list filters.
CREATE INDEX rate_comparison_items_status_idx ON rate_comparison_items (comparison_id, status, seq);
CREATE INDEX rate_comparison_items_zone_idx ON rate_comparison_items (comparison_id, zone, seq);
CREATE INDEX rate_comparison_items_service_idx ON rate_comparison_items (comparison_id, service_type, seq);

-- +goose Down
DROP TABLE rate_comparison_items;
DROP TABLE rate_comparisons;
