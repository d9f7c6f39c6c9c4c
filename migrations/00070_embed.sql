-- +goose Up
-- Embed (spec Part 3, CONTRACT 12): white-label config, end users, their
-- sessions, OAuth states, the event log, end-user webhooks, their outbox and
-- deliveries.

CREATE TABLE embed_configs (
    id                    uuid PRIMARY KEY,
    organization_id       uuid NOT NULL UNIQUE REFERENCES organizations (id) ON DELETE CASCADE,
    slug                  text NOT NULL UNIQUE,
    -- Publishable (not secret): it only opens auto-sessions and the public config.
    publishable_key       text NOT NULL UNIQUE,
    branding              jsonb NOT NULL DEFAULT '{}',
    allowed_origins       text[] NOT NULL DEFAULT '{}',
    allowed_bridge_types  text[] NOT NULL DEFAULT '{}',
    default_dispatcher_id uuid,
    settings              jsonb NOT NULL DEFAULT '{}',
    enabled_features      text[] NOT NULL DEFAULT '{}',
    is_active             boolean NOT NULL DEFAULT true,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE end_users (
    id              uuid PRIMARY KEY,
    organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    external_id     text NOT NULL,
    name            text,
    email           text,
    metadata        jsonb NOT NULL DEFAULT '{}',
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (organization_id, external_id)
);
CREATE INDEX end_users_org_created_idx ON end_users (organization_id, created_at DESC, id DESC);

CREATE TABLE embed_sessions (
    id                   uuid PRIMARY KEY,
    organization_id      uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    end_user_id          uuid NOT NULL REFERENCES end_users (id) ON DELETE CASCADE,
    -- SHA-256 of the est_ token; the token itself is never stored.
    token_hash           bytea NOT NULL UNIQUE,
    kind                 text NOT NULL CHECK (kind IN ('manual', 'auto')),
    scopes               text[] NOT NULL,
    -- NULL: every type the config allows.
    allowed_bridge_types text[],
    expires_at           timestamptz NOT NULL,
    revoked_at           timestamptz,
    created_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX embed_sessions_end_user_idx ON embed_sessions (end_user_id);

-- An embed bridge is an ordinary bridge with its end user.
ALTER TABLE bridges ADD COLUMN end_user_id uuid REFERENCES end_users (id) ON DELETE SET NULL;
CREATE INDEX bridges_end_user_idx ON bridges (end_user_id, created_at DESC) WHERE end_user_id IS NOT NULL;

-- storefront_a OAuth states: single use, bound to one bridge, 10 minutes.
CREATE TABLE embed_oauth_states (
    state_hash      bytea PRIMARY KEY,
    organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    bridge_id       uuid NOT NULL REFERENCES bridges (id) ON DELETE CASCADE,
    end_user_id     uuid REFERENCES end_users (id) ON DELETE CASCADE,
    session_id      uuid,
    shop            text NOT NULL,
    expires_at      timestamptz NOT NULL,
    used_at         timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now()
);

-- The event log outlives the end users and sessions it names.
CREATE TABLE embed_events (
    id              uuid PRIMARY KEY,
    organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    end_user_id     uuid,
    session_id      uuid,
    event_type      text NOT NULL,
    resource_type   text,
    resource_id     text,
    metadata        jsonb NOT NULL DEFAULT '{}',
    ip_address      text,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX embed_events_org_created_idx ON embed_events (organization_id, created_at DESC, id DESC);
CREATE INDEX embed_events_org_type_created_idx ON embed_events (organization_id, event_type, created_at DESC, id DESC);
CREATE INDEX embed_events_org_user_created_idx ON embed_events (organization_id, end_user_id, created_at DESC, id DESC);

CREATE TABLE end_user_webhooks (
    id                   uuid PRIMARY KEY,
    organization_id      uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    end_user_id          uuid NOT NULL REFERENCES end_users (id) ON DELETE CASCADE,
    url                  text NOT NULL,
    -- AES-256-GCM sealed secret (secrets.Box); NULL when none.
    secret               bytea,
    description          text,
    events               text[] NOT NULL,
    is_active            boolean NOT NULL DEFAULT true,
    disabled_reason      text,
    consecutive_failures integer NOT NULL DEFAULT 0,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX end_user_webhooks_user_idx ON end_user_webhooks (end_user_id, created_at);

-- Events waiting to be fanned out to end-user webhooks, written in the
-- transaction of the change (triggers below and the service's own writes).
CREATE TABLE embed_outbox (
    id              bigserial PRIMARY KEY,
    organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    end_user_id     uuid NOT NULL,
    event           text NOT NULL,
    data            jsonb NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    dispatched_at   timestamptz
);
CREATE INDEX embed_outbox_pending_idx ON embed_outbox (id) WHERE dispatched_at IS NULL;

CREATE TABLE webhook_deliveries (
    id              uuid PRIMARY KEY,
    organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    webhook_id      uuid NOT NULL REFERENCES end_user_webhooks (id) ON DELETE CASCADE,
    end_user_id     uuid NOT NULL,
    -- The dedupe id sent as webhook-id: the same for every attempt and
    -- redelivery of one event to one webhook.
    message_id      text NOT NULL,
    outbox_id       bigint,
    event           text NOT NULL,
    body            bytea NOT NULL,
    status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'retrying', 'succeeded', 'failed')),
    status_code     integer,
    success         boolean NOT NULL DEFAULT false,
    error           text,
    attempt         integer NOT NULL DEFAULT 0,
    duration_ms     integer,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX webhook_deliveries_outbox_key ON webhook_deliveries (webhook_id, outbox_id) WHERE outbox_id IS NOT NULL;
CREATE INDEX webhook_deliveries_webhook_created_idx ON webhook_deliveries (webhook_id, created_at DESC, id DESC);

-- +goose StatementBegin
CREATE FUNCTION embed_outbox_enqueue(org uuid, bridge uuid, ev text, payload jsonb) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    eu uuid;
BEGIN
    IF bridge IS NULL THEN
        RETURN;
    END IF;
    SELECT end_user_id INTO eu FROM bridges WHERE id = bridge;
    IF eu IS NULL THEN
        RETURN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM end_user_webhooks w
                    WHERE w.end_user_id = eu AND w.is_active AND ev = ANY (w.events)) THEN
        RETURN;
    END IF;
    INSERT INTO embed_outbox (organization_id, end_user_id, event, data) VALUES (org, eu, ev, payload);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION embed_orders_outbox() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    ev text;
BEGIN
    IF TG_OP = 'INSERT' THEN
        ev := 'order.created';
    ELSIF (OLD.status, OLD.payment_status, OLD.fulfillment_status, OLD.shipping_address, OLD.line_items, OLD.totals, OLD.tags, OLD.note)
          IS DISTINCT FROM
          (NEW.status, NEW.payment_status, NEW.fulfillment_status, NEW.shipping_address, NEW.line_items, NEW.totals, NEW.tags, NEW.note) THEN
        ev := 'order.updated';
    ELSE
        RETURN NULL;
    END IF;
    PERFORM embed_outbox_enqueue(NEW.organization_id, NEW.bridge_id, ev, jsonb_build_object(
        'id', NEW.id, 'organizationId', NEW.organization_id, 'bridgeId', NEW.bridge_id,
        'externalId', NEW.external_id, 'orderNumber', NEW.order_number, 'status', NEW.status,
        'paymentStatus', NEW.payment_status, 'fulfillmentStatus', NEW.fulfillment_status,
        'customer', NEW.customer, 'shippingAddress', NEW.shipping_address, 'lineItems', NEW.line_items,
        'totals', NEW.totals, 'currency', NEW.currency, 'tags', to_jsonb(NEW.tags), 'note', NEW.note,
        'orderedAt', NEW.ordered_at, 'createdAt', NEW.created_at, 'updatedAt', NEW.updated_at));
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER orders_embed_outbox AFTER INSERT OR UPDATE ON orders
    FOR EACH ROW EXECUTE FUNCTION embed_orders_outbox();

-- +goose StatementBegin
CREATE FUNCTION embed_shipments_outbox() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    ev text;
BEGIN
    IF TG_OP = 'INSERT' THEN
        ev := 'shipment.created';
    ELSIF NEW.status = 'delivered' AND OLD.status IS DISTINCT FROM 'delivered' THEN
        ev := 'shipment.delivered';
    ELSIF NEW.status IN ('in_transit', 'out_for_delivery') AND OLD.status NOT IN ('in_transit', 'out_for_delivery', 'delivered') THEN
        ev := 'shipment.shipped';
    ELSE
        RETURN NULL;
    END IF;
    PERFORM embed_outbox_enqueue(NEW.organization_id, NEW.bridge_id, ev, jsonb_build_object(
        'id', NEW.id, 'organizationId', NEW.organization_id, 'orderId', NEW.order_id, 'bridgeId', NEW.bridge_id,
        'carrier', NEW.carrier, 'service', NEW.service, 'status', NEW.status,
        'trackingNumber', NEW.tracking_number, 'shipDate', NEW.ship_date, 'shipTo', NEW.ship_to,
        'deliveredAt', NEW.delivered_at, 'createdAt', NEW.created_at, 'updatedAt', NEW.updated_at));
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER shipments_embed_outbox AFTER INSERT OR UPDATE OF status ON shipments
    FOR EACH ROW EXECUTE FUNCTION embed_shipments_outbox();

-- +goose StatementBegin
CREATE FUNCTION embed_bridges_outbox() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.end_user_id IS NOT NULL AND NEW.status = 'error' AND OLD.status IS DISTINCT FROM 'error' THEN
        PERFORM embed_outbox_enqueue(NEW.organization_id, NEW.id, 'bridge.sync_failed', jsonb_build_object(
            'id', NEW.id, 'organizationId', NEW.organization_id, 'type', NEW.type, 'name', NEW.name,
            'status', NEW.status, 'endUserId', NEW.end_user_id, 'errorMessage', NEW.last_error,
            'lastSyncAt', NEW.last_sync_at, 'updatedAt', NEW.updated_at));
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER bridges_embed_outbox AFTER UPDATE OF status ON bridges
    FOR EACH ROW EXECUTE FUNCTION embed_bridges_outbox();

-- +goose Down
DROP TRIGGER bridges_embed_outbox ON bridges;
DROP FUNCTION embed_bridges_outbox();
DROP TRIGGER shipments_embed_outbox ON shipments;
DROP TRIGGER orders_embed_outbox ON orders;
DROP FUNCTION embed_shipments_outbox();
DROP FUNCTION embed_orders_outbox();
DROP FUNCTION embed_outbox_enqueue(uuid, uuid, text, jsonb);
DROP TABLE webhook_deliveries;
DROP TABLE embed_outbox;
DROP TABLE end_user_webhooks;
DROP TABLE embed_events;
DROP TABLE embed_oauth_states;
DROP INDEX bridges_end_user_idx;
ALTER TABLE bridges DROP COLUMN end_user_id;
DROP TABLE embed_sessions;
DROP TABLE end_users;
DROP TABLE embed_configs;
