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

func hubBridge(kv ...string) platforms.Bridge {
	b := bridgeOf("shipping_hub_a")
	b.Config = map[string]any{"apiKey": "ShipStation", "apiSecret": "Rocks"}
	return withConfig(b, kv...)
}

func pacific(y int, m time.Month, d, h, min, s, ns int) time.Time {
	return time.Date(y, m, d, h, min, s, ns, platforms.ShippingHubAZone).UTC()
}

func TestShippingHubADecodesPublishedOrders(t *testing.T) {
	f := newFakePlatform(t)
	f.serve("GET /orders", 200, platformExample(t, "shipping_hub_a", "orders_list_response.json"))
	f.serve("GET /orders/94113592", 200, platformExample(t, "shipping_hub_a", "order_get_response.json"))
	c := platforms.NewShippingHubA(f.srv.URL, f.srv.Client())
	ctx := context.Background()

	since := pacific(2015, 8, 1, 0, 0, 0, 0)
	orders, next, err := c.ListOrders(ctx, hubBridge("storeId", "12345"), since, "")
	require.NoError(t, err)
	assert.Empty(t, next, "pages: 1")
	require.Len(t, orders, 2)
	req := f.last(t, "GET", "/orders")
	assert.Equal(t, "Basic U2hpcFN0YXRpb246Um9ja3M=", req.header.Get("Authorization"), "the documented example credentials")
	assert.Equal(t, []string{"2015-08-01 00:00:00"}, req.query["modifyDateStart"])
	assert.Equal(t, []string{"ModifyDate"}, req.query["sortBy"])
	assert.Equal(t, []string{"ASC"}, req.query["sortDir"])
	assert.Equal(t, []string{"1"}, req.query["page"])
	assert.Equal(t, []string{"250"}, req.query["pageSize"])
	assert.Equal(t, []string{"12345"}, req.query["storeId"])

	intl := orders[0]
	assert.Equal(t, "987654321", intl.ExternalID)
	assert.Equal(t, "Test-International-API-DOCS", intl.OrderNumber)
	assert.Equal(t, platforms.Customer{Email: "sholmes1854@methodsofdetection.com", FirstName: "Sherlock", LastName: "Holmes"}, intl.Customer)
	assert.Equal(t, &platforms.Address{Name: "Sherlock Holmes", Address1: "221 B Baker St", City: "London", Zip: "NW1 6XE",
		Country: "GB", CountryCode: "GB"}, intl.ShippingAddress)
	require.Len(t, intl.LineItems, 2)
	assert.Equal(t, platforms.LineItem{ExternalID: "136282568", SKU: "Ele-1234", Name: "Elementary Disguise Kit", Quantity: 2,
		UnitPrice: 49.99, TotalPrice: 99.98, RequiresShipping: true, Taxable: true}, intl.LineItems[0])
	assert.Equal(t, platforms.Totals{Subtotal: 324.98, Shipping: 35, Tax: 27.99, Total: 387.97}, intl.Totals)
	assert.Equal(t, platforms.StatusConfirmed, intl.Status, "awaiting_shipment")
	assert.Equal(t, platforms.PaymentPaid, intl.PaymentStatus)
	assert.Equal(t, platforms.FulfillmentUnfulfilled, intl.FulfillmentStatus)
	assert.Equal(t, "Please be careful when packing the disguise kits in with the cane.", intl.Note)
	assert.Equal(t, pacific(2015, 6, 28, 17, 46, 27, 0), intl.OrderedAt)
	assert.Equal(t, pacific(2015, 8, 17, 9, 24, 16, 480_000_000), intl.UpdatedAt)
	assert.Equal(t, json.Number("987654321"), intl.SourceData["orderId"])

	got, err := c.FetchOrder(ctx, hubBridge(), "94113592")
	require.NoError(t, err)
	assert.Equal(t, "94113592", got.ExternalID)
	assert.Equal(t, "TEST-ORDER-API-DOCS", got.OrderNumber)
	assert.Equal(t, platforms.Customer{Email: "headhoncho@whitehouse.gov", FirstName: "The", LastName: "President", Phone: "555-555-5555"}, got.Customer)
	assert.Equal(t, &platforms.Address{Name: "The President", Company: "US Govt", Address1: "1600 Pennsylvania Ave", Address2: "Oval Office",
		City: "Washington", Province: "DC", ProvinceCode: "DC", Zip: "20500", Country: "US", CountryCode: "US", Phone: "555-555-5555"}, got.ShippingAddress)
	assert.Equal(t, "The President", got.BillingAddress.Name)
	require.Len(t, got.LineItems, 1, "the 10% OFF adjustment is the discount, not a line")
	assert.Equal(t, "128836912", got.LineItems[0].ExternalID)
	assert.Equal(t, platforms.Totals{Subtotal: 199.98, Discount: 20.55, Shipping: 10, Tax: 5, Total: 194.43}, got.Totals)
	assert.InDelta(t, got.Totals.Total, got.Totals.Subtotal-got.Totals.Discount+got.Totals.Shipping+got.Totals.Tax, 0.001)
	assert.Equal(t, "USD", got.Currency)
	assert.Equal(t, pacific(2015, 9, 8, 11, 3, 12, 380_000_000), got.UpdatedAt)
}

