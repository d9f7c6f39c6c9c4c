package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/sandboxapi"
	"github.com/fos-dev/fos/store"
)

// webhookEnv is the API with the platforms' own connectors pointed at the
// sandbox, as under fos dev (plain-http addresses allowed) with the
// storefront_a app's client secret set, so storefront_a topics can be
// enabled on a bridge without a webhookSecret of its own.
func webhookEnv(t *testing.T) (*testEnv, *httptest.Server) {
	sb := httptest.NewServer(sandboxapi.NewHandler())
	t.Cleanup(sb.Close)
	t.Setenv(platforms.EnvStorefrontAClientSecret, "shpss_app_client_secret")
	reg := platforms.NewAPIRegistry(platforms.SandboxURLs(sb.URL), sb.Client(), nil)
	return newEnv(t, func(d *Deps) { d.Platforms = reg; d.AllowPrivateURLs = true }), sb
}

func sandboxWebhooks(t *testing.T, sb *httptest.Server, domain, token string) []map[string]any {
	req, _ := http.NewRequest("GET", sb.URL+"/platforms/storefront_a/admin/api/2026-07/webhooks.json", nil)
	req.Header.Set("X-Shopify-Access-Token", token)
	req.Header.Set("X-Shopify-Shop-Domain", domain)
	resp, err := sb.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Webhooks []map[string]any `json:"webhooks"`
	}
	require.NoError(t, decodeResp(resp, &out))
	return out.Webhooks
}

