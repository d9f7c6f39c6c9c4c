package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/store"
)

// mountPickups registers the pickup endpoints (carrier_a only). The carrier
// is called in real time: a request it refuses as invalid is 400
// validation_error, its other failures 502 carrier_error; a booking that
// cannot be recorded is cancelled with the carrier. A confirmed pickup whose date (UTC) has passed
// reads as completed at once, and the schedule/pickup-completion Temporal
// Schedule (worker.EnsurePickupCompletionSchedule) persists it hourly.
func (s *Server) mountPickups(r chi.Router) {
	read := r.With(s.scope("pickups:read"))
	write := r.With(s.scope("pickups:write"))
	read.Get("/pickups", s.h(s.listPickups))
	write.Post("/pickups", s.h(s.createPickup))
	read.Get("/pickups/{id}", s.h(s.getPickup))
	write.Delete("/pickups/{id}", s.h(s.cancelPickup))
}

// Bounds the specification leaves open.
const (
	pickupMaxPackages     = 999
	pickupMaxWeight       = 100_000
	pickupMaxAddressField = 255
	pickupMaxReason       = 500
	pickupCarrierTimeout  = 30 * time.Second
)

var pickupTimeRe = regexp.MustCompile(`^([01]\d|2[0-3]):[0-5]\d$`)

// pickupAddressJSON is a pickup address exactly as the specification
// lists it.
type pickupAddressJSON struct {
	Address1     string  `json:"address1"`
	City         string  `json:"city"`
	ProvinceCode *string `json:"provinceCode"`
	Zip          string  `json:"zip"`
	CountryCode  string  `json:"countryCode"`
}

// pickupWeightJSON is totalWeight: {value, unit} (a bare number in the
// request means pounds).
type pickupWeightJSON struct {
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
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

func toPickupJSON(p store.Pickup, today time.Time) pickupJSON {
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
	var details []FieldError
	collect := func(err error) {
		var apiErr *Error
		if errors.As(err, &apiErr) {
			details = append(details, apiErr.Details...)
		}
	}
	page, err := parsePage(r, 20, 100)
	collect(err)
	status, err := queryEnum(r, "status", store.PickupStatuses...)
	collect(err)
	accountID, err := queryUUID(r, "carrierAccountId")
	collect(err)
	f := store.PickupFilter{Status: status, CarrierAccountID: accountID, Today: time.Now(), Limit: page.Limit, Offset: page.Offset()}
	for _, d := range []struct {
		name string
		dst  **time.Time
	}{{"fromDate", &f.FromDate}, {"toDate", &f.ToDate}} {
		if v := r.URL.Query().Get(d.name); v != "" {
			t, ok := pickupDate(v)
			if !ok {
				details = append(details, FieldError{Field: d.name, Message: "must be a date (YYYY-MM-DD)"})
				continue
			}
			*d.dst = &t
		}
	}
	if f.FromDate != nil && f.ToDate != nil && f.ToDate.Before(*f.FromDate) {
		details = append(details, FieldError{Field: "toDate", Message: "must not be before fromDate"})
	}
	if len(details) > 0 {
		return errValidation(details...)
	}
	list, total, err := store.ListPickups(r.Context(), s.store.Pool, mustPrincipal(r).OrganizationID, f)
	if err != nil {
		return err
	}
	out := make([]pickupJSON, 0, len(list))
	for _, p := range list {
		out = append(out, toPickupJSON(p, f.Today))
	}
	writeList(w, out, page, total)
	return nil
}

func (s *Server) getPickup(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "pickup")
	if err != nil {
		return err
	}
	p, err := store.PickupByID(r.Context(), s.store.Pool, mustPrincipal(r).OrganizationID, id)
	if err != nil {
		return notFoundAs(err, "pickup")
	}
	writeData(w, http.StatusOK, pickupDetailJSON{pickupJSON: toPickupJSON(p, time.Now()), CarrierResponse: shipmentRaw(p.CarrierResponse, "null")})
	return nil
}

// --- create ---

// pickupCreate is a validated create body.
type pickupCreate struct {
	accountID   uuid.UUID
	address     pickupAddressJSON
	contact     carriers.Address // name, company, phone, address2: sent to the carrier only
	date        time.Time
	ready       string
	close       string
	packages    int
	totalWeight *pickupWeightJSON
	metadata    json.RawMessage
}

