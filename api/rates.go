package api

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/rating"
	"github.com/fos-dev/fos/shipping"
)

// mountRates registers the rate quote and rate snapshot endpoints (spec
// Part 1, Rates): HTTP over the shipping domain (QuoteRates, QuoteOrder,
// CreateRateSnapshot, GetRateSnapshot). Snapshots are immutable: there is
// no update or delete route (and the table refuses both).
func (s *Server) mountRates(r chi.Router) {
	read := r.With(s.scope("rates:read"))
	read.Post("/rates", s.h(s.quoteRates))
	read.Post("/rates/from-order/{orderId}", s.h(s.quoteRatesFromOrder))
	read.Post("/rates/snapshots", s.h(s.createRateSnapshot))
	read.Get("/rates/snapshots/{id}", s.h(s.getRateSnapshot))
}

// ---- response objects ----

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
		TransitDaysGuaranteed: q.TransitDaysGuaranteed, DeliveryByTime: orderNullable(q.DeliveryByTime),
		Zone: orderNullable(q.Zone), BillingWeight: q.BillingWeight,
	}
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
	ShipFrom *shipping.RateAddress  `json:"shipFrom,omitempty"`
	ShipTo   *shipping.RateAddress  `json:"shipTo,omitempty"`
	Packages []shipping.RatePackage `json:"packages,omitempty"`
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

func toRateGroupJSON(res rating.Result) rateGroupJSON {
	return rateGroupJSON{Rates: mapSlice(res.Quotes, toRateQuoteJSON), Carrier: res.Carrier, CarrierAccountID: res.AccountID}
}

// writeQuote writes a quote: the single shape when exactly one account was
// asked, else {results, errors}.
func writeQuote(w http.ResponseWriter, q shipping.RateQuote) {
	extra := rateInputJSON{ShipFrom: q.ShipFrom, ShipTo: q.ShipTo, Packages: q.Packages}
	if len(q.Results) == 1 {
		writeJSON(w, http.StatusOK, rateSingleJSON{rateGroupJSON: toRateGroupJSON(q.Results[0]), rateInputJSON: extra})
		return
	}
	out := rateMultiJSON{Results: []rateGroupJSON{}, Errors: []rateErrorJSON{}, rateInputJSON: extra}
	for _, res := range q.Results {
		if res.Err != nil {
			out.Errors = append(out.Errors, rateErrorJSON{Carrier: res.Carrier, CarrierAccountID: res.AccountID,
				Error: shipping.RateErrorMessage(res.Err), Code: shipping.RateErrorCode(res.Err)})
			continue
		}
		out.Results = append(out.Results, toRateGroupJSON(res))
	}
	writeJSON(w, http.StatusOK, out)
}

// ---- POST /rates and /rates/from-order/{orderId} ----

var quoteFields = []string{"shipFrom", "shipTo", "packages", "shipDate", "serviceType", "residential", "carrier", "carrierAccountId"}

func (s *Server) quoteRates(w http.ResponseWriter, r *http.Request) error {
	var body jsonBody
	v, err := decodeCheckedJSON(r, &body)
	if err != nil {
		return err
	}
	in := shipping.RateInput{ShipFrom: rateAddressOf(body["shipFrom"]), ShipTo: rateAddressOf(body["shipTo"]), Packages: ratePackagesOf(body["packages"])}
	in.RateOptions = rateOptionsOf(body)
	if !v.ok() {
		return validation(v, in.Validate(), quoteFields...)
	}
	q, err := s.Shipping.QuoteRates(r.Context(), actorOf(r), in)
	if err != nil {
		return err
	}
	writeQuote(w, q)
	return nil
}

func (s *Server) quoteRatesFromOrder(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "orderId", "order")
	if err != nil {
		return err
	}
	var body jsonBody
	v := &validator{}
	if pb, ok := preParsedBody(r); ok {
		body, v.details = pb.m, pb.errs
	} else if err := decodeOptionalJSON(r, &body); err != nil {
		return err
	}
	// Extensions: shipDate, serviceType and residential work as on /rates.
	opts := rateOptionsOf(body)
	if !v.ok() {
		return validation(v, opts.Validate(), quoteFields...)
	}
	q, err := s.Shipping.QuoteOrder(r.Context(), actorOf(r), id, opts)
	if err != nil {
		return err
	}
	writeQuote(w, q)
	return nil
}

// rateOptionsOf reads shipDate, serviceType, residential, carrier and
// carrierAccountId (all optional; RateOptionsInput names what is of the
// wrong type, the domain checks the values).
func rateOptionsOf(body map[string]any) shipping.RateOptions {
	var o shipping.RateOptions
	if t, err := time.Parse("2006-01-02", textOf(body["shipDate"])); err == nil {
		o.ShipDate = &t
	}
	o.ServiceType = textOf(body["serviceType"])
	o.Residential, _ = body["residential"].(bool)
	o.Carrier = textOf(body["carrier"])
	if id := uuidOf(body["carrierAccountId"]); id != uuid.Nil {
		o.CarrierAccountID = &id
	}
	return o
}

// rateAddressOf reads an Address object (nil when absent: the domain
// names it).
func rateAddressOf(raw any) *shipping.RateAddress {
	o := objectOf(raw)
	if o == nil {
		return nil
	}
	return &shipping.RateAddress{
		Address1: textOf(o["address1"]), Address2: optionalText(o["address2"]), City: textOf(o["city"]),
		Province: optionalText(o["province"]), ProvinceCode: optionalText(o["provinceCode"]), Country: optionalText(o["country"]),
		CountryCode: textOf(o["countryCode"]), Zip: textOf(o["zip"]),
	}
}

