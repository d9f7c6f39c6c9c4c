package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Shipment statuses as tracking sees them (the CHECK constraint of
// shipments.status and tracking_checkpoints.status).
const (
	TrackingPending        = "pending"
	TrackingLabelCreated   = "label_created"
	TrackingInTransit      = "in_transit"
	TrackingOutForDelivery = "out_for_delivery"
	TrackingDelivered      = "delivered"
	TrackingException      = "exception"
)

// CheckpointStatuses are the values of a checkpoint's status: the shipment
// statuses.
var CheckpointStatuses = []string{
	TrackingPending, TrackingLabelCreated, TrackingInTransit, TrackingOutForDelivery, TrackingDelivered, TrackingException,
}

// trackingRank orders the forward statuses; exception has no rank.
var trackingRank = map[string]int{
	TrackingPending: 0, TrackingLabelCreated: 1, TrackingInTransit: 2, TrackingOutForDelivery: 3, TrackingDelivered: 4,
}

// ShipmentStatusAfter is THE rule moving a shipment when a checkpoint newer
// than anything the shipment shows is recorded (by the API or the tracking
// poller). It returns the shipment's next status:
//
//   - delivered is final: nothing moves a delivered shipment;
//   - an exception checkpoint moves any other shipment to exception;
//   - a shipment in exception leaves it on a later in_transit,
//     out_for_delivery or delivered scan (the parcel moves again);
//   - otherwise the status only moves forward along pending → label_created
//     → in_transit → out_for_delivery → delivered; an older-stage
//     checkpoint leaves it unchanged.
func ShipmentStatusAfter(current, checkpoint string) string {
	switch {
	case current == TrackingDelivered:
		return current
	case checkpoint == TrackingException:
		return TrackingException
	case current == TrackingException:
		switch checkpoint {
		case TrackingInTransit, TrackingOutForDelivery, TrackingDelivered:
			return checkpoint
		}
		return current
	}
	cr, ok := trackingRank[current]
	if !ok {
		cr = -1
	}
	if nr, ok := trackingRank[checkpoint]; ok && nr > cr {
		return checkpoint
	}
	return current
}

// CheckpointRuleStatus is the status a checkpoint stands for in the status
// rule: its status, except that a checkpoint flagged isException counts as
// exception (unless it reports a delivery, which stays a delivery).
func CheckpointRuleStatus(status string, isException bool) string {
	if isException && status != TrackingDelivered {
		return TrackingException
	}
	return status
}

// TrackingStep is a checkpoint as the status rule sees it.
type TrackingStep struct {
	Status string
	// IsException is the checkpoint's isException flag: the step counts as
	// an exception (CheckpointRuleStatus).
	IsException bool
	Time        time.Time
	Sequence    int
}

// ShipmentStatusAfterSteps applies ShipmentStatusAfter to the steps newer
// than since (nil: all of them), oldest first (ties by sequence), each step
// standing for its CheckpointRuleStatus. It returns
// the resulting status and, when it moved the shipment to delivered, the
// time of the checkpoint that did.
func ShipmentStatusAfterSteps(current string, since *time.Time, steps []TrackingStep) (string, *time.Time) {
	newer := make([]TrackingStep, 0, len(steps))
	for _, s := range steps {
		if since == nil || s.Time.After(*since) {
			newer = append(newer, s)
		}
	}
	sort.SliceStable(newer, func(i, j int) bool {
		if !newer[i].Time.Equal(newer[j].Time) {
			return newer[i].Time.Before(newer[j].Time)
		}
		return newer[i].Sequence < newer[j].Sequence
	})
	status := current
	var deliveredAt *time.Time
	for _, s := range newer {
		next := ShipmentStatusAfter(status, CheckpointRuleStatus(s.Status, s.IsException))
		if next == TrackingDelivered && status != TrackingDelivered {
			t := s.Time
			deliveredAt = &t
		}
		status = next
	}
	return status, deliveredAt
}

// Checkpoint is a stored tracking checkpoint.
type Checkpoint struct {
	ID             uuid.UUID       `db:"id"`
	OrganizationID uuid.UUID       `db:"organization_id"`
	ShipmentID     uuid.UUID       `db:"shipment_id"`
	Sequence       int             `db:"sequence"`
	Status         string          `db:"status"`
	StatusDetail   *string         `db:"status_detail"`
	Description    *string         `db:"description"`
	City           *string         `db:"city"`
	State          *string         `db:"state"`
	Country        *string         `db:"country"`
	CountryCode    *string         `db:"country_code"`
	Zip            *string         `db:"zip"`
	Latitude       *float64        `db:"latitude"`
	Longitude      *float64        `db:"longitude"`
	CheckpointTime time.Time       `db:"checkpoint_time"`
	Source         string          `db:"source"`
	SourceEventID  *string         `db:"source_event_id"`
	RawData        json.RawMessage `db:"raw_data"`
	IsException    bool            `db:"is_exception"`
	ExceptionType  *string         `db:"exception_type"`
	CreatedAt      time.Time       `db:"created_at"`
	UpdatedAt      time.Time       `db:"updated_at"`
}

const checkpointCols = `id, organization_id, shipment_id, sequence, status, status_detail, description, city, state,
 country, country_code, zip, latitude, longitude, checkpoint_time, source, source_event_id, raw_data, is_exception,
 exception_type, created_at, updated_at`

// ShipmentTracked is what the tracking poller learned about a shipment
// besides its checkpoints: it was tracked now (last_tracked_at), and the
// carrier's origin and destination coordinates, kept when the shipment has
// none yet.
type ShipmentTracked struct {
	ShipmentID uuid.UUID
	// Tracked stamps last_tracked_at with the transaction time.
	Tracked          bool
	FromLat, FromLng *float64
	ToLat, ToLng     *float64
}

// TrackingWrite is one recording of checkpoints: one transaction with a
// constant number of statements, whatever the number of checkpoints.
type TrackingWrite struct {
	// OrganizationID scopes the write: every shipment must be the
	// organization's. uuid.Nil (the tracking poller) accepts shipments of any
	// organization; each checkpoint takes its shipment's organization.
	OrganizationID uuid.UUID
	// Checkpoints to record. ID and OrganizationID are set by the store.
	Checkpoints []Checkpoint
	// InsertOnly refuses a checkpoint whose shipment + source +
	// sourceEventId exists (ErrConflict) instead of updating it.
	InsertOnly bool
	// Shipments are updates of shipments without (or besides) checkpoints.
	Shipments []ShipmentTracked
}

// StatusChange is a shipment status moved by a recording.
type StatusChange struct {
	ShipmentID  uuid.UUID  `json:"shipmentId"`
	From        string     `json:"from"`
	To          string     `json:"to"`
	DeliveredAt *time.Time `json:"deliveredAt"`
}

// TrackingWriteResult is what a recording stored.
type TrackingWriteResult struct {
	// Checkpoints has one entry per input checkpoint, in input order, as
	// stored (inputs with the same dedupe key share one row: the last wins).
	Checkpoints []Checkpoint
	// Changes are the shipments whose status moved.
	Changes []StatusChange
}

// UnknownShipmentsError names the shipments of a write that do not exist
// (in the organization). It matches ErrNotFound.
type UnknownShipmentsError struct {
	IDs []uuid.UUID
}

func (e *UnknownShipmentsError) Error() string {
	return fmt.Sprintf("%d unknown shipment(s): %v", len(e.IDs), e.IDs)
}

// Is matches ErrNotFound.
func (e *UnknownShipmentsError) Is(target error) bool { return target == ErrNotFound }

// TxBeginner starts transactions: a pool, a connection or a transaction
// (then a savepoint).
type TxBeginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Statements of RecordCheckpoints. The whole write is BEGIN, lockShipments,
// upsertCheckpoints (when there are checkpoints), updateTrackedShipments
// (when a shipment changes) and COMMIT: at most five statements for any
// number of checkpoints and shipments.
const (
	// Locks the shipments (in id order, so concurrent writers cannot
	// deadlock) and reads their status and newest recorded checkpoint time.
	// A checkpoint dated in the future (a carrier's clock, or one written
	// before the API bounded checkpointTime) is not the newest: counting it
	// would freeze the shipment's status until that time.
	lockTrackedShipmentsSQL = `
SELECT s.id, s.organization_id, s.status,
       (SELECT max(c.checkpoint_time) FROM tracking_checkpoints c
         WHERE c.shipment_id = s.id AND c.checkpoint_time <= now()) AS last_checkpoint_at
  FROM shipments s
 WHERE s.id = ANY($1::uuid[]) AND ($2::uuid IS NULL OR s.organization_id = $2::uuid)
 ORDER BY s.id
   FOR UPDATE OF s`

	insertCheckpointsSQL = `
INSERT INTO tracking_checkpoints AS t (id, organization_id, shipment_id, sequence, status, status_detail, description, city,
       state, country, country_code, zip, latitude, longitude, checkpoint_time, source, source_event_id, raw_data,
       is_exception, exception_type)
SELECT u.id, u.organization_id, u.shipment_id, u.sequence, u.status, u.status_detail, u.description, u.city,
       u.state, u.country, u.country_code, u.zip, u.latitude, u.longitude, u.checkpoint_time, u.source,
       u.source_event_id, u.raw_data::jsonb, u.is_exception, u.exception_type
  FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::int[], $5::text[], $6::text[], $7::text[], $8::text[],
              $9::text[], $10::text[], $11::text[], $12::text[], $13::float8[], $14::float8[], $15::timestamptz[],
              $16::text[], $17::text[], $18::text[], $19::bool[], $20::text[])
       AS u(id, organization_id, shipment_id, sequence, status, status_detail, description, city,
            state, country, country_code, zip, latitude, longitude, checkpoint_time, source,
            source_event_id, raw_data, is_exception, exception_type)
`
	insertOnlySuffix = `ON CONFLICT (shipment_id, source, source_event_id) DO NOTHING
RETURNING ` + checkpointCols

	// Every column follows the newest report; updated_at only moves when
	// something did change, so a re-poll of the same history is a no-op for
	// readers.
	upsertSuffix = `ON CONFLICT (shipment_id, source, source_event_id) DO UPDATE SET
       sequence = EXCLUDED.sequence, status = EXCLUDED.status, status_detail = EXCLUDED.status_detail,
       description = EXCLUDED.description, city = EXCLUDED.city, state = EXCLUDED.state, country = EXCLUDED.country,
       country_code = EXCLUDED.country_code, zip = EXCLUDED.zip, latitude = EXCLUDED.latitude,
       longitude = EXCLUDED.longitude, checkpoint_time = EXCLUDED.checkpoint_time, raw_data = EXCLUDED.raw_data,
       is_exception = EXCLUDED.is_exception, exception_type = EXCLUDED.exception_type,
       updated_at = CASE WHEN (t.sequence, t.status, t.status_detail, t.description, t.city, t.state, t.country,
                               t.country_code, t.zip, t.latitude, t.longitude, t.checkpoint_time, t.raw_data,
                               t.is_exception, t.exception_type)
                              IS DISTINCT FROM
                              (EXCLUDED.sequence, EXCLUDED.status, EXCLUDED.status_detail, EXCLUDED.description,
                               EXCLUDED.city, EXCLUDED.state, EXCLUDED.country, EXCLUDED.country_code, EXCLUDED.zip,
                               EXCLUDED.latitude, EXCLUDED.longitude, EXCLUDED.checkpoint_time, EXCLUDED.raw_data,
                               EXCLUDED.is_exception, EXCLUDED.exception_type)
                         THEN now() ELSE t.updated_at END
RETURNING ` + checkpointCols

	// One statement for every shipment that changes: a status moved by the
	// rule (with delivered_at), last_tracked_at, and coordinates filled in
	// where the shipment has none.
	updateTrackedShipmentsSQL = `
UPDATE shipments s SET
       status = coalesce(u.status, s.status),
       delivered_at = CASE WHEN u.status = 'delivered' THEN coalesce(u.delivered_at, s.delivered_at, now()) ELSE s.delivered_at END,
       last_tracked_at = CASE WHEN u.tracked THEN now() ELSE s.last_tracked_at END,
       ship_from_lat = CASE WHEN u.fill_from THEN u.from_lat ELSE s.ship_from_lat END,
       ship_from_lng = CASE WHEN u.fill_from THEN u.from_lng ELSE s.ship_from_lng END,
       ship_to_lat = CASE WHEN u.fill_to THEN u.to_lat ELSE s.ship_to_lat END,
       ship_to_lng = CASE WHEN u.fill_to THEN u.to_lng ELSE s.ship_to_lng END,
       updated_at = CASE WHEN (u.status IS NOT NULL AND u.status <> s.status) OR u.fill_from OR u.fill_to
                         THEN now() ELSE s.updated_at END
  FROM (SELECT v.id, v.status, v.delivered_at, v.tracked, v.from_lat, v.from_lng, v.to_lat, v.to_lng,
               v.from_lat IS NOT NULL AND v.from_lng IS NOT NULL AND (sh.ship_from_lat IS NULL OR sh.ship_from_lng IS NULL) AS fill_from,
               v.to_lat IS NOT NULL AND v.to_lng IS NOT NULL AND (sh.ship_to_lat IS NULL OR sh.ship_to_lng IS NULL) AS fill_to
          FROM unnest($1::uuid[], $2::text[], $3::timestamptz[], $4::bool[], $5::float8[], $6::float8[], $7::float8[], $8::float8[])
               AS v(id, status, delivered_at, tracked, from_lat, from_lng, to_lat, to_lng)
          JOIN shipments sh ON sh.id = v.id) u
 WHERE s.id = u.id`
)

// checkpointKey is the deduplication key of a checkpoint with a source
// event id.
type checkpointKey struct {
	shipment      uuid.UUID
	source, event string
}

type lockedShipment struct {
	org          uuid.UUID
	status       string
	lastCheckpAt *time.Time
}

// RecordCheckpoints records checkpoints and shipment tracking updates in
// one transaction with a constant number of statements: it locks the
// shipments and reads their state (one SELECT … = ANY … FOR UPDATE),
// inserts or upserts every checkpoint (one INSERT … SELECT FROM unnest … ON
// CONFLICT … RETURNING), moves each shipment's status by
// ShipmentStatusAfterSteps over its checkpoints newer than its newest
// recorded one (checkpoints dated in the future do not count as the newest),
// and writes every shipment change (one UPDATE … FROM unnest).
//
// Errors: *UnknownShipmentsError (matches ErrNotFound) when a shipment does
// not exist (in the organization): nothing is written. With InsertOnly,
// ErrConflict when a checkpoint's shipment + source + sourceEventId exists:
// nothing is written. Checkpoints with the same key in one write are stored
// once (the last one wins). A checkpoint without SourceEventID is always
// inserted.
func RecordCheckpoints(ctx context.Context, db TxBeginner, w TrackingWrite) (TrackingWriteResult, error) {
	var res TrackingWriteResult
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		var err error
		res, err = recordCheckpoints(ctx, tx, w)
		return err
	})
	return res, err
}

