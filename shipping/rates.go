package shipping

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/rating"
	"github.com/fos-dev/fos/store"
)

// Rates: a quote fanned out to the organization's carrier accounts in
// real time (spec Part 1, Rates), from an address pair or from an order.

// Bounds of a rate request the specification leaves open.
const (
	MaxRatePackages   = 50
	MaxRateWeight     = 10_000 // lb or kg, per package
	MaxRateDimension  = 10_000 // in or cm
	MaxRateFieldLen   = 255
	MaxRateServiceLen = 100
	MaxRateZipLen     = 20
	// defaultItemWeightLb is the weight of one unit of a line item that
	// states none (from an order).
	defaultItemWeightLb = 1.0
)

// RateAddress is the service's canonical address (the rates' Address):
// address1, city, zip and countryCode (two letters) required; address2,
// province, provinceCode and country optional. It is returned and stored
// with every field present, null when empty.
type RateAddress struct {
	Address1     string  `json:"address1"`
	Address2     *string `json:"address2"`
	City         string  `json:"city"`
	Province     *string `json:"province"`
	ProvinceCode *string `json:"provinceCode"`
	Country      *string `json:"country"`
	CountryCode  string  `json:"countryCode"`
	Zip          string  `json:"zip"`
}

// Check names every problem of the address under prefix.
func (a *RateAddress) Check(v *domain.FieldErrors, prefix string) {
	req := func(name, val string, max int) {
		switch {
		case strings.TrimSpace(val) == "":
			v.Add(prefix+"."+name, "is required")
		default:
			v.MaxLen(prefix+"."+name, val, max)
		}
	}
	opt := func(name string, val *string, max int) {
		if val != nil {
			v.MaxLen(prefix+"."+name, *val, max)
		}
	}
	req("address1", a.Address1, MaxRateFieldLen)
	opt("address2", a.Address2, MaxRateFieldLen)
	req("city", a.City, MaxRateFieldLen)
	opt("province", a.Province, MaxRateFieldLen)
	opt("provinceCode", a.ProvinceCode, 10)
	opt("country", a.Country, MaxRateFieldLen)
	req("zip", a.Zip, MaxRateZipLen)
	switch cc := a.CountryCode; {
	case cc == "":
		v.Add(prefix+".countryCode", "is required")
	case len([]rune(cc)) > 2:
		v.Add(prefix+".countryCode", "must be at most 2 characters")
	case len(cc) != 2 || !isLetters(cc):
		v.Add(prefix+".countryCode", "must be a two-letter country code")
	}
	a.CountryCode = strings.ToUpper(a.CountryCode)
	if a.ProvinceCode != nil {
		pc := strings.ToUpper(*a.ProvinceCode)
		a.ProvinceCode = &pc
	}
}

func (a RateAddress) carrier() carriers.Address {
	return carriers.Address{
		Address1: a.Address1, Address2: deref(a.Address2), City: a.City, Province: deref(a.Province),
		ProvinceCode: deref(a.ProvinceCode), Country: deref(a.Country), CountryCode: a.CountryCode, Zip: a.Zip,
	}
}

// RatePackage is a package of a rate request, as it is returned and
// stored: its weight (value above 0, unit lb or kg), optional dimensions
// and their unit (in, the default, or cm).
type RatePackage struct {
	Weight        carriers.Weight `json:"weight"`
	Length        *float64        `json:"length"`
	Width         *float64        `json:"width"`
	Height        *float64        `json:"height"`
	DimensionUnit string          `json:"dimensionUnit"`
}

