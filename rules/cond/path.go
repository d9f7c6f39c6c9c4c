package cond

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxFieldLen bounds a field path (Part 1 Limits: 1-200 characters).
const MaxFieldLen = 200

// maxPathSegments bounds how deep a path may reach.
const maxPathSegments = 32

// step is one segment of a compiled path: a key, then optionally [] (every
// element) or [n] (one element).
type step struct {
	key   string
	fan   bool // name[]
	index int  // name[n]; -1 when absent
}

// topLevelAliases lets a path start with the snake_case name of an order
// field (line_items.sku), as the create body spells it; paths are
// otherwise the camelCase of the order as the API returns it.
var topLevelAliases = map[string]string{
	"line_items": "lineItems", "shipping_address": "shippingAddress", "billing_address": "billingAddress",
	"source_data": "sourceData", "order_number": "orderNumber", "external_id": "externalId",
	"bridge_id": "bridgeId", "payment_status": "paymentStatus", "fulfillment_status": "fulfillmentStatus",
	"ordered_at": "orderedAt", "created_at": "createdAt", "updated_at": "updatedAt",
	"organization_id": "organizationId",
}

// parsePath compiles a dot path such as totals.total, lineItems[].sku,
// lineItems[0].sku or metadata.channel.
func parsePath(s string) ([]step, error) {
	if s == "" {
		return nil, errors.New("is required")
	}
	if utf8.RuneCountInString(s) > MaxFieldLen {
		return nil, errors.New("must be at most 200 characters")
	}
	parts := strings.Split(s, ".")
	if len(parts) > maxPathSegments {
		return nil, errors.New("has too many segments")
	}
	steps := make([]step, 0, len(parts))
	for i, p := range parts {
		st := step{index: -1}
		if open := strings.IndexByte(p, '['); open >= 0 {
			if !strings.HasSuffix(p, "]") {
				return nil, errors.New("must be a dot path like lineItems[].sku (a bracket is not closed)")
			}
			inner := p[open+1 : len(p)-1]
			p = p[:open]
			if inner == "" {
				st.fan = true
			} else {
				n, err := strconv.Atoi(inner)
				if err != nil || n < 0 || n > 1_000_000 {
					return nil, errors.New("must be a dot path like lineItems[].sku ([n] takes a non-negative integer)")
				}
				st.index = n
			}
		}
		if p == "" || !validKey(p) {
			return nil, errors.New("must be a dot path like lineItems[].sku (segments of letters, digits, _ or -)")
		}
		if i == 0 {
			if a, ok := topLevelAliases[p]; ok {
				p = a
			}
		}
		st.key = p
		steps = append(steps, st)
	}
	return steps, nil
}

func validKey(s string) bool {
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '$', r == '@':
		default:
			return false
		}
	}
	return true
}

// ValidPath reports why a dot path is not valid, or nil.
func ValidPath(s string) error {
	_, err := parsePath(s)
	return err
}

// walk visits every value the path reaches in v and reports whether test
// returned true for any of them. A missing key or an out-of-range index
// reaches nothing; a JSON null is reached (test sees nil). An array met
// before the last segment is fanned out (lineItems.sku is lineItems[].sku);
// the last segment's array is one value unless written name[].
func walk(v any, steps []step, test func(any) bool) bool {
	if len(steps) == 0 {
		return test(v)
	}
	switch x := v.(type) {
	case map[string]any:
		st := steps[0]
		child, ok := x[st.key]
		if !ok {
			return false
		}
		switch {
		case st.index >= 0:
			arr, isArr := child.([]any)
			if !isArr || st.index >= len(arr) {
				return false
			}
			return walk(arr[st.index], steps[1:], test)
		case st.fan:
			arr, isArr := child.([]any)
			if !isArr {
				return false
			}
			for _, el := range arr {
				if walk(el, steps[1:], test) {
					return true
				}
			}
			return false
		}
		return walk(child, steps[1:], test)
	case []any:
		// Implicit fan-out over an array in the middle of a path.
		for _, el := range x {
			if walk(el, steps, test) {
				return true
			}
		}
	}
	return false
}

// Values returns every value a path reaches in doc (nil for a null), in
// document order; an invalid path reaches nothing. Split rules use it for
// field_group keys.
func Values(doc any, path string) []any {
	steps, err := parsePath(path)
	if err != nil {
		return nil
	}
	var out []any
	walk(doc, steps, func(v any) bool { out = append(out, v); return false })
	return out
}
