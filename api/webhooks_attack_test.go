package api

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/config"
	"github.com/fos-dev/fos/platforms"
)

// Attacks on the inbound webhook route (issue 15, finding 4).
func TestInboundWebhookAttacks(t *testing.T) {
	e := newEnv(t)
	key := e.apiKey(e.signup(), "bridges:read", "bridges:write")
	const secret = "whsec-attack"
	id := inboundBridge(t, e, key, platforms.TypeStorefrontA, secret)
	path := "/api/v1/webhooks/" + id
	body := `{"id": 4242, "email": "a@example.com"}`
	sig := SignWebhookBody(secret, []byte(body))

	// A captured signed delivery replayed with new event-id headers is the
	// same event: stored once, processed once.
	first := e.do(caller{}, "POST", path, body, StorefrontAHMAC, sig, StorefrontATopic, "orders/create", StorefrontAEventID, "evt-1")
	require.Equal(t, 200, first.Code, "%s", first.Raw)
	for i := range 3 {
		res := e.do(caller{}, "POST", path, body, StorefrontAHMAC, sig, StorefrontATopic, "orders/create",
			StorefrontAEventID, fmt.Sprintf("forged-%d", i), WebhookIDHeader, fmt.Sprintf("wh-%d", i), StorefrontAWebhookID, "x")
		require.Equal(t, 200, res.Code, "%s", res.Raw)
		require.Equal(t, first.data()["event_id"], res.data()["event_id"])
	}
	require.Equal(t, 1, webhookEventCount(t, e, id))

	// A rotated secret fails at once in every process: a second router
	// over the same database (another API process) has the old secret
	// cached and still refuses it after the rotation through the first.
	other := &testEnv{t: t, handler: NewRouter(e.deps), deps: e.deps}
	require.Equal(t, 200, other.do(caller{}, "POST", path, `{"id": 1}`, HookSecretHeader, secret).Code)
	require.Equal(t, 200, e.do(key, "PATCH", "/api/v1/bridges/"+id, map[string]any{"config": map[string]any{"webhookSecret": "rotated"}}).Code)
	for _, env := range []*testEnv{e, other} {
		requireError(t, env.do(caller{}, "POST", path, `{"id": 2}`, HookSecretHeader, secret), 401, "invalid_signature")
		requireError(t, env.do(caller{}, "POST", path, `{"id": 3}`, StorefrontAHMAC, SignWebhookBody(secret, []byte(`{"id": 3}`))), 401, "invalid_signature")
		require.Equal(t, 200, env.do(caller{}, "POST", path, `{"id": 4}`, HookSecretHeader, "rotated").Code)
	}
}

// A flood is answered 429 before any database work, per bridge and per
// client address; another bridge is unaffected by one bridge's flood.
func TestInboundWebhookFlood(t *testing.T) {
	oldB, oldIP := webhookBridgeRate, webhookIPRate
	webhookBridgeRate, webhookIPRate = config.Rate{Events: 5, Per: time.Minute}, config.Rate{Events: 9, Per: time.Minute}
	t.Cleanup(func() { webhookBridgeRate, webhookIPRate = oldB, oldIP })
	e := newEnv(t)
	key := e.apiKey(e.signup(), "bridges:read", "bridges:write")
	a := inboundBridge(t, e, key, platforms.TypeStorefrontA, "s-a")
	b := inboundBridge(t, e, key, platforms.TypeStorefrontA, "s-b")
	for i := range 5 {
		require.Equal(t, 200, e.do(caller{}, "POST", "/api/v1/webhooks/"+a, fmt.Sprintf(`{"id": %d}`, i), HookSecretHeader, "s-a").Code)
	}
	res := e.do(caller{}, "POST", "/api/v1/webhooks/"+a, `{"id": 99}`, HookSecretHeader, "s-a")
	requireError(t, res, 429, "rate_limited")
	require.NotEmpty(t, res.Header.Get("Retry-After"))
	// Bridge b has its own budget, within the address's.
	for i := range 3 {
		require.Equal(t, 200, e.do(caller{}, "POST", "/api/v1/webhooks/"+b, fmt.Sprintf(`{"id": %d}`, i), HookSecretHeader, "s-b").Code)
	}
	// The address's budget (9, the refused delivery included) is spent.
	requireError(t, e.do(caller{}, "POST", "/api/v1/webhooks/"+b, `{"id": 50}`, HookSecretHeader, "s-b"), 429, "rate_limited")
}
