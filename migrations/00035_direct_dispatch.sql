-- +goose Up
-- An order can be dispatched to a bridge without a dispatcher: an
-- operation's item with overrideDispatchBridgeId (CONTRACT 10) becomes a
-- dispatch assignment with metadata.trigger "operation" and no dispatcher
-- (routing.Service.DispatchToBridge). The (organization, order,
-- destination) key still makes one assignment per order and destination.
ALTER TABLE dispatch_assignments ALTER COLUMN dispatcher_id DROP NOT NULL;

-- +goose Down
DELETE FROM dispatch_assignments WHERE dispatcher_id IS NULL;
ALTER TABLE dispatch_assignments ALTER COLUMN dispatcher_id SET NOT NULL;
