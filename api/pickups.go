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
	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/worker"
	"github.com/fos-dev/fos/workflows"
)

// mountPickups registers the pickup endpoints (carrier_a only). The carrier
// is called in real time through workflows (CONTRACT 8b): POST books with
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

// Bounds the specification leaves open.
const (
	pickupMaxPackages     = 999
	pickupMaxWeight       = 100_000
	pickupMaxAddressField = 255
	pickupMaxReason       = 500
	// pickupWorkTimeout bounds the wait for a booking or cancellation.
	pickupWorkTimeout = 100 * time.Second
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
	var details fieldErrors
	page, err := parsePage(r, 20, 100)
	details.collect(err)
	status, err := queryEnum(r, "status", store.PickupStatuses...)
	details.collect(err)
	accountID, err := queryUUID(r, "carrierAccountId")
	details.collect(err)
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
	if err == nil && !p.Visible() {
		err = store.ErrNotFound
	}
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
	if s.temporal == nil {
		return errTemporalUnavailable()
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
	p := store.Pickup{
		ID: purchaseID(r, orgID, "pickup"), OrganizationID: orgID, CarrierAccountID: &acct.ID, Carrier: acct.Carrier,
		Status: store.PickupPending, PickupAddress: orderJSONOf(in.address),
		PickupDate: in.date, ReadyTime: in.ready, CloseTime: in.close, PackageCount: in.packages, Metadata: in.metadata,
	}
	if in.totalWeight != nil {
		p.TotalWeight = orderJSONOf(in.totalWeight)
	}
	// The booking runs to its end even when the client hangs up.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pickupWorkTimeout)
	defer cancel()
	cur, created, err := store.InsertPickup(wctx, s.store.Pool, p)
	if err != nil {
		return err
	}
	if cur.Status != store.PickupPending && cur.Visible() {
		// A client's retry of a booking that is done.
		var booked activities.PickupCarrierResponse
		_ = json.Unmarshal(cur.CarrierResponse, &booked)
		writePickupCreated(w, cur, booked.Messages)
		return nil
	}
	wfIn := workflows.PickupBookingInput{OrganizationID: orgID.String(), PickupID: p.ID.String(), CarrierAccountID: acct.ID.String(), Request: req}
	opts := worker.StartOptions(workflows.PickupBookingWorkflowID(wfIn.PickupID), s.taskQueue, wfIn.OrganizationID, map[string]any{"pickupId": wfIn.PickupID})
	res, err := s.awaitPurchase(wctx, r, purchaseRequest{
		opts: opts, workflow: workflows.PickupBooking, input: wfIn, created: created,
		removePending: func(ctx context.Context) (bool, error) {
			return store.DeletePendingPickup(ctx, s.store.Pool, orgID, p.ID)
		},
		what: acct.Carrier + " refused the pickup", field: pickupRefusalField,
	})
	if err != nil {
		return err
	}
	booked, err := store.PickupByID(wctx, s.store.Pool, orgID, p.ID)
	if err != nil {
		return err
	}
	writePickupCreated(w, booked, res.Messages)
	return nil
}

// writePickupCreated writes the 201 of a booked pickup.
func writePickupCreated(w http.ResponseWriter, p store.Pickup, msgs []string) {
	if msgs == nil {
		msgs = []string{}
	}
	writeJSON(w, http.StatusCreated, pickupCreatedJSON{Pickup: toPickupJSON(p, time.Now()), ConfirmationNumber: deref(p.ConfirmationNumber), Messages: msgs})
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
// PickupCancel workflow, which records it with a compare-and-set (no row
// lock or transaction is held across the carrier call; concurrent requests
// share one run, and a repeated cancellation is harmless). Completed or
// cancelled pickups are 400 invalid_state; a carrier refusal is 502 and the
// pickup stays confirmed. A pickup the carrier reports as already cancelled
// is recorded as cancelled.
func (s *Server) cancelPickup(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "pickup")
	if err != nil {
		return err
	}
	var req cancelPickupRequest
	if err := decodeOptionalJSON(r, &req); err != nil {
		return err
	}
	var reason string
	if req.Reason != nil && strings.TrimSpace(*req.Reason) != "" {
		reason = strings.TrimSpace(*req.Reason)
		var v validator
		v.maxLen("reason", reason, pickupMaxReason)
		if err := v.err(); err != nil {
			return err
		}
	}
	ctx := r.Context()
	orgID := mustPrincipal(r).OrganizationID
	p, err := store.PickupByID(ctx, s.store.Pool, orgID, id)
	if err == nil && !p.Visible() {
		err = store.ErrNotFound
	}
	if err != nil {
		return notFoundAs(err, "pickup")
	}
	if st := p.StatusOn(time.Now()); st != store.PickupConfirmed {
		return errBadRequest("invalid_state", "only a confirmed pickup can be cancelled; this one is "+st)
	}
	if p.CarrierAccountID == nil {
		return errBadRequest("carrier_account_not_active", "the pickup's carrier account was deleted; it cannot be cancelled with the carrier")
	}
	if s.temporal == nil {
		return errTemporalUnavailable()
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pickupWorkTimeout)
	defer cancel()
	in := activities.CancelPickupInput{OrganizationID: orgID.String(), PickupID: id.String(), Reason: reason}
	opts := worker.StartOptions(workflows.PickupCancelWorkflowID(in.PickupID), s.taskQueue, in.OrganizationID, map[string]any{"pickupId": in.PickupID})
	var res activities.CancelPickupResult
	run, err := s.startStableWorkflow(r, opts, time.Now(), workflows.PickupCancel, in)
	if err == nil {
		err = run.Get(wctx, &res)
	}
	if err != nil {
		return s.cancelPickupError(r, p.Carrier, err)
	}
	if res.Messages == nil {
		res.Messages = []string{}
	}
	writeJSON(w, http.StatusOK, pickupCancelledJSON{Success: true, Messages: res.Messages})
	return nil
}

// cancelPickupError maps a failed PickupCancel run to the API's errors. A
// run that ended without the carrier's answer (the activity timed out, the
// run was cancelled or terminated) is 502 carrier_error saying the outcome
// is unknown; messages reach the client through activities.TenantText.
func (s *Server) cancelPickupError(r *http.Request, carrier string, err error) error {
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) {
		if isStartUnknown(err) || isTemporalUnavailable(r.Context(), err) {
			s.log.WarnContext(r.Context(), "pickup cancel workflow unreachable", append(logAttrs(r), "error", err.Error())...)
			return errTemporalUnavailable()
		}
		var timeoutErr *temporal.TimeoutError
		var canceledErr *temporal.CanceledError
		var terminatedErr *temporal.TerminatedError
		var runErr *temporal.WorkflowExecutionError
		if errors.As(err, &timeoutErr) || errors.As(err, &canceledErr) || errors.As(err, &terminatedErr) || errors.As(err, &runErr) {
			s.log.WarnContext(r.Context(), "pickup cancellation outcome unknown", append(logAttrs(r), "error", err.Error())...)
			return &Error{Status: http.StatusBadGateway, Code: "carrier_error", Message: carrier +
				" did not answer the cancellation in time; the pickup may or may not be cancelled: check its status and cancel it again if it is still confirmed"}
		}
		return err
	}
	switch appErr.Type() {
	case activities.ErrTypePickupNotCancellable:
		return errBadRequest("invalid_state", activities.TenantText(appErr.Message()))
	case activities.ErrTypePurchaseGone:
		return errNotFound("pickup")
	}
	var f activities.CarrierFailure
	if appErr.HasDetails() && appErr.Details(&f) == nil && f.APICode != "" {
		return errBadRequest(f.APICode, activities.TenantText(f.Message))
	}
	s.log.WarnContext(r.Context(), "pickup cancellation failed", append(logAttrs(r), "error", err.Error())...)
	return &Error{Status: http.StatusBadGateway, Code: "carrier_error", Message: carrier + " refused to cancel the pickup: " + activities.TenantText(appErr.Message())}
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