func (p *RatePackage) check(v *domain.FieldErrors, path string) {
	rng := func(name string, n float64, hi float64) bool {
		if n < 0 || n > hi || math.IsNaN(n) {
			v.Add(path+"."+name, fmt.Sprintf("must be between 0 and %.10g", hi))
			return false
		}
		return true
	}
	if rng("weight.value", p.Weight.Value, MaxRateWeight) && p.Weight.Value <= 0 {
		v.Add(path+".weight.value", "must be greater than 0")
	}
	switch p.Weight.Unit {
	case carriers.UnitLB, carriers.UnitKG:
	case "":
		v.Add(path+".weight.unit", "is required")
	default:
		v.Add(path+".weight.unit", "must be one of lb, kg")
	}
	for _, d := range []struct {
		name string
		val  *float64
	}{{"length", p.Length}, {"width", p.Width}, {"height", p.Height}} {
		if d.val != nil {
			rng(d.name, *d.val, MaxRateDimension)
		}
	}
	switch p.DimensionUnit {
	case "":
		p.DimensionUnit = carriers.UnitIN
	case carriers.UnitIN, carriers.UnitCM:
	default:
		v.Add(path+".dimensionUnit", "must be one of in, cm")
	}
}

func (p RatePackage) carrier() carriers.Package {
	num := func(f *float64) float64 {
		if f == nil {
			return 0
		}
		return *f
	}
	return carriers.Package{Weight: p.Weight, Length: num(p.Length), Width: num(p.Width), Height: num(p.Height), DimensionUnit: p.DimensionUnit}
}

// CheckPackages names every problem of a request's packages (1 to
// MaxRatePackages) under field.
func CheckPackages(v *domain.FieldErrors, field string, pkgs []RatePackage) {
	switch {
	case pkgs == nil:
		v.Add(field, "is required")
	case len(pkgs) == 0:
		v.Add(field, "must contain at least one package")
	case len(pkgs) > MaxRatePackages:
		v.Add(field, fmt.Sprintf("must contain at most %d packages", MaxRatePackages))
	default:
		for i := range pkgs {
			pkgs[i].check(v, fmt.Sprintf("%s[%d]", field, i))
		}
	}
}

// RateOptions narrow a quote: the ship date (nil: today, UTC; from
// yesterday to MaxShipAhead days ahead), one service, a residential
// destination, and which accounts quote (one carrier's, or one account).
type RateOptions struct {
	ShipDate         *time.Time
	ServiceType      string
	Residential      bool
	Carrier          string
	CarrierAccountID *uuid.UUID
}

// Validate names every problem of the options.
func (o *RateOptions) Validate() domain.FieldErrors {
	var v domain.FieldErrors
	o.check(&v)
	return v
}

func (o *RateOptions) check(v *domain.FieldErrors) {
	if o.ShipDate != nil {
		today := Today()
		switch d := *o.ShipDate; {
		case d.Before(today.AddDate(0, 0, -1)):
			v.Add("shipDate", "must not be in the past")
		case d.After(today.AddDate(0, 0, MaxShipAhead)):
			v.Add("shipDate", fmt.Sprintf("must be at most %d days ahead", MaxShipAhead))
		}
	}
	o.ServiceType = strings.TrimSpace(o.ServiceType)
	v.MaxLen("serviceType", o.ServiceType, MaxRateServiceLen)
	if o.Carrier != "" && !containsStatus(carriers.Codes(), o.Carrier) {
		v.Add("carrier", "must be one of "+strings.Join(carriers.Codes(), ", "))
	}
}

// RateInput is a quote request.
type RateInput struct {
	ShipFrom, ShipTo *RateAddress
	Packages         []RatePackage
	RateOptions
}

// Validate names every problem of the request.
func (in *RateInput) Validate() domain.FieldErrors {
	var v domain.FieldErrors
	for _, a := range []struct {
		name string
		addr *RateAddress
	}{{"shipFrom", in.ShipFrom}, {"shipTo", in.ShipTo}} {
		if a.addr == nil {
			v.Add(a.name, "is required")
		} else {
			a.addr.Check(&v, a.name)
		}
	}
	CheckPackages(&v, "packages", in.Packages)
	in.check(&v)
	return v
}

// RateQuote is a quote's outcome: each account's result (quotes, or the
// failure: RateErrorMessage, RateErrorCode), and what was quoted when it
// was built from an order.
type RateQuote struct {
	Results []rating.Result
	// ShipFrom, ShipTo and Packages are set by QuoteOrder.
	ShipFrom, ShipTo *RateAddress
	Packages         []RatePackage
}

