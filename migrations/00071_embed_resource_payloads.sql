-- +goose Up
-- End-user webhook payloads carry the resource as the API shows it
-- (CONTRACT 12): the outbox triggers now store a snapshot of the row
-- (to_jsonb(NEW)) marked with its resource, still in the transaction of the
-- change; the fan-out renders the snapshot with the API's serializers
-- (order: GET /orders/:id, shipment: GET /shipments/:id, bridge: the embed
-- bridge). Rows written before (resource NULL) are sent as they are.
ALTER TABLE embed_outbox ADD COLUMN resource text CHECK (resource IN ('order', 'shipment', 'bridge'));

-- The embed config's default dispatcher (CONTRACT 12) is a dispatcher of
-- the organization; deleting the dispatcher clears it.
UPDATE embed_configs c SET default_dispatcher_id = NULL
 WHERE default_dispatcher_id IS NOT NULL
   AND NOT EXISTS (SELECT 1 FROM dispatchers d WHERE d.id = c.default_dispatcher_id AND d.organization_id = c.organization_id);
ALTER TABLE embed_configs ADD CONSTRAINT embed_configs_default_dispatcher_fkey
    FOREIGN KEY (default_dispatcher_id) REFERENCES dispatchers (id) ON DELETE SET NULL;

-- +goose StatementBegin
CREATE FUNCTION embed_outbox_enqueue_resource(org uuid, bridge uuid, ev text, res text, snapshot jsonb) RETURNS void
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
    INSERT INTO embed_outbox (organization_id, end_user_id, event, data, resource) VALUES (org, eu, ev, snapshot, res);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION embed_orders_outbox() RETURNS trigger
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
    PERFORM embed_outbox_enqueue_resource(NEW.organization_id, NEW.bridge_id, ev, 'order', to_jsonb(NEW));
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION embed_shipments_outbox() RETURNS trigger
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
    PERFORM embed_outbox_enqueue_resource(NEW.organization_id, NEW.bridge_id, ev, 'shipment', to_jsonb(NEW));
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION embed_bridges_outbox() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.end_user_id IS NOT NULL AND NEW.status = 'error' AND OLD.status IS DISTINCT FROM 'error' THEN
        PERFORM embed_outbox_enqueue_resource(NEW.organization_id, NEW.id, 'bridge.sync_failed', 'bridge', to_jsonb(NEW));
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION embed_bridges_outbox() RETURNS trigger
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
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION embed_shipments_outbox() RETURNS trigger
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
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION embed_orders_outbox() RETURNS trigger
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
DROP FUNCTION embed_outbox_enqueue_resource(uuid, uuid, text, text, jsonb);
ALTER TABLE embed_configs DROP CONSTRAINT embed_configs_default_dispatcher_fkey;
ALTER TABLE embed_outbox DROP COLUMN resource;
