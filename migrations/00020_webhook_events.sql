-- +goose Up
-- Inbound platform webhooks (CONTRACT 6): each verified event is stored
-- here before it is acknowledged, then relayed to an InboundWebhook
-- workflow (inbound-webhook/<id>) by the worker's relay.
CREATE TABLE webhook_events (
    id              uuid PRIMARY KEY,
    organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    bridge_id       uuid NOT NULL REFERENCES bridges (id) ON DELETE CASCADE,
    topic           text NOT NULL,
    -- The platform's event id, X-Webhook-Id, the payload's id or a hash of
    -- the raw body: a redelivery has the same key and is stored once.
    dedupe_key      text NOT NULL,
    payload         jsonb NOT NULL,
    -- The delivery headers that identify the event (never a signature).
    headers         jsonb NOT NULL DEFAULT '{}',
    status          text NOT NULL DEFAULT 'received' CHECK (status IN ('received', 'processing', 'processed', 'failed')),
    error           text,
    attempts        integer NOT NULL DEFAULT 0,
    -- The relay's claim: a row is (re)started when relay_after has passed
    -- and it is still received; relayed_at is the last successful start.
    relay_after     timestamptz NOT NULL DEFAULT now(),
    relayed_at      timestamptz,
    -- What the processing did (order id, created, ...).
    result          jsonb,
    created_at      timestamptz NOT NULL DEFAULT now(),
    processed_at    timestamptz
);
CREATE UNIQUE INDEX webhook_events_dedupe_key ON webhook_events (bridge_id, dedupe_key);
CREATE INDEX webhook_events_org_created_idx ON webhook_events (organization_id, created_at DESC, id DESC);
-- The relay's queue: only rows waiting for a workflow.
CREATE INDEX webhook_events_relay_idx ON webhook_events (relay_after, created_at) WHERE status = 'received';

-- +goose Down
DROP TABLE webhook_events;
