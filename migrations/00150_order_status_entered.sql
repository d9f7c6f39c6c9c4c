-- +goose Up
-- How long an order has been in its status, and how long orders of the
-- organization usually stay in each status (the stuck-orders insight),
-- without a window over the order's history at read time.
--
-- orders.status_entered_at is when the order entered its current status:
-- its creation (the column's default is the insert's now(), as created_at's
-- is: a writer that backdates created_at sets both), moved by the orders
-- table's own trigger in the same statement as any write that changes the
-- status (the API's and the agent's edits, the syncs, the transformation
-- write-back), so no writer can forget it.
--
-- order_status_changes keeps one row per status change, written by the
-- same trigger: the status left, the status entered, when the order had
-- entered the one it left and when it left it. A status's usual time is an
-- aggregate over an index range of it. It has no foreign key to
-- organizations (an order update would then lock its organization's row,
-- see order_counts, migration 00025); the order's cascade removes its rows.
ALTER TABLE orders ADD COLUMN status_entered_at timestamptz;

CREATE TABLE order_status_changes (
    order_id        uuid NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
    id              bigint GENERATED ALWAYS AS IDENTITY,
    organization_id uuid NOT NULL,
    from_status     text NOT NULL,
    to_status       text NOT NULL,
    -- When the order had entered from_status, and when it left it.
    from_entered_at timestamptz NOT NULL,
    changed_at      timestamptz NOT NULL,
    PRIMARY KEY (order_id, id)
);
-- The stays in a status that ended in a window (store.StuckOrders).
CREATE INDEX order_status_changes_org_from_idx ON order_status_changes (organization_id, from_status, changed_at)
    INCLUDE (from_entered_at);

-- The history so far comes from the status_change activities (the only
-- status changes recorded until now): each change left a status entered at
-- the order's previous change, else at its creation; an order entered its
-- current status at its newest change, else at its creation.
INSERT INTO order_status_changes (order_id, organization_id, from_status, to_status, from_entered_at, changed_at)
SELECT a.order_id, a.organization_id, a.metadata ->> 'from', a.metadata ->> 'to',
       coalesce(lag(a.created_at) OVER (PARTITION BY a.order_id ORDER BY a.created_at, a.id), o.created_at), a.created_at
  FROM order_activities a JOIN orders o ON o.id = a.order_id
 WHERE a.type = 'status_change' AND a.metadata ->> 'from' IS NOT NULL AND a.metadata ->> 'to' IS NOT NULL;
UPDATE orders o
   SET status_entered_at = greatest(o.created_at, (SELECT max(c.changed_at) FROM order_status_changes c WHERE c.order_id = o.id));
ALTER TABLE orders ALTER COLUMN status_entered_at SET DEFAULT now(), ALTER COLUMN status_entered_at SET NOT NULL;

-- An organization's orders in a status by when they entered it (the orders
-- stuck in a status, an index-only range).
CREATE INDEX orders_org_status_entered_idx ON orders (organization_id, status, status_entered_at) INCLUDE (id);

-- A status change moves status_entered_at to the statement's time, unless
-- the statement sets it itself (a backdated import), and records the
-- change. ON CONFLICT DO UPDATE and UPDATE both fire it, only for rows
-- whose status really changes.
-- +goose StatementBegin
CREATE FUNCTION orders_status_entered() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status_entered_at IS NOT DISTINCT FROM OLD.status_entered_at THEN
        NEW.status_entered_at := now();
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE FUNCTION orders_status_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO order_status_changes (order_id, organization_id, from_status, to_status, from_entered_at, changed_at)
    VALUES (NEW.id, NEW.organization_id, OLD.status, NEW.status, OLD.status_entered_at, NEW.status_entered_at);
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER orders_status_entered BEFORE UPDATE OF status ON orders
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION orders_status_entered();
CREATE TRIGGER orders_status_changed AFTER UPDATE OF status ON orders
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION orders_status_changed();

-- +goose Down
DROP TRIGGER orders_status_changed ON orders;
DROP TRIGGER orders_status_entered ON orders;
DROP FUNCTION orders_status_changed();
DROP FUNCTION orders_status_entered();
DROP INDEX orders_org_status_entered_idx;
DROP TABLE order_status_changes;
ALTER TABLE orders DROP COLUMN status_entered_at;