func TestShippingHubAShipmentsWarehousesWebhooks(t *testing.T) {
	f := newFakePlatform(t)
	element := platformExample(t, "shipping_hub_a", "shipment_list_element.json")
	f.serve("GET /shipments", 200, []byte(fmt.Sprintf(`{"shipments":[%s],"total":1,"page":1,"pages":1}`, element)))
	f.serve("GET /warehouses", 200, platformExample(t, "shipping_hub_a", "warehouses_list_response.json"))
	f.serve("POST /webhooks/subscribe", 201, platformExample(t, "shipping_hub_a", "webhook_subscribe_response.json"))
	published := platformExample(t, "shipping_hub_a", "webhook_subscribe_request.json")
	c := platforms.NewShippingHubA(f.srv.URL, f.srv.Client())
	ctx := context.Background()

	ships, next, err := c.ListShipments(ctx, hubBridge(), time.Time{}, "")
	require.NoError(t, err)
	assert.Empty(t, next)
	require.Len(t, ships, 1)
	s := ships[0]
	assert.Equal(t, "33974374", s.ExternalID)
	assert.Equal(t, "43945660", s.OrderExternalID)
	assert.Equal(t, "100038-1", s.OrderNumber)
	assert.Equal(t, "9400111899561704681189", s.TrackingNumber)
	assert.Equal(t, "stamps_com", s.CarrierCode)
	assert.Equal(t, "usps_first_class_mail", s.ServiceCode)
	assert.Equal(t, 1.93, s.Cost)
	assert.False(t, s.Voided)
	assert.Equal(t, pacific(2014, 10, 3, 0, 0, 0, 0), s.ShipDate)
	assert.Equal(t, "MANCHACA", s.ShipTo.City)
	assert.Equal(t, "TX", s.ShipTo.ProvinceCode)
	require.Len(t, s.Items, 1)
	assert.Equal(t, "56568665", s.Items[0].ExternalID)
	assert.Equal(t, "SQ3785739", s.Items[0].SKU)
	req := f.last(t, "GET", "/shipments")
	assert.Equal(t, []string{"true"}, req.query["includeShipmentItems"])
	assert.Equal(t, []string{"CreateDate"}, req.query["sortBy"])

	locs, err := c.ListLocations(ctx, hubBridge())
	require.NoError(t, err)
	require.Len(t, locs, 2)
	assert.Equal(t, platforms.Location{ExternalID: "17977", Name: "Main warehouse", Active: true, IsDefault: true,
		Address: &platforms.Address{Name: "Spring warehouse", Address1: "123 S SPRING RD", City: "Elmurst", Province: "IL",
			ProvinceCode: "IL", Zip: "60126", Country: "US", CountryCode: "US", Phone: "5121112222"}}, locs[0])
	assert.Equal(t, "14265", locs[1].ExternalID)
	assert.False(t, locs[1].IsDefault)

	hook, err := c.RegisterWebhook(ctx, hubBridge(), "ORDER_NOTIFY", "http://someexamplewebhookurl.com/neworder")
	require.NoError(t, err)
	assert.Equal(t, "123456", hook.ID)
	post := f.last(t, "POST", "/webhooks/subscribe")
	got, want := keyPaths(t, post.body), keyPaths(t, published)
	for k := range want {
		assert.True(t, got[k], "built request lacks %s", k)
	}
	var body map[string]any
	require.NoError(t, json.Unmarshal(post.body, &body))
	assert.Nil(t, body["store_id"])
	assert.Equal(t, "ORDER_NOTIFY", body["event"])
}

