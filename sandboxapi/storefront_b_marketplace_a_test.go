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

// Wire details of the storefront_b and marketplace_a sandbox stores that
// the connectors' end-to-end tests (package platforms) do not reach.

func wcCall(t *testing.T, srv *httptest.Server, method, path, body string) (int, http.Header, json.RawMessage) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+"/platforms/storefront_b/wire.example.com/shop/wp-json/wc/v3"+path, strings.NewReader(body))
	require.NoError(t, err)
	req.SetBasicAuth("ck_wire", "cs_wire")
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	var raw json.RawMessage
	_ = json.NewDecoder(resp.Body).Decode(&raw)
	return resp.StatusCode, resp.Header, raw
}

func TestStorefrontBStoreWire(t *testing.T) {
	srv := newStoresServer(t)

	// Defaults: 10 a page, newest first; the page headers and links.
	status, h, raw := wcCall(t, srv, "GET", "/orders", "")
	require.Equal(t, 200, status)
	var first []wcOrder
	require.NoError(t, json.Unmarshal(raw, &first))
	require.Len(t, first, wcDefaultPerPage)
	assert.Equal(t, "300", h.Get("X-WP-Total"))
	assert.Equal(t, "30", h.Get("X-WP-TotalPages"))
	assert.Contains(t, h.Get("Link"), `rel="next"`)
	assert.NotContains(t, h.Get("Link"), `rel="prev"`)
	assert.GreaterOrEqual(t, first[0].DateCreatedGMT, first[1].DateCreatedGMT, "date, descending")
	assert.Contains(t, first[0].Links["self"][0].Href, "/wire.example.com/shop/wp-json/wc/v3/orders/")

	// A page past the last is empty; per_page is 1-100.
	status, _, raw = wcCall(t, srv, "GET", "/orders?page=31", "")
	assert.Equal(t, 200, status)
	assert.JSONEq(t, `[]`, string(raw))
	for _, bad := range []string{"per_page=101", "per_page=0", "page=0", "status=shipped", "orderby=total", "modified_after=yesterday"} {
		status, _, raw = wcCall(t, srv, "GET", "/orders?"+bad, "")
		assert.Equal(t, 400, status, bad)
		assert.Contains(t, string(raw), `"rest_invalid_param"`, bad)
	}

	// Status filters, modified_after in site time or GMT.
	var done []wcOrder
	_, _, raw = wcCall(t, srv, "GET", "/orders?status=completed&per_page=100", "")
	require.NoError(t, json.Unmarshal(raw, &done))
	require.NotEmpty(t, done)
	for _, o := range done {
		assert.Equal(t, "completed", o.Status)
		assert.NotNil(t, o.DateCompletedGMT)
	}
	assert.Less(t, len(done), 300)
	mid := done[len(done)/2]
	_, gmtH, _ := wcCall(t, srv, "GET", "/orders?dates_are_gmt=true&modified_after="+mid.DateModifiedGMT, "")
	_, localH, _ := wcCall(t, srv, "GET", "/orders?modified_after="+mid.DateModified, "")
	assert.Equal(t, gmtH.Get("X-WP-Total"), localH.Get("X-WP-Total"), "site time and GMT name the same instant")
	assert.NotEqual(t, "300", gmtH.Get("X-WP-Total"))

	// One order; an unknown id.
	id := first[0].ID
	status, _, raw = wcCall(t, srv, "GET", "/orders/"+jsonID(id), "")
	require.Equal(t, 200, status)
	status, _, raw = wcCall(t, srv, "GET", "/orders/1", "")
	assert.Equal(t, 404, status)
	assert.Contains(t, string(raw), "woocommerce_rest_shop_order_invalid_id")

	// A status update writes the system note; an invalid status is refused.
	status, _, _ = wcCall(t, srv, "PUT", "/orders/"+jsonID(id), `{"status":"shipped"}`)
	assert.Equal(t, 400, status)
	status, _, raw = wcCall(t, srv, "PUT", "/orders/"+jsonID(id), `{"status":"cancelled"}`)
	require.Equal(t, 200, status)
	var updated wcOrder
	require.NoError(t, json.Unmarshal(raw, &updated))
	assert.Equal(t, "cancelled", updated.Status)
	_, _, raw = wcCall(t, srv, "GET", "/orders/"+jsonID(id)+"/notes?type=internal", "")
	var notes []wcNote
	require.NoError(t, json.Unmarshal(raw, &notes))
	require.NotEmpty(t, notes)
	assert.Contains(t, notes[0].Note, "to Cancelled.", "newest first")
	status, _, raw = wcCall(t, srv, "POST", "/orders/"+jsonID(id)+"/notes", `{"note":"hello","customer_note":true}`)
	require.Equal(t, 201, status)
	_, _, raw = wcCall(t, srv, "GET", "/orders/"+jsonID(id)+"/notes?type=customer", "")
	require.NoError(t, json.Unmarshal(raw, &notes))
	require.Len(t, notes, 1)
	assert.Equal(t, "hello", notes[0].Note)
	status, _, _ = wcCall(t, srv, "POST", "/orders/"+jsonID(id)+"/notes", `{"note":""}`)
	assert.Equal(t, 400, status)

	// Webhooks: a bad topic or URL is refused; deleting needs force=true.
	status, _, _ = wcCall(t, srv, "POST", "/webhooks", `{"topic":"order.shipped","delivery_url":"https://x.example.com"}`)
	assert.Equal(t, 400, status)
	status, _, _ = wcCall(t, srv, "POST", "/webhooks", `{"topic":"order.created","delivery_url":"ftp://x"}`)
	assert.Equal(t, 400, status)
	status, _, raw = wcCall(t, srv, "POST", "/webhooks", `{"name":"n","topic":"order.created","delivery_url":"https://x.example.com/h","secret":"s"}`)
	require.Equal(t, 201, status)
	var hook wcWebhook
	require.NoError(t, json.Unmarshal(raw, &hook))
	assert.Equal(t, "order", hook.Resource)
	assert.Equal(t, "created", hook.Event)
	assert.NotContains(t, string(raw), `"secret"`, "the secret is write-only")
	status, _, _ = wcCall(t, srv, "DELETE", "/webhooks/"+jsonID(hook.ID), "")
	assert.Equal(t, 501, status)
	status, _, _ = wcCall(t, srv, "DELETE", "/webhooks/"+jsonID(hook.ID)+"?force=true", "")
	assert.Equal(t, 200, status)
	status, _, _ = wcCall(t, srv, "GET", "/webhooks/"+jsonID(hook.ID), "")
	assert.Equal(t, 404, status)

	// Unknown routes answer the platform's error.
	status, _, raw = wcCall(t, srv, "GET", "/products", "")
	assert.Equal(t, 404, status)
	assert.Contains(t, string(raw), "rest_no_route")

	// No credentials.
	resp, err := srv.Client().Get(srv.URL + "/platforms/storefront_b/wire.example.com/wp-json/wc/v3/orders")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, 401, resp.StatusCode)
}

