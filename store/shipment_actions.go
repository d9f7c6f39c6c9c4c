package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Shipment action statuses: the record is pending until the ShipmentAction
// workflow has the carrier's answer.
const (
	ShipmentActionPending   = "pending"
	ShipmentActionCompleted = "completed"
	ShipmentActionFailed    = "failed"
)

// ShipmentActionAllowed is the specification's table of the shipment
// statuses each action type is allowed in.
var ShipmentActionAllowed = map[string][]string{
	"hold":         {ShipmentInTransit, ShipmentOutForDelivery},
	"redirect":     {ShipmentInTransit},
	"redeliver":    {ShipmentException},
	"instructions": {ShipmentInTransit, ShipmentOutForDelivery},
}

// ShipmentAction is a delivery change requested for a shipment.
type ShipmentAction struct {
	ID                 uuid.UUID       `db:"id"`
	OrganizationID     uuid.UUID       `db:"organization_id"`
	ShipmentID         uuid.UUID       `db:"shipment_id"`
	ActionType         string          `db:"action_type"`
	Config             json.RawMessage `db:"config"`
	Status             string          `db:"status"`
	ShipmentStatus     string          `db:"shipment_status"`
	ConfirmationNumber *string         `db:"confirmation_number"`
	Messages           []string        `db:"messages"`
	Error              *string         `db:"error"`
	CarrierResponse    json.RawMessage `db:"carrier_response"`
	WorkflowID         *string         `db:"workflow_id"`
	RequestedBy        json.RawMessage `db:"requested_by"`
	CreatedAt          time.Time       `db:"created_at"`
	UpdatedAt          time.Time       `db:"updated_at"`
	CompletedAt        *time.Time      `db:"completed_at"`
}

const shipmentActionCols = `id, organization_id, shipment_id, action_type, config, status, shipment_status,
 confirmation_number, messages, error, carrier_response, workflow_id, requested_by, created_at, updated_at, completed_at`

// InsertShipmentAction inserts a pending action record (ID, organization,
// shipment, type, config, shipment status, workflow id and requester set
// by the caller) and returns it as stored. A record with that id already
// there (a client's retry of the same request, see the API's
// Idempotency-Key) is returned as it is.
func InsertShipmentAction(ctx context.Context, db DBTX, a ShipmentAction) (ShipmentAction, error) {
	if a.Config == nil {
		a.Config = json.RawMessage(`{}`)
	}
	rows, _ := db.Query(ctx, `
INSERT INTO shipment_actions (id, organization_id, shipment_id, action_type, config, status, shipment_status, workflow_id, requested_by)
VALUES ($1, $2, $3, $4, $5, 'pending', $6, $7, $8)
ON CONFLICT (id) DO NOTHING
RETURNING `+shipmentActionCols,
		a.ID, a.OrganizationID, a.ShipmentID, a.ActionType, a.Config, a.ShipmentStatus, a.WorkflowID, a.RequestedBy)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[ShipmentAction])
	if err = mapErr(err); err != ErrNotFound {
		return out, err
	}
	return ShipmentActionByID(ctx, db, a.OrganizationID, a.ID)
}

// ShipmentActionByID finds an action record of the organization.
func ShipmentActionByID(ctx context.Context, db DBTX, orgID, id uuid.UUID) (ShipmentAction, error) {
	rows, _ := db.Query(ctx, `SELECT `+shipmentActionCols+` FROM shipment_actions WHERE organization_id = $1 AND id = $2`, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[ShipmentAction])
	return out, mapErr(err)
}

// ShipmentActions lists a shipment's action records, newest first.
func ShipmentActions(ctx context.Context, db DBTX, orgID, shipmentID uuid.UUID) ([]ShipmentAction, error) {
	rows, _ := db.Query(ctx, `SELECT `+shipmentActionCols+` FROM shipment_actions
 WHERE organization_id = $1 AND shipment_id = $2 ORDER BY created_at DESC, id DESC`, orgID, shipmentID)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[ShipmentAction])
	return out, mapErr(err)
}

// DeleteShipmentAction removes an action record (its workflow could not be
// started).
func DeleteShipmentAction(ctx context.Context, db DBTX, orgID, id uuid.UUID) error {
	_, err := db.Exec(ctx, `DELETE FROM shipment_actions WHERE organization_id = $1 AND id = $2`, orgID, id)
	return mapErr(err)
}

// ShipmentActionOutcome is the carrier's answer to an action.
type ShipmentActionOutcome struct {
	// Status is ShipmentActionCompleted or ShipmentActionFailed.
	Status             string
	ConfirmationNumber string
	Messages           []string
	Error              string
	CarrierResponse    json.RawMessage
}

// FinishShipmentAction moves a pending action record to its outcome. A
// record that is no longer pending keeps its first outcome (updated false),
// so a repeated call changes nothing. ErrNotFound: no such record.
func FinishShipmentAction(ctx context.Context, db DBTX, orgID, id uuid.UUID, o ShipmentActionOutcome) (updated bool, err error) {
	if o.Messages == nil {
		o.Messages = []string{}
	}
	var confirmation, errMsg *string
	if o.ConfirmationNumber != "" {
		confirmation = &o.ConfirmationNumber
	}
	if o.Error != "" {
		errMsg = &o.Error
	}
	var present bool
	err = db.QueryRow(ctx, `
WITH u AS (
  UPDATE shipment_actions
     SET status = $3, confirmation_number = $4, messages = $5, error = $6, carrier_response = $7,
         completed_at = now(), updated_at = now()
   WHERE organization_id = $1 AND id = $2 AND status = 'pending'
  RETURNING id
)
SELECT EXISTS (SELECT 1 FROM u), EXISTS (SELECT 1 FROM shipment_actions WHERE organization_id = $1 AND id = $2)`,
		orgID, id, o.Status, confirmation, o.Messages, errMsg, o.CarrierResponse).Scan(&updated, &present)
	if err != nil {
		return false, mapErr(err)
	}
	if !present {
		return false, ErrNotFound
	}
	return updated, nil
}

// ShipmentActionConfig is the stored config of an action (the API's field
// names): hold uses Reason and Notes; redirect Address and Notes; redeliver
// PreferredDate and Instructions; instructions Instructions.
type ShipmentActionConfig struct {
	Reason        string                 `json:"reason,omitempty"`
	Notes         string                 `json:"notes,omitempty"`
	Address       *ShipmentActionAddress `json:"address,omitempty"`
	PreferredDate string                 `json:"preferredDate,omitempty"`
	Instructions  string                 `json:"instructions,omitempty"`
}

// ShipmentActionAddress is a redirect's new destination.
type ShipmentActionAddress struct {
	Street  string `json:"street"`
	City    string `json:"city"`
	State   string `json:"state"`
	Zip     string `json:"zip"`
	Country string `json:"country"`
}

// StalePendingShipmentActions lists action records still pending created
// before cutoff, the least recently checked first (stalePending).
func StalePendingShipmentActions(ctx context.Context, db DBTX, cutoff time.Time, limit int) ([]WaitingRow, error) {
	return stalePending(ctx, db, "shipment_actions", cutoff, limit)
}