func TestBridgeWebhooksRegistration(t *testing.T) {
	e, sb := webhookEnv(t)
	owner := e.signup()
	key := e.apiKey(owner, "bridges:read", "bridges:write")
	domain := "hooks-" + uuid.NewString()[:8] + ".myshopify.com"
	b := e.bridgeCreate(key, platforms.TypeStorefrontA, "Shop", map[string]any{"shopDomain": domain, "accessToken": "shpat_x"})
	id := b["id"].(string)
	path := "/api/v1/bridges/" + id + "/webhooks"

	res := e.do(key, "GET", path, nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	d := res.data()
	require.ElementsMatch(t, []string{"supported", "bridgeId", "bridgeType", "availableTopics", "enabledTopics", "registeredWebhooks", "webhookUrl"},
		responseKeys(d), "spec Part 2: GET webhooks of a supporting type")
	require.ElementsMatch(t, []string{"topic", "description"}, responseKeys(d["availableTopics"].([]any)[0].(map[string]any)))
	require.Equal(t, true, d["supported"])
	require.Equal(t, id, d["bridgeId"])
	require.Equal(t, "storefront_a", d["bridgeType"])
	require.Len(t, d["availableTopics"], 3)
	require.Equal(t, []any{}, d["enabledTopics"])
	require.Equal(t, map[string]any{}, d["registeredWebhooks"])
	require.Equal(t, "http://fos.test/api/v1/webhooks/"+id, d["webhookUrl"])

	// Validation.
	requireError(t, e.do(key, "POST", path, map[string]any{}), 400, "validation_error")
	requireError(t, e.do(key, "POST", path, map[string]any{"topics": []string{}}), 400, "validation_error")
	res = e.do(key, "POST", path, map[string]any{"topics": []string{"orders/create", "SHIP_NOTIFY"}})
	requireError(t, res, 400, "validation_error")
	require.Equal(t, []string{"topics[1]"}, bridgeErrFields(t, res))
	requireError(t, e.do(key, "POST", path, map[string]any{"topics": "orders/create"}), 400, "validation_error")

	// Enable registers on the platform with the inbound URL.
	res = e.do(key, "POST", path, map[string]any{"topics": []string{"orders/create"}})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	d = res.data()
	require.ElementsMatch(t, []string{"enabled", "registered", "webhookUrl"}, responseKeys(d), "spec Part 2: POST webhooks")
	require.Equal(t, []any{"orders/create"}, d["enabled"])
	require.Equal(t, []any{"orders/create"}, d["registered"])
	require.Equal(t, "http://fos.test/api/v1/webhooks/"+id, d["webhookUrl"])
	require.NotContains(t, d, "errors")
	hooks := sandboxWebhooks(t, sb, domain, "shpat_x")
	require.Len(t, hooks, 1)
	require.Equal(t, "orders/create", hooks[0]["topic"])
	require.Equal(t, "http://fos.test/api/v1/webhooks/"+id, hooks[0]["address"])

	// A secret was generated, sealed and redacted.
	bridge := e.do(key, "GET", "/api/v1/bridges/"+id, nil).data()
	cfg := bridge["config"].(map[string]any)
	require.Equal(t, platforms.RedactedValue, cfg["webhookSecret"])
	reg := cfg["registeredWebhooks"].(map[string]any)
	require.Equal(t, hooks[0]["id"], reg["orders/create"], "the platform's id, as a number")
	full, err := store.BridgeFullConfig(e.deps.Secrets, e.bridgeStoredRow(id))
	require.NoError(t, err)
	secret := full["webhookSecret"].(string)
	require.Len(t, secret, 64)
	e.bridgeRequireSecretSealed(id, "webhookSecret", secret)

	// Registered topics are skipped.
	res = e.do(key, "POST", path, map[string]any{"topics": []string{"orders/create", "orders/updated"}})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, []any{"orders/updated"}, res.data()["registered"])
	require.ElementsMatch(t, []any{"orders/create", "orders/updated"}, res.data()["enabled"])
	require.Len(t, sandboxWebhooks(t, sb, domain, "shpat_x"), 2)
	// The secret stays what it was.
	full, _ = store.BridgeFullConfig(e.deps.Secrets, e.bridgeStoredRow(id))
	require.Equal(t, secret, full["webhookSecret"])

	// Disable with a URL-encoded topic removes the registration.
	res = e.do(key, "DELETE", path+"/orders%2Fcreate", nil)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.ElementsMatch(t, []string{"disabled", "enabled"}, responseKeys(res.data()), "spec Part 2: DELETE webhooks/:topic")
	require.Equal(t, "orders/create", res.data()["disabled"])
	require.Equal(t, []any{"orders/updated"}, res.data()["enabled"])
	hooks = sandboxWebhooks(t, sb, domain, "shpat_x")
	require.Len(t, hooks, 1)
	require.Equal(t, "orders/updated", hooks[0]["topic"])
	requireError(t, e.do(key, "DELETE", path+"/orders%2Fcreate", nil), 404, "not_found")
	requireError(t, e.do(key, "DELETE", path+"/nope", nil), 400, "validation_error")
	d = e.do(key, "GET", path, nil).data()
	require.Equal(t, []any{"orders/updated"}, d["enabledTopics"])
	require.Len(t, d["registeredWebhooks"], 1)

	// Scopes and organizations.
	readOnly := e.apiKey(owner, "bridges:read")
	requireError(t, e.do(readOnly, "POST", path, map[string]any{"topics": []string{"orders/create"}}), 403, "insufficient_scope")
	requireError(t, e.do(readOnly, "DELETE", path+"/orders%2Fupdated", nil), 403, "insufficient_scope")
	other := e.apiKey(e.signup(), "bridges:read", "bridges:write")
	requireError(t, e.do(other, "GET", path, nil), 404, "not_found")
	requireError(t, e.do(other, "POST", path, map[string]any{"topics": []string{"orders/create"}}), 404, "not_found")
	requireError(t, e.do(other, "DELETE", path+"/orders%2Fupdated", nil), 404, "not_found")
	// Another organization's bridge is 404 before its body is looked at;
	// the organization's own gets the body's 400.
	requireError(t, e.do(other, "POST", path, "{not json"), 404, "not_found")
	requireError(t, e.do(other, "POST", path, map[string]any{"topics": []string{"nope"}}), 404, "not_found")
	requireError(t, e.do(other, "DELETE", path+"/nope", nil), 404, "not_found")
	requireError(t, e.do(key, "POST", path, "{not json"), 400, "invalid_json")
}

