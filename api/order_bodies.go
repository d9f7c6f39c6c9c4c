package api

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/orders"
)

// Request bodies of the order endpoints, decoded and validated into the
// orders domain's inputs; one response names every problem.

// Bounds the specification leaves open (the orders domain's).
const (
	orderMaxLineItems = orders.MaxLineItems
	orderMaxTags      = orders.MaxTags
	orderMaxTagLen    = orders.MaxTagLen
	orderMaxNoteLen   = orders.MaxNoteLen
	orderMaxSearchLen = orders.MaxSearchLen
	orderMaxQuantity  = orders.MaxQuantity
	orderMaxMoney     = orders.MaxMoney
)

// parseCreateOrder validates a create body, naming every problem at once.
func parseCreateOrder(body map[string]any) (orders.NewOrder, error) {
	var v validator
	f := bodyFields{v: &v, m: body}
	var o orders.NewOrder
	if id := f.str("bridge_id", true, 100); id != nil {
		if u, err := uuid.Parse(*id); err != nil {
			v.add("bridge_id", "must be a UUID")
		} else {
			o.BridgeID = &u
		}
	}
	if ext := f.str("external_id", true, 255); ext != nil {
		o.ExternalID = *ext
	}
	o.OrderNumber = f.str("order_number", false, 255)
	o.Status = f.enum("status", true, "", orders.Statuses)
	o.PaymentStatus = f.enum("payment_status", false, "pending", orders.PaymentStatuses)
	o.FulfillmentStatus = f.enum("fulfillment_status", false, "unfulfilled", orders.FulfillmentStatuses)
	if c, ok := f.object("customer", true); ok {
		if email := c.str("email", true, 254); email != nil && v.email("customer.email", *email) {
			o.CustomerEmail = *email
			c.m["email"] = *email
		}
		first, last := c.str("firstName", false, 100), c.str("lastName", false, 100)
		c.str("phone", false, 50)
		// Every customer field is present in responses, null when not given.
		for _, k := range []string{"firstName", "lastName", "phone"} {
			if _, ok := c.m[k]; !ok {
				c.m[k] = nil
			}
		}
		o.CustomerName = strings.TrimSpace(deref(first) + " " + deref(last))
		o.Customer = orderJSONOf(c.m)
	}
	o.ShippingAddress = f.rawObject("shipping_address", false)
	o.BillingAddress = f.rawObject("billing_address", false)
	o.LineItems = f.lineItems("line_items")
	if t, ok := f.object("totals", true); ok {
		for _, k := range []string{"subtotal", "shipping", "tax", "discount", "total"} {
			if n := t.money(k); n != nil && k == "total" {
				o.Total = *n
			}
		}
		o.Totals = orderJSONOf(t.m)
	}
	o.Currency = "USD"
	if c := f.str("currency", false, 16); c != nil {
		if !isCurrencyCode(*c) {
			v.add("currency", "must be an ISO 4217 code (3 uppercase letters)")
		}
		o.Currency = *c
	}
	o.Tags = f.tags("tags")
	o.Note = f.str("note", false, orderMaxNoteLen)
	o.Metadata = f.rawObject("metadata", false)
	o.SourceData = f.rawObject("source_data", false)
	if at := f.str("ordered_at", false, 64); at != nil {
		t, ok := parseOrderTime(*at)
		if !ok {
			v.add("ordered_at", "must be an ISO 8601 timestamp")
		} else if t.Year() < 1970 || t.Year() > 9999 {
			v.add("ordered_at", "must be between 1970 and 9999")
		}
		o.OrderedAt = t
	}
	return o, v.err()
}

// parseOrderPatch validates an update body; absent fields stay as they are.
func parseOrderPatch(body map[string]any) (orders.Patch, error) {
	var v validator
	f := bodyFields{v: &v, m: body}
	var p orders.Patch
	if _, ok := body["status"]; ok {
		st := f.enum("status", true, "", orders.Statuses)
		p.Status = &st
	}
	if raw, ok := body["shipping_address"]; ok {
		if raw == nil {
			p.ShippingAddress = json.RawMessage(`null`)
		} else {
			p.ShippingAddress = f.rawObject("shipping_address", true)
		}
	}
	if _, ok := body["notes"]; ok {
		note := f.str("notes", false, orderMaxNoteLen) // null or "" clears
		p.Note = &note
	}
	if _, ok := body["metadata"]; ok {
		if m, ok := f.object("metadata", true); ok {
			p.Metadata = m.m
		}
	}
	if _, ok := body["tags"]; ok {
		if body["tags"] == nil {
			v.add("tags", "must be an array of strings")
		} else {
			p.Tags = f.tags("tags")
		}
	}
	if _, ok := body["line_items"]; ok {
		p.LineItems = f.lineItems("line_items")
	}
	return p, v.err()
}

