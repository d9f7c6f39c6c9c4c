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
-- The table has no foreign key: a counter write would then lock its
-- organization's row, and an organization being deleted (whose cascade
-- waits for orders a transaction holds) would deadlock with it. The rows of
-- a deleted organization are never read; maintenance removes them.
CREATE TABLE order_counts (
    organization_id uuid NOT NULL,
    status          text NOT NULL,
    bridge_key      uuid NOT NULL,
    writer          integer NOT NULL,
    n               bigint NOT NULL,
    PRIMARY KEY (organization_id, status, bridge_key, writer)
) WITH (fillfactor = 50, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000,
        autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 1000);
-- The table is small and every order write updates it: half of each page is
-- left free so an update stays on its page (HOT), and vacuum comes after
-- every thousand changes instead of a fifth of the table.

-- An inserted order counts in a row trigger: for the common single-order
-- insert it costs next to nothing, where a statement trigger's transition
-- table costs 10-25 % of the insert (its query is planned on every call).
-- Its cost grows with the square of a statement's rows, though (each
-- upsert of the same counter in one transaction walks the versions the
-- statement wrote before it): fine for the pages a sync stores (at most
-- 500 orders), not for a bulk load of many thousands in one statement.
-- +goose StatementBegin
CREATE FUNCTION orders_count_inserted_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO order_counts AS c (organization_id, status, bridge_key, writer, n)
    VALUES (NEW.organization_id, NEW.status, coalesce(NEW.bridge_id, '00000000-0000-0000-0000-000000000000'), pg_backend_pid(), 1)
    ON CONFLICT (organization_id, status, bridge_key, writer) DO UPDATE SET n = c.n + excluded.n;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- Updates and deletes come in bulk (a bridge deleted under 100,000 orders
-- sets their bridge to NULL in one statement; an organization deleted with
-- all its orders), so they are counted once per statement: the changed
-- rows grouped by bucket, one upsert for all buckets whose count moved. An
-- update that changes neither status nor bridge writes nothing.
-- +goose StatementBegin
CREATE FUNCTION orders_count_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO order_counts AS c (organization_id, status, bridge_key, writer, n)
        SELECT organization_id, status, coalesce(bridge_id, '00000000-0000-0000-0000-000000000000'), pg_backend_pid(), -count(*)
          FROM old_rows GROUP BY 1, 2, 3
        ON CONFLICT (organization_id, status, bridge_key, writer) DO UPDATE SET n = c.n + excluded.n;
    ELSE
        INSERT INTO order_counts AS c (organization_id, status, bridge_key, writer, n)
        SELECT organization_id, status, b, pg_backend_pid(), sum(d) FROM (
            SELECT organization_id, status, coalesce(bridge_id, '00000000-0000-0000-0000-000000000000') AS b, 1 AS d FROM new_rows
            UNION ALL
            SELECT organization_id, status, coalesce(bridge_id, '00000000-0000-0000-0000-000000000000'), -1 FROM old_rows) m
         GROUP BY 1, 2, 3 HAVING sum(d) <> 0
        ON CONFLICT (organization_id, status, bridge_key, writer) DO UPDATE SET n = c.n + excluded.n;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- TRUNCATE has no transition table; it empties the counters with the orders,
-- after a running compaction (store.CompactOrderCounts, which holds the same
-- advisory lock) is done with them.
-- +goose StatementBegin
CREATE FUNCTION orders_count_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('fos.order_counts'));
    DELETE FROM order_counts;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- Existing orders are counted while order writes wait (SHARE blocks them,
-- not reads), so no change falls between the count and the triggers.
LOCK TABLE orders IN SHARE MODE;
CREATE TRIGGER orders_count_insert AFTER INSERT ON orders
    FOR EACH ROW EXECUTE FUNCTION orders_count_inserted_row();
CREATE TRIGGER orders_count_update AFTER UPDATE ON orders
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION orders_count_changed();
CREATE TRIGGER orders_count_delete AFTER DELETE ON orders
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION orders_count_changed();
CREATE TRIGGER orders_count_truncate AFTER TRUNCATE ON orders
    FOR EACH STATEMENT EXECUTE FUNCTION orders_count_truncate();
INSERT INTO order_counts (organization_id, status, bridge_key, writer, n)
SELECT organization_id, status, coalesce(bridge_id, '00000000-0000-0000-0000-000000000000'), 0, count(*)
  FROM orders GROUP BY 1, 2, 3;

-- +goose Down
DROP TRIGGER orders_count_truncate ON orders;
DROP TRIGGER orders_count_delete ON orders;
DROP TRIGGER orders_count_update ON orders;
DROP TRIGGER orders_count_insert ON orders;
DROP FUNCTION orders_count_truncate();
DROP FUNCTION orders_count_changed();
DROP FUNCTION orders_count_inserted_row();
DROP TABLE order_counts;
