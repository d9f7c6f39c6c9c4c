-- +goose Up
-- A shipment's estimated delivery as a column: the label's carrier
-- response keeps it as text inside a document that is often large
-- (TOASTed), and carrier performance, late-shipment predictions and
-- on-time rates read it for every shipment of a window. The generated
-- column parses it once, at write time.
--
-- fos_iso_timestamptz parses an ISO 8601 timestamp that carries its UTC
-- offset (what the carrier adapters write: Go's RFC 3339), else NULL.
-- Such a text converts the same whatever the session's TimeZone and
-- DateStyle, so the function is immutable in fact, as a generated column
-- requires.
-- +goose StatementBegin
CREATE FUNCTION fos_iso_timestamptz(t text) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN t ~ '^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$' THEN t::timestamptz END
$$;
-- +goose StatementEnd
ALTER TABLE shipments ADD COLUMN estimated_delivery_at timestamptz
    GENERATED ALWAYS AS (fos_iso_timestamptz(carrier_response ->> 'estimatedDelivery')) STORED;
-- The insights' reads of a window of shipments (carrier performance, the
-- detectors) as index-only scans: the organization's shipments by
-- creation time, with the columns they aggregate.
CREATE INDEX shipments_org_created_insights_idx ON shipments (organization_id, created_at)
    INCLUDE (carrier, service, status, rate_amount, delivered_at, estimated_delivery_at, order_id);

-- +goose Down
DROP INDEX shipments_org_created_insights_idx;
ALTER TABLE shipments DROP COLUMN estimated_delivery_at;
DROP FUNCTION fos_iso_timestamptz(text);
