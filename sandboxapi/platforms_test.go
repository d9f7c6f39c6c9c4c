package sandboxapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type call struct {
	method, path string
	header       map[string]string
	basic        []string
}

func do(t *testing.T, srv *httptest.Server, c call) (int, http.Header, map[string]any) {
	t.Helper()
	method := c.method
	if method == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequest(method, srv.URL+c.path, nil)
	require.NoError(t, err)
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	if c.basic != nil {
		req.SetBasicAuth(c.basic[0], c.basic[1])
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var body map[string]any
	require.NoError(t, json.Unmarshal(raw, &body), string(raw))
	assert.Contains(t, resp.Header.Get("Content-Type"), "application/json")
	return resp.StatusCode, resp.Header, body
}

func tokenA() map[string]string { return map[string]string{HeaderAccessToken: "tok"} }

func TestListOrdersShapeAndTotals(t *testing.T) {
	srv := httptest.NewServer(NewHandler())
	defer srv.Close()
	status, _, body := do(t, srv, call{path: "/platforms/storefront_a/stores/demo.example.com/orders", header: tokenA()})
	require.Equal(t, http.StatusOK, status)
	orders := body["orders"].([]any)
	require.Len(t, orders, CatalogSize)
	assert.Nil(t, body["next_cursor"])

	money := func(v any) int64 {
		f, err := strconv.ParseFloat(v.(string), 64)
		require.NoError(t, err)
		return int64(f*100 + 0.5)
	}
	for _, raw := range orders {
		o := raw.(map[string]any)
		for _, k := range []string{"id", "name", "order_number", "email", "customer", "line_items", "shipping_address",
			"billing_address", "total_price", "subtotal_price", "total_tax", "financial_status", "fulfillment_status",
			"created_at", "updated_at", "currency", "fulfillments"} {
			require.Contains(t, o, k)
		}
		var lines int64
		for _, li := range o["line_items"].([]any) {
			l := li.(map[string]any)
			lines += money(l["price"]) * int64(l["quantity"].(float64))
		}
		assert.Equal(t, lines, money(o["total_line_items_price"]))
		shipping := money(o["total_shipping_price_set"].(map[string]any)["shop_money"].(map[string]any)["amount"])
		total := lines - money(o["total_discounts"]) + shipping + money(o["total_tax"])
		assert.Equal(t, total, money(o["total_price"]), "order %v", o["name"])
		assert.Equal(t, lines-money(o["total_discounts"]), money(o["subtotal_price"]))
	}
}

func TestCatalogDeterministic(t *testing.T) {
	a := storeOrders("storefront_a", "demo.example.com")
	b := storeOrders("storefront_a", "demo.example.com")
	assert.Equal(t, a, b)
	assert.Equal(t, OrderIDs("storefront_a", "demo.example.com"), OrderIDs("storefront_a", "DEMO.example.com/"))
	assert.NotEqual(t, OrderIDs("storefront_a", "demo.example.com"), OrderIDs("storefront_a", "other.example.com"))
	assert.NotEqual(t, OrderIDs("storefront_a", "demo.example.com"), OrderIDs("storefront_c", "demo.example.com"))

	// A pinned value guards against accidental changes of the generator,
	// which would silently change every seeded demo store.
	assert.Equal(t, "4044153205", OrderIDs("storefront_a", "demo.example.com")[0])

	ids := map[int64]bool{}
	financial := map[string]bool{}
	for i, o := range a {
		assert.Equal(t, 1001+i, o.OrderNumber)
		assert.False(t, ids[o.ID])
		ids[o.ID] = true
		financial[o.FinancialStatus] = true
		assert.True(t, o.updated.After(mustTime(t, o.CreatedAt)))
	}
	for _, s := range []string{"pending", "authorized", "paid", "partially_paid", "refunded", "voided"} {
		assert.True(t, financial[s], s)
	}
}

func TestGetOrder(t *testing.T) {
	srv := httptest.NewServer(NewHandler())
	defer srv.Close()
	ids := OrderIDs("storefront_c", "abc123")
	hdr := map[string]string{HeaderAuthToken: "tok"}

	status, _, body := do(t, srv, call{path: "/platforms/storefront_c/stores/abc123/orders/" + ids[4], header: hdr})
	require.Equal(t, http.StatusOK, status)
	o := body["order"].(map[string]any)
	assert.Equal(t, "#1005", o["name"])
	_, _, again := do(t, srv, call{path: "/platforms/storefront_c/stores/abc123/orders/" + ids[4], header: hdr})
	assert.Equal(t, body, again)

	status, _, body = do(t, srv, call{path: "/platforms/storefront_c/stores/abc123/orders/999", header: hdr})
	assert.Equal(t, http.StatusNotFound, status)
	assert.Equal(t, "not_found", body["code"])
	assert.NotEmpty(t, body["errors"])

	// Another store's order is not in this store's catalog.
	other := OrderIDs("storefront_c", "zzz")[0]
	status, _, _ = do(t, srv, call{path: "/platforms/storefront_c/stores/abc123/orders/" + other, header: hdr})
	assert.Equal(t, http.StatusNotFound, status)
}

func TestEscapedStoreKey(t *testing.T) {
	srv := httptest.NewServer(NewHandler())
	defer srv.Close()
	store := "https://shop.example.com/"
	path := "/platforms/storefront_b/stores/" + url.PathEscape(store) + "/orders/" + OrderIDs("storefront_b", store)[0]
	status, _, body := do(t, srv, call{path: path, basic: []string{"ck", "cs"}})
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, "#1001", body["order"].(map[string]any)["name"])
}

