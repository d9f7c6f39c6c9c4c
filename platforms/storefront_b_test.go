package platforms_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
)

// With a sandox URL the store https://example.com is served at
// {fake}/example.com/wp-json/wc/v3.
const sfbRoot = "/example.com" + platforms.StorefrontBAPIRoot

func sfbBridge(kv ...string) platforms.Bridge {
	b := bridgeOf("storefront_b")
	b.Config = map[string]any{"storeUrl": "https://example.com", "consumerKey": "ck_example", "consumerSecret": "cs_example"}
	return withConfig(b, kv...)
}

func TestStorefrontBDecodesPublishedOrders(t *testing.T) {
	f := newFakePlatform(t)
	f.serve("GET "+sfbRoot+"/orders", 200, platformExample(t, "storefront_b", "orders_list_response.json"),
		platforms.StorefrontBTotalPagesHeader, "1", platforms.StorefrontBTotalHeader, "2")
	f.serve("GET "+sfbRoot+"/orders/727", 200, platformExample(t, "storefront_b", "order_get_response.json"))
	c := platforms.NewStorefrontB(f.srv.URL, f.srv.Client())
	ctx := context.Background()

	since := time.Date(2017, 3, 1, 12, 0, 0, 0, time.UTC)
	orders, next, err := c.ListOrders(ctx, sfbBridge(), since, "")
	require.NoError(t, err)
	assert.Empty(t, next, "X-WP-TotalPages: 1")
	require.Len(t, orders, 2)
	req := f.last(t, "GET", sfbRoot+"/orders")
	assert.Equal(t, "Basic Y2tfZXhhbXBsZTpjc19leGFtcGxl", req.header.Get("Authorization"))
	assert.Equal(t, map[string][]string{
		"page": {"1"}, "per_page": {"100"}, "status": {"any"}, "orderby": {"id"}, "order": {"asc"},
		"dates_are_gmt": {"true"}, "modified_after": {"2017-03-01T11:59:59"},
	}, req.query, "a second early: the filter is exclusive")

	o := orders[0]
	assert.Equal(t, "727", o.ExternalID)
	assert.Equal(t, "727", o.OrderNumber)
	assert.Equal(t, platforms.Customer{Email: "john.doe@example.com", FirstName: "John", LastName: "Doe", Phone: "(555) 555-5555"}, o.Customer)
	assert.Equal(t, &platforms.Address{Name: "John Doe", Address1: "969 Market", City: "San Francisco", Province: "CA", ProvinceCode: "CA",
		Zip: "94103", Country: "US", CountryCode: "US", Phone: "(555) 555-5555"}, o.ShippingAddress)
	assert.Equal(t, "john.doe@example.com", o.Customer.Email)
	assert.Equal(t, "(555) 555-5555", o.BillingAddress.Phone)
	require.Len(t, o.LineItems, 2)
	assert.Equal(t, platforms.LineItem{ExternalID: "315", Name: "Woo Single #1", Quantity: 2, UnitPrice: 3, TotalPrice: 6,
		RequiresShipping: true, Taxable: true}, o.LineItems[0])
	assert.Equal(t, platforms.LineItem{ExternalID: "316", SKU: "Bar3", Name: "Ship Your Idea – Color: Black, Size: M Test", Quantity: 1,
		UnitPrice: 12, TotalPrice: 12, RequiresShipping: true, Taxable: true}, o.LineItems[1], "HTML entities unescaped")
	assert.Equal(t, platforms.Totals{Subtotal: 18, Shipping: 10, Tax: 1.35, Total: 29.35}, o.Totals)
	assert.Equal(t, "USD", o.Currency)
	assert.Equal(t, platforms.StatusConfirmed, o.Status, "processing")
	assert.Equal(t, platforms.PaymentPaid, o.PaymentStatus)
	assert.Equal(t, platforms.FulfillmentUnfulfilled, o.FulfillmentStatus)
	assert.Equal(t, time.Date(2017, 3, 22, 19, 28, 2, 0, time.UTC), o.OrderedAt, "the GMT twin")
	assert.Equal(t, time.Date(2017, 3, 22, 19, 28, 8, 0, time.UTC), o.UpdatedAt)
	assert.Equal(t, json.Number("727"), o.SourceData["id"])

	done := orders[1]
	assert.Equal(t, "723", done.ExternalID)
	assert.Equal(t, platforms.StatusShipped, done.Status, "completed")
	assert.Equal(t, platforms.FulfillmentFulfilled, done.FulfillmentStatus)
	assert.Equal(t, platforms.PaymentPaid, done.PaymentStatus)
	assert.Equal(t, platforms.Customer{Email: "joao.silva@example.com", FirstName: "João", LastName: "Silva", Phone: "(11) 1111-1111"}, done.Customer)
	assert.Equal(t, "Rio de Janeiro", done.ShippingAddress.City)
	assert.Equal(t, "RJ", done.ShippingAddress.ProvinceCode)
	assert.Equal(t, "BR", done.ShippingAddress.CountryCode)
	assert.Equal(t, platforms.Totals{Subtotal: 29, Shipping: 10, Total: 39}, done.Totals)
	for _, x := range orders {
		assert.InDelta(t, x.Totals.Total, x.Totals.Subtotal-x.Totals.Discount+x.Totals.Shipping+x.Totals.Tax, 0.001, x.ExternalID)
	}

	got, err := c.FetchOrder(ctx, sfbBridge(), "727")
	require.NoError(t, err)
	assert.Equal(t, "727", got.ExternalID)
	assert.Equal(t, o.Totals, got.Totals)
	// The webhook body is the REST order itself.
	hook, err := platforms.StorefrontBOrder(platformExample(t, "storefront_b", "webhook_payload_order_created.json"))
	require.NoError(t, err)
	assert.Equal(t, *got, hook)
	// The update answer decodes too (completed now).
	updated, err := platforms.StorefrontBOrder(platformExample(t, "storefront_b", "order_update_response.json"))
	require.NoError(t, err)
	assert.Equal(t, platforms.StatusShipped, updated.Status)
	assert.Equal(t, time.Date(2017, 3, 22, 19, 30, 35, 0, time.UTC), updated.UpdatedAt)
}

