package platforms

import (
	"net/http"
	"strings"
)

// The connectors that speak the platforms' own APIs, and where they point
// (CONTRACT 8b). They are not in any Registry yet: the caller registers
// them, e.g.
//
//	for typ, c := range platforms.APIConnectors(platforms.APIURLsFromEnv(os.Getenv, cfg.Sandbox, cfg.SandboxURL), hc) {
//		reg.Register(typ, c)
//	}

// Base URL variables of the API-speaking connectors (CONTRACT 8b).
const (
	EnvStorefrontAURL  = "FOS_STOREFRONT_A_URL"
	EnvShippingHubAURL = "FOS_SHIPPING_HUB_A_URL"
	EnvStorefrontCURL  = "FOS_STOREFRONT_C_URL"
)

// APIURLs are the base URLs of the API-speaking connectors; "" is the
// platform's real host (https://<shopDomain>, the hub's and storefront_c's
// API hosts).
type APIURLs struct {
	StorefrontA  string
	ShippingHubA string
	StorefrontC  string
}

// APIURLsFromEnv reads the CONTRACT 8b variables. Under FOS_SANDBOX=1
// (sandbox true) an unset variable defaults to the built-in sandbox's
// prefix for the type, sandboxURL + "/platforms/<type>"; otherwise to the
// real host.
func APIURLsFromEnv(getenv func(string) string, sandbox bool, sandboxURL string) APIURLs {
	pick := func(env, typ string) string {
		if v := strings.TrimSpace(getenv(env)); v != "" {
			return strings.TrimRight(v, "/")
		}
		if sandbox {
			return strings.TrimRight(sandboxURL, "/") + "/platforms/" + typ
		}
		return ""
	}
	return APIURLs{
		StorefrontA:  pick(EnvStorefrontAURL, TypeStorefrontA),
		ShippingHubA: pick(EnvShippingHubAURL, TypeShippingHubA),
		StorefrontC:  pick(EnvStorefrontCURL, TypeStorefrontC),
	}
}

// APIConnectors returns the API-speaking connector of each type that has
// one, keyed by bridge type.
func APIConnectors(urls APIURLs, client *http.Client, opts ...Option) map[string]Connector {
	return map[string]Connector{
		TypeStorefrontA:  NewStorefrontA(urls.StorefrontA, client, opts...),
		TypeShippingHubA: NewShippingHubA(urls.ShippingHubA, client, opts...),
		TypeStorefrontC:  NewStorefrontC(urls.StorefrontC, client, opts...),
	}
}

var (
	_ interface {
		Connector
		FulfillmentPusher
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
		LocationLister
		WebhookRegistrar
	} = (*StorefrontC)(nil)
)