func TestBridgeWebhooksHubToken(t *testing.T) {
	e, sb := webhookEnv(t)
	key := e.apiKey(e.signup(), "bridges:read", "bridges:write")
	apiKey := "hub-" + uuid.NewString()[:8]
	b := e.bridgeCreate(key, platforms.TypeShippingHubA, "Hub", map[string]any{"apiKey": apiKey, "apiSecret": "s"})
	id := b["id"].(string)
	// This router and a second one (another API process) cache the bridge
	// while it has no secret; the secret the enable below generates is in
	// force in both at once (their cache follows the sealed credentials).
	other := &testEnv{t: t, handler: NewRouter(e.deps), deps: e.deps}
	for _, env := range []*testEnv{e, other} {
		requireError(t, env.do(caller{}, "POST", "/api/v1/webhooks/"+id+"?token=wrong", `{"resource_type":"ORDER_NOTIFY"}`), 401, "invalid_signature")
	}
	res := e.do(key, "POST", "/api/v1/bridges/"+id+"/webhooks", map[string]any{"topics": []string{"ORDER_NOTIFY"}})
	require.Equal(t, 200, res.Code, "%s", res.Raw)

	req, _ := http.NewRequest("GET", sb.URL+"/platforms/shipping_hub_a/webhooks", nil)
	req.SetBasicAuth(apiKey, "s")
	resp, err := sb.Client().Do(req)
	require.NoError(t, err)
	var out struct {
		Webhooks []struct {
			URL      string `json:"Url"`
			HookType string
		} `json:"webhooks"`
	}
	require.NoError(t, decodeResp(resp, &out))
	require.Len(t, out.Webhooks, 1)
	full, _ := store.BridgeFullConfig(e.deps.Secrets, e.bridgeStoredRow(id))
	secret := full["webhookSecret"].(string)
	require.Equal(t, "http://fos.test/api/v1/webhooks/"+id+"?token="+WebhookToken(secret, uuid.MustParse(id)), out.Webhooks[0].URL)
	require.NotContains(t, out.Webhooks[0].URL, secret, "the secret itself never goes into a URL")

	// The registered URL is accepted as it is.
	u := strings.TrimPrefix(out.Webhooks[0].URL, "http://fos.test")
	for _, env := range []*testEnv{e, other} {
		res = env.do(caller{}, "POST", u, `{"resource_url":"https://hub/orders?importBatch=1","resource_type":"ORDER_NOTIFY"}`)
		require.Equal(t, 200, res.Code, "%s", res.Raw)
	}
	requireError(t, e.do(caller{}, "POST", "/api/v1/webhooks/"+id+"?token=wrong", `{"resource_type":"ORDER_NOTIFY"}`), 401, "invalid_signature")
}

func TestBridgeWebhooksUnsupportedType(t *testing.T) {
	e, _ := webhookEnv(t)
	key := e.apiKey(e.signup(), "bridges:read", "bridges:write")
	b := e.bridgeCreate(key, platforms.TypeStorefrontC, "C", map[string]any{"storeHash": "abc", "accessToken": "t"})
	path := "/api/v1/bridges/" + b["id"].(string) + "/webhooks"
	for _, res := range []*response{
		e.do(key, "GET", path, nil),
		e.do(key, "POST", path, map[string]any{"topics": []string{"orders/create"}}),
		e.do(key, "DELETE", path+"/orders%2Fcreate", nil),
	} {
		require.Equal(t, 200, res.Code, "%s", res.Raw)
		require.ElementsMatch(t, []string{"supported", "message"}, responseKeys(res.data()))
		require.Equal(t, false, res.data()["supported"])
		require.NotEmpty(t, res.data()["message"])
	}
}

// flakyRegistrar fails one topic.
type flakyRegistrar struct {
	platforms.Connector
	fail string
}

func (f flakyRegistrar) RegisterWebhook(_ context.Context, _ platforms.Bridge, topic, address string) (platforms.Webhook, error) {
	if topic == f.fail {
		return platforms.Webhook{}, &platforms.Error{StatusCode: 422, Code: platforms.CodeInvalidRequest, Message: "Invalid topic specified"}
	}
	return platforms.Webhook{ID: "123456789", Topic: topic, Address: address}, nil
}
func (flakyRegistrar) ListWebhooks(context.Context, platforms.Bridge) ([]platforms.Webhook, error) {
	return nil, errors.New("list unavailable")
}
func (flakyRegistrar) DeleteWebhook(context.Context, platforms.Bridge, string) error {
	return &platforms.Error{StatusCode: 503, Code: platforms.CodePlatformUnavailable, Message: "down"}
}

