-- +goose Up
-- Locations: an organization's warehouses and ship-from addresses. Manual
-- locations have no bridge; locations synced from a bridge (its warehouse
-- sync task, a later issue) carry the bridge and the platform's id and go
-- away with the bridge.
CREATE TABLE locations (
    id              uuid PRIMARY KEY,
    organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name            text NOT NULL,
    street          text,
    city            text,
    province        text,
    zip             text,
    country         text,
    bridge_id       uuid REFERENCES bridges (id) ON DELETE CASCADE,
    external_id     text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
-- The list (newest first).
CREATE INDEX locations_org_created_idx ON locations (organization_id, created_at DESC, id DESC);
-- Origin lookup: the oldest location of a bridge, or the oldest manual one.
CREATE INDEX locations_org_bridge_idx ON locations (organization_id, bridge_id, created_at, id);
-- The bridge sync upserts on the platform's id.
CREATE UNIQUE INDEX locations_bridge_external_key ON locations (organization_id, bridge_id, external_id)
    WHERE bridge_id IS NOT NULL AND external_id IS NOT NULL;

-- Rate snapshots: a quote kept as it was given. Immutable: no UPDATE ever
-- succeeds, and a DELETE succeeds only as the cascade of deleting the
-- organization. carrier_account_id has no foreign key on purpose: deleting
-- the account must neither delete nor rewrite the record of what it quoted.
CREATE TABLE rate_snapshots (
    id                      uuid PRIMARY KEY,
    organization_id         uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    carrier_account_id      uuid NOT NULL,
    carrier                 text NOT NULL CHECK (carrier IN ('carrier_a', 'carrier_b', 'carrier_c')),
    service_type            text NOT NULL,
    service_name            text NOT NULL,
    total_price             numeric NOT NULL CHECK (total_price >= 0),
    currency                text NOT NULL,
    breakdown               jsonb,
    transit_days            integer CHECK (transit_days >= 0),
    transit_days_guaranteed boolean NOT NULL DEFAULT false,
    estimated_delivery      timestamptz,
    delivery_by_time        text,
    ship_from               jsonb NOT NULL,
    ship_to                 jsonb NOT NULL,
    packages                jsonb NOT NULL,
    quoted_at               timestamptz NOT NULL DEFAULT now(),
    expires_at              timestamptz NOT NULL,
    created_at              timestamptz NOT NULL DEFAULT now(),
    raw_response            jsonb,
    CHECK (expires_at > quoted_at)
);
CREATE INDEX rate_snapshots_org_created_idx ON rate_snapshots (organization_id, created_at DESC, id DESC);

-- +goose StatementBegin
CREATE FUNCTION rate_snapshots_immutable() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- A DELETE fired by the organizations foreign key cascade runs inside
    -- the referential-integrity trigger, one level deeper.
    IF TG_OP = 'DELETE' AND pg_trigger_depth() > 1 THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'rate snapshots are immutable' USING ERRCODE = 'integrity_constraint_violation';
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER rate_snapshots_immutable
    BEFORE UPDATE OR DELETE ON rate_snapshots
    FOR EACH ROW EXECUTE FUNCTION rate_snapshots_immutable();

-- +goose Down
DROP TABLE rate_snapshots;
DROP FUNCTION rate_snapshots_immutable();
DROP TABLE locations;
