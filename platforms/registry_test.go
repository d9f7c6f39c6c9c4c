package platforms_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/sandboxapi"
)

func newSandbox(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(sandboxapi.NewHandler())
	t.Cleanup(srv.Close)
	return srv
}

// bridges returns one valid bridge per type.
func bridges() []platforms.Bridge {
	cfgs := map[string]map[string]any{
		"storefront_a":   {"shopDomain": "demo.myshopify.com", "accessToken": "tok-a"},
		"shipping_hub_a": {"apiKey": "key-1", "apiSecret": "secret-1"},
		"storefront_b":   {"storeUrl": "https://shop.example.com/", "consumerKey": "ck_1", "consumerSecret": "cs_1"},
		"storefront_c":   {"storeHash": "abc123", "accessToken": "tok-c"},
		"marketplace_a": {"sellerId": "SELLER1", "refreshToken": "Atzr|x", "clientId": "amzn1.app",
			"clientSecret": "cs", "marketplaceId": "ATVPDKIKX0DER"},
	}
	var out []platforms.Bridge
	for _, bt := range platforms.Types() {
		out = append(out, platforms.Bridge{ID: uuid.New(), OrganizationID: uuid.New(), Type: bt.Slug, Config: cfgs[bt.Slug]})
	}
	return out
}

func bridgeOf(typ string) platforms.Bridge {
	for _, b := range bridges() {
		if b.Type == typ {
			return b
		}
	}
	panic(typ)
}

func withConfig(b platforms.Bridge, kv ...string) platforms.Bridge {
	cfg := map[string]any{}
	for k, v := range b.Config {
		cfg[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "<delete>" {
			delete(cfg, kv[i])
			continue
		}
		cfg[kv[i]] = kv[i+1]
	}
	b.Config = cfg
	return b
}

func listAll(t *testing.T, c platforms.Connector, b platforms.Bridge, since time.Time) ([]platforms.Order, int) {
	t.Helper()
	var all []platforms.Order
	cursor, pages := "", 0
	for {
		page, next, err := c.ListOrders(context.Background(), b, since, cursor)
		require.NoError(t, err)
		all = append(all, page...)
		pages++
		require.Less(t, pages, 100, "paging does not end")
		if next == "" {
			return all, pages
		}
		cursor = next
	}
}

// Under FOS_SANDBOX=1 the one registry holds every type's real connector,
// pointed at the sandbox store of the same API: each lists the store's
// orders and reads one back.
func TestSandboxRegistryEveryType(t *testing.T) {
	srv := newSandbox(t)
	reg := platforms.NewAPIRegistry(platforms.SandboxURLs(srv.URL), srv.Client(), nil)
	require.Len(t, reg.Types(), len(platforms.Types()))
	for _, b := range bridges() {
		t.Run(b.Type, func(t *testing.T) {
			conn, err := reg.Get(b.Type)
			require.NoError(t, err)
			orders, _ := listAll(t, conn, b, time.Time{})
			require.Len(t, orders, sandboxapi.StoreSize)
			o := orders[0]
			assert.NotEmpty(t, o.ExternalID)
			assert.NotEmpty(t, o.LineItems)
			assert.NotNil(t, o.ShippingAddress)
			got, err := conn.FetchOrder(context.Background(), b, o.ExternalID)
			require.NoError(t, err)
			assert.Equal(t, o.ExternalID, got.ExternalID)
			assert.Equal(t, o.Totals, got.Totals)
		})
	}
}

// The connectors' own config rules, as the API checks them: they depend
// on where the registry points.
func TestRegistryCheckConfig(t *testing.T) {
	prod := platforms.NewAPIRegistry(platforms.APIURLsFromEnv(func(string) string { return "" }, false, ""), nil, nil)
	sandbox := platforms.NewAPIRegistry(platforms.SandboxURLs("http://127.0.0.1:8089"), nil, nil)
	pointed := platforms.NewAPIRegistry(platforms.APIURLsFromEnv(func(k string) string {
		if k == platforms.EnvStorefrontAURL {
			return "https://shops.internal"
		}
		return ""
	}, false, ""), nil, nil)
	for _, b := range bridges() {
		assert.Empty(t, prod.CheckConfig(b.Type, b.Config), b.Type)
		assert.Empty(t, sandbox.CheckConfig(b.Type, b.Config), b.Type)
	}

	shop := withConfig(bridgeOf("storefront_a"), "shopDomain", "shop.example.com").Config
	assert.Equal(t, []platforms.FieldError{{Field: "config.shopDomain", Message: "must be the shop's .myshopify.com domain"}}, prod.CheckConfig("storefront_a", shop))
	assert.Empty(t, sandbox.CheckConfig("storefront_a", shop))
	assert.Empty(t, pointed.CheckConfig("storefront_a", shop), "FOS_STOREFRONT_A_URL set: the domain only names the shop")
	assert.Equal(t, "config.apiVersion", prod.CheckConfig("storefront_a", withConfig(bridgeOf("storefront_a"), "apiVersion", "v1").Config)[0].Field)

	plain := withConfig(bridgeOf("storefront_b"), "storeUrl", "http://shop.example.com").Config
	errs := prod.CheckConfig("storefront_b", plain)
	require.Len(t, errs, 1)
	assert.Equal(t, "config.storeUrl", errs[0].Field)
	assert.Contains(t, errs[0].Message, "https://")
	assert.Empty(t, sandbox.CheckConfig("storefront_b", plain), "the sandbox store is named by the URL, never dialed")

	assert.Equal(t, "config.storeHash", prod.CheckConfig("storefront_c", withConfig(bridgeOf("storefront_c"), "storeHash", "a/b").Config)[0].Field)
	assert.Equal(t, "config.storeId", prod.CheckConfig("shipping_hub_a", withConfig(bridgeOf("shipping_hub_a"), "storeId", "x").Config)[0].Field)
	assert.Equal(t, "config.region", prod.CheckConfig("marketplace_a", withConfig(bridgeOf("marketplace_a"), "marketplaceId", "XX").Config)[0].Field)
	assert.Empty(t, prod.CheckConfig("marketplace_a", withConfig(bridgeOf("marketplace_a"), "marketplaceId", "XX", "region", "eu").Config))
}