// QuoteRates quotes every active account that rates (of Carrier, or the
// one CarrierAccountID names), each with its own deadline. One account
// asked and failed, or every account failed, is Upstream naming each
// account (its id as the field). The actor needs rates:read.
func (s *Service) QuoteRates(ctx context.Context, actor domain.Actor, in RateInput) (RateQuote, error) {
	if err := actor.RequireScope("rates:read"); err != nil {
		return RateQuote{}, err
	}
	if err := in.Validate().Err(); err != nil {
		return RateQuote{}, err
	}
	results, err := s.quote(ctx, actor.OrganizationID, *in.ShipFrom, *in.ShipTo, in.Packages, in.RateOptions)
	return RateQuote{Results: results}, err
}

// quote selects the accounts, fans out and judges the results.
func (s *Service) quote(ctx context.Context, orgID uuid.UUID, from, to RateAddress, pkgs []RatePackage, opts RateOptions) ([]rating.Result, error) {
	accounts, err := s.rateAccounts(ctx, orgID, opts)
	if err != nil {
		return nil, err
	}
	shipDate := Today()
	if opts.ShipDate != nil {
		shipDate = *opts.ShipDate
	}
	req := carriers.RateRequest{ShipFrom: from.carrier(), ShipTo: to.carrier(), ShipDate: shipDate, ServiceType: opts.ServiceType}
	req.ShipTo.Residential = opts.Residential
	for _, p := range pkgs {
		req.Packages = append(req.Packages, p.carrier())
	}
	// Open the credentials; an account whose credentials cannot be opened
	// fails on its own, like a carrier error.
	results := make([]rating.Result, len(accounts))
	open := make([]carriers.Account, 0, len(accounts))
	openIdx := make([]int, 0, len(accounts))
	for i, a := range accounts {
		results[i] = rating.Result{AccountID: a.ID.String(), Carrier: a.Carrier}
		var acct carriers.Account
		if s.secrets != nil {
			acct, err = store.AdapterAccount(s.secrets, a)
		}
		if s.secrets == nil || err != nil {
			s.log.ErrorContext(ctx, "cannot open carrier account credentials", "carrier_account_id", a.ID.String(), "error", fmt.Sprint(err))
			results[i].Err = ErrRateCredentials
			continue
		}
		open = append(open, acct)
		openIdx = append(openIdx, i)
	}
	for j, res := range rating.Quote(ctx, s.carriers, open, req, s.rateTimeout) {
		results[openIdx[j]] = res
	}
	if ctx.Err() != nil {
		return nil, ctx.Err() // the caller went away
	}
	for _, res := range results {
		if res.Err != nil {
			s.log.WarnContext(ctx, "carrier rate failed", "carrier", res.Carrier, "carrier_account_id", res.AccountID,
				"duration_ms", res.Duration.Milliseconds(), "error", RateErrorMessage(res.Err))
		}
	}
	if len(results) == 1 && results[0].Err != nil {
		res := results[0]
		msg := res.Carrier + ": " + RateErrorMessage(res.Err)
		return nil, &domain.Error{Kind: domain.KindUpstream, Code: "carrier_error", Message: msg, Fields: []domain.FieldError{{Field: res.AccountID, Message: msg}}}
	}
	if len(results) > 1 && rating.Failed(results) {
		var v domain.FieldErrors
		parts := make([]string, 0, len(results))
		for _, res := range results {
			msg := res.Carrier + ": " + RateErrorMessage(res.Err)
			v.Add(res.AccountID, msg)
			parts = append(parts, msg)
		}
		return nil, &domain.Error{Kind: domain.KindUpstream, Code: "carrier_error", Message: "every carrier failed: " + strings.Join(parts, "; "), Fields: v}
	}
	return results, nil
}

