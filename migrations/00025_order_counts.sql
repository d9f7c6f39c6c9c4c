-- +goose Up
-- The number of an organization's orders per (status, bridge), kept by the
-- orders table's own triggers in the same transaction as the change, so a
-- list's exact total without a search is a sum over a handful of rows
-- (store.ListOrders) instead of an index walk over every order of the
-- organization: 100,000 orders cost a 5 ms count before, and the cost grew
-- with the table.
--
-- A bucket is spread over one row per writer: a database session adds to
-- its own row (writer = its backend's process id, unique among the sessions
-- alive at once), so concurrent order writes never wait for each other's
-- counters and never deadlock on them, and adding is one upsert that
-- updates in place (n is in no index). Maintenance folds the rows of
-- sessions into the bucket's writer-0 row (store.CompactOrderCounts).
-- bridge_key is the order's bridge, or the nil UUID for orders without one.
CREATE TABLE order_counts (
    organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    status          text NOT NULL,
    bridge_key      uuid NOT NULL,
    writer          integer NOT NULL,
    n               bigint NOT NULL,
    PRIMARY KEY (organization_id, status, bridge_key, writer)
) WITH (fillfactor = 50, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000,
        autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 1000);
-- The table is small and every order write updates it: half of each page is
-- left free so an update stays on its page (HOT), and vacuum comes after
-- every thousand changes instead of a fifth of the table, which keeps a
-- bulk write's dead versions (a statement that inserts 100,000 orders
-- leaves as many versions of its bucket's row) from slowing the sums.

-- An inserted order, or one whose status or bridge changed, moves its
-- bucket's count in a row trigger: for the common single-order write that
-- costs a fraction of what a statement trigger's transition tables cost,
-- and an update that touches neither column does not even call it (the
-- WHEN clause).
-- +goose StatementBegin
CREATE FUNCTION orders_count_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        INSERT INTO order_counts AS c (organization_id, status, bridge_key, writer, n)
        VALUES (OLD.organization_id, OLD.status, coalesce(OLD.bridge_id, '00000000-0000-0000-0000-000000000000'), pg_backend_pid(), -1)
        ON CONFLICT (organization_id, status, bridge_key, writer) DO UPDATE SET n = c.n + excluded.n;
    END IF;
    INSERT INTO order_counts AS c (organization_id, status, bridge_key, writer, n)
    VALUES (NEW.organization_id, NEW.status, coalesce(NEW.bridge_id, '00000000-0000-0000-0000-000000000000'), pg_backend_pid(), 1)
    ON CONFLICT (organization_id, status, bridge_key, writer) DO UPDATE SET n = c.n + excluded.n;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- Deletes come in bulk (an organization deleted with all its orders), so
-- they are counted once per statement, the deleted rows grouped by bucket.
-- The buckets of an organization being deleted (its row already gone in
-- this transaction; its counters go with it) are left alone.
-- +goose StatementBegin
CREATE FUNCTION orders_count_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO order_counts AS c (organization_id, status, bridge_key, writer, n)
    SELECT d.organization_id, d.status, coalesce(d.bridge_id, '00000000-0000-0000-0000-000000000000'), pg_backend_pid(), -count(*)
      FROM old_rows d
     WHERE EXISTS (SELECT 1 FROM organizations o WHERE o.id = d.organization_id)
     GROUP BY 1, 2, 3
    ON CONFLICT (organization_id, status, bridge_key, writer) DO UPDATE SET n = c.n + excluded.n;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- Existing orders are counted while order writes wait (SHARE blocks them,
-- not reads), so no change falls between the count and the triggers.
LOCK TABLE orders IN SHARE MODE;
CREATE TRIGGER orders_count_insert AFTER INSERT ON orders
    FOR EACH ROW EXECUTE FUNCTION orders_count_row();
CREATE TRIGGER orders_count_update AFTER UPDATE OF organization_id, status, bridge_id ON orders
    FOR EACH ROW WHEN (OLD.organization_id <> NEW.organization_id OR OLD.status <> NEW.status
                       OR OLD.bridge_id IS DISTINCT FROM NEW.bridge_id)
    EXECUTE FUNCTION orders_count_row();
CREATE TRIGGER orders_count_delete AFTER DELETE ON orders
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION orders_count_deleted();
-- TRUNCATE has no transition table; it empties the counters with the orders.
-- +goose StatementBegin
CREATE FUNCTION orders_count_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM order_counts;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER orders_count_truncate AFTER TRUNCATE ON orders
    FOR EACH STATEMENT EXECUTE FUNCTION orders_count_truncate();
INSERT INTO order_counts (organization_id, status, bridge_key, writer, n)
SELECT organization_id, status, coalesce(bridge_id, '00000000-0000-0000-0000-000000000000'), 0, count(*)
  FROM orders GROUP BY 1, 2, 3;
-- The index that served those counts (migration 00014) is no longer read;
-- every order insert paid for it.
DROP INDEX orders_org_count_idx;

-- +goose Down
CREATE INDEX orders_org_count_idx ON orders (organization_id, status, bridge_id);
DROP TRIGGER orders_count_truncate ON orders;
DROP TRIGGER orders_count_delete ON orders;
DROP TRIGGER orders_count_update ON orders;
DROP TRIGGER orders_count_insert ON orders;
DROP FUNCTION orders_count_truncate();
DROP FUNCTION orders_count_deleted();
DROP FUNCTION orders_count_row();
DROP TABLE order_counts;
