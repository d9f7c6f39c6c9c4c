package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Pickup statuses. A confirmed pickup whose date has passed is completed:
// reads report it so at once (PickupStatusOn), and the pickup-completion
// schedule persists it (CompletePastPickups). A pickup is pending while its
// PickupBooking workflow books it, and failed when the carrier's answer was
// lost (the reason under carrierResponse.error); the API shows neither.
const (
	PickupPending   = "pending"
	PickupConfirmed = "confirmed"
	PickupCompleted = "completed"
	PickupCancelled = "cancelled"
	PickupFailed    = "failed"
)

// PickupStatuses are the pickup statuses the API shows.
var PickupStatuses = []string{PickupConfirmed, PickupCompleted, PickupCancelled}

// Visible reports whether the API shows the pickup (it is booked).
func (p Pickup) Visible() bool { return p.Status != PickupPending && p.Status != PickupFailed }

// Pickup is a carrier pickup of one organization.
type Pickup struct {
	ID                 uuid.UUID       `db:"id"`
	OrganizationID     uuid.UUID       `db:"organization_id"`
	CarrierAccountID   *uuid.UUID      `db:"carrier_account_id"`
	Carrier            string          `db:"carrier"`
	ExternalID         *string         `db:"external_id"`
	Status             string          `db:"status"`
	PickupAddress      json.RawMessage `db:"pickup_address"`
	PickupDate         time.Time       `db:"pickup_date"`
	ReadyTime          string          `db:"ready_time"`
	CloseTime          string          `db:"close_time"`
	PackageCount       int             `db:"package_count"`
	TotalWeight        json.RawMessage `db:"total_weight"`
	ConfirmationNumber *string         `db:"confirmation_number"`
	CarrierResponse    json.RawMessage `db:"carrier_response"`
	Metadata           json.RawMessage `db:"metadata"`
	CancelReason       *string         `db:"cancel_reason"`
	CancelledAt        *time.Time      `db:"cancelled_at"`
	CompletedAt        *time.Time      `db:"completed_at"`
	CreatedAt          time.Time       `db:"created_at"`
	UpdatedAt          time.Time       `db:"updated_at"`
}

// StatusOn is the pickup's status as of the date today (UTC).
func (p Pickup) StatusOn(today time.Time) string {
	return PickupStatusOn(p.Status, p.PickupDate, today)
}

// PickupStatusOn is the effective status of a pickup as of today: a
// confirmed pickup dated before today is completed.
func PickupStatusOn(status string, pickupDate, today time.Time) string {
	if status == PickupConfirmed && pickupDate.Before(pickupUTCDate(today)) {
		return PickupCompleted
	}
	return status
}

// pickupUTCDate is the UTC calendar date of t (midnight UTC).
func pickupUTCDate(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

const pickupCols = `id, organization_id, carrier_account_id, carrier, external_id, status, pickup_address, pickup_date,
 ready_time, close_time, package_count, total_weight, confirmation_number, carrier_response, metadata,
 cancel_reason, cancelled_at, completed_at, created_at, updated_at`

// InsertPickup inserts a pickup (every field but the timestamps set by the
// caller; the status defaults to confirmed) and returns it as stored. When
// a pickup with that id exists (a client's retry of the same request, see
// the API's Idempotency-Key), it is returned as it is and created is false.
func InsertPickup(ctx context.Context, db DBTX, p Pickup) (out Pickup, created bool, err error) {
	if p.Metadata == nil {
		p.Metadata = json.RawMessage(`{}`)
	}
	if p.Status == "" {
		p.Status = PickupConfirmed
	}
	rows, _ := db.Query(ctx, `
INSERT INTO pickups (id, organization_id, carrier_account_id, carrier, external_id, status, pickup_address, pickup_date,
                     ready_time, close_time, package_count, total_weight, confirmation_number, carrier_response, metadata)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
ON CONFLICT (id) DO NOTHING
RETURNING `+pickupCols,
		p.ID, p.OrganizationID, p.CarrierAccountID, p.Carrier, p.ExternalID, p.Status, p.PickupAddress, p.PickupDate,
		p.ReadyTime, p.CloseTime, p.PackageCount, p.TotalWeight, p.ConfirmationNumber, p.CarrierResponse, p.Metadata)
	out, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Pickup])
	if err == nil {
		return out, true, nil
	}
	if err = mapErr(err); err != ErrNotFound {
		return out, false, err
	}
	out, err = PickupByID(ctx, db, p.OrganizationID, p.ID)
	return out, false, err
}

// ConfirmPickup records the carrier's booking of a pending pickup: it
// becomes confirmed with its confirmation number (also its external id)
// and the carrier's answer. A pickup no longer pending is left as it is. It
// returns the pickup as stored (ErrNotFound: it was deleted).
func ConfirmPickup(ctx context.Context, db DBTX, orgID, id uuid.UUID, confirmation string, carrierResponse json.RawMessage) (Pickup, error) {
	if _, err := db.Exec(ctx, `
UPDATE pickups SET status = 'confirmed', external_id = $3, confirmation_number = $3, carrier_response = $4, updated_at = now()
 WHERE organization_id = $1 AND id = $2 AND status = 'pending'`, orgID, id, confirmation, carrierResponse); err != nil {
		return Pickup{}, mapErr(err)
	}
	return PickupByID(ctx, db, orgID, id)
}

