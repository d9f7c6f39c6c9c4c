-- +goose Up
-- Reconciler without head-of-line blocking for shipments, pickups and
-- shipment actions (issue 22 item 7, as 00091 for the other waiting
-- rows): each pending row records when the reconciler last looked at it,
-- and the scan takes the least recently checked first (never checked
-- first), so a batch of labels legitimately waiting on its long run goes
-- to the back after each look instead of hiding a lost row behind it.
-- The indexes replace the pending-by-age ones the scans used.
ALTER TABLE shipments ADD COLUMN reconcile_checked_at timestamptz;
ALTER TABLE pickups ADD COLUMN reconcile_checked_at timestamptz;
ALTER TABLE shipment_actions ADD COLUMN reconcile_checked_at timestamptz;

CREATE INDEX shipments_reconcile_idx ON shipments (reconcile_checked_at NULLS FIRST, created_at) WHERE status = 'pending';
CREATE INDEX pickups_reconcile_idx ON pickups (reconcile_checked_at NULLS FIRST, created_at) WHERE status = 'pending';
CREATE INDEX shipment_actions_reconcile_idx ON shipment_actions (reconcile_checked_at NULLS FIRST, created_at) WHERE status = 'pending';
DROP INDEX shipments_pending_idx;
DROP INDEX pickups_pending_idx;
DROP INDEX shipment_actions_pending_idx;

-- +goose Down
CREATE INDEX pickups_pending_idx ON pickups (created_at) WHERE status = 'pending';
CREATE INDEX shipments_pending_idx ON shipments (created_at) WHERE status = 'pending';
CREATE INDEX shipment_actions_pending_idx ON shipment_actions (created_at) WHERE status = 'pending';
DROP INDEX shipment_actions_reconcile_idx;
DROP INDEX pickups_reconcile_idx;
DROP INDEX shipments_reconcile_idx;
ALTER TABLE shipment_actions DROP COLUMN reconcile_checked_at;
ALTER TABLE pickups DROP COLUMN reconcile_checked_at;
ALTER TABLE shipments DROP COLUMN reconcile_checked_at;
