package api

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A stored idempotent response is replayed only to the caller that got it:
// another caller with the same key runs its own request (and its own
// scope and role checks).
func TestIdempotencyKeyIsScopedToTheCaller(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	bridge := e.bridgeStorefrontA(owner.caller, "shop", "tok")["id"]
	order := func(ext string) map[string]any {
		return map[string]any{
			"bridge_id": bridge, "external_id": ext, "status": "pending",
			"customer":   map[string]any{"email": "b@example.com"},
			"line_items": []map[string]any{{"sku": "S", "name": "N", "quantity": 1, "unitPrice": 1, "totalPrice": 1, "requiresShipping": true, "taxable": true}},
			"totals":     map[string]any{"subtotal": 1, "shipping": 0, "tax": 0, "discount": 0, "total": 1},
		}
	}
	first := e.do(owner.caller, "POST", "/api/v1/orders", order("idem-1"), "Idempotency-Key", "shared")
	require.Equal(t, 201, first.Code, "%s", first.Raw)

	reader := e.apiKey(owner, "orders:read")
	res := e.do(reader, "POST", "/api/v1/orders", order("idem-1"), "Idempotency-Key", "shared")
	requireError(t, res, 403, "insufficient_scope")
	require.Empty(t, res.Header.Get("Idempotent-Replayed"))

	// API key creation is never stored for replay: the secret is shown once.
	k1 := e.do(owner.caller, "POST", "/api/v1/api-keys", map[string]any{"name": "a", "scopes": []string{"orders:read"}}, "Idempotency-Key", "key-create")
	k2 := e.do(owner.caller, "POST", "/api/v1/api-keys", map[string]any{"name": "a", "scopes": []string{"orders:read"}}, "Idempotency-Key", "key-create")
	require.Equal(t, 201, k1.Code)
	require.Equal(t, 201, k2.Code)
	require.NotEqual(t, k1.data()["key"], k2.data()["key"])
	var stored int
	require.NoError(t, e.deps.Store.Pool.QueryRow(t.Context(), `SELECT count(*) FROM idempotency_keys WHERE response_body::text LIKE '%fos_%'`).Scan(&stored))
	require.Zero(t, stored, "no API key secret is kept in idempotency records")

	requireError(t, e.do(owner.caller, "POST", "/api/v1/orders", order("idem-2"), "Idempotency-Key", "bad\x7fkey"), 400, "validation_error")

	// Two API keys of one organization: a read-only key never gets the
	// writing key's stored 201 (the key is scoped to the caller, not only to
	// the kind of caller).
	writer := e.apiKey(owner, "orders:read", "orders:write")
	wrote := e.do(writer, "POST", "/api/v1/orders", order("idem-3"), "Idempotency-Key", "two-keys")
	require.Equal(t, 201, wrote.Code, "%s", wrote.Raw)
	res = e.do(reader, "POST", "/api/v1/orders", order("idem-3"), "Idempotency-Key", "two-keys")
	requireError(t, res, 403, "insufficient_scope")
	require.Empty(t, res.Header.Get("Idempotent-Replayed"))
	replayed := e.do(writer, "POST", "/api/v1/orders", order("idem-3"), "Idempotency-Key", "two-keys")
	require.Equal(t, 201, replayed.Code)
	require.Equal(t, "true", replayed.Header.Get("Idempotent-Replayed"), "the same key replays its own answer")
}

// A first request that fails with a 5xx releases its Idempotency-Key: the
// repeat runs again instead of replaying the stored failure.
func TestIdempotencyKeyReleasedAfterServerError(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	bridge := e.bridgeStorefrontA(owner.caller, "shop", "tok")["id"]
	order := e.do(owner.caller, "POST", "/api/v1/orders", map[string]any{
		"bridge_id": bridge, "external_id": "rel-1", "status": "pending",
		"customer":   map[string]any{"email": "b@example.com"},
		"line_items": []map[string]any{{"sku": "S", "name": "N", "quantity": 1, "unitPrice": 1, "totalPrice": 1, "requiresShipping": true, "taxable": true}},
		"totals":     map[string]any{"subtotal": 1, "shipping": 0, "tax": 0, "discount": 0, "total": 1},
	})
	require.Equal(t, 201, order.Code, "%s", order.Raw)
	path := "/api/v1/orders/" + order.data()["id"].(string) + "/resync"
	first := e.do(owner.caller, "POST", path, nil, "Idempotency-Key", "fails")
	require.GreaterOrEqual(t, first.Code, 500, "without Temporal a resync cannot start: %s", first.Raw)
	var kept int
	require.NoError(t, e.deps.Store.Pool.QueryRow(t.Context(), `SELECT count(*) FROM idempotency_keys WHERE key LIKE '%:fails'`).Scan(&kept))
	require.Zero(t, kept, "a 5xx answer is not kept")
	again := e.do(owner.caller, "POST", path, nil, "Idempotency-Key", "fails")
	require.Equal(t, first.Code, again.Code)
	require.Empty(t, again.Header.Get("Idempotent-Replayed"), "the repeat ran again")
}

