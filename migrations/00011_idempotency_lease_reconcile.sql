-- +goose Up
-- An in-flight Idempotency-Key claim is a lease: the request that holds it
-- renews lease_expires_at while it runs; when its process dies, the lease
-- runs out and a repeat of the request takes the key over (minutes, not
-- the 24-hour lifetime of a stored response). claim_id names the holder,
-- so a holder whose lease was taken over cannot complete or release the
-- new holder's claim.
ALTER TABLE idempotency_keys
    ADD COLUMN claim_id         uuid,
    ADD COLUMN lease_expires_at timestamptz;

-- The reconciler (Maintenance) looks for rows that wait on a workflow
-- longer than their job's bound, across organizations, every few minutes.
CREATE INDEX rate_comparisons_processing_idx ON rate_comparisons (started_at) WHERE status = 'processing';
CREATE INDEX carrier_accounts_pending_idx ON carrier_accounts (updated_at) WHERE status = 'pending';

-- +goose Down
DROP INDEX carrier_accounts_pending_idx;
DROP INDEX rate_comparisons_processing_idx;
ALTER TABLE idempotency_keys DROP COLUMN lease_expires_at, DROP COLUMN claim_id;
