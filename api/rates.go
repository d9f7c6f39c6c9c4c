package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/fos-dev/fos/activities"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/rating"
	"github.com/fos-dev/fos/store"
)

// mountRates registers the rate quote and rate snapshot endpoints (spec
// Part 1, Rates). Snapshots are immutable: there is no update or delete
// route (and the table refuses both).
func (s *Server) mountRates(r chi.Router) {
	read := r.With(s.scope("rates:read"))
	read.Post("/rates", s.h(s.quoteRates))
	read.Post("/rates/from-order/{orderId}", s.h(s.quoteRatesFromOrder))
	read.Post("/rates/snapshots", s.h(s.createRateSnapshot))
	read.Get("/rates/snapshots/{id}", s.h(s.getRateSnapshot))
}

// Bounds the specification leaves open.
const (
	rateMaxPackages   = 50
	rateMaxWeight     = 10_000 // lb or kg, per package
	rateMaxDimension  = 10_000 // in or cm
	rateMaxPrice      = 999_999_999_999.99
	rateMaxTransit    = 365
	rateMaxShipAhead  = 365 // days after today a shipDate may be
	rateMaxFieldLen   = 255
	rateMaxServiceLen = 100
	rateMaxZipLen     = 20
	// rateDefaultItemWeightLb is the weight of one unit of a line item
	// that states none (from-order).
	rateDefaultItemWeightLb = 1.0
)

// ---- response objects ----

// rateAddressJSON is an Address as the API returns and stores it (every
// field present, null when empty).
type rateAddressJSON struct {
	Address1     string  `json:"address1"`
	Address2     *string `json:"address2"`
	City         string  `json:"city"`
	Province     *string `json:"province"`
	ProvinceCode *string `json:"provinceCode"`
	Country      *string `json:"country"`
	CountryCode  string  `json:"countryCode"`
	Zip          string  `json:"zip"`
}

func (a rateAddressJSON) carrier() carriers.Address {
	return carriers.Address{
		Address1: a.Address1, Address2: deref(a.Address2), City: a.City, Province: deref(a.Province),
		ProvinceCode: deref(a.ProvinceCode), Country: deref(a.Country), CountryCode: a.CountryCode, Zip: a.Zip,
	}
}

// ratePackageJSON is a Package as the API returns and stores it.
type ratePackageJSON struct {
	Weight        carriers.Weight `json:"weight"`
	Length        *float64        `json:"length"`
	Width         *float64        `json:"width"`
	Height        *float64        `json:"height"`
	DimensionUnit string          `json:"dimensionUnit"`
}

func (p ratePackageJSON) carrier() carriers.Package {
	num := func(f *float64) float64 {
		if f == nil {
			return 0
		}
		return *f
	}
	return carriers.Package{Weight: p.Weight, Length: num(p.Length), Width: num(p.Width), Height: num(p.Height), DimensionUnit: p.DimensionUnit}
}

// rateQuoteJSON is a Quote: the spec's fields, then what the carrier adds.
type rateQuoteJSON struct {
	ServiceType           string            `json:"serviceType"`
	ServiceName           string            `json:"serviceName"`
	TotalPrice            float64           `json:"totalPrice"`
	Currency              string            `json:"currency"`
	TransitDays           *int              `json:"transitDays"`
	EstimatedDelivery     *time.Time        `json:"estimatedDelivery"`
	Breakdown             []carriers.Charge `json:"breakdown"`
	TransitDaysGuaranteed bool              `json:"transitDaysGuaranteed"`
	DeliveryByTime        *string           `json:"deliveryByTime"`
	Zone                  *string           `json:"zone"`
	BillingWeight         *carriers.Weight  `json:"billingWeight"`
}

func toRateQuoteJSON(q carriers.Quote) rateQuoteJSON {
	bd := q.Breakdown
	if bd == nil {
		bd = []carriers.Charge{}
	}
	return rateQuoteJSON{
		ServiceType: q.ServiceType, ServiceName: q.ServiceName, TotalPrice: q.TotalPrice, Currency: q.Currency,
		TransitDays: q.TransitDays, EstimatedDelivery: q.EstimatedDelivery, Breakdown: bd,
		TransitDaysGuaranteed: q.TransitDaysGuaranteed, DeliveryByTime: rateNullable(q.DeliveryByTime),
		Zone: rateNullable(q.Zone), BillingWeight: q.BillingWeight,
	}
}

func rateNullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// rateGroupJSON is one account's quotes: the single-account response and
// an element of results.
type rateGroupJSON struct {
	Rates            []rateQuoteJSON `json:"rates"`
	Carrier          string          `json:"carrier"`
	CarrierAccountID string          `json:"carrierAccountId"`
}

// rateErrorJSON is one failed account of a multi-account response.
type rateErrorJSON struct {
	Carrier          string `json:"carrier"`
	CarrierAccountID string `json:"carrierAccountId"`
	Error            string `json:"error"`
	// Code is the carrier's error code (or timeout, internal).
	Code string `json:"code"`
}

// rateInputJSON is what from-order quoted: the addresses and packages it
// built from the order (so that a snapshot can be taken of a quote).
type rateInputJSON struct {
	ShipFrom *rateAddressJSON  `json:"shipFrom,omitempty"`
	ShipTo   *rateAddressJSON  `json:"shipTo,omitempty"`
	Packages []ratePackageJSON `json:"packages,omitempty"`
}

type rateSingleJSON struct {
	rateGroupJSON
	rateInputJSON
}

type rateMultiJSON struct {
	Results []rateGroupJSON `json:"results"`
	Errors  []rateErrorJSON `json:"errors"`
	rateInputJSON
}

// ---- POST /rates ----

// rateInput is a validated quote request.
type rateInput struct {
	from, to    rateAddressJSON
	packages    []ratePackageJSON
	shipDate    time.Time
	serviceType string
	residential bool
	sel         rateSelection
}

// rateSelection narrows the accounts asked.
type rateSelection struct {
	carrier   string
	accountID *uuid.UUID
}

func (s *Server) quoteRates(w http.ResponseWriter, r *http.Request) error {
	var body jsonBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	var v validator
	f := bodyFields{v: &v, m: body}
	in := rateInput{}
	if a, ok := f.address("shipFrom", true); ok {
		in.from = a
	}
	if a, ok := f.address("shipTo", true); ok {
		in.to = a
	}
	in.packages = f.packages("packages")
	f.rateOptions(&in)
	if err := v.err(); err != nil {
		return err
	}
	return s.runQuote(w, r, in, rateInputJSON{})
}

// rateOptions reads shipDate, serviceType, residential, carrier and
// carrierAccountId (all optional).
func (f bodyFields) rateOptions(in *rateInput) {
	in.shipDate = rateToday()
	if d := f.str("shipDate", false, 10); d != nil {
		t, err := time.Parse("2006-01-02", *d)
		switch {
		case err != nil:
			f.v.add(f.name("shipDate"), "must be a date (YYYY-MM-DD)")
		case t.Before(in.shipDate.AddDate(0, 0, -1)):
			f.v.add(f.name("shipDate"), "must not be in the past")
		case t.After(in.shipDate.AddDate(0, 0, rateMaxShipAhead)):
			f.v.add(f.name("shipDate"), fmt.Sprintf("must be at most %d days ahead", rateMaxShipAhead))
		default:
			in.shipDate = t
		}
	}
	if st := f.str("serviceType", false, rateMaxServiceLen); st != nil {
		in.serviceType = *st
	}
	if b := f.boolean("residential", false); b != nil {
		in.residential = *b
	}
	f.selection(&in.sel)
}

func (f bodyFields) selection(sel *rateSelection) {
	if c := f.str("carrier", false, 50); c != nil && f.v.oneOf(f.name("carrier"), *c, carriers.Codes()...) {
		sel.carrier = *c
	}
	if id := f.str("carrierAccountId", false, 100); id != nil {
		u, err := uuid.Parse(*id)
		if err != nil {
			f.v.add(f.name("carrierAccountId"), "must be a UUID")
		} else {
			sel.accountID = &u
		}
	}
}

// rateToday is today's date (UTC).
func rateToday() time.Time {
	return time.Now().UTC().Truncate(24 * time.Hour)
}

