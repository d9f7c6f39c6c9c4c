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

-- +goose Down
ALTER TABLE idempotency_keys DROP COLUMN lease_expires_at, DROP COLUMN claim_id;
