package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The per-destination dispatch drainer (workflows.DispatchBatch) claims
// pending assignments a page at a time and records the page's outcomes in
// one statement; no transaction is held across the pushes.

// ClaimedAssignment is an assignment a drainer claimed, with its order.
type ClaimedAssignment struct {
	ID        uuid.UUID `db:"id"`
	OrderID   uuid.UUID `db:"order_id"`
	CreatedAt time.Time `db:"created_at"`
}

// ClaimAssignments claims up to limit assignments of the destination
// bridge for token, for lease: the rows token claimed already and still
// holds (a retried page), then pending rows oldest first, then rows whose
// claim's lease ran out (the run that claimed them is gone). The claim is
// one short statement (SELECT … FOR UPDATE SKIP LOCKED, so two claimers
// never wait on each other nor take the same row); the rows become
// processing, claimed_by token, claimed_until now + lease.
func ClaimAssignments(ctx context.Context, db DBTX, orgID, bridgeID uuid.UUID, token string, limit int, lease time.Duration) ([]ClaimedAssignment, error) {
	return claimAssignments(ctx, db, orgID, bridgeID, token, limit, lease, true)
}

// ClaimMoreAssignments is ClaimAssignments without the rows token holds
// already: the next page of a claimer still pushing the rows it claimed
// before (pending rows oldest first, then rows whose lease ran out).
func ClaimMoreAssignments(ctx context.Context, db DBTX, orgID, bridgeID uuid.UUID, token string, limit int, lease time.Duration) ([]ClaimedAssignment, error) {
	return claimAssignments(ctx, db, orgID, bridgeID, token, limit, lease, false)
}

func claimAssignments(ctx context.Context, db DBTX, orgID, bridgeID uuid.UUID, token string, limit int, lease time.Duration, own bool) ([]ClaimedAssignment, error) {
	rows, _ := db.Query(ctx, `
WITH own AS (
    SELECT id FROM dispatch_assignments
     WHERE $6 AND destination_bridge_id = $2 AND organization_id = $1 AND status = 'processing' AND claimed_by = $3
     LIMIT $4 FOR UPDATE SKIP LOCKED
), pending AS (
    SELECT id FROM dispatch_assignments
     WHERE destination_bridge_id = $2 AND organization_id = $1 AND status = 'pending'
     ORDER BY created_at, id LIMIT $4 FOR UPDATE SKIP LOCKED
), expired AS (
    SELECT id FROM dispatch_assignments
     WHERE destination_bridge_id = $2 AND organization_id = $1 AND status = 'processing'
       AND claimed_until IS NOT NULL AND claimed_until < now() AND claimed_by IS DISTINCT FROM $3
     ORDER BY claimed_until LIMIT $4 FOR UPDATE SKIP LOCKED
), pick AS (
    SELECT id FROM (SELECT id, 1 AS prio FROM own UNION ALL SELECT id, 2 FROM pending UNION ALL SELECT id, 3 FROM expired) x
     ORDER BY prio LIMIT $4
), claimed AS (
    UPDATE dispatch_assignments a
       SET status = 'processing', claimed_by = $3, claimed_until = now() + make_interval(secs => $5),
           updated_at = CASE WHEN a.status = 'pending' THEN now() ELSE a.updated_at END
      FROM pick p
     WHERE a.id = p.id
    RETURNING a.id, a.order_id, a.created_at
)
SELECT id, order_id, created_at FROM claimed ORDER BY created_at, id`, orgID, bridgeID, token, limit, lease.Seconds(), own)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[ClaimedAssignment])
	return out, mapErr(err)
}

// BatchOutcome is one claimed assignment's outcome.
type BatchOutcome struct {
	ID     uuid.UUID
	Status string // completed, failed or skipped
	// ErrorMessage: the tenant-safe failure, or the skip reason.
	ErrorMessage string
	// ExternalID and Kind are what the destination made of the order
	// (completed); Kind "fulfillment" or "cart" marks the order sent.
	ExternalID, Kind string
}