// selectRateAccounts returns the organization's accounts to quote with:
// the one named by carrierAccountId, else every active account that
// supports rating (of carrier, when given).
func (s *Server) selectRateAccounts(ctx context.Context, orgID uuid.UUID, sel rateSelection) ([]store.CarrierAccount, error) {
	if sel.accountID != nil {
		a, err := store.CarrierAccountByID(ctx, s.store.Pool, orgID, *sel.accountID)
		if errors.Is(err, store.ErrNotFound) {
			return nil, errValidation(FieldError{Field: "carrierAccountId", Message: "must be a carrier account of this organization"})
		}
		if err != nil {
			return nil, err
		}
		if sel.carrier != "" && sel.carrier != a.Carrier {
			return nil, errValidation(FieldError{Field: "carrier", Message: "does not match the carrier account, which is " + a.Carrier})
		}
		if a.Status != store.CarrierAccountActive {
			return nil, errBadRequest("no_active_carrier_account", "carrier account "+a.ID.String()+" is "+a.Status+"; only active accounts quote rates")
		}
		if !a.SupportsRating {
			return nil, errBadRequest("no_active_carrier_account", "carrier account "+a.ID.String()+" does not support rating")
		}
		return []store.CarrierAccount{a}, nil
	}
	all, err := store.ActiveCarrierAccounts(ctx, s.store.Pool, orgID, sel.carrier)
	if err != nil {
		return nil, err
	}
	out := make([]store.CarrierAccount, 0, len(all))
	for _, a := range all {
		if a.SupportsRating {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		msg := "the organization has no active carrier account that supports rating"
		if sel.carrier != "" {
			msg = "the organization has no active " + sel.carrier + " account that supports rating"
		}
		return nil, errBadRequest("no_active_carrier_account", msg)
	}
	return out, nil
}

// runQuote selects the accounts, fans out and writes the response: the
// single shape when exactly one account was asked, else {results, errors}.
// extra is echoed into the response (from-order's built input).
func (s *Server) runQuote(w http.ResponseWriter, r *http.Request, in rateInput, extra rateInputJSON) error {
	ctx := r.Context()
	accounts, err := s.selectRateAccounts(ctx, mustPrincipal(r).OrganizationID, in.sel)
	if err != nil {
		return err
	}
	req := carriers.RateRequest{ShipFrom: in.from.carrier(), ShipTo: in.to.carrier(), ShipDate: in.shipDate, ServiceType: in.serviceType}
	req.ShipTo.Residential = in.residential
	for _, p := range in.packages {
		req.Packages = append(req.Packages, p.carrier())
	}

	// Open the credentials; an account whose credentials cannot be opened
	// fails on its own, like a carrier error.
	results := make([]rating.Result, len(accounts))
	open := make([]carriers.Account, 0, len(accounts))
	openIdx := make([]int, 0, len(accounts))
	for i, a := range accounts {
		results[i] = rating.Result{AccountID: a.ID.String(), Carrier: a.Carrier}
		acct, err := store.AdapterAccount(s.secrets, a)
		if err != nil {
			s.log.ErrorContext(ctx, "cannot open carrier account credentials", append(logAttrs(r), "carrier_account_id", a.ID.String(), "error", err.Error())...)
			results[i].Err = errRateCredentials
			continue
		}
		open = append(open, acct)
		openIdx = append(openIdx, i)
	}
	for j, res := range rating.Quote(ctx, s.carriers, open, req, s.rateTimeout) {
		results[openIdx[j]] = res
	}
	if ctx.Err() != nil {
		return ctx.Err() // the client went away
	}
	for _, res := range results {
		if res.Err != nil {
			s.log.WarnContext(ctx, "carrier rate failed", append(logAttrs(r), "carrier", res.Carrier, "carrier_account_id", res.AccountID,
				"duration_ms", res.Duration.Milliseconds(), "error", rateErrorMessage(res.Err))...)
		}
	}

	if len(results) == 1 {
		res := results[0]
		if res.Err != nil {
			return &Error{Status: http.StatusBadGateway, Code: "carrier_error",
				Message: res.Carrier + ": " + rateErrorMessage(res.Err),
				Details: []FieldError{{Field: res.AccountID, Message: res.Carrier + ": " + rateErrorMessage(res.Err)}}}
		}
		writeJSON(w, http.StatusOK, rateSingleJSON{rateGroupJSON: toRateGroupJSON(res), rateInputJSON: extra})
		return nil
	}
	if rating.Failed(results) {
		details := make([]FieldError, 0, len(results))
		parts := make([]string, 0, len(results))
		for _, res := range results {
			msg := res.Carrier + ": " + rateErrorMessage(res.Err)
			details = append(details, FieldError{Field: res.AccountID, Message: msg})
			parts = append(parts, msg)
		}
		return &Error{Status: http.StatusBadGateway, Code: "carrier_error",
			Message: "every carrier failed: " + strings.Join(parts, "; "), Details: details}
	}
	out := rateMultiJSON{Results: []rateGroupJSON{}, Errors: []rateErrorJSON{}, rateInputJSON: extra}
	for _, res := range results {
		if res.Err != nil {
			out.Errors = append(out.Errors, rateErrorJSON{Carrier: res.Carrier, CarrierAccountID: res.AccountID,
				Error: rateErrorMessage(res.Err), Code: rateErrorCode(res.Err)})
			continue
		}
		out.Results = append(out.Results, toRateGroupJSON(res))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func toRateGroupJSON(res rating.Result) rateGroupJSON {
	g := rateGroupJSON{Rates: make([]rateQuoteJSON, 0, len(res.Quotes)), Carrier: res.Carrier, CarrierAccountID: res.AccountID}
	for _, q := range res.Quotes {
		g.Rates = append(g.Rates, toRateQuoteJSON(q))
	}
	return g
}

var errRateCredentials = errors.New("the account's stored credentials cannot be read; update them")

// rateErrorMessage is what a client may read of a failed carrier call:
// the carrier's error, a timeout, or a generic message (never an internal
// error's text).
// rateErrorMessage is a failure as shown to the client: the carrier's own
// code and message, or a plain sentence — never internal URLs or Go error
// text.
func rateErrorMessage(err error) string {
	if errors.Is(err, rating.ErrTimeout) || errors.Is(err, errRateCredentials) {
		return err.Error()
	}
	return activities.CarrierErrorMessage(err)
}

func rateErrorCode(err error) string {
	switch ce, ok := carriers.AsError(err); {
	case ok && ce.Code != "":
		return ce.Code
	case errors.Is(err, rating.ErrTimeout):
		return "timeout"
	case errors.Is(err, errRateCredentials):
		return "credentials_unreadable"
	}
	return "internal"
}

// ---- POST /rates/from-order/{orderId} ----

func (s *Server) quoteRatesFromOrder(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "orderId", "order")
	if err != nil {
		return err
	}
	var body jsonBody
	if err := decodeOptionalJSON(r, &body); err != nil {
		return err
	}
	orgID := mustPrincipal(r).OrganizationID
	o, err := store.OrderByID(r.Context(), s.store.Pool, orgID, id)
	if err != nil {
		return notFoundAs(err, "order")
	}

	var v validator
	f := bodyFields{v: &v, m: body}
	in := rateInput{}
	// Extensions: shipDate, serviceType and residential work as on /rates.
	f.rateOptions(&in)
	if err := v.err(); err != nil {
		return err
	}

	// Destination: the order's shipping address.
	if len(o.ShippingAddress) == 0 || string(o.ShippingAddress) == "null" {
		return errValidation(FieldError{Field: "order.shipping_address", Message: "is required: the order has no shipping address"})
	}
	var sa map[string]any
	if err := json.Unmarshal(o.ShippingAddress, &sa); err != nil || sa == nil {
		return errValidation(FieldError{Field: "order.shipping_address", Message: "must be an object"})
	}
	in.to, _ = bodyFields{v: &v, m: map[string]any{"shipping_address": orderAddressFields(sa)}, path: "order"}.address("shipping_address", true)
	if err := v.err(); err != nil {
		return err
	}

	// Origin: the order's bridge's location, else the default location.
	loc, _, err := store.OriginLocation(r.Context(), s.store.Pool, orgID, o.BridgeID)
	if errors.Is(err, store.ErrNotFound) {
		return errBadRequest("no_origin_location", "no ship-from location: the order's bridge has no location, and the organization has "+
			"neither a settings.default_location_id nor a location created by hand; create one with POST /api/v1/locations")
	}
	if err != nil {
		return err
	}
	from, err := locationAddress(loc)
	if err != nil {
		return err
	}
	in.from = from

	// Packages: one, weighing what the line items weigh.
	pkg, err := orderPackage(o)
	if err != nil {
		return err
	}
	in.packages = []ratePackageJSON{pkg}

	return s.runQuote(w, r, in, rateInputJSON{ShipFrom: &in.from, ShipTo: &in.to, Packages: in.packages})
}

// orderAddressFields maps an order's address object (whatever naming the
// source used: address1/line1/street, zip/postalCode, countryCode/country,
// provinceCode/state, …) onto the rate Address fields.
func orderAddressFields(m map[string]any) map[string]any {
	pick := func(keys ...string) any {
		for _, k := range keys {
			if s, ok := m[k].(string); ok && strings.TrimSpace(s) != "" {
				return strings.TrimSpace(s)
			}
		}
		return nil
	}
	out := map[string]any{
		"address1":     pick("address1", "line1", "address_1", "addressLine1", "address_line1", "street", "street1", "address"),
		"address2":     pick("address2", "line2", "address_2", "addressLine2", "address_line2", "street2"),
		"city":         pick("city", "town", "locality"),
		"province":     pick("province", "state", "region"),
		"provinceCode": pick("provinceCode", "province_code", "stateCode", "state_code"),
		"country":      pick("country", "countryName", "country_name"),
		"countryCode":  pick("countryCode", "country_code"),
		"zip":          pick("zip", "postalCode", "postal_code", "zipCode", "zip_code", "postcode"),
	}
	if out["countryCode"] == nil {
		if c, ok := out["country"].(string); ok {
			if code := countryCodeOf(c); code != "" {
				out["countryCode"] = code
			}
		}
	}
	if out["provinceCode"] == nil {
		if p, ok := out["province"].(string); ok && len(p) == 2 {
			out["provinceCode"] = strings.ToUpper(p)
		}
	}
	return out
}

// countryCodeOf is the ISO 3166 alpha-2 code of a code or a few common
// country names; "" when unknown.
func countryCodeOf(s string) string {
	s = strings.TrimSpace(s)
	if len(s) == 2 && rateIsLetters(s) {
		return strings.ToUpper(s)
	}
	switch strings.ToLower(s) {
	case "usa", "united states", "united states of america":
		return "US"
	case "can", "canada":
		return "CA"
	case "mex", "mexico":
		return "MX"
	case "gbr", "united kingdom", "great britain":
		return "GB"
	case "deu", "germany":
		return "DE"
	case "fra", "france":
		return "FR"
	case "aus", "australia":
		return "AU"
	}
	return ""
}

// locationAddress is a location as a ship-from address; a location that
// lacks what a carrier needs is 400 naming the missing fields.
func locationAddress(l store.Location) (rateAddressJSON, error) {
	var v validator
	need := func(field string, val *string) string {
		if val == nil || strings.TrimSpace(*val) == "" {
			v.add("location."+field, "is required to quote from location "+l.ID.String()+" ("+l.Name+")")
			return ""
		}
		return strings.TrimSpace(*val)
	}
	a := rateAddressJSON{Address1: need("street", l.Street), City: need("city", l.City), Zip: need("zip", l.Zip)}
	if c := need("country", l.Country); c != "" {
		a.CountryCode = countryCodeOf(c)
		if a.CountryCode == "" {
			v.add("location.country", "must be a two-letter country code to quote from location "+l.ID.String()+" ("+l.Name+")")
		}
		if c != a.CountryCode {
			a.Country = &c
		}
	}
	if p := l.Province; p != nil && strings.TrimSpace(*p) != "" {
		pv := strings.TrimSpace(*p)
		a.Province = &pv
		if len(pv) == 2 {
			code := strings.ToUpper(pv)
			a.ProvinceCode = &code
		}
	}
	return a, v.err()
}

// orderPackage is one package weighing the order's shippable line items:
// metadata.weight when the order has one (a number in lb, or {value,
// unit}); else the sum of quantity × weight of the items that require
// shipping, an item's weight being its weight field (a number with
// weightUnit, default lb, or {value, unit}; units lb, kg, oz, g), or 1 lb
// per unit when it states none. No dimensions.
func orderPackage(o store.Order) (ratePackageJSON, error) {
	var meta map[string]any
	_ = json.Unmarshal(o.Metadata, &meta)
	if w, ok := weightLb(meta["weight"], meta["weightUnit"]); ok {
		return ratePackageJSON{Weight: carriers.Weight{Value: roundWeight(w), Unit: carriers.UnitLB}, DimensionUnit: carriers.UnitIN}, nil
	}
	var items []map[string]any
	_ = json.Unmarshal(o.LineItems, &items)
	total, shippable := 0.0, 0
	for _, it := range items {
		if rs, ok := it["requiresShipping"].(bool); ok && !rs {
			continue
		}
		shippable++
		qty := 1.0
		if q, ok := it["quantity"].(float64); ok && q >= 1 {
			qty = q
		}
		unit := it["weightUnit"]
		if unit == nil {
			unit = it["weight_unit"]
		}
		w, ok := weightLb(it["weight"], unit)
		if !ok {
			w = rateDefaultItemWeightLb
		}
		total += qty * w
	}
	if shippable == 0 {
		return ratePackageJSON{}, errValidation(FieldError{Field: "order.line_items", Message: "has no line item that requires shipping"})
	}
	if total > rateMaxWeight {
		return ratePackageJSON{}, errValidation(FieldError{Field: "order.line_items", Message: fmt.Sprintf("weigh more than %d lb together", rateMaxWeight)})
	}
	return ratePackageJSON{Weight: carriers.Weight{Value: roundWeight(total), Unit: carriers.UnitLB}, DimensionUnit: carriers.UnitIN}, nil
}

// weightLb reads a positive weight (a number with a unit, or {value,
// unit}) in pounds.
func weightLb(raw, unitRaw any) (float64, bool) {
	var val float64
	unit, _ := unitRaw.(string)
	switch w := raw.(type) {
	case float64:
		val = w
	case map[string]any:
		n, ok := w["value"].(float64)
		if !ok {
			return 0, false
		}
		val = n
		unit, _ = w["unit"].(string)
	default:
		return 0, false
	}
	if val <= 0 || math.IsNaN(val) || math.IsInf(val, 0) {
		return 0, false
	}
	switch strings.ToLower(strings.TrimSpace(unit)) {
	case "", "lb", "lbs", "pound", "pounds":
		return val, true
	case "kg", "kgs", "kilogram", "kilograms":
		return val * 2.20462262185, true
	case "oz", "ounce", "ounces":
		return val / 16, true
	case "g", "gram", "grams":
		return val / 453.59237, true
	}
	return 0, false
}

// roundWeight rounds up to a hundredth of a pound (at least 0.01).
func roundWeight(lb float64) float64 {
	return math.Max(0.01, math.Ceil(lb*100-1e-9)/100)
}

// ---- snapshots ----

// rateSnapshotJSON is the Rate snapshot resource (camelCase), every field
// of the specification present.
type rateSnapshotJSON struct {
	ID                    uuid.UUID       `json:"id"`
	OrganizationID        uuid.UUID       `json:"organizationId"`
	CarrierAccountID      uuid.UUID       `json:"carrierAccountId"`
	Carrier               string          `json:"carrier"`
	ServiceType           string          `json:"serviceType"`
	ServiceName           string          `json:"serviceName"`
	TotalPrice            float64         `json:"totalPrice"`
	Currency              string          `json:"currency"`
	Breakdown             json.RawMessage `json:"breakdown"`
	TransitDays           *int            `json:"transitDays"`
	TransitDaysGuaranteed bool            `json:"transitDaysGuaranteed"`
	EstimatedDelivery     *time.Time      `json:"estimatedDelivery"`
	DeliveryByTime        *string         `json:"deliveryByTime"`
	ShipFrom              json.RawMessage `json:"shipFrom"`
	ShipTo                json.RawMessage `json:"shipTo"`
	Packages              json.RawMessage `json:"packages"`
	QuotedAt              time.Time       `json:"quotedAt"`
	ExpiresAt             time.Time       `json:"expiresAt"`
	CreatedAt             time.Time       `json:"createdAt"`
	RawResponse           json.RawMessage `json:"rawResponse"`
}

func toRateSnapshotJSON(s store.RateSnapshot) rateSnapshotJSON {
	null := func(raw json.RawMessage) json.RawMessage {
		if len(raw) == 0 {
			return json.RawMessage(`null`)
		}
		return raw
	}
	return rateSnapshotJSON{
		ID: s.ID, OrganizationID: s.OrganizationID, CarrierAccountID: s.CarrierAccountID, Carrier: s.Carrier,
		ServiceType: s.ServiceType, ServiceName: s.ServiceName, TotalPrice: s.TotalPrice, Currency: s.Currency,
		Breakdown: null(s.Breakdown), TransitDays: s.TransitDays, TransitDaysGuaranteed: s.TransitDaysGuaranteed,
		EstimatedDelivery: s.EstimatedDelivery, DeliveryByTime: s.DeliveryByTime,
		ShipFrom: null(s.ShipFrom), ShipTo: null(s.ShipTo), Packages: null(s.Packages),
		QuotedAt: s.QuotedAt, ExpiresAt: s.ExpiresAt, CreatedAt: s.CreatedAt, RawResponse: null(s.RawResponse),
	}
}

func (s *Server) createRateSnapshot(w http.ResponseWriter, r *http.Request) error {
	var body jsonBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	var v validator
	f := bodyFields{v: &v, m: body}
	snap := store.RateSnapshot{ID: uuid.New(), OrganizationID: mustPrincipal(r).OrganizationID}
	var sel rateSelection
	if id := f.str("carrierAccountId", true, 100); id != nil {
		if u, err := uuid.Parse(*id); err != nil {
			v.add("carrierAccountId", "must be a UUID")
		} else {
			sel.accountID = &u
		}
	}
	if c := f.str("carrier", true, 50); c != nil && v.oneOf("carrier", *c, carriers.Codes()...) {
		sel.carrier = *c
	}
	snap.ServiceType = deref(f.str("serviceType", true, rateMaxServiceLen))
	snap.ServiceName = deref(f.str("serviceName", true, rateMaxFieldLen))
	if p := f.number("totalPrice", true, 0, rateMaxPrice, false); p != nil {
		snap.TotalPrice = *p
	}
	if c := f.str("currency", true, 3); c != nil {
		if !rateIsCurrency(*c) {
			v.add("currency", "must be an ISO 4217 code (3 uppercase letters)")
		}
		snap.Currency = *c
	}
	if a, ok := f.address("shipFrom", true); ok {
		snap.ShipFrom = rateJSON(a)
	}
	if a, ok := f.address("shipTo", true); ok {
		snap.ShipTo = rateJSON(a)
	}
	if pkgs := f.packages("packages"); pkgs != nil {
		snap.Packages = rateJSON(pkgs)
	}
	if raw, ok := f.get("breakdown", false); ok {
		switch raw.(type) {
		case []any, map[string]any:
			snap.Breakdown = rateJSON(raw)
		default:
			v.add("breakdown", "must be an array or an object")
		}
	}
	if n := f.number("transitDays", false, 0, rateMaxTransit, true); n != nil {
		d := int(*n)
		snap.TransitDays = &d
	}
	if b := f.boolean("transitDaysGuaranteed", false); b != nil {
		snap.TransitDaysGuaranteed = *b
	}
	snap.EstimatedDelivery = f.timestamp("estimatedDelivery")
	snap.DeliveryByTime = f.str("deliveryByTime", false, 50)
	if t := f.timestamp("expiresAt"); t != nil {
		if !t.After(time.Now()) {
			v.add("expiresAt", "must be in the future")
		}
		snap.ExpiresAt = *t
	}
	if raw, ok := f.get("rawResponse", false); ok {
		snap.RawResponse = rateJSON(raw)
	}
	if err := v.err(); err != nil {
		return err
	}

	acct, err := store.CarrierAccountByID(r.Context(), s.store.Pool, snap.OrganizationID, *sel.accountID)
	if errors.Is(err, store.ErrNotFound) {
		return errValidation(FieldError{Field: "carrierAccountId", Message: "must be a carrier account of this organization"})
	}
	if err != nil {
		return err
	}
	if acct.Carrier != sel.carrier {
		return errValidation(FieldError{Field: "carrier", Message: "does not match the carrier account, which is " + acct.Carrier})
	}
	snap.CarrierAccountID, snap.Carrier = acct.ID, acct.Carrier
	out, err := store.CreateRateSnapshot(r.Context(), s.store.Pool, snap)
	if errors.Is(err, store.ErrNotFound) { // the account was deleted meanwhile
		return errValidation(FieldError{Field: "carrierAccountId", Message: "must be a carrier account of this organization"})
	}
	if store.IsConstraint(err, "rate_snapshots_check") {
		// expiresAt passed between the check above and the database's now().
		return errValidation(FieldError{Field: "expiresAt", Message: "must be in the future"})
	}
	if err != nil {
		return err
	}
	writeData(w, http.StatusCreated, toRateSnapshotJSON(out))
	return nil
}

func (s *Server) getRateSnapshot(w http.ResponseWriter, r *http.Request) error {
	return writeByID(s, w, r, "rate snapshot", store.RateSnapshotByID, toRateSnapshotJSON)
}

func rateJSON(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return raw
}

func rateIsCurrency(s string) bool {
	return len(s) == 3 && rateIsLetters(s) && strings.ToUpper(s) == s
}

func rateIsLetters(s string) bool {
	for _, c := range s {
		if (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') {
			return false
		}
	}
	return true
}

// ---- body reading ----

// number is a number in [lo, hi] (an integer when integer is set).
func (f bodyFields) number(key string, required bool, lo, hi float64, integer bool) *float64 {
	raw, ok := f.get(key, required)
	if !ok {
		return nil
	}
	n, isNum := rateNumber(raw)
	switch {
	case !isNum:
		f.v.add(f.name(key), "must be a number")
	case integer && n != math.Trunc(n):
		f.v.add(f.name(key), "must be an integer")
	case n < lo || n > hi:
		f.v.add(f.name(key), fmt.Sprintf("must be between %s and %s", rateFmt(lo), rateFmt(hi)))
	default:
		return &n
	}
	return nil
}

func rateFmt(f float64) string { return fmt.Sprintf("%.10g", f) }

func rateNumber(raw any) (float64, bool) {
	switch n := raw.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
	case float64:
		return n, !math.IsInf(n, 0) && !math.IsNaN(n)
	}
	return 0, false
}

func (f bodyFields) boolean(key string, required bool) *bool {
	raw, ok := f.get(key, required)
	if !ok {
		return nil
	}
	b, isBool := raw.(bool)
	if !isBool {
		f.v.add(f.name(key), "must be a boolean")
		return nil
	}
	return &b
}

// timestamp is an optional ISO 8601 timestamp (a date alone is midnight UTC).
func (f bodyFields) timestamp(key string) *time.Time {
	s := f.str(key, false, 64)
	if s == nil {
		return nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, *s); err == nil {
			return &t
		}
	}
	f.v.add(f.name(key), "must be an ISO 8601 timestamp")
	return nil
}

