package platforms_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
)

const mpaTokenJSON = `{"access_token":"Atza|IwEBIExample","token_type":"bearer","expires_in":3600}`

func mpaBridge(kv ...string) platforms.Bridge {
	b := bridgeOf("marketplace_a")
	b.Config = map[string]any{"sellerId": "A3TH9S8BH6GOGM", "refreshToken": "Atzr|refresh-secret", "clientId": "amzn1.application-oa2-client.x",
		"clientSecret": "client-secret", "marketplaceId": "ATVPDKIKX0DER"}
	return withConfig(b, kv...)
}

// mpaFake is a fake platform serving both the token host (/auth/o2/token)
// and the API host; it counts token exchanges.
func mpaFake(t *testing.T) (*fakePlatform, *atomic.Int32) {
	f := newFakePlatform(t)
	var exchanges atomic.Int32
	f.routes["POST "+platforms.MarketplaceATokenPath] = func(w http.ResponseWriter, _ *http.Request) {
		exchanges.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, mpaTokenJSON)
	}
	f.routes["POST "+platforms.MarketplaceARDTPath] = func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, mpaRDTJSON)
	}
	return f, &exchanges
}

// mpaRDTJSON is the Tokens API's answer (its published example's shape).
const mpaRDTJSON = `{"restrictedDataToken":"Atz.sprdt|IQEBLjAsAhRmHjNgHpi0U-Dme37rR6CuUpSR","expiresIn":3600}`

// mpaTokensFor are the tokens a call to path may carry: the restricted
// data token for getOrders (and for getOrder when the buyer is read; a
// push reads the status only), the access token elsewhere.
func mpaTokensFor(path string) []string {
	switch {
	case path == "/orders/v0/orders":
		return []string{"Atz.sprdt|IQEBLjAsAhRmHjNgHpi0U-Dme37rR6CuUpSR"}
	case strings.HasPrefix(path, "/orders/v0/orders/") && strings.Count(path, "/") == 4:
		return []string{"Atz.sprdt|IQEBLjAsAhRmHjNgHpi0U-Dme37rR6CuUpSR", "Atza|IwEBIExample"}
	}
	return []string{"Atza|IwEBIExample"}
}

// itemsOnce serves a published getOrderItems answer, and an empty last page
// for its NextToken.
func itemsOnce(t *testing.T, body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("NextToken") != "" {
			_, _ = io.WriteString(w, `{"payload":{"OrderItems":[]}}`)
			return
		}
		_, _ = w.Write(body)
	}
}

// noSecretsAtTheAPI checks that only the access token reached the API host.
func noSecretsAtTheAPI(t *testing.T, f *fakePlatform) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.calls {
		if c.path == platforms.MarketplaceATokenPath {
			assert.Empty(t, c.header.Get(platforms.MarketplaceATokenHeader))
			continue
		}
		assert.Contains(t, mpaTokensFor(c.path), c.header.Get(platforms.MarketplaceATokenHeader), c.path)
		raw := fmt.Sprint(c.header, c.query, string(c.body))
		for _, secret := range []string{"refresh-secret", "client-secret"} {
			assert.NotContains(t, raw, secret, c.path)
		}
	}
}

