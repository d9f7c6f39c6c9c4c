package sandboxapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Wire details of the API-speaking sandbox stores that the connectors'
// end-to-end tests (package platforms) do not reach.

func newStoresServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(NewHandler())
	t.Cleanup(srv.Close)
	return srv
}

func TestStoreOrderCount(t *testing.T) {
	assert.Equal(t, StoreSize, StoreOrderCount("demo.myshopify.com"))
	assert.Equal(t, 10000, StoreOrderCount("bulk-10000.myshopify.com"))
	assert.Equal(t, 12, StoreOrderCount("BULK-12"))
	assert.Equal(t, MaxStoreSize, StoreOrderCount("bulk-99999999"))
	assert.Equal(t, StoreSize, StoreOrderCount("bulk-x"))
	// A store's first orders do not depend on its size.
	assert.Equal(t, generateOrders("storefront_a", "demo.myshopify.com", 300)[3], generateOrders("storefront_a", "demo.myshopify.com", 40)[3])
}

func sfaCall(t *testing.T, srv *httptest.Server, method, path string, body []byte) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+"/platforms/storefront_a/admin/api/2026-07"+path, strings.NewReader(string(body)))
	require.NoError(t, err)
	req.Header.Set("X-Shopify-Access-Token", "shpat_x")
	req.Header.Set("X-Shopify-Shop-Domain", "wire.myshopify.com")
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	var raw json.RawMessage
	_ = json.NewDecoder(resp.Body).Decode(&raw)
	return resp.StatusCode, resp.Header, raw
}

