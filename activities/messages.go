package activities

import (
	"context"
	"errors"
	"regexp"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/platforms"
)

// InternalFailureMessage replaces a failure text that would show a tenant
// the service's internals (addresses, URLs, Go error text). The full error
// stays in the logs.
const InternalFailureMessage = "the call failed; the details are in the service's logs"

// TenantMessage is what a tenant may read of a failure, in an API body or
// a stored field (lastError, an order activity's description, an item's
// error): a carrier's or platform's own business message (an "invalid
// postal code" refusal) is kept; network errors, timeouts, undecodable
// answers and any other Go error become a stable sentence. Every place
// that shows a failure to a tenant goes through it (or TenantText for a
// message already flattened to text); log the error itself beside it.
func TenantMessage(err error) string {
	if err == nil {
		return ""
	}
	var pe *platforms.Error
	var appErr *temporal.ApplicationError
	var timeoutErr *temporal.TimeoutError
	switch {
	case errors.As(err, new(*carriers.Error)):
		return CarrierErrorMessage(err)
	case errors.As(err, &pe):
		return platformMessage(pe)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &timeoutErr):
		return "the call did not complete in time"
	case errors.Is(err, context.Canceled):
		return "the call was cancelled"
	case errors.As(err, &appErr):
		// Activities build their messages for people; check them anyway.
		return TenantText(appErr.Message())
	}
	return InternalFailureMessage
}

// platformMessage is a platform error as a tenant may read it.
func platformMessage(pe *platforms.Error) string {
	switch pe.Code {
	case platforms.CodeNetwork:
		return "the platform could not be reached"
	case platforms.CodeBadResponse:
		return "the platform's answer could not be read"
	}
	msg := TenantText(pe.Message)
	if msg == InternalFailureMessage || pe.Code == "" {
		return msg
	}
	return msg + " (" + pe.Code + ")"
}

// internalText matches what only the service's own plumbing writes: URLs,
// IP addresses, host:port pairs and the usual Go network, TLS, JSON and
// database error texts.
var internalText = regexp.MustCompile(`(?i)` + strings.Join([]string{
	`[a-z][a-z0-9+.-]*://`,                                  // a URL
	`\b\d{1,3}(?:\.\d{1,3}){3}\b`,                           // an IPv4 address
	`\[[0-9a-f:]*:[0-9a-f:.%a-z]*\]`,                        // a bracketed IPv6 address
	`\b(?:localhost|[a-z0-9-]+(?:\.[a-z0-9-]+)+):\d{1,5}\b`, // host:port
	`\bdial (?:tcp|udp|unix)\b`, `\blookup \S+`, `connection refused`, `connection reset`,
	`no such host`, `i/o timeout`, `broken pipe`, `\bEOF\b`, `\bx509:`, `\btls:`, `\bhttp2:`,
	`net/http`, `context deadline exceeded`, `context canceled`, `\bjson: `, `invalid character`,
	`unexpected end of JSON`, `cannot unmarshal`, `\bSQLSTATE\b`, `\bpgx\b`, `goroutine \d+`, `panic:`,
}, "|"))

// TenantText is TenantMessage for a message already flattened to text (an
// application error's message, a stored failure): the message itself when
// it shows nothing of the service's internals, else InternalFailureMessage.
func TenantText(msg string) string {
	msg = strings.TrimSpace(msg)
	if msg == "" || !internalText.MatchString(msg) {
		return msg
	}
	return InternalFailureMessage
}
