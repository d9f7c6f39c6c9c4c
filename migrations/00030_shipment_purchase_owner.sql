-- +goose Up
-- A label purchase can run outside its own ShipmentLabel workflow: a batch
-- (an operation's execution) buys many labels inside one activity
-- (shipping.Service.PurchaseLabel). purchase_owner is then the workflow id
-- of the run that carries the purchase (NULL: shipment-label/<id>), so the
-- reconciler asks that run before it settles a shipment left pending.
-- label_requested_at is set just before the carrier is called: a pending
-- shipment without it provably never reached the carrier (it may be
-- deleted, or bought afresh); one with it and no stashed label may have
-- bought a label whose answer was lost (it is looked up, never bought
-- again).
ALTER TABLE shipments ADD COLUMN purchase_owner text, ADD COLUMN label_requested_at timestamptz;

-- +goose Down
ALTER TABLE shipments DROP COLUMN label_requested_at, DROP COLUMN purchase_owner;