// --- body validation ---

// orderNumber is a JSON number as float64.
func orderNumber(raw any) (float64, bool) {
	n, ok := raw.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil && !math.IsInf(f, 0)
}

// enum is one of allowed, or def when absent and optional.
func (f bodyFields) enum(key string, required bool, def string, allowed []string) string {
	raw, ok := f.get(key, required)
	if !ok {
		return def
	}
	s, isStr := raw.(string)
	if !isStr {
		f.v.add(f.name(key), "must be one of "+strings.Join(allowed, ", "))
		return def
	}
	f.v.oneOf(f.name(key), s, allowed...)
	return s
}

// money is a required number from 0 to orderMaxMoney.
func (f bodyFields) money(key string) *float64 {
	raw, ok := f.get(key, true)
	if !ok {
		return nil
	}
	n, isNum := orderNumber(raw)
	switch {
	case !isNum:
		f.v.add(f.name(key), "must be a number")
	case n < 0:
		f.v.add(f.name(key), "must be at least 0")
	case n > orderMaxMoney:
		f.v.add(f.name(key), fmt.Sprintf("must be at most %.2f", orderMaxMoney))
	default:
		return &n
	}
	return nil
}

// quantity is a required positive integer.
func (f bodyFields) quantity(key string) {
	raw, ok := f.get(key, true)
	if !ok {
		return
	}
	n, isNum := orderNumber(raw)
	if !isNum || n < 1 || n != math.Trunc(n) || n > orderMaxQuantity {
		f.v.add(f.name(key), fmt.Sprintf("must be a positive integer (at most %d)", orderMaxQuantity))
	}
}

// boolean is a required true or false.
func (f bodyFields) requiredBool(key string) {
	raw, ok := f.get(key, true)
	if !ok {
		return
	}
	if _, isBool := raw.(bool); !isBool {
		f.v.add(f.name(key), "must be a boolean")
	}
}

// rawObject is an object kept as JSON; nil when absent.
func (f bodyFields) rawObject(key string, required bool) json.RawMessage {
	o, ok := f.object(key, required)
	if !ok {
		return nil
	}
	return orderJSONOf(o.m)
}

// tags is an optional array of 1-100 character strings.
func (f bodyFields) tags(key string) []string {
	raw, ok := f.get(key, false)
	if !ok {
		return nil
	}
	arr, isArr := raw.([]any)
	if !isArr {
		f.v.add(f.name(key), "must be an array of strings")
		return nil
	}
	if len(arr) > orderMaxTags {
		f.v.add(f.name(key), fmt.Sprintf("must have at most %d tags", orderMaxTags))
		return nil
	}
	out := make([]string, 0, len(arr))
	for i, it := range arr {
		name := fmt.Sprintf("%s[%d]", f.name(key), i)
		s, isStr := it.(string)
		s = strings.TrimSpace(s)
		switch {
		case !isStr:
			f.v.add(name, "must be a string")
		case s == "" || utf8.RuneCountInString(s) > orderMaxTagLen:
			f.v.add(name, fmt.Sprintf("must be 1-%d characters", orderMaxTagLen))
		default:
			out = append(out, s)
		}
	}
	return out
}

// lineItems is the required, non-empty array of line items, kept as JSON.
func (f bodyFields) lineItems(key string) json.RawMessage {
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
		f.v.add(f.name(key), "must contain at least one line item")
		return nil
	case len(arr) > orderMaxLineItems:
		f.v.add(f.name(key), fmt.Sprintf("must contain at most %d line items", orderMaxLineItems))
		return nil
	}
	for i, it := range arr {
		path := fmt.Sprintf("%s[%d]", f.name(key), i)
		m, isObj := it.(map[string]any)
		if !isObj {
			f.v.add(path, "must be an object")
			continue
		}
		li := bodyFields{v: f.v, path: path, m: m}
		li.str("sku", true, 255)
		li.str("name", true, 500)
		li.quantity("quantity")
		li.money("unitPrice")
		li.money("totalPrice")
		li.requiredBool("requiresShipping")
		li.requiredBool("taxable")
	}
	return orderJSONOf(arr)
}

func isCurrencyCode(s string) bool {
	if len(s) != 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}

// parseOrderTime reads an ISO 8601 timestamp (a date or a time without a
// zone is UTC).
func parseOrderTime(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// orderJSONOf encodes a value decoded from JSON (it cannot fail) as
// json.Marshal does, without its reflection (appendJSONValue).
func orderJSONOf(v any) json.RawMessage {
	raw, _ := appendJSONValue(nil, v)
	return raw
}

// orderNullable is nil for "", so an empty value is written as null.
func orderNullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