func TestStorefrontAStoreWire(t *testing.T) {
	srv := newStoresServer(t)

	// Default status is open: fewer than all; any is all.
	_, _, raw := sfaCall(t, srv, "GET", "/orders/count.json", nil)
	var open, all struct{ Count int }
	require.NoError(t, json.Unmarshal(raw, &open))
	_, _, raw = sfaCall(t, srv, "GET", "/orders/count.json?status=any", nil)
	require.NoError(t, json.Unmarshal(raw, &all))
	assert.Equal(t, StoreSize, all.Count)
	assert.Less(t, open.Count, all.Count)

	// page_info goes with limit only; the Link header has next and previous.
	status, h, _ := sfaCall(t, srv, "GET", "/orders.json?status=any&limit=100", nil)
	require.Equal(t, 200, status)
	assert.Contains(t, h.Get("Link"), `rel="next"`)
	assert.NotContains(t, h.Get("Link"), `rel="previous"`)
	next := pageInfo(t, h.Get("Link"), "next")
	status, h, _ = sfaCall(t, srv, "GET", "/orders.json?limit=100&status=any&page_info="+next, nil)
	assert.Equal(t, 400, status)
	status, h, raw = sfaCall(t, srv, "GET", "/orders.json?limit=100&fields=id,name&page_info="+next, nil)
	require.Equal(t, 200, status)
	assert.Contains(t, h.Get("Link"), `rel="previous"`)
	var page struct{ Orders []map[string]any }
	require.NoError(t, json.Unmarshal(raw, &page))
	require.Len(t, page.Orders, 100)
	assert.Len(t, page.Orders[0], 2, "fields keeps only id and name")
	prev := pageInfo(t, h.Get("Link"), "previous")
	_, _, raw = sfaCall(t, srv, "GET", "/orders.json?limit=100&page_info="+prev, nil)
	var back struct{ Orders []map[string]any }
	require.NoError(t, json.Unmarshal(raw, &back))
	require.Len(t, back.Orders, 100, "previous is the first page again")

	status, _, raw = sfaCall(t, srv, "GET", "/orders.json?limit=251", nil)
	assert.Equal(t, 400, status)
	assert.Contains(t, string(raw), "limit")
	status, _, _ = sfaCall(t, srv, "GET", "/orders.json?updated_at_min=yesterday", nil)
	assert.Equal(t, 400, status)

	// A closed fulfillment order refuses another fulfillment (422).
	var orders struct {
		Orders []struct {
			ID                int64   `json:"id"`
			FulfillmentStatus *string `json:"fulfillment_status"`
		}
	}
	_, _, raw = sfaCall(t, srv, "GET", "/orders.json?status=any&limit=250&fulfillment_status=shipped", nil)
	require.NoError(t, json.Unmarshal(raw, &orders))
	require.NotEmpty(t, orders.Orders)
	for _, o := range orders.Orders {
		require.Equal(t, "fulfilled", *o.FulfillmentStatus)
	}
	id := orders.Orders[0].ID
	body, _ := json.Marshal(map[string]any{"fulfillment": map[string]any{"line_items_by_fulfillment_order": []any{
		map[string]any{"fulfillment_order_id": id*10 + 5}}, "tracking_info": map[string]any{"number": "X1"}}})
	status, _, raw = sfaCall(t, srv, "POST", "/fulfillments.json", body)
	assert.Equal(t, 422, status)
	assert.Contains(t, string(raw), "unfulfillable status= closed")
	status, _, _ = sfaCall(t, srv, "POST", "/fulfillments.json", []byte(`{}`))
	assert.Equal(t, 400, status)

	// Webhooks: create 201, count, get, delete 200, get 404; bad topic 422.
	status, _, raw = sfaCall(t, srv, "POST", "/webhooks.json", []byte(`{"webhook":{"topic":"orders/updated","address":"https://x.example.com/h"}}`))
	require.Equal(t, 201, status)
	var hook struct{ Webhook struct{ ID int64 } }
	require.NoError(t, json.Unmarshal(raw, &hook))
	_, _, raw = sfaCall(t, srv, "GET", "/webhooks/count.json?topic=orders%2Fupdated", nil)
	assert.JSONEq(t, `{"count":1}`, string(raw))
	path := "/webhooks/" + jsonNumber(hook.Webhook.ID) + ".json"
	status, _, _ = sfaCall(t, srv, "GET", path, nil)
	assert.Equal(t, 200, status)
	status, _, _ = sfaCall(t, srv, "DELETE", path, nil)
	assert.Equal(t, 200, status)
	status, _, _ = sfaCall(t, srv, "GET", path, nil)
	assert.Equal(t, 404, status)
	status, _, raw = sfaCall(t, srv, "POST", "/webhooks.json", []byte(`{"webhook":{"topic":"carts/create","address":"ftp://x"}}`))
	assert.Equal(t, 422, status)
	assert.Contains(t, string(raw), "Invalid topic specified: carts/create")

	// An unknown API version is 404; no token is 401 in the platform's shape.
	req, _ := http.NewRequest("GET", srv.URL+"/platforms/storefront_a/admin/api/v9/orders.json", nil)
	req.Header.Set("X-Shopify-Access-Token", "t")
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, 404, resp.StatusCode)
	req, _ = http.NewRequest("GET", srv.URL+"/platforms/storefront_a/admin/api/2026-07/orders.json", nil)
	resp, err = srv.Client().Do(req)
	require.NoError(t, err)
	var errBody map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&errBody))
	_ = resp.Body.Close()
	assert.Equal(t, 401, resp.StatusCode)
	assert.Equal(t, "[API] Invalid API key or access token (unrecognized login or wrong password)", errBody["errors"])
}

func jsonNumber(n int64) string { b, _ := json.Marshal(n); return string(b) }

func pageInfo(t *testing.T, link, rel string) string {
	t.Helper()
	for _, part := range strings.Split(link, ",") {
		if strings.Contains(part, `rel="`+rel+`"`) {
			target := strings.TrimSpace(strings.Split(part, ";")[0])
			u, err := url.Parse(strings.Trim(target, "<>"))
			require.NoError(t, err)
			return u.Query().Get("page_info")
		}
	}
	t.Fatalf("no rel=%s in %q", rel, link)
	return ""
}

