package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/shipping"
)

// mountPickups registers the pickup endpoints (carrier_a only): HTTP over
// shipping.Service (BookPickup, CancelPickup, ListPickups, GetPickup). The
// carrier is called in real time through workflows (CONTRACT 8b): POST
// books with
// the PickupBooking workflow (pickup/<pickupId>, update-with-start; the
// pickup is inserted as pending first and shown only once confirmed),
// DELETE cancels with PickupCancel (pickup-cancel/<pickupId>); the request
// waits for the outcome. A request the carrier refuses as invalid is 400
// validation_error, its other failures 502 carrier_error; a booking whose
// outcome is unknown is 502 (the pickup ends failed, hidden, with the
// reason); a booking that cannot be recorded is cancelled with the carrier.
// A confirmed pickup whose date (UTC) has passed reads as completed at
// once, and the schedule/pickup-completion Temporal Schedule
// (worker.EnsurePickupCompletionSchedule) persists it hourly.
func (s *Server) mountPickups(r chi.Router) {
	read := r.With(s.scope("pickups:read"))
	write := r.With(s.scope("pickups:write"))
	read.Get("/pickups", s.h(s.listPickups))
	write.Post("/pickups", s.h(s.createPickup))
	read.Get("/pickups/{id}", s.h(s.getPickup))
	write.Delete("/pickups/{id}", s.h(s.cancelPickup))
}

// pickupJSON is the pickup of lists and of the create response.
type pickupJSON struct {
	ID                 uuid.UUID       `json:"id"`
	OrganizationID     uuid.UUID       `json:"organizationId"`
	CarrierAccountID   *uuid.UUID      `json:"carrierAccountId"`
	ExternalID         *string         `json:"externalId"`
	Status             string          `json:"status"`
	PickupAddress      json.RawMessage `json:"pickupAddress"`
	PickupDate         string          `json:"pickupDate"`
	ReadyTime          string          `json:"readyTime"`
	CloseTime          string          `json:"closeTime"`
	PackageCount       int             `json:"packageCount"`
	TotalWeight        json.RawMessage `json:"totalWeight"`
	ConfirmationNumber *string         `json:"confirmationNumber"`
	Metadata           json.RawMessage `json:"metadata"`
	CreatedAt          time.Time       `json:"createdAt"`
	UpdatedAt          time.Time       `json:"updatedAt"`
}

// pickupDetailJSON is GET /pickups/{id}: the pickup and the carrier's
// response.
type pickupDetailJSON struct {
	pickupJSON
	CarrierResponse json.RawMessage `json:"carrierResponse"`
}

func toPickupJSON(p shipping.Pickup, today time.Time) pickupJSON {
	return pickupJSON{
		ID: p.ID, OrganizationID: p.OrganizationID, CarrierAccountID: p.CarrierAccountID, ExternalID: p.ExternalID,
		Status: p.StatusOn(today), PickupAddress: shipmentRaw(p.PickupAddress, "null"), PickupDate: p.PickupDate.Format("2006-01-02"),
		ReadyTime: p.ReadyTime, CloseTime: p.CloseTime, PackageCount: p.PackageCount,
		TotalWeight: shipmentRaw(p.TotalWeight, "null"), ConfirmationNumber: p.ConfirmationNumber,
		Metadata: shipmentRaw(p.Metadata, "{}"), CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt,
	}
}

// pickupDate parses a YYYY-MM-DD date.
func pickupDate(s string) (time.Time, bool) {
	t, err := time.Parse("2006-01-02", strings.TrimSpace(s))
	return t, err == nil
}

// --- list and get ---

func (s *Server) listPickups(w http.ResponseWriter, r *http.Request) error {
	var details fieldErrors
	page, err := parsePage(r, 20, 100)
	details.collect(err)
	status, err := queryEnum(r, "status", shipping.PickupStatuses...)
	details.collect(err)
	accountID, err := queryUUID(r, "carrierAccountId")
	details.collect(err)
	in := shipping.ListPickupsInput{Status: status, CarrierAccountID: accountID, Limit: page.Limit, Offset: page.Offset()}
	for _, d := range []struct {
		name string
		dst  **time.Time
	}{{"fromDate", &in.FromDate}, {"toDate", &in.ToDate}} {
		if v := r.URL.Query().Get(d.name); v != "" {
			t, ok := pickupDate(v)
			if !ok {
				details = append(details, FieldError{Field: d.name, Message: "must be a date (YYYY-MM-DD)"})
				continue
			}
			*d.dst = &t
		}
	}
	if len(details) > 0 {
		return errValidation(details...)
	}
	list, total, err := s.Shipping.ListPickups(r.Context(), actorOf(r), in)
	if err != nil {
		return err
	}
	today := time.Now()
	out := make([]pickupJSON, 0, len(list))
	for _, p := range list {
		out = append(out, toPickupJSON(p, today))
	}
	writeList(w, out, page, total)
	return nil
}

