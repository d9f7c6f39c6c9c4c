-- +goose Up
CREATE TABLE carrier_accounts (
    id                    uuid PRIMARY KEY,
    organization_id       uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name                  text NOT NULL,
    carrier               text NOT NULL CHECK (carrier IN ('carrier_a', 'carrier_b', 'carrier_c')),
    -- Credentials: AES-256-GCM sealed JSON object (secrets.Box.SealJSON).
    credentials           bytea,
    -- SHA-256 of the carrier account number, so a carrier_a registration of
    -- the same number updates the existing account instead of duplicating it.
    account_number_digest bytea,
    supports_rating       boolean NOT NULL DEFAULT false,
    supports_pickup       boolean NOT NULL DEFAULT false,
    supports_labels       boolean NOT NULL DEFAULT false,
    status                text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'inactive', 'error', 'pending')),
    is_test               boolean NOT NULL DEFAULT false,
    metadata              jsonb NOT NULL DEFAULT '{}',
    last_error            text,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX carrier_accounts_org_created_idx ON carrier_accounts (organization_id, created_at DESC, id DESC);
CREATE UNIQUE INDEX carrier_accounts_number_key ON carrier_accounts (organization_id, carrier, account_number_digest)
    WHERE account_number_digest IS NOT NULL;

CREATE TABLE shipments (
    id                 uuid PRIMARY KEY,
    organization_id    uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    order_id           uuid REFERENCES orders (id) ON DELETE SET NULL,
    -- The order's bridge at creation (for filters and the map).
    bridge_id          uuid REFERENCES bridges (id) ON DELETE SET NULL,
    -- Deleting a carrier account leaves its shipments intact.
    carrier_account_id uuid REFERENCES carrier_accounts (id) ON DELETE SET NULL,
    carrier            text NOT NULL,
    service            text NOT NULL,
    status             text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'label_created', 'in_transit', 'out_for_delivery', 'delivered', 'exception')),
    tracking_number    text,
    rate_amount        numeric(14, 2),
    rate_currency      text,
    ship_date          date,
    ship_from          jsonb,
    ship_to            jsonb,
    parcels            jsonb NOT NULL DEFAULT '[]',
    metadata           jsonb NOT NULL DEFAULT '{}',
    carrier_response   jsonb,
    ship_from_lat      double precision,
    ship_from_lng      double precision,
    ship_to_lat        double precision,
    ship_to_lng        double precision,
    last_tracked_at    timestamptz,
    delivered_at       timestamptz,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX shipments_org_created_idx ON shipments (organization_id, created_at DESC, id DESC);
CREATE INDEX shipments_org_status_created_idx ON shipments (organization_id, status, created_at DESC, id DESC);
CREATE INDEX shipments_org_order_idx ON shipments (organization_id, order_id);
CREATE INDEX shipments_org_carrier_created_idx ON shipments (organization_id, carrier, created_at DESC, id DESC);
CREATE INDEX shipments_tracking_number_idx ON shipments (organization_id, tracking_number);
-- The tracking poller's work list: shipments still moving.
CREATE INDEX shipments_tracking_due_idx ON shipments (last_tracked_at NULLS FIRST)
    WHERE status IN ('label_created', 'in_transit', 'out_for_delivery') AND tracking_number IS NOT NULL;

-- Label documents, kept apart so shipment rows stay small.
CREATE TABLE shipment_labels (
    shipment_id     uuid PRIMARY KEY REFERENCES shipments (id) ON DELETE CASCADE,
    organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    format          text NOT NULL,
    content_type    text NOT NULL,
    document        bytea NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE shipment_labels;
DROP TABLE shipments;
DROP TABLE carrier_accounts;
