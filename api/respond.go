package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/fos-dev/fos/domain"
)

// writeJSON encodes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"error":{"code":"internal","message":"internal server error"}}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(body)
	_, _ = w.Write([]byte("\n"))
}

// envelope is the single-object response {data: ...}.
type envelope struct {
	Data any `json:"data"`
}

func writeData(w http.ResponseWriter, status int, v any) { writeJSON(w, status, envelope{Data: v}) }

func writeSuccess(w http.ResponseWriter) {
	writeJSON(w, http.StatusOK, map[string]bool{"success": true})
}

// decodeJSON reads the request body into dst. A body that is not JSON is
// 400 invalid_json; a field of the wrong type is 400 validation_error naming
// the field; a body over the limit is 413. Unknown fields are ignored.
func decodeJSON(r *http.Request, dst any) error {
	return decodeBody(r, dst, false)
}

// decodeOptionalJSON is decodeJSON for endpoints whose body may be empty.
func decodeOptionalJSON(r *http.Request, dst any) error {
	return decodeBody(r, dst, true)
}

func decodeBody(r *http.Request, dst any, optional bool) error {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &Error{Status: http.StatusRequestEntityTooLarge, Code: "payload_too_large", Message: fmt.Sprintf("request body exceeds %d bytes", tooBig.Limit)}
		}
		return errBadRequest("invalid_json", "could not read the request body")
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		if optional {
			return nil
		}
		return errBadRequest("invalid_json", "request body must be a JSON object")
	}
	if hasNULEscape(raw) {
		return errValidation(FieldError{Field: "body", Message: "strings must not contain NUL (\\u0000) characters"})
	}
	if b, ok := dst.(*jsonBody); ok {
		// Already decoded (and checked) by validateRequest.
		if pb, ok := preParsedBody(r); ok {
			if len(pb.errs) > 0 {
				return errValidation(pb.errs...)
			}
			*b = pb.m
			return nil
		}
	}
	if b, ok := dst.(*jsonBody); ok && decodeObject(raw, b) {
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			field := typeErr.Field
			if field == "" {
				return errBadRequest("invalid_json", "request body must be a JSON object")
			}
			return errValidation(FieldError{Field: field, Message: "must be " + jsonKind(typeErr.Type.Kind().String())})
		}
		var timeErr *time.ParseError
		if errors.As(err, &timeErr) || strings.Contains(err.Error(), "Time.UnmarshalJSON") {
			return errValidation(FieldError{Field: badTimeField(raw, dst), Message: "must be an ISO 8601 timestamp"})
		}
		return errBadRequest("invalid_json", "request body is not valid JSON: "+err.Error())
	}
	return nil
}

// decodeObject decodes a JSON object into b with numbers kept as written,
// reading the text twice (scan, decode) where json.Unmarshal into a jsonBody
// reads it three times (validate, then scan and decode again inside its
// UnmarshalJSON). It reports false on anything but a well-formed object
// with nothing after it, and decodeBody then takes the usual path so the
// error is the same as ever.
func decodeObject(raw []byte, b *jsonBody) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil || m == nil || len(bytes.TrimSpace(raw[dec.InputOffset():])) != 0 {
		return false
	}
	*b = m
	return true
}

// hasNULEscape reports whether a JSON text holds a \u0000 escape inside a
// string (PostgreSQL text and jsonb cannot store NUL). A raw NUL byte is
// already invalid JSON.
func hasNULEscape(raw []byte) bool {
	for i := 0; i+5 < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if string(raw[i+1:i+6]) == "u0000" {
			return true
		}
		i++ // skip the escaped character, so "\\\\u0000" is not a match
	}
	return false
}

var timeType = reflect.TypeOf(time.Time{})

// badTimeField finds which time.Time field of dst the JSON text fails to
// fill, as a path like "expires_at" or "items[2].shippedAt", so a bad
// timestamp is reported against its field. "body" when it cannot tell.
func badTimeField(raw []byte, dst any) string {
	var doc any
	if json.Unmarshal(raw, &doc) != nil {
		return "body"
	}
	if path := findBadTime(reflect.TypeOf(dst), doc, ""); path != "" {
		return path
	}
	return "body"
}

