package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/internal/vendortest"
	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/store"
)

// vendorExample reads a platform's published example; the test fails,
// naming where it looked, when the vendor notes are missing (never a
// silent skip: vendortest).
func vendorExample(t *testing.T, typ, name string) []byte {
	t.Helper()
	return vendortest.Example(t, "platforms", typ, name)
}

// A delivery with storefront_a's published headers and its published
// order payload: the topic comes from X-Shopify-Topic, the signature
// header is the published one's (base64 of a SHA-256 HMAC), computed here
// with the bridge's key.
func TestInboundWebhookStorefrontAPublishedDelivery(t *testing.T) {
	var headers map[string]string
	require.NoError(t, json.Unmarshal(vendorExample(t, "storefront_a", "webhook_delivery_headers_example.json"), &headers))
	body := vendorExample(t, "storefront_a", "webhook_orders_topic_sample_payload.json")
	published, err := base64.StdEncoding.DecodeString(headers[StorefrontAHMAC])
	require.NoError(t, err)
	require.Len(t, published, 32, "a SHA-256 HMAC")

	e := newEnv(t)
	key := e.apiKey(e.signup(), "bridges:read", "bridges:write")
	const secret = "shpss_published_example"
	id := inboundBridge(t, e, key, platforms.TypeStorefrontA, secret)
	kv := []string{}
	for k, v := range headers {
		if k == StorefrontAHMAC {
			v = SignWebhookBody(secret, body)
		}
		kv = append(kv, k, v)
	}
	kv = append(kv, StorefrontAEventID, "published-1")
	res := e.do(caller{}, "POST", "/api/v1/webhooks/"+id, string(body), kv...)
	require.Equal(t, 200, res.Code, "%s", res.Raw)
	ev, err := store.WebhookEventByID(t.Context(), e.deps.Store.Pool, e.bridgeStoredRow(id).OrganizationID, uuid.MustParse(res.data()["event_id"].(string)))
	require.NoError(t, err)
	require.Equal(t, headers["X-Shopify-Topic"], ev.Topic)
	require.JSONEq(t, string(body), string(ev.Payload))

	// The published signature itself is not valid for this bridge's key.
	kv[len(kv)-1] = "published-2"
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i] == StorefrontAHMAC {
			kv[i+1] = headers[StorefrontAHMAC]
		}
	}
	requireError(t, e.do(caller{}, "POST", "/api/v1/webhooks/"+id, string(body), kv...), 401, "invalid_signature")
}

// shipping_hub_a's published payloads ({resource_url, resource_type}) come
// with the token the service put into the registered URL: the topic is the
// resource_type, and a redelivery is the same event.
func TestInboundWebhookShippingHubAPublishedPayloads(t *testing.T) {
	e := newEnv(t)
	key := e.apiKey(e.signup(), "bridges:read", "bridges:write")
	const secret = "hub-published-example"
	id := inboundBridge(t, e, key, platforms.TypeShippingHubA, secret)
	path := "/api/v1/webhooks/" + id + "?" + webhookTokenParam + "=" + url.QueryEscape(WebhookToken(secret, uuid.MustParse(id)))
	for _, name := range []string{"webhook_payload_ORDER_NOTIFY.json", "webhook_payload_SHIP_NOTIFY.json", "webhook_payload_ITEM_SHIP_NOTIFY.json"} {
		body := vendorExample(t, "shipping_hub_a", name)
		var payload struct {
			Type string `json:"resource_type"`
		}
		require.NoError(t, json.Unmarshal(body, &payload))
		res := e.do(caller{}, "POST", path, string(body))
		require.Equal(t, 200, res.Code, "%s: %s", name, res.Raw)
		ev, err := store.WebhookEventByID(t.Context(), e.deps.Store.Pool, e.bridgeStoredRow(id).OrganizationID, uuid.MustParse(res.data()["event_id"].(string)))
		require.NoError(t, err)
		require.Equal(t, payload.Type, ev.Topic, name)
		again := e.do(caller{}, "POST", path, string(body))
		require.Equal(t, res.data()["event_id"], again.data()["event_id"], "a redelivery is the same event")
	}
	requireError(t, e.do(caller{}, "POST", "/api/v1/webhooks/"+id, string(vendorExample(t, "shipping_hub_a", "webhook_payload_SHIP_NOTIFY.json"))), 401, "invalid_signature")
}

// storefront_c's published light payloads ({scope, data, hash, …}, no
// topic header): the topic is the scope, each is its own event, and the
// order they point at is the one processing fetches.
func TestInboundWebhookStorefrontCPublishedPayloads(t *testing.T) {
	e := newEnv(t)
	key := e.apiKey(e.signup(), "bridges:read", "bridges:write")
	const secret = "sfc-published-example"
	id := inboundBridge(t, e, key, platforms.TypeStorefrontC, secret)
	for name, want := range map[string]string{
		"webhook_payload_store_order_created.json":       "250",
		"webhook_payload_store_order_updated.json":       "272",
		"webhook_payload_store_order_statusUpdated.json": "250",
		"webhook_payload_store_shipment_created.json":    "251",
	} {
		body := vendorExample(t, "storefront_c", name)
		var payload map[string]any
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		require.NoError(t, dec.Decode(&payload))
		res := e.do(caller{}, "POST", "/api/v1/webhooks/"+id, string(body), HookSecretHeader, secret)
		require.Equal(t, 200, res.Code, "%s: %s", name, res.Raw)
		ev, err := store.WebhookEventByID(t.Context(), e.deps.Store.Pool, e.bridgeStoredRow(id).OrganizationID, uuid.MustParse(res.data()["event_id"].(string)))
		require.NoError(t, err)
		require.Equal(t, payload["scope"], ev.Topic, name)
		var stored map[string]any
		dec = json.NewDecoder(bytes.NewReader(ev.Payload))
		dec.UseNumber()
		require.NoError(t, dec.Decode(&stored))
		orderID, ignored, err := activities.WebhookOrderRef(platforms.TypeStorefrontC, ev.Topic, stored)
		require.NoError(t, err, name)
		require.Empty(t, ignored, name)
		require.Equal(t, want, orderID, name)
		again := e.do(caller{}, "POST", "/api/v1/webhooks/"+id, string(body), HookSecretHeader, secret)
		require.Equal(t, res.data()["event_id"], again.data()["event_id"], "a redelivery is the same event")
	}
}