func TestMarketplaceADecodesPublishedOrders(t *testing.T) {
	f, exchanges := mpaFake(t)
	f.serve("GET /orders/v0/orders", 200, platformExample(t, "marketplace_a", "ordersV0_getOrders_response.json"), platforms.MarketplaceARateLimitHeader, "0.0167")
	f.serve("GET /orders/v0/orders/902-3159896-1390916", 200, platformExample(t, "marketplace_a", "ordersV0_getOrder_response.json"))
	f.routes["GET /orders/v0/orders/902-3159896-1390916/orderItems"] = itemsOnce(t, platformExample(t, "marketplace_a", "ordersV0_getOrderItems_response.json"))
	c := platforms.NewMarketplaceA(f.srv.URL, f.srv.URL, f.srv.Client())
	ctx := context.Background()

	since := time.Date(2017, 1, 1, 0, 0, 0, 0, time.UTC)
	orders, next, err := c.ListOrders(ctx, mpaBridge(), since, "")
	require.NoError(t, err)
	assert.Equal(t, "2YgYW55IGNhcm5hbCBwbGVhc3VyZS4", next, "NextToken is the cursor")
	require.Len(t, orders, 1)

	tok := f.last(t, "POST", platforms.MarketplaceATokenPath)
	form, err := url.ParseQuery(string(tok.body))
	require.NoError(t, err)
	assert.Equal(t, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"Atzr|refresh-secret"},
		"client_id": {"amzn1.application-oa2-client.x"}, "client_secret": {"client-secret"}}, form)
	assert.Contains(t, tok.header.Get("Content-Type"), "application/x-www-form-urlencoded")
	list := f.last(t, "GET", "/orders/v0/orders")
	assert.Equal(t, map[string][]string{"MarketplaceIds": {"ATVPDKIKX0DER"}, "LastUpdatedAfter": {"2017-01-01T00:00:00Z"},
		"FulfillmentChannels": {"MFN"}, "MaxResultsPerPage": {"100"}}, list.query)

	o := orders[0]
	assert.Equal(t, "902-3159896-1390916", o.ExternalID)
	assert.Equal(t, "902-3159896-1390916", o.OrderNumber)
	assert.Equal(t, platforms.StatusPending, o.Status, "Pending")
	assert.Equal(t, platforms.PaymentPending, o.PaymentStatus)
	assert.Equal(t, platforms.FulfillmentUnfulfilled, o.FulfillmentStatus)
	assert.Equal(t, platforms.Customer{Email: "user@example.com", FirstName: "John", LastName: "Doe"}, o.Customer)
	assert.Equal(t, &platforms.Address{Name: "Michigan address", Address1: "1 Cross St.", City: "Canton", Province: "MI", ProvinceCode: "MI",
		Zip: "48817", Country: "US", CountryCode: "US"}, o.ShippingAddress)
	assert.Nil(t, o.BillingAddress)
	require.Len(t, o.LineItems, 2, "items are the getOrderItems sub-resource")
	assert.Equal(t, platforms.LineItem{ExternalID: "68828574383266", SKU: "CBA_OTF_1", Name: "Example item name", Quantity: 1,
		UnitPrice: 25.99, TotalPrice: 25.99, RequiresShipping: true, Taxable: true}, o.LineItems[0])
	assert.Equal(t, "79039765272157", o.LineItems[1].ExternalID)
	assert.Equal(t, 2, o.LineItems[1].Quantity)
	assert.Equal(t, 17.95, o.LineItems[1].TotalPrice, "ItemPrice is the line's price")
	assert.InDelta(t, 8.975, o.LineItems[1].UnitPrice, 0.006)
	assert.Equal(t, platforms.Totals{Subtotal: 43.94, Shipping: 1.26, Total: 45.2}, o.Totals, "no OrderTotal: the items' sum")
	assert.Equal(t, "JPY", o.Currency, "the items' currency")
	assert.Equal(t, time.Date(2017, 1, 20, 19, 49, 35, 0, time.UTC), o.OrderedAt)
	assert.Equal(t, time.Date(2017, 1, 20, 19, 49, 35, 0, time.UTC), o.UpdatedAt)
	assert.Equal(t, "902-3159896-1390916", o.SourceData["AmazonOrderId"])
	items, _ := o.SourceData["OrderItems"].([]any)
	assert.Len(t, items, 2)
	f.mu.Lock()
	itemCalls := 0
	for _, call := range f.calls {
		if strings.HasSuffix(call.path, "/orderItems") {
			itemCalls++
		}
	}
	f.mu.Unlock()
	assert.Equal(t, 2, itemCalls, "the item list's NextToken is followed")

	got, err := c.FetchOrder(ctx, mpaBridge(), "902-3159896-1390916")
	require.NoError(t, err)
	assert.Equal(t, o.Customer, got.Customer)
	assert.Equal(t, o.ShippingAddress, got.ShippingAddress)
	assert.Equal(t, o.Totals, got.Totals)
	assert.Equal(t, int32(1), exchanges.Load(), "one token for every call")
	noSecretsAtTheAPI(t, f)

	// The buyer's details are absent without a PII role: empty fields.
	bare, err := platforms.MarketplaceAOrder(json.RawMessage(`{"AmazonOrderId":"1","OrderStatus":"Unshipped","BuyerInfo":{},"ShippingAddress":{"City":"Canton","CountryCode":"US"},"OrderTotal":{"CurrencyCode":"USD","Amount":"10.00"}}`), nil)
	require.NoError(t, err)
	assert.Equal(t, platforms.Customer{}, bare.Customer)
	assert.Equal(t, "Canton", bare.ShippingAddress.City)
	assert.Empty(t, bare.ShippingAddress.Address1)
	assert.Equal(t, platforms.StatusConfirmed, bare.Status)
	assert.Equal(t, 10.0, bare.Totals.Total)
	none, err := platforms.MarketplaceAOrder(json.RawMessage(`{"AmazonOrderId":"2"}`), nil)
	require.NoError(t, err)
	assert.Nil(t, none.ShippingAddress)
	assert.Equal(t, "USD", none.Currency)
}