func TestStorefrontBPushFulfillmentBuildsThePublishedRequests(t *testing.T) {
	f := newFakePlatform(t)
	f.serve("GET "+sfbRoot+"/orders/727", 200, platformExample(t, "storefront_b", "order_get_response.json"))
	f.serve("GET "+sfbRoot+"/orders/727/notes", 200, []byte(`[]`))
	f.serve("PUT "+sfbRoot+"/orders/727", 200, platformExample(t, "storefront_b", "order_update_response.json"))
	f.serve("POST "+sfbRoot+"/orders/727/notes", 201, platformExample(t, "storefront_b", "order_note_create_response.json"))
	c := platforms.NewStorefrontB(f.srv.URL, f.srv.Client())

	// The service's own carrier code (carrier_b) is named "UPS" in the
	// note; customer_note follows the bridge's notifyCustomer.
	b := sfbBridge()
	b.Config["notifyCustomer"] = "true"
	res, err := c.PushFulfillment(context.Background(), b, platforms.Fulfillment{
		OrderExternalID: "727", TrackingNumber: "1Z999AA10123456784", Carrier: "carrier_b",
		TrackingURL: "https://www.ups.com/track?tracknum=1Z999AA10123456784",
	})
	require.NoError(t, err)
	assert.Equal(t, platforms.FulfillmentResult{ExternalID: "281", Created: true}, res)

	var got, want map[string]any
	require.NoError(t, json.Unmarshal(f.last(t, "PUT", sfbRoot+"/orders/727").body, &got))
	require.NoError(t, json.Unmarshal(platformExample(t, "storefront_b", "order_update_request_complete.json"), &want))
	assert.Equal(t, want, got, "the built update is the published example")

	post := f.last(t, "POST", sfbRoot+"/orders/727/notes")
	for k := range keyPaths(t, platformExample(t, "storefront_b", "order_note_create_request.json")) {
		assert.True(t, keyPaths(t, post.body)[k], "built note lacks %s", k)
	}
	var note map[string]any
	require.NoError(t, json.Unmarshal(post.body, &note))
	assert.Equal(t, "Shipped with UPS. Tracking number: 1Z999AA10123456784 (https://www.ups.com/track?tracknum=1Z999AA10123456784)", note["note"])
	assert.Equal(t, true, note["customer_note"])
	assert.Equal(t, []string{"any"}, f.last(t, "GET", sfbRoot+"/orders/727/notes").query["type"])
}

