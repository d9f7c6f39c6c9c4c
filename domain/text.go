package domain

import (
	"regexp"
	"strings"
)

// InternalFailureMessage replaces a failure text that would show a tenant
// the service's internals (addresses, URLs, Go error text). The full error
// stays in the logs.
const InternalFailureMessage = "the call failed; the details are in the service's logs"

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

// TenantText is what a tenant may read of a failure already flattened to
// text (an application error's message, a stored failure): the message
// itself when it shows nothing of the service's internals, else
// InternalFailureMessage. Every place that shows a failure to a tenant
// goes through it (activities.TenantMessage for an error value).
func TenantText(msg string) string {
	msg = strings.TrimSpace(msg)
	if msg == "" || !internalText.MatchString(msg) {
		return msg
	}
	return InternalFailureMessage
}
