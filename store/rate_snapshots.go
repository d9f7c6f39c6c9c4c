package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// RateSnapshotTTL is how long a snapshot stays valid when the client gives
// no expiresAt: 24 hours after it was quoted.
const RateSnapshotTTL = 24 * time.Hour

// RateSnapshot is a rate quote kept as it was given. Snapshots are
// immutable: there is no update or delete function, and the table's
// trigger refuses UPDATE and DELETE (except the cascade of deleting the
// organization).
type RateSnapshot struct {
	ID                    uuid.UUID       `db:"id"`
	OrganizationID        uuid.UUID       `db:"organization_id"`
	CarrierAccountID      uuid.UUID       `db:"carrier_account_id"`
	Carrier               string          `db:"carrier"`
	ServiceType           string          `db:"service_type"`
	ServiceName           string          `db:"service_name"`
	TotalPrice            float64         `db:"total_price"`
	Currency              string          `db:"currency"`
	Breakdown             json.RawMessage `db:"breakdown"` // nil: SQL NULL
	TransitDays           *int            `db:"transit_days"`
	TransitDaysGuaranteed bool            `db:"transit_days_guaranteed"`
	EstimatedDelivery     *time.Time      `db:"estimated_delivery"`
	DeliveryByTime        *string         `db:"delivery_by_time"`
	ShipFrom              json.RawMessage `db:"ship_from"`
	ShipTo                json.RawMessage `db:"ship_to"`
	Packages              json.RawMessage `db:"packages"`
	QuotedAt              time.Time       `db:"quoted_at"`
	ExpiresAt             time.Time       `db:"expires_at"`
	CreatedAt             time.Time       `db:"created_at"`
	RawResponse           json.RawMessage `db:"raw_response"` // nil: SQL NULL
}

const rateSnapshotCols = `id, organization_id, carrier_account_id, carrier, service_type, service_name, total_price, currency,
 breakdown, transit_days, transit_days_guaranteed, estimated_delivery, delivery_by_time, ship_from, ship_to, packages,
 quoted_at, expires_at, created_at, raw_response`

// CreateRateSnapshot inserts a snapshot (ID and OrganizationID set by the
// caller). QuotedAt and CreatedAt are the database's now(); a zero
// ExpiresAt means QuotedAt + RateSnapshotTTL. The carrier account must be
// one of the organization's: ErrNotFound otherwise (checked in the same
// statement).
func CreateRateSnapshot(ctx context.Context, db DBTX, s RateSnapshot) (RateSnapshot, error) {
	var expires *time.Time
	if !s.ExpiresAt.IsZero() {
		expires = &s.ExpiresAt
	}
	rows, _ := db.Query(ctx, `
INSERT INTO rate_snapshots (id, organization_id, carrier_account_id, carrier, service_type, service_name, total_price, currency,
                            breakdown, transit_days, transit_days_guaranteed, estimated_delivery, delivery_by_time,
                            ship_from, ship_to, packages, quoted_at, expires_at, created_at, raw_response)
SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
       now(), coalesce($17::timestamptz, now() + $18::interval), now(), $19
 WHERE EXISTS (SELECT 1 FROM carrier_accounts WHERE id = $3 AND organization_id = $2)
RETURNING `+rateSnapshotCols,
		s.ID, s.OrganizationID, s.CarrierAccountID, s.Carrier, s.ServiceType, s.ServiceName, s.TotalPrice, s.Currency,
		snapshotJSONArg(s.Breakdown), s.TransitDays, s.TransitDaysGuaranteed, s.EstimatedDelivery, s.DeliveryByTime,
		s.ShipFrom, s.ShipTo, s.Packages, expires, RateSnapshotTTL, snapshotJSONArg(s.RawResponse))
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[RateSnapshot])
	return out, mapErr(err)
}

// RateSnapshotByID finds a snapshot of the organization.
func RateSnapshotByID(ctx context.Context, db DBTX, orgID, id uuid.UUID) (RateSnapshot, error) {
	rows, _ := db.Query(ctx, `SELECT `+rateSnapshotCols+` FROM rate_snapshots WHERE organization_id = $1 AND id = $2`, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[RateSnapshot])
	return out, mapErr(err)
}

// snapshotJSONArg sends an empty raw message as SQL NULL (not as an empty string,
// which jsonb refuses).
func snapshotJSONArg(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	return raw
}