// notAUnit stands for a unit that was sent but is not a string: the
// domain refuses it as it refuses any unknown unit.
const notAUnit = "\x00"

// ratePackagesOf reads the packages array (nil when absent: the domain
// names it, as it checks the values).
func ratePackagesOf(raw any) []shipping.RatePackage {
	if raw == nil {
		return nil
	}
	arr, isArr := raw.([]any)
	if !isArr {
		return []shipping.RatePackage{}
	}
	out := make([]shipping.RatePackage, 0, len(arr))
	for _, it := range arr {
		var pkg shipping.RatePackage
		if m := objectOf(it); m != nil {
			if w := objectOf(m["weight"]); w != nil {
				pkg.Weight.Value, _ = rateNumber(w["value"])
				pkg.Weight.Unit = unitOf(w["unit"])
			}
			pkg.Length, pkg.Width, pkg.Height = optionalNumberOf(m["length"]), optionalNumberOf(m["width"]), optionalNumberOf(m["height"])
			if raw := m["dimensionUnit"]; raw != nil {
				pkg.DimensionUnit = unitOf(raw)
			}
		}
		out = append(out, pkg) // keeps the positions
	}
	return out
}

// unitOf is a unit sent as a string, notAUnit for anything else sent, ""
// when absent.
func unitOf(raw any) string {
	switch u := raw.(type) {
	case nil:
		return ""
	case string:
		if u == "" {
			return notAUnit
		}
		return u
	}
	return notAUnit
}

// optionalNumberOf is a number (nil when absent or not a number).
func optionalNumberOf(raw any) *float64 {
	if n, ok := rateNumber(raw); ok {
		return &n
	}
	return nil
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

func toRateSnapshotJSON(s shipping.RateSnapshot) rateSnapshotJSON {
	null := func(raw json.RawMessage) json.RawMessage { return shipmentRaw(raw, "null") }
	return rateSnapshotJSON{
		ID: s.ID, OrganizationID: s.OrganizationID, CarrierAccountID: s.CarrierAccountID, Carrier: s.Carrier,
		ServiceType: s.ServiceType, ServiceName: s.ServiceName, TotalPrice: s.TotalPrice, Currency: s.Currency,
		Breakdown: null(s.Breakdown), TransitDays: s.TransitDays, TransitDaysGuaranteed: s.TransitDaysGuaranteed,
		EstimatedDelivery: s.EstimatedDelivery, DeliveryByTime: s.DeliveryByTime,
		ShipFrom: null(s.ShipFrom), ShipTo: null(s.ShipTo), Packages: null(s.Packages),
		QuotedAt: s.QuotedAt, ExpiresAt: s.ExpiresAt, CreatedAt: s.CreatedAt, RawResponse: null(s.RawResponse),
	}
}

var snapshotFields = []string{"carrierAccountId", "carrier", "serviceType", "serviceName", "totalPrice", "currency", "shipFrom", "shipTo",
	"packages", "breakdown", "transitDays", "transitDaysGuaranteed", "estimatedDelivery", "deliveryByTime", "expiresAt", "rawResponse"}

func (s *Server) createRateSnapshot(w http.ResponseWriter, r *http.Request) error {
	var body jsonBody
	v, err := decodeCheckedJSON(r, &body)
	if err != nil {
		return err
	}
	in := shipping.RateSnapshotInput{
		CarrierAccountID:  uuidOf(body["carrierAccountId"]),
		Carrier:           textOf(body["carrier"]),
		ServiceType:       textOf(body["serviceType"]),
		ServiceName:       textOf(body["serviceName"]),
		TotalPrice:        optionalNumberOf(body["totalPrice"]),
		Currency:          textOf(body["currency"]),
		ShipFrom:          rateAddressOf(body["shipFrom"]),
		ShipTo:            rateAddressOf(body["shipTo"]),
		Packages:          ratePackagesOf(body["packages"]),
		TransitDays:       optionalNumberOf(body["transitDays"]),
		EstimatedDelivery: timestampOf(body["estimatedDelivery"]),
		DeliveryByTime:    optionalText(body["deliveryByTime"]),
		ExpiresAt:         timestampOf(body["expiresAt"]),
	}
	switch raw := body["breakdown"]; raw.(type) {
	case []any, map[string]any:
		in.Breakdown = orderJSONOf(raw)
	}
	in.TransitDaysGuaranteed, _ = body["transitDaysGuaranteed"].(bool)
	if raw := body["rawResponse"]; raw != nil {
		in.RawResponse = orderJSONOf(raw)
	}
	if !v.ok() {
		return validation(v, in.Validate(), snapshotFields...)
	}
	out, err := s.Shipping.CreateRateSnapshot(r.Context(), actorOf(r), in)
	if err != nil {
		return err
	}
	writeData(w, http.StatusCreated, toRateSnapshotJSON(out))
	return nil
}

func (s *Server) getRateSnapshot(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "rate snapshot")
	if err != nil {
		return err
	}
	snap, err := s.Shipping.GetRateSnapshot(r.Context(), actorOf(r), id)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toRateSnapshotJSON(snap))
	return nil
}