func (s *Server) getPickup(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "pickup")
	if err != nil {
		return err
	}
	p, err := s.Shipping.GetPickup(r.Context(), actorOf(r), id)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, pickupDetailJSON{pickupJSON: toPickupJSON(p, time.Now()), CarrierResponse: shipmentRaw(p.CarrierResponse, "null")})
	return nil
}

// --- create ---

var createPickupFields = []string{"carrierAccountId", "pickupAddress", "pickupDate", "readyTime", "closeTime", "packageCount", "totalWeight", "metadata"}

// decodeCreatePickup reads POST /pickups (pickupAddress in any address
// shape, shipping.AddressOf): the document names what is of the wrong
// type (v), the domain the rest.
func decodeCreatePickup(v *validator, body jsonBody) (shipping.PickupInput, error) {
	var in shipping.PickupInput
	in.CarrierAccountID = uuidOf(body["carrierAccountId"])
	if a := objectOf(body["pickupAddress"]); a != nil {
		addr := shipping.AddressOf(a)
		in.Address = &addr
	}
	if t, ok := pickupDate(textOf(body["pickupDate"])); ok {
		in.Date = &t
	}
	in.ReadyTime, in.CloseTime = textOf(body["readyTime"]), textOf(body["closeTime"])
	if raw := body["packageCount"]; raw != nil {
		n, isNum := orderNumber(raw)
		count := int(n)
		if !isNum || n != float64(count) {
			count = -1 // the domain names it
		}
		in.PackageCount = &count
	}
	if raw := body["totalWeight"]; raw != nil {
		in.TotalWeight = decodePickupWeight(raw)
	}
	if m := objectOf(body["metadata"]); m != nil {
		in.Metadata = orderJSONOf(m)
	}
	if v.ok() {
		return in, nil
	}
	return in, validation(v, in.Validate(), createPickupFields...)
}

// decodePickupWeight reads totalWeight: a number of pounds or {value,
// unit}.
func decodePickupWeight(raw any) *shipping.PickupWeight {
	if n, ok := orderNumber(raw); ok {
		return &shipping.PickupWeight{Value: n, Unit: carriers.UnitLB}
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return &shipping.PickupWeight{Value: -1} // the domain names it
	}
	return &shipping.PickupWeight{Value: numberOf(m["value"]), Unit: textOf(m["unit"]), Object: true}
}

// pickupCreatedJSON is the create response (not wrapped in data).
type pickupCreatedJSON struct {
	Pickup             pickupJSON `json:"pickup"`
	ConfirmationNumber string     `json:"confirmationNumber"`
	Messages           []string   `json:"messages"`
}

func (s *Server) createPickup(w http.ResponseWriter, r *http.Request) error {
	var body jsonBody
	v, err := decodeCheckedJSON(r, &body)
	if err != nil {
		return err
	}
	in, err := decodeCreatePickup(v, body)
	if err != nil {
		return err
	}
	actor := actorOf(r)
	in.ID = purchaseID(r, actor.OrganizationID, "pickup")
	booked, err := s.Shipping.BookPickup(r.Context(), actor, in)
	if err != nil {
		return err
	}
	msgs := booked.Messages
	if msgs == nil {
		msgs = []string{}
	}
	p := booked.Pickup
	writeJSON(w, http.StatusCreated, pickupCreatedJSON{Pickup: toPickupJSON(p, time.Now()), ConfirmationNumber: deref(p.ConfirmationNumber), Messages: msgs})
	return nil
}

// --- cancel ---

type cancelPickupRequest struct {
	Reason *string `json:"reason"`
}

// pickupCancelledJSON is the cancel response.
type pickupCancelledJSON struct {
	Success  bool     `json:"success"`
	Messages []string `json:"messages"`
}

// cancelPickup cancels a confirmed pickup with the carrier through the
// PickupCancel workflow (shipping.CancelPickup). Completed or cancelled
// pickups are 400 invalid_state; a carrier refusal is 502 and the pickup
// stays confirmed.
func (s *Server) cancelPickup(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "pickup")
	if err != nil {
		return err
	}
	var req cancelPickupRequest
	if err := decodeOptionalJSON(r, &req); err != nil {
		return err
	}
	res, err := s.Shipping.CancelPickup(r.Context(), actorOf(r), id, strings.TrimSpace(deref(req.Reason)))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, pickupCancelledJSON{Success: true, Messages: res.Messages})
	return nil
}
