-- +goose NO TRANSACTION
-- The exact count of a search (issue 7, item 12): the index that carries
-- search_text gets the order id as a key column, so store.ListOrders can
-- count a broad search in id ranges at once on separate connections, each
-- an index-only scan of its range. Built CONCURRENTLY so that applying
-- this to a large orders table does not block order writes.

-- +goose Up
CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_org_id_search_idx
    ON orders (organization_id, id) INCLUDE (search_text);
DROP INDEX CONCURRENTLY IF EXISTS orders_org_search_count_idx;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_org_search_count_idx
    ON orders (organization_id) INCLUDE (search_text);
DROP INDEX CONCURRENTLY IF EXISTS orders_org_id_search_idx;