func TestPaging(t *testing.T) {
	srv := httptest.NewServer(NewHandler())
	defer srv.Close()
	base := "/platforms/shipping_hub_a/stores/acct_1/orders"
	auth := []string{"key", "secret"}
	var ids []string
	q := "?limit=10"
	for pages := 1; ; pages++ {
		require.Less(t, pages, 10)
		status, hdr, body := do(t, srv, call{path: base + q, basic: auth})
		require.Equal(t, http.StatusOK, status, body)
		for _, o := range body["orders"].([]any) {
			ids = append(ids, strconv.FormatInt(int64(o.(map[string]any)["id"].(float64)), 10))
		}
		if body["next_cursor"] == nil {
			assert.Empty(t, hdr.Get("Link"))
			assert.Equal(t, 3, pages)
			break
		}
		assert.Contains(t, hdr.Get("Link"), `rel="next"`)
		q = "?limit=10&cursor=" + url.QueryEscape(body["next_cursor"].(string))
	}
	assert.Len(t, ids, CatalogSize)
	assert.ElementsMatch(t, OrderIDs("shipping_hub_a", "acct_1"), ids)

	for _, bad := range []string{"?limit=0", "?limit=x", "?since=yesterday", "?cursor=bm9wZQ", "?cursor=!!!"} {
		status, _, body := do(t, srv, call{path: base + bad, basic: auth})
		assert.Equal(t, http.StatusBadRequest, status, bad)
		assert.Equal(t, "invalid_request", body["code"])
	}
	// limit is clamped to MaxLimit.
	status, _, body := do(t, srv, call{path: base + "?limit=100000", basic: auth})
	require.Equal(t, http.StatusOK, status)
	assert.Len(t, body["orders"], CatalogSize)
}

func TestCredentialsAndFailRule(t *testing.T) {
	srv := httptest.NewServer(NewHandler())
	defer srv.Close()
	cases := []struct {
		name   string
		c      call
		status int
	}{
		{"no token", call{path: "/platforms/storefront_a/stores/s/orders"}, 401},
		{"wrong header", call{path: "/platforms/storefront_a/stores/s/orders", header: map[string]string{HeaderAuthToken: "tok"}}, 401},
		{"fail token", call{path: "/platforms/storefront_a/stores/s/orders", header: map[string]string{HeaderAccessToken: FailValue}}, 401},
		{"basic missing", call{path: "/platforms/storefront_b/stores/s/orders"}, 401},
		{"basic empty secret", call{path: "/platforms/storefront_b/stores/s/orders", basic: []string{"ck", ""}}, 401},
		{"basic fail", call{path: "/platforms/shipping_hub_a/stores/s/orders", basic: []string{FailValue, "x"}}, 401},
		{"marketplace no refresh", call{path: "/platforms/marketplace_a/stores/s/orders", basic: []string{"id", "sec"}}, 401},
		{"marketplace fail refresh", call{path: "/platforms/marketplace_a/stores/s/orders", basic: []string{"id", "sec"},
			header: map[string]string{HeaderRefreshToken: FailValue}}, 401},
		{"marketplace ok", call{path: "/platforms/marketplace_a/stores/s/orders", basic: []string{"id", "sec"},
			header: map[string]string{HeaderRefreshToken: "r"}}, 200},
		{"fail store", call{path: "/platforms/storefront_a/stores/sandbox-fail/orders", header: tokenA()}, 503},
		{"fail config", call{path: "/platforms/storefront_a/stores/s/orders",
			header: map[string]string{HeaderAccessToken: "tok", HeaderConfig: "apiVersion=2026-07&locationId=sandbox-fail"}}, 503},
		{"fine config", call{path: "/platforms/storefront_a/stores/s/orders",
			header: map[string]string{HeaderAccessToken: "tok", HeaderConfig: "apiVersion=2026-07"}}, 200},
		{"fail beats not found", call{path: "/platforms/storefront_a/stores/sandbox-fail/orders/1", header: tokenA()}, 503},
		{"unknown type", call{path: "/platforms/erp_x/stores/s/orders", header: tokenA()}, 404},
		{"unknown route", call{path: "/platforms/storefront_a/nope", header: tokenA()}, 404},
		{"root", call{path: "/"}, 404},
		{"wrong method", call{method: http.MethodPost, path: "/platforms/storefront_a/stores/s/orders", header: tokenA()}, 405},
	}
	for _, tc := range cases {
		status, _, body := do(t, srv, tc.c)
		assert.Equal(t, tc.status, status, tc.name)
		if tc.status != 200 {
			assert.NotEmpty(t, body["errors"], tc.name)
			assert.NotEmpty(t, body["code"], tc.name)
		}
	}
}

func TestCursorRoundTrip(t *testing.T) {
	off, since, err := decodeCursor(encodeCursor(7, mustTime(t, "2025-11-05T10:00:00Z")))
	require.NoError(t, err)
	assert.Equal(t, 7, off)
	assert.Equal(t, mustTime(t, "2025-11-05T10:00:00Z"), since)
	_, _, err = decodeCursor("bm9wZQ")
	assert.Error(t, err)
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	require.NoError(t, err)
	return v.UTC()
}
