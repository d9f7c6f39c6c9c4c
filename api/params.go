package api

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
)

// Query and path parameters: each parser names the parameter in its 400.

// sortSpec is a whitelisted ORDER BY column and direction.
type sortSpec struct {
	Column string
	Desc   bool
}

// SQL renders "column DESC".
func (s sortSpec) SQL() string {
	if s.Desc {
		return s.Column + " DESC"
	}
	return s.Column + " ASC"
}

// parseSort reads sort and order against a whitelist mapping API field
// names to SQL columns. Anything else is 400, never interpolated.
func parseSort(r *http.Request, allowed map[string]string, defField string, defDesc bool) (sortSpec, error) {
	q := r.URL.Query()
	field := q.Get("sort")
	if field == "" {
		field = defField
	}
	col, ok := allowed[field]
	if !ok {
		names := make([]string, 0, len(allowed))
		for k := range allowed {
			names = append(names, k)
		}
		slices.Sort(names)
		return sortSpec{}, errValidation(FieldError{Field: "sort", Message: "must be one of " + strings.Join(names, ", ")})
	}
	spec := sortSpec{Column: col, Desc: defDesc}
	switch strings.ToLower(q.Get("order")) {
	case "":
	case "asc":
		spec.Desc = false
	case "desc":
		spec.Desc = true
	default:
		return sortSpec{}, errValidation(FieldError{Field: "order", Message: "must be asc or desc"})
	}
	return spec, nil
}

// pathID parses a UUID path parameter. A malformed id names no resource, so
// it is 404 like any other unknown id.
func pathID(r *http.Request, name, what string) (uuid.UUID, error) {
	id, err := uuid.Parse(chi.URLParam(r, name))
	if err != nil {
		return uuid.Nil, errNotFound(what)
	}
	return id, nil
}

// queryUUID parses an optional UUID query parameter.
func queryUUID(r *http.Request, name string) (*uuid.UUID, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return nil, nil
	}
	id, err := uuid.Parse(v)
	if err != nil {
		return nil, errValidation(FieldError{Field: name, Message: "must be a UUID"})
	}
	return &id, nil
}

// queryTime parses an optional ISO 8601 query parameter.
func queryTime(r *http.Request, name string) (*time.Time, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return nil, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return &t, nil
		}
	}
	return nil, errValidation(FieldError{Field: name, Message: "must be an ISO 8601 timestamp"})
}

// queryEnum reads an optional query parameter restricted to allowed values.
func queryEnum(r *http.Request, name string, allowed ...string) (string, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return "", nil
	}
	for _, a := range allowed {
		if v == a {
			return v, nil
		}
	}
	return "", errValidation(FieldError{Field: name, Message: "must be one of " + strings.Join(allowed, ", ")})
}