func TestBridgeWebhooksPartialFailure(t *testing.T) {
	reg := platforms.NewRegistry()
	reg.Register(platforms.TypeStorefrontA, flakyRegistrar{fail: "orders/fulfilled"})
	t.Setenv(platforms.EnvStorefrontAClientSecret, "shpss_app_client_secret") // storefront_a topics need a signing key
	e := newEnv(t, func(d *Deps) { d.Platforms = reg; d.AllowPrivateURLs = true })
	key := e.apiKey(e.signup(), "bridges:read", "bridges:write")
	id := e.bridgeStorefrontA(key, "Shop", "shpat_x")["id"].(string)
	path := "/api/v1/bridges/" + id + "/webhooks"

	res := e.do(key, "POST", path, map[string]any{"topics": []string{"orders/create", "orders/fulfilled"}})
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, []any{"orders/create"}, res.data()["enabled"])
	errs := res.data()["errors"].([]any)
	require.Len(t, errs, 1)
	require.ElementsMatch(t, []string{"topic", "error"}, responseKeys(errs[0].(map[string]any)))
	require.Equal(t, "orders/fulfilled", errs[0].(map[string]any)["topic"])
	require.NotEmpty(t, errs[0].(map[string]any)["error"])
	require.Equal(t, map[string]any{"orders/create": float64(123456789)}, e.do(key, "GET", path, nil).data()["registeredWebhooks"])

	// Nothing registered at all: 502, nothing recorded.
	requireError(t, e.do(key, "POST", path, map[string]any{"topics": []string{"orders/fulfilled"}}), 502, "platform_error")
	// The platform refusing to delete keeps the topic.
	requireError(t, e.do(key, "DELETE", path+"/orders%2Fcreate", nil), 502, "platform_error")
	require.Equal(t, []any{"orders/create"}, e.do(key, "GET", path, nil).data()["enabledTopics"])
}

// inboundBridge creates a bridge of typ with a known webhook secret.
func inboundBridge(t *testing.T, e *testEnv, key caller, typ, secret string) string {
	cfg := map[string]any{"shopDomain": "in.myshopify.com", "accessToken": "shpat_x", "webhookSecret": secret}
	switch typ {
	case platforms.TypeShippingHubA:
		cfg = map[string]any{"apiKey": "k", "apiSecret": "s", "webhookSecret": secret}
	case platforms.TypeStorefrontC:
		cfg = map[string]any{"storeHash": "abcde", "accessToken": "sfc_x", "webhookSecret": secret}
	}
	return e.bridgeCreate(key, typ, "In", cfg)["id"].(string)
}

func webhookEventCount(t *testing.T, e *testEnv, bridgeID string) int {
	var n int
	require.NoError(t, e.deps.Store.Pool.QueryRow(t.Context(), `SELECT count(*) FROM webhook_events WHERE bridge_id = $1`, bridgeID).Scan(&n))
	return n
}

