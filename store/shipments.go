package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Shipment statuses (the CHECK constraint of migrations/00004). The label
// purchase moves pending → label_created; tracking moves a shipment through
// in_transit, out_for_delivery, delivered and exception.
const (
	ShipmentPending        = "pending"
	ShipmentLabelCreated   = "label_created"
	ShipmentInTransit      = "in_transit"
	ShipmentOutForDelivery = "out_for_delivery"
	ShipmentDelivered      = "delivered"
	ShipmentException      = "exception"
)

// ShipmentStatuses are every shipment status, in lifecycle order.
var ShipmentStatuses = []string{
	ShipmentPending, ShipmentLabelCreated, ShipmentInTransit, ShipmentOutForDelivery, ShipmentDelivered, ShipmentException,
}

// Shipment is a shipment of one organization, with the format of its label
// when it has one. Addresses, parcels and metadata stay raw JSON: the API
// validated them on the way in and writes them out unchanged.
type Shipment struct {
	ID               uuid.UUID       `db:"id"`
	OrganizationID   uuid.UUID       `db:"organization_id"`
	OrderID          *uuid.UUID      `db:"order_id"`
	BridgeID         *uuid.UUID      `db:"bridge_id"`
	CarrierAccountID *uuid.UUID      `db:"carrier_account_id"`
	Carrier          string          `db:"carrier"`
	Service          string          `db:"service"`
	Status           string          `db:"status"`
	TrackingNumber   *string         `db:"tracking_number"`
	RateAmount       *float64        `db:"rate_amount"`
	RateCurrency     *string         `db:"rate_currency"`
	ShipDate         *time.Time      `db:"ship_date"`
	ShipFrom         json.RawMessage `db:"ship_from"`
	ShipTo           json.RawMessage `db:"ship_to"`
	Parcels          json.RawMessage `db:"parcels"`
	Metadata         json.RawMessage `db:"metadata"`
	CarrierResponse  json.RawMessage `db:"carrier_response"`
	DeliveredAt      *time.Time      `db:"delivered_at"`
	// Coordinates of the addresses (the tracking map); nil when unknown.
	ShipFromLat *float64  `db:"ship_from_lat"`
	ShipFromLng *float64  `db:"ship_from_lng"`
	ShipToLat   *float64  `db:"ship_to_lat"`
	ShipToLng   *float64  `db:"ship_to_lng"`
	CreatedAt   time.Time `db:"created_at"`
	UpdatedAt   time.Time `db:"updated_at"`
	// From shipment_labels; nil when no label was bought.
	LabelFormat      *string `db:"label_format"`
	LabelContentType *string `db:"label_content_type"`
	LabelPieces      *int    `db:"label_pieces"`
	// PurchaseOwner is the workflow id of the run that buys the label when
	// it is not the shipment's own ShipmentLabel (a batch); nil otherwise.
	PurchaseOwner *string `db:"purchase_owner"`
	// LabelRequestedAt is when the label was last asked of the carrier
	// (MarkLabelRequested); nil: the carrier was never called.
	LabelRequestedAt *time.Time `db:"label_requested_at"`
}

// HasLabel reports whether a label document is stored.
func (s Shipment) HasLabel() bool { return s.LabelFormat != nil }

const shipmentCols = `s.id, s.organization_id, s.order_id, s.bridge_id, s.carrier_account_id, s.carrier, s.service,
 s.status, s.tracking_number, s.rate_amount::float8 AS rate_amount, s.rate_currency, s.ship_date, s.ship_from, s.ship_to,
 s.parcels, s.metadata, s.carrier_response, s.delivered_at, s.ship_from_lat, s.ship_from_lng, s.ship_to_lat, s.ship_to_lng,
 s.created_at, s.updated_at, s.purchase_owner, s.label_requested_at,
 l.format AS label_format, l.content_type AS label_content_type,
 CASE WHEN l.shipment_id IS NULL THEN NULL ELSE greatest(cardinality(l.piece_documents), 1) END AS label_pieces`

const shipmentFrom = ` FROM shipments s LEFT JOIN shipment_labels l ON l.shipment_id = s.id`

