package api

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
)

// storefront_b's storeUrl is tenant-supplied: it must be an absolute
// http(s) URL and, unless FOS_ALLOW_PRIVATE_URLS=1, must not name a
// loopback, private, link-local or metadata address (CONTRACT 8b).
func TestBridgeStoreURLGuard(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	create := func(storeURL string) *response {
		return e.do(owner.caller, "POST", "/api/v1/bridges", map[string]any{"type": "storefront_b", "name": "wp",
			"config": map[string]any{"storeUrl": storeURL, "consumerKey": "ck", "consumerSecret": "cs"}})
	}
	for _, u := range []string{
		"http://127.0.0.1:8080", "http://localhost/shop", "http://10.0.0.8", "http://192.168.1.2",
		"http://169.254.169.254/latest/meta-data", "http://0.0.0.0", "http://[::1]/", "http://[::ffff:127.0.0.1]/",
		"http://[fe80::1]/", "http://metadata.google.internal/",
	} {
		res := create(u)
		requireError(t, res, 400, "validation_error")
		require.Equal(t, []string{"config.storeUrl"}, bridgeErrFields(t, res), u)
		d := res.Body["error"].(map[string]any)["details"].([]any)[0].(map[string]any)
		require.Equal(t, "must not point to a loopback, private, link-local or metadata address", d["message"], u)
	}
	for _, u := range []string{"shop.example.com", "ftp://shop.example.com", "https://user:pw@shop.example.com"} {
		res := create(u)
		requireError(t, res, 400, "validation_error")
		require.Equal(t, []string{"config.storeUrl"}, bridgeErrFields(t, res), u)
	}
	res := create("https://shop.example.com/store")
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	id := res.data()["id"].(string)

	// An update is checked the same way; other changes leave the URL alone.
	res = e.do(owner.caller, "PATCH", "/api/v1/bridges/"+id, map[string]any{"config": map[string]any{"storeUrl": "http://127.0.0.1:2375"}})
	requireError(t, res, 400, "validation_error")
	require.Equal(t, []string{"config.storeUrl"}, bridgeErrFields(t, res))
	res = e.do(owner.caller, "PATCH", "/api/v1/bridges/"+id, map[string]any{"config": map[string]any{"store_url": "https://new.example.com",
		"consumerKey": "ck2", "consumerSecret": "cs2"}})
	require.Equal(t, 200, res.Code, "%s", res.Raw)

	// FOS_ALLOW_PRIVATE_URLS=1 (the fos dev default): private addresses are
	// accepted, malformed URLs still are not.
	dev := newEnv(t, func(d *Deps) { d.AllowPrivateURLs = true })
	devOwner := dev.signup()
	res = dev.do(devOwner.caller, "POST", "/api/v1/bridges", map[string]any{"type": "storefront_b", "name": "wp",
		"config": map[string]any{"storeUrl": "http://127.0.0.1:8089/wp", "consumerKey": "ck", "consumerSecret": "cs"}})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	res = dev.do(devOwner.caller, "POST", "/api/v1/bridges", map[string]any{"type": "storefront_b", "name": "wp",
		"config": map[string]any{"storeUrl": "not a url", "consumerKey": "ck", "consumerSecret": "cs"}})
	requireError(t, res, 400, "validation_error")
}

// A bridge config is checked against its connector's own rules, which
// depend on where the connectors point: outside the sandbox storefront_b's
// storeUrl must be https:// and storefront_a's shopDomain a .myshopify.com
// domain unless FOS_STOREFRONT_A_URL replaces the shop's host.
func TestBridgeConfigMatchesTheConnector(t *testing.T) {
	prod := func(env map[string]string) func(*Deps) {
		return func(d *Deps) {
			d.Platforms = platforms.NewAPIRegistry(platforms.APIURLsFromEnv(func(k string) string { return env[k] }, false, ""), nil, nil)
		}
	}
	e := newEnv(t, prod(nil))
	owner := e.signup()
	create := func(e *testEnv, caller caller, typ string, cfg map[string]any) *response {
		return e.do(caller, "POST", "/api/v1/bridges", map[string]any{"type": typ, "name": "b", "config": cfg})
	}

	res := create(e, owner.caller, "storefront_b", map[string]any{"storeUrl": "http://shop.example.com", "consumerKey": "ck", "consumerSecret": "cs"})
	requireError(t, res, 400, "validation_error")
	require.Equal(t, []string{"config.storeUrl"}, bridgeErrFields(t, res))
	require.Contains(t, res.Body["error"].(map[string]any)["details"].([]any)[0].(map[string]any)["message"], "https://")

	res = create(e, owner.caller, "storefront_a", map[string]any{"shopDomain": "shop.example.com", "accessToken": "shpat_x"})
	requireError(t, res, 400, "validation_error")
	require.Equal(t, []string{"config.shopDomain"}, bridgeErrFields(t, res))
	res = create(e, owner.caller, "storefront_a", map[string]any{"shopDomain": "shop.myshopify.com", "accessToken": "shpat_x", "apiVersion": "latest"})
	requireError(t, res, 400, "validation_error")
	require.Equal(t, []string{"config.apiVersion"}, bridgeErrFields(t, res))
	res = create(e, owner.caller, "storefront_a", map[string]any{"shopDomain": "shop.myshopify.com", "accessToken": "shpat_x"})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	id := res.data()["id"].(string)
	res = e.do(owner.caller, "PATCH", "/api/v1/bridges/"+id, map[string]any{"config": map[string]any{"shopDomain": "shop.example.com"}})
	requireError(t, res, 400, "validation_error")
	require.Equal(t, []string{"config.shopDomain"}, bridgeErrFields(t, res))

	res = create(e, owner.caller, "marketplace_a", map[string]any{"sellerId": "S1", "refreshToken": "Atzr|x", "clientId": "c", "clientSecret": "s", "marketplaceId": "NOPE"})
	requireError(t, res, 400, "validation_error")
	require.Equal(t, []string{"config.region"}, bridgeErrFields(t, res))
	res = create(e, owner.caller, "storefront_c", map[string]any{"storeHash": "a b", "accessToken": "t"})
	requireError(t, res, 400, "validation_error")
	require.Equal(t, []string{"config.storeHash"}, bridgeErrFields(t, res))

	// FOS_STOREFRONT_A_URL set: the domain only names the shop.
	pointed := newEnv(t, prod(map[string]string{platforms.EnvStorefrontAURL: "https://shops.internal"}))
	po := pointed.signup()
	res = create(pointed, po.caller, "storefront_a", map[string]any{"shopDomain": "shop.example.com", "accessToken": "shpat_x"})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
}