// rateAccounts are the organization's accounts to quote with: the one
// named by CarrierAccountID, else every active account that supports
// rating (of Carrier, when given).
func (s *Service) rateAccounts(ctx context.Context, orgID uuid.UUID, sel RateOptions) ([]store.CarrierAccount, error) {
	if sel.CarrierAccountID != nil {
		a, err := store.CarrierAccountByID(ctx, s.store.Pool, orgID, *sel.CarrierAccountID)
		if errors.Is(err, store.ErrNotFound) {
			return nil, domain.InvalidField("carrierAccountId", "must be a carrier account of this organization")
		}
		if err != nil {
			return nil, err
		}
		if sel.Carrier != "" && sel.Carrier != a.Carrier {
			return nil, domain.InvalidField("carrier", "does not match the carrier account, which is "+a.Carrier)
		}
		if a.Status != store.CarrierAccountActive {
			return nil, domain.InvalidCode("no_active_carrier_account", "carrier account "+a.ID.String()+" is "+a.Status+"; only active accounts quote rates")
		}
		if !a.SupportsRating {
			return nil, domain.InvalidCode("no_active_carrier_account", "carrier account "+a.ID.String()+" does not support rating")
		}
		return []store.CarrierAccount{a}, nil
	}
	all, err := store.ActiveCarrierAccounts(ctx, s.store.Pool, orgID, sel.Carrier)
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
		if sel.Carrier != "" {
			msg = "the organization has no active " + sel.Carrier + " account that supports rating"
		}
		return nil, domain.InvalidCode("no_active_carrier_account", msg)
	}
	return out, nil
}

// ErrRateCredentials: an account's stored credentials cannot be opened; it
// fails on its own in a quote.
var ErrRateCredentials = errors.New("the account's stored credentials cannot be read; update them")

// RateErrorMessage is a failed account's error as a client may read it:
// the carrier's own code and message, a timeout, or a plain sentence —
// never internal URLs or Go error text.
func RateErrorMessage(err error) string {
	if errors.Is(err, rating.ErrTimeout) || errors.Is(err, ErrRateCredentials) {
		return err.Error()
	}
	return CarrierErrorMessage(err)
}

// RateErrorCode is a failed account's code: the carrier's, or timeout,
// credentials_unreadable, internal.
func RateErrorCode(err error) string {
	switch ce, ok := carriers.AsError(err); {
	case ok && ce.Code != "":
		return ce.Code
	case errors.Is(err, rating.ErrTimeout):
		return "timeout"
	case errors.Is(err, ErrRateCredentials):
		return "credentials_unreadable"
	}
	return "internal"
}

// QuoteOrder quotes an order: to its shipping address, from its bridge's
// location (else the organization's default or oldest manual location),
// one package weighing its shippable line items. The quote says what it
// built. The actor needs rates:read.
func (s *Service) QuoteOrder(ctx context.Context, actor domain.Actor, orderID uuid.UUID, opts RateOptions) (RateQuote, error) {
	if err := actor.RequireScope("rates:read"); err != nil {
		return RateQuote{}, err
	}
	orgID := actor.OrganizationID
	o, err := store.OrderByID(ctx, s.store.Pool, orgID, orderID)
	if errors.Is(err, store.ErrNotFound) {
		return RateQuote{}, domain.NotFound("order")
	}
	if err != nil {
		return RateQuote{}, err
	}
	var v domain.FieldErrors
	opts.check(&v)
	if err := v.Err(); err != nil {
		return RateQuote{}, err
	}
	// Destination: the order's shipping address.
	if len(o.ShippingAddress) == 0 || string(o.ShippingAddress) == "null" {
		return RateQuote{}, domain.InvalidField("order.shipping_address", "is required: the order has no shipping address")
	}
	var sa map[string]any
	if err := json.Unmarshal(o.ShippingAddress, &sa); err != nil || sa == nil {
		return RateQuote{}, domain.InvalidField("order.shipping_address", "must be an object")
	}
	to := RateAddressOf(sa)
	to.Check(&v, "order.shipping_address")
	if err := v.Err(); err != nil {
		return RateQuote{}, err
	}
	// Origin: the order's bridge's location, else the default location.
	loc, _, err := store.OriginLocation(ctx, s.store.Pool, orgID, o.BridgeID)
	if errors.Is(err, store.ErrNotFound) {
		return RateQuote{}, domain.InvalidCode("no_origin_location", "no ship-from location: the order's bridge has no location, and the organization has "+
			"neither a settings.default_location_id nor a location created by hand; create one with POST /api/v1/locations")
	}
	if err != nil {
		return RateQuote{}, err
	}
	from, err := locationAddress(loc)
	if err != nil {
		return RateQuote{}, err
	}
	pkg, err := orderPackage(o)
	if err != nil {
		return RateQuote{}, err
	}
	pkgs := []RatePackage{pkg}
	results, err := s.quote(ctx, orgID, from, to, pkgs, opts)
	if err != nil {
		return RateQuote{}, err
	}
	return RateQuote{Results: results, ShipFrom: &from, ShipTo: &to, Packages: pkgs}, nil
}

