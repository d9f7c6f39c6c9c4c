package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/shipping"
)

// mountTracking registers the shipment tracking endpoints (spec Part 1,
// Shipment tracking): HTTP over the shipping domain (RecordCheckpoint(s),
// ListCheckpoints, TrackingMap). Their scopes follow shipments (CONTRACT
// 3): shipments:read and shipments:write.
func (s *Server) mountTracking(r chi.Router) {
	read := r.With(s.scope("shipments:read"))
	write := r.With(s.scope("shipments:write"))
	read.Get("/shipment-tracking/map", s.h(s.trackingMap))
	read.Get("/shipment-tracking/checkpoints", s.h(s.listCheckpoints))
	write.Post("/shipment-tracking/checkpoints", s.h(s.createCheckpoint))
	write.Post("/shipment-tracking/checkpoints/batch", s.h(s.createCheckpointBatch))
}

// Bounds the specification leaves open.
const (
	// Page sizes: checkpoints default 50 (spec), max 100; map default 100
	// (spec), max 500.
	checkpointsDefaultLimit = 50
	checkpointsMaxLimit     = 100
	trackingMapDefaultLimit = 100
	trackingMapMaxLimit     = 500

	// The checkpoint fields' lengths and bounds are the document's
	// (components/schemas/CheckpointInput); a batch holds at most
	// shipping.MaxCheckpointBatch (CheckpointBatch, kept equal by
	// TestCheckpointBatchLimitInDocument).

	// checkpointMaxAhead bounds how far in the future a checkpointTime may
	// be (clock skew between a carrier and us); a later one is refused.
	checkpointMaxAhead = 24 * time.Hour
)

// checkpointMinTime is the earliest checkpointTime accepted.
var checkpointMinTime = time.Unix(0, 0).UTC()

// checkpointDetail is what a checkpoint says of its place and status, as
// sent and as answered.
type checkpointDetail struct {
	StatusDetail *string  `json:"statusDetail"`
	Description  *string  `json:"description"`
	City         *string  `json:"city"`
	State        *string  `json:"state"`
	Country      *string  `json:"country"`
	CountryCode  *string  `json:"countryCode"`
	Zip          *string  `json:"zip"`
	Latitude     *float64 `json:"latitude"`
	Longitude    *float64 `json:"longitude"`
}

