-- +goose Up
-- A shipment's total parcel weight in pounds as a column, for the weight
-- anomaly detector (which otherwise unpacks the parcels document of every
-- shipment of its 90-day baseline). Only numeric weights count; units lb
-- (the default), kg, g and oz.
-- +goose StatementBegin
CREATE FUNCTION fos_parcels_weight_lb(parcels jsonb) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT sum((p ->> 'weight')::float8 *
               CASE lower(coalesce(p ->> 'unit', 'lb')) WHEN 'kg' THEN 2.20462 WHEN 'g' THEN 0.00220462 WHEN 'oz' THEN 0.0625 ELSE 1 END)
      FROM jsonb_array_elements(CASE WHEN jsonb_typeof(parcels) = 'array' THEN parcels ELSE '[]' END) p
     WHERE jsonb_typeof(p) = 'object' AND jsonb_typeof(p -> 'weight') = 'number'
$$;
-- +goose StatementEnd
ALTER TABLE shipments ADD COLUMN total_weight_lb double precision
    GENERATED ALWAYS AS (fos_parcels_weight_lb(parcels)) STORED;
-- The insights' covering index, now with the weight.
DROP INDEX shipments_org_created_insights_idx;
CREATE INDEX shipments_org_created_insights_idx ON shipments (organization_id, created_at)
    INCLUDE (carrier, service, status, rate_amount, delivered_at, estimated_delivery_at, order_id, total_weight_lb);

-- +goose Down
DROP INDEX shipments_org_created_insights_idx;
CREATE INDEX shipments_org_created_insights_idx ON shipments (organization_id, created_at)
    INCLUDE (carrier, service, status, rate_amount, delivered_at, estimated_delivery_at, order_id);
ALTER TABLE shipments DROP COLUMN total_weight_lb;
DROP FUNCTION fos_parcels_weight_lb(jsonb);