func parseCreatePickup(body jsonBody) (pickupCreate, error) {
	var v validator
	f := bodyFields{v: &v, m: body}
	c := pickupCreate{packages: 1}
	if id := f.str("carrierAccountId", true, 100); id != nil {
		u, err := uuid.Parse(*id)
		if err != nil {
			v.add("carrierAccountId", "must be a UUID")
		}
		c.accountID = u
	}
	if a, ok := f.object("pickupAddress", true); ok {
		c.address.Address1 = deref(a.str("address1", true, pickupMaxAddressField))
		c.address.City = deref(a.str("city", true, pickupMaxAddressField))
		c.address.Zip = deref(a.str("zip", true, 20))
		if cc := a.str("countryCode", true, 2); cc != nil {
			c.address.CountryCode = strings.ToUpper(*cc)
			if shipmentCountryCode(*cc) != c.address.CountryCode {
				v.add("pickupAddress.countryCode", "must be a two-letter country code")
			}
		}
		if pc := a.str("provinceCode", false, 10); pc != nil {
			up := strings.ToUpper(*pc)
			c.address.ProvinceCode = &up
		} else if c.address.CountryCode == "US" || c.address.CountryCode == "CA" {
			v.add("pickupAddress.provinceCode", "is required for "+c.address.CountryCode+" addresses")
		}
		c.contact = carriers.Address{
			Name: deref(a.str("name", false, pickupMaxAddressField)), Company: deref(a.str("company", false, pickupMaxAddressField)),
			Phone: deref(a.str("phone", false, 50)), Address2: deref(a.str("address2", false, pickupMaxAddressField)),
		}
	}
	if d := f.str("pickupDate", true, 10); d != nil {
		t, ok := pickupDate(*d)
		switch {
		case !ok:
			v.add("pickupDate", "must be a date (YYYY-MM-DD)")
		case t.Before(shipmentToday()):
			// Carriers book no pickup for a past day (UTC).
			v.add("pickupDate", "must not be in the past")
		}
		c.date = t
	}
	for _, t := range []struct {
		key string
		dst *string
	}{{"readyTime", &c.ready}, {"closeTime", &c.close}} {
		if s := f.str(t.key, true, 5); s != nil {
			if !pickupTimeRe.MatchString(*s) {
				v.add(t.key, "must be a time HH:MM (24-hour)")
				continue
			}
			*t.dst = *s
		}
	}
	if c.ready != "" && c.close != "" && c.ready >= c.close {
		v.add("closeTime", "must be after readyTime")
	}
	if raw, ok := f.get("packageCount", false); ok {
		n, isNum := orderNumber(raw)
		if !isNum || n < 1 || n > pickupMaxPackages || n != float64(int(n)) {
			v.add("packageCount", fmt.Sprintf("must be an integer from 1 to %d", pickupMaxPackages))
		} else {
			c.packages = int(n)
		}
	}
	if raw, ok := f.get("totalWeight", false); ok {
		c.totalWeight = pickupWeight(f, raw)
	}
	c.metadata = f.rawObject("metadata", false)
	return c, v.err()
}

// pickupWeight reads totalWeight: a number of pounds or {value, unit}.
func pickupWeight(f bodyFields, raw any) *pickupWeightJSON {
	const msg = "must be a positive number of pounds or {value, unit: lb|kg}"
	if n, ok := orderNumber(raw); ok {
		if n <= 0 || n > pickupMaxWeight {
			f.v.add("totalWeight", msg)
			return nil
		}
		return &pickupWeightJSON{Value: n, Unit: carriers.UnitLB}
	}
	m, ok := raw.(map[string]any)
	if !ok {
		f.v.add("totalWeight", msg)
		return nil
	}
	wf := bodyFields{v: f.v, path: "totalWeight", m: m}
	n := shipmentPositive(wf, "value", pickupMaxWeight)
	unit := strings.ToLower(deref(wf.str("unit", false, 5)))
	if unit == "" {
		unit = carriers.UnitLB
	}
	if unit != carriers.UnitLB && unit != carriers.UnitKG {
		f.v.add("totalWeight.unit", "must be lb or kg")
		return nil
	}
	if n == 0 {
		return nil
	}
	return &pickupWeightJSON{Value: n, Unit: unit}
}

// pickupCreatedJSON is the create response (not wrapped in data).
type pickupCreatedJSON struct {
	Pickup             pickupJSON `json:"pickup"`
	ConfirmationNumber string     `json:"confirmationNumber"`
	Messages           []string   `json:"messages"`
}

