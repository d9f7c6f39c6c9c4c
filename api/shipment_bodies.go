package api

import (
	"slices"
	"strings"
	"time"

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
// accepted; ship_from in any address shape, shipping.AddressOf): the
// document names what is of the wrong type (v), the domain the rest.
func decodeCreateShipment(v *validator, body jsonBody) (shipping.CreateShipmentInput, error) {
	acceptCamelCase(body)
	var in shipping.CreateShipmentInput
	in.OrderID = uuidOf(body["order_id"])
	in.CarrierAccountID = uuidOf(body["carrier_account_id"])
	in.Service = textOf(body["service"])
	in.Parcels = decodeParcels(body["parcels"])
	if from := objectOf(body["ship_from"]); from != nil {
		a := shipping.AddressOf(from).DefaultCountry()
		in.ShipFrom = &a
	}
	if t, ok := shipmentParseDate(textOf(body["ship_date"])); ok {
		in.ShipDate = &t
	}
	if m := objectOf(body["metadata"]); m != nil {
		in.Metadata = orderJSONOf(m)
	}
	in.LabelFormat = textOf(body["label_format"])
	if v.ok() {
		return in, nil // the domain validates the rest
	}
	return in, validation(v, in.Validate(), createShipmentFields...)
}

// decodeParcels reads the parcels array (nil when it is none; a number
// that is none is NaN, which the domain's bounds refuse).
func decodeParcels(raw any) []shipping.Parcel {
	arr, isArr := raw.([]any)
	if !isArr {
		return nil
	}
	out := make([]shipping.Parcel, 0, len(arr))
	for _, it := range arr {
		m := objectOf(it)
		if m == nil {
			out = append(out, shipping.Parcel{}) // keeps the positions
			continue
		}
		out = append(out, shipping.Parcel{
			Length: numberOf(m["length"]), Width: numberOf(m["width"]), Height: numberOf(m["height"]),
			Weight: numberOf(m["weight"]), Unit: textOf(m["unit"]),
		})
	}
	return out
}

// decodeUpdateShipment reads PATCH /shipments/{id} (ShipmentUpdate has
// checked the types): a field present is set (tracking_number null clears
// it).
func decodeUpdateShipment(body jsonBody) shipping.UpdateShipmentInput {
	acceptCamelCase(body)
	var in shipping.UpdateShipmentInput
	// Values are the domain's to check, so that one answer names them all
	// (the carrier and service need the shipment).
	if st, ok := body["status"].(string); ok {
		in.Status = &st
	}
	if raw, ok := body["tracking_number"]; ok {
		in.TrackingNumber = new(*string)
		*in.TrackingNumber = optionalText(raw)
	}
	if m := objectOf(body["metadata"]); m != nil {
		in.Metadata = m
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
	return in
}
