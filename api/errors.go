package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/fos-dev/fos/domain"
)

// Error is an API error: a status, a machine code, a message for people and
// optional field details. Every error response has this shape (CONTRACT 4).
type Error struct {
	Status  int          `json:"-"`
	Code    string       `json:"code"`
	Message string       `json:"message"`
	Details []FieldError `json:"details,omitempty"`
	// RetryAfter, when set, is sent as the Retry-After header (429).
	RetryAfter time.Duration `json:"-"`
}

// FieldError names one offending field.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// Constructors for the statuses of CONTRACT section 4.
func errBadRequest(code, msg string) *Error { return &Error{Status: 400, Code: code, Message: msg} }
func errValidation(details ...FieldError) *Error {
	msg := "the request is invalid"
	if len(details) > 0 {
		parts := make([]string, 0, len(details))
		for _, d := range details {
			parts = append(parts, d.Field+" "+d.Message)
		}
		msg = strings.Join(parts, "; ")
	}
	return &Error{Status: 400, Code: "validation_error", Message: msg, Details: details}
}
func errUnauthorized(msg string) *Error {
	return &Error{Status: 401, Code: "unauthorized", Message: msg}
}
func errForbidden(msg string) *Error { return &Error{Status: 403, Code: "forbidden", Message: msg} }
func errNotFound(what string) *Error {
	return &Error{Status: 404, Code: "not_found", Message: what + " not found"}
}

func errConflict(msg string) *Error { return &Error{Status: 409, Code: "conflict", Message: msg} }
func errGone(msg string) *Error     { return &Error{Status: 410, Code: "gone", Message: msg} }

// errRateLimited is 429 rate_limited; the client may retry after wait.
func errRateLimited(msg string, wait time.Duration) *Error {
	return &Error{Status: http.StatusTooManyRequests, Code: "rate_limited", Message: msg, RetryAfter: wait}
}

// respondError writes err in the contract's shape. Domain errors and the
// store's sentinels (domain.ErrNoRecord, …) are mapped here, in one place; anything unexpected is a 500 that is logged with the
// request id and never shown to the client.
func (s *Server) respondError(w http.ResponseWriter, r *http.Request, err error) {
	var apiErr *Error
	var domErr *domain.Error
	switch {
	case errors.As(err, &apiErr):
	case errors.As(err, &domErr):
		apiErr = fromDomain(domErr)
	case errors.Is(err, domain.ErrNoRecord):
		apiErr = errNotFound("resource")
	case errors.Is(err, domain.ErrRecordInvalid):
		apiErr = errValidation(FieldError{Field: "body", Message: "contains a value the service cannot store"})
	case errors.Is(err, domain.ErrRecordConflict):
		apiErr = errConflict("the resource conflicts with an existing one")
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The client went away; nobody reads the answer.
		return
	default:
		s.log.ErrorContext(r.Context(), "internal error", "request_id", requestIDFrom(r.Context()), "method", r.Method, "path", logPath(r.URL.Path), "error", err.Error())
		apiErr = &Error{Status: 500, Code: "internal", Message: "internal server error; quote request id " + requestIDFrom(r.Context())}
	}
	if apiErr.Status >= 500 && apiErr.Code != "internal" {
		s.log.WarnContext(r.Context(), "upstream error", "request_id", requestIDFrom(r.Context()), "code", apiErr.Code, "error", apiErr.Message)
	}
	if apiErr.RetryAfter > 0 {
		w.Header().Set("Retry-After", retryAfterSeconds(apiErr.RetryAfter))
	}
	writeJSON(w, apiErr.Status, map[string]any{"error": apiErr})
}

// logAttrs is a small helper for handlers that log.
func logAttrs(r *http.Request) []any {
	return []any{slog.String("request_id", requestIDFrom(r.Context()))}
}

// domainStatus is the HTTP status and default code of each domain error
// kind: the one place a domain refusal becomes a status.
var domainStatus = map[domain.Kind]struct {
	status int
	code   string
}{
	domain.KindInvalid:      {http.StatusBadRequest, "validation_error"},
	domain.KindNotFound:     {http.StatusNotFound, "not_found"},
	domain.KindConflict:     {http.StatusConflict, "conflict"},
	domain.KindGone:         {http.StatusGone, "gone"},
	domain.KindForbidden:    {http.StatusForbidden, "forbidden"},
	domain.KindUnauthorized: {http.StatusUnauthorized, "unauthorized"},
	domain.KindUpstream:     {http.StatusBadGateway, "upstream_error"},
	domain.KindUnavailable:  {http.StatusServiceUnavailable, "unavailable"},
	domain.KindRateLimited:  {http.StatusTooManyRequests, "rate_limited"},
}

// fromDomain is the API error of a domain error.
func fromDomain(e *domain.Error) *Error {
	m, ok := domainStatus[e.Kind]
	if !ok {
		m.status, m.code = http.StatusInternalServerError, "internal"
	}
	out := &Error{Status: m.status, Code: e.Code, Message: e.Message}
	if out.Code == "" {
		out.Code = m.code
	}
	for _, f := range e.Fields {
		out.Details = append(out.Details, FieldError{Field: f.Field, Message: f.Message})
	}
	if e.RetryAfterSeconds > 0 {
		out.RetryAfter = time.Duration(e.RetryAfterSeconds) * time.Second
	}
	return out
}