func TestMarketplaceAConfirmShipmentBuildsThePublishedRequest(t *testing.T) {
	f, _ := mpaFake(t)
	f.serve("GET /orders/v0/orders/902-1106328-1059050", 200, []byte(`{"payload":{"AmazonOrderId":"902-1106328-1059050","OrderStatus":"Unshipped","MarketplaceId":"ATVPDKIKX0DER"}}`))
	f.serve("GET /orders/v0/orders/902-1106328-1059050/orderItems", 200, []byte(`{"payload":{"AmazonOrderId":"902-1106328-1059050","OrderItems":[
		{"OrderItemId":"79039765272157","SellerSKU":"A","QuantityOrdered":1,"QuantityShipped":0},
		{"OrderItemId":"79039765272158","SellerSKU":"B","QuantityOrdered":2,"QuantityShipped":2}]}}`))
	f.serve("POST /orders/v0/orders/902-1106328-1059050/shipmentConfirmation", 204, nil)
	c := platforms.NewMarketplaceA(f.srv.URL, f.srv.URL, f.srv.Client())

	res, err := c.PushFulfillment(context.Background(), mpaBridge(), platforms.Fulfillment{
		// The service's own carrier code and service, as push-fulfillment
		// reads them from a shipment.
		OrderExternalID: "902-1106328-1059050", Carrier: "carrier_a", Service: "FEDEX_GROUND", TrackingNumber: "112345678",
		ShipDate: time.Date(2022, 2, 11, 1, 0, 0, 0, time.UTC),
	})
	require.NoError(t, err)
	assert.Equal(t, platforms.FulfillmentResult{ExternalID: "112345678", Created: true}, res)

	post := f.last(t, "POST", "/orders/v0/orders/902-1106328-1059050/shipmentConfirmation")
	got, want := keyPaths(t, post.body), keyPaths(t, platformExample(t, "marketplace_a", "ordersV0_confirmShipment_request.json"))
	for _, required := range []string{"marketplaceId", "packageDetail.packageReferenceId", "packageDetail.carrierCode", "packageDetail.trackingNumber",
		"packageDetail.shipDate", "packageDetail.orderItems.orderItemId", "packageDetail.orderItems.quantity"} {
		assert.True(t, want[required], "the published request has %s", required)
		assert.True(t, got[required], "built request lacks %s", required)
	}
	var body platforms.MarketplaceAShipment
	require.NoError(t, json.Unmarshal(post.body, &body))
	var published platforms.MarketplaceAShipment
	require.NoError(t, json.Unmarshal(platformExample(t, "marketplace_a", "ordersV0_confirmShipment_request.json"), &published))
	assert.Equal(t, published.MarketplaceID, body.MarketplaceID)
	assert.Equal(t, published.PackageDetail.CarrierCode, body.PackageDetail.CarrierCode)
	assert.Equal(t, published.PackageDetail.CarrierName, body.PackageDetail.CarrierName)
	assert.Equal(t, published.PackageDetail.TrackingNumber, body.PackageDetail.TrackingNumber)
	assert.Equal(t, published.PackageDetail.ShipDate, body.PackageDetail.ShipDate, "the same date format")
	assert.Equal(t, []platforms.MarketplaceAShipItem{{OrderItemID: "79039765272157", Quantity: 1}}, body.PackageDetail.OrderItems,
		"only what is still unshipped")
	// packageReferenceId is a positive number (the published "1"), not
	// the tracking number.
	n, err := strconv.ParseUint(body.PackageDetail.PackageReferenceID, 10, 63)
	require.NoError(t, err, body.PackageDetail.PackageReferenceID)
	assert.Positive(t, n)
	_, err = strconv.ParseUint(published.PackageDetail.PackageReferenceID, 10, 63)
	require.NoError(t, err)
	assert.Equal(t, "FEDEX_GROUND", body.PackageDetail.ShippingMethod)
	noSecretsAtTheAPI(t, f)
}