// InsertPendingShipment inserts sh (ID, OrganizationID, order, account,
// carrier, service, addresses and their coordinates, parcels, ship date and
// metadata set by the caller, and PurchaseOwner for a purchase carried by
// another run) as pending, before its label is bought. The order must still be
// the organization's (ErrNotFound otherwise); its bridge is copied. When a
// shipment with that id already exists (a client's retry of the same
// request, see the API's Idempotency-Key), it is returned as it is and
// created is false. A LabelRequestedAt set (any time) inserts the shipment
// marked as asked of the carrier now (MarkLabelRequested in the same
// statement), for a caller that calls the carrier next; a shipment found
// is not marked.
func InsertPendingShipment(ctx context.Context, db DBTX, sh Shipment) (out Shipment, created bool, err error) {
	if sh.Metadata == nil {
		sh.Metadata = json.RawMessage(`{}`)
	}
	if sh.Parcels == nil {
		sh.Parcels = json.RawMessage(`[]`)
	}
	rows, _ := db.Query(ctx, `
WITH s AS (
  INSERT INTO shipments (id, organization_id, order_id, bridge_id, carrier_account_id, carrier, service, status,
                         ship_date, ship_from, ship_to, parcels, metadata, ship_from_lat, ship_from_lng, ship_to_lat, ship_to_lng,
                         purchase_owner, label_requested_at)
  SELECT $1, o.organization_id, o.id, o.bridge_id, $4, $5, $6, 'pending', $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
         CASE WHEN $17::bool THEN now() END
    FROM orders o WHERE o.organization_id = $2 AND o.id = $3
  ON CONFLICT (id) DO NOTHING
  RETURNING *
)
SELECT `+shipmentCols+` FROM s LEFT JOIN shipment_labels l ON false`,
		sh.ID, sh.OrganizationID, sh.OrderID, sh.CarrierAccountID, sh.Carrier, sh.Service,
		sh.ShipDate, sh.ShipFrom, sh.ShipTo, sh.Parcels, sh.Metadata, sh.ShipFromLat, sh.ShipFromLng, sh.ShipToLat, sh.ShipToLng, sh.PurchaseOwner,
		sh.LabelRequestedAt != nil)
	out, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Shipment])
	if err == nil {
		return out, true, nil
	}
	if err = mapErr(err); err != ErrNotFound {
		return out, false, err
	}
	// Either the order is not the organization's, or the shipment exists.
	out, err = ShipmentByID(ctx, db, sh.OrganizationID, sh.ID)
	return out, false, err
}

// MarkLabelRequested notes that the label of a pending shipment is about
// to be asked of the carrier (label_requested_at, migration 00030): from
// then on the purchase's outcome is unknown until recorded. ErrNotFound:
// the shipment is gone or no longer pending.
func MarkLabelRequested(ctx context.Context, db DBTX, orgID, id uuid.UUID) error {
	tag, err := db.Exec(ctx, `UPDATE shipments SET label_requested_at = now()
 WHERE organization_id = $1 AND id = $2 AND status = 'pending'`, orgID, id)
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// DeletePendingShipment deletes a shipment that is still pending (its label
// purchase was refused or never happened); deleted is false when it is not
// (any more) pending.
func DeletePendingShipment(ctx context.Context, db DBTX, orgID, id uuid.UUID) (deleted bool, err error) {
	tag, err := db.Exec(ctx, `DELETE FROM shipments WHERE organization_id = $1 AND id = $2 AND status = 'pending'`, orgID, id)
	if err != nil {
		return false, mapErr(err)
	}
	return tag.RowsAffected() > 0, nil
}

// FailPendingShipment ends a pending shipment whose label purchase has an
// unknown outcome (the carrier's answer was lost): it becomes exception,
// with the reason under carrier_response.error and, for clients (the API
// shows no carrier response), under metadata.label_purchase_error, so that
// it stays visible (a label may have been bought) and can be checked with
// the carrier and deleted. updated is false when the shipment is not (any
// more) pending.
func FailPendingShipment(ctx context.Context, db DBTX, orgID, id uuid.UUID, reason string) (updated bool, err error) {
	tag, err := db.Exec(ctx, `
UPDATE shipments SET status = 'exception', carrier_response = jsonb_build_object('error', $3::text),
       metadata = metadata || jsonb_build_object('label_purchase_error', $3::text), updated_at = now()
 WHERE organization_id = $1 AND id = $2 AND status = 'pending'`, orgID, id, reason)
	if err != nil {
		return false, mapErr(err)
	}
	return tag.RowsAffected() > 0, nil
}

// PurgeSettledLabelStashes deletes the stashes of labels that were recorded
// (their shipment holds that tracking number and is past pending): the rare
// one recording did not consume. A stash of a pending shipment is still
// needed; one of an exception shipment, or of another label than the one
// recorded, is the only trace of a label bought and not voided, and stays
// with its shipment. It returns how many it deleted.
func PurgeSettledLabelStashes(ctx context.Context, db DBTX) (int64, error) {
	tag, err := db.Exec(ctx, `
DELETE FROM shipment_label_stash st USING shipments s
 WHERE s.id = st.shipment_id AND s.status NOT IN ('pending', 'exception') AND s.tracking_number = st.tracking_number`)
	if err != nil {
		return 0, mapErr(err)
	}
	return tag.RowsAffected(), nil
}

// stalePending lists up to limit rows of table still pending that were
// created before cutoff, the least recently checked by the reconciler
// first, then oldest (each table has a partial index on
// (reconcile_checked_at NULLS FIRST, created_at) for its pending rows).
func stalePending(ctx context.Context, db DBTX, table string, cutoff time.Time, limit int) ([]WaitingRow, error) {
	rows, _ := db.Query(ctx, `SELECT organization_id, id, created_at AS since FROM `+table+`
 WHERE status = 'pending' AND created_at < $1 ORDER BY reconcile_checked_at NULLS FIRST, created_at LIMIT $2`, cutoff, limit)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[WaitingRow])
	return out, mapErr(err)
}

