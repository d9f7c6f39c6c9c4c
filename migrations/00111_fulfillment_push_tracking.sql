-- +goose Up
-- A push remembers the tracking number it sent with the platform's
-- fulfillment id (external_id): when a shipment's tracking number changes
-- after its push (a label bought again), the next push-fulfillment run of a
-- platform that can change a fulfillment's tracking moves that fulfillment
-- to the new number instead of creating a second one or doing nothing.
-- Pushes made before this migration sent the shipment's current number.
ALTER TABLE fulfillment_pushes
    ADD COLUMN tracking_number text,
    ADD COLUMN updated_at      timestamptz NOT NULL DEFAULT now();
UPDATE fulfillment_pushes p SET tracking_number = s.tracking_number, updated_at = p.pushed_at
  FROM shipments s WHERE s.id = p.shipment_id;

-- +goose Down
ALTER TABLE fulfillment_pushes DROP COLUMN updated_at, DROP COLUMN tracking_number;
