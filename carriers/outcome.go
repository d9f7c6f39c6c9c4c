package carriers

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
)

// NotSent reports whether a failed carrier call provably never reached the
// carrier, so that repeating it cannot do twice what the carrier may have
// done once (buy a label, book a pickup, change a delivery): the
// connection was never made (connection refused, DNS failure, a dial that
// timed out, a TLS handshake that failed before any request byte was
// written), or the carrier answered 429 (it refused the call without
// acting on it).
//
// Every other failure is an unknown outcome: a timeout or a reset after
// the request was written, a 5xx, an answer that could not be read. Such a
// call must not be blindly repeated.
func NotSent(err error) bool {
	if err == nil {
		return false
	}
	if ce, ok := AsError(err); ok && ce.StatusCode != 0 {
		return ce.StatusCode == http.StatusTooManyRequests
	}
	var (
		opErr   *net.OpError
		dnsErr  *net.DNSError
		tlsRec  tls.RecordHeaderError
		tlsVer  *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
	)
	switch {
	case errors.As(err, &dnsErr):
		return true
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return true
	case errors.As(err, &tlsRec), errors.As(err, &tlsVer), errors.As(err, &unknown), errors.As(err, &host), errors.As(err, &invalid):
		// The handshake failed: no request byte was written.
		return true
	}
	return false
}

// Unanswered reports whether err is a failure whose outcome at the carrier
// is unknown: the call may have reached the carrier and been acted upon
// (see NotSent), and the carrier gave no definite answer (a timeout, a
// network failure after sending, a 5xx, an unreadable answer). A definite
// refusal (a 4xx other than 408 and 429) and a call refused before sending
// (ErrNotConfigured, ErrNotSupported, an invalid request the adapter
// refused) are not unanswered; NotSent failures are not either.
func Unanswered(err error) bool {
	if err == nil || NotSent(err) {
		return false
	}
	if errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		// Cancelled by the caller: the call may still have been sent.
		return true
	}
	ce, ok := AsError(err)
	if !ok {
		return true
	}
	switch {
	case ce.Code == ErrCodeNetwork, ce.Code == ErrCodeBadResponse:
		return true
	case ce.StatusCode == http.StatusRequestTimeout, ce.StatusCode >= 500:
		return true
	case ce.StatusCode == 0:
		// Refused by the adapter before any call (not configured, not
		// supported, invalid request).
		return false
	}
	return false
}

// LabelFinder is implemented by adapters whose carrier can look a label up
// by the reference it was bought with (e.g. a tracking-by-reference API):
// after a purchase whose outcome is unknown, the caller asks before giving
// up. found is false when the carrier knows no label with that reference
// (yet: only a label found is conclusive).
type LabelFinder interface {
	FindLabel(ctx context.Context, acct Account, reference string) (trackingNumber string, found bool, err error)
}
