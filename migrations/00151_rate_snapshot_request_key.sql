-- +goose Up
-- A rate snapshot's request (its addresses and packages) as a stored key:
-- operation insights look up, for each of an operation's items (10,000 in
-- the benchmark), the cheapest quote of the same request, and computing
-- md5(ship_from::text || ship_to::text || packages::text) of the item's
-- snapshot on every probe, then reading the quote's heap row for its
-- transit days, was most of that statement. The key is the same md5 (jsonb
-- text is canonical: keys sorted), as 16 bytes, computed once at write
-- time; the index carries the transit days, so a probe is index-only.
-- It replaces the expression index of migration 00050, whose only reader
-- was that statement.
ALTER TABLE rate_snapshots ADD COLUMN request_key bytea
    GENERATED ALWAYS AS (decode(md5(ship_from::text || ship_to::text || packages::text), 'hex')) STORED;
CREATE INDEX rate_snapshots_org_request_key_idx ON rate_snapshots (organization_id, request_key, total_price)
    INCLUDE (transit_days);
DROP INDEX rate_snapshots_org_request_idx;

-- +goose Down
CREATE INDEX rate_snapshots_org_request_idx ON rate_snapshots
    (organization_id, md5(ship_from::text || ship_to::text || packages::text), total_price);
DROP INDEX rate_snapshots_org_request_key_idx;
ALTER TABLE rate_snapshots DROP COLUMN request_key;