func TestShippingHubAMarkAsShippedBuildsThePublishedRequest(t *testing.T) {
	f := newFakePlatform(t)
	f.serve("GET /shipments", 200, []byte(`{"shipments":[],"total":0,"page":1,"pages":0}`))
	f.serve("GET /fulfillments", 200, []byte(`{"fulfillments":[],"total":0,"page":1,"pages":0}`))
	f.serve("POST /orders/markasshipped", 200, platformExample(t, "shipping_hub_a", "markasshipped_response.json"))
	published := platformExample(t, "shipping_hub_a", "markasshipped_request.json")
	c := platforms.NewShippingHubA(f.srv.URL, f.srv.Client())

	// The service's own carrier code (carrier_c) goes as the hub's carrier
	// code ("usps"); notifyCustomer comes from the bridge's config.
	b := hubBridge()
	b.Config["notifyCustomer"] = true
	res, err := c.PushFulfillment(context.Background(), b, platforms.Fulfillment{
		OrderExternalID: "93348442", Carrier: "carrier_c", Service: "usps_priority_mail", TrackingNumber: "913492493294329421",
		ShipDate: pacific(2014, 4, 1, 12, 0, 0, 0),
	})
	require.NoError(t, err)
	assert.True(t, res.Created)

	post := f.last(t, "POST", "/orders/markasshipped")
	var got, want map[string]any
	require.NoError(t, json.Unmarshal(post.body, &got))
	require.NoError(t, json.Unmarshal(published, &want))
	assert.Equal(t, want, got, "the built body is the published example")
	for _, path := range []string{"/shipments", "/fulfillments"} {
		q := f.last(t, "GET", path).query
		assert.Equal(t, []string{"93348442"}, q["orderId"], path)
		assert.Equal(t, []string{"913492493294329421"}, q["trackingNumber"], path)
	}

	// Both flags follow the bridge's config, and its carrierNames win.
	b.Config = map[string]any{"apiKey": b.Config["apiKey"], "apiSecret": b.Config["apiSecret"], "notifySalesChannel": false,
		"carrierNames": map[string]any{"carrier_c": "stamps_com"}}
	_, err = c.PushFulfillment(context.Background(), b, platforms.Fulfillment{OrderExternalID: "93348442", Carrier: "carrier_c", TrackingNumber: "9400111899561704681189"})
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(f.last(t, "POST", "/orders/markasshipped").body, &got))
	assert.Equal(t, false, got["notifyCustomer"])
	assert.Equal(t, false, got["notifySalesChannel"])
	assert.Equal(t, "stamps_com", got["carrierCode"])
}

func TestShippingHubAPushSkipsKnownTracking(t *testing.T) {
	f := newFakePlatform(t)
	element := platformExample(t, "shipping_hub_a", "shipment_list_element.json")
	f.serve("GET /shipments", 200, []byte(fmt.Sprintf(`{"shipments":[%s],"total":1,"page":1,"pages":1}`, element)))
	c := platforms.NewShippingHubA(f.srv.URL, f.srv.Client())
	res, err := c.PushFulfillment(context.Background(), hubBridge(), platforms.Fulfillment{
		OrderExternalID: "43945660", Carrier: "stamps_com", TrackingNumber: "9400111899561704681189"})
	require.NoError(t, err)
	assert.Equal(t, platforms.FulfillmentResult{ExternalID: "33974374", Created: false}, res)
	f.mu.Lock()
	defer f.mu.Unlock()
	assert.Len(t, f.calls, 1, "nothing marked")
}

