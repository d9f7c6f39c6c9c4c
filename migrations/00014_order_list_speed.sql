-- +goose NO TRANSACTION
-- Order list speed (issue 7, item 12) and the API key cache (item 11).
-- Indexes are built CONCURRENTLY so that applying this to a large orders
-- table does not block order writes.

-- +goose Up
-- The default sort (created_at) and sort=total walk an index of
-- (organization, sort key, id) that also carries the list filters, so
-- skipping to page 500 reads no rows (store.ListOrders joins only the page's
-- own rows). The default sort's index also carries search_text, so paging
-- through a broad search is an index-only scan. The other sort keys
-- (updated_at, ordered_at, order_number) get no index of their own: every
-- index costs each order insert, and those sorts are rare.
CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_org_created_list_idx
    ON orders (organization_id, created_at DESC, id DESC) INCLUDE (search_text, status, bridge_id);
DROP INDEX CONCURRENTLY IF EXISTS orders_org_created_idx;
CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_org_total_list_idx
    ON orders (organization_id, total, id) INCLUDE (status, bridge_id);
-- The exact count of a list without a search: equal keys are deduplicated,
-- so 100,000 orders of one organization fit in under a megabyte and are
-- counted without reading a row.
CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_org_count_idx
    ON orders (organization_id, status, bridge_id);
-- The exact count of a search: the narrowest index that carries search_text,
-- so counting a term found in most orders evaluates it on index entries
-- only (a trigram index cannot count without reading every row it finds).
CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_org_search_count_idx
    ON orders (organization_id) INCLUDE (search_text);
-- Index-only scans skip the row only on pages the visibility map marks
-- all-visible, and an order change clears its page's mark until vacuum:
-- vacuum after 1 % new or changed orders instead of 20 %. Such small
-- vacuums visit only the pages that changed and skip index cleanup.
ALTER TABLE orders SET (autovacuum_vacuum_insert_scale_factor = 0.01, autovacuum_vacuum_insert_threshold = 1000,
                        autovacuum_vacuum_scale_factor = 0.01);

-- API key changes that matter to authentication are announced on commit, so
-- that every instance drops a cached key before its next request (see
-- api/apikey_cache.go). Recording last use announces nothing.
-- +goose StatementBegin
CREATE FUNCTION api_keys_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('fos_api_key_changes', encode(OLD.key_hash, 'hex'));
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER api_keys_notify_change
    AFTER UPDATE OF organization_id, name, key_hash, scopes, expires_at, revoked_at OR DELETE ON api_keys
    FOR EACH ROW EXECUTE FUNCTION api_keys_notify_change();

-- +goose Down
DROP TRIGGER api_keys_notify_change ON api_keys;
DROP FUNCTION api_keys_notify_change();
ALTER TABLE orders RESET (autovacuum_vacuum_insert_scale_factor, autovacuum_vacuum_insert_threshold, autovacuum_vacuum_scale_factor);
DROP INDEX CONCURRENTLY IF EXISTS orders_org_search_count_idx;
DROP INDEX CONCURRENTLY IF EXISTS orders_org_count_idx;
DROP INDEX CONCURRENTLY IF EXISTS orders_org_total_list_idx;
CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_org_created_idx
    ON orders (organization_id, created_at DESC, id DESC) INCLUDE (search_text);
DROP INDEX CONCURRENTLY IF EXISTS orders_org_created_list_idx;
