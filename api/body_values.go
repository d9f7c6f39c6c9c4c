package api

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
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
