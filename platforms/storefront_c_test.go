package platforms_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
)

func sfcBridge(kv ...string) platforms.Bridge {
	b := bridgeOf("storefront_c")
	b.Config = map[string]any{"storeHash": "abc123", "accessToken": "tok-c"}
	return withConfig(b, kv...)
}

const sfcRoot = "/stores/abc123"

// serveStorefrontCExamples answers the published examples: the products
// and shipping addresses examples stand for every order's sub-resources.
func serveStorefrontCExamples(t *testing.T, f *fakePlatform) {
	f.serve("GET "+sfcRoot+"/v2/orders", 200, platformExample(t, "storefront_c", "orders_list_response.json"))
	f.serve("GET "+sfcRoot+"/v2/orders/218", 200, platformExample(t, "storefront_c", "order_get_response.json"))
	for _, id := range []string{"100", "218"} {
		f.serve("GET "+sfcRoot+"/v2/orders/"+id+"/products", 200, platformExample(t, "storefront_c", "order_products_response.json"))
		f.serve("GET "+sfcRoot+"/v2/orders/"+id+"/shipping_addresses", 200, platformExample(t, "storefront_c", "order_shipping_addresses_response.json"))
	}
}

func TestStorefrontCDecodesPublishedOrders(t *testing.T) {
	f := newFakePlatform(t)
	serveStorefrontCExamples(t, f)
	c := platforms.NewStorefrontC(f.srv.URL, f.srv.Client())
	ctx := context.Background()

	since := time.Date(2018, 1, 1, 0, 0, 0, 0, time.UTC)
	orders, next, err := c.ListOrders(ctx, sfcBridge(), since, "")
	require.NoError(t, err)
	assert.Empty(t, next, "a short page is the last")
	require.Len(t, orders, 1)
	req := f.last(t, "GET", sfcRoot+"/v2/orders")
	assert.Equal(t, "tok-c", req.header.Get("X-Auth-Token"))
	assert.Equal(t, []string{"2018-01-01T00:00:00Z"}, req.query["min_date_modified"])
	assert.Equal(t, []string{"id:asc"}, req.query["sort"])
	assert.Equal(t, []string{"1"}, req.query["page"])
	assert.Equal(t, []string{"50"}, req.query["limit"], "50 orders cost 101 calls, within the smallest quota window")
	o := orders[0]
	assert.Equal(t, "100", o.ExternalID)
	assert.Equal(t, platforms.StatusConfirmed, o.Status, "11 Awaiting Fulfillment")
	assert.Equal(t, platforms.PaymentAuthorized, o.PaymentStatus)
	assert.Equal(t, platforms.Totals{Subtotal: 336.32, Total: 361.95}, o.Totals)
	assert.Equal(t, time.Date(2018, 12, 5, 20, 16, 55, 0, time.UTC), o.UpdatedAt)
	assert.Equal(t, "555-123-4567", o.Customer.Phone)

	got, err := c.FetchOrder(ctx, sfcBridge(), "218")
	require.NoError(t, err)
	assert.Equal(t, "218", got.ExternalID)
	assert.Equal(t, "218", got.OrderNumber)
	assert.Equal(t, "USD", got.Currency)
	assert.Equal(t, platforms.StatusPending, got.Status, "7 Awaiting Payment")
	assert.Equal(t, platforms.PaymentAuthorized, got.PaymentStatus)
	assert.Equal(t, platforms.FulfillmentUnfulfilled, got.FulfillmentStatus)
	assert.Equal(t, platforms.Customer{Email: "janedoe@example.com", FirstName: "Jane", LastName: "Doe", Phone: "1234567890"}, got.Customer)
	assert.Equal(t, &platforms.Address{Name: "Jane Doe", Address1: "555 East Street", City: "Austin", Province: "Texas",
		Country: "United States", CountryCode: "US", Zip: "78108", Phone: "1234567890"}, got.BillingAddress)
	assert.Equal(t, &platforms.Address{Name: "Trishy Smith", Company: "Acme Pty Ltd", Address1: "666 Sussex St", City: "San Antonio",
		Province: "Texas", Country: "United States", CountryCode: "US", Zip: "78251"}, got.ShippingAddress)
	require.Len(t, got.LineItems, 2)
	assert.Equal(t, platforms.LineItem{ExternalID: "65", SKU: "S-ORAN", Name: "Fog Linen Chambray Towel - Beige Stripe", Quantity: 1,
		UnitPrice: 55.99, TotalPrice: 55.99, RequiresShipping: true, Taxable: true}, got.LineItems[0])
	assert.Equal(t, "66", got.LineItems[1].ExternalID)
	assert.Equal(t, platforms.Totals{Subtotal: 62.68, Discount: 5, Shipping: 11.09, Tax: 5.31, Total: 69.84}, got.Totals)
	assert.Equal(t, time.Date(2019, 3, 5, 21, 40, 11, 0, time.UTC), got.OrderedAt)
	assert.Equal(t, time.Date(2019, 3, 11, 15, 17, 25, 0, time.UTC), got.UpdatedAt)
	assert.Equal(t, json.Number("218"), got.SourceData["id"])
	products, _ := got.SourceData["products"].([]any)
	assert.Len(t, products, 2, "sourceData holds the products read")
	addrs, _ := got.SourceData["shipping_addresses"].([]any)
	assert.Len(t, addrs, 2)
}