// PendingShipmentRow is a shipment left pending, as the reconciler finds
// it: Owner is the workflow id of the run that carries its purchase when
// it is not its own ShipmentLabel (a batch), nil otherwise.
type PendingShipmentRow struct {
	WaitingRow
	Owner *string `db:"owner"`
}

// StalePendingShipments lists shipments still pending (label not
// recorded) created before cutoff, the least recently checked by the
// reconciler first (never checked first, then oldest; MarkReconcileChecked).
func StalePendingShipments(ctx context.Context, db DBTX, cutoff time.Time, limit int) ([]PendingShipmentRow, error) {
	rows, _ := db.Query(ctx, `SELECT organization_id, id, created_at AS since, purchase_owner AS owner FROM shipments
 WHERE status = 'pending' AND created_at < $1 ORDER BY reconcile_checked_at NULLS FIRST, created_at LIMIT $2`, cutoff, limit)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[PendingShipmentRow])
	return out, mapErr(err)
}

// ShipmentLabelDoc is a bought label: what the shipment row records and the
// document the label endpoint serves.
type ShipmentLabelDoc struct {
	TrackingNumber  string          `json:"trackingNumber"`
	RateAmount      float64         `json:"rateAmount"`
	RateCurrency    string          `json:"rateCurrency"`
	ShipDate        *time.Time      `json:"shipDate"` // the carrier's ship date; nil keeps the requested one
	CarrierResponse json.RawMessage `json:"carrierResponse"`
	Format          string          `json:"format"`
	ContentType     string          `json:"contentType"`
	// Document is served by default; Pieces (with their TrackingNumbers)
	// are the per-package documents of a multi-package label.
	Document        []byte   `json:"document"`
	TrackingNumbers []string `json:"trackingNumbers"`
	Pieces          [][]byte `json:"pieces"`
	// Stashed: Document and Pieces are not here but in the shipment's
	// stash (StashShipmentLabel), where CompleteShipmentLabel takes them.
	Stashed bool `json:"stashed,omitempty"`
}

// ErrLabelStashMissing: CompleteShipmentLabel was told the documents are
// stashed, and the stash is gone; nothing was recorded.
var ErrLabelStashMissing = errors.New("the label's stashed documents are gone")