func TestMarketplaceAPushChecksTheOrderFirst(t *testing.T) {
	ctx := context.Background()
	push := platforms.Fulfillment{OrderExternalID: "902-1106328-1059050", Carrier: "UPS", TrackingNumber: "1Z1"}
	for status, want := range map[string]string{"Shipped": "", "Canceled": platforms.CodeNothingToFulfill, "Pending": platforms.CodeNothingToFulfill} {
		f, _ := mpaFake(t)
		f.serve("GET /orders/v0/orders/902-1106328-1059050", 200, []byte(`{"payload":{"AmazonOrderId":"902-1106328-1059050","OrderStatus":"`+status+`"}}`))
		res, err := platforms.NewMarketplaceA(f.srv.URL, f.srv.URL, f.srv.Client()).PushFulfillment(ctx, mpaBridge(), push)
		if want == "" {
			require.NoError(t, err)
			assert.False(t, res.Created, status)
		} else {
			var pe *platforms.Error
			require.ErrorAs(t, err, &pe, status)
			assert.Equal(t, want, pe.Code)
		}
		f.mu.Lock()
		assert.Len(t, f.calls, 2, "token and order only: nothing confirmed (%s)", status)
		f.mu.Unlock()
	}

	// Every item shipped already (a retry after the confirmation): nothing sent.
	f, _ := mpaFake(t)
	f.serve("GET /orders/v0/orders/902-1106328-1059050", 200, []byte(`{"payload":{"AmazonOrderId":"902-1106328-1059050","OrderStatus":"PartiallyShipped"}}`))
	f.serve("GET /orders/v0/orders/902-1106328-1059050/orderItems", 200, []byte(`{"payload":{"OrderItems":[
		{"OrderItemId":"1","QuantityOrdered":1,"QuantityShipped":1},{"OrderItemId":"2","QuantityOrdered":1,"QuantityShipped":0}]}}`))
	push.LineItems = []platforms.FulfillmentLine{{ExternalID: "1", Quantity: 1}}
	c := platforms.NewMarketplaceA(f.srv.URL, f.srv.URL, f.srv.Client())
	res, err := c.PushFulfillment(ctx, mpaBridge(), push)
	require.NoError(t, err)
	assert.False(t, res.Created)

	// An item the order does not have is a bad request, not a silent no-op.
	push.LineItems = []platforms.FulfillmentLine{{ExternalID: "7", Quantity: 1}}
	_, err = c.PushFulfillment(ctx, mpaBridge(), push)
	var pe *platforms.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, platforms.CodeInvalidRequest, pe.Code)
}

func TestMarketplaceASupplySources(t *testing.T) {
	f, _ := mpaFake(t)
	list := platformExample(t, "marketplace_a", "supplySources_list_response.json")
	one := platformExample(t, "marketplace_a", "supplySource_get_response.json")
	f.routes["GET /supplySources/2020-07-01/supplySources"] = func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("nextPageToken") == "" {
			_, _ = w.Write(list)
			return
		}
		_, _ = fmt.Fprintf(w, `{"supplySources":[%s]}`, one)
	}
	c := platforms.NewMarketplaceA(f.srv.URL, f.srv.URL, f.srv.Client())
	locs, err := c.ListLocations(context.Background(), mpaBridge())
	require.NoError(t, err)
	require.Len(t, locs, 2, "both pages")
	assert.Equal(t, platforms.Location{ExternalID: "ed85fcf9-798c-4b63-a47e-8d4f0d273ddb", Name: "alias_jksjdkf_aaaas", Active: true, IsDefault: true,
		Address: &platforms.Address{Name: "alias_jksjdkf_aaaas", Address1: "addresline 1234 010101 asaaab", City: "Red", Province: "string",
			Zip: "99999", Country: "US", CountryCode: "US"}}, locs[0])
	assert.Equal(t, "cbc976e5-1e55-4d33-855b-35e6254f5a58", locs[1].ExternalID)
	assert.False(t, locs[1].Active, "status Inactive")
	assert.Equal(t, "tes-addressLine2-gew, Rufus", locs[1].Address.Address2)
	assert.Equal(t, "WA", locs[1].Address.ProvinceCode)
	second := f.last(t, "GET", "/supplySources/2020-07-01/supplySources")
	assert.True(t, strings.HasPrefix(second.query["nextPageToken"][0], "eyJzMl9zb3J0X2tleSI6"))
}

