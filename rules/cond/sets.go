package cond

import (
	"errors"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// Value types of a condition set.
const (
	TypeString  = "string"
	TypeNumber  = "number"
	TypeBoolean = "boolean"
)

// ValueTypes are the valueType values of a condition set.
var ValueTypes = []string{TypeString, TypeNumber, TypeBoolean}

// Set is a condition set's values loaded for evaluation: a hash index, so a
// lookup costs the same for ten values or a million.
type Set struct {
	valueType string
	m         map[string]struct{}
}

// Sets are the loaded sets of one evaluation batch, by id.
type Sets map[uuid.UUID]*Set

// NewSet indexes values (already canonical, as the store keeps them).
func NewSet(valueType string, values []string) *Set {
	s := &Set{valueType: valueType, m: make(map[string]struct{}, len(values))}
	for _, v := range values {
		s.m[v] = struct{}{}
	}
	return s
}

// Len is the number of values.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.m)
}

// has reports whether a field value is in the set, reading it as the set's
// type: a number matches a number set by value (1.50 is 1.5) and a string
// set by its shortest text; a string holding a number matches a number
// set; true/false match a boolean set, as booleans or as "true"/"false".
// A nil set is empty.
func (s *Set) has(v any) bool {
	if s == nil || v == nil {
		return false
	}
	var key string
	switch x := v.(type) {
	case string:
		if s.valueType == TypeString {
			key = x
			break
		}
		k, err := Canonical(s.valueType, x)
		if err != nil {
			return false
		}
		key = k
	case bool:
		if s.valueType == TypeNumber {
			return false
		}
		key = strconv.FormatBool(x)
	case map[string]any, []any:
		return false
	default:
		f, ok := number(v)
		if !ok || s.valueType == TypeBoolean {
			return false
		}
		key = formatNumber(f)
	}
	_, ok := s.m[key]
	return ok
}

// Has is has for callers outside the package.
func (s *Set) Has(v any) bool { return s.has(v) }

// Canonical is the stored form of a set value of valueType: strings are
// kept as given, numbers in their shortest decimal form ("1.50" is "1.5",
// "1e3" is "1000"), booleans as "true" or "false" (any letter case). Two
// values with one canonical form are duplicates.
func Canonical(valueType, v string) (string, error) {
	switch valueType {
	case TypeString:
		return v, nil
	case TypeNumber:
		f, ok := parseNumber(strings.TrimSpace(v))
		if !ok {
			return "", errors.New("must be a number")
		}
		return formatNumber(f), nil
	case TypeBoolean:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			return "true", nil
		case "false":
			return "false", nil
		}
		return "", errors.New("must be true or false")
	}
	return "", errors.New("unknown value type")
}

func formatNumber(f float64) string {
	if f == 0 {
		return "0" // no "-0"
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}
