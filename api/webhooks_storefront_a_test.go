package api

import (
	"net/http/httptest"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/sandboxapi"
	"github.com/fos-dev/fos/store"
)

// storefront_a signs its deliveries with the app's client secret: topics
// are enabled only when the service can verify them (the bridge's
// webhookSecret or FOS_STOREFRONT_A_CLIENT_SECRET) and receive them (an
// https:// address outside fos dev); a delivery signed with the app's
// client secret is verified.
func TestStorefrontAWebhooksNeedAVerifiableSecretAndHTTPS(t *testing.T) {
	sb := httptest.NewServer(sandboxapi.NewHandler())
	t.Cleanup(sb.Close)
	reg := platforms.NewAPIRegistry(platforms.SandboxURLs(sb.URL), sb.Client(), nil)
	t.Setenv(platforms.EnvStorefrontAClientSecret, "")
	e := newEnv(t, func(d *Deps) { d.Platforms = reg })
	key := e.apiKey(e.signup(), "bridges:read", "bridges:write")
	domain := "verify-" + uuid.NewString()[:8] + ".myshopify.com"
	id := e.bridgeCreate(key, platforms.TypeStorefrontA, "Shop", map[string]any{"shopDomain": domain, "accessToken": "shpat_x"})["id"].(string)
	path := "/api/v1/bridges/" + id + "/webhooks"
	topics := map[string]any{"topics": []string{"orders/create"}}

	// No key to verify with: a clear 400 naming the field, nothing registered.
	res := e.do(key, "POST", path, topics)
	requireError(t, res, 400, "validation_error")
	require.Equal(t, []string{"config.webhookSecret"}, bridgeErrFields(t, res))
	require.Contains(t, string(res.Raw), platforms.EnvStorefrontAClientSecret)
	require.Empty(t, sandboxWebhooks(t, sb, domain, "shpat_x"))
	full, err := store.BridgeFullConfig(e.deps.Secrets, e.bridgeStoredRow(id))
	require.NoError(t, err)
	require.Nil(t, full["webhookSecret"], "no random secret the platform would never sign with")

	// A webhookSecret, but the service's address is plain http outside fos dev.
	res = e.do(key, "PATCH", "/api/v1/bridges/"+id, map[string]any{"config": map[string]any{"webhookSecret": "shop-admin-signing-key"}})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	res = e.do(key, "POST", path, topics)
	requireError(t, res, 400, "validation_error")
	require.Contains(t, string(res.Raw), "https://")
	require.Empty(t, sandboxWebhooks(t, sb, domain, "shpat_x"))

	// Behind https it registers.
	https := newEnv(t, func(d *Deps) {
		d.Platforms = reg
		d.Store = e.deps.Store
		d.Secrets = e.deps.Secrets
		d.BaseURL = "https://fos.example.com"
	})
	res = https.do(key, "POST", path, topics)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	hooks := sandboxWebhooks(t, sb, domain, "shpat_x")
	require.Len(t, hooks, 1)
	require.Equal(t, "https://fos.example.com/api/v1/webhooks/"+id, hooks[0]["address"])

	// A delivery signed with the app's client secret verifies (the
	// platform signs every app webhook with it); a bridge-secret signature
	// too; another key does not.
	t.Setenv(platforms.EnvStorefrontAClientSecret, "shpss_app_client_secret")
	body := `{"id": 450789469}`
	in := "/api/v1/webhooks/" + id
	res = e.do(caller{}, "POST", in, body, StorefrontAHMAC, SignWebhookBody("shpss_app_client_secret", []byte(body)), StorefrontATopic, "orders/create", StorefrontAEventID, "evt-app")
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	res = e.do(caller{}, "POST", in, body, StorefrontAHMAC, SignWebhookBody("shop-admin-signing-key", []byte(body)), StorefrontATopic, "orders/create", StorefrontAEventID, "evt-admin")
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	requireError(t, e.do(caller{}, "POST", in, body, StorefrontAHMAC, SignWebhookBody("other", []byte(body))), 401, "invalid_signature")
}
