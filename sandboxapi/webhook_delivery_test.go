package sandboxapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type received struct {
	header http.Header
	body   []byte
}

// receiver records deliveries; the first fails answers 500.
func receiver(t *testing.T, fails int) (*httptest.Server, chan received) {
	ch := make(chan received, 10)
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		n++
		if n <= fails {
			w.WriteHeader(500)
			return
		}
		ch <- received{r.Header.Clone(), body}
	}))
	t.Cleanup(srv.Close)
	return srv, ch
}

func postJSON(t *testing.T, req *http.Request) (int, map[string]any) {
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func TestStorefrontAWebhookDelivery(t *testing.T) {
	sb := newStoresServer(t)
	rcv, ch := receiver(t, 1) // the first attempt fails: retried
	const shop = "deliver.myshopify.com"
	req, _ := http.NewRequest("POST", sb.URL+"/platforms/storefront_a/admin/api/2026-07/webhooks.json",
		bytes.NewReader([]byte(`{"webhook": {"topic": "orders/create", "address": "`+rcv.URL+`/hook"}}`)))
	req.Header.Set("X-Shopify-Access-Token", "t")
	req.Header.Set("X-Shopify-Shop-Domain", shop)
	code, _ := postJSON(t, req)
	require.Equal(t, 201, code)

	req, _ = http.NewRequest("POST", sb.URL+"/platforms/storefront_a/_sandbox/orders", bytes.NewReader([]byte(`{"shop_domain": "`+shop+`"}`)))
	code, out := postJSON(t, req)
	require.Equal(t, 201, code)
	require.Equal(t, float64(1), out["deliveries"])
	id := out["order"].(map[string]any)["id"]

	var got received
	select {
	case got = <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("no delivery")
	}
	require.Equal(t, "orders/create", got.header.Get("X-Shopify-Topic"))
	require.Equal(t, shop, got.header.Get("X-Shopify-Shop-Domain"))
	require.NotEmpty(t, got.header.Get("X-Shopify-Event-Id"))
	require.NotEmpty(t, got.header.Get("X-Shopify-Webhook-Id"))
	require.Equal(t, signBody(SandboxAppSecret, got.body), got.header.Get("X-Shopify-Hmac-Sha256"))
	var o map[string]any
	require.NoError(t, json.Unmarshal(got.body, &o))
	require.Equal(t, id, o["id"])

	// The new order is in the shop's catalog.
	req, _ = http.NewRequest("GET", sb.URL+"/platforms/storefront_a/admin/api/2026-07/orders/"+anyJSON(id)+".json", nil)
	req.Header.Set("X-Shopify-Access-Token", "t")
	req.Header.Set("X-Shopify-Shop-Domain", shop)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)

	// An update of an order is orders/updated: nobody registered it.
	req, _ = http.NewRequest("POST", sb.URL+"/platforms/storefront_a/_sandbox/orders",
		bytes.NewReader([]byte(`{"shop_domain": "`+shop+`", "id": `+anyJSON(id)+`, "note": "n", "webhook_secret": "other"}`)))
	code, out = postJSON(t, req)
	require.Equal(t, 200, code)
	require.Equal(t, float64(0), out["deliveries"])
	require.Equal(t, "n", out["order"].(map[string]any)["note"])
}

func anyJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestShippingHubAWebhookDelivery(t *testing.T) {
	sb := newStoresServer(t)
	rcv, ch := receiver(t, 0)
	req, _ := http.NewRequest("POST", sb.URL+"/platforms/shipping_hub_a/webhooks/subscribe",
		bytes.NewReader([]byte(`{"target_url": "`+rcv.URL+`/hook?token=abc", "event": "ORDER_NOTIFY"}`)))
	req.SetBasicAuth("hubkey", "s")
	code, _ := postJSON(t, req)
	require.Equal(t, 201, code)
	req, _ = http.NewRequest("POST", sb.URL+"/platforms/shipping_hub_a/_sandbox/orders", bytes.NewReader([]byte(`{"api_key": "hubkey"}`)))
	code, out := postJSON(t, req)
	require.Equal(t, 201, code)
	require.Equal(t, float64(1), out["deliveries"])
	select {
	case got := <-ch:
		var body map[string]string
		require.NoError(t, json.Unmarshal(got.body, &body))
		require.Equal(t, "ORDER_NOTIFY", body["resource_type"])
		require.Contains(t, body["resource_url"], "/platforms/shipping_hub_a/orders?")
		require.Empty(t, got.header.Get("X-Shopify-Hmac-Sha256"))
	case <-time.After(5 * time.Second):
		t.Fatal("no delivery")
	}
}
