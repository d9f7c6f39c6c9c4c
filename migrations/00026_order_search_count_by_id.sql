-- +goose NO TRANSACTION
-- Order list counts (issue 7, item 12). The exact count of a search: the
-- index that carries search_text gets the order id as a key column, so
-- store.ListOrders can count a broad search in id ranges at once on
-- separate connections, each an index-only scan of its range. The count of a list without a search
-- comes from order_counts (migration 00025), so the index that served it
-- goes. CONCURRENTLY, so that a large orders table is neither read- nor
-- write-blocked; a build that failed half-way (an invalid index) is dropped
-- and built again when the migration is run again.

-- +goose Up
DROP INDEX CONCURRENTLY IF EXISTS orders_org_id_search_idx;
CREATE INDEX CONCURRENTLY orders_org_id_search_idx
    ON orders (organization_id, id) INCLUDE (search_text);
DROP INDEX CONCURRENTLY IF EXISTS orders_org_search_count_idx;
DROP INDEX CONCURRENTLY IF EXISTS orders_org_count_idx;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_org_count_idx
    ON orders (organization_id, status, bridge_id);
CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_org_search_count_idx
    ON orders (organization_id) INCLUDE (search_text);
DROP INDEX CONCURRENTLY IF EXISTS orders_org_id_search_idx;