func TestMarketplaceAPagesThroughNextToken(t *testing.T) {
	f, _ := mpaFake(t)
	pages := map[string]struct {
		ids  []int
		next string
	}{"": {[]int{1, 2}, "tok2"}, "tok2": {[]int{3, 4}, "tok3"}, "tok3": {[]int{5}, ""}}
	f.routes["GET /orders/v0/orders"] = func(w http.ResponseWriter, r *http.Request) {
		p := pages[r.URL.Query().Get("NextToken")]
		var orders []string
		for _, id := range p.ids {
			orders = append(orders, fmt.Sprintf(`{"AmazonOrderId":"111-0000000-000000%d","OrderStatus":"Unshipped","LastUpdateDate":"2026-01-0%dT00:00:00Z"}`, id, id))
		}
		next := ""
		if p.next != "" {
			next = fmt.Sprintf(`,"NextToken":%q`, p.next)
		}
		_, _ = fmt.Fprintf(w, `{"payload":{"Orders":[%s]%s}}`, joinComma(orders), next)
	}
	for id := 1; id <= 5; id++ {
		f.serve(fmt.Sprintf("GET /orders/v0/orders/111-0000000-000000%d/orderItems", id), 200,
			[]byte(fmt.Sprintf(`{"payload":{"OrderItems":[{"OrderItemId":"%d","QuantityOrdered":1,"ItemPrice":{"CurrencyCode":"USD","Amount":"5.00"}}]}}`, id)))
	}
	c := platforms.NewMarketplaceA(f.srv.URL, f.srv.URL, f.srv.Client(), platforms.ListLimit(2))
	all, n := listAll(t, c, mpaBridge(), time.Time{})
	assert.Equal(t, 3, n)
	var ids []string
	for _, o := range all {
		ids = append(ids, o.ExternalID)
		require.Len(t, o.LineItems, 1)
	}
	assert.Equal(t, []string{"111-0000000-0000001", "111-0000000-0000002", "111-0000000-0000003", "111-0000000-0000004", "111-0000000-0000005"}, ids)
	f.mu.Lock()
	defer f.mu.Unlock()
	var lists []recorded
	for _, call := range f.calls {
		if call.path == "/orders/v0/orders" {
			lists = append(lists, call)
		}
	}
	require.Len(t, lists, 3)
	assert.Equal(t, "2015-01-01T00:00:00Z", lists[0].query["LastUpdatedAfter"][0], "a first import needs a lower bound")
	assert.Equal(t, []string{"2"}, lists[0].query["MaxResultsPerPage"])
	assert.Equal(t, map[string][]string{"MarketplaceIds": {"ATVPDKIKX0DER"}, "NextToken": {"tok2"}}, lists[1].query, "NextToken goes with the marketplace alone")
	assert.Equal(t, map[string][]string{"MarketplaceIds": {"ATVPDKIKX0DER"}, "NextToken": {"tok3"}}, lists[2].query)
}

func TestMarketplaceATokenIsSharedCachedAndRenewed(t *testing.T) {
	f := newFakePlatform(t)
	var exchanges atomic.Int32
	f.routes["POST "+platforms.MarketplaceATokenPath] = func(w http.ResponseWriter, _ *http.Request) {
		n := exchanges.Add(1)
		time.Sleep(50 * time.Millisecond) // concurrent callers arrive while this one is in flight
		_, _ = fmt.Fprintf(w, `{"access_token":"Atza|token-%d","token_type":"bearer","expires_in":3600}`, n)
	}
	var revoked atomic.Bool
	f.routes["GET /supplySources/2020-07-01/supplySources"] = func(w http.ResponseWriter, r *http.Request) {
		if revoked.Load() && r.Header.Get(platforms.MarketplaceATokenHeader) == "Atza|token-1" {
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `{"errors":[{"code":"Unauthorized","message":"Access to requested resource is denied.","details":"The access token you provided is revoked, malformed or invalid."}]}`)
			return
		}
		_, _ = io.WriteString(w, `{"supplySources":[]}`)
	}
	c := platforms.NewMarketplaceA(f.srv.URL, f.srv.URL, f.srv.Client())
	ctx := context.Background()

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.ListLocations(ctx, mpaBridge())
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, int32(1), exchanges.Load(), "one exchange shared by concurrent calls")
	_, err := c.ListLocations(ctx, mpaBridge())
	require.NoError(t, err)
	assert.Equal(t, int32(1), exchanges.Load(), "cached")

	// Other credentials, another token.
	_, err = c.ListLocations(ctx, mpaBridge("refreshToken", "Atzr|other"))
	require.NoError(t, err)
	assert.Equal(t, int32(2), exchanges.Load())

	// A token revoked before its expiry is renewed once and the call goes on.
	revoked.Store(true)
	_, err = c.ListLocations(ctx, mpaBridge())
	require.NoError(t, err)
	assert.Equal(t, int32(3), exchanges.Load())
	assert.Equal(t, "Atza|token-3", f.last(t, "GET", "/supplySources/2020-07-01/supplySources").header.Get(platforms.MarketplaceATokenHeader))

	// A cancelled caller does not wait for the exchange.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = c.ListLocations(cancelled, mpaBridge("refreshToken", "Atzr|third"))
	require.Error(t, err)
	assert.True(t, platforms.IsRetryable(err))
}

