-- +goose Up
CREATE TABLE bridges (
    id              uuid PRIMARY KEY,
    organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    type            text NOT NULL,
    name            text NOT NULL,
    -- Non-secret configuration, camelCase keys.
    config          jsonb NOT NULL DEFAULT '{}',
    -- Secret configuration values: AES-256-GCM sealed JSON object.
    credentials     bytea,
    status          text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused', 'error', 'disconnected')),
    last_sync_at    timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX bridges_org_created_idx ON bridges (organization_id, created_at DESC, id DESC);

-- +goose Down
DROP TABLE bridges;