func TestStorefrontCShipmentLocationsHooks(t *testing.T) {
	f := newFakePlatform(t)
	serveStorefrontCExamples(t, f)
	f.serve("GET "+sfcRoot+"/v2/orders/218/shipments", 204, nil)
	f.serve("POST "+sfcRoot+"/v2/orders/218/shipments", 201, platformExample(t, "storefront_c", "shipment_create_response.json"))
	f.serve("GET "+sfcRoot+"/v3/inventory/locations", 200, platformExample(t, "storefront_c", "locations_list_response.json"))
	f.serve("POST "+sfcRoot+"/v3/hooks", 200, platformExample(t, "storefront_c", "webhook_create_response.json"))
	published := platformExample(t, "storefront_c", "shipment_create_request.json")
	publishedHook := platformExample(t, "storefront_c", "webhook_create_request.json")
	c := platforms.NewStorefrontC(f.srv.URL, f.srv.Client())
	ctx := context.Background()

	// The service's own carrier code (carrier_c) goes as shipping_provider
	// "usps" with tracking_carrier "".
	res, err := c.PushFulfillment(ctx, sfcBridge(), platforms.Fulfillment{OrderExternalID: "218", TrackingNumber: "EJ958083578UK", Carrier: "carrier_c"})
	require.NoError(t, err)
	assert.Equal(t, platforms.FulfillmentResult{ExternalID: "11", Created: true}, res)
	post := f.last(t, "POST", sfcRoot+"/v2/orders/218/shipments")
	got, want := keyPaths(t, post.body), keyPaths(t, published)
	delete(want, "comments") // optional text
	for k := range want {
		assert.True(t, got[k], "built request lacks %s", k)
	}
	var body struct {
		OrderAddressID   json.Number `json:"order_address_id"`
		ShippingProvider string      `json:"shipping_provider"`
		TrackingNumber   string      `json:"tracking_number"`
		Items            []struct {
			OrderProductID int `json:"order_product_id"`
			Quantity       int `json:"quantity"`
		} `json:"items"`
	}
	require.NoError(t, json.Unmarshal(post.body, &body))
	assert.Equal(t, json.Number("51"), body.OrderAddressID)
	assert.Equal(t, "usps", body.ShippingProvider)
	assert.NotContains(t, string(post.body), "tracking_carrier")
	assert.Equal(t, "EJ958083578UK", body.TrackingNumber)
	require.Len(t, body.Items, 2)
	assert.Equal(t, 65, body.Items[0].OrderProductID)
	assert.Equal(t, 1, body.Items[0].Quantity)

	// A shipment with the number exists: nothing is created.
	f.serve("GET "+sfcRoot+"/v2/orders/218/shipments", 200, []byte("["+string(platformExample(t, "storefront_c", "shipment_create_response.json"))+"]"))
	res, err = c.PushFulfillment(ctx, sfcBridge(), platforms.Fulfillment{OrderExternalID: "218", TrackingNumber: "EJ958083578US", Carrier: "usps"})
	require.NoError(t, err)
	assert.Equal(t, platforms.FulfillmentResult{ExternalID: "11", Created: false}, res)

	locs, err := c.ListLocations(ctx, sfcBridge())
	require.NoError(t, err)
	require.Len(t, locs, 2)
	assert.Equal(t, platforms.Location{ExternalID: "2", Name: "Downtown Location - Park Lane", Active: true,
		Address: &platforms.Address{Name: "Downtown Location - Park Lane", Address1: "100 Park Lane", City: "Austin", Province: "TX",
			ProvinceCode: "TX", Zip: "78726", Phone: "+15128654500", Country: "US", CountryCode: "US"}}, locs[0])
	assert.Equal(t, "3", locs[1].ExternalID)

	hook, err := c.RegisterWebhook(ctx, sfcBridge(), "store/order/updated", "https://yourapp.example.com/webhooks")
	require.NoError(t, err)
	assert.Equal(t, platforms.Webhook{ID: "20172984", Topic: "store/order/updated", Address: "https://yourapp.example.com/webhooks"}, hook)
	hookPost := f.last(t, "POST", sfcRoot+"/v3/hooks")
	var gotHook, wantHook map[string]any
	require.NoError(t, json.Unmarshal(hookPost.body, &gotHook))
	require.NoError(t, json.Unmarshal(publishedHook, &wantHook))
	assert.Equal(t, wantHook, gotHook, "the built body is the published example")
}

