package carriers

import (
	"net/http"
	"sort"
	"strings"
	"time"
)

// Endpoints are a carrier's base URLs (scheme and host, optionally a path
// prefix, no trailing slash). Test is used for IsTest accounts.
type Endpoints struct {
	Production string
	Test       string
}

// DefaultEndpoints are the carriers' real base URLs.
var DefaultEndpoints = map[string]Endpoints{
	CarrierA: {Production: "https://apis.fedex.com", Test: "https://apis-sandbox.fedex.com"},
	CarrierB: {Production: "https://onlinetools.ups.com", Test: "https://wwwcie.ups.com"},
	// carrier_c's rate-estimate API has one host; test keys are told apart
	// by the key itself.
	CarrierC: {Production: "https://api.shipengine.com", Test: "https://api.shipengine.com"},
}

// EndpointVars names, per carrier code, the environment variables that
// replace the scheme and host of its production and test APIs (CONTRACT
// 8b); Test is "" for carrier_c, whose one host serves both.
var EndpointVars = map[string]Endpoints{
	CarrierA: {Production: "FOS_CARRIER_A_URL", Test: "FOS_CARRIER_A_TEST_URL"},
	CarrierB: {Production: "FOS_CARRIER_B_URL", Test: "FOS_CARRIER_B_TEST_URL"},
	CarrierC: {Production: "FOS_CARRIER_C_URL"},
}

// EndpointsFromEnv resolves EndpointVars for Config.BaseURLs: a set
// variable replaces its environment's base URL (paths stay the adapter's);
// an unset one keeps the default, the sandbox's prefix for the carrier
// under sandbox and the vendor's real host otherwise. With sandbox off no
// default points at the sandbox. getenv returns validated values (package
// config checks them).
func EndpointsFromEnv(getenv func(string) string, sandbox bool, sandboxURL string) map[string]Endpoints {
	out := make(map[string]Endpoints, len(EndpointVars))
	for code, vars := range EndpointVars {
		e := defaultEndpoints(sandbox, sandboxURL, code)
		if v := strings.TrimSpace(getenv(vars.Production)); v != "" {
			e.Production = v
		}
		switch {
		case vars.Test == "":
			e.Test = e.Production
		case strings.TrimSpace(getenv(vars.Test)) != "":
			e.Test = strings.TrimSpace(getenv(vars.Test))
		}
		out[code] = e
	}
	return out
}

// Environment variables read by CarrierAConfigFromEnv.
const (
	EnvCarrierAClientID         = "FOS_CARRIER_A_CLIENT_ID"
	EnvCarrierAClientSecret     = "FOS_CARRIER_A_CLIENT_SECRET"
	EnvCarrierATestClientID     = "FOS_CARRIER_A_TEST_CLIENT_ID"
	EnvCarrierATestClientSecret = "FOS_CARRIER_A_TEST_CLIENT_SECRET"
)

// Platform credentials carrier_a uses against the sandbox when none are
// configured.
const (
	SandboxClientID     = "fos-sandbox-client"
	SandboxClientSecret = "fos-sandbox-secret"
)

// CarrierAConfig is the service's own carrier_a project credentials (the
// integrator's API key and secret from the carrier's developer portal).
// They are not per account: every carrier_a call uses a token built from
// this pair (plus the account's childKey/childSecret once registered).
type CarrierAConfig struct {
	ClientID     string
	ClientSecret string
	// TestClientID/TestClientSecret are used for IsTest accounts (the test
	// environment has its own project keys). Outside the sandbox they are
	// required for IsTest calls (ErrNotConfigured without them); in the
	// sandbox empty values mean ClientID/Secret.
	TestClientID     string
	TestClientSecret string
}

// CarrierAConfigFromEnv reads FOS_CARRIER_A_CLIENT_ID,
// FOS_CARRIER_A_CLIENT_SECRET, FOS_CARRIER_A_TEST_CLIENT_ID and
// FOS_CARRIER_A_TEST_CLIENT_SECRET.
func CarrierAConfigFromEnv(getenv func(string) string) CarrierAConfig {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	return CarrierAConfig{
		ClientID:         get(EnvCarrierAClientID),
		ClientSecret:     get(EnvCarrierAClientSecret),
		TestClientID:     get(EnvCarrierATestClientID),
		TestClientSecret: get(EnvCarrierATestClientSecret),
	}
}

// Config configures the adapters of a Registry.
type Config struct {
	// Sandbox points every adapter, production and test environment alike,
	// at SandboxURL + "/carriers/<code>" (the built-in sandbox, package
	// sandboxapi) unless BaseURLs says otherwise. Without Sandbox,
	// SandboxURL is never used.
	Sandbox    bool
	SandboxURL string
	// HTTPClient is used for every call; nil (or a zero Timeout) gets
	// DefaultHTTPTimeout, nil (or a nil Transport) a transport keeping
	// MaxIdleConnsPerHost idle connections per host.
	HTTPClient *http.Client
	// BaseURLs overrides the default endpoints (DefaultEndpoints, or the
	// sandbox prefix under Sandbox) per carrier code; an entry with an
	// empty Production is ignored, an empty Test falls back to Production.
	// EndpointsFromEnv builds it from CONTRACT 8b's variables.
	BaseURLs map[string]Endpoints
	// CarrierA holds the service's carrier_a project credentials. In
	// sandbox mode empty values default to SandboxClientID /
	// SandboxClientSecret; outside it, carrier_a calls fail with
	// ErrNotConfigured until they are set.
	CarrierA CarrierAConfig
	// Now is the clock used for token expiry and default ship dates
	// (default time.Now).
	Now func() time.Time
	// TrackConcurrency bounds parallel tracking calls of carriers that take
	// one number per call (carrier_b); default 4.
	TrackConcurrency int
}

