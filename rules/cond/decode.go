package cond

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
)

// Decode reads a conditions array from a request body decoded into Go
// values (map[string]any, []any, json.Number or float64, ...) and checks
// every element as Compile would, naming each problem by its JSON path
// under path (conditions[2].operator). It needs between minN and maxN
// elements. The conditions come back ready to store; nil errors mean they
// compile.
func Decode(raw any, path string, minN, maxN int) ([]Condition, []FieldError) {
	arr, ok := raw.([]any)
	if !ok {
		return nil, []FieldError{{Field: path, Message: "must be an array of conditions"}}
	}
	if len(arr) < minN || len(arr) > maxN {
		return nil, []FieldError{{Field: path, Message: fmt.Sprintf("must hold %d-%d conditions", minN, maxN)}}
	}
	var errs []FieldError
	out := make([]Condition, 0, len(arr))
	for i, el := range arr {
		at := fmt.Sprintf("%s[%d]", path, i)
		m, ok := el.(map[string]any)
		if !ok {
			errs = append(errs, FieldError{Field: at, Message: "must be an object"})
			continue
		}
		var c Condition
		bad := false
		for _, k := range []string{"field", "operator"} {
			s, isStr := m[k].(string)
			switch {
			case m[k] == nil:
				errs = append(errs, FieldError{Field: at + "." + k, Message: "is required"})
				bad = true
			case !isStr:
				errs = append(errs, FieldError{Field: at + "." + k, Message: "must be a string"})
				bad = true
			case k == "field":
				c.Field = s
			default:
				c.Operator = s
			}
		}
		c.Value = m["value"]
		if raw, present := m["setId"]; present && raw != nil {
			s, isStr := raw.(string)
			id, err := uuid.Parse(s)
			if !isStr || err != nil {
				errs = append(errs, FieldError{Field: at + ".setId", Message: "must be a UUID"})
				bad = true
			} else {
				c.SetID = &id
			}
		}
		if c.Operator == OpInSet || c.Operator == OpNotInSet || c.Operator == OpExists || c.Operator == OpNotExists {
			c.Value = nil // not used: not stored
		}
		if bad {
			continue
		}
		if _, field, err := compileOne(c); err != nil {
			errs = append(errs, FieldError{Field: at + "." + field, Message: err.Error()})
			continue
		}
		out = append(out, c)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// DecodeDoc decodes a JSON document for evaluation (numbers exact).
func DecodeDoc(raw []byte) (any, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}