func TestStorefrontBPushIsIdempotent(t *testing.T) {
	ctx := context.Background()
	known := []byte(`[{"id":5,"author":"system","note":"Shipped with UPS. Tracking number: 1Z999AA10123456784","customer_note":true},
		{"id":4,"author":"system","note":"Order status changed from Processing to Completed.","customer_note":false}]`)
	push := platforms.Fulfillment{OrderExternalID: "727", TrackingNumber: "1z999aa10123456784", Carrier: "UPS"}

	// Completed with the note: nothing is written.
	f := newFakePlatform(t)
	f.serve("GET "+sfbRoot+"/orders/727", 200, platformExample(t, "storefront_b", "order_update_response.json"))
	f.serve("GET "+sfbRoot+"/orders/727/notes", 200, known)
	res, err := platforms.NewStorefrontB(f.srv.URL, f.srv.Client()).PushFulfillment(ctx, sfbBridge(), push)
	require.NoError(t, err)
	assert.Equal(t, platforms.FulfillmentResult{ExternalID: "5", Created: false}, res)
	f.mu.Lock()
	assert.Len(t, f.calls, 2, "only reads")
	f.mu.Unlock()

	// The note is there but the order is still processing: complete it, no second note.
	f = newFakePlatform(t)
	f.serve("GET "+sfbRoot+"/orders/727", 200, platformExample(t, "storefront_b", "order_get_response.json"))
	f.serve("GET "+sfbRoot+"/orders/727/notes", 200, known)
	f.serve("PUT "+sfbRoot+"/orders/727", 200, platformExample(t, "storefront_b", "order_update_response.json"))
	res, err = platforms.NewStorefrontB(f.srv.URL, f.srv.Client()).PushFulfillment(ctx, sfbBridge(), push)
	require.NoError(t, err)
	assert.Equal(t, platforms.FulfillmentResult{ExternalID: "5", Created: false}, res)
	f.last(t, "PUT", sfbRoot+"/orders/727")
	f.mu.Lock()
	assert.Len(t, f.calls, 3)
	f.mu.Unlock()

	// A cancelled order has nothing to fulfill.
	f = newFakePlatform(t)
	f.serve("GET "+sfbRoot+"/orders/727", 200, []byte(`{"id":727,"status":"cancelled"}`))
	f.serve("GET "+sfbRoot+"/orders/727/notes", 200, []byte(`[]`))
	_, err = platforms.NewStorefrontB(f.srv.URL, f.srv.Client()).PushFulfillment(ctx, sfbBridge(), push)
	var pe *platforms.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, platforms.CodeNothingToFulfill, pe.Code)
}

func TestStorefrontBWebhooks(t *testing.T) {
	f := newFakePlatform(t)
	f.serve("POST "+sfbRoot+"/webhooks", 201, platformExample(t, "storefront_b", "webhook_create_response.json"))
	f.serve("GET "+sfbRoot+"/webhooks", 200, platformExample(t, "storefront_b", "webhooks_list_response.json"), platforms.StorefrontBTotalPagesHeader, "1")
	f.serve("DELETE "+sfbRoot+"/webhooks/142", 200, platformExample(t, "storefront_b", "webhook_create_response.json"))
	f.serve("DELETE "+sfbRoot+"/webhooks/143", 404, []byte(`{"code":"woocommerce_rest_webhook_invalid_id","message":"Invalid ID.","data":{"status":404}}`))
	c := platforms.NewStorefrontB(f.srv.URL, f.srv.Client())
	ctx := context.Background()
	b := sfbBridge("webhookSecret", "whsec")

	hook, err := c.RegisterWebhook(ctx, b, "order.updated", "http://requestb.in/1g0sxmo1")
	require.NoError(t, err)
	assert.Equal(t, platforms.Webhook{ID: "142", Topic: "order.updated", Address: "http://requestb.in/1g0sxmo1"}, hook)
	post := f.last(t, "POST", sfbRoot+"/webhooks")
	for k := range keyPaths(t, platformExample(t, "storefront_b", "webhook_create_request.json")) {
		assert.True(t, keyPaths(t, post.body)[k], "built request lacks %s", k)
	}
	var body map[string]any
	require.NoError(t, json.Unmarshal(post.body, &body))
	assert.Equal(t, "whsec", body["secret"], "the bridge's webhook secret signs the deliveries")
	assert.Equal(t, "active", body["status"])

	hooks, err := c.ListWebhooks(ctx, b)
	require.NoError(t, err)
	assert.Equal(t, []platforms.Webhook{
		{ID: "143", Topic: "customer.created", Address: "http://requestb.in/1g0sxmo1"},
		{ID: "142", Topic: "order.updated", Address: "http://requestb.in/1g0sxmo1"},
	}, hooks)
	require.NoError(t, c.DeleteWebhook(ctx, b, "142"))
	assert.Equal(t, []string{"true"}, f.last(t, "DELETE", sfbRoot+"/webhooks/142").query["force"])
	require.NoError(t, c.DeleteWebhook(ctx, b, "143"), "already gone counts as deleted")
}

