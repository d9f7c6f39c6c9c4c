-- +goose Up
-- dispatch_assignments_waiting_idx (migration 00021) served the
-- reconciler's scan of pending and processing assignments by age; since
-- migration 00091 that scan orders by reconcile_checked_at, then age, on
-- dispatch_assignments_reconcile_idx (the same rows), and no other query
-- filters or sorts assignments by updated_at alone. Every new assignment
-- (a sync page's order_created dispatch inserts one per order) and every
-- drainer update of one (pending to processing: not HOT, status is in
-- the partial indexes' predicates) still wrote an entry.
DROP INDEX IF EXISTS dispatch_assignments_waiting_idx;

-- +goose Down
CREATE INDEX dispatch_assignments_waiting_idx ON dispatch_assignments (updated_at) WHERE status IN ('pending', 'processing');