func TestInboundWebhook(t *testing.T) {
	e := newEnv(t)
	key := e.apiKey(e.signup(), "bridges:read", "bridges:write")
	const secret = "whsec-inbound-test"
	id := inboundBridge(t, e, key, platforms.TypeStorefrontA, secret)
	path := "/api/v1/webhooks/" + id
	body := `{"id": 820982911946154508, "email": "jon@example.com"}`
	sig := SignWebhookBody(secret, []byte(body))

	// The platform's signature; no API key.
	res := e.do(caller{}, "POST", path, body, StorefrontAHMAC, sig, StorefrontATopic, "orders/create", StorefrontAEventID, "evt-1")
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.ElementsMatch(t, []string{"received", "event_id"}, responseKeys(res.data()), "spec Part 2: inbound webhook answer")
	require.Equal(t, true, res.data()["received"])
	eventID := res.data()["event_id"].(string)
	ev, err := store.WebhookEventByID(t.Context(), e.deps.Store.Pool, uuid.MustParse(e.bridgeStoredRow(id).OrganizationID.String()), uuid.MustParse(eventID))
	require.NoError(t, err)
	require.Equal(t, "orders/create", ev.Topic)
	// Signed by the platform over the body alone: the key is the body's
	// (the event-id header is not signed).
	require.True(t, strings.HasPrefix(ev.DedupeKey, "signed:"), ev.DedupeKey)
	require.Equal(t, store.WebhookEventReceived, ev.Status)
	require.JSONEq(t, body, string(ev.Payload))
	require.NotContains(t, string(ev.Headers), sig, "the signature is not kept")
	require.Contains(t, string(ev.Headers), "evt-1")

	// A redelivery (same event id, new delivery id) is the same event.
	res = e.do(caller{}, "POST", path, body, StorefrontAHMAC, sig, StorefrontATopic, "orders/create", StorefrontAEventID, "evt-1", StorefrontAWebhookID, "d2")
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	require.Equal(t, eventID, res.data()["event_id"])
	require.Equal(t, 1, webhookEventCount(t, e, id))

	// Wrong or missing proofs.
	requireError(t, e.do(caller{}, "POST", path, body), 401, "invalid_signature")
	requireError(t, e.do(caller{}, "POST", path, body, StorefrontAHMAC, SignWebhookBody("other", []byte(body))), 401, "invalid_signature")
	requireError(t, e.do(caller{}, "POST", path, body+" ", StorefrontAHMAC, sig), 401, "invalid_signature") // body changed
	requireError(t, e.do(caller{}, "POST", path, body, StorefrontAHMAC, "not base64!"), 401, "invalid_signature")
	requireError(t, e.do(caller{}, "POST", path, body, HookSecretHeader, "whsec-wrong"), 401, "invalid_signature")
	requireError(t, e.do(caller{}, "POST", path+"?token=abc", body), 401, "invalid_signature")
	// An API key is no proof.
	requireError(t, e.do(key, "POST", path, body), 401, "invalid_signature")

	// X-Hook-Secret; topic and dedupe key from the generic headers, then
	// the payload.
	res = e.do(caller{}, "POST", path, `{"topic": "orders/updated", "id": 5}`, HookSecretHeader, secret, WebhookIDHeader, "wh-9")
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	ev2, err := store.WebhookEventByID(t.Context(), e.deps.Store.Pool, ev.OrganizationID, uuid.MustParse(res.data()["event_id"].(string)))
	require.NoError(t, err)
	require.Equal(t, "orders/updated", ev2.Topic)
	require.Equal(t, "webhook:wh-9", ev2.DedupeKey)
	res = e.do(caller{}, "POST", path, `{"topic": "orders/updated", "id": 5}`, HookSecretHeader, secret)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	ev3, _ := store.WebhookEventByID(t.Context(), e.deps.Store.Pool, ev.OrganizationID, uuid.MustParse(res.data()["event_id"].(string)))
	require.Equal(t, "id:5", ev3.DedupeKey)
	// Neither: a hash of the body, the same on redelivery.
	r1 := e.do(caller{}, "POST", path, `{"resource_type": "X"}`, HookSecretHeader, secret)
	r2 := e.do(caller{}, "POST", path, `{"resource_type": "X"}`, HookSecretHeader, secret)
	require.Equal(t, 200, r1.Code, "%s", r1.Raw)
	require.Equal(t, r1.data()["event_id"], r2.data()["event_id"])
	ev4, _ := store.WebhookEventByID(t.Context(), e.deps.Store.Pool, ev.OrganizationID, uuid.MustParse(r1.data()["event_id"].(string)))
	require.True(t, strings.HasPrefix(ev4.DedupeKey, "sha256:"))
	require.Equal(t, "X", ev4.Topic)

	// Bad payloads (after a valid proof).
	for _, bad := range []string{`[1, 2]`, `"text"`, `not json`, ``, `{"a": `} {
		requireError(t, e.do(caller{}, "POST", path, bad, HookSecretHeader, secret), 400, "invalid_payload")
	}
	big := `{"pad": "` + strings.Repeat("x", MaxWebhookBody) + `"}`
	requireError(t, e.do(caller{}, "POST", path, big, HookSecretHeader, secret), 400, "invalid_payload")

	// Unknown, malformed, paused bridges.
	requireError(t, e.do(caller{}, "POST", "/api/v1/webhooks/"+uuid.NewString(), body, HookSecretHeader, secret), 404, "not_found")
	requireError(t, e.do(caller{}, "POST", "/api/v1/webhooks/nope", body, HookSecretHeader, secret), 404, "not_found")
	require.Equal(t, 200, e.do(key, "PATCH", "/api/v1/bridges/"+id, map[string]any{"status": "paused"}).Code)
	requireError(t, e.do(caller{}, "POST", path, body, HookSecretHeader, secret), 404, "not_found")
	require.Equal(t, 200, e.do(key, "PATCH", "/api/v1/bridges/"+id, map[string]any{"status": "active"}).Code)
	require.Equal(t, 200, e.do(caller{}, "POST", path, body, HookSecretHeader, secret).Code)

	// A rotated secret is used at once, even with the old one cached.
	require.Equal(t, 200, e.do(key, "PATCH", "/api/v1/bridges/"+id, map[string]any{"config": map[string]any{"webhookSecret": "rotated"}}).Code)
	requireError(t, e.do(caller{}, "POST", path, `{"id": 77}`, HookSecretHeader, secret+"x"), 401, "invalid_signature")
	require.Equal(t, 200, e.do(caller{}, "POST", path, `{"id": 77}`, HookSecretHeader, "rotated").Code)

	// A bridge without a secret accepts nothing.
	noSecret := e.bridgeStorefrontA(key, "No secret", "shpat_y")["id"].(string)
	requireError(t, e.do(caller{}, "POST", "/api/v1/webhooks/"+noSecret, body, HookSecretHeader, ""), 401, "invalid_signature")
	requireError(t, e.do(caller{}, "POST", "/api/v1/webhooks/"+noSecret, body, StorefrontAHMAC, SignWebhookBody("", []byte(body))), 401, "invalid_signature")

	// A deleted bridge, even while cached.
	require.Equal(t, 200, e.do(key, "DELETE", "/api/v1/bridges/"+id, nil).Code)
	requireError(t, e.do(caller{}, "POST", path, `{"id": 78}`, HookSecretHeader, "rotated"), 404, "not_found")
}

