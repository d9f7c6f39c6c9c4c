package api

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

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
	// trackingBatchMax is the most checkpoints one batch call takes.
	trackingBatchMax = shipping.MaxCheckpointBatch
	// Page sizes: checkpoints default 50 (spec), max 100; map default 100
	// (spec), max 500.
	checkpointsDefaultLimit = 50
	checkpointsMaxLimit     = 100
	trackingMapDefaultLimit = 100
	trackingMapMaxLimit     = 500

	checkpointMaxSource      = 100
	checkpointMaxEventID     = 255
	checkpointMaxDetail      = 255
	checkpointMaxDescription = 2000
	checkpointMaxPlace       = 100
	checkpointMaxZip         = 20
	checkpointMaxExcType     = 100

	// checkpointMaxAhead bounds how far in the future a checkpointTime may
	// be (clock skew between a carrier and us); a later one is refused.
	checkpointMaxAhead = 24 * time.Hour
)

// checkpointMinTime is the earliest checkpointTime accepted.
var checkpointMinTime = time.Unix(0, 0).UTC()

// checkpointJSON is a tracking checkpoint, every field of the spec (rawData
// is stored but not echoed).
type checkpointJSON struct {
	ID             uuid.UUID `json:"id"`
	OrganizationID uuid.UUID `json:"organizationId"`
	ShipmentID     uuid.UUID `json:"shipmentId"`
	Sequence       int       `json:"sequence"`
	Status         string    `json:"status"`
	StatusDetail   *string   `json:"statusDetail"`
	Description    *string   `json:"description"`
	City           *string   `json:"city"`
	State          *string   `json:"state"`
	Country        *string   `json:"country"`
	CountryCode    *string   `json:"countryCode"`
	Zip            *string   `json:"zip"`
	Latitude       *float64  `json:"latitude"`
	Longitude      *float64  `json:"longitude"`
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
		StatusDetail: c.StatusDetail, Description: c.Description, City: c.City, State: c.State, Country: c.Country,
		CountryCode: c.CountryCode, Zip: c.Zip, Latitude: c.Latitude, Longitude: c.Longitude,
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

func (s *Server) createCheckpoint(w http.ResponseWriter, r *http.Request) error {
	var body map[string]json.RawMessage
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	var v validator
	c := parseCheckpoint(&v, "", body)
	if err := v.err(); err != nil {
		return err
	}
	c, err := s.shipping.RecordCheckpoint(r.Context(), actorOf(r), c)
	if err != nil {
		return err
	}
	writeData(w, http.StatusCreated, toCheckpointJSON(c))
	return nil
}

type checkpointBatchBody struct {
	Checkpoints json.RawMessage `json:"checkpoints"`
}

// createCheckpointBatch records up to trackingBatchMax checkpoints in one
// transaction of a constant number of statements (store.RecordCheckpoints):
// upsert on shipment + source + sourceEventId; a checkpoint without
// sourceEventId is always inserted. A shipment not in the organization
// rejects the whole batch with 400 naming it.
func (s *Server) createCheckpointBatch(w http.ResponseWriter, r *http.Request) error {
	var body checkpointBatchBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	var v validator
	var items []map[string]json.RawMessage
	switch raw := strings.TrimSpace(string(body.Checkpoints)); {
	case raw == "" || raw == "null":
		v.add("checkpoints", "is required")
	case !strings.HasPrefix(raw, "["):
		v.add("checkpoints", "must be an array")
	default:
		var elems []json.RawMessage
		if err := json.Unmarshal(body.Checkpoints, &elems); err != nil {
			return errBadRequest("invalid_json", "checkpoints is not a valid JSON array")
		}
		if len(elems) < 1 || len(elems) > trackingBatchMax {
			v.add("checkpoints", fmt.Sprintf("must have 1-%d items", trackingBatchMax))
			break
		}
		items = make([]map[string]json.RawMessage, len(elems))
		for i, e := range elems {
			if err := json.Unmarshal(e, &items[i]); err != nil || items[i] == nil {
				v.add(fmt.Sprintf("checkpoints[%d]", i), "must be an object")
			}
		}
	}
	if err := v.err(); err != nil {
		return err
	}
	cps := make([]shipping.Checkpoint, 0, len(items))
	for i, it := range items {
		cps = append(cps, parseCheckpoint(&v, fmt.Sprintf("checkpoints[%d].", i), it))
	}
	if err := v.err(); err != nil {
		return err
	}

	recorded, err := s.shipping.RecordCheckpoints(r.Context(), actorOf(r), cps)
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

// parseCheckpoint validates one checkpoint object; problems are added to v
// with prefix before the field names.
func parseCheckpoint(v *validator, prefix string, m map[string]json.RawMessage) shipping.Checkpoint {
	f := checkpointFields{v: v, prefix: prefix, m: m}
	var c shipping.Checkpoint
	if id := f.str("shipmentId", true, 100); id != nil {
		u, err := uuid.Parse(*id)
		if err != nil {
			f.add("shipmentId", "must be a UUID")
		} else {
			c.ShipmentID = u
		}
	}
	if n := f.number("sequence", true); n != nil {
		if *n != math.Trunc(*n) || *n < 0 || *n > math.MaxInt32 {
			f.add("sequence", fmt.Sprintf("must be an integer from 0 to %d", math.MaxInt32))
		} else {
			c.Sequence = int(*n)
		}
	}
	if st := f.str("status", true, 50); st != nil {
		if f.v.oneOf(prefix+"status", *st, shipping.CheckpointStatuses...) {
			c.Status = *st
		}
	}
	if t := f.str("checkpointTime", true, 64); t != nil {
		ts, ok := parseCheckpointTime(*t)
		switch {
		case !ok:
			f.add("checkpointTime", "must be an ISO 8601 timestamp")
		case ts.Before(checkpointMinTime):
			f.add("checkpointTime", "must not be before 1970-01-01T00:00:00Z")
		case ts.After(time.Now().Add(checkpointMaxAhead)):
			f.add("checkpointTime", fmt.Sprintf("must not be more than %d hours in the future", int(checkpointMaxAhead.Hours())))
		}
		c.CheckpointTime = ts
	}
	if src := f.str("source", true, checkpointMaxSource); src != nil {
		c.Source = strings.TrimSpace(*src)
	}
	c.StatusDetail = f.str("statusDetail", false, checkpointMaxDetail)
	c.Description = f.str("description", false, checkpointMaxDescription)
	c.City = f.str("city", false, checkpointMaxPlace)
	c.State = f.str("state", false, checkpointMaxPlace)
	c.Country = f.str("country", false, checkpointMaxPlace)
	if cc := f.str("countryCode", false, 64); cc != nil {
		up := strings.ToUpper(*cc)
		if len(up) != 2 || up[0] < 'A' || up[0] > 'Z' || up[1] < 'A' || up[1] > 'Z' {
			f.add("countryCode", "must be two letters (ISO 3166-1 alpha-2)")
		}
		c.CountryCode = &up
	}
	c.Zip = f.str("zip", false, checkpointMaxZip)
	c.Latitude = f.number("latitude", false)
	if c.Latitude != nil && (*c.Latitude < -90 || *c.Latitude > 90) {
		f.add("latitude", "must be between -90 and 90")
	}
	c.Longitude = f.number("longitude", false)
	if c.Longitude != nil && (*c.Longitude < -180 || *c.Longitude > 180) {
		f.add("longitude", "must be between -180 and 180")
	}
	switch {
	case c.Latitude != nil && c.Longitude == nil:
		f.add("longitude", "is required with latitude")
	case c.Longitude != nil && c.Latitude == nil:
		f.add("latitude", "is required with longitude")
	}
	c.SourceEventID = f.str("sourceEventId", false, checkpointMaxEventID)
	c.RawData = f.object("rawData")
	if b := f.boolean("isException"); b != nil {
		c.IsException = *b
	}
	c.ExceptionType = f.str("exceptionType", false, checkpointMaxExcType)
	return c
}

// parseCheckpointTime reads ISO 8601 (RFC 3339; without an offset, UTC).
func parseCheckpointTime(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// checkpointFields reads typed fields of a decoded JSON object.
type checkpointFields struct {
	v      *validator
	prefix string
	m      map[string]json.RawMessage
}

func (f checkpointFields) add(key, msg string) { f.v.add(f.prefix+key, msg) }

// raw returns the field, nil when missing or null.
func (f checkpointFields) raw(key string, required bool) json.RawMessage {
	r, ok := f.m[key]
	if !ok || strings.TrimSpace(string(r)) == "null" {
		if required {
			f.add(key, "is required")
		}
		return nil
	}
	return r
}

// str reads a string; "" is null for an optional field.
func (f checkpointFields) str(key string, required bool, max int) *string {
	r := f.raw(key, required)
	if r == nil {
		return nil
	}
	var s string
	if err := json.Unmarshal(r, &s); err != nil {
		f.add(key, "must be a string")
		return nil
	}
	if strings.TrimSpace(s) == "" {
		if required {
			f.add(key, "is required")
		}
		return nil
	}
	if utf8.RuneCountInString(s) > max {
		f.add(key, fmt.Sprintf("must be at most %d characters", max))
	}
	return &s
}

func (f checkpointFields) number(key string, required bool) *float64 {
	r := f.raw(key, required)
	if r == nil {
		return nil
	}
	var n float64
	if err := json.Unmarshal(r, &n); err != nil {
		f.add(key, "must be a number")
		return nil
	}
	return &n
}

func (f checkpointFields) boolean(key string) *bool {
	r := f.raw(key, false)
	if r == nil {
		return nil
	}
	var b bool
	if err := json.Unmarshal(r, &b); err != nil {
		f.add(key, "must be a boolean")
		return nil
	}
	return &b
}

func (f checkpointFields) object(key string) json.RawMessage {
	r := f.raw(key, false)
	if r == nil {
		return nil
	}
	if !strings.HasPrefix(strings.TrimSpace(string(r)), "{") {
		f.add(key, "must be an object")
		return nil
	}
	return r
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
	list, total, err := s.shipping.ListCheckpoints(r.Context(), actorOf(r), *shipmentID, page.Limit, page.Offset())
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
	list, total, err := s.shipping.TrackingMap(r.Context(), actorOf(r), shipping.TrackingMapInput{
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
