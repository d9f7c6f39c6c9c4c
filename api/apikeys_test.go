package api

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestAPIKeyLifecycle(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()

	res := e.do(owner.caller, "POST", "/api/v1/api-keys", map[string]any{"name": "ci", "scopes": []string{"orders:read"}, "expires_at": nil})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	created := res.data()
	key := created["key"].(string)
	require.True(t, strings.HasPrefix(key, "fos_"))
	for _, f := range []string{"id", "name", "key", "scopes", "created_at"} {
		require.Contains(t, created, f)
	}

	list := e.do(owner.caller, "GET", "/api/v1/api-keys", nil)
	require.Equal(t, 200, list.Code)
	items := list.list()
	require.Len(t, items, 1)
	require.Equal(t, key[:8]+"…", items[0]["key_prefix"])
	require.NotContains(t, items[0], "key")
	require.NotContains(t, string(list.Raw), key, "the secret is only in the create response")
	for _, f := range []string{"id", "name", "key_prefix", "scopes", "last_used_at", "expires_at", "created_at"} {
		require.Contains(t, items[0], f)
	}

	// The key works, within its scopes and organization.
	k := caller{token: key}
	require.Equal(t, 200, e.do(k, "GET", "/api/v1/organizations", nil).Code)

	// Revocation takes effect on the very next request.
	require.Equal(t, 200, e.do(owner.caller, "DELETE", "/api/v1/api-keys/"+created["id"].(string), nil).Code)
	requireError(t, e.do(k, "GET", "/api/v1/organizations", nil), 401, "unauthorized")
	requireError(t, e.do(owner.caller, "DELETE", "/api/v1/api-keys/"+created["id"].(string), nil), 404, "not_found")
	require.Empty(t, e.do(owner.caller, "GET", "/api/v1/api-keys", nil).list())
}

func TestAPIKeyAliasPath(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	res := e.do(owner.caller, "POST", "/api/api-keys", map[string]any{"name": "alias", "scopes": []string{"orders:read"}})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	require.Len(t, e.do(owner.caller, "GET", "/api/api-keys", nil).list(), 1)
	require.Equal(t, 200, e.do(owner.caller, "DELETE", "/api/api-keys/"+res.data()["id"].(string), nil).Code)
}

func TestAPIKeyValidationAndAccess(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	requireError(t, e.do(owner.caller, "POST", "/api/v1/api-keys", map[string]any{"name": "x"}), 400, "validation_error")
	requireError(t, e.do(owner.caller, "POST", "/api/v1/api-keys", map[string]any{"name": "x", "scopes": []string{"orders:everything"}}), 400, "validation_error")
	requireError(t, e.do(owner.caller, "POST", "/api/v1/api-keys", map[string]any{"name": "x", "scopes": "orders:read"}), 400, "validation_error")
	requireError(t, e.do(owner.caller, "POST", "/api/v1/api-keys", map[string]any{"name": "x", "scopes": []string{"orders:read"}, "expires_at": "yesterday"}), 400, "validation_error")
	requireError(t, e.do(owner.caller, "POST", "/api/v1/api-keys", map[string]any{"name": "x", "scopes": []string{"orders:read"}, "expires_at": time.Now().Add(-time.Hour)}), 400, "validation_error")

	// API keys cannot manage API keys.
	k := e.apiKey(owner, "orders:read", "orders:write")
	requireError(t, e.do(k, "GET", "/api/v1/api-keys", nil), 403, "forbidden")
	requireError(t, e.do(k, "POST", "/api/v1/api-keys", map[string]any{"name": "x", "scopes": []string{"orders:read"}}), 403, "forbidden")

	// Another organization's key is 404.
	other := e.signup()
	res := e.do(other.caller, "POST", "/api/v1/api-keys", map[string]any{"name": "theirs", "scopes": []string{"orders:read"}})
	requireError(t, e.do(owner.caller, "DELETE", "/api/v1/api-keys/"+res.data()["id"].(string), nil), 404, "not_found")
	requireError(t, e.do(owner.caller, "DELETE", "/api/v1/api-keys/not-a-uuid", nil), 404, "not_found")
}

func TestExpiredAPIKeyIsRefused(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	res := e.do(owner.caller, "POST", "/api/v1/api-keys", map[string]any{"name": "brief", "scopes": []string{"orders:read"}, "expires_at": time.Now().Add(1500 * time.Millisecond)})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	k := caller{token: res.data()["key"].(string)}
	require.Equal(t, 200, e.do(k, "GET", "/api/v1/organizations", nil).Code)
	_, err := e.deps.Store.Pool.Exec(t.Context(), `UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, res.data()["id"])
	require.NoError(t, err)
	requireError(t, e.do(k, "GET", "/api/v1/organizations", nil), 401, "unauthorized")
}

func TestConventions(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()

	// Unknown route and method: JSON 404 / 405 with a request id.
	res := e.do(owner.caller, "GET", "/api/v1/nope", nil)
	requireError(t, res, 404, "not_found")
	require.NotEmpty(t, res.Header.Get("X-Request-Id"))
	requireError(t, e.do(owner.caller, "PUT", "/api/v1/api-keys", nil), 405, "method_not_allowed")
	// 405 comes before authentication: the method is wrong whoever asks.
	requireError(t, e.do(caller{}, "PATCH", "/api/api-keys", nil), 405, "method_not_allowed")
	requireError(t, e.do(e.apiKey(owner, "orders:read"), "PUT", "/api/v1/api-keys", nil), 405, "method_not_allowed")

	// A client request id is echoed.
	res = e.do(owner.caller, "GET", "/api/v1/api-keys", nil, "X-Request-Id", "trace-123")
	require.Equal(t, "trace-123", res.Header.Get("X-Request-Id"))

	// Malformed JSON and oversize bodies.
	requireError(t, e.do(owner.caller, "POST", "/api/v1/api-keys", "{not json"), 400, "invalid_json")
	requireError(t, e.do(owner.caller, "POST", "/api/v1/api-keys", `{"name": "x", "scopes": ["orders:read"]}`+strings.Repeat(" ", 11<<20)), 413, "payload_too_large")
}

func TestIdempotencyKeyReplay(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	body := map[string]any{"type": "storefront_a", "name": "idem", "config": map[string]any{"shopDomain": "i.myshopify.com", "accessToken": "t"}}
	first := e.do(owner.caller, "POST", "/api/v1/bridges", body, "Idempotency-Key", "k-1")
	require.Equal(t, 201, first.Code, "%s", first.Raw)
	again := e.do(owner.caller, "POST", "/api/v1/bridges", body, "Idempotency-Key", "k-1")
	require.Equal(t, 201, again.Code)
	require.Equal(t, first.Raw, again.Raw, "the replay is the stored response")
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	require.Len(t, e.do(owner.caller, "GET", "/api/v1/bridges", nil).list(), 1, "the bridge was created once")

	body["name"] = "other"
	requireError(t, e.do(owner.caller, "POST", "/api/v1/bridges", body, "Idempotency-Key", "k-1"), 409, "conflict")

	// Keys are per organization (and per caller).
	other := e.signup()
	body["name"] = "idem"
	res := e.do(other.caller, "POST", "/api/v1/bridges", body, "Idempotency-Key", "k-1")
	require.Equal(t, 201, res.Code)
	require.NotEqual(t, first.data()["id"], res.data()["id"])
}