// pickupCarrierResponse is what a pickup keeps of the carrier's answer
// (carrierResponse): the location is needed to cancel an express pickup.
type pickupCarrierResponse struct {
	ConfirmationNumber string          `json:"confirmationNumber"`
	Location           string          `json:"location"`
	Messages           []string        `json:"messages"`
	Raw                json.RawMessage `json:"raw"`
}

func (s *Server) createPickup(w http.ResponseWriter, r *http.Request) error {
	var body jsonBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	in, err := parseCreatePickup(body)
	if err != nil {
		return err
	}
	ctx := r.Context()
	orgID := mustPrincipal(r).OrganizationID
	acct, err := s.shipmentAccount(ctx, orgID, in.accountID, "carrierAccountId")
	if err != nil {
		return err
	}
	if !acct.SupportsPickup || acct.Carrier != carriers.CarrierA {
		return errBadRequest("pickups_not_supported", fmt.Sprintf("carrier account %q (%s) does not support pickups; only carrier_a pickups are supported", acct.Name, acct.Carrier))
	}
	carrier, adapterAcct, err := s.shipmentAdapter(acct)
	if err != nil {
		return err
	}
	req := carriers.PickupRequest{
		Address: carriers.Address{
			Name: in.contact.Name, Company: in.contact.Company, Phone: in.contact.Phone,
			Address1: in.address.Address1, Address2: in.contact.Address2, City: in.address.City,
			ProvinceCode: deref(in.address.ProvinceCode), Zip: in.address.Zip, CountryCode: in.address.CountryCode,
		},
		PickupDate: in.date.Format("2006-01-02"), ReadyTime: in.ready, CloseTime: in.close, PackageCount: in.packages,
	}
	if in.totalWeight != nil {
		req.TotalWeight = &carriers.Weight{Value: in.totalWeight.Value, Unit: in.totalWeight.Unit}
	}
	// The carrier booking must be recorded even if the client hangs up.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pickupCarrierTimeout+10*time.Second)
	defer cancel()
	cctx, ccancel := context.WithTimeout(wctx, pickupCarrierTimeout)
	res, err := carrier.CreatePickup(cctx, adapterAcct, req)
	ccancel()
	if err != nil {
		if verr, ok := carrierValidationError(err, pickupRefusalField); ok {
			return verr
		}
		return s.shipmentCarrierError(r, acct.Carrier+" refused the pickup", err)
	}
	msgs := res.Messages
	if msgs == nil {
		msgs = []string{}
	}
	conf := res.ConfirmationNumber
	p := store.Pickup{
		ID: uuid.New(), OrganizationID: orgID, CarrierAccountID: &acct.ID, Carrier: acct.Carrier,
		ExternalID: &conf, Status: store.PickupConfirmed, PickupAddress: orderJSONOf(in.address),
		PickupDate: in.date, ReadyTime: in.ready, CloseTime: in.close, PackageCount: in.packages,
		ConfirmationNumber: &conf, Metadata: in.metadata,
		CarrierResponse: orderJSONOf(pickupCarrierResponse{ConfirmationNumber: conf, Location: res.Location, Messages: msgs, Raw: shipmentRaw(res.Raw, "null")}),
	}
	if in.totalWeight != nil {
		p.TotalWeight = orderJSONOf(in.totalWeight)
	}
	created, err := store.InsertPickup(wctx, s.store.Pool, p)
	if err != nil {
		// Booked with the carrier but not recorded: nobody could see or
		// cancel it here, so it is cancelled with the carrier (on a context
		// of its own: the client may be gone, the work context spent).
		s.log.ErrorContext(ctx, "record booked pickup", append(logAttrs(r), "confirmation_number", conf, "error", err)...)
		vctx, vcancel := context.WithTimeout(context.WithoutCancel(ctx), pickupCarrierTimeout)
		defer vcancel()
		if _, cErr := carrier.CancelPickup(vctx, adapterAcct, carriers.CancelPickupRequest{
			ConfirmationNumber: conf, PickupDate: req.PickupDate, Location: res.Location,
			Reason: "the booking could not be recorded",
		}); cErr != nil && !pickupAlreadyCancelled(cErr) {
			s.log.ErrorContext(ctx, "cancel unrecorded pickup", append(logAttrs(r), "confirmation_number", conf, "error", cErr.Error())...)
		} else {
			s.log.WarnContext(ctx, "unrecorded pickup cancelled with the carrier", append(logAttrs(r), "confirmation_number", conf)...)
		}
		return err
	}
	writeJSON(w, http.StatusCreated, pickupCreatedJSON{Pickup: toPickupJSON(created, time.Now()), ConfirmationNumber: conf, Messages: msgs})
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

// cancelPickup cancels a confirmed pickup with the carrier, then records
// it. The pickup row is locked across the carrier call so two
// cancellations never both reach the carrier. Completed or cancelled
// pickups are 400 invalid_state; a carrier refusal is 502 and the pickup
// stays confirmed. A pickup the carrier reports as already cancelled is
// recorded as cancelled.
func (s *Server) cancelPickup(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "pickup")
	if err != nil {
		return err
	}
	var req cancelPickupRequest
	if err := decodeOptionalJSON(r, &req); err != nil {
		return err
	}
	var reason *string
	if req.Reason != nil && strings.TrimSpace(*req.Reason) != "" {
		rs := strings.TrimSpace(*req.Reason)
		var v validator
		v.maxLen("reason", rs, pickupMaxReason)
		if err := v.err(); err != nil {
			return err
		}
		reason = &rs
	}
	ctx := r.Context()
	orgID := mustPrincipal(r).OrganizationID
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pickupCarrierTimeout+10*time.Second)
	defer cancel()
	var msgs []string
	err = s.store.InTx(wctx, func(tx pgx.Tx) error {
		p, err := store.LockPickup(wctx, tx, orgID, id)
		if err != nil {
			return notFoundAs(err, "pickup")
		}
		if st := p.StatusOn(time.Now()); st != store.PickupConfirmed {
			return errBadRequest("invalid_state", "only a confirmed pickup can be cancelled; this one is "+st)
		}
		if p.CarrierAccountID == nil {
			return errBadRequest("carrier_account_not_active", "the pickup's carrier account was deleted; it cannot be cancelled with the carrier")
		}
		acct, err := store.CarrierAccountByID(wctx, tx, orgID, *p.CarrierAccountID)
		if errors.Is(err, store.ErrNotFound) {
			return errBadRequest("carrier_account_not_active", "the pickup's carrier account was deleted; it cannot be cancelled with the carrier")
		}
		if err != nil {
			return err
		}
		carrier, adapterAcct, err := s.shipmentAdapter(acct)
		if err != nil {
			return err
		}
		var booked pickupCarrierResponse
		_ = json.Unmarshal(p.CarrierResponse, &booked)
		creq := carriers.CancelPickupRequest{
			ConfirmationNumber: deref(p.ConfirmationNumber), PickupDate: p.PickupDate.Format("2006-01-02"),
			Location: booked.Location, Reason: deref(reason),
		}
		cctx, ccancel := context.WithTimeout(wctx, pickupCarrierTimeout)
		res, err := carrier.CancelPickup(cctx, adapterAcct, creq)
		ccancel()
		var answer json.RawMessage
		switch {
		case err == nil:
			msgs = res.Messages
			answer = orderJSONOf(map[string]any{"messages": res.Messages, "raw": shipmentRaw(res.Raw, "null")})
		case pickupAlreadyCancelled(err):
			msgs = []string{"the carrier reports the pickup as already cancelled"}
			answer = orderJSONOf(map[string]any{"messages": msgs, "raw": nil})
		default:
			return s.shipmentCarrierError(r, acct.Carrier+" refused to cancel the pickup", err)
		}
		_, err = store.MarkPickupCancelled(wctx, tx, orgID, id, reason, answer)
		return err
	})
	if err != nil {
		return err
	}
	if msgs == nil {
		msgs = []string{}
	}
	writeJSON(w, http.StatusOK, pickupCancelledJSON{Success: true, Messages: msgs})
	return nil
}

// pickupRefusalField names the request field a carrier's refusal of a
// pickup is about ("" for the body as a whole).
func pickupRefusalField(code, _ string) string {
	switch code {
	case "PICKUP.REQUESTED.PREVIOUS.DAY", "PICKUP.READYDATETIME.INVALID", "PICKUP.SCHEDULEDDATE.INVALID":
		return "pickupDate"
	case "PICKUP.CUSTOMERCLOSETIME.INVALID", "PICKUP.CLOSETIME.INVALID":
		return "closeTime"
	case "PICKUP.ADDRESS.INVALID":
		return "pickupAddress"
	}
	return ""
}

// pickupAlreadyCancelled: carrier_a answers a repeated cancellation with
// PICKUP.ALREADY.CANCELLED (e.g. an earlier cancellation whose answer was
// lost); the pickup is cancelled either way.
func pickupAlreadyCancelled(err error) bool {
	ce, ok := carriers.AsError(err)
	return ok && ce.Code == "PICKUP.ALREADY.CANCELLED"
}
