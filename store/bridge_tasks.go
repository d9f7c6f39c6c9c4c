package store

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/fos-dev/fos/platforms"
)

// What the bridge tasks other than grab-orders store: platform shipments
// (grab-shipments), platform locations (warehouse-sync) and pushed
// fulfillments (push-fulfillment).

// UpsertCounts counts an upsert of platform records.
type UpsertCounts struct {
	Fetched   int `json:"fetched"`
	Created   int `json:"created"`
	Updated   int `json:"updated"`
	Unchanged int `json:"unchanged"`
	Failed    int `json:"failed"`
	// CreatedIDs are the rows created (UpsertPlatformShipments), for the
	// events they make; not part of a run's counts.
	CreatedIDs []uuid.UUID `json:"-"`
}

const upsertPlatformShipmentSQL = `
INSERT INTO shipments AS s (id, organization_id, order_id, bridge_id, external_id, carrier, service, status,
                            tracking_number, rate_amount, ship_date, ship_to, metadata)
SELECT $1, $2, (SELECT id FROM orders WHERE organization_id = $2 AND bridge_id = $3 AND external_id = $5),
       $3, $4, $6, $7, 'label_created', nullif($8, ''), $9, $10, $11, $12
  FROM bridges b WHERE b.organization_id = $2 AND b.id = $3
ON CONFLICT (organization_id, bridge_id, external_id) WHERE bridge_id IS NOT NULL AND external_id IS NOT NULL
DO UPDATE SET
    order_id = coalesce(excluded.order_id, s.order_id), carrier = excluded.carrier, service = excluded.service,
    tracking_number = excluded.tracking_number, rate_amount = excluded.rate_amount, ship_date = excluded.ship_date,
    ship_to = excluded.ship_to, metadata = s.metadata || excluded.metadata, updated_at = now()
WHERE (coalesce(excluded.order_id, s.order_id), excluded.carrier, excluded.service, excluded.tracking_number,
       excluded.rate_amount, excluded.ship_date, excluded.ship_to, s.metadata || excluded.metadata)
      IS DISTINCT FROM
      (s.order_id, s.carrier, s.service, s.tracking_number, s.rate_amount, s.ship_date, s.ship_to, s.metadata)
RETURNING (s.xmax = 0) AS inserted`