func TestShippingHubAStoreWire(t *testing.T) {
	srv := newStoresServer(t)
	get := func(path string) (int, map[string]any) {
		status, raw := carrierDo(t, srv, carrierCall{method: "GET", path: "/platforms/shipping_hub_a" + path, basic: []string{"wire-key", "secret"}})
		var v map[string]any
		_ = json.Unmarshal(raw, &v)
		return status, v
	}
	status, body := get("/orders?pageSize=100&page=3")
	require.Equal(t, 200, status)
	assert.EqualValues(t, StoreSize, body["total"])
	assert.EqualValues(t, 3, body["page"])
	assert.EqualValues(t, 3, body["pages"])
	assert.Len(t, body["orders"], 100)
	status, body = get("/orders?pageSize=100&page=4")
	require.Equal(t, 200, status)
	assert.Empty(t, body["orders"])

	status, body = get("/orders?orderStatus=shipped&pageSize=500")
	require.Equal(t, 200, status)
	for _, o := range body["orders"].([]any) {
		assert.Equal(t, "shipped", o.(map[string]any)["orderStatus"])
	}
	status, _ = get("/orders?pageSize=501")
	assert.Equal(t, 400, status)
	status, _ = get("/orders?modifyDateStart=yesterday")
	assert.Equal(t, 400, status)

	// Shipments without items unless asked.
	_, body = get("/shipments?pageSize=1")
	sh := body["shipments"].([]any)[0].(map[string]any)
	assert.Nil(t, sh["shipmentItems"])
	_, body = get("/shipments?pageSize=1&includeShipmentItems=true")
	sh = body["shipments"].([]any)[0].(map[string]any)
	assert.NotEmpty(t, sh["shipmentItems"])

	// A repeated markasshipped is recorded twice (the hub does not dedupe).
	_, body = get("/orders?orderStatus=awaiting_shipment&pageSize=1")
	orderID := body["orders"].([]any)[0].(map[string]any)["orderId"]
	mark, _ := json.Marshal(map[string]any{"orderId": orderID, "carrierCode": "ups", "trackingNumber": "1ZWIRE"})
	for i := 0; i < 2; i++ {
		status, _ := carrierDo(t, srv, carrierCall{method: "POST", path: "/platforms/shipping_hub_a/orders/markasshipped", body: mark, basic: []string{"wire-key", "secret"}})
		require.Equal(t, 200, status)
	}
	_, body = get("/fulfillments?trackingNumber=1ZWIRE")
	assert.EqualValues(t, 2, body["total"])
	status, _ = carrierDo(t, srv, carrierCall{method: "POST", path: "/platforms/shipping_hub_a/orders/markasshipped", body: []byte(`{"orderId":1}`), basic: []string{"wire-key", "secret"}})
	assert.Equal(t, 400, status, "carrierCode is required")

	// Webhooks: subscribe 201 {"id"}, list, unsubscribe 200, again 404.
	status, raw := carrierDo(t, srv, carrierCall{method: "POST", path: "/platforms/shipping_hub_a/webhooks/subscribe",
		body: []byte(`{"target_url":"https://x.example.com/h","event":"SHIP_NOTIFY","store_id":null,"friendly_name":"x"}`), basic: []string{"wire-key", "secret"}})
	require.Equal(t, 201, status)
	var sub struct{ ID int64 }
	require.NoError(t, json.Unmarshal(raw, &sub))
	_, body = get("/webhooks")
	hooks := body["webhooks"].([]any)
	require.Len(t, hooks, 1)
	assert.Equal(t, "SHIP_NOTIFY", hooks[0].(map[string]any)["HookType"])
	for _, want := range []int{200, 404} {
		status, _ := carrierDo(t, srv, carrierCall{method: "DELETE", path: "/platforms/shipping_hub_a/webhooks/" + jsonNumber(sub.ID), basic: []string{"wire-key", "secret"}})
		assert.Equal(t, want, status)
	}

	status, raw = carrierDo(t, srv, carrierCall{method: "GET", path: "/platforms/shipping_hub_a/warehouses"})
	assert.Equal(t, 401, status)
	assert.JSONEq(t, `{"message":"Invalid API credentials"}`, string(raw))
}