func TestMarketplaceAErrorClasses(t *testing.T) {
	ctx := context.Background()
	tokenFails := func(status int, body string) error {
		f := newFakePlatform(t)
		f.serve("POST "+platforms.MarketplaceATokenPath, status, []byte(body))
		_, _, err := platforms.NewMarketplaceA(f.srv.URL, f.srv.URL, f.srv.Client()).ListOrders(ctx, mpaBridge(), time.Time{}, "")
		f.mu.Lock()
		defer f.mu.Unlock()
		assert.Len(t, f.calls, 1, "the API host is never called without a token")
		return err
	}
	err := tokenFails(400, `{"error_description":"The request has an invalid grant parameter : refresh_token","error":"invalid_grant"}`)
	require.ErrorIs(t, err, platforms.ErrUnauthorized)
	assert.False(t, platforms.IsRetryable(err))
	assert.Contains(t, err.Error(), "invalid grant parameter")
	assert.NotContains(t, err.Error(), "refresh-secret")
	err = tokenFails(401, `{"error_description":"Client authentication failed","error":"invalid_client"}`)
	require.ErrorIs(t, err, platforms.ErrUnauthorized)
	err = tokenFails(503, `{"error":"server_error"}`)
	assert.True(t, platforms.IsRetryable(err))

	f, _ := mpaFake(t)
	c := platforms.NewMarketplaceA(f.srv.URL, f.srv.URL, f.srv.Client())
	b := mpaBridge()
	route := "GET /orders/v0/orders"

	f.serve(route, 403, []byte(`{"errors":[{"code":"Unauthorized","message":"Access to requested resource is denied.","details":""}]}`))
	_, _, err = c.ListOrders(ctx, b, time.Time{}, "")
	require.ErrorIs(t, err, platforms.ErrUnauthorized)
	assert.Contains(t, err.Error(), "Access to requested resource is denied.")

	f.serve(route, 429, []byte(`{"errors":[{"code":"QuotaExceeded","message":"You exceeded your quota for the requested resource."}]}`),
		platforms.MarketplaceARateLimitHeader, "0.0167")
	_, _, err = c.ListOrders(ctx, b, time.Time{}, "")
	require.ErrorIs(t, err, platforms.ErrRateLimited)
	wait, _ := platforms.RetryAfter(err)
	assert.InDelta(t, 60*time.Second, wait, float64(200*time.Millisecond), "one request at the operation's rate")
	assert.True(t, platforms.IsRetryable(err))
	// The throttled operation is held back; the seller's other operations are not.
	_, _, err = c.ListOrders(ctx, b, time.Time{}, "")
	require.ErrorIs(t, err, platforms.ErrRateLimited)
	f.serve("GET /supplySources/2020-07-01/supplySources", 200, []byte(`{"supplySources":[]}`))
	_, err = c.ListLocations(ctx, b)
	require.NoError(t, err)
	c = platforms.NewMarketplaceA(f.srv.URL, f.srv.URL, f.srv.Client())
	f.serve(route, 429, []byte(`{"errors":[]}`), platforms.MarketplaceARateLimitHeader, "0.5")
	_, _, err = c.ListOrders(ctx, b, time.Time{}, "")
	wait, _ = platforms.RetryAfter(err)
	assert.Equal(t, 2*time.Second, wait)
	c = platforms.NewMarketplaceA(f.srv.URL, f.srv.URL, f.srv.Client())

	for _, status := range []int{500, 503} {
		f.serve(route, status, []byte(`{"errors":[{"code":"InternalFailure","message":"We encountered an internal error. Please try again."}]}`))
		_, _, err = c.ListOrders(ctx, b, time.Time{}, "")
		require.Error(t, err)
		assert.True(t, platforms.IsRetryable(err))
	}

	f.serve(route, 400, platformExample(t, "marketplace_a", "orders2026_searchOrders_400_error.json"))
	_, _, err = c.ListOrders(ctx, b, time.Time{}, "")
	var pe *platforms.Error
	require.ErrorAs(t, err, &pe)
	assert.False(t, pe.Retryable)
	assert.Equal(t, "Invalid Input", pe.Message)
	f.serve("POST /orders/v0/orders/1-2-3/shipmentConfirmation", 400, platformExample(t, "marketplace_a", "ordersV0_confirmShipment_400_error.json"))
	f.serve("GET /orders/v0/orders/1-2-3", 200, []byte(`{"payload":{"AmazonOrderId":"1-2-3","OrderStatus":"Unshipped"}}`))
	f.serve("GET /orders/v0/orders/1-2-3/orderItems", 200, []byte(`{"payload":{"OrderItems":[{"OrderItemId":"9","QuantityOrdered":1}]}}`))
	_, err = c.PushFulfillment(ctx, b, platforms.Fulfillment{OrderExternalID: "1-2-3", Carrier: "UPS", TrackingNumber: "1Z"})
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 400, pe.StatusCode)
	assert.False(t, pe.Retryable)

	_, err = c.FetchOrder(ctx, b, "404-0000000-0000000")
	require.ErrorIs(t, err, platforms.ErrOrderNotFound)
	_, err = c.FetchOrder(ctx, b, "../supplySources")
	require.ErrorIs(t, err, platforms.ErrOrderNotFound)

	_, _, err = c.ListOrders(ctx, mpaBridge("clientSecret", "<delete>"), time.Time{}, "")
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, platforms.CodeInvalidConfig, pe.Code)
}