// Registry holds one adapter per carrier code. It is safe for concurrent use.
type Registry struct {
	carriers map[string]Carrier
}

// MaxIdleConnsPerHost is how many idle connections the carriers' default
// transport keeps per carrier host: an operation's batches buy dozens of
// labels at once from one carrier, and the net/http default (2) would
// open (and handshake) a connection for nearly every call.
const MaxIdleConnsPerHost = 64

// defaultTransport is http.DefaultTransport keeping MaxIdleConnsPerHost
// idle connections per host.
func defaultTransport() http.RoundTripper {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return http.DefaultTransport
	}
	t = t.Clone()
	t.MaxIdleConnsPerHost = MaxIdleConnsPerHost
	return t
}

// NewRegistry builds the adapters of every carrier code.
func NewRegistry(cfg Config) *Registry {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.TrackConcurrency <= 0 {
		cfg.TrackConcurrency = 4
	}
	var hc http.Client
	if cfg.HTTPClient != nil {
		hc = *cfg.HTTPClient
	}
	if hc.Timeout == 0 {
		hc.Timeout = DefaultHTTPTimeout
	}
	if hc.Transport == nil {
		hc.Transport = defaultTransport()
	}
	if cfg.Sandbox {
		if cfg.CarrierA.ClientID == "" {
			cfg.CarrierA.ClientID = SandboxClientID
		}
		if cfg.CarrierA.ClientSecret == "" {
			cfg.CarrierA.ClientSecret = SandboxClientSecret
		}
	}

	r := &Registry{carriers: map[string]Carrier{}}
	for _, code := range Codes() {
		b := &base{
			code:      code,
			tr:        &transport{carrier: code, client: &hc, sandbox: cfg.Sandbox},
			now:       cfg.Now,
			endpoints: endpointsFor(cfg, code),
			tokens:    newTokenCache(code, cfg.Now),
		}
		switch code {
		case CarrierA:
			r.carriers[code] = &carrierA{base: b, client: cfg.CarrierA}
		case CarrierB:
			r.carriers[code] = &carrierB{base: b, trackConcurrency: cfg.TrackConcurrency}
		case CarrierC:
			r.carriers[code] = &carrierC{base: b, carrierIDs: map[string]carrierIDsEntry{}}
		}
	}
	return r
}

func endpointsFor(cfg Config, code string) Endpoints {
	e := defaultEndpoints(cfg.Sandbox, cfg.SandboxURL, code)
	if o, ok := cfg.BaseURLs[code]; ok && o.Production != "" {
		e = o
	}
	if e.Test == "" {
		e.Test = e.Production
	}
	e.Production = strings.TrimRight(e.Production, "/")
	e.Test = strings.TrimRight(e.Test, "/")
	return e
}

// defaultEndpoints is a carrier's base URLs when nothing overrides them:
// the sandbox's prefix for it under sandbox ("" without a sandbox URL),
// else the vendor's real hosts.
func defaultEndpoints(sandbox bool, sandboxURL, code string) Endpoints {
	if !sandbox {
		return DefaultEndpoints[code]
	}
	if strings.TrimSpace(sandboxURL) == "" {
		return Endpoints{}
	}
	u := strings.TrimRight(sandboxURL, "/") + "/carriers/" + code
	return Endpoints{Production: u, Test: u}
}

// Get returns the adapter of a carrier code, or an *Error matching
// ErrUnknownCarrier.
func (r *Registry) Get(code string) (Carrier, error) {
	c, ok := r.carriers[code]
	if !ok {
		return nil, &Error{Carrier: code, Code: ErrCodeUnknown, Message: "unknown carrier " + `"` + code + `"`, kind: ErrUnknownCarrier}
	}
	return c, nil
}

// Codes lists the registry's carrier codes, sorted.
func (r *Registry) Codes() []string {
	out := make([]string, 0, len(r.carriers))
	for k := range r.carriers {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Registrar returns the registration flow of a carrier (only carrier_a
// has one); other codes give an error matching ErrNotSupported or
// ErrUnknownCarrier.
func (r *Registry) Registrar(code string) (Registrar, error) {
	c, err := r.Get(code)
	if err != nil {
		return nil, err
	}
	reg, ok := c.(Registrar)
	if !ok {
		return nil, notSupported(code, "account registration")
	}
	return reg, nil
}

// base is what every adapter shares.
type base struct {
	code      string
	tr        *transport
	now       func() time.Time
	endpoints Endpoints
	tokens    *tokenCache
}

// url returns the base URL of the account's environment joined with path.
func (b *base) url(isTest bool, path string) (string, error) {
	u := b.endpoints.Production
	if isTest {
		u = b.endpoints.Test
	}
	if u == "" {
		return "", notConfigured(b.code, "no base URL configured for "+b.code)
	}
	return u + path, nil
}

func (b *base) checkAccount(acct Account) error {
	if acct.Carrier != "" && acct.Carrier != b.code {
		return invalidRequest(b.code, "account "+acct.ID+" belongs to "+acct.Carrier+", not "+b.code)
	}
	return nil
}
