package carriers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Sentinel errors. Adapter failures are *Error values that match one of
// these with errors.Is when the case is one callers act on.
var (
	// ErrNotSupported: the carrier does not offer the operation.
	ErrNotSupported = errors.New("carriers: operation not supported by this carrier")
	// ErrUnknownCarrier: no adapter for the carrier code.
	ErrUnknownCarrier = errors.New("carriers: unknown carrier")
	// ErrUnauthorized: the carrier refused the credentials (HTTP 401/403,
	// an OAuth token refusal, a bad API key). Not retryable.
	ErrUnauthorized = errors.New("carriers: credentials refused")
	// ErrInvalidRequest: the request was refused as invalid before or by
	// the carrier (HTTP 400/422 not covered by a more specific error).
	ErrInvalidRequest = errors.New("carriers: invalid request")
	// ErrNotFound: the carrier does not know the shipment, tracking number
	// or pickup the call names.
	ErrNotFound = errors.New("carriers: not found")
	// ErrAccountNotFound: carrier_a registration, the account number is
	// unknown to the carrier.
	ErrAccountNotFound = errors.New("carriers: account number not found")
	// ErrAddressInvalid: carrier_a registration, the address does not match
	// the account's address on file.
	ErrAddressInvalid = errors.New("carriers: address does not match the account")
	// ErrVerificationFailed: carrier_a registration, wrong or expired PIN, or
	// an invoice the carrier cannot match.
	ErrVerificationFailed = errors.New("carriers: verification failed")
	// ErrSessionExpired: carrier_a registration, the state returned by
	// RegisterAddress expired; start again with RegisterAddress.
	ErrSessionExpired = errors.New("carriers: registration session expired")
	// ErrNotConfigured: the adapter lacks configuration (e.g. carrier_a's
	// platform client id/secret outside the sandbox).
	ErrNotConfigured = errors.New("carriers: adapter not configured")
	// ErrRateLimited: the carrier throttled the call (HTTP 429). The request
	// was refused, not carried out; Error.RetryAfter says when the carrier
	// takes calls again (0 when it did not say).
	ErrRateLimited = errors.New("carriers: rate limited by the carrier")
)

// Error codes of *Error for failures that carry no carrier code.
const (
	ErrCodeNetwork      = "network_error"
	ErrCodeBadResponse  = "bad_response"
	ErrCodeNotSupported = "not_supported"
	ErrCodeUnknown      = "unknown_carrier"
	ErrCodeInvalid      = "invalid_request"
	ErrCodeNotConfig    = "not_configured"
	ErrCodeHTTP         = "http_error"
)

// Error is a failed carrier call.
//
// Code is the carrier's own error code when the carrier answered (FedEx
// "NOT.AUTHORIZED.ERROR", UPS "250002", carrier_c "unauthorized", …), else
// one of the ErrCode* values. StatusCode is the carrier's HTTP status (0
// when none was received). Retryable: network errors, timeouts, 429 and 5xx.
type Error struct {
	Carrier    string `json:"carrier"`
	Code       string `json:"code"`
	Message    string `json:"message"`
	StatusCode int    `json:"statusCode"`
	Retryable  bool   `json:"retryable"`
	// RetryAfter (rate-limited answers, ErrRateLimited) is how long the
	// carrier asked the caller to wait, from its Retry-After / quota-reset
	// headers or its documented window; 0 when unknown.
	RetryAfter time.Duration `json:"retryAfter,omitempty"`

	kind  error // sentinel matched by Is
	cause error
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Carrier)
	if b.Len() == 0 {
		b.WriteString("carrier")
	}
	b.WriteString(" error")
	if e.StatusCode > 0 {
		fmt.Fprintf(&b, " %d", e.StatusCode)
	}
	if e.Code != "" {
		b.WriteString(" " + e.Code)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	return b.String()
}

// Unwrap returns the underlying cause (network or context error), if any.
func (e *Error) Unwrap() error { return e.cause }

// Is matches the sentinel errors of the package.
func (e *Error) Is(target error) bool {
	return e.kind != nil && target == e.kind
}

// IsRetryable reports whether err may succeed if the same call is repeated:
// an *Error with Retryable, or any other non-nil error that is not a
// context cancellation.
func IsRetryable(err error) bool {
	if err == nil {
		return false
	}
	var ce *Error
	if errors.As(err, &ce) {
		return ce.Retryable
	}
	return !errors.Is(err, context.Canceled)
}

// AsError returns err as an *Error, if it is one.
func AsError(err error) (*Error, bool) {
	var ce *Error
	ok := errors.As(err, &ce)
	return ce, ok
}

func notSupported(carrier, op string) *Error {
	return &Error{Carrier: carrier, Code: ErrCodeNotSupported, Message: carrier + " does not support " + op, kind: ErrNotSupported}
}

func invalidRequest(carrier, msg string) *Error {
	return &Error{Carrier: carrier, Code: ErrCodeInvalid, Message: msg, kind: ErrInvalidRequest}
}

func notConfigured(carrier, msg string) *Error {
	return &Error{Carrier: carrier, Code: ErrCodeNotConfig, Message: msg, kind: ErrNotConfigured}
}

func badResponse(carrier, msg string, cause error) *Error {
	if cause != nil {
		msg += ": " + cause.Error()
	}
	return &Error{Carrier: carrier, Code: ErrCodeBadResponse, StatusCode: http.StatusOK, Message: msg, cause: cause}
}

// statusError builds the *Error of an HTTP error answer from the carrier's
// code and message; kind refines the sentinel (nil: from the status).
func statusError(carrier string, status int, code, msg string, kind error) *Error {
	if msg == "" {
		msg = http.StatusText(status)
	}
	if code == "" {
		code = ErrCodeHTTP
	}
	e := &Error{Carrier: carrier, Code: code, Message: msg, StatusCode: status, kind: kind}
	switch {
	case status == http.StatusTooManyRequests, status == http.StatusRequestTimeout, status >= 500:
		e.Retryable = true
	}
	if status == http.StatusTooManyRequests {
		e.kind = ErrRateLimited
	}
	if e.kind == nil {
		switch {
		case status == http.StatusUnauthorized || status == http.StatusForbidden:
			e.kind = ErrUnauthorized
		case status == http.StatusNotFound:
			e.kind = ErrNotFound
		case status == http.StatusBadRequest || status == http.StatusUnprocessableEntity:
			e.kind = ErrInvalidRequest
		}
	}
	return e
}

// retryAfterHeader reads a Retry-After header: delay-seconds or an
// HTTP-date (RFC 9110 10.2.3); 0 when absent or unreadable.
func retryAfterHeader(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil {
		return max(0, time.Duration(n)*time.Second)
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, t.Sub(now))
	}
	return 0
}

// rateLimited fills in RetryAfter of a 429 answer (no-op otherwise):
// the Retry-After header, else what the carrier-specific fallback says.
func rateLimited(e *Error, h http.Header, now time.Time, fallback func() time.Duration) *Error {
	if e.StatusCode != http.StatusTooManyRequests {
		return e
	}
	e.RetryAfter = retryAfterHeader(h, now)
	if e.RetryAfter == 0 && fallback != nil {
		e.RetryAfter = fallback()
	}
	return e
}
