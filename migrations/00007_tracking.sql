-- +goose Up
-- Tracking checkpoints of shipments (spec Part 1, Tracking checkpoint).
CREATE TABLE tracking_checkpoints (
    id              uuid PRIMARY KEY,
    -- Always the shipment's organization (the store copies it from the
    -- shipment row). No foreign key of its own: deleting an organization
    -- deletes its shipments, which delete their checkpoints, and a batch of
    -- 1,000 checkpoints is spared 1,000 more key checks.
    organization_id uuid NOT NULL,
    shipment_id     uuid NOT NULL REFERENCES shipments (id) ON DELETE CASCADE,
    sequence        integer NOT NULL CHECK (sequence >= 0),
    status          text NOT NULL CHECK (status IN ('pending', 'label_created', 'in_transit', 'out_for_delivery', 'delivered', 'exception')),
    status_detail   text,
    description     text,
    city            text,
    state           text,
    country         text,
    country_code    text CHECK (country_code ~ '^[A-Z]{2}$'),
    zip             text,
    latitude        double precision CHECK (latitude BETWEEN -90 AND 90),
    longitude       double precision CHECK (longitude BETWEEN -180 AND 180),
    checkpoint_time timestamptz NOT NULL,
    -- Who reported the checkpoint: a carrier code for the tracking poller,
    -- any client-chosen name for the API.
    source          text NOT NULL,
    source_event_id text,
    raw_data        jsonb,
    is_exception    boolean NOT NULL DEFAULT false,
    exception_type  text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
-- The deduplication key (shipment + source + sourceEventId). NULLs are
-- distinct: a checkpoint without sourceEventId never conflicts.
CREATE UNIQUE INDEX tracking_checkpoints_dedupe_key ON tracking_checkpoints (shipment_id, source, source_event_id);
-- The list (ordered by sequence) and, index-only, the shipment's newest
-- checkpoint time.
CREATE INDEX tracking_checkpoints_shipment_seq_idx ON tracking_checkpoints (shipment_id, sequence, checkpoint_time, id);

-- The tracking poller also revisits recent shipments in `exception` (a later
-- scan may take them out of it); shipments_tracking_due_idx (00004) covers
-- the moving ones.
CREATE INDEX tracking_exception_due_idx ON shipments (last_tracked_at NULLS FIRST, created_at)
    WHERE status = 'exception' AND tracking_number IS NOT NULL;
-- The tracking map: the organization's shipments with coordinates, newest
-- first (and their count).
CREATE INDEX tracking_map_idx ON shipments (organization_id, created_at DESC, id DESC)
    WHERE (ship_to_lat IS NOT NULL AND ship_to_lng IS NOT NULL) OR (ship_from_lat IS NOT NULL AND ship_from_lng IS NOT NULL);

-- +goose Down
DROP INDEX tracking_map_idx;
DROP INDEX tracking_exception_due_idx;
DROP TABLE tracking_checkpoints;