// StashShipmentLabel keeps the documents and tracking number of a label
// just bought for a pending shipment (migration 00024), so that they need
// not travel in the purchase workflow's payloads. ErrNotFound: the
// shipment is gone or no longer pending, or holds the stash of another
// label (which stays: it is the trace of a label bought before). The shipment row is locked in
// share mode, so a concurrent change of its status (FailPendingShipment,
// CompleteShipmentLabel) comes wholly before or after the stash.
func StashShipmentLabel(ctx context.Context, db DBTX, orgID, id uuid.UUID, l ShipmentLabelDoc) error {
	doc, pieces := l.Document, l.Pieces
	if pieces == nil {
		pieces = [][]byte{}
	}
	if doc == nil {
		doc = []byte{}
	}
	l.Document, l.Pieces, l.Stashed = nil, nil, false
	facts, err := json.Marshal(l)
	if err != nil {
		return err
	}
	tag, err := db.Exec(ctx, `
INSERT INTO shipment_label_stash (shipment_id, organization_id, tracking_number, label, document, piece_documents)
SELECT id, organization_id, $3, $4, $5, $6 FROM shipments WHERE organization_id = $1 AND id = $2 AND status = 'pending' FOR SHARE
ON CONFLICT (shipment_id) DO UPDATE
   SET label = excluded.label, document = excluded.document, piece_documents = excluded.piece_documents
 WHERE shipment_label_stash.tracking_number = excluded.tracking_number`,
		orgID, id, l.TrackingNumber, facts, doc, pieces)
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// DropLabelStash deletes the stash of a label the carrier voided, so that
// no later run records it.
func DropLabelStash(ctx context.Context, db DBTX, orgID uuid.UUID, trackingNumber string) error {
	_, err := db.Exec(ctx, `DELETE FROM shipment_label_stash WHERE organization_id = $1 AND tracking_number = $2`, orgID, trackingNumber)
	return mapErr(err)
}

// StashedShipmentLabel is the label stashed for a shipment (one was bought
// for it but not recorded): its facts, Stashed set, the documents left in
// the stash for CompleteShipmentLabel. found is false when there is none.
func StashedShipmentLabel(ctx context.Context, db DBTX, orgID, id uuid.UUID) (l ShipmentLabelDoc, found bool, err error) {
	var facts []byte
	err = mapErr(db.QueryRow(ctx, `SELECT label FROM shipment_label_stash WHERE organization_id = $1 AND shipment_id = $2`, orgID, id).Scan(&facts))
	if err == ErrNotFound {
		return ShipmentLabelDoc{}, false, nil
	}
	if err != nil {
		return ShipmentLabelDoc{}, false, err
	}
	if err := json.Unmarshal(facts, &l); err != nil {
		return ShipmentLabelDoc{}, false, fmt.Errorf("label stash of shipment %s: %w", id, err)
	}
	l.Stashed = true
	return l, true, nil
}

// CompleteShipmentLabel records a bought label on a pending shipment: the
// shipment becomes label_created with its tracking number, rate and the
// carrier's response, and the document is stored (taken from the stash
// when l.Stashed; the stash is removed either way), in one statement. A
// shipment that is no longer pending (an earlier attempt recorded the
// label) is left as it is. It returns the shipment as stored
// (ErrNotFound: it was deleted); Recorded tells whether it holds this label.
func CompleteShipmentLabel(ctx context.Context, db DBTX, orgID, id uuid.UUID, l ShipmentLabelDoc) (Shipment, error) {
	if l.TrackingNumbers == nil {
		l.TrackingNumbers = []string{}
	}
	if l.Pieces == nil {
		l.Pieces = [][]byte{}
	}
	// The shipment as recorded comes back from the same statement; a
	// shipment that was not pending (nothing updated) is read after it.
	rows, _ := db.Query(ctx, `
WITH u AS (
  UPDATE shipments
     SET status = 'label_created', tracking_number = $3, rate_amount = $4, rate_currency = $5,
         ship_date = coalesce($6::date, ship_date), carrier_response = $7, updated_at = now()
   WHERE organization_id = $1 AND id = $2 AND status = 'pending'
  RETURNING *
), st AS (
  DELETE FROM shipment_label_stash WHERE shipment_id = (SELECT id FROM u) AND tracking_number = $3 RETURNING document, piece_documents
), l AS (
  INSERT INTO shipment_labels (shipment_id, organization_id, format, content_type, document, tracking_numbers, piece_documents)
  SELECT u.id, u.organization_id, $8, $9,
         CASE WHEN $13::bool THEN st.document ELSE $10 END, $11, CASE WHEN $13::bool THEN st.piece_documents ELSE $12 END
    FROM u LEFT JOIN st ON true
  ON CONFLICT (shipment_id) DO NOTHING
  RETURNING shipment_id, format, content_type, piece_documents
)
SELECT `+shipmentCols+` FROM u s JOIN l ON l.shipment_id = s.id`,
		orgID, id, l.TrackingNumber, l.RateAmount, l.RateCurrency, l.ShipDate, l.CarrierResponse,
		l.Format, l.ContentType, l.Document, l.TrackingNumbers, l.Pieces, l.Stashed)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Shipment])
	var pgErr *pgconn.PgError
	if l.Stashed && errors.As(err, &pgErr) && pgErr.Code == "23502" && pgErr.ColumnName == "document" {
		return Shipment{}, ErrLabelStashMissing
	}
	if err = mapErr(err); err != ErrNotFound {
		return out, err
	}
	return ShipmentByID(ctx, db, orgID, id)
}

