-- +goose Up
-- Pickups are booked by the PickupBooking workflow (pickup/<pickupId>): the
-- row is inserted as pending before the workflow starts, becomes confirmed
-- when the carrier's booking is recorded, and failed when the carrier's
-- answer was lost (the booking's outcome is unknown; the reason is kept in
-- carrier_response.error). A refused booking deletes its pending row. The
-- API shows neither pending nor failed pickups.
ALTER TABLE pickups DROP CONSTRAINT pickups_status_check;
ALTER TABLE pickups ADD CONSTRAINT pickups_status_check
    CHECK (status IN ('pending', 'confirmed', 'completed', 'cancelled', 'failed'));

-- The reconciler (Maintenance) finds rows left waiting on a workflow.
CREATE INDEX pickups_pending_idx ON pickups (created_at) WHERE status = 'pending';
CREATE INDEX shipments_pending_idx ON shipments (created_at) WHERE status = 'pending';
CREATE INDEX shipment_actions_pending_idx ON shipment_actions (created_at) WHERE status = 'pending';

-- +goose Down
DROP INDEX shipment_actions_pending_idx;
DROP INDEX shipments_pending_idx;
DROP INDEX pickups_pending_idx;
DELETE FROM pickups WHERE status IN ('pending', 'failed');
ALTER TABLE pickups DROP CONSTRAINT pickups_status_check;
ALTER TABLE pickups ADD CONSTRAINT pickups_status_check
    CHECK (status IN ('confirmed', 'completed', 'cancelled'));
