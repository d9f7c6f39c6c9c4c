-- +goose Up
-- Dispatch drains in batches (issue 22 item 6): a per-destination
-- DispatchBatch run (dispatch-batch/<bridgeId>) claims pending assignments
-- a page at a time. A claimed row is processing with claimed_by (the
-- claim's token: "dispatch-batch/<bridgeId>/<runId>/<page>", or the
-- workflow id dispatch/<id> of a single DispatchAssignment run) and, for a
-- drainer's claim, claimed_until: a claim whose lease ran out (its run
-- crashed or was terminated) is claimed again by the next page, so every
-- claimed row is pushed or recorded in the end.
ALTER TABLE dispatch_assignments
    ADD COLUMN claimed_by    text,
    ADD COLUMN claimed_until timestamptz;

-- The drainer's claim: a destination's pending rows, oldest first.
CREATE INDEX dispatch_assignments_pending_dest_idx ON dispatch_assignments (destination_bridge_id, created_at, id)
    WHERE status = 'pending';
-- Claims whose lease ran out.
CREATE INDEX dispatch_assignments_claim_lease_idx ON dispatch_assignments (destination_bridge_id, claimed_until)
    WHERE status = 'processing' AND claimed_until IS NOT NULL;

-- +goose Down
DROP INDEX dispatch_assignments_claim_lease_idx;
DROP INDEX dispatch_assignments_pending_dest_idx;
ALTER TABLE dispatch_assignments DROP COLUMN claimed_until, DROP COLUMN claimed_by;