// splitRecorder stands in for the real hosts: the token host answers a
// token, the API hosts an empty page.
type splitRecorder struct {
	mu   sync.Mutex
	reqs []*http.Request
	body []string
}

func (h *splitRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	var b []byte
	if r.Body != nil {
		b, _ = io.ReadAll(r.Body)
	}
	h.mu.Lock()
	h.reqs = append(h.reqs, r)
	h.body = append(h.body, string(b))
	h.mu.Unlock()
	out := `{"payload":{"Orders":[]}}`
	switch r.URL.Path {
	case platforms.MarketplaceATokenPath:
		out = mpaTokenJSON
	case platforms.MarketplaceARDTPath:
		out = mpaRDTJSON
	}
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(out)), Request: r}, nil
}

func TestMarketplaceARegionalHosts(t *testing.T) {
	rec := &splitRecorder{}
	c := platforms.NewMarketplaceA("", "", &http.Client{Transport: rec})
	ctx := context.Background()
	for _, cfg := range [][]string{
		{"marketplaceId", "ATVPDKIKX0DER"},
		{"marketplaceId", "A1F83G8C2ARO7P"},
		{"marketplaceId", "A1VC38T7YXB528"},
		{"marketplaceId", "ATVPDKIKX0DER", "region", "FE"},
	} {
		_, _, err := c.ListOrders(ctx, mpaBridge(cfg...), time.Time{}, "")
		require.NoError(t, err, cfg)
	}
	var hosts []string
	for i, r := range rec.reqs {
		hosts = append(hosts, r.URL.Scheme+"://"+r.URL.Host)
		if r.URL.Host == "api.amazon.com" {
			assert.Equal(t, platforms.MarketplaceATokenPath, r.URL.Path)
			assert.Contains(t, rec.body[i], "refresh_token=")
			continue
		}
		if r.URL.Path == platforms.MarketplaceARDTPath {
			assert.Equal(t, "Atza|IwEBIExample", r.Header.Get(platforms.MarketplaceATokenHeader))
			assert.Contains(t, rec.body[i], `"dataElements":["buyerInfo","shippingAddress"]`)
			continue
		}
		assert.Equal(t, mpaTokensFor(r.URL.Path)[0], r.Header.Get(platforms.MarketplaceATokenHeader))
		assert.Empty(t, rec.body[i])
		assert.NotContains(t, r.URL.String(), "refresh-secret")
	}
	assert.Equal(t, []string{
		"https://api.amazon.com", "https://sellingpartnerapi-na.amazon.com", "https://sellingpartnerapi-na.amazon.com",
		"https://sellingpartnerapi-eu.amazon.com", "https://sellingpartnerapi-eu.amazon.com",
		"https://sellingpartnerapi-fe.amazon.com", "https://sellingpartnerapi-fe.amazon.com", "https://sellingpartnerapi-fe.amazon.com",
	}, hosts, "one token (the same credentials) for every region; a restricted data token per regional host")

	_, _, err := c.ListOrders(ctx, mpaBridge("marketplaceId", "XUNKNOWN"), time.Time{}, "")
	var pe *platforms.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, platforms.CodeInvalidConfig, pe.Code)
	_, _, err = c.ListOrders(ctx, mpaBridge("region", "mars"), time.Time{}, "")
	require.ErrorAs(t, err, &pe)
	assert.Len(t, rec.reqs, 8)
}

func TestMarketplaceARegionIsCheckedBehindABaseURL(t *testing.T) {
	f, exchanges := mpaFake(t)
	c := platforms.NewMarketplaceA(f.srv.URL, f.srv.URL, f.srv.Client())
	_, _, err := c.ListOrders(context.Background(), mpaBridge("region", "sandbox-fail"), time.Time{}, "")
	var pe *platforms.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, platforms.CodeInvalidConfig, pe.Code)
	assert.Zero(t, exchanges.Load())
	// A marketplace the table does not know works behind a base URL.
	f.serve("GET /orders/v0/orders", 200, []byte(`{"payload":{"Orders":[]}}`))
	_, _, err = c.ListOrders(context.Background(), mpaBridge("marketplaceId", "A2XZLSVIQ0F4JT"), time.Time{}, "")
	require.NoError(t, err)
}

