package platforms

import (
	"net/http"
	"strings"
)

// The connectors that speak the platforms' own APIs, and where they point
// (CONTRACT 8b). NewAPIRegistry holds one for each of the five bridge
// types; under FOS_SANDBOX=1 every one points at the built-in sandbox's
// store of the same API, otherwise at the platform's real host:
//
//	urls := platforms.APIURLsFromEnv(os.Getenv, cfg.Sandbox, cfg.SandboxURL)
//	reg := platforms.NewAPIRegistry(urls, hc, storeClient)

// Base URL variables of the connectors (CONTRACT 8b). storefront_b has
// none: it is self-hosted, each bridge's storeUrl is its base.
const (
	EnvStorefrontAURL      = "FOS_STOREFRONT_A_URL"
	EnvShippingHubAURL     = "FOS_SHIPPING_HUB_A_URL"
	EnvStorefrontCURL      = "FOS_STOREFRONT_C_URL"
	EnvMarketplaceAURL     = "FOS_MARKETPLACE_A_URL"
	EnvMarketplaceAAuthURL = "FOS_MARKETPLACE_A_AUTH_URL"
)

// EnvURLVars lists the variables APIURLsFromEnv reads.
var EnvURLVars = []string{EnvStorefrontAURL, EnvShippingHubAURL, EnvStorefrontCURL, EnvMarketplaceAURL, EnvMarketplaceAAuthURL}

// APIURLs are the base URLs of the connectors; "" is the platform's real
// host (https://<shopDomain>, the hub's and storefront_c's API hosts, the
// marketplace's regional and token hosts).
type APIURLs struct {
	StorefrontA  string
	ShippingHubA string
	StorefrontC  string
	// StorefrontB is the sandbox prefix below which every storefront_b
	// store is served by the host and path of its storeUrl (FOS_SANDBOX=1);
	// "" in production, where each bridge's storeUrl is its base.
	StorefrontB      string
	MarketplaceA     string
	MarketplaceAAuth string
}

// Sandbox prefixes of the platforms' APIs (package sandboxapi), below the
// sandbox's root URL.
const (
	sandboxPrefix             = "/platforms/"
	sandboxMarketplaceAAuthAt = "/platforms/marketplace_a/lwa"
)

// SandboxURLs are the base URLs of the built-in sandbox's stores served at
// sandboxURL (what APIURLsFromEnv defaults to under FOS_SANDBOX=1).
func SandboxURLs(sandboxURL string) APIURLs {
	return APIURLsFromEnv(func(string) string { return "" }, true, sandboxURL)
}

// APIURLsFromEnv reads the CONTRACT 8b variables. Under FOS_SANDBOX=1
// (sandbox true) an unset variable defaults to the built-in sandbox's
// prefix for the type, sandboxURL + "/platforms/<type>" (the
// marketplace's token host: + "/platforms/marketplace_a/lwa"), and
// storefront_b's stores are the sandbox's; otherwise to the real host.
func APIURLsFromEnv(getenv func(string) string, sandbox bool, sandboxURL string) APIURLs {
	root := strings.TrimRight(sandboxURL, "/")
	pick := func(env, sandboxPath string) string {
		if v := strings.TrimSpace(getenv(env)); v != "" {
			return strings.TrimRight(v, "/")
		}
		if sandbox {
			return root + sandboxPath
		}
		return ""
	}
	u := APIURLs{
		StorefrontA:      pick(EnvStorefrontAURL, sandboxPrefix+TypeStorefrontA),
		ShippingHubA:     pick(EnvShippingHubAURL, sandboxPrefix+TypeShippingHubA),
		StorefrontC:      pick(EnvStorefrontCURL, sandboxPrefix+TypeStorefrontC),
		MarketplaceA:     pick(EnvMarketplaceAURL, sandboxPrefix+TypeMarketplaceA),
		MarketplaceAAuth: pick(EnvMarketplaceAAuthURL, sandboxMarketplaceAAuthAt),
	}
	if sandbox {
		u.StorefrontB = root + sandboxPrefix + TypeStorefrontB
	}
	return u
}

// APIConnectors returns the connector of each of the five bridge types,
// keyed by type. client carries the calls to the platforms' own hosts;
// storeClient (nil: client) the calls to the tenant-supplied store URLs of
// storefront_b: in production the SSRF-guarded client
// (netguard.NewClient), under the sandbox a plain one.
func APIConnectors(urls APIURLs, client, storeClient *http.Client, opts ...Option) map[string]Connector {
	if storeClient == nil {
		storeClient = client
	}
	return map[string]Connector{
		TypeStorefrontA:  NewStorefrontA(urls.StorefrontA, client, opts...),
		TypeShippingHubA: NewShippingHubA(urls.ShippingHubA, client, opts...),
		TypeStorefrontB:  NewStorefrontB(urls.StorefrontB, storeClient, opts...),
		TypeStorefrontC:  NewStorefrontC(urls.StorefrontC, client, opts...),
		TypeMarketplaceA: NewMarketplaceA(urls.MarketplaceA, urls.MarketplaceAAuth, client, opts...),
	}
}

// NewAPIRegistry returns the registry of APIConnectors: the one registry
// the worker and the API use.
func NewAPIRegistry(urls APIURLs, client, storeClient *http.Client, opts ...Option) *Registry {
	r := NewRegistry()
	for typ, c := range APIConnectors(urls, client, storeClient, opts...) {
		r.Register(typ, c)
	}
	return r
}

var (
	_ interface {
		Connector
		FulfillmentTrackingUpdater
		LocationLister
		WebhookRegistrar
	} = (*StorefrontA)(nil)
	_ interface {
		Connector
		FulfillmentPusher
		LocationLister
		ShipmentLister
		WebhookRegistrar
	} = (*ShippingHubA)(nil)
	_ interface {
		Connector
		FulfillmentPusher
		WebhookRegistrar
	} = (*StorefrontB)(nil)
	_ interface {
		Connector
		FulfillmentPusher
		LocationLister
		WebhookRegistrar
	} = (*StorefrontC)(nil)
	_ interface {
		Connector
		FulfillmentPusher
		LocationLister
	} = (*MarketplaceA)(nil)
)