// Recorded reports whether the shipment holds the label l (CompleteShipmentLabel
// recorded it, now or earlier).
func (l ShipmentLabelDoc) Recorded(sh Shipment) bool {
	return sh.HasLabel() && sh.TrackingNumber != nil && *sh.TrackingNumber == l.TrackingNumber
}

// ShipmentByID finds a shipment of the organization.
func ShipmentByID(ctx context.Context, db DBTX, orgID, id uuid.UUID) (Shipment, error) {
	rows, _ := db.Query(ctx, `SELECT `+shipmentCols+shipmentFrom+` WHERE s.organization_id = $1 AND s.id = $2`, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Shipment])
	return out, mapErr(err)
}

// DeleteShipment deletes a shipment, its label and its action records.
func DeleteShipment(ctx context.Context, db DBTX, orgID, id uuid.UUID) error {
	tag, err := db.Exec(ctx, `DELETE FROM shipments WHERE organization_id = $1 AND id = $2`, orgID, id)
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// ShipmentLabelFile is a stored label document.
type ShipmentLabelFile struct {
	Format          string   `db:"format"`
	ContentType     string   `db:"content_type"`
	Document        []byte   `db:"document"`
	TrackingNumbers []string `db:"tracking_numbers"`
	PieceDocuments  [][]byte `db:"piece_documents"`
}

// ShipmentLabel returns the label of a shipment of the organization
// (ErrNotFound: no such shipment, or no label).
func ShipmentLabel(ctx context.Context, db DBTX, orgID, shipmentID uuid.UUID) (ShipmentLabelFile, error) {
	rows, _ := db.Query(ctx, `SELECT format, content_type, document, tracking_numbers, piece_documents
  FROM shipment_labels WHERE organization_id = $1 AND shipment_id = $2`, orgID, shipmentID)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[ShipmentLabelFile])
	return out, mapErr(err)
}

// ShipmentSortColumns maps the API's sort fields to columns; nothing else is
// ever put into ORDER BY.
var ShipmentSortColumns = map[string]string{
	"created_at": "s.created_at",
	"updated_at": "s.updated_at",
	"ship_date":  "s.ship_date",
}

// ShipmentFilter narrows a list; zero values do not filter.
type ShipmentFilter struct {
	Status  string
	OrderID *uuid.UUID
	Carrier string
}

// ShipmentListParams is a filter, a sort and a page.
type ShipmentListParams struct {
	Filter ShipmentFilter
	// Sort is a key of ShipmentSortColumns; empty means created_at.
	Sort   string
	Desc   bool
	Limit  int
	Offset int
}

// ListShipments returns one page and the number of all matching shipments.
// Each filter has its index ((organization_id, status | carrier,
// created_at) and (organization_id, order_id)).
func ListShipments(ctx context.Context, db DBTX, orgID uuid.UUID, p ShipmentListParams) ([]Shipment, int, error) {
	col, ok := ShipmentSortColumns[p.Sort]
	if !ok {
		col = "s.created_at"
	}
	dir := " ASC"
	if p.Desc {
		dir = " DESC"
	}
	args := []any{orgID}
	var where strings.Builder
	where.WriteString("s.organization_id = $1")
	add := func(cond string, v any) {
		args = append(args, v)
		where.WriteString(" AND " + strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(args))))
	}
	if p.Filter.Status != "" {
		add("s.status = ?", p.Filter.Status)
	}
	if p.Filter.OrderID != nil {
		add("s.order_id = ?", *p.Filter.OrderID)
	}
	if p.Filter.Carrier != "" {
		add("s.carrier = ?", p.Filter.Carrier)
	}
	nulls := ""
	if col == "s.ship_date" {
		nulls = " NULLS LAST"
	}
	rows, _ := db.Query(ctx, `SELECT `+shipmentCols+shipmentFrom+` WHERE `+where.String()+
		` ORDER BY `+col+dir+nulls+`, s.id`+dir+fmt.Sprintf(` LIMIT %d OFFSET %d`, p.Limit, p.Offset), args...)
	items, err := pgx.CollectRows(rows, pgx.RowToStructByName[Shipment])
	if err != nil {
		return nil, 0, mapErr(err)
	}
	if len(items) < p.Limit && (len(items) > 0 || p.Offset == 0) {
		return items, p.Offset + len(items), nil
	}
	var total int
	err = db.QueryRow(ctx, `SELECT count(*) FROM shipments s WHERE `+where.String(), args...).Scan(&total)
	return items, total, mapErr(err)
}