func jsonID(id int64) string {
	raw, _ := json.Marshal(id)
	return string(raw)
}

func mpaCall(t *testing.T, srv *httptest.Server, token, method, path, body string) (int, http.Header, json.RawMessage) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+"/platforms/marketplace_a"+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("x-amz-access-token", token)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	var raw json.RawMessage
	_ = json.NewDecoder(resp.Body).Decode(&raw)
	return resp.StatusCode, resp.Header, raw
}

func TestMarketplaceASellerWire(t *testing.T) {
	srv := newStoresServer(t)
	tokenURL := srv.URL + "/platforms/marketplace_a/lwa/auth/o2/token"

	// The token host: form parameters, OAuth errors.
	resp, err := srv.Client().PostForm(tokenURL, url.Values{"grant_type": {"client_credentials"}, "client_id": {"a"}, "client_secret": {"b"}})
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, 400, resp.StatusCode)
	resp, err = srv.Client().PostForm(tokenURL, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"Atzr|wire"}, "client_id": {"a"}, "client_secret": {"b"}})
	require.NoError(t, err)
	var tok struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int    `json:"expires_in"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&tok))
	_ = resp.Body.Close()
	assert.Equal(t, 3600, tok.ExpiresIn)
	assert.Equal(t, mpaAccessToken("Atzr|wire"), tok.AccessToken, "the same refresh token, the same seller")
	assert.NotContains(t, tok.AccessToken, "wire")

	// getOrders needs MarketplaceIds and exactly one of CreatedAfter/LastUpdatedAfter.
	for _, q := range []string{"", "?MarketplaceIds=X", "?MarketplaceIds=X&CreatedAfter=2020-01-01T00:00:00Z&LastUpdatedAfter=2020-01-01T00:00:00Z",
		"?MarketplaceIds=X&CreatedAfter=yesterday", "?MarketplaceIds=X&CreatedAfter=2020-01-01T00:00:00Z&MaxResultsPerPage=101", "?MarketplaceIds=X&NextToken=junk"} {
		status, _, raw := mpaCall(t, srv, tok.AccessToken, "GET", "/orders/v0/orders"+q, "")
		assert.Equal(t, 400, status, q)
		assert.Contains(t, string(raw), `"InvalidInput"`, q)
	}
	status, h, raw := mpaCall(t, srv, tok.AccessToken, "GET", "/orders/v0/orders?MarketplaceIds=A1F83G8C2ARO7P&CreatedAfter=2020-01-01T00:00:00Z&OrderStatuses=Shipped,Canceled&MaxResultsPerPage=5", "")
	require.Equal(t, 200, status)
	assert.Equal(t, mpaRateOrders, h.Get("x-amzn-RateLimit-Limit"))
	assert.NotEmpty(t, h.Get("x-amzn-RequestId"))
	var list struct {
		Payload struct {
			Orders        []mpaOrder
			NextToken     string
			CreatedBefore string
		}
	}
	require.NoError(t, json.Unmarshal(raw, &list))
	require.Len(t, list.Payload.Orders, 5)
	assert.NotEmpty(t, list.Payload.NextToken)
	assert.NotEmpty(t, list.Payload.CreatedBefore)
	for _, o := range list.Payload.Orders {
		assert.Contains(t, []string{"Shipped", "Canceled"}, o.OrderStatus)
		assert.Equal(t, "A1F83G8C2ARO7P", o.MarketplaceID, "the marketplace asked for")
	}

	// Items page two at a time; a bad NextToken is refused.
	var three string
	_, _, raw = mpaCall(t, srv, tok.AccessToken, "GET", "/orders/v0/orders?MarketplaceIds=X&CreatedAfter=2020-01-01T00:00:00Z&MaxResultsPerPage=100", "")
	require.NoError(t, json.Unmarshal(raw, &list))
	for _, o := range list.Payload.Orders {
		if o.OrderStatus == "Unshipped" && o.NumberOfItemsUnshipped > 0 {
			_, _, raw = mpaCall(t, srv, tok.AccessToken, "GET", "/orders/v0/orders/"+o.AmazonOrderID+"/orderItems", "")
			var items struct{ Payload struct{ NextToken string } }
			require.NoError(t, json.Unmarshal(raw, &items))
			if items.Payload.NextToken != "" {
				three = o.AmazonOrderID
				break
			}
		}
	}
	require.NotEmpty(t, three, "an unshipped order with three items")
	status, _, _ = mpaCall(t, srv, tok.AccessToken, "GET", "/orders/v0/orders/"+three+"/orderItems?NextToken=junk", "")
	assert.Equal(t, 400, status)

	// confirmShipment: required fields, ISO dates, unshipped quantities.
	_, _, raw = mpaCall(t, srv, tok.AccessToken, "GET", "/orders/v0/orders/"+three+"/orderItems", "")
	var items struct {
		Payload struct{ OrderItems []mpaItem }
	}
	require.NoError(t, json.Unmarshal(raw, &items))
	item := items.Payload.OrderItems[0]
	confirm := func(shipDate string, qty int) int {
		body := `{"marketplaceId":"ATVPDKIKX0DER","packageDetail":{"packageReferenceId":"1","carrierCode":"UPS","trackingNumber":"1Z","shipDate":"` + shipDate +
			`","orderItems":[{"orderItemId":"` + item.OrderItemID + `","quantity":` + jsonID(int64(qty)) + `}]}}`
		status, _, _ := mpaCall(t, srv, tok.AccessToken, "POST", "/orders/v0/orders/"+three+"/shipmentConfirmation", body)
		return status
	}
	assert.Equal(t, 400, confirm("02/21/2022", item.QuantityOrdered), "the published 400: a date that is not ISO 8601")
	assert.Equal(t, 400, confirm("2022-02-21T00:00:00Z", item.QuantityOrdered+1))
	assert.Equal(t, 204, confirm("2022-02-21T00:00:00Z", item.QuantityOrdered))
	assert.Equal(t, 400, confirm("2022-02-21T00:00:00Z", 1), "nothing left of that item")
	_, _, raw = mpaCall(t, srv, tok.AccessToken, "GET", "/orders/v0/orders/"+three, "")
	var one struct{ Payload mpaOrder }
	require.NoError(t, json.Unmarshal(raw, &one))
	assert.Equal(t, "PartiallyShipped", one.Payload.OrderStatus)
	status, _, _ = mpaCall(t, srv, tok.AccessToken, "POST", "/orders/v0/orders/"+three+"/shipmentConfirmation", `{"marketplaceId":"X"}`)
	assert.Equal(t, 400, status)

	// Supply sources page by nextPageToken; one record carries its status.
	_, _, raw = mpaCall(t, srv, tok.AccessToken, "GET", "/supplySources/2020-07-01/supplySources?pageSize=2", "")
	var sources struct {
		SupplySources []map[string]any
		NextPageToken string
	}
	require.NoError(t, json.Unmarshal(raw, &sources))
	require.Len(t, sources.SupplySources, 2)
	require.NotEmpty(t, sources.NextPageToken)
	_, _, raw = mpaCall(t, srv, tok.AccessToken, "GET", "/supplySources/2020-07-01/supplySources?pageSize=2&nextPageToken="+sources.NextPageToken, "")
	sources.NextPageToken = ""
	require.NoError(t, json.Unmarshal(raw, &sources))
	require.Len(t, sources.SupplySources, 1)
	assert.Empty(t, sources.NextPageToken)
	status, _, raw = mpaCall(t, srv, tok.AccessToken, "GET", "/supplySources/2020-07-01/supplySources/"+sources.SupplySources[0]["supplySourceId"].(string), "")
	require.Equal(t, 200, status)
	assert.Contains(t, string(raw), `"status":"Inactive"`)

	// A forged token.
	status, _, _ = mpaCall(t, srv, "Atza|sbx.300.0.nothex", "GET", "/supplySources/2020-07-01/supplySources", "")
	assert.Equal(t, 403, status)
}
