package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Location is a warehouse or ship-from address of an organization. BridgeID
// is nil for a location created by hand; locations synced from a bridge
// carry the bridge and the platform's id (ExternalID).
type Location struct {
	ID             uuid.UUID  `db:"id"`
	OrganizationID uuid.UUID  `db:"organization_id"`
	Name           string     `db:"name"`
	Street         *string    `db:"street"`
	City           *string    `db:"city"`
	Province       *string    `db:"province"`
	Zip            *string    `db:"zip"`
	Country        *string    `db:"country"`
	BridgeID       *uuid.UUID `db:"bridge_id"`
	ExternalID     *string    `db:"external_id"`
	CreatedAt      time.Time  `db:"created_at"`
	UpdatedAt      time.Time  `db:"updated_at"`
}

const locationCols = `id, organization_id, name, street, city, province, zip, country, bridge_id, external_id, created_at, updated_at`

// CreateLocation inserts a location (ID and OrganizationID set by the
// caller). A BridgeID that is not the organization's is ErrNotFound.
func CreateLocation(ctx context.Context, db DBTX, l Location) (Location, error) {
	rows, _ := db.Query(ctx, `
INSERT INTO locations (id, organization_id, name, street, city, province, zip, country, bridge_id, external_id)
SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9::uuid, $10
 WHERE $9::uuid IS NULL OR EXISTS (SELECT 1 FROM bridges WHERE id = $9::uuid AND organization_id = $2)
RETURNING `+locationCols,
		l.ID, l.OrganizationID, l.Name, l.Street, l.City, l.Province, l.Zip, l.Country, l.BridgeID, l.ExternalID)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Location])
	return out, mapErr(err)
}

// LocationByID finds a location of the organization.
func LocationByID(ctx context.Context, db DBTX, orgID, id uuid.UUID) (Location, error) {
	rows, _ := db.Query(ctx, `SELECT `+locationCols+` FROM locations WHERE organization_id = $1 AND id = $2`, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Location])
	return out, mapErr(err)
}

// LocationFilter narrows ListLocations.
type LocationFilter struct {
	// BridgeID, when set, keeps the locations of one bridge.
	BridgeID *uuid.UUID
	Limit    int
	Offset   int
}

// ListLocations returns one page of the organization's locations, newest
// first, and the number matching the filter.
func ListLocations(ctx context.Context, db DBTX, orgID uuid.UUID, f LocationFilter) ([]Location, int, error) {
	const where = ` FROM locations WHERE organization_id = $1 AND ($2::uuid IS NULL OR bridge_id = $2::uuid)`
	var total int
	if err := db.QueryRow(ctx, `SELECT count(*)`+where, orgID, f.BridgeID).Scan(&total); err != nil {
		return nil, 0, mapErr(err)
	}
	rows, _ := db.Query(ctx, `SELECT `+locationCols+where+`
 ORDER BY created_at DESC, id DESC
 LIMIT $3 OFFSET $4`, orgID, f.BridgeID, f.Limit, f.Offset)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[Location])
	if err != nil {
		return nil, 0, mapErr(err)
	}
	return out, total, nil
}

// LocationPatch is an update. A nil field is left as it is; for the
// optional text fields, a Set flag with a nil value clears the field.
type LocationPatch struct {
	Name     *string
	Street   LocationField
	City     LocationField
	Province LocationField
	Zip      LocationField
	Country  LocationField
}

// LocationField is a patch value: Set tells whether the field was sent, Value
// is the new value (nil clears it).
type LocationField struct {
	Set   bool
	Value *string
}

// UpdateLocation applies a patch and bumps updated_at.
func UpdateLocation(ctx context.Context, db DBTX, orgID, id uuid.UUID, p LocationPatch) (Location, error) {
	rows, _ := db.Query(ctx, `
UPDATE locations
   SET name     = coalesce($3, name),
       street   = CASE WHEN $4 THEN $5 ELSE street END,
       city     = CASE WHEN $6 THEN $7 ELSE city END,
       province = CASE WHEN $8 THEN $9 ELSE province END,
       zip      = CASE WHEN $10 THEN $11 ELSE zip END,
       country  = CASE WHEN $12 THEN $13 ELSE country END,
       updated_at = now()
 WHERE organization_id = $1 AND id = $2
RETURNING `+locationCols, orgID, id, p.Name,
		p.Street.Set, p.Street.Value, p.City.Set, p.City.Value, p.Province.Set, p.Province.Value,
		p.Zip.Set, p.Zip.Value, p.Country.Set, p.Country.Value)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Location])
	return out, mapErr(err)
}

// DeleteLocation deletes a location for good.
func DeleteLocation(ctx context.Context, db DBTX, orgID, id uuid.UUID) error {
	tag, err := db.Exec(ctx, `DELETE FROM locations WHERE organization_id = $1 AND id = $2`, orgID, id)
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// Where an origin location came from (OriginLocation).
const (
	OriginBridge  = "bridge"  // a location of the order's bridge
	OriginDefault = "default" // the organization's settings.default_location_id
	OriginManual  = "manual"  // the oldest manual location
)

// OriginLocation picks the ship-from location of an order, in one query:
// the oldest location of bridgeID (when not nil), else the location named
// by the organization's settings.default_location_id, else the oldest
// location created by hand. ErrNotFound when there is none. The second
// result is OriginBridge, OriginDefault or OriginManual.
func OriginLocation(ctx context.Context, db DBTX, orgID uuid.UUID, bridgeID *uuid.UUID) (Location, string, error) {
	rows, _ := db.Query(ctx, `
WITH def AS (SELECT settings->>'default_location_id' AS id FROM organizations WHERE id = $1)
SELECT `+locationCols+`,
       CASE WHEN $2::uuid IS NOT NULL AND bridge_id = $2::uuid THEN 'bridge'
            WHEN id::text = (SELECT id FROM def) THEN 'default'
            ELSE 'manual' END AS origin
  FROM locations
 WHERE organization_id = $1
   AND (($2::uuid IS NOT NULL AND bridge_id = $2::uuid)
        OR id::text = (SELECT id FROM def)
        OR bridge_id IS NULL)
 ORDER BY CASE WHEN $2::uuid IS NOT NULL AND bridge_id = $2::uuid THEN 0
               WHEN id::text = (SELECT id FROM def) THEN 1
               ELSE 2 END,
          created_at, id
 LIMIT 1`, orgID, bridgeID)
	type row struct {
		Location
		Origin string `db:"origin"`
	}
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[row])
	if err != nil {
		return Location{}, "", mapErr(err)
	}
	return out.Location, out.Origin, nil
}