// address reads an Address: address1, city, countryCode (two letters) and
// zip required; address2, province, provinceCode, country optional.
func (f bodyFields) address(key string, required bool) (rateAddressJSON, bool) {
	o, ok := f.object(key, required)
	if !ok {
		return rateAddressJSON{}, false
	}
	before := len(f.v.details)
	a := rateAddressJSON{
		Address1:     deref(o.str("address1", true, rateMaxFieldLen)),
		Address2:     o.str("address2", false, rateMaxFieldLen),
		City:         deref(o.str("city", true, rateMaxFieldLen)),
		Province:     o.str("province", false, rateMaxFieldLen),
		ProvinceCode: o.str("provinceCode", false, 10),
		Country:      o.str("country", false, rateMaxFieldLen),
		Zip:          deref(o.str("zip", true, rateMaxZipLen)),
	}
	if cc := o.str("countryCode", true, 2); cc != nil {
		if len(*cc) != 2 || !rateIsLetters(*cc) {
			o.v.add(o.name("countryCode"), "must be a two-letter country code")
		}
		a.CountryCode = strings.ToUpper(*cc)
	}
	if a.ProvinceCode != nil {
		pc := strings.ToUpper(*a.ProvinceCode)
		a.ProvinceCode = &pc
	}
	return a, len(f.v.details) == before
}

