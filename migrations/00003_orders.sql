-- +goose Up
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE orders (
    id                  uuid PRIMARY KEY,
    organization_id     uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    -- Deleting a bridge keeps the orders it synced.
    bridge_id           uuid REFERENCES bridges (id) ON DELETE SET NULL,
    external_id         text NOT NULL,
    order_number        text,
    status              text NOT NULL CHECK (status IN ('pending', 'confirmed', 'processing', 'shipped', 'delivered', 'cancelled', 'refunded', 'on_hold')),
    payment_status      text NOT NULL DEFAULT 'pending' CHECK (payment_status IN ('pending', 'authorized', 'paid', 'partially_paid', 'refunded', 'voided')),
    fulfillment_status  text NOT NULL DEFAULT 'unfulfilled' CHECK (fulfillment_status IN ('unfulfilled', 'partial', 'fulfilled')),
    customer            jsonb NOT NULL,
    customer_email      text NOT NULL,
    customer_name       text NOT NULL DEFAULT '',
    shipping_address    jsonb,
    billing_address     jsonb,
    line_items          jsonb NOT NULL,
    totals              jsonb NOT NULL,
    total               numeric(14, 2) NOT NULL DEFAULT 0,
    currency            text NOT NULL DEFAULT 'USD',
    tags                text[] NOT NULL DEFAULT '{}',
    note                text,
    metadata            jsonb NOT NULL DEFAULT '{}',
    source_data         jsonb,
    ordered_at          timestamptz NOT NULL,
    sent_to_fulfillment timestamptz,
    sent_to_cart        timestamptz,
    search_text         text GENERATED ALWAYS AS (lower(coalesce(order_number, '') || ' ' || customer_name || ' ' || customer_email)) STORED,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now()
);
-- external_id is unique per source bridge.
CREATE UNIQUE INDEX orders_source_external_key ON orders (organization_id, bridge_id, external_id);
-- search_text is carried in the default list index so that counting the
-- matches of a broad search (a term found in most orders, or one shorter
-- than a trigram) is an index-only scan, not a walk of the whole heap.
CREATE INDEX orders_org_created_idx ON orders (organization_id, created_at DESC, id DESC) INCLUDE (search_text);
CREATE INDEX orders_org_status_created_idx ON orders (organization_id, status, created_at DESC, id DESC);
CREATE INDEX orders_org_bridge_created_idx ON orders (organization_id, bridge_id, created_at DESC, id DESC);
CREATE INDEX orders_search_trgm_idx ON orders USING gin (search_text gin_trgm_ops);

CREATE TABLE order_activities (
    id              uuid PRIMARY KEY,
    organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    order_id        uuid NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
    type            text NOT NULL,
    description     text NOT NULL,
    actor_type      text NOT NULL,
    actor_id        text,
    actor_name      text,
    metadata        jsonb NOT NULL DEFAULT '{}',
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX order_activities_order_idx ON order_activities (order_id, created_at, id);

-- +goose Down
DROP TABLE order_activities;
DROP TABLE orders;