// UpsertPlatformShipments stores a page of a platform's shipments for a
// bridge, keyed by (bridge, external id), each attached to the bridge's
// order with its OrderExternalID, and advances cursor (when set), in one
// transaction. Voided shipments are left out (counted unchanged).
// ErrNotFound when the bridge is gone.
func UpsertPlatformShipments(ctx context.Context, s *Store, orgID, bridgeID uuid.UUID, list []platforms.Shipment, cursor *SyncPageAdvance) (UpsertCounts, error) {
	out := UpsertCounts{Fetched: len(list)}
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM bridges WHERE organization_id = $1 AND id = $2 FOR SHARE`, orgID, bridgeID).Scan(&one); err != nil {
			return mapErr(err)
		}
		for _, sh := range list {
			if sh.ExternalID == "" {
				out.Failed++
				continue
			}
			if sh.Voided {
				out.Unchanged++
				continue
			}
			carrier := sh.CarrierCode
			if carrier == "" {
				carrier = "unknown"
			}
			var shipDate *time.Time
			if !sh.ShipDate.IsZero() {
				d := sh.ShipDate.UTC().Truncate(24 * time.Hour)
				shipDate = &d
			}
			var shipTo, meta []byte
			var err error
			if sh.ShipTo != nil {
				if shipTo, err = json.Marshal(sh.ShipTo); err != nil {
					return err
				}
			}
			if meta, err = json.Marshal(map[string]any{"source": "platform", "platformShipment": sh.SourceData}); err != nil {
				return err
			}
			var inserted bool
			id := uuid.New()
			err = tx.QueryRow(ctx, upsertPlatformShipmentSQL, id, orgID, bridgeID, sh.ExternalID, sh.OrderExternalID,
				carrier, sh.ServiceCode, sh.TrackingNumber, sh.Cost, shipDate, shipTo, meta).Scan(&inserted)
			switch {
			case err == pgx.ErrNoRows:
				out.Unchanged++
			case err != nil:
				return mapErr(err)
			case inserted:
				out.Created++
				out.CreatedIDs = append(out.CreatedIDs, id)
			default:
				out.Updated++
			}
		}
		if cursor != nil {
			c := *cursor
			if c.LastPage == nil {
				c.LastPage = out
			}
			return AdvanceSyncCursor(ctx, tx, c)
		}
		return nil
	})
	if err != nil {
		return UpsertCounts{}, err
	}
	return out, nil
}

const upsertPlatformLocationSQL = `
INSERT INTO locations AS l (id, organization_id, name, street, city, province, zip, country, bridge_id, external_id)
SELECT $1, $2, $4, $5, $6, $7, $8, $9, $3, $10
  FROM bridges b WHERE b.organization_id = $2 AND b.id = $3
ON CONFLICT (organization_id, bridge_id, external_id) WHERE bridge_id IS NOT NULL AND external_id IS NOT NULL
DO UPDATE SET name = excluded.name, street = excluded.street, city = excluded.city, province = excluded.province,
    zip = excluded.zip, country = excluded.country, updated_at = now()
RETURNING l.id, (l.xmax = 0) AS inserted`

// UpsertPlatformLocations stores a platform's locations as the
// organization's locations of the bridge, keyed by (bridge, external id),
// in one transaction, and returns their ids in the platform's order.
// ErrNotFound when the bridge is gone.
func UpsertPlatformLocations(ctx context.Context, s *Store, orgID, bridgeID uuid.UUID, list []platforms.Location) ([]uuid.UUID, UpsertCounts, error) {
	out := UpsertCounts{Fetched: len(list)}
	ids := []uuid.UUID{}
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM bridges WHERE organization_id = $1 AND id = $2 FOR SHARE`, orgID, bridgeID).Scan(&one); err != nil {
			return mapErr(err)
		}
		seen := map[string]bool{}
		for _, l := range list {
			if l.ExternalID == "" || seen[l.ExternalID] {
				out.Failed++
				continue
			}
			seen[l.ExternalID] = true
			name := strings.TrimSpace(l.Name)
			if name == "" {
				name = "Location " + l.ExternalID
			}
			var street, city, province, zip, country *string
			if a := l.Address; a != nil {
				street = nonEmpty(strings.TrimSpace(strings.TrimSpace(a.Address1) + " " + strings.TrimSpace(a.Address2)))
				city = nonEmpty(a.City)
				province = nonEmpty(firstOf(a.ProvinceCode, a.Province))
				zip = nonEmpty(a.Zip)
				country = nonEmpty(firstOf(a.CountryCode, a.Country))
			}
			// An unchanged location is read, not rewritten.
			rows, _ := tx.Query(ctx, `SELECT `+locationCols+` FROM locations WHERE organization_id = $1 AND bridge_id = $2 AND external_id = $3`,
				orgID, bridgeID, l.ExternalID)
			prev, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Location])
			existed := err == nil
			if err != nil && err != pgx.ErrNoRows {
				return mapErr(err)
			}
			if existed && prev.Name == name && eqPtr(prev.Street, street) && eqPtr(prev.City, city) &&
				eqPtr(prev.Province, province) && eqPtr(prev.Zip, zip) && eqPtr(prev.Country, country) {
				out.Unchanged++
				ids = append(ids, prev.ID)
				continue
			}
			var id uuid.UUID
			var inserted bool
			if err := tx.QueryRow(ctx, upsertPlatformLocationSQL, uuid.New(), orgID, bridgeID, name, street, city, province, zip, country,
				l.ExternalID).Scan(&id, &inserted); err != nil {
				return mapErr(err)
			}
			if inserted {
				out.Created++
			} else {
				out.Updated++
			}
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		return nil, UpsertCounts{}, err
	}
	return ids, out, nil
}

// LocationsByIDs returns the organization's locations among ids, in the
// order of ids.
func LocationsByIDs(ctx context.Context, db DBTX, orgID uuid.UUID, ids []uuid.UUID) ([]Location, error) {
	rows, _ := db.Query(ctx, `SELECT `+locationCols+` FROM locations WHERE organization_id = $1 AND id = ANY($2)`, orgID, ids)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[Location])
	if err != nil {
		return nil, mapErr(err)
	}
	byID := make(map[uuid.UUID]Location, len(list))
	for _, l := range list {
		byID[l.ID] = l
	}
	out := make([]Location, 0, len(list))
	for _, id := range ids {
		if l, ok := byID[id]; ok {
			out = append(out, l)
		}
	}
	return out, nil
}