func TestStorefrontBPagesThroughPages(t *testing.T) {
	f := newFakePlatform(t)
	f.routes["GET "+sfbRoot+"/orders"] = func(w http.ResponseWriter, r *http.Request) {
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		var orders []string
		for i := 0; i < 2 && (page-1)*2+i < 5; i++ {
			id := (page-1)*2 + i + 1
			orders = append(orders, fmt.Sprintf(`{"id":%d,"number":"%d","status":"processing","date_modified_gmt":"2026-01-0%dT00:00:00","line_items":[]}`, id, id, id))
		}
		w.Header().Set(platforms.StorefrontBTotalPagesHeader, "3")
		w.Header().Set(platforms.StorefrontBTotalHeader, "5")
		_, _ = fmt.Fprintf(w, `[%s]`, joinComma(orders))
	}
	c := platforms.NewStorefrontB(f.srv.URL, f.srv.Client(), platforms.ListLimit(2))
	all, n := listAll(t, c, sfbBridge(), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	assert.Equal(t, 3, n)
	var ids []string
	for _, o := range all {
		ids = append(ids, o.ExternalID)
	}
	assert.Equal(t, []string{"1", "2", "3", "4", "5"}, ids)
	f.mu.Lock()
	defer f.mu.Unlock()
	require.Len(t, f.calls, 3)
	for i, call := range f.calls {
		assert.Equal(t, []string{strconv.Itoa(i + 1)}, call.query["page"])
		assert.Equal(t, []string{"2"}, call.query["per_page"])
		assert.Equal(t, []string{"2025-12-31T23:59:59"}, call.query["modified_after"], "every page keeps the first page's filter")
	}
}

func TestStorefrontBErrorClasses(t *testing.T) {
	f := newFakePlatform(t)
	c := platforms.NewStorefrontB(f.srv.URL, f.srv.Client())
	ctx := context.Background()
	b := sfbBridge()
	route := "GET " + sfbRoot + "/orders"

	f.serve(route, 401, []byte(`{"code":"woocommerce_rest_authentication_error","message":"Consumer key is invalid.","data":{"status":401}}`))
	_, _, err := c.ListOrders(ctx, b, time.Time{}, "")
	require.ErrorIs(t, err, platforms.ErrUnauthorized)
	assert.False(t, platforms.IsRetryable(err))
	assert.Contains(t, err.Error(), "Consumer key is invalid.")
	assert.NotContains(t, err.Error(), "cs_example")

	f.serve(route, 403, []byte(`{"code":"woocommerce_rest_cannot_view","message":"Sorry, you cannot list resources.","data":{"status":403}}`))
	_, _, err = c.ListOrders(ctx, b, time.Time{}, "")
	require.ErrorIs(t, err, platforms.ErrUnauthorized)

	f.serve(route, 429, []byte(`{"code":"rest_too_many_requests","message":"Too many requests.","data":{"status":429}}`), "Retry-After", "7")
	_, _, err = c.ListOrders(ctx, b, time.Time{}, "")
	require.ErrorIs(t, err, platforms.ErrRateLimited)
	wait, _ := platforms.RetryAfter(err)
	assert.Equal(t, 7*time.Second, wait)
	assert.True(t, platforms.IsRetryable(err))
	f.mu.Lock()
	calls := len(f.calls)
	f.mu.Unlock()
	_, _, err = c.ListOrders(ctx, b, time.Time{}, "")
	require.ErrorIs(t, err, platforms.ErrRateLimited, "held back for the wait the store named")
	f.mu.Lock()
	assert.Len(t, f.calls, calls, "without calling")
	f.mu.Unlock()
	c = platforms.NewStorefrontB(f.srv.URL, f.srv.Client())

	for _, status := range []int{500, 502, 503} {
		f.serve(route, status, []byte(`{"code":"internal_server_error","message":"There has been a critical error on this website.","data":{"status":500}}`))
		_, _, err = c.ListOrders(ctx, b, time.Time{}, "")
		require.Error(t, err)
		assert.True(t, platforms.IsRetryable(err), strconv.Itoa(status))
		assert.False(t, errors.Is(err, platforms.ErrUnauthorized))
	}

	// The published error bodies: a missing order, a missing route.
	f.serve("GET "+sfbRoot+"/orders/1", 404, platformExample(t, "storefront_b", "error_woocommerce_rest_404.json"))
	_, err = c.FetchOrder(ctx, b, "1")
	require.ErrorIs(t, err, platforms.ErrOrderNotFound)
	assert.Contains(t, err.Error(), "Resource doesn't exist.")
	f.serve(route, 404, platformExample(t, "storefront_b", "error_wp_rest_404.json"))
	_, _, err = c.ListOrders(ctx, b, time.Time{}, "")
	var pe *platforms.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, platforms.CodeNotFound, pe.Code)
	assert.Contains(t, pe.Message, "No route was found")
	_, err = c.FetchOrder(ctx, b, "../webhooks")
	require.ErrorIs(t, err, platforms.ErrOrderNotFound)

	_, _, err = c.ListOrders(ctx, sfbBridge("consumerSecret", "<delete>"), time.Time{}, "")
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, platforms.CodeInvalidConfig, pe.Code)
}

