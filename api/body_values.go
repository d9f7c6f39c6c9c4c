package api

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Typed values of a request body (numbers, booleans, timestamps), shared by
// the handlers that read bodies with bodyFields.

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

// optionalBody decodes a body that may be empty.
func optionalBody(r *http.Request) (jsonBody, error) {
	var body jsonBody
	if r.ContentLength != 0 {
		if err := decodeJSON(r, &body); err != nil {
			return nil, err
		}
	}
	return body, nil
}

// rawText is a string field, trimmed ("" when sent as null: the domain
// decides whether it is required); nil when it is not a string.
func (f bodyFields) rawText(key string) *string {
	raw := f.m[key]
	if raw == nil {
		empty := ""
		return &empty
	}
	s, ok := raw.(string)
	if !ok {
		f.v.add(f.name(key), "must be a string")
		return nil
	}
	return &s
}

// integer is an integer field for the domain's bounds (nil: absent, or
// named here when it is not an integer); huge values are clamped.
func (f bodyFields) integer(key string) *int {
	n := f.number(key, false, math.Inf(-1), math.Inf(1), true)
	if n == nil {
		return nil
	}
	i := int(math.Max(math.Min(*n, math.MaxInt32), math.MinInt32))
	return &i
}

// uuids is an array of UUIDs as sent (repeats kept: the domain counts
// and drops them); nil when it is null (named when required) or not an
// array of UUIDs.
func (f bodyFields) uuids(key string, required bool) []uuid.UUID {
	raw, ok := f.get(key, required)
	if !ok {
		return nil
	}
	arr, isArr := raw.([]any)
	if !isArr {
		f.v.add(f.name(key), "must be an array of UUIDs")
		return nil
	}
	out := make([]uuid.UUID, 0, len(arr))
	for i, el := range arr {
		str, isStr := el.(string)
		u, err := uuid.Parse(str)
		if !isStr || err != nil {
			f.v.add(fmt.Sprintf("%s[%d]", f.name(key), i), "must be a UUID")
			return nil
		}
		out = append(out, u)
	}
	return out
}

// Lenient readers of a body the document has checked (decodeCheckedJSON):
// a value of the wrong type reads as absent, or as a value the domain
// refuses, and the schema's detail names it.

// textOf is a string value trimmed ("" when it is none).
func textOf(raw any) string {
	s, _ := raw.(string)
	return strings.TrimSpace(s)
}

// optionalText is a trimmed string value, nil when it is none or blank.
func optionalText(raw any) *string {
	if s := textOf(raw); s != "" {
		return &s
	}
	return nil
}

// uuidOf is a UUID value (uuid.Nil when it is none).
func uuidOf(raw any) uuid.UUID {
	id, err := uuid.Parse(textOf(raw))
	if err != nil {
		return uuid.Nil
	}
	return id
}

// numberOf is a number value: NaN when it is none, which every bound of
// the domain refuses.
func numberOf(raw any) float64 {
	n, ok := rateNumber(raw)
	if !ok {
		return math.NaN()
	}
	return n
}

// objectOf is an object value (nil when it is none).
func objectOf(raw any) map[string]any {
	m, _ := raw.(map[string]any)
	return m
}

// rawTextOf is rawText's lenient reader: "" for null, nil when not a
// string.
func rawTextOf(raw any) *string {
	if raw == nil {
		empty := ""
		return &empty
	}
	if s, ok := raw.(string); ok {
		return &s
	}
	return nil
}

// integerOf is integer's lenient reader (nil when not a number; a
// fraction is truncated, huge values are clamped).
func integerOf(raw any) *int {
	n, ok := rateNumber(raw)
	if !ok {
		return nil
	}
	i := int(math.Max(math.Min(math.Trunc(n), math.MaxInt32), math.MinInt32))
	return &i
}

// uuidsOf is uuids' lenient reader: the array's UUIDs (nil when it is not
// an array of UUIDs).
func uuidsOf(raw any) []uuid.UUID {
	arr, ok := raw.([]any)
	if !ok {
		return nil
	}
	out := make([]uuid.UUID, 0, len(arr))
	for _, el := range arr {
		str, isStr := el.(string)
		u, err := uuid.Parse(str)
		if !isStr || err != nil {
			return nil
		}
		out = append(out, u)
	}
	return out
}

// timestampOf is timestamp's lenient reader (nil when absent or not an
// ISO 8601 timestamp).
func timestampOf(raw any) *time.Time {
	if t, ok := parseOrderTime(textOf(raw)); ok {
		return &t
	}
	return nil
}

// nameDescription reads the name and description of a routing body
// (condition sets, split rules, dispatchers, transformations): each when
// sent, or on create, where absent or null reads as "" for the domain to
// require; nil when it is not a string (the document names it).
func nameDescription(body jsonBody, create bool) (name, description *string) {
	if _, sent := body["name"]; sent || create {
		name = rawTextOf(body["name"])
	}
	if _, sent := body["description"]; sent || create {
		description = rawTextOf(body["description"])
	}
	return name, description
}