// RateAddressOf reads an address object whatever naming its source used
// (address1/line1/street, zip/postalCode, countryCode/country,
// provinceCode/state, …) as a RateAddress.
func RateAddressOf(m map[string]any) RateAddress {
	pick := func(keys ...string) *string {
		for _, k := range keys {
			if s, ok := m[k].(string); ok && strings.TrimSpace(s) != "" {
				t := strings.TrimSpace(s)
				return &t
			}
		}
		return nil
	}
	a := RateAddress{
		Address1: deref(pick("address1", "line1", "address_1", "addressLine1", "address_line1", "street", "street1", "address")),
		Address2: pick("address2", "line2", "address_2", "addressLine2", "address_line2", "street2"),
		City:     deref(pick("city", "town", "locality")),
		Province: pick("province", "state", "region"), ProvinceCode: pick("provinceCode", "province_code", "stateCode", "state_code"),
		Country: pick("country", "countryName", "country_name"), CountryCode: deref(pick("countryCode", "country_code")),
		Zip: deref(pick("zip", "postalCode", "postal_code", "zipCode", "zip_code", "postcode")),
	}
	if a.CountryCode == "" && a.Country != nil {
		a.CountryCode = CountryCode(*a.Country)
	}
	if a.ProvinceCode == nil && a.Province != nil && len(*a.Province) == 2 {
		pc := strings.ToUpper(*a.Province)
		a.ProvinceCode = &pc
	}
	return a
}

// locationAddress is a location as a ship-from address; a location that
// lacks what a carrier needs is refused naming the missing fields.
func locationAddress(l store.Location) (RateAddress, error) {
	var v domain.FieldErrors
	need := func(field string, val *string) string {
		if val == nil || strings.TrimSpace(*val) == "" {
			v.Add("location."+field, "is required to quote from location "+l.ID.String()+" ("+l.Name+")")
			return ""
		}
		return strings.TrimSpace(*val)
	}
	a := RateAddress{Address1: need("street", l.Street), City: need("city", l.City), Zip: need("zip", l.Zip)}
	if c := need("country", l.Country); c != "" {
		a.CountryCode = CountryCode(c)
		if a.CountryCode == "" {
			v.Add("location.country", "must be a two-letter country code to quote from location "+l.ID.String()+" ("+l.Name+")")
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
	return a, v.Err()
}

// orderPackage is one package weighing the order's shippable line items:
// metadata.weight when the order has one (a number in lb, or {value,
// unit}); else the sum of quantity × weight of the items that require
// shipping, an item's weight being its weight field (a number with
// weightUnit, default lb, or {value, unit}; units lb, kg, oz, g), or 1 lb
// per unit when it states none. No dimensions.
func orderPackage(o store.Order) (RatePackage, error) {
	var meta map[string]any
	_ = json.Unmarshal(o.Metadata, &meta)
	if w, ok := weightLb(meta["weight"], meta["weightUnit"]); ok {
		return RatePackage{Weight: carriers.Weight{Value: roundWeight(w), Unit: carriers.UnitLB}, DimensionUnit: carriers.UnitIN}, nil
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
			w = defaultItemWeightLb
		}
		total += qty * w
	}
	if shippable == 0 {
		return RatePackage{}, domain.InvalidField("order.line_items", "has no line item that requires shipping")
	}
	if total > MaxRateWeight {
		return RatePackage{}, domain.InvalidField("order.line_items", fmt.Sprintf("weigh more than %d lb together", MaxRateWeight))
	}
	return RatePackage{Weight: carriers.Weight{Value: roundWeight(total), Unit: carriers.UnitLB}, DimensionUnit: carriers.UnitIN}, nil
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