func TestShippingHubAPagesThroughPages(t *testing.T) {
	f := newFakePlatform(t)
	f.routes["GET /orders"] = func(w http.ResponseWriter, r *http.Request) {
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		var orders []string
		for i := 0; i < 2 && (page-1)*2+i < 5; i++ {
			id := (page-1)*2 + i + 1
			orders = append(orders, fmt.Sprintf(`{"orderId":%d,"orderNumber":"N%d","orderStatus":"awaiting_shipment","modifyDate":"2026-01-0%dT00:00:00.0000000","items":[]}`, id, id, id))
		}
		_, _ = fmt.Fprintf(w, `{"orders":[%s],"total":5,"page":%d,"pages":3}`, joinComma(orders), page)
	}
	c := platforms.NewShippingHubA(f.srv.URL, f.srv.Client(), platforms.ListLimit(2))
	since := pacific(2026, 1, 1, 0, 0, 0, 0)
	all, n := listAll(t, c, hubBridge(), since)
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
		assert.Equal(t, []string{"2"}, call.query["pageSize"])
		assert.Equal(t, []string{"2026-01-01 00:00:00"}, call.query["modifyDateStart"], "every page keeps the first page's filter")
	}
}

func TestShippingHubAErrorClasses(t *testing.T) {
	f := newFakePlatform(t)
	c := platforms.NewShippingHubA(f.srv.URL, f.srv.Client())
	ctx := context.Background()
	b := hubBridge()

	f.serve("GET /orders", 401, []byte(`{"message":"Invalid API credentials"}`))
	_, _, err := c.ListOrders(ctx, b, time.Time{}, "")
	require.ErrorIs(t, err, platforms.ErrUnauthorized)
	assert.False(t, platforms.IsRetryable(err))
	assert.Contains(t, err.Error(), "Invalid API credentials")
	assert.NotContains(t, err.Error(), "Rocks")

	f.serve("GET /orders", 429, []byte(`{"message":"Too Many Requests"}`),
		"X-Rate-Limit-Limit", "40", "X-Rate-Limit-Remaining", "0", "X-Rate-Limit-Reset", "37")
	_, _, err = c.ListOrders(ctx, b, time.Time{}, "")
	require.ErrorIs(t, err, platforms.ErrRateLimited)
	wait, _ := platforms.RetryAfter(err)
	assert.Equal(t, 37*time.Second, wait)
	assert.True(t, platforms.IsRetryable(err))
	// The account is not called again before the window resets.
	f.mu.Lock()
	sent := len(f.calls)
	f.mu.Unlock()
	_, err = c.FetchOrder(ctx, b, "1")
	require.ErrorIs(t, err, platforms.ErrRateLimited)
	f.mu.Lock()
	assert.Equal(t, sent, len(f.calls))
	f.mu.Unlock()

	// A used-up quota on a good answer holds the next call too.
	c = platforms.NewShippingHubA(f.srv.URL, f.srv.Client())
	f.serve("GET /warehouses", 200, []byte(`[]`), "X-Rate-Limit-Limit", "40", "X-Rate-Limit-Remaining", "0", "X-Rate-Limit-Reset", "20")
	_, err = c.ListLocations(ctx, b)
	require.NoError(t, err)
	_, err = c.ListLocations(ctx, b)
	require.ErrorIs(t, err, platforms.ErrRateLimited)
	wait, _ = platforms.RetryAfter(err)
	assert.Greater(t, wait, 19*time.Second)
	_, err = c.ListLocations(ctx, hubBridge("apiKey", "another-key"))
	require.NoError(t, err, "another account has its own quota")

	c = platforms.NewShippingHubA(f.srv.URL, f.srv.Client())

	f.serve("GET /orders", 500, []byte(`{"Message":"An error has occurred.","ExceptionMessage":"boom"}`))
	_, _, err = c.ListOrders(ctx, b, time.Time{}, "")
	require.Error(t, err)
	assert.True(t, platforms.IsRetryable(err))
	assert.Contains(t, err.Error(), "An error has occurred.")

	f.serve("GET /orders/1", 404, []byte(`{"message":"Not Found"}`))
	_, err = c.FetchOrder(ctx, b, "1")
	require.ErrorIs(t, err, platforms.ErrOrderNotFound)

	_, _, err = c.ListOrders(ctx, hubBridge("apiSecret", "<delete>"), time.Time{}, "")
	var pe *platforms.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, platforms.CodeInvalidConfig, pe.Code)
}