// checkpointJSON is a tracking checkpoint, every field of the spec (rawData
// is stored but not echoed).
type checkpointJSON struct {
	ID             uuid.UUID `json:"id"`
	OrganizationID uuid.UUID `json:"organizationId"`
	ShipmentID     uuid.UUID `json:"shipmentId"`
	Sequence       int       `json:"sequence"`
	Status         string    `json:"status"`
	checkpointDetail
	CheckpointTime time.Time `json:"checkpointTime"`
	Source         string    `json:"source"`
	SourceEventID  *string   `json:"sourceEventId"`
	IsException    bool      `json:"isException"`
	ExceptionType  *string   `json:"exceptionType"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
}

func toCheckpointJSON(c shipping.Checkpoint) checkpointJSON {
	return checkpointJSON{
		ID: c.ID, OrganizationID: c.OrganizationID, ShipmentID: c.ShipmentID, Sequence: c.Sequence, Status: c.Status,
		checkpointDetail: checkpointDetail{StatusDetail: c.StatusDetail, Description: c.Description, City: c.City, State: c.State,
			Country: c.Country, CountryCode: c.CountryCode, Zip: c.Zip, Latitude: c.Latitude, Longitude: c.Longitude},
		CheckpointTime: c.CheckpointTime, Source: c.Source, SourceEventID: c.SourceEventID,
		IsException: c.IsException, ExceptionType: c.ExceptionType, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
	}
}

// checkpointSummaryJSON is an item of the batch answer.
type checkpointSummaryJSON struct {
	ID             uuid.UUID `json:"id"`
	ShipmentID     uuid.UUID `json:"shipmentId"`
	Sequence       int       `json:"sequence"`
	Status         string    `json:"status"`
	CheckpointTime time.Time `json:"checkpointTime"`
}

// trackingPlaceJSON is the {city, state} of a map item.
type trackingPlaceJSON struct {
	City  *string `json:"city"`
	State *string `json:"state"`
}

// trackingMapItemJSON is a map item (snake_case, as the spec lists it).
type trackingMapItemJSON struct {
	ID             uuid.UUID         `json:"id"`
	Status         string            `json:"status"`
	TrackingNumber *string           `json:"tracking_number"`
	Carrier        string            `json:"carrier"`
	Service        string            `json:"service"`
	ShipToLat      *float64          `json:"ship_to_lat"`
	ShipToLng      *float64          `json:"ship_to_lng"`
	ShipFromLat    *float64          `json:"ship_from_lat"`
	ShipFromLng    *float64          `json:"ship_from_lng"`
	ShipTo         trackingPlaceJSON `json:"ship_to"`
	ShipFrom       trackingPlaceJSON `json:"ship_from"`
	CreatedAt      time.Time         `json:"created_at"`
	UpdatedAt      time.Time         `json:"updated_at"`
}

// --- create ---

// checkpointBody is one checkpoint as api/openapi.yaml's CheckpointInput
// lets it through (types, lengths, enums, bounds checked there); blank
// optional strings are absent.
type checkpointBody struct {
	ShipmentID     uuid.UUID `json:"shipmentId"`
	Sequence       float64   `json:"sequence"`
	Status         string    `json:"status"`
	CheckpointTime string    `json:"checkpointTime"`
	Source         string    `json:"source"`
	checkpointDetail
	SourceEventID *string         `json:"sourceEventId"`
	RawData       json.RawMessage `json:"rawData"`
	IsException   *bool           `json:"isException"`
	ExceptionType *string         `json:"exceptionType"`
}

func (s *Server) createCheckpoint(w http.ResponseWriter, r *http.Request) error {
	var body checkpointBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	var v validator
	c := body.checkpoint(&v, "")
	if err := v.err(); err != nil {
		return err
	}
	c, err := s.Shipping.RecordCheckpoint(r.Context(), actorOf(r), c)
	if err != nil {
		return err
	}
	writeData(w, http.StatusCreated, toCheckpointJSON(c))
	return nil
}

// createCheckpointBatch records up to shipping.MaxCheckpointBatch checkpoints in one
// transaction of a constant number of statements (store.RecordCheckpoints):
// upsert on shipment + source + sourceEventId; a checkpoint without
// sourceEventId is always inserted. A shipment not in the organization
// rejects the whole batch with 400 naming it.
func (s *Server) createCheckpointBatch(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Checkpoints []checkpointBody `json:"checkpoints"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	var v validator
	cps := make([]shipping.Checkpoint, 0, len(body.Checkpoints))
	for i, it := range body.Checkpoints {
		cps = append(cps, it.checkpoint(&v, fmt.Sprintf("checkpoints[%d].", i)))
	}
	if err := v.err(); err != nil {
		return err
	}
	recorded, err := s.Shipping.RecordCheckpoints(r.Context(), actorOf(r), cps)
	if err != nil {
		return err
	}
	out := make([]checkpointSummaryJSON, 0, len(recorded))
	for _, c := range recorded {
		out = append(out, checkpointSummaryJSON{ID: c.ID, ShipmentID: c.ShipmentID, Sequence: c.Sequence, Status: c.Status, CheckpointTime: c.CheckpointTime})
	}
	writeJSON(w, http.StatusCreated, map[string]any{"data": out, "count": len(out)})
	return nil
}

