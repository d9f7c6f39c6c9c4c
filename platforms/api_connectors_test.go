package platforms_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/fos-dev/fos/platforms"
)

func TestAPIURLsFromEnv(t *testing.T) {
	env := map[string]string{"FOS_SHIPPING_HUB_A_URL": "https://hub.internal/", "FOS_MARKETPLACE_A_AUTH_URL": "https://lwa.internal"}
	get := func(k string) string { return env[k] }

	assert.Equal(t, platforms.APIURLs{
		StorefrontA:      "http://127.0.0.1:8081/platforms/storefront_a",
		ShippingHubA:     "https://hub.internal",
		StorefrontC:      "http://127.0.0.1:8081/platforms/storefront_c",
		StorefrontB:      "http://127.0.0.1:8081/platforms/storefront_b",
		MarketplaceA:     "http://127.0.0.1:8081/platforms/marketplace_a",
		MarketplaceAAuth: "https://lwa.internal",
	}, platforms.APIURLsFromEnv(get, true, "http://127.0.0.1:8081/"))
	assert.Equal(t, "http://127.0.0.1:8081/platforms/marketplace_a/lwa", platforms.SandboxURLs("http://127.0.0.1:8081").MarketplaceAAuth)

	assert.Equal(t, platforms.APIURLs{ShippingHubA: "https://hub.internal", MarketplaceAAuth: "https://lwa.internal"}, platforms.APIURLsFromEnv(get, false, "http://127.0.0.1:8081"),
		"outside the sandbox the real hosts, never the sandbox")

	conns := platforms.APIConnectors(platforms.APIURLs{}, nil, nil)
	assert.Len(t, conns, len(platforms.Types()))
	_, ok := conns["shipping_hub_a"].(platforms.ShipmentLister)
	assert.True(t, ok)
	for typ, c := range conns {
		_, pusher := c.(platforms.FulfillmentPusher)
		_, lister := c.(platforms.LocationLister)
		_, hooks := c.(platforms.WebhookRegistrar)
		assert.True(t, pusher, typ)
		assert.Equal(t, typ != "storefront_b", lister, "%s: storefront_b has no locations", typ)
		assert.Equal(t, typ != "marketplace_a", hooks, typ)
	}
}