// arrayRecorder stands in for a real store: it answers every request with
// an empty list and records the URL.
type arrayRecorder struct{ urls []string }

func (h *arrayRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	h.urls = append(h.urls, r.URL.String())
	return &http.Response{StatusCode: 200, Header: http.Header{"X-Wp-Totalpages": {"0"}}, Body: io.NopCloser(strings.NewReader(`[]`)), Request: r}, nil
}

func TestStorefrontBProductionHostIsTheStore(t *testing.T) {
	rec := &arrayRecorder{}
	c := platforms.NewStorefrontB("", &http.Client{Transport: rec})
	ctx := context.Background()
	for _, u := range []string{"https://Shop.Example.com/", "https://shop.example.com/wp-json/wc/v3"} {
		_, _, err := c.ListOrders(ctx, sfbBridge("storeUrl", u), time.Time{}, "")
		require.NoError(t, err, u)
	}
	_, _, err := c.ListOrders(ctx, sfbBridge("storeUrl", "https://example.com/shop"), time.Time{}, "")
	require.NoError(t, err)
	require.Len(t, rec.urls, 3)
	const q = "?dates_are_gmt=true&order=asc&orderby=id&page=1&per_page=100&status=any"
	assert.Equal(t, "https://shop.example.com/wp-json/wc/v3/orders"+q, rec.urls[0])
	assert.Equal(t, rec.urls[0], rec.urls[1])
	assert.Equal(t, "https://example.com/shop/wp-json/wc/v3/orders"+q, rec.urls[2], "a store in a sub-directory")

	// The secret never goes out over plain HTTP or to a malformed URL.
	for _, bad := range []string{"http://shop.example.com", "ftp://shop.example.com", "shop.example.com", "https://user:pw@shop.example.com",
		"https://shop.example.com/?x=1", "https://shop.example.com/a/../b"} {
		_, _, err = c.ListOrders(ctx, sfbBridge("storeUrl", bad), time.Time{}, "")
		var pe *platforms.Error
		require.ErrorAs(t, err, &pe, bad)
		assert.Equal(t, platforms.CodeInvalidConfig, pe.Code, bad)
	}
	assert.Len(t, rec.urls, 3)
}