// checkpoint is the body's checkpoint; what the document cannot say (the
// time against now) is added to v with prefix before the field names.
func (b checkpointBody) checkpoint(v *validator, prefix string) shipping.Checkpoint {
	ts, _ := parseOrderTime(strings.TrimSpace(b.CheckpointTime))
	switch {
	case ts.Before(checkpointMinTime):
		v.add(prefix+"checkpointTime", "must not be before 1970-01-01T00:00:00Z")
	case ts.After(time.Now().Add(checkpointMaxAhead)):
		v.add(prefix+"checkpointTime", fmt.Sprintf("must not be more than %d hours in the future", int(checkpointMaxAhead.Hours())))
	}
	c := shipping.Checkpoint{
		ShipmentID: b.ShipmentID, Sequence: int(b.Sequence), Status: b.Status, CheckpointTime: ts, Source: strings.TrimSpace(b.Source),
		StatusDetail: blankNil(b.StatusDetail), Description: blankNil(b.Description), City: blankNil(b.City),
		State: blankNil(b.State), Country: blankNil(b.Country), Zip: blankNil(b.Zip),
		Latitude: b.Latitude, Longitude: b.Longitude, SourceEventID: blankNil(b.SourceEventID), ExceptionType: blankNil(b.ExceptionType),
	}
	if cc := blankNil(b.CountryCode); cc != nil {
		up := strings.ToUpper(*cc)
		c.CountryCode = &up
	}
	if raw := bytes.TrimSpace(b.RawData); len(raw) > 0 && string(raw) != "null" {
		c.RawData = b.RawData
	}
	if b.IsException != nil {
		c.IsException = *b.IsException
	}
	return c
}

// --- read ---

// listCheckpoints lists a shipment's checkpoints by sequence ascending.
func (s *Server) listCheckpoints(w http.ResponseWriter, r *http.Request) error {
	var details fieldErrors
	page, err := parsePage(r, checkpointsDefaultLimit, checkpointsMaxLimit)
	details.collect(err)
	shipmentID, err := queryUUID(r, "shipmentId")
	details.collect(err)
	if shipmentID == nil && err == nil {
		details = append(details, FieldError{Field: "shipmentId", Message: "is required"})
	}
	if len(details) > 0 {
		return errValidation(details...)
	}
	list, total, err := s.Shipping.ListCheckpoints(r.Context(), actorOf(r), *shipmentID, page.Limit, page.Offset())
	if err != nil {
		return err
	}
	out := make([]checkpointJSON, 0, len(list))
	for _, c := range list {
		out = append(out, toCheckpointJSON(c))
	}
	writeList(w, out, page, total)
	return nil
}

// trackingMap lists the organization's shipments that have coordinates,
// newest first. The answer is {data, pagination} (page is an extension).
func (s *Server) trackingMap(w http.ResponseWriter, r *http.Request) error {
	var details fieldErrors
	page, err := parsePage(r, trackingMapDefaultLimit, trackingMapMaxLimit)
	details.collect(err)
	status, err := queryEnum(r, "status", shipping.CheckpointStatuses...)
	details.collect(err)
	bridgeID, err := queryUUID(r, "bridgeId")
	details.collect(err)
	if len(details) > 0 {
		return errValidation(details...)
	}
	list, total, err := s.Shipping.TrackingMap(r.Context(), actorOf(r), shipping.TrackingMapInput{
		Status: status, BridgeID: bridgeID, Limit: page.Limit, Offset: page.Offset(),
	})
	if err != nil {
		return err
	}
	out := make([]trackingMapItemJSON, 0, len(list))
	for _, m := range list {
		out = append(out, trackingMapItemJSON{
			ID: m.ID, Status: m.Status, TrackingNumber: m.TrackingNumber, Carrier: m.Carrier, Service: m.Service,
			ShipToLat: m.ShipToLat, ShipToLng: m.ShipToLng, ShipFromLat: m.ShipFromLat, ShipFromLng: m.ShipFromLng,
			ShipTo:    trackingPlaceJSON{City: m.ShipToCity, State: m.ShipToState},
			ShipFrom:  trackingPlaceJSON{City: m.ShipFromCity, State: m.ShipFromState},
			CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt,
		})
	}
	writeList(w, out, page, total)
	return nil
}

// blankNil is nil for a missing or blank string, else s as sent.
func blankNil(s *string) *string {
	if s == nil || strings.TrimSpace(*s) == "" {
		return nil
	}
	return s
}
