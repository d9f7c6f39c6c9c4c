package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Rows that wait on a workflow, as the reconciler (Maintenance) finds them.

// WaitingRow is a row waiting on a workflow run: its organization, id and
// since when it waits (a rate comparison's started_at, a pending account's
// updated_at).
type WaitingRow struct {
	OrganizationID uuid.UUID `db:"organization_id"`
	ID             uuid.UUID `db:"id"`
	Since          time.Time `db:"since"`
}

// StaleRateComparisons lists up to limit comparisons processing since
// before cutoff, the least recently checked first, then oldest.
func StaleRateComparisons(ctx context.Context, db DBTX, cutoff time.Time, limit int) ([]WaitingRow, error) {
	rows, _ := db.Query(ctx, `SELECT organization_id, id, started_at AS since FROM rate_comparisons
 WHERE status = 'processing' AND started_at < $1 ORDER BY reconcile_checked_at NULLS FIRST, started_at LIMIT $2`, cutoff, limit)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[WaitingRow])
	return out, mapErr(err)
}

// StalePendingCarrierAccounts lists up to limit accounts pending
// registration, unchanged since before cutoff, the least recently checked first, then oldest.
func StalePendingCarrierAccounts(ctx context.Context, db DBTX, cutoff time.Time, limit int) ([]WaitingRow, error) {
	rows, _ := db.Query(ctx, `SELECT organization_id, id, updated_at AS since FROM carrier_accounts
 WHERE status = 'pending' AND updated_at < $1 ORDER BY reconcile_checked_at NULLS FIRST, updated_at LIMIT $2`, cutoff, limit)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[WaitingRow])
	return out, mapErr(err)
}

// FailOrphanedCarrierRegistration ends the registration of an account left
// pending without a run: its pending session goes and the account becomes
// error with message, provided it is still pending and unchanged since
// (a new registration meanwhile is left alone). It reports whether the
// account changed.
func FailOrphanedCarrierRegistration(ctx context.Context, db DBTX, orgID, accountID uuid.UUID, since time.Time, message string) (bool, error) {
	tag, err := db.Exec(ctx, `
WITH acct AS (
    UPDATE carrier_accounts
       SET status = 'error', last_error = $4, updated_at = now()
     WHERE organization_id = $1 AND id = $2 AND status = 'pending' AND updated_at = $3
    RETURNING id
), dropped AS (
    DELETE FROM carrier_registrations r USING acct WHERE r.carrier_account_id = acct.id
)
SELECT 1 FROM acct`, orgID, accountID, since, message)
	if err != nil {
		return false, mapErr(err)
	}
	return tag.RowsAffected() == 1, nil
}
