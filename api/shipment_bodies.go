package api

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/shipping"
)

// Request bodies of the shipping endpoints, decoded into the shipping
// domain's inputs. Decoding names what is of the wrong JSON type (a
// number where a string belongs, a malformed UUID or date); the domain
// names the rest (required fields, bounds, addresses), and one response
// names every problem (validation).

// camelAliases are the camelCase names a body may use for a snake_case
// field (the Part 2 resources are camelCase, so clients mix them up):
// the snake_case name wins when both are sent.
var camelAliases = map[string]string{
	"order_id": "orderId", "carrier_account_id": "carrierAccountId", "ship_from": "shipFrom",
	"ship_date": "shipDate", "label_format": "labelFormat", "tracking_number": "trackingNumber",
}

// acceptCamelCase copies each camelCase field of body to its snake_case
// name when that is absent.
func acceptCamelCase(body jsonBody) {
	for snake, camel := range camelAliases {
		if _, ok := body[snake]; ok {
			continue
		}
		if v, ok := body[camel]; ok {
			body[snake] = v
		}
	}
}

// validation is the 400 of a body: the decoding's field errors and the
// domain's for fields decoding did not name, in the order of the body's
// fields (order lists the top-level names; others come last).
func validation(v *validator, dom domain.FieldErrors, order ...string) error {
	named := func(field string) bool {
		for _, d := range v.details {
			if d.Field == field || strings.HasPrefix(field, d.Field+".") || strings.HasPrefix(field, d.Field+"[") {
				return true
			}
		}
		return false
	}
	for _, f := range dom {
		if !named(f.Field) {
			v.add(f.Field, f.Message)
		}
	}
	rank := func(field string) int {
		top := field
		if i := strings.IndexAny(top, ".["); i >= 0 {
			top = top[:i]
		}
		if i := slices.Index(order, top); i >= 0 {
			return i
		}
		return len(order)
	}
	slices.SortStableFunc(v.details, func(a, b FieldError) int { return rank(a.Field) - rank(b.Field) })
	return v.err()
}

// requiredUUID is a required UUID string field (uuid.Nil when it is not).
func requiredUUID(f bodyFields, key string) uuid.UUID {
	s := f.str(key, true, 100)
	if s == nil {
		return uuid.Nil
	}
	id, err := uuid.Parse(*s)
	if err != nil {
		f.v.add(f.name(key), "must be a UUID")
		return uuid.Nil
	}
	return id
}

// numberField is a number field for the domain to check: NaN when it is
// not a number (the domain names it), 0 when absent (named here).
func numberField(f bodyFields, key string) float64 {
	raw, ok := f.get(key, true)
	if !ok {
		return 0
	}
	n, isNum := orderNumber(raw)
	if !isNum {
		return math.NaN()
	}
	return n
}

// shipmentParseDate reads a date (YYYY-MM-DD) or a timestamp (its date as
// written).
func shipmentParseDate(s string) (time.Time, bool) {
	t, ok := parseOrderTime(s)
	if !ok {
		return time.Time{}, false
	}
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC), true
}

var createShipmentFields = []string{"order_id", "carrier_account_id", "service", "parcels", "ship_from", "ship_date", "metadata", "label_format"}

// decodeCreateShipment reads POST /shipments (snake_case, camelCase
// accepted; ship_from in any address shape, shipping.AddressOf).
func decodeCreateShipment(body jsonBody) (shipping.CreateShipmentInput, error) {
	acceptCamelCase(body)
	var v validator
	f := bodyFields{v: &v, m: body}
	var in shipping.CreateShipmentInput
	in.OrderID = requiredUUID(f, "order_id")
	in.CarrierAccountID = requiredUUID(f, "carrier_account_id")
	in.Service = deref(f.str("service", true, shipping.MaxServiceLen))
	in.Parcels = decodeParcels(f, "parcels")
	if from, ok := f.object("ship_from", false); ok {
		a := shipping.AddressOf(from.m).DefaultCountry()
		in.ShipFrom = &a
	}
	if d := f.str("ship_date", false, 64); d != nil {
		if t, ok := shipmentParseDate(*d); ok {
			in.ShipDate = &t
		} else {
			v.add("ship_date", "must be an ISO 8601 date (YYYY-MM-DD)")
		}
	}
	in.Metadata = f.rawObject("metadata", false)
	in.LabelFormat = deref(f.str("label_format", false, 10))
	if v.ok() {
		return in, nil // the domain validates the rest
	}
	return in, validation(&v, in.Validate(), createShipmentFields...)
}

// decodeParcels reads the parcels array (bounds are the domain's).
func decodeParcels(f bodyFields, key string) []shipping.Parcel {
	raw, ok := f.get(key, true)
	if !ok {
		return nil
	}
	arr, isArr := raw.([]any)
	if !isArr {
		f.v.add(key, "must be an array")
		return nil
	}
	out := make([]shipping.Parcel, 0, len(arr))
	for i, it := range arr {
		path := key + "[" + strconv.Itoa(i) + "]"
		m, isObj := it.(map[string]any)
		if !isObj {
			f.v.add(path, "must be an object")
			out = append(out, shipping.Parcel{}) // keeps the positions
			continue
		}
		pf := bodyFields{v: f.v, path: path, m: m}
		out = append(out, shipping.Parcel{
			Length: numberField(pf, "length"), Width: numberField(pf, "width"), Height: numberField(pf, "height"),
			Weight: numberField(pf, "weight"), Unit: deref(pf.str("unit", true, 20)),
		})
	}
	return out
}

// decodeUpdateShipment reads PATCH /shipments/{id}: a field present is
// set (tracking_number null clears it).
func decodeUpdateShipment(body jsonBody) (shipping.UpdateShipmentInput, error) {
	acceptCamelCase(body)
	var v validator
	f := bodyFields{v: &v, m: body}
	var in shipping.UpdateShipmentInput
	// Values are the domain's to check, so that one answer names them all
	// (the carrier and service need the shipment).
	if raw, ok := body["status"]; ok {
		if st, isStr := raw.(string); isStr {
			in.Status = &st
		} else if raw == nil {
			v.add("status", "is required")
		} else {
			v.add("status", "must be one of "+strings.Join(shipping.ShipmentStatuses, ", "))
		}
	}
	if raw, ok := body["tracking_number"]; ok {
		var tn *string
		if s, isStr := raw.(string); isStr && strings.TrimSpace(s) != "" {
			s = strings.TrimSpace(s)
			tn = &s
		} else if !isStr && raw != nil {
			v.add("tracking_number", "must be a string")
		}
		in.TrackingNumber = &tn
	}
	if _, ok := body["metadata"]; ok {
		if m, ok := f.object("metadata", true); ok {
			in.Metadata = m.m
		}
	}
	for _, fixed := range []struct {
		key string
		dst **string
	}{{"carrier", &in.Carrier}, {"service", &in.Service}} {
		if raw, ok := body[fixed.key]; ok {
			sv, _ := raw.(string) // a value that is no string is no carrier: refused
			*fixed.dst = &sv
		}
	}
	return in, v.err()
}