func TestStorefrontCPagesThroughPages(t *testing.T) {
	f := newFakePlatform(t)
	f.routes["GET "+sfcRoot+"/v2/orders"] = func(w http.ResponseWriter, r *http.Request) {
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		var orders []string
		for i := 0; i < 2 && (page-1)*2+i < 4; i++ {
			id := (page-1)*2 + i + 1
			orders = append(orders, fmt.Sprintf(`{"id":%d,"status_id":11,"date_modified":"Wed, 05 Dec 2018 20:16:55 +0000"}`, id))
		}
		if len(orders) == 0 {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		_, _ = fmt.Fprintf(w, `[%s]`, joinComma(orders))
	}
	for id := 1; id <= 4; id++ {
		f.serve(fmt.Sprintf("GET %s/v2/orders/%d/products", sfcRoot, id), 200, []byte(`[]`))
		f.serve(fmt.Sprintf("GET %s/v2/orders/%d/shipping_addresses", sfcRoot, id), 204, nil)
	}
	c := platforms.NewStorefrontC(f.srv.URL, f.srv.Client(), platforms.ListLimit(2))
	all, n := listAll(t, c, sfcBridge(), time.Date(2018, 1, 1, 0, 0, 0, 0, time.UTC))
	assert.Equal(t, 3, n, "two full pages, then an empty one")
	var ids []string
	for _, o := range all {
		ids = append(ids, o.ExternalID)
	}
	assert.Equal(t, []string{"1", "2", "3", "4"}, ids)
	for _, call := range f.calls {
		if call.path == sfcRoot+"/v2/orders" {
			assert.Equal(t, []string{"2018-01-01T00:00:00Z"}, call.query["min_date_modified"], "every page keeps the filter")
		}
	}
}

func TestStorefrontCErrorClasses(t *testing.T) {
	f := newFakePlatform(t)
	c := platforms.NewStorefrontC(f.srv.URL, f.srv.Client())
	ctx := context.Background()
	b := sfcBridge()

	f.serve("GET "+sfcRoot+"/v2/orders", 401, []byte(`[{"status":401,"message":"You are not authorized to access this resource."}]`))
	_, _, err := c.ListOrders(ctx, b, time.Time{}, "")
	require.ErrorIs(t, err, platforms.ErrUnauthorized)
	assert.Contains(t, err.Error(), "not authorized")
	assert.False(t, platforms.IsRetryable(err))

	f.serve("GET "+sfcRoot+"/v2/orders", 429, []byte(`[{"status":429,"message":"Too many requests"}]`),
		"X-Rate-Limit-Time-Reset-Ms", "15000", "X-Retry-After", "3", "X-Rate-Limit-Requests-Left", "0")
	_, _, err = c.ListOrders(ctx, b, time.Time{}, "")
	require.ErrorIs(t, err, platforms.ErrRateLimited)
	wait, _ := platforms.RetryAfter(err)
	assert.Equal(t, 15*time.Second, wait, "the longer of the two")

	// A used-up quota is waited out inside the call (up to a window)...
	c = platforms.NewStorefrontC(f.srv.URL, f.srv.Client())
	f.serve("GET "+sfcRoot+"/v3/inventory/locations", 200, []byte(`{"data":[],"meta":{}}`),
		"X-Rate-Limit-Requests-Left", "0", "X-Rate-Limit-Time-Reset-Ms", "300")
	_, err = c.ListLocations(ctx, b)
	require.NoError(t, err)
	start := time.Now()
	_, err = c.ListLocations(ctx, b)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 250*time.Millisecond)
	// ...but a longer wait fails at once with it.
	f.serve("GET "+sfcRoot+"/v3/inventory/locations", 200, []byte(`{"data":[],"meta":{}}`),
		"X-Rate-Limit-Requests-Left", "0", "X-Rate-Limit-Time-Reset-Ms", "45000")
	_, err = c.ListLocations(ctx, b)
	require.NoError(t, err)
	_, err = c.ListLocations(ctx, b)
	require.ErrorIs(t, err, platforms.ErrRateLimited)
	wait, _ = platforms.RetryAfter(err)
	assert.Greater(t, wait, 40*time.Second)
	c = platforms.NewStorefrontC(f.srv.URL, f.srv.Client())

	f.serve("GET "+sfcRoot+"/v2/orders", 503, []byte(`[{"status":503,"message":"Service Unavailable"}]`))
	_, _, err = c.ListOrders(ctx, b, time.Time{}, "")
	require.Error(t, err)
	assert.True(t, platforms.IsRetryable(err))

	f.serve("GET "+sfcRoot+"/v2/orders/5", 404, platformExample(t, "storefront_c", "error_v2_404.json"))
	_, err = c.FetchOrder(ctx, b, "5")
	require.ErrorIs(t, err, platforms.ErrOrderNotFound)
	assert.Contains(t, err.Error(), "The requested resource was not found.")

	f.serve("POST "+sfcRoot+"/v3/hooks", 422, platformExample(t, "storefront_c", "error_v3_422.json"))
	_, err = c.RegisterWebhook(ctx, b, "store/order/created", "")
	var pe *platforms.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 422, pe.StatusCode)
	assert.Contains(t, pe.Message, "destination")

	_, _, err = c.ListOrders(ctx, sfcBridge("storeHash", "../x"), time.Time{}, "")
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, platforms.CodeInvalidConfig, pe.Code)
}