// getOrderItems has a small quota: a page sleeps through its short
// throttles, and a page retried after a failure reads no item twice.
func TestMarketplaceAItemThrottlesAndRetries(t *testing.T) {
	f, _ := mpaFake(t)
	var itemCalls, listCalls atomic.Int32
	var failList atomic.Bool
	f.routes["GET /orders/v0/orders"] = func(w http.ResponseWriter, _ *http.Request) {
		listCalls.Add(1)
		_, _ = io.WriteString(w, `{"payload":{"Orders":[
			{"AmazonOrderId":"111-0000000-0000001","OrderStatus":"Unshipped","LastUpdateDate":"2026-01-01T00:00:00Z"},
			{"AmazonOrderId":"111-0000000-0000002","OrderStatus":"Unshipped","LastUpdateDate":"2026-01-02T00:00:00Z"},
			{"AmazonOrderId":"111-0000000-0000003","OrderStatus":"Unshipped","LastUpdateDate":"2026-01-03T00:00:00Z"}]}}`)
	}
	for id := 1; id <= 3; id++ {
		f.routes[fmt.Sprintf("GET /orders/v0/orders/111-0000000-000000%d/orderItems", id)] = func(w http.ResponseWriter, _ *http.Request) {
			n := itemCalls.Add(1)
			switch {
			case n%2 == 1: // every other item call is throttled at 20 a second: a 50 ms wait
				w.Header().Set(platforms.MarketplaceARateLimitHeader, "20")
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = io.WriteString(w, `{"errors":[{"code":"QuotaExceeded","message":"You exceeded your quota for the requested resource."}]}`)
			case id == 3 && failList.Load(): // the last order fails for good
				w.WriteHeader(http.StatusServiceUnavailable)
			default:
				_, _ = fmt.Fprintf(w, `{"payload":{"OrderItems":[{"OrderItemId":"%d","QuantityOrdered":1}]}}`, id)
			}
		}
	}
	c := platforms.NewMarketplaceA(f.srv.URL, f.srv.URL, f.srv.Client())
	ctx := context.Background()

	failList.Store(true)
	_, _, err := c.ListOrders(ctx, mpaBridge(), time.Time{}, "")
	require.Error(t, err, "the third order's items fail")
	assert.True(t, platforms.IsRetryable(err))
	failList.Store(false)
	before := itemCalls.Load()
	orders, _, err := c.ListOrders(ctx, mpaBridge(), time.Time{}, "")
	require.NoError(t, err, "throttled item calls are slept through")
	require.Len(t, orders, 3)
	for _, o := range orders {
		require.Len(t, o.LineItems, 1)
	}
	assert.LessOrEqual(t, itemCalls.Load()-before, int32(2), "the retried page reads only the third order's items")
	assert.Equal(t, int32(2), listCalls.Load())
}

// A 429 that names no rate waits one request at the operation's
// documented rate with jitter (getOrder: 0.5/s, so 2 s to 2.4 s), never
// zero (a tight loop); the next call waits that long too.
func TestMarketplaceAThrottledWithoutRateHeaderWaitsTheDocumentedRate(t *testing.T) {
	f, _ := mpaFake(t)
	f.serve("GET /orders/v0/orders/902-3159896-1390916", 429, []byte(`{"errors":[{"code":"QuotaExceeded","message":"You exceeded your quota for the requested resource."}]}`))
	c := platforms.NewMarketplaceA(f.srv.URL, f.srv.URL, f.srv.Client())
	_, err := c.FetchOrder(context.Background(), mpaBridge(), "902-3159896-1390916")
	require.ErrorIs(t, err, platforms.ErrRateLimited)
	wait, _ := platforms.RetryAfter(err)
	assert.GreaterOrEqual(t, wait, 2*time.Second)
	assert.LessOrEqual(t, wait, 2400*time.Millisecond)
	_, err = c.FetchOrder(context.Background(), mpaBridge(), "902-3159896-1390916")
	again, _ := platforms.RetryAfter(err)
	assert.Greater(t, again, time.Second, "held back, not called again at once")

	seen := map[time.Duration]bool{}
	for i := 0; i < 20; i++ {
		d := platforms.MarketplaceADocumentedWait("confirmShipment")
		assert.GreaterOrEqual(t, d, 500*time.Millisecond)
		assert.LessOrEqual(t, d, 600*time.Millisecond)
		seen[d] = true
	}
	assert.Greater(t, len(seen), 1, "jittered")
}
