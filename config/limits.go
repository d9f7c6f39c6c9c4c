package config

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Rate is an allowance of Events per Per, all of which may be spent at
// once (the burst is Events). The zero Rate means "use the default"; Off
// disables the limit.
type Rate struct {
	Events int
	Per    time.Duration
	Off    bool
}

// String renders the rate as its environment form ("10/1m0s", "off").
func (r Rate) String() string {
	if r.Off {
		return "off"
	}
	return strconv.Itoa(r.Events) + "/" + r.Per.String()
}

// IsZero reports whether r is unset.
func (r Rate) IsZero() bool { return r == Rate{} }

// ParseRate reads "N/duration" (e.g. "10/1m", "300/1h") or "off".
func ParseRate(s string) (Rate, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "off") {
		return Rate{Off: true}, nil
	}
	n, per, ok := strings.Cut(s, "/")
	events, err := strconv.Atoi(strings.TrimSpace(n))
	if !ok || err != nil || events < 1 {
		return Rate{}, fmt.Errorf("must be N/duration such as 10/1m, or off")
	}
	d, err := time.ParseDuration(strings.TrimSpace(per))
	if err != nil || d <= 0 {
		return Rate{}, fmt.Errorf("must be N/duration such as 10/1m, or off")
	}
	return Rate{Events: events, Per: d}, nil
}

// Limits are the abuse limits (issue 7 item 5). Every field has a default
// generous enough that the tests and `fos dev --seed` never meet it.
type Limits struct {
	// LoginPerIP and LoginPerEmail bound POST /auth/login attempts.
	LoginPerIP    Rate
	LoginPerEmail Rate
	// SignupPerIP and SignupPerEmail bound POST /auth/signup attempts.
	SignupPerIP    Rate
	SignupPerEmail Rate
	// InvitationsPerOrg bounds invitation e-mails an organization sends.
	InvitationsPerOrg Rate
	// CarrierPINPerAccount bounds carrier_a request-pin calls per account
	// (each makes the service's carrier project send an SMS or a call).
	CarrierPINPerAccount Rate
	// APIKey is each API key's request budget.
	APIKey Rate
	// WrongPINs is how many wrong PINs a carrier_a registration accepts
	// before it fails (kept in the workflow, so it holds across API
	// instances).
	WrongPINs int
	// TrustedProxies are the proxies whose X-Forwarded-For is believed;
	// empty: the client address is the connection's.
	TrustedProxies []netip.Prefix
}

// DefaultLimits are the documented defaults.
func DefaultLimits() Limits {
	return Limits{
		LoginPerIP:           Rate{Events: 100, Per: time.Minute},
		LoginPerEmail:        Rate{Events: 10, Per: time.Minute},
		SignupPerIP:          Rate{Events: 100, Per: time.Hour},
		SignupPerEmail:       Rate{Events: 10, Per: time.Hour},
		InvitationsPerOrg:    Rate{Events: 100, Per: time.Hour},
		CarrierPINPerAccount: Rate{Events: 10, Per: time.Hour},
		APIKey:               Rate{Events: 60000, Per: time.Minute},
		WrongPINs:            5,
	}
}

// WithDefaults fills the unset fields of l from DefaultLimits.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	for _, f := range []struct{ v, def *Rate }{
		{&l.LoginPerIP, &d.LoginPerIP}, {&l.LoginPerEmail, &d.LoginPerEmail},
		{&l.SignupPerIP, &d.SignupPerIP}, {&l.SignupPerEmail, &d.SignupPerEmail},
		{&l.InvitationsPerOrg, &d.InvitationsPerOrg}, {&l.CarrierPINPerAccount, &d.CarrierPINPerAccount},
		{&l.APIKey, &d.APIKey},
	} {
		if f.v.IsZero() {
			*f.v = *f.def
		}
	}
	if l.WrongPINs <= 0 {
		l.WrongPINs = d.WrongPINs
	}
	return l
}

// limitVars names each rate's environment variable.
func (l *Limits) limitVars() []struct {
	name string
	v    *Rate
} {
	return []struct {
		name string
		v    *Rate
	}{
		{"FOS_LIMIT_LOGIN_IP", &l.LoginPerIP},
		{"FOS_LIMIT_LOGIN_EMAIL", &l.LoginPerEmail},
		{"FOS_LIMIT_SIGNUP_IP", &l.SignupPerIP},
		{"FOS_LIMIT_SIGNUP_EMAIL", &l.SignupPerEmail},
		{"FOS_LIMIT_INVITATIONS_ORG", &l.InvitationsPerOrg},
		{"FOS_LIMIT_CARRIER_PIN_ACCOUNT", &l.CarrierPINPerAccount},
		{"FOS_LIMIT_API_KEY", &l.APIKey},
	}
}

// loadLimits reads the FOS_LIMIT_* variables and FOS_TRUSTED_PROXIES.
func loadLimits(get func(k, def string) string) (Limits, Problems) {
	l := DefaultLimits()
	var p Problems
	for _, f := range l.limitVars() {
		raw := get(f.name, "")
		if raw == "" {
			continue
		}
		r, err := ParseRate(raw)
		if err != nil {
			p = append(p, fmt.Sprintf("%s=%q: %v", f.name, raw, err))
			continue
		}
		*f.v = r
	}
	if raw := get("FOS_LIMIT_WRONG_PINS", ""); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 {
			p = append(p, fmt.Sprintf("FOS_LIMIT_WRONG_PINS=%q: must be a positive integer", raw))
		} else {
			l.WrongPINs = n
		}
	}
	if raw := get("FOS_TRUSTED_PROXIES", ""); raw != "" {
		for _, part := range strings.Split(raw, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			pfx, err := parsePrefix(part)
			if err != nil {
				p = append(p, fmt.Sprintf("FOS_TRUSTED_PROXIES: %q is not a CIDR or an IP address", part))
				continue
			}
			l.TrustedProxies = append(l.TrustedProxies, pfx)
		}
	}
	return l, p
}

// parsePrefix reads a CIDR, or a bare address as its single-host prefix.
func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		pfx, err := netip.ParsePrefix(s)
		return pfx.Masked(), err
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}