func TestStorefrontBRedirects(t *testing.T) {
	f := newFakePlatform(t)
	moved := func(to string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, to, http.StatusMovedPermanently) }
	}
	f.routes["GET "+sfbRoot+"/orders/727"] = moved(sfbRoot + "/orders/728")
	f.serve("GET "+sfbRoot+"/orders/728", 200, platformExample(t, "storefront_b", "order_get_response.json"))
	f.serve("GET "+sfbRoot+"/orders/727/notes", 200, []byte(`[]`))
	f.routes["PUT "+sfbRoot+"/orders/727"] = moved(sfbRoot + "/orders/728")
	c := platforms.NewStorefrontB(f.srv.URL, f.srv.Client())
	ctx := context.Background()

	got, err := c.FetchOrder(ctx, sfbBridge(), "727")
	require.NoError(t, err, "reads follow redirects")
	assert.Equal(t, "727", got.ExternalID)

	f.mu.Lock()
	f.calls = nil
	f.routes["GET "+sfbRoot+"/orders/727"] = func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write(platformExample(t, "storefront_b", "order_get_response.json"))
	}
	f.mu.Unlock()
	_, err = c.PushFulfillment(ctx, sfbBridge(), platforms.Fulfillment{OrderExternalID: "727", TrackingNumber: "1Z", Carrier: "UPS"})
	var pe *platforms.Error
	require.ErrorAs(t, err, &pe, "a redirected write is not a write")
	assert.Equal(t, http.StatusMovedPermanently, pe.StatusCode)
	f.mu.Lock()
	for _, call := range f.calls {
		assert.NotEqual(t, "POST", call.method, "no note after a failed status update")
		assert.NotEqual(t, sfbRoot+"/orders/728", call.path, "the write was not followed")
	}
	f.mu.Unlock()

	// https never redirects to plain http.
	rec := &redirector{to: "http://shop.example.com/wp-json/wc/v3/orders"}
	_, _, err = platforms.NewStorefrontB("", &http.Client{Transport: rec}).ListOrders(ctx, sfbBridge("storeUrl", "https://shop.example.com"), time.Time{}, "")
	require.Error(t, err)
	assert.Equal(t, 1, rec.n, "the plain http URL is never requested")
}

// redirector answers every request with a redirect to one URL.
type redirector struct {
	to string
	n  int
}

func (h *redirector) RoundTrip(r *http.Request) (*http.Response, error) {
	h.n++
	return &http.Response{StatusCode: http.StatusFound, Header: http.Header{"Location": {h.to}}, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
}

// A store with the Shipment Tracking extension (bridge config
// shipmentTracking): the fulfillment is a tracking item built as the
// published request from the service's carrier code (carrier_c: "USPS")
// and ship date, the published answer's tracking_id is the push's id, and
// a tracking number already there is not sent twice.
func TestStorefrontBShipmentTrackingBuildsThePublishedRequest(t *testing.T) {
	published := platformExample(t, "storefront_b", "shipment_tracking_create_request.json")
	answer := platformExample(t, "storefront_b", "shipment_tracking_create_response.json")
	const trackRoot = "/example.com" + platforms.StorefrontBTrackingRoot
	f := newFakePlatform(t)
	f.serve("GET "+sfbRoot+"/orders/727", 200, platformExample(t, "storefront_b", "order_get_response.json"))
	f.serve("PUT "+sfbRoot+"/orders/727", 200, platformExample(t, "storefront_b", "order_update_response.json"))
	f.serve("GET "+trackRoot+"/orders/727/shipment-trackings", 200, []byte(`[]`))
	f.serve("POST "+trackRoot+"/orders/727/shipment-trackings", 201, answer)
	c := platforms.NewStorefrontB(f.srv.URL, f.srv.Client())
	b := sfbBridge(platforms.ConfigShipmentTracking, "true")
	push := platforms.Fulfillment{OrderExternalID: "727", TrackingNumber: "9400111899560000000000", Carrier: "carrier_c",
		ShipDate: time.Date(2026, 7, 10, 15, 0, 0, 0, time.UTC)}
	res, err := c.PushFulfillment(context.Background(), b, push)
	require.NoError(t, err)
	assert.Equal(t, platforms.FulfillmentResult{ExternalID: "7f4978c390ee633c6294ae0f258656f9", Created: true}, res)
	assert.JSONEq(t, string(published), string(f.last(t, "POST", trackRoot+"/orders/727/shipment-trackings").body))

	f.serve("GET "+trackRoot+"/orders/727/shipment-trackings", 200, []byte("["+string(answer)+"]"))
	again, err := c.PushFulfillment(context.Background(), b, push)
	require.NoError(t, err)
	assert.Equal(t, platforms.FulfillmentResult{ExternalID: "7f4978c390ee633c6294ae0f258656f9", Created: false}, again)
}
