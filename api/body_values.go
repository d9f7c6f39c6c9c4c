package api

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
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