// FinishClaimedAssignments records the outcomes of assignments token
// claimed, in one statement: each completed or failed push becomes a task
// execution (taskName) of the destination bridge, the assignment its
// status (failed ones count a retry), a completed order its sentTo mark.
// Rows token no longer holds (claimed again after its lease ran out,
// cancelled) are left alone; the number recorded is returned.
func FinishClaimedAssignments(ctx context.Context, db DBTX, orgID uuid.UUID, token, taskName, workflowID string, outs []BatchOutcome) (int, error) {
	if len(outs) == 0 {
		return 0, nil
	}
	n := len(outs)
	ids, execIDs := make([]uuid.UUID, n), make([]uuid.UUID, n)
	statuses, errs, exts, kinds := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, o := range outs {
		ids[i], execIDs[i], statuses[i], errs[i], exts[i], kinds[i] = o.ID, uuid.New(), o.Status, o.ErrorMessage, o.ExternalID, o.Kind
		switch o.Status {
		case AssignmentCompleted, AssignmentFailed, AssignmentSkipped:
		default:
			return 0, fmt.Errorf("finish claimed assignment %s: status %q", o.ID, o.Status)
		}
	}
	var done int
	err := db.QueryRow(ctx, `
WITH input AS (
    SELECT * FROM unnest($3::uuid[], $4::uuid[], $5::text[], $6::text[], $7::text[], $8::text[])
        AS t(id, exec_id, status, err, ext, kind)
), cur AS (
    SELECT a.id, a.order_id, a.destination_bridge_id, a.updated_at
      FROM dispatch_assignments a JOIN input i ON i.id = a.id
     WHERE a.organization_id = $1 AND a.status = 'processing' AND a.claimed_by = $2
       FOR UPDATE OF a
), ex AS (
    INSERT INTO task_executions (id, organization_id, bridge_id, task_name, status, input, output, error, workflow_id, started_at, finished_at)
    SELECT i.exec_id, $1, c.destination_bridge_id, $9,
           CASE WHEN i.status = 'failed' THEN 'failed' ELSE 'completed' END,
           jsonb_build_object('assignmentId', i.id),
           CASE WHEN i.status = 'completed' THEN jsonb_build_object('externalOrderId', i.ext, 'kind', i.kind) END,
           CASE WHEN i.status = 'failed' THEN i.err END,
           $10, c.updated_at, now()
      FROM cur c JOIN input i ON i.id = c.id
     WHERE i.status <> 'skipped'
), up AS (
    UPDATE dispatch_assignments a
       SET status = i.status, error_message = NULLIF(i.err, ''),
           metadata = a.metadata || CASE i.status
               WHEN 'completed' THEN jsonb_build_object('externalOrderId', i.ext)
               WHEN 'skipped' THEN jsonb_build_object('skipReason', i.err)
               ELSE '{}'::jsonb END,
           task_execution_id = CASE WHEN i.status <> 'skipped' THEN i.exec_id ELSE a.task_execution_id END,
           processed_at = now(), updated_at = now(), claimed_by = NULL, claimed_until = NULL,
           retry_count = CASE WHEN i.status = 'failed' THEN a.retry_count + 1 ELSE a.retry_count END
      FROM cur c JOIN input i ON i.id = c.id
     WHERE a.id = c.id
    RETURNING a.order_id, i.status, i.kind
), sent AS (
    UPDATE orders o
       SET sent_to_fulfillment = CASE WHEN up.kind = 'fulfillment' THEN now() ELSE o.sent_to_fulfillment END,
           sent_to_cart = CASE WHEN up.kind = 'cart' THEN now() ELSE o.sent_to_cart END,
           updated_at = now()
      FROM up
     WHERE o.organization_id = $1 AND o.id = up.order_id AND up.status = 'completed' AND up.kind IN ('fulfillment', 'cart')
)
SELECT count(*) FROM up`, orgID, token, ids, execIDs, statuses, errs, exts, kinds, taskName, workflowID).Scan(&done)
	return done, mapErr(err)
}

// PendingDestinations are the destination bridges of the organization's
// assignments ids that are pending (to signal their drainers).
func PendingDestinations(ctx context.Context, db DBTX, orgID uuid.UUID, ids []uuid.UUID) ([]uuid.UUID, error) {
	rows, _ := db.Query(ctx, `SELECT DISTINCT destination_bridge_id FROM dispatch_assignments
 WHERE organization_id = $1 AND id = ANY($2) AND status = 'pending'`, orgID, ids)
	out, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	return out, mapErr(err)
}

// PendingDestinationsOf are the destination bridges with pending
// assignments of the organization (nil bridge: every one; else that one
// when it has any).
func PendingDestinationsOf(ctx context.Context, db DBTX, orgID uuid.UUID, bridge *uuid.UUID) ([]uuid.UUID, error) {
	rows, _ := db.Query(ctx, `SELECT b.id FROM bridges b
 WHERE b.organization_id = $1 AND ($2::uuid IS NULL OR b.id = $2)
   AND EXISTS (SELECT 1 FROM dispatch_assignments a WHERE a.destination_bridge_id = b.id AND a.status = 'pending')`, orgID, bridge)
	out, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	return out, mapErr(err)
}

// CountPendingAssignments counts the organization's pending assignments
// (of one destination bridge; nil: all).
func CountPendingAssignments(ctx context.Context, db DBTX, orgID uuid.UUID, bridge *uuid.UUID) (int, error) {
	var n int
	err := db.QueryRow(ctx, `SELECT count(*) FROM dispatch_assignments
 WHERE organization_id = $1 AND status = 'pending' AND ($2::uuid IS NULL OR destination_bridge_id = $2)`, orgID, bridge).Scan(&n)
	return n, mapErr(err)
}

// reconcileTables are the tables whose waiting rows record when the
// reconciler last checked them (reconcile_checked_at).
var reconcileTables = map[string]bool{
	"dispatch_assignments": true, "rate_comparisons": true, "carrier_accounts": true, "task_executions": true,
	"webhook_events": true, "operations": true, "operation_history": true,
	"shipments": true, "pickups": true, "shipment_actions": true,
}

// MarkReconcileChecked records that the reconciler looked at the rows ids
// of table now, so its next scan looks at the others first.
func MarkReconcileChecked(ctx context.Context, db DBTX, table string, ids []uuid.UUID) error {
	if !reconcileTables[table] {
		return fmt.Errorf("mark reconcile checked: unknown table %q", table)
	}
	if len(ids) == 0 {
		return nil
	}
	_, err := db.Exec(ctx, `UPDATE `+table+` SET reconcile_checked_at = now() WHERE id = ANY($1)`, ids)
	return mapErr(err)
}
