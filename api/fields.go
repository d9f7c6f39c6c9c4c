package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// bodyFields reads one JSON object of a request body (decoded as
// map[string]any) and adds a field error for every problem, with paths
// like line_items[0].sku, so one response names them all. A JSON null
// counts as absent.
type bodyFields struct {
	v    *validator
	path string // "" for the body itself
	m    map[string]any
}

func (f bodyFields) name(key string) string {
	if f.path == "" {
		return key
	}
	return f.path + "." + key
}

func (f bodyFields) get(key string, required bool) (any, bool) {
	raw := f.m[key]
	if raw == nil && required {
		f.v.add(f.name(key), "is required")
	}
	return raw, raw != nil
}

// str is a trimmed string of at most max characters; blank is absent.
func (f bodyFields) str(key string, required bool, max int) *string {
	raw, ok := f.get(key, required)
	if !ok {
		return nil
	}
	s, isStr := raw.(string)
	if !isStr {
		f.v.add(f.name(key), "must be a string")
		return nil
	}
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		if required {
			f.v.add(f.name(key), "is required")
		}
		return nil
	case utf8.RuneCountInString(s) > max:
		f.v.add(f.name(key), fmt.Sprintf("must be at most %d characters", max))
		return nil
	}
	return &s
}

// object is a nested object.
func (f bodyFields) object(key string, required bool) (bodyFields, bool) {
	raw, ok := f.get(key, required)
	if !ok {
		return bodyFields{}, false
	}
	m, isObj := raw.(map[string]any)
	if !isObj {
		f.v.add(f.name(key), "must be an object")
		return bodyFields{}, false
	}
	return bodyFields{v: f.v, path: f.name(key), m: m}, true
}

// jsonBody is a request body decoded as an object with its numbers kept as
// written (json.Number), so large integer ids inside metadata, source data,
// raw carrier responses or addresses are stored exactly, not rounded
// through float64.
type jsonBody map[string]any

func (b *jsonBody) UnmarshalJSON(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			// Not an object: reported by decodeJSON as invalid_json.
			return &json.UnmarshalTypeError{Value: typeErr.Value, Type: typeErr.Type}
		}
		return err
	}
	*b = m
	return nil
}