func TestBadCharactersAreClientErrors(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()

	res := e.do(owner.caller, "POST", "/api/v1/api-keys", `{"name": "nul\u0000name", "scopes": ["orders:read"]}`)
	requireError(t, res, 400, "validation_error")
	// An escaped backslash followed by u0000 is an ordinary string.
	res = e.do(owner.caller, "POST", "/api/v1/api-keys", `{"name": "path\\u0000ok", "scopes": ["orders:read"]}`)
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	require.Equal(t, `path\u0000ok`, res.data()["name"])

	requireError(t, e.do(owner.caller, "GET", "/api/v1/orders?search=%FF", nil), 400, "validation_error")
	requireError(t, e.do(owner.caller, "GET", "/api/v1/orders?search=a%00b", nil), 400, "validation_error")
	requireError(t, e.do(owner.caller, "PATCH", "/api/v1/organizations", `{"settings": {"x": "\u0000"}}`), 400, "validation_error")
}

func TestLongPasswordsAreFullySignificant(t *testing.T) {
	e := newEnv(t)
	pw := strings.Repeat("p", 100)
	res := e.do(caller{}, "POST", "/api/v1/auth/signup", map[string]any{"email": "long@example.com", "password": pw, "first_name": "L", "last_name": "P"})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	require.Equal(t, 200, e.do(caller{}, "POST", "/api/v1/auth/login", map[string]any{"email": "long@example.com", "password": pw}).Code)
	// Differs only after byte 72, where plain bcrypt would stop reading.
	wrong := strings.Repeat("p", 99) + "q"
	requireError(t, e.do(caller{}, "POST", "/api/v1/auth/login", map[string]any{"email": "long@example.com", "password": wrong}), 401, "unauthorized")
}

func TestTimestampErrorsNameTheField(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	for _, body := range []string{
		`{"name": "x", "scopes": ["orders:read"], "expires_at": "tomorrow"}`,
		`{"name": "x", "scopes": ["orders:read"], "expires_at": 12}`,
	} {
		res := e.do(owner.caller, "POST", "/api/v1/api-keys", body)
		requireError(t, res, 400, "validation_error")
		d := res.Body["error"].(map[string]any)["details"].([]any)[0].(map[string]any)
		require.Equal(t, "expires_at", d["field"], body)
	}
	ok := e.do(owner.caller, "POST", "/api/v1/api-keys", map[string]any{"name": "x", "scopes": []string{"orders:read"}, "expires_at": time.Now().Add(time.Hour).Format(time.RFC3339)})
	require.Equal(t, 201, ok.Code, "%s", ok.Raw)
}

func TestNestedBridgeSecretsAreSealedAndRedacted(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	res := e.do(owner.caller, "POST", "/api/v1/bridges", map[string]any{
		"type": "storefront_a", "name": "nested",
		"config": map[string]any{"shopDomain": "n.myshopify.com", "accessToken": "tok", "extra": map[string]any{"oauth": map[string]any{"refresh_token": "leak-me"}}},
	})
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	require.NotContains(t, string(res.Raw), "leak-me")
	var cfg json.RawMessage
	require.NoError(t, e.deps.Store.Pool.QueryRow(t.Context(), `SELECT config FROM bridges WHERE id = $1`, res.data()["id"]).Scan(&cfg))
	require.NotContains(t, string(cfg), "leak-me", "nested credentials are encrypted at rest")
}
