package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Transformation trigger points (spec Part 2).
const (
	TriggerBeforeSync      = "before_sync"
	TriggerAfterSync       = "after_sync"
	TriggerBeforeOperation = "before_operation"
	TriggerAfterOperation  = "after_operation"
)

// TriggerPoints are the trigger points, in the specification's order.
var TriggerPoints = []string{TriggerBeforeSync, TriggerAfterSync, TriggerBeforeOperation, TriggerAfterOperation}

// Transformation is tenant JavaScript run at a trigger point. BridgeID nil
// applies to every bridge of the organization.
type Transformation struct {
	ID             uuid.UUID  `db:"id"`
	OrganizationID uuid.UUID  `db:"organization_id"`
	Name           string     `db:"name"`
	Description    *string    `db:"description"`
	TriggerPoint   string     `db:"trigger_point"`
	BridgeID       *uuid.UUID `db:"bridge_id"`
	Code           string     `db:"code"`
	IsActive       bool       `db:"is_active"`
	Priority       int        `db:"priority"`
	CreatedAt      time.Time  `db:"created_at"`
	UpdatedAt      time.Time  `db:"updated_at"`
}

const transformationCols = `id, organization_id, name, description, trigger_point, bridge_id, code, is_active, priority, created_at, updated_at`

// transformationOrder: higher priority first, then oldest first (stable).
const transformationOrder = ` ORDER BY priority DESC, created_at, id`

// CreateTransformation inserts t (ID and OrganizationID set by the caller).
// A BridgeID that is not the organization's is ErrNotFound.
func CreateTransformation(ctx context.Context, db DBTX, t Transformation) (Transformation, error) {
	rows, _ := db.Query(ctx, `
INSERT INTO transformations (id, organization_id, name, description, trigger_point, bridge_id, code, is_active, priority)
SELECT $1, $2, $3, $4, $5, $6::uuid, $7, $8, $9
 WHERE $6::uuid IS NULL OR EXISTS (SELECT 1 FROM bridges WHERE id = $6::uuid AND organization_id = $2)
RETURNING `+transformationCols,
		t.ID, t.OrganizationID, t.Name, t.Description, t.TriggerPoint, t.BridgeID, t.Code, t.IsActive, t.Priority)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Transformation])
	return out, mapErr(err)
}

// TransformationByID finds a transformation of the organization.
func TransformationByID(ctx context.Context, db DBTX, orgID, id uuid.UUID) (Transformation, error) {
	rows, _ := db.Query(ctx, `SELECT `+transformationCols+` FROM transformations WHERE organization_id = $1 AND id = $2`, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Transformation])
	return out, mapErr(err)
}

// TransformationFilter narrows ListTransformations; zero values do not filter.
type TransformationFilter struct {
	TriggerPoint string
	BridgeID     *uuid.UUID
	IsActive     *bool
	Limit        int
	Offset       int
}

// ListTransformations returns one page of the organization's
// transformations, highest priority first, and the number matching.
func ListTransformations(ctx context.Context, db DBTX, orgID uuid.UUID, f TransformationFilter) ([]Transformation, int, error) {
	const where = ` FROM transformations WHERE organization_id = $1
   AND ($2 = '' OR trigger_point = $2)
   AND ($3::uuid IS NULL OR bridge_id = $3::uuid)
   AND ($4::boolean IS NULL OR is_active = $4::boolean)`
	var total int
	if err := db.QueryRow(ctx, `SELECT count(*)`+where, orgID, f.TriggerPoint, f.BridgeID, f.IsActive).Scan(&total); err != nil {
		return nil, 0, mapErr(err)
	}
	rows, _ := db.Query(ctx, `SELECT `+transformationCols+where+transformationOrder+` LIMIT $5 OFFSET $6`,
		orgID, f.TriggerPoint, f.BridgeID, f.IsActive, f.Limit, f.Offset)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[Transformation])
	if err != nil {
		return nil, 0, mapErr(err)
	}
	return out, total, nil
}

// ActiveTransformations returns the active transformations of a trigger
// point that apply to a bridge (its own and the organization's global
// ones; bridgeID nil: the global ones only), in the order they run.
func ActiveTransformations(ctx context.Context, db DBTX, orgID uuid.UUID, bridgeID *uuid.UUID, trigger string) ([]Transformation, error) {
	rows, _ := db.Query(ctx, `SELECT `+transformationCols+` FROM transformations
 WHERE organization_id = $1 AND trigger_point = $2 AND is_active
   AND (bridge_id IS NULL OR bridge_id = $3::uuid)`+transformationOrder, orgID, trigger, bridgeID)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[Transformation])
	return out, mapErr(err)
}

// ActiveTransformationsOfTrigger is every active transformation of a
// trigger point of the organization, whatever its bridge, in the order
// they run (a caller picks each bridge's own and the global ones).
func ActiveTransformationsOfTrigger(ctx context.Context, db DBTX, orgID uuid.UUID, trigger string) ([]Transformation, error) {
	rows, _ := db.Query(ctx, `SELECT `+transformationCols+` FROM transformations
 WHERE organization_id = $1 AND trigger_point = $2 AND is_active`+transformationOrder, orgID, trigger)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[Transformation])
	return out, mapErr(err)
}

// TransformationPatch is an update; nil fields are left as they are.
// ClearBridge makes the transformation global (BridgeID is then ignored).
type TransformationPatch struct {
	Name         *string
	Description  *string
	ClearDesc    bool
	TriggerPoint *string
	BridgeID     *uuid.UUID
	ClearBridge  bool
	Code         *string
	IsActive     *bool
	Priority     *int
}

// UpdateTransformation applies a patch and bumps updated_at. A BridgeID
// that is not the organization's is ErrNotFound.
func UpdateTransformation(ctx context.Context, db DBTX, orgID, id uuid.UUID, p TransformationPatch) (Transformation, error) {
	rows, _ := db.Query(ctx, `
UPDATE transformations
   SET name          = coalesce($3, name),
       description   = CASE WHEN $5 THEN NULL ELSE coalesce($4, description) END,
       trigger_point = coalesce($6, trigger_point),
       bridge_id     = CASE WHEN $8 THEN NULL ELSE coalesce($7::uuid, bridge_id) END,
       code          = coalesce($9, code),
       is_active     = coalesce($10, is_active),
       priority      = coalesce($11, priority),
       updated_at    = now()
 WHERE organization_id = $1 AND id = $2
   AND ($7::uuid IS NULL OR EXISTS (SELECT 1 FROM bridges WHERE id = $7::uuid AND organization_id = $1))
RETURNING `+transformationCols, orgID, id, p.Name, p.Description, p.ClearDesc, p.TriggerPoint, p.BridgeID, p.ClearBridge,
		p.Code, p.IsActive, p.Priority)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Transformation])
	return out, mapErr(err)
}

// DeleteTransformation deletes a transformation for good.
func DeleteTransformation(ctx context.Context, db DBTX, orgID, id uuid.UUID) error {
	tag, err := db.Exec(ctx, `DELETE FROM transformations WHERE organization_id = $1 AND id = $2`, orgID, id)
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}