func recordCheckpoints(ctx context.Context, tx pgx.Tx, w TrackingWrite) (TrackingWriteResult, error) {
	// The shipments the write touches, distinct.
	ids := make([]uuid.UUID, 0, len(w.Shipments)+1)
	seen := map[uuid.UUID]bool{}
	add := func(id uuid.UUID) {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	for _, c := range w.Checkpoints {
		add(c.ShipmentID)
	}
	for _, s := range w.Shipments {
		add(s.ShipmentID)
	}
	if len(ids) == 0 {
		return TrackingWriteResult{Checkpoints: []Checkpoint{}}, nil
	}
	var org *uuid.UUID
	if w.OrganizationID != uuid.Nil {
		org = &w.OrganizationID
	}

	// 1. Lock and read the shipments.
	rows, err := tx.Query(ctx, lockTrackedShipmentsSQL, ids, org)
	if err != nil {
		return TrackingWriteResult{}, mapErr(err)
	}
	locked := make(map[uuid.UUID]lockedShipment, len(ids))
	for rows.Next() {
		var id uuid.UUID
		var l lockedShipment
		if err := rows.Scan(&id, &l.org, &l.status, &l.lastCheckpAt); err != nil {
			rows.Close()
			return TrackingWriteResult{}, err
		}
		locked[id] = l
	}
	if err := rows.Err(); err != nil {
		return TrackingWriteResult{}, mapErr(err)
	}
	if len(locked) != len(ids) {
		unknown := &UnknownShipmentsError{}
		for _, id := range ids {
			if _, ok := locked[id]; !ok {
				unknown.IDs = append(unknown.IDs, id)
			}
		}
		return TrackingWriteResult{}, unknown
	}

	// 2. Insert or upsert the checkpoints.
	stored, err := insertCheckpoints(ctx, tx, w, locked)
	if err != nil {
		return TrackingWriteResult{}, err
	}

	// 3. The rule, shipment by shipment, over the checkpoints of this write.
	steps := map[uuid.UUID][]TrackingStep{}
	for _, c := range w.Checkpoints {
		steps[c.ShipmentID] = append(steps[c.ShipmentID], TrackingStep{Status: c.Status, IsException: c.IsException,
			Time: c.CheckpointTime, Sequence: c.Sequence})
	}
	type update struct {
		status      *string
		deliveredAt *time.Time
		tracked     bool
		coords      [4]*float64
	}
	updates := map[uuid.UUID]*update{}
	var changes []StatusChange
	for _, id := range ids {
		l := locked[id]
		next, deliveredAt := ShipmentStatusAfterSteps(l.status, l.lastCheckpAt, steps[id])
		if next != l.status {
			s := next
			updates[id] = &update{status: &s, deliveredAt: deliveredAt}
			changes = append(changes, StatusChange{ShipmentID: id, From: l.status, To: next, DeliveredAt: deliveredAt})
		}
	}
	for _, s := range w.Shipments {
		u := updates[s.ShipmentID]
		if u == nil {
			u = &update{}
		}
		u.tracked = u.tracked || s.Tracked
		if s.FromLat != nil && s.FromLng != nil {
			u.coords[0], u.coords[1] = s.FromLat, s.FromLng
		}
		if s.ToLat != nil && s.ToLng != nil {
			u.coords[2], u.coords[3] = s.ToLat, s.ToLng
		}
		if u.status != nil || u.tracked || u.coords != [4]*float64{} {
			updates[s.ShipmentID] = u
		}
	}

	// 4. One UPDATE for every shipment that changes.
	if len(updates) > 0 {
		n := len(updates)
		uids := make([]uuid.UUID, 0, n)
		statuses := make([]*string, 0, n)
		delivered := make([]*time.Time, 0, n)
		tracked := make([]bool, 0, n)
		var coords [4][]*float64
		for _, id := range ids {
			u, ok := updates[id]
			if !ok {
				continue
			}
			uids = append(uids, id)
			statuses = append(statuses, u.status)
			delivered = append(delivered, u.deliveredAt)
			tracked = append(tracked, u.tracked)
			for i := range coords {
				coords[i] = append(coords[i], u.coords[i])
			}
		}
		if _, err := tx.Exec(ctx, updateTrackedShipmentsSQL, uids, statuses, delivered, tracked,
			coords[0], coords[1], coords[2], coords[3]); err != nil {
			return TrackingWriteResult{}, mapErr(err)
		}
	}
	if changes == nil {
		changes = []StatusChange{}
	}
	return TrackingWriteResult{Checkpoints: stored, Changes: changes}, nil
}

// insertCheckpoints runs the one INSERT and maps the returned rows back to
// the input, in input order.
func insertCheckpoints(ctx context.Context, tx pgx.Tx, w TrackingWrite, locked map[uuid.UUID]lockedShipment) ([]Checkpoint, error) {
	if len(w.Checkpoints) == 0 {
		return []Checkpoint{}, nil
	}
	// Inputs with the same key collapse onto the last one: ON CONFLICT DO
	// UPDATE cannot touch a row twice in one statement.
	last := map[checkpointKey]int{}
	for i, c := range w.Checkpoints {
		if c.SourceEventID != nil {
			last[checkpointKey{c.ShipmentID, c.Source, *c.SourceEventID}] = i
		}
	}
	if w.InsertOnly && len(last) < countWithEvent(w.Checkpoints) {
		return nil, fmt.Errorf("%w: the same shipment, source and sourceEventId twice in one write", ErrConflict)
	}
	n := len(w.Checkpoints)
	var (
		ids        = make([]uuid.UUID, 0, n)
		orgs       = make([]uuid.UUID, 0, n)
		shipments  = make([]uuid.UUID, 0, n)
		seqs       = make([]int32, 0, n)
		statuses   = make([]string, 0, n)
		details    = make([]*string, 0, n)
		descs      = make([]*string, 0, n)
		cities     = make([]*string, 0, n)
		states     = make([]*string, 0, n)
		countries  = make([]*string, 0, n)
		codes      = make([]*string, 0, n)
		zips       = make([]*string, 0, n)
		lats       = make([]*float64, 0, n)
		lngs       = make([]*float64, 0, n)
		times      = make([]time.Time, 0, n)
		sources    = make([]string, 0, n)
		events     = make([]*string, 0, n)
		raws       = make([]*string, 0, n)
		exceptions = make([]bool, 0, n)
		excTypes   = make([]*string, 0, n)
		// byID maps the ids generated here to input positions (rows
		// without an event id, and new rows).
		byID = make(map[uuid.UUID]int, n)
	)
	for i, c := range w.Checkpoints {
		if c.SourceEventID != nil && last[checkpointKey{c.ShipmentID, c.Source, *c.SourceEventID}] != i {
			continue
		}
		id := uuid.New()
		byID[id] = i
		ids = append(ids, id)
		orgs = append(orgs, locked[c.ShipmentID].org)
		shipments = append(shipments, c.ShipmentID)
		seqs = append(seqs, int32(c.Sequence))
		statuses = append(statuses, c.Status)
		details = append(details, c.StatusDetail)
		descs = append(descs, c.Description)
		cities = append(cities, c.City)
		states = append(states, c.State)
		countries = append(countries, c.Country)
		codes = append(codes, c.CountryCode)
		zips = append(zips, c.Zip)
		lats = append(lats, c.Latitude)
		lngs = append(lngs, c.Longitude)
		times = append(times, c.CheckpointTime)
		sources = append(sources, c.Source)
		events = append(events, c.SourceEventID)
		var raw *string
		if len(c.RawData) > 0 && string(c.RawData) != "null" {
			s := string(c.RawData)
			raw = &s
		}
		raws = append(raws, raw)
		exceptions = append(exceptions, c.IsException)
		excTypes = append(excTypes, c.ExceptionType)
	}
	sql := insertCheckpointsSQL + upsertSuffix
	if w.InsertOnly {
		sql = insertCheckpointsSQL + insertOnlySuffix
	}
	rows, _ := tx.Query(ctx, sql, ids, orgs, shipments, seqs, statuses, details, descs, cities, states, countries,
		codes, zips, lats, lngs, times, sources, events, raws, exceptions, excTypes)
	got, err := pgx.CollectRows(rows, pgx.RowToStructByName[Checkpoint])
	if err != nil {
		return nil, mapErr(err)
	}
	if w.InsertOnly && len(got) < len(ids) {
		return nil, fmt.Errorf("%w: a checkpoint with this shipment, source and sourceEventId exists", ErrConflict)
	}
	out := make([]Checkpoint, n)
	byKey := make(map[checkpointKey]Checkpoint, len(got))
	for _, c := range got {
		if i, ok := byID[c.ID]; ok {
			out[i] = c
		}
		if c.SourceEventID != nil {
			byKey[checkpointKey{c.ShipmentID, c.Source, *c.SourceEventID}] = c
		}
	}
	for i, c := range w.Checkpoints {
		if c.SourceEventID == nil {
			continue
		}
		stored, ok := byKey[checkpointKey{c.ShipmentID, c.Source, *c.SourceEventID}]
		if !ok {
			return nil, errors.New("store: an upserted checkpoint was not returned")
		}
		out[i] = stored
	}
	return out, nil
}

func countWithEvent(cs []Checkpoint) int {
	n := 0
	for _, c := range cs {
		if c.SourceEventID != nil {
			n++
		}
	}
	return n
}

// ShipmentOfOrganization reports whether the shipment exists in the
// organization (ErrNotFound otherwise).
func ShipmentOfOrganization(ctx context.Context, db DBTX, orgID, shipmentID uuid.UUID) error {
	var one int
	err := db.QueryRow(ctx, `SELECT 1 FROM shipments WHERE organization_id = $1 AND id = $2`, orgID, shipmentID).Scan(&one)
	return mapErr(err)
}

// ListCheckpoints lists a shipment's checkpoints ordered by sequence
// (then checkpoint time and id), with the total.
func ListCheckpoints(ctx context.Context, db DBTX, orgID, shipmentID uuid.UUID, limit, offset int) ([]Checkpoint, int, error) {
	var total int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM tracking_checkpoints WHERE organization_id = $1 AND shipment_id = $2`,
		orgID, shipmentID).Scan(&total); err != nil {
		return nil, 0, mapErr(err)
	}
	if total == 0 || offset >= total {
		return []Checkpoint{}, total, nil
	}
	rows, _ := db.Query(ctx, `SELECT `+checkpointCols+` FROM tracking_checkpoints
 WHERE organization_id = $1 AND shipment_id = $2
 ORDER BY sequence, checkpoint_time, id
 LIMIT $3 OFFSET $4`, orgID, shipmentID, limit, offset)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[Checkpoint])
	return out, total, mapErr(err)
}

// TrackingMapItem is a shipment on the tracking map.
type TrackingMapItem struct {
	ID             uuid.UUID `db:"id"`
	Status         string    `db:"status"`
	TrackingNumber *string   `db:"tracking_number"`
	Carrier        string    `db:"carrier"`
	Service        string    `db:"service"`
	ShipToLat      *float64  `db:"ship_to_lat"`
	ShipToLng      *float64  `db:"ship_to_lng"`
	ShipFromLat    *float64  `db:"ship_from_lat"`
	ShipFromLng    *float64  `db:"ship_from_lng"`
	ShipToCity     *string   `db:"ship_to_city"`
	ShipToState    *string   `db:"ship_to_state"`
	ShipFromCity   *string   `db:"ship_from_city"`
	ShipFromState  *string   `db:"ship_from_state"`
	CreatedAt      time.Time `db:"created_at"`
	UpdatedAt      time.Time `db:"updated_at"`
}

// TrackingMapFilter narrows the map; zero values do not filter.
type TrackingMapFilter struct {
	Status   string
	BridgeID *uuid.UUID
	Limit    int
	Offset   int
}

// trackingMapWhere renders the map's filter: the organization's shipments
// with at least one complete pair of coordinates (tracking_map_idx), and
// the optional status and bridge. $1 is the organization.
func trackingMapWhere(orgID uuid.UUID, f TrackingMapFilter) (string, []any) {
	where := ` WHERE organization_id = $1
   AND ((ship_to_lat IS NOT NULL AND ship_to_lng IS NOT NULL) OR (ship_from_lat IS NOT NULL AND ship_from_lng IS NOT NULL))`
	args := []any{orgID}
	if f.Status != "" {
		args = append(args, f.Status)
		where += fmt.Sprintf(" AND status = $%d", len(args))
	}
	if f.BridgeID != nil {
		args = append(args, *f.BridgeID)
		where += fmt.Sprintf(" AND bridge_id = $%d", len(args))
	}
	return where, args
}

// TrackingMap lists the organization's shipments with coordinates, newest
// first, with the total. The state of an address is its state, else its
// provinceCode, else its province (addresses come in both shapes).
func TrackingMap(ctx context.Context, db DBTX, orgID uuid.UUID, f TrackingMapFilter) ([]TrackingMapItem, int, error) {
	where, args := trackingMapWhere(orgID, f)
	var total int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM shipments`+where, args...).Scan(&total); err != nil {
		return nil, 0, mapErr(err)
	}
	if total == 0 || f.Offset >= total {
		return []TrackingMapItem{}, total, nil
	}
	n := len(args)
	args = append(args, f.Limit, f.Offset)
	rows, _ := db.Query(ctx, `SELECT id, status, tracking_number, carrier, service,
       ship_to_lat, ship_to_lng, ship_from_lat, ship_from_lng,
       ship_to->>'city' AS ship_to_city,
       coalesce(ship_to->>'state', ship_to->>'provinceCode', ship_to->>'province') AS ship_to_state,
       ship_from->>'city' AS ship_from_city,
       coalesce(ship_from->>'state', ship_from->>'provinceCode', ship_from->>'province') AS ship_from_state,
       created_at, updated_at
  FROM shipments`+where+fmt.Sprintf(`
 ORDER BY created_at DESC, id DESC
 LIMIT $%d OFFSET $%d`, n+1, n+2), args...)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[TrackingMapItem])
	return out, total, mapErr(err)
}

