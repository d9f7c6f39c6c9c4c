package api

import (
	"testing"

	"github.com/stretchr/testify/require"
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
	res = e.do(owner.caller, "PATCH", "/api/v1/bridges/"+id, map[string]any{"config": map[string]any{"store_url": "https://new.example.com"}})
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
