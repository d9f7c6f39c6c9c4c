-- +goose Up
CREATE TABLE users (
    id            uuid PRIMARY KEY,
    email         text NOT NULL,
    password_hash text NOT NULL,
    first_name    text NOT NULL,
    last_name     text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_email_key ON users (lower(email));

CREATE TABLE organizations (
    id         uuid PRIMARY KEY,
    name       text NOT NULL,
    slug       text NOT NULL,
    plan       text NOT NULL DEFAULT 'free',
    settings   jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX organizations_slug_key ON organizations (slug);

CREATE TABLE memberships (
    organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    user_id         uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role            text NOT NULL CHECK (role IN ('owner', 'admin', 'manager', 'organization_manager', 'member')),
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (organization_id, user_id)
);
CREATE INDEX memberships_user_idx ON memberships (user_id);

CREATE TABLE invitations (
    id              uuid PRIMARY KEY,
    organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    email           text NOT NULL,
    role            text NOT NULL CHECK (role IN ('member', 'organization_manager', 'manager')),
    status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'accepted', 'revoked')),
    token_hash      bytea NOT NULL,
    invited_by      uuid REFERENCES users (id) ON DELETE SET NULL,
    expires_at      timestamptz NOT NULL,
    accepted_at     timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX invitations_token_key ON invitations (token_hash);
-- One pending invitation per e-mail and organization.
CREATE UNIQUE INDEX invitations_pending_email_key ON invitations (organization_id, lower(email)) WHERE status = 'pending';
CREATE INDEX invitations_org_idx ON invitations (organization_id, created_at DESC);

CREATE TABLE api_keys (
    id              uuid PRIMARY KEY,
    organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name            text NOT NULL,
    key_hash        bytea NOT NULL,
    key_prefix      text NOT NULL,
    scopes          text[] NOT NULL,
    created_by      uuid REFERENCES users (id) ON DELETE SET NULL,
    expires_at      timestamptz,
    revoked_at      timestamptz,
    last_used_at    timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now()
);
-- The per-request authentication lookup.
CREATE UNIQUE INDEX api_keys_hash_key ON api_keys (key_hash);
CREATE INDEX api_keys_org_idx ON api_keys (organization_id, created_at DESC) WHERE revoked_at IS NULL;

-- Stored responses for POST requests sent with an Idempotency-Key header.
CREATE TABLE idempotency_keys (
    organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    key             text NOT NULL,
    request_hash    bytea NOT NULL,
    status_code     integer,          -- NULL while the first request is in flight
    content_type    text,
    response_body   bytea,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (organization_id, key)
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);

-- +goose Down
DROP TABLE idempotency_keys;
DROP TABLE api_keys;
DROP TABLE invitations;
DROP TABLE memberships;
DROP TABLE organizations;
DROP TABLE users;