func findBadTime(t reflect.Type, v any, path string) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || v == nil {
		return ""
	}
	switch {
	case t == timeType:
		str, ok := v.(string)
		if !ok {
			return path
		}
		if _, err := time.Parse(time.RFC3339Nano, str); err != nil {
			return path
		}
	case t.Kind() == reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			sub := name
			if path != "" {
				sub = path + "." + name
			}
			if p := findBadTime(f.Type, obj[name], sub); p != "" {
				return p
			}
		}
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		arr, ok := v.([]any)
		if !ok {
			return ""
		}
		for i, el := range arr {
			if p := findBadTime(t.Elem(), el, fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	}
	return ""
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int32", "int64", "float32", "float64", "uint", "uint32", "uint64":
		return "a number"
	case "slice", "array":
		return "an array"
	case "map", "struct", "ptr":
		return "an object"
	}
	return "of another type"
}

// pageParams are the page and limit of a list request.
type pageParams struct {
	Page  int
	Limit int
}

func (p pageParams) Offset() int { return (p.Page - 1) * p.Limit }

// parsePage reads page and limit. A limit above max is clamped to max; a
// page or limit that is not a positive integer is 400.
func parsePage(r *http.Request, defLimit, maxLimit int) (pageParams, error) {
	p := pageParams{Page: 1, Limit: defLimit}
	var details []FieldError
	if v := r.URL.Query().Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			details = append(details, FieldError{Field: "page", Message: "must be a positive integer"})
		} else {
			p.Page = n
		}
	}
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			details = append(details, FieldError{Field: "limit", Message: "must be a positive integer"})
		} else {
			p.Limit = min(n, maxLimit)
		}
	}
	if len(details) > 0 {
		return p, errValidation(details...)
	}
	// Keep OFFSET within what PostgreSQL and int arithmetic accept.
	if p.Page > math.MaxInt32/p.Limit {
		return p, errValidation(FieldError{Field: "page", Message: "is too large"})
	}
	return p, nil
}

// Pagination is the list response's pagination object.
type Pagination struct {
	Page       int  `json:"page"`
	Limit      int  `json:"limit"`
	Total      int  `json:"total"`
	TotalPages int  `json:"totalPages"`
	HasMore    bool `json:"hasMore"`
}

func newPagination(p pageParams, total int) Pagination {
	pages := (total + p.Limit - 1) / p.Limit
	return Pagination{Page: p.Page, Limit: p.Limit, Total: total, TotalPages: pages, HasMore: p.Page < pages}
}

// writeList writes {data: [...], pagination}. A nil slice is written as [].
func writeList[T any](w http.ResponseWriter, items []T, p pageParams, total int) {
	if items == nil {
		items = []T{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": items, "pagination": newPagination(p, total)})
}

// fieldErrors gathers the problems of a request's parameters so that it
// answers with all of them at once (errValidation(details...)).
type fieldErrors []FieldError

// collect keeps the field errors of a validation error (*Error, or a
// domain's invalid input); a parameter parser returns no other kind.
func (f *fieldErrors) collect(err error) {
	var e *Error
	var de *domain.Error
	switch {
	case errors.As(err, &e):
		*f = append(*f, e.Details...)
	case errors.As(err, &de):
		*f = append(*f, fromDomain(de).Details...)
	}
}

// normalizedJSON is stored JSON written again through T's encoding, so
// rows stored before that encoding changed answer in today's shape (a
// condition without value, stored before cond.Condition wrote value: null).
// Anything that does not decode is returned as stored.
func normalizedJSON[T any](raw json.RawMessage) json.RawMessage {
	var v T
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	out, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return out
}

// mapSlice converts each item of a store list to its response shape.
func mapSlice[T, J any](list []T, conv func(T) J) []J {
	out := make([]J, 0, len(list))
	for _, v := range list {
		out = append(out, conv(v))
	}
	return out
}