// --- the tracking poller ---

// TrackedStatuses are the statuses the tracking poller revisits: the
// moving ones (shipments_tracking_due_idx) and, for
// TrackingExceptionWindow after creation, exception
// (tracking_exception_due_idx).
var TrackedStatuses = []string{TrackingLabelCreated, TrackingInTransit, TrackingOutForDelivery, TrackingException}

// TrackingExceptionWindow bounds how long after its creation a shipment in
// exception is still polled.
const TrackingExceptionWindow = 30 * 24 * time.Hour

// DatabaseNow is the database's clock (the tracking poller's cutoff, so
// that it and last_tracked_at come from one clock).
func DatabaseNow(ctx context.Context, db DBTX) (time.Time, error) {
	var now time.Time
	err := db.QueryRow(ctx, `SELECT now()`).Scan(&now)
	return now, mapErr(err)
}

// ShipmentsDueForTracking returns up to limit shipments (of every
// organization) the poller should track: a tracking number, a status it
// revisits, and not tracked since cutoff; never-tracked first, then the
// longest untracked. Each branch walks its partial index.
func ShipmentsDueForTracking(ctx context.Context, db DBTX, cutoff time.Time, limit int) ([]uuid.UUID, error) {
	rows, _ := db.Query(ctx, `
SELECT id FROM (
  (SELECT id, last_tracked_at FROM shipments
    WHERE status IN ('label_created', 'in_transit', 'out_for_delivery') AND tracking_number IS NOT NULL
      AND (last_tracked_at IS NULL OR last_tracked_at < $1)
    ORDER BY last_tracked_at NULLS FIRST LIMIT $2)
  UNION ALL
  (SELECT id, last_tracked_at FROM shipments
    WHERE status = 'exception' AND tracking_number IS NOT NULL
      AND (last_tracked_at IS NULL OR last_tracked_at < $1) AND created_at > $3
    ORDER BY last_tracked_at NULLS FIRST LIMIT $2)
) due
ORDER BY last_tracked_at NULLS FIRST, id
LIMIT $2`, cutoff, limit, cutoff.Add(-TrackingExceptionWindow))
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	return ids, mapErr(err)
}