// FailPendingPickup ends a pending pickup whose booking has an unknown
// outcome: failed, with the reason under carrier_response.error. updated is
// false when it is not (any more) pending.
func FailPendingPickup(ctx context.Context, db DBTX, orgID, id uuid.UUID, reason string) (updated bool, err error) {
	tag, err := db.Exec(ctx, `
UPDATE pickups SET status = 'failed', carrier_response = jsonb_build_object('error', $3::text), updated_at = now()
 WHERE organization_id = $1 AND id = $2 AND status = 'pending'`, orgID, id, reason)
	if err != nil {
		return false, mapErr(err)
	}
	return tag.RowsAffected() > 0, nil
}

// DeletePendingPickup deletes a pickup still pending (the carrier refused
// the booking, or it never reached the carrier).
func DeletePendingPickup(ctx context.Context, db DBTX, orgID, id uuid.UUID) (deleted bool, err error) {
	tag, err := db.Exec(ctx, `DELETE FROM pickups WHERE organization_id = $1 AND id = $2 AND status = 'pending'`, orgID, id)
	if err != nil {
		return false, mapErr(err)
	}
	return tag.RowsAffected() > 0, nil
}

// StalePendingPickups lists pickups still pending created before cutoff,
// the least recently checked first (stalePending).
func StalePendingPickups(ctx context.Context, db DBTX, cutoff time.Time, limit int) ([]WaitingRow, error) {
	return stalePending(ctx, db, "pickups", cutoff, limit)
}

// PickupByID finds a pickup of the organization.
func PickupByID(ctx context.Context, db DBTX, orgID, id uuid.UUID) (Pickup, error) {
	rows, _ := db.Query(ctx, `SELECT `+pickupCols+` FROM pickups WHERE organization_id = $1 AND id = $2`, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Pickup])
	return out, mapErr(err)
}

// MarkPickupCancelled records a cancellation the carrier accepted; the
// carrier's answer is kept under carrierResponse.cancellation. Only a
// confirmed pickup is changed (compare-and-set: no lock is held across the
// carrier call); ErrNotFound when the pickup is not confirmed (any more).
func MarkPickupCancelled(ctx context.Context, db DBTX, orgID, id uuid.UUID, reason *string, carrierAnswer json.RawMessage) (Pickup, error) {
	if carrierAnswer == nil {
		carrierAnswer = json.RawMessage(`null`)
	}
	rows, _ := db.Query(ctx, `
UPDATE pickups
   SET status = 'cancelled', cancel_reason = $3, cancelled_at = now(), updated_at = now(),
       carrier_response = coalesce(carrier_response, '{}'::jsonb) || jsonb_build_object('cancellation', $4::jsonb)
 WHERE organization_id = $1 AND id = $2 AND status = 'confirmed'
RETURNING `+pickupCols, orgID, id, reason, carrierAnswer)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Pickup])
	return out, mapErr(err)
}

// PickupFilter narrows a list; zero values do not filter. Status is the
// effective status (see PickupStatusOn) as of Today.
type PickupFilter struct {
	Status           string
	CarrierAccountID *uuid.UUID
	// FromDate and ToDate bound the pickup date, both inclusive.
	FromDate *time.Time
	ToDate   *time.Time
	Today    time.Time
	Limit    int
	Offset   int
}

// ListPickups returns one page of the organization's pickups, newest
// pickup date first, and the number of all matching pickups.
func ListPickups(ctx context.Context, db DBTX, orgID uuid.UUID, f PickupFilter) ([]Pickup, int, error) {
	args := []any{orgID}
	var where strings.Builder
	where.WriteString("organization_id = $1")
	add := func(cond string, vals ...any) {
		for _, v := range vals {
			args = append(args, v)
			cond = strings.Replace(cond, "?", "$"+strconv.Itoa(len(args)), 1)
		}
		where.WriteString(" AND " + cond)
	}
	today := pickupUTCDate(f.Today)
	add("status IN ('confirmed', 'completed', 'cancelled')")
	switch f.Status {
	case PickupConfirmed:
		add("status = 'confirmed' AND pickup_date >= ?", today)
	case PickupCompleted:
		add("(status = 'completed' OR (status = 'confirmed' AND pickup_date < ?))", today)
	case PickupCancelled:
		add("status = 'cancelled'")
	}
	if f.CarrierAccountID != nil {
		add("carrier_account_id = ?", *f.CarrierAccountID)
	}
	if f.FromDate != nil {
		add("pickup_date >= ?", pickupUTCDate(*f.FromDate))
	}
	if f.ToDate != nil {
		add("pickup_date <= ?", pickupUTCDate(*f.ToDate))
	}
	rows, _ := db.Query(ctx, `SELECT `+pickupCols+` FROM pickups WHERE `+where.String()+
		` ORDER BY pickup_date DESC, created_at DESC, id DESC`+fmt.Sprintf(` LIMIT %d OFFSET %d`, f.Limit, f.Offset), args...)
	items, err := pgx.CollectRows(rows, pgx.RowToStructByName[Pickup])
	if err != nil {
		return nil, 0, mapErr(err)
	}
	if len(items) < f.Limit && (len(items) > 0 || f.Offset == 0) {
		return items, f.Offset + len(items), nil
	}
	var total int
	err = db.QueryRow(ctx, `SELECT count(*) FROM pickups WHERE `+where.String(), args...).Scan(&total)
	return items, total, mapErr(err)
}

// CompletePastPickups marks every confirmed pickup dated before today (UTC)
// completed, in every organization, in one statement, and returns how many
// it marked. Running it again changes nothing.
func CompletePastPickups(ctx context.Context, db DBTX, today time.Time) (int64, error) {
	tag, err := db.Exec(ctx, `
UPDATE pickups SET status = 'completed', completed_at = now(), updated_at = now()
 WHERE status = 'confirmed' AND pickup_date < $1`, pickupUTCDate(today))
	if err != nil {
		return 0, mapErr(err)
	}
	return tag.RowsAffected(), nil
}