func TestStorefrontCStoreWire(t *testing.T) {
	srv := newStoresServer(t)
	h := map[string]string{"X-Auth-Token": "tok"}
	root := "/platforms/storefront_c/stores/wire1/"

	status, raw := carrierDo(t, srv, carrierCall{method: "GET", path: root + "v2/orders?page=2&limit=250", header: h})
	require.Equal(t, 200, status)
	var orders []map[string]any
	require.NoError(t, json.Unmarshal(raw, &orders))
	assert.Len(t, orders, StoreSize-250)
	status, raw = carrierDo(t, srv, carrierCall{method: "GET", path: root + "v2/orders?page=3&limit=250", header: h})
	assert.Equal(t, 204, status, "no more orders")
	assert.Empty(t, raw)

	status, raw = carrierDo(t, srv, carrierCall{method: "GET", path: root + "v2/orders?sort=date_modified:desc&limit=2", header: h})
	require.Equal(t, 200, status)
	require.NoError(t, json.Unmarshal(raw, &orders))
	require.Len(t, orders, 2)
	first, _ := parseSfcDate(orders[0]["date_modified"].(string))
	second, _ := parseSfcDate(orders[1]["date_modified"].(string))
	assert.False(t, first.Before(second))

	_, raw = carrierDo(t, srv, carrierCall{method: "GET", path: root + "v2/orders/count", header: h})
	var count struct{ Count int }
	require.NoError(t, json.Unmarshal(raw, &count))
	assert.Equal(t, StoreSize, count.Count)

	// Both spellings of the shipping addresses sub-resource.
	id := jsonNumber(int64(orders[0]["id"].(float64)))
	for _, sub := range []string{"shipping_addresses", "shippingaddresses"} {
		status, _ := carrierDo(t, srv, carrierCall{method: "GET", path: root + "v2/orders/" + id + "/" + sub, header: h})
		assert.Equal(t, 200, status, sub)
	}

	// V2 errors are arrays, V3 errors objects.
	status, raw = carrierDo(t, srv, carrierCall{method: "GET", path: root + "v2/orders/1", header: h})
	assert.Equal(t, 404, status)
	assert.JSONEq(t, `[{"status":404,"message":"The requested resource was not found."}]`, string(raw))
	status, raw = carrierDo(t, srv, carrierCall{method: "POST", path: root + "v3/hooks", header: h, body: []byte(`{"scope":"store/order/created"}`)})
	assert.Equal(t, 422, status)
	assert.JSONEq(t, `{"status":422,"title":"JSON data is missing or invalid","type":"/api-docs/getting-started/api-status-codes","errors":{"destination":"error.path.missing."}}`, string(raw))
	status, _ = carrierDo(t, srv, carrierCall{method: "POST", path: root + "v3/hooks", header: h,
		body: []byte(`{"scope":"store/order/created","destination":"https://x.example.com:8443/h"}`)})
	assert.Equal(t, 422, status, "port 443 only")

	// A shipment over more than is open is refused.
	status, raw = carrierDo(t, srv, carrierCall{method: "GET", path: root + "v2/orders/" + id + "/products", header: h})
	require.Equal(t, 200, status)
	var products []map[string]any
	require.NoError(t, json.Unmarshal(raw, &products))
	p := products[0]
	over, _ := json.Marshal(map[string]any{"order_address_id": p["order_address_id"], "tracking_number": "T",
		"items": []any{map[string]any{"order_product_id": p["id"], "quantity": p["quantity"].(float64) + 1}}})
	status, _ = carrierDo(t, srv, carrierCall{method: "POST", path: root + "v2/orders/" + id + "/shipments", header: h, body: over})
	assert.Equal(t, 400, status)

	status, raw = carrierDo(t, srv, carrierCall{method: "GET", path: root + "v3/hooks"})
	assert.Equal(t, 401, status)
	assert.Contains(t, string(raw), `"title"`)
}
