// Package netguard keeps tenant-supplied URLs (a storefront_b storeUrl,
// later end-user webhook targets) away from the service's own network:
// loopback, private, link-local, unspecified, multicast, shared and other
// special-purpose addresses, cloud metadata endpoints among them (CONTRACT
// 8b). FOS_ALLOW_PRIVATE_URLS=1 (the default under `fos dev` only) turns
// the guard off.
//
// The guard works at two points:
//   - CheckURL, when the URL is accepted: an absolute http(s) URL whose host
//     is not a forbidden literal address or a local name (a 400 naming the
//     field);
//   - NewClient, when it is dialed: the dialer's Control function checks the
//     address actually connected to, after DNS resolution, so a name that
//     resolves (or is re-bound) to a private address is refused too.
//
// The address lists are code.dny.dev/ssrf's, generated from the IANA
// special-purpose registries (IPv4: every special-purpose prefix; IPv6:
// everything outside global unicast 2000::/3, which covers IPv4-mapped
// addresses, ULAs, link-local and loopback, plus the special-purpose
// prefixes inside it).
package netguard

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"code.dny.dev/ssrf"
)

// ErrForbiddenAddress matches (errors.Is) every refusal of this package.
var ErrForbiddenAddress = errors.New("netguard: address not allowed")

// guardian checks one resolved address; any port, TCP only.
var guardian = ssrf.New(ssrf.WithAnyPort(), ssrf.WithNetworks("tcp4", "tcp6"))

// CheckAddr reports whether ip may be dialed: nil, or an error matching
// ErrForbiddenAddress.
func CheckAddr(ip netip.Addr) error {
	if !ip.IsValid() {
		return fmt.Errorf("%w: invalid address", ErrForbiddenAddress)
	}
	if err := guardian.SafeAddr(ip.WithZone("")); err != nil {
		return fmt.Errorf("%w: %s is a private, loopback, link-local or other special-purpose address", ErrForbiddenAddress, ip)
	}
	return nil
}

// control is the net.Dialer Control function: it runs after resolution,
// for every address the dialer tries.
func control(network, address string, _ syscall.RawConn) error {
	switch network {
	case "tcp4", "tcp6":
	default:
		return fmt.Errorf("%w: network %s", ErrForbiddenAddress, network)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot parse %q", ErrForbiddenAddress, address)
	}
	return CheckAddr(ap.Addr().Unmap())
}

// Options configure NewClient.
type Options struct {
	// AllowPrivate turns the guard off (FOS_ALLOW_PRIVATE_URLS=1).
	AllowPrivate bool
	// Timeout is the client's overall timeout (0: 30s).
	Timeout time.Duration
}

// NewDialer returns a dialer that refuses forbidden addresses at connect
// time (unless allowPrivate).
func NewDialer(allowPrivate bool) *net.Dialer {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		d.Control = control
	}
	return d
}

// NewClient returns an HTTP client for tenant-supplied URLs: every
// connection, redirects included, goes through NewDialer, and no proxy is
// used (a proxy would make the connection on the client's behalf). A
// refused dial fails the request with an error matching
// ErrForbiddenAddress.
func NewClient(o Options) *http.Client {
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.DialContext = NewDialer(o.AllowPrivate).DialContext
	return &http.Client{Transport: tr, Timeout: o.Timeout}
}

// localNames are host names that mean this machine or its cloud metadata
// service whatever DNS says.
var localNames = map[string]bool{
	"localhost":                true,
	"localhost.localdomain":    true,
	"ip6-localhost":            true,
	"ip6-loopback":             true,
	"metadata":                 true,
	"metadata.google.internal": true,
	"instance-data":            true,
}

// CheckURL validates a tenant-supplied URL when it is accepted: an absolute
// http or https URL with a host and no credentials, whose host, unless
// allowPrivate, is neither a forbidden literal address nor a local name.
// The error is a short sentence fit for a 400 field message ("must …");
// a forbidden host's error also matches ErrForbiddenAddress. Names that
// resolve to forbidden addresses are caught when dialed (NewClient).
func CheckURL(raw string, allowPrivate bool) error {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return errors.New("must be an absolute http(s) URL")
	}
	if u.User != nil {
		return errors.New("must not contain a user name or password")
	}
	if allowPrivate {
		return nil
	}
	if err := CheckHost(u.Hostname()); err != nil {
		return forbiddenURLError{}
	}
	return nil
}

// forbiddenURLError is CheckURL's refusal of a host: a field message that
// matches ErrForbiddenAddress.
type forbiddenURLError struct{}

func (forbiddenURLError) Error() string {
	return "must not point to a loopback, private, link-local or metadata address"
}

func (forbiddenURLError) Is(target error) bool { return target == ErrForbiddenAddress }

// CheckHost refuses a host that is a forbidden literal IP address, a
// local name (localhost, *.localhost, metadata names), or a numeric form
// some resolvers read as an address (127.1, 0x7f000001, 2130706433).
func CheckHost(host string) error {
	h := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(host)), ".")
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if h == "" {
		return fmt.Errorf("%w: empty host", ErrForbiddenAddress)
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		return CheckAddr(ip.Unmap())
	}
	if localNames[h] || strings.HasSuffix(h, ".localhost") {
		return fmt.Errorf("%w: %s names this machine", ErrForbiddenAddress, h)
	}
	labels := strings.Split(h, ".")
	if last := labels[len(labels)-1]; numericLabel(last) {
		return fmt.Errorf("%w: %s is a numeric address form", ErrForbiddenAddress, h)
	}
	return nil
}

// numericLabel reports whether a label is decimal, octal or 0x-hex digits:
// no top-level domain is, but inet_aton-style parsers read it as a number.
func numericLabel(s string) bool {
	if s == "" {
		return false
	}
	if strings.HasPrefix(s, "0x") {
		s = s[2:]
		for _, c := range s {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
		return true
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