// TrackableShipment is a shipment the poller tracks, with the carrier
// account it tracks it with (nil when the organization has no active
// account of the shipment's carrier).
type TrackableShipment struct {
	ID             uuid.UUID  `db:"id"`
	OrganizationID uuid.UUID  `db:"organization_id"`
	Carrier        string     `db:"carrier"`
	TrackingNumber *string    `db:"tracking_number"`
	Status         string     `db:"status"`
	AccountID      *uuid.UUID `db:"account_id"`
	AccountCarrier *string    `db:"account_carrier"`
	Credentials    []byte     `db:"credentials"`
	IsTest         *bool      `db:"is_test"`
}

// TrackableShipments loads shipments by id (any organization) with the
// account to track each with: the shipment's own account while it is
// active, else the organization's oldest active account of the same
// carrier.
func TrackableShipments(ctx context.Context, db DBTX, ids []uuid.UUID) ([]TrackableShipment, error) {
	rows, _ := db.Query(ctx, `
SELECT s.id, s.organization_id, s.carrier, s.tracking_number, s.status,
       a.id AS account_id, a.carrier AS account_carrier, a.credentials, a.is_test
  FROM shipments s
  LEFT JOIN LATERAL (
       SELECT ca.id, ca.carrier, ca.credentials, ca.is_test FROM carrier_accounts ca
        WHERE ca.organization_id = s.organization_id AND ca.carrier = s.carrier AND ca.status = 'active'
        ORDER BY (ca.id = s.carrier_account_id) DESC, ca.created_at, ca.id
        LIMIT 1) a ON true
 WHERE s.id = ANY($1::uuid[])
 ORDER BY s.id`, ids)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[TrackableShipment])
	return out, mapErr(err)
}

// IsTrackedStatus reports whether the poller revisits a shipment status.
func IsTrackedStatus(status string) bool { return slices.Contains(TrackedStatuses, status) }