// ShipmentPatch is an update of a shipment; nil fields stay as they are.
type ShipmentPatch struct {
	Status *string
	// TrackingNumber: a pointer to nil clears it.
	TrackingNumber **string
	// Metadata is merged at the top level: its keys overwrite, a key whose
	// value is nil is removed.
	Metadata map[string]any
}

type shipmentPatchRow struct {
	Status         string          `db:"status"`
	TrackingNumber *string         `db:"tracking_number"`
	Metadata       json.RawMessage `db:"metadata"`
}

// PatchShipment applies p to a shipment of the organization and returns it.
// Moving to delivered stamps delivered_at (kept if already set). An empty
// patch writes nothing.
func PatchShipment(ctx context.Context, s *Store, orgID, id uuid.UUID, p ShipmentPatch) (Shipment, error) {
	if p.Status == nil && p.TrackingNumber == nil && p.Metadata == nil {
		return ShipmentByID(ctx, s.Pool, orgID, id)
	}
	var out Shipment
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `SELECT status, tracking_number, metadata FROM shipments WHERE organization_id = $1 AND id = $2 FOR UPDATE`, orgID, id)
		cur, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[shipmentPatchRow])
		if err != nil {
			return mapErr(err)
		}
		status, tracking, metadata := cur.Status, cur.TrackingNumber, cur.Metadata
		if p.Status != nil {
			status = *p.Status
		}
		if p.TrackingNumber != nil {
			tracking = *p.TrackingNumber
		}
		if p.Metadata != nil {
			var merged map[string]any
			dec := json.NewDecoder(bytes.NewReader(cur.Metadata))
			dec.UseNumber()
			if err := dec.Decode(&merged); err != nil || merged == nil {
				merged = map[string]any{}
			}
			merged = maps.Clone(merged)
			for k, v := range p.Metadata {
				if v == nil {
					delete(merged, k)
				} else {
					merged[k] = v
				}
			}
			if metadata, err = json.Marshal(merged); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `
UPDATE shipments
   SET status = $3, tracking_number = $4, metadata = $5,
       delivered_at = CASE WHEN $3 = 'delivered' THEN coalesce(delivered_at, now()) ELSE delivered_at END,
       updated_at = now()
 WHERE organization_id = $1 AND id = $2`, orgID, id, status, tracking, metadata); err != nil {
			return mapErr(err)
		}
		out, err = ShipmentByID(ctx, tx, orgID, id)
		return err
	})
	return out, err
}

// ShipmentOrder is the summary of a shipment's order (include=order).
type ShipmentOrder struct {
	ID            uuid.UUID  `db:"id"`
	OrderNumber   *string    `db:"order_number"`
	ExternalID    string     `db:"external_id"`
	Status        string     `db:"status"`
	CustomerName  string     `db:"customer_name"`
	CustomerEmail string     `db:"customer_email"`
	Total         float64    `db:"total"`
	Currency      string     `db:"currency"`
	BridgeID      *uuid.UUID `db:"bridge_id"`
	CreatedAt     time.Time  `db:"created_at"`
}

// ShipmentOrders fetches the organization's orders among ids in one query.
func ShipmentOrders(ctx context.Context, db DBTX, orgID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]ShipmentOrder, error) {
	out := make(map[uuid.UUID]ShipmentOrder, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, _ := db.Query(ctx, `SELECT id, order_number, external_id, status, customer_name, customer_email, total::float8 AS total,
 currency, bridge_id, created_at FROM orders WHERE organization_id = $1 AND id = ANY($2)`, orgID, ids)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[ShipmentOrder])
	if err != nil {
		return nil, mapErr(err)
	}
	for _, o := range list {
		out[o.ID] = o
	}
	return out, nil
}
