-- +goose Up
-- Condition sets (Part 2): named lists of values that dispatcher and split
-- rule conditions test with in_set / not_in_set.
CREATE TABLE condition_sets (
    id              uuid PRIMARY KEY,
    organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name            text NOT NULL,
    description     text,
    value_type      text NOT NULL CHECK (value_type IN ('string', 'number', 'boolean')),
    -- Kept by the statements that add and remove values, under the set's
    -- row lock, so it is exact under concurrent writes.
    value_count     integer NOT NULL DEFAULT 0 CHECK (value_count >= 0),
    -- Bumped by every change of the values: an evaluator's cached copy of
    -- the set is current while its version is (rules.SetCache).
    values_version  bigint NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX condition_sets_org_name_key ON condition_sets (organization_id, name);

-- value is the canonical form for the set's value type (cond.Canonical), so
-- "1.50" and "1.5" are one value of a number set. The primary key serves
-- duplicate detection, alphabetical pages and lookups; id (the API's value
-- id) is not looked up, so it has no index of its own. There is no foreign
-- key to condition_sets either: its per-row check would be most of the
-- cost of a 100,000-value batch. Writers hold the set's row lock while
-- they add values (store.AddConditionSetValues), and the trigger below
-- removes a deleted set's values (also when its organization is deleted).
CREATE TABLE condition_set_values (
    condition_set_id uuid NOT NULL,
    value            text NOT NULL,
    id               uuid NOT NULL,
    label            text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (condition_set_id, value)
);

-- +goose StatementBegin
CREATE FUNCTION condition_sets_delete_values() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM condition_set_values v USING gone g WHERE v.condition_set_id = g.id;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER condition_sets_delete_values AFTER DELETE ON condition_sets
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION condition_sets_delete_values();

-- Split rules (Part 2). condition_set_ids lists the sets the rule's
-- condition groups use (kept by every write), so deleting a referenced set
-- is refused with one indexed query.
CREATE TABLE split_rules (
    id                uuid PRIMARY KEY,
    organization_id   uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name              text NOT NULL,
    description       text,
    method            text NOT NULL CHECK (method IN ('condition', 'field_group')),
    condition_groups  jsonb NOT NULL DEFAULT '[]',
    group_field       text,
    -- A rule scoped to a bridge goes with it: it could never apply again.
    bridge_id         uuid REFERENCES bridges (id) ON DELETE CASCADE,
    is_active         boolean NOT NULL DEFAULT true,
    priority          integer NOT NULL DEFAULT 0 CHECK (priority BETWEEN 0 AND 1000),
    orders_split      integer NOT NULL DEFAULT 0,
    last_split_at     timestamptz,
    condition_set_ids uuid[] NOT NULL DEFAULT '{}',
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX split_rules_org_priority_idx ON split_rules (organization_id, priority DESC, name, id);
CREATE INDEX split_rules_set_ids_idx ON split_rules USING gin (condition_set_ids);

-- +goose Down
DROP TABLE split_rules;
DROP TABLE condition_set_values;
DROP TABLE condition_sets;
DROP FUNCTION condition_sets_delete_values();
