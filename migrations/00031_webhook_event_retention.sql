-- +goose Up
-- Retention of settled inbound webhook events (store.PurgeWebhookEvents
-- walks them oldest first).
CREATE INDEX webhook_events_settled_created_idx ON webhook_events (created_at) WHERE status IN ('processed', 'failed');

-- +goose Down
DROP INDEX webhook_events_settled_created_idx;