// FulfillmentCandidate is a shipment of the service with a tracking
// number, of an order of the bridge, not yet pushed to it, or pushed with
// another tracking number (PushedTrackingNumber, the platform's
// fulfillment PushedExternalID).
type FulfillmentCandidate struct {
	ShipmentID      uuid.UUID  `db:"shipment_id"`
	OrderID         uuid.UUID  `db:"order_id"`
	OrderExternalID string     `db:"order_external_id"`
	Carrier         string     `db:"carrier"`
	Service         string     `db:"service"`
	TrackingNumber  string     `db:"tracking_number"`
	ShipDate        *time.Time `db:"ship_date"`
	// PushedTrackingNumber and PushedExternalID are those of the earlier
	// push whose number the shipment no longer has (nil: never pushed).
	PushedTrackingNumber *string `db:"pushed_tracking_number"`
	PushedExternalID     *string `db:"pushed_external_id"`
}

// FulfillmentCandidates lists up to limit shipments to push to a bridge,
// oldest first: shipments with a tracking number of the bridge's orders,
// not imported from that bridge, not pushed to it yet, and, when retrack
// (the platform can change a fulfillment's tracking), those whose tracking
// number changed since their push.
func FulfillmentCandidates(ctx context.Context, db DBTX, orgID, bridgeID uuid.UUID, limit int, retrack bool) ([]FulfillmentCandidate, error) {
	rows, _ := db.Query(ctx, `
SELECT s.id AS shipment_id, o.id AS order_id, o.external_id AS order_external_id, s.carrier, s.service, s.tracking_number, s.ship_date,
       p.tracking_number AS pushed_tracking_number, p.external_id AS pushed_external_id
  FROM shipments s JOIN orders o ON o.id = s.order_id AND o.organization_id = s.organization_id
  LEFT JOIN fulfillment_pushes p ON p.bridge_id = $2 AND p.shipment_id = s.id
 WHERE s.organization_id = $1 AND o.bridge_id = $2 AND s.tracking_number IS NOT NULL
   AND NOT (s.external_id IS NOT NULL AND s.bridge_id IS NOT DISTINCT FROM $2)
   AND (p.shipment_id IS NULL OR ($4 AND p.tracking_number <> s.tracking_number))
 ORDER BY s.created_at, s.id
 LIMIT $3`, orgID, bridgeID, limit, retrack)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[FulfillmentCandidate])
	return out, mapErr(err)
}

// RecordFulfillmentPush records that a shipment went to a bridge with its
// tracking number and the platform's fulfillment id (a later push of a new
// number replaces both; an id the platform did not give keeps the old
// one) and sets the order's sent_to_fulfillment when it was not set.
func RecordFulfillmentPush(ctx context.Context, s *Store, orgID, bridgeID uuid.UUID, c FulfillmentCandidate, externalID string, created bool) error {
	return s.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO fulfillment_pushes (bridge_id, shipment_id, organization_id, external_id, created, tracking_number)
VALUES ($1, $2, $3, nullif($4, ''), $5, $6)
ON CONFLICT (bridge_id, shipment_id) DO UPDATE
   SET external_id = coalesce(EXCLUDED.external_id, fulfillment_pushes.external_id),
       tracking_number = EXCLUDED.tracking_number, updated_at = now()`,
			bridgeID, c.ShipmentID, orgID, externalID, created, c.TrackingNumber); err != nil {
			return mapErr(err)
		}
		_, err := tx.Exec(ctx, `UPDATE orders SET sent_to_fulfillment = now(), updated_at = now()
 WHERE organization_id = $1 AND id = $2 AND sent_to_fulfillment IS NULL`, orgID, c.OrderID)
		return mapErr(err)
	})
}

func nonEmpty(s string) *string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	return &s
}

func firstOf(vals ...string) string {
	for _, v := range vals {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}

func eqPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}
