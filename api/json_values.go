package api

import (
	"encoding/json"
	"slices"
	"strconv"
)

// appendJSONValue appends v, a value decoded from JSON with numbers kept
// as written (map[string]any, []any, string, json.Number, bool, nil), as
// json.Marshal writes it (keys sorted, strings escaped alike) without its
// reflection: POST /orders keeps its customer, line items and totals as
// JSON this way. Anything else goes to json.Marshal.
func appendJSONValue(buf []byte, v any) ([]byte, error) {
	switch t := v.(type) {
	case nil:
		return append(buf, "null"...), nil
	case bool:
		return strconv.AppendBool(buf, t), nil
	case string:
		return appendJSONString(buf, t), nil
	case json.Number:
		// A json.Number from a decoder is a valid JSON number, written as
		// json.Marshal writes it: as is.
		if t != "" {
			return append(buf, t...), nil
		}
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		buf = append(buf, '{')
		for i, k := range keys {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendJSONString(buf, k)
			buf = append(buf, ':')
			var err error
			if buf, err = appendJSONValue(buf, t[k]); err != nil {
				return nil, err
			}
		}
		return append(buf, '}'), nil
	case []any:
		buf = append(buf, '[')
		for i, el := range t {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = appendJSONValue(buf, el); err != nil {
				return nil, err
			}
		}
		return append(buf, ']'), nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(buf, raw...), nil
}

// appendJSONString quotes s as json.Marshal does: plain printable ASCII
// without ", \ and the HTML characters < > & is written as it is, any
// other string by json.Marshal.
func appendJSONString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			raw, _ := json.Marshal(s)
			return append(buf, raw...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}