func TestInboundWebhookConcurrentRedeliveries(t *testing.T) {
	e := newEnv(t)
	key := e.apiKey(e.signup(), "bridges:read", "bridges:write")
	id := inboundBridge(t, e, key, platforms.TypeStorefrontA, "s3cret")
	ids := make(chan string, 16)
	for i := 0; i < 16; i++ {
		go func() {
			res := e.do(caller{}, "POST", "/api/v1/webhooks/"+id, `{"id": 1}`, HookSecretHeader, "s3cret", WebhookIDHeader, "same")
			ids <- res.data()["event_id"].(string)
		}()
	}
	first := <-ids
	for i := 1; i < 16; i++ {
		select {
		case got := <-ids:
			require.Equal(t, first, got)
		case <-time.After(10 * time.Second):
			t.Fatal("timeout")
		}
	}
	require.Equal(t, 1, webhookEventCount(t, e, id))
}

func decodeResp(resp *http.Response, v any) error {
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

// responseKeys lists the keys of a response object (to compare a shape
// with the spec's field list, no more and no less).
func responseKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A signed event keys the same from the platform's bytes and from the
// stored jsonb payload (keys reordered, space dropped), whatever its
// unsigned event-id headers say; another body or topic keys differently.
func TestWebhookDedupeKeyOfSignedBody(t *testing.T) {
	r1 := httptest.NewRequest("POST", "/", nil)
	r1.Header.Set(StorefrontAEventID, "a")
	r2 := httptest.NewRequest("POST", "/", nil)
	r2.Header.Set(StorefrontAEventID, "b")
	raw := []byte(`{"id": 7, "total_price": "10.50", "note": "x",  "n": 1.50}`)
	stored := []byte(`{"n": 1.50, "id": 7, "note": "x", "total_price": "10.50"}`)
	k := webhookDedupeKey(r1, "storefront_a", "orders/create", nil, raw, true)
	require.Equal(t, k, webhookDedupeKey(r2, "storefront_a", "orders/create", nil, stored, true))
	require.NotEqual(t, k, webhookDedupeKey(r1, "storefront_a", "orders/updated", nil, raw, true))
	require.NotEqual(t, k, webhookDedupeKey(r1, "storefront_a", "orders/create", nil, []byte(`{"id": 8}`), true))
	require.Equal(t, "event:a", webhookDedupeKey(r1, "storefront_a", "orders/create", nil, raw, false))
}