// packages reads the required, non-empty array of packages; nil when it
// is missing or wrong.
func (f bodyFields) packages(key string) []ratePackageJSON {
	raw, ok := f.get(key, true)
	if !ok {
		return nil
	}
	arr, isArr := raw.([]any)
	switch {
	case !isArr:
		f.v.add(f.name(key), "must be an array")
		return nil
	case len(arr) == 0:
		f.v.add(f.name(key), "must contain at least one package")
		return nil
	case len(arr) > rateMaxPackages:
		f.v.add(f.name(key), fmt.Sprintf("must contain at most %d packages", rateMaxPackages))
		return nil
	}
	before := len(f.v.details)
	out := make([]ratePackageJSON, 0, len(arr))
	for i, it := range arr {
		path := fmt.Sprintf("%s[%d]", f.name(key), i)
		m, isObj := it.(map[string]any)
		if !isObj {
			f.v.add(path, "must be an object")
			continue
		}
		p := bodyFields{v: f.v, path: path, m: m}
		pkg := ratePackageJSON{DimensionUnit: carriers.UnitIN}
		if w, ok := p.object("weight", true); ok {
			if n := w.number("value", true, 0, rateMaxWeight, false); n != nil {
				if *n <= 0 {
					w.v.add(w.name("value"), "must be greater than 0")
				}
				pkg.Weight.Value = *n
			}
			if u, isStr := w.m["unit"].(string); isStr && (u == carriers.UnitLB || u == carriers.UnitKG) {
				pkg.Weight.Unit = u
			} else if w.m["unit"] == nil {
				w.v.add(w.name("unit"), "is required")
			} else {
				w.v.add(w.name("unit"), "must be one of lb, kg")
			}
		}
		pkg.Length = p.number("length", false, 0, rateMaxDimension, false)
		pkg.Width = p.number("width", false, 0, rateMaxDimension, false)
		pkg.Height = p.number("height", false, 0, rateMaxDimension, false)
		if raw, ok := p.get("dimensionUnit", false); ok {
			if u, isStr := raw.(string); isStr && (u == carriers.UnitIN || u == carriers.UnitCM) {
				pkg.DimensionUnit = u
			} else {
				p.v.add(p.name("dimensionUnit"), "must be one of in, cm")
			}
		}
		out = append(out, pkg)
	}
	if len(f.v.details) != before {
		return nil
	}
	return out
}
