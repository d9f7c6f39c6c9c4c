package platforms_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/internal/vendortest"
	"github.com/fos-dev/fos/platforms"
)

// The published vendor examples live next to the repository.
func platformExample(t *testing.T, typ, name string) []byte {
	t.Helper()
	return vendortest.Example(t, "platforms", typ, name)
}

// recorded is one request a fake platform received.
type recorded struct {
	method, path string
	query        map[string][]string
	header       http.Header
	body         []byte
}

// fakePlatform answers "METHOD /path" from a route table and records every
// request.
type fakePlatform struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	calls  []recorded
	routes map[string]http.HandlerFunc
}

func newFakePlatform(t *testing.T) *fakePlatform {
	f := &fakePlatform{t: t, routes: map[string]http.HandlerFunc{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.calls = append(f.calls, recorded{method: r.Method, path: r.URL.Path, query: r.URL.Query(), header: r.Header.Clone(), body: body})
		h, ok := f.routes[r.Method+" "+r.URL.Path]
		f.mu.Unlock()
		if !ok {
			http.Error(w, `{"errors":"Not Found"}`, http.StatusNotFound)
			return
		}
		h(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakePlatform) serve(route string, status int, body []byte, headers ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routes[route] = func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}
}

func (f *fakePlatform) last(t *testing.T, method, path string) recorded {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.calls) - 1; i >= 0; i-- {
		if f.calls[i].method == method && f.calls[i].path == path {
			return f.calls[i]
		}
	}
	t.Fatalf("no %s %s request", method, path)
	return recorded{}
}

func sfaBridge(kv ...string) platforms.Bridge {
	b := bridgeOf("storefront_a")
	b.Config = map[string]any{"shopDomain": "johns-apparel.myshopify.com", "accessToken": "shpat_test"}
	return withConfig(b, kv...)
}

const sfaRoot = "/admin/api/" + platforms.StorefrontADefaultAPIVersion

// keyPaths collects the key paths of a JSON value (array levels are
// transparent), so a built request can be compared with a published one.
func keyPaths(t *testing.T, raw []byte) map[string]bool {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(raw, &v))
	out := map[string]bool{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, sub := range x {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				out[p] = true
				walk(p, sub)
			}
		case []any:
			for _, sub := range x {
				walk(prefix, sub)
			}
		}
	}
	walk("", v)
	return out
}

func TestStorefrontADecodesPublishedOrders(t *testing.T) {
	list := platformExample(t, "storefront_a", "orders_list_response.json")
	one := platformExample(t, "storefront_a", "order_get_response.json")
	f := newFakePlatform(t)
	f.serve("GET "+sfaRoot+"/orders.json", 200, list, platforms.StorefrontACallLimitHeader, "1/40")
	f.serve("GET "+sfaRoot+"/orders/450789469.json", 200, one)
	c := platforms.NewStorefrontA(f.srv.URL, f.srv.Client())
	b := sfaBridge()
	ctx := context.Background()

	since := time.Date(2008, 1, 1, 0, 0, 0, 0, time.UTC)
	orders, next, err := c.ListOrders(ctx, b, since, "")
	require.NoError(t, err)
	assert.Empty(t, next, "no Link header: one page")
	require.Len(t, orders, 1)
	req := f.last(t, "GET", sfaRoot+"/orders.json")
	assert.Equal(t, "shpat_test", req.header.Get("X-Shopify-Access-Token"))
	assert.Equal(t, "johns-apparel.myshopify.com", req.header.Get("X-Shopify-Shop-Domain"))
	assert.Equal(t, []string{"any"}, req.query["status"])
	assert.Equal(t, []string{"2008-01-01T00:00:00Z"}, req.query["updated_at_min"])
	assert.Equal(t, []string{"250"}, req.query["limit"])

	got, err := c.FetchOrder(ctx, b, "450789469")
	require.NoError(t, err)
	for _, o := range []platforms.Order{orders[0], *got} {
		assert.Equal(t, "450789469", o.ExternalID)
		assert.Equal(t, "#1001", o.OrderNumber)
		assert.Equal(t, "USD", o.Currency)
		assert.Equal(t, platforms.Customer{Email: "bob.norman@mail.example.com", FirstName: "Bob", LastName: "Norman", Phone: "+557734881234"}, o.Customer)
		require.NotNil(t, o.ShippingAddress)
		assert.Equal(t, platforms.Address{Name: "Bob Norman", Address1: "Chestnut Street 92", City: "Louisville", Province: "Kentucky",
			ProvinceCode: "KY", Country: "United States", CountryCode: "US", Zip: "40202", Phone: "+1(502)-459-2181"}, *o.ShippingAddress)
		require.NotNil(t, o.BillingAddress)
		assert.Equal(t, "Chestnut Street 92", o.BillingAddress.Address1)
		require.Len(t, o.LineItems, 2)
		assert.Equal(t, platforms.LineItem{ExternalID: "466157049", SKU: "IPOD2008GREEN", Name: "IPod Nano - 8gb - green", Quantity: 1,
			UnitPrice: 199, TotalPrice: 199, RequiresShipping: true, Taxable: true}, o.LineItems[0])
		assert.Equal(t, "518995019", o.LineItems[1].ExternalID)
		assert.Equal(t, platforms.Totals{Subtotal: 597, Discount: 10, Shipping: 0, Tax: 11.94, Total: 598.94}, o.Totals)
		assert.Equal(t, platforms.PaymentPaid, o.PaymentStatus, "partially_refunded")
		assert.Equal(t, platforms.FulfillmentUnfulfilled, o.FulfillmentStatus)
		assert.Equal(t, platforms.StatusConfirmed, o.Status)
		assert.Empty(t, o.Tags)
		assert.Empty(t, o.Note)
		assert.Equal(t, time.Date(2008, 1, 10, 16, 0, 0, 0, time.UTC), o.OrderedAt)
		assert.Equal(t, time.Date(2008, 1, 10, 16, 0, 0, 0, time.UTC), o.UpdatedAt)
		assert.Equal(t, json.Number("450789469"), o.SourceData["id"])
		assert.Equal(t, "fhwdgads", o.SourceData["reference"])
	}
	assert.Equal(t, orders[0], *got)
}

func TestStorefrontADecodesPublishedWebhookOrder(t *testing.T) {
	raw := platformExample(t, "storefront_a", "webhook_orders_topic_sample_payload.json")
	o, err := platforms.StorefrontAOrder(raw)
	require.NoError(t, err)
	assert.Equal(t, "820982911946154508", o.ExternalID, "a 64-bit id survives exactly")
	assert.Equal(t, json.Number("820982911946154508"), o.SourceData["id"])
	assert.Equal(t, "#9999", o.OrderNumber)
	assert.Equal(t, platforms.StatusCancelled, o.Status)
	assert.Equal(t, platforms.PaymentVoided, o.PaymentStatus)
	assert.Equal(t, []string{"tag1", "tag2"}, o.Tags)
	assert.Equal(t, "jon@example.com", o.Customer.Email)
	assert.Equal(t, 404.95, o.Totals.Total)
	assert.NotEmpty(t, o.LineItems)
	for _, li := range o.LineItems {
		assert.NotEmpty(t, li.ExternalID)
	}
}

func TestStorefrontAPushFulfillmentBuildsThePublishedRequest(t *testing.T) {
	order := platformExample(t, "storefront_a", "order_get_response.json")
	fos := platformExample(t, "storefront_a", "fulfillment_orders_for_order_response.json")
	created := platformExample(t, "storefront_a", "fulfillment_create_response.json")
	published := platformExample(t, "storefront_a", "fulfillment_create_request.json")
	f := newFakePlatform(t)
	f.serve("GET "+sfaRoot+"/orders/450789469.json", 200, order)
	f.serve("GET "+sfaRoot+"/orders/450789469/fulfillment_orders.json", 200, fos)
	f.serve("POST "+sfaRoot+"/fulfillments.json", 201, created)
	c := platforms.NewStorefrontA(f.srv.URL, f.srv.Client())

	// The order's only fulfillment with tracking 1Z2345 failed: it does not
	// count, so the push creates one.
	// The service's own carrier code (carrier_b) goes as the platform's
	// tracking company ("UPS", as in the published request).
	res, err := c.PushFulfillment(context.Background(), sfaBridge(), platforms.Fulfillment{
		OrderExternalID: "450789469", TrackingNumber: "1Z001985YW99744790", Carrier: "carrier_b", Service: "03",
		LineItems: []platforms.FulfillmentLine{{ExternalID: "518995019", Quantity: 1}},
	})
	require.NoError(t, err)
	assert.Equal(t, platforms.FulfillmentResult{ExternalID: "1069019875", Created: true}, res)

	check := f.last(t, "GET", sfaRoot+"/orders/450789469.json")
	assert.Equal(t, []string{"id,fulfillments"}, check.query["fields"])
	post := f.last(t, "POST", sfaRoot+"/fulfillments.json")
	assert.Equal(t, "shpat_test", post.header.Get("X-Shopify-Access-Token"))
	want := keyPaths(t, published)
	delete(want, "fulfillment.message") // optional text
	got := keyPaths(t, post.body)
	for k := range want {
		assert.True(t, got[k], "built request lacks %s", k)
	}
	var body struct {
		Fulfillment struct {
			Groups []struct {
				FOID  int64 `json:"fulfillment_order_id"`
				Lines []struct {
					ID       int64 `json:"id"`
					Quantity int   `json:"quantity"`
				} `json:"fulfillment_order_line_items"`
			} `json:"line_items_by_fulfillment_order"`
			Tracking map[string]string `json:"tracking_info"`
		} `json:"fulfillment"`
	}
	require.NoError(t, json.Unmarshal(post.body, &body))
	require.Len(t, body.Fulfillment.Groups, 1)
	assert.Equal(t, int64(1046000823), body.Fulfillment.Groups[0].FOID)
	require.Len(t, body.Fulfillment.Groups[0].Lines, 1)
	assert.Equal(t, int64(1058737564), body.Fulfillment.Groups[0].Lines[0].ID)
	assert.Equal(t, 1, body.Fulfillment.Groups[0].Lines[0].Quantity)
	assert.Equal(t, map[string]string{"number": "1Z001985YW99744790", "company": "UPS"}, body.Fulfillment.Tracking)
	var flags, pub struct {
		Fulfillment struct {
			Notify bool `json:"notify_customer"`
		} `json:"fulfillment"`
	}
	require.NoError(t, json.Unmarshal(post.body, &flags))
	require.NoError(t, json.Unmarshal(published, &pub))
	assert.Equal(t, pub.Fulfillment.Notify, flags.Fulfillment.Notify, "notify_customer off unless the bridge asks")

	// The bridge's notifyCustomer turns it on.
	f.serve("GET "+sfaRoot+"/orders/450789469.json", 200, order)
	b := sfaBridge()
	b.Config["notifyCustomer"] = true
	_, err = c.PushFulfillment(context.Background(), b, platforms.Fulfillment{OrderExternalID: "450789469", TrackingNumber: "1Z001985YW99744791", Carrier: "carrier_b"})
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(f.last(t, "POST", sfaRoot+"/fulfillments.json").body, &flags))
	assert.True(t, flags.Fulfillment.Notify)
}

// A label bought again for a pushed shipment: the fulfillment carrying the
// old number is moved to the new one with update_tracking, the request
// built from the service's carrier code (carrier_b: "UPS") as the
// published one, and the published response read.
func TestStorefrontAUpdateTrackingBuildsThePublishedRequest(t *testing.T) {
	published := platformExample(t, "storefront_a", "fulfillment_update_tracking_request.json")
	response := platformExample(t, "storefront_a", "fulfillment_update_tracking_response.json")
	f := newFakePlatform(t)
	f.serve("GET "+sfaRoot+"/orders/450789469.json", 200, []byte(`{"order":{"id":450789469,"fulfillments":[
		{"id":1069019869,"status":"success","tracking_number":"1Z2345","tracking_numbers":["1Z2345"]}]}}`))
	f.serve("POST "+sfaRoot+"/fulfillments/1069019869/update_tracking.json", 200, response)
	c := platforms.NewStorefrontA(f.srv.URL, f.srv.Client())
	b := sfaBridge()
	b.Config["notifyCustomer"] = true
	res, err := c.PushFulfillment(context.Background(), b, platforms.Fulfillment{
		OrderExternalID: "450789469", TrackingNumber: "1Z001985YW99744790", Carrier: "carrier_b", Service: "03",
		ReplacesTrackingNumber: "1Z2345",
	})
	require.NoError(t, err)
	assert.Equal(t, platforms.FulfillmentResult{ExternalID: "1069019869", Updated: true}, res)
	post := f.last(t, "POST", sfaRoot+"/fulfillments/1069019869/update_tracking.json")
	assert.JSONEq(t, string(published), string(post.body))
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, call := range f.calls {
		assert.NotEqual(t, sfaRoot+"/fulfillments.json", call.path, "no second fulfillment")
	}
}

// The push run remembers the fulfillment a shipment's push made: that one
// is moved by its id even when its number is no longer the one pushed (the
// merchant edited it), never a cancelled one that still carries the old
// number; the published request and response.
func TestStorefrontAUpdateTrackingByFulfillmentID(t *testing.T) {
	published := platformExample(t, "storefront_a", "fulfillment_update_tracking_request.json")
	response := platformExample(t, "storefront_a", "fulfillment_update_tracking_response.json")
	f := newFakePlatform(t)
	f.serve("GET "+sfaRoot+"/orders/450789469.json", 200, []byte(`{"order":{"id":450789469,"fulfillments":[
		{"id":1069019868,"status":"cancelled","tracking_number":"1Z2345","tracking_numbers":["1Z2345"]},
		{"id":1069019869,"status":"success","tracking_number":"EDITED","tracking_numbers":["EDITED"]}]}}`))
	f.serve("POST "+sfaRoot+"/fulfillments/1069019869/update_tracking.json", 200, response)
	c := platforms.NewStorefrontA(f.srv.URL, f.srv.Client())
	b := sfaBridge()
	b.Config["notifyCustomer"] = true
	res, err := c.PushFulfillment(context.Background(), b, platforms.Fulfillment{
		OrderExternalID: "450789469", TrackingNumber: "1Z001985YW99744790", Carrier: "carrier_b",
		ReplacesTrackingNumber: "1Z2345", FulfillmentExternalID: "1069019869",
	})
	require.NoError(t, err)
	assert.Equal(t, platforms.FulfillmentResult{ExternalID: "1069019869", Updated: true}, res)
	assert.JSONEq(t, string(published), string(f.last(t, "POST", sfaRoot+"/fulfillments/1069019869/update_tracking.json").body))
}

func TestStorefrontAPushFulfillmentSkipsKnownTracking(t *testing.T) {
	f := newFakePlatform(t)
	f.serve("GET "+sfaRoot+"/orders/450789469.json", 200, []byte(`{"order":{"id":450789469,"fulfillments":[
		{"id":1069019869,"status":"success","tracking_number":"1Z001985YW99744790","tracking_numbers":["1Z001985YW99744790"]}]}}`))
	c := platforms.NewStorefrontA(f.srv.URL, f.srv.Client())
	res, err := c.PushFulfillment(context.Background(), sfaBridge(), platforms.Fulfillment{
		OrderExternalID: "450789469", TrackingNumber: "1z001985yw99744790", Carrier: "UPS"})
	require.NoError(t, err)
	assert.Equal(t, platforms.FulfillmentResult{ExternalID: "1069019869", Created: false}, res)
	f.mu.Lock()
	defer f.mu.Unlock()
	assert.Len(t, f.calls, 1, "nothing created")
}

func TestStorefrontALocationsAndWebhooks(t *testing.T) {
	f := newFakePlatform(t)
	f.serve("GET "+sfaRoot+"/locations.json", 200, platformExample(t, "storefront_a", "locations_list_response.json"))
	f.serve("GET "+sfaRoot+"/webhooks.json", 200, platformExample(t, "storefront_a", "webhooks_list_response.json"))
	f.serve("POST "+sfaRoot+"/webhooks.json", 201, platformExample(t, "storefront_a", "webhook_create_response.json"))
	published := platformExample(t, "storefront_a", "webhook_create_request.json")
	c := platforms.NewStorefrontA(f.srv.URL, f.srv.Client())
	ctx := context.Background()
	b := sfaBridge("apiVersion", "2024-04")
	f.serve("GET /admin/api/2024-04/locations.json", 200, platformExample(t, "storefront_a", "locations_list_response.json"))

	locs, err := c.ListLocations(ctx, b)
	require.NoError(t, err)
	require.Len(t, locs, 2)
	assert.Equal(t, "655441491", locs[0].ExternalID)
	assert.Equal(t, "50 Rideau Street", locs[0].Name)
	assert.True(t, locs[0].Active)
	assert.Equal(t, &platforms.Address{Name: "50 Rideau Street", Address1: "50 Rideau Street", City: "Ottawa", Province: "Ontario",
		ProvinceCode: "ON", Country: "Canada", CountryCode: "CA", Zip: "K1N 9J7"}, locs[0].Address)
	assert.Equal(t, "24826418", locs[1].ExternalID)
	assert.Equal(t, "DE", locs[1].Address.CountryCode)
	assert.Equal(t, "Germany", locs[1].Address.Country)

	b = sfaBridge()
	hooks, err := c.ListWebhooks(ctx, b)
	require.NoError(t, err)
	require.Len(t, hooks, 2)
	assert.Equal(t, platforms.Webhook{ID: "4759306", Topic: "orders/create", Address: "https://apple.com"}, hooks[0])

	hook, err := c.RegisterWebhook(ctx, b, "orders/create", "https://example.hostname.com/")
	require.NoError(t, err)
	assert.Equal(t, platforms.Webhook{ID: "6883828554", Topic: "orders/create", Address: "https://example.hostname.com/"}, hook)
	post := f.last(t, "POST", sfaRoot+"/webhooks.json")
	want := keyPaths(t, published)
	delete(want, "webhook.fields") // optional field filter
	got := keyPaths(t, post.body)
	for k := range want {
		assert.True(t, got[k], "built request lacks %s", k)
	}
}

func TestStorefrontAPagesThroughTheLinkHeader(t *testing.T) {
	f := newFakePlatform(t)
	pages := map[string]struct {
		ids  []int
		next string
	}{
		"":     {[]int{1, 2}, "cur2"},
		"cur2": {[]int{3, 4}, "cur3"},
		"cur3": {[]int{5}, ""},
	}
	f.routes["GET "+sfaRoot+"/orders.json"] = func(w http.ResponseWriter, r *http.Request) {
		p := pages[r.URL.Query().Get("page_info")]
		if p.next != "" {
			w.Header().Set("Link", fmt.Sprintf(`<https://johns-apparel.myshopify.com%s/orders.json?fields=id,name&limit=2&page_info=prev>; rel="previous", <https://johns-apparel.myshopify.com%s/orders.json?fields=id,name&limit=2&page_info=%s>; rel="next"`, sfaRoot, sfaRoot, p.next))
		}
		var orders []string
		for _, id := range p.ids {
			orders = append(orders, fmt.Sprintf(`{"id":%d,"name":"#%d","updated_at":"2026-01-0%dT00:00:00Z"}`, id, 1000+id, id))
		}
		_, _ = fmt.Fprintf(w, `{"orders":[%s]}`, joinComma(orders))
	}
	c := platforms.NewStorefrontA(f.srv.URL, f.srv.Client(), platforms.ListLimit(2))
	all, n := listAll(t, c, sfaBridge(), time.Time{})
	assert.Equal(t, 3, n)
	var ids []string
	for _, o := range all {
		ids = append(ids, o.ExternalID)
	}
	assert.Equal(t, []string{"1", "2", "3", "4", "5"}, ids)
	f.mu.Lock()
	defer f.mu.Unlock()
	require.Len(t, f.calls, 3)
	assert.Equal(t, map[string][]string{"limit": {"2"}, "status": {"any"}}, f.calls[0].query)
	assert.Equal(t, map[string][]string{"limit": {"2"}, "page_info": {"cur2"}}, f.calls[1].query, "page_info goes alone with limit")
	assert.Equal(t, map[string][]string{"limit": {"2"}, "page_info": {"cur3"}}, f.calls[2].query)
}

func joinComma(xs []string) string {
	out := ""
	for i, x := range xs {
		if i > 0 {
			out += ","
		}
		out += x
	}
	return out
}

func TestStorefrontAErrorClasses(t *testing.T) {
	f := newFakePlatform(t)
	c := platforms.NewStorefrontA(f.srv.URL, f.srv.Client())
	ctx := context.Background()
	b := sfaBridge()

	f.serve("GET "+sfaRoot+"/orders.json", 401, []byte(`{"errors":"[API] Invalid API key or access token (unrecognized login or wrong password)"}`))
	_, _, err := c.ListOrders(ctx, b, time.Time{}, "")
	require.ErrorIs(t, err, platforms.ErrUnauthorized)
	assert.False(t, platforms.IsRetryable(err))
	assert.Contains(t, err.Error(), "Invalid API key or access token")
	assert.NotContains(t, err.Error(), "shpat_test")

	f.serve("GET "+sfaRoot+"/orders.json", 403, []byte(`{"errors":"[API] This action requires merchant approval for read_orders scope."}`))
	_, _, err = c.ListOrders(ctx, b, time.Time{}, "")
	require.ErrorIs(t, err, platforms.ErrUnauthorized)

	f.serve("GET "+sfaRoot+"/orders.json", 429, []byte(`{"errors":"Exceeded 2 calls per second for api client. Reduce request rates to resume uninterrupted service."}`),
		"Retry-After", "2.0", platforms.StorefrontACallLimitHeader, "40/40")
	_, _, err = c.ListOrders(ctx, b, time.Time{}, "")
	require.ErrorIs(t, err, platforms.ErrRateLimited)
	wait, ok := platforms.RetryAfter(err)
	assert.True(t, ok)
	assert.Equal(t, 2*time.Second, wait)
	assert.True(t, platforms.IsRetryable(err))
	var pe *platforms.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, platforms.CodeRateLimited, pe.Code)

	// Until the wait is over the shop is not called again (another shop is).
	f.mu.Lock()
	sent := len(f.calls)
	f.mu.Unlock()
	_, err = c.FetchOrder(ctx, b, "450789469")
	require.ErrorIs(t, err, platforms.ErrRateLimited)
	wait, _ = platforms.RetryAfter(err)
	assert.Greater(t, wait, time.Second)
	assert.LessOrEqual(t, wait, 2*time.Second)
	f.mu.Lock()
	assert.Equal(t, sent, len(f.calls), "nothing sent while the platform asked to wait")
	f.mu.Unlock()
	_, _, err = c.ListOrders(ctx, sfaBridge("shopDomain", "other.myshopify.com"), time.Time{}, "")
	require.ErrorIs(t, err, platforms.ErrRateLimited, "the other shop is asked and throttled on its own")

	c = platforms.NewStorefrontA(f.srv.URL, f.srv.Client())
	for _, status := range []int{500, 502, 503} {
		f.serve("GET "+sfaRoot+"/orders.json", status, []byte(`{"errors":"Something went wrong!"}`))
		_, _, err = c.ListOrders(ctx, b, time.Time{}, "")
		require.Error(t, err)
		assert.True(t, platforms.IsRetryable(err), strconv.Itoa(status))
		assert.False(t, errors.Is(err, platforms.ErrUnauthorized))
		_, limited := platforms.RetryAfter(err)
		assert.False(t, limited)
	}

	_, err = c.FetchOrder(ctx, b, "123")
	require.ErrorIs(t, err, platforms.ErrOrderNotFound)
	_, err = c.FetchOrder(ctx, b, "../locations")
	require.ErrorIs(t, err, platforms.ErrOrderNotFound)

	// A dead server is retryable.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	_, _, err = platforms.NewStorefrontA(dead.URL, nil).ListOrders(ctx, b, time.Time{}, "")
	require.Error(t, err)
	assert.True(t, platforms.IsRetryable(err))
}

// hostRecorder answers every request with an empty order list and records
// the URL, standing in for the real platform host.
type hostRecorder struct{ urls []string }

func (h *hostRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	h.urls = append(h.urls, r.URL.String())
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(jsonReader(`{"orders":[]}`)), Request: r}, nil
}

func TestStorefrontAProductionHostIsTheShop(t *testing.T) {
	rec := &hostRecorder{}
	c := platforms.NewStorefrontA("", &http.Client{Transport: rec})
	ctx := context.Background()
	_, _, err := c.ListOrders(ctx, sfaBridge("shopDomain", "https://Johns-Apparel.myshopify.com/"), time.Time{}, "")
	require.NoError(t, err)
	require.Len(t, rec.urls, 1)
	assert.Equal(t, "https://johns-apparel.myshopify.com/admin/api/2026-07/orders.json?limit=250&status=any", rec.urls[0])

	// The token never goes to a host that is not a shop's.
	for _, bad := range []string{"127.0.0.1", "example.com", "evil.com/x", "a@b.myshopify.com"} {
		_, _, err = c.ListOrders(ctx, sfaBridge("shopDomain", bad), time.Time{}, "")
		var pe *platforms.Error
		require.ErrorAs(t, err, &pe, bad)
		assert.Equal(t, platforms.CodeInvalidConfig, pe.Code, bad)
	}
	_, _, err = c.ListOrders(ctx, sfaBridge("apiVersion", "v1/../../x"), time.Time{}, "")
	require.Error(t, err)
	_, _, err = c.ListOrders(ctx, sfaBridge("accessToken", "<delete>"), time.Time{}, "")
	require.Error(t, err)
	assert.Len(t, rec.urls, 1)
}

func jsonReader(s string) io.Reader { return strings.NewReader(s) }

func TestStorefrontAFullBucketPausesTheNextCall(t *testing.T) {
	f := newFakePlatform(t)
	f.serve("GET "+sfaRoot+"/locations.json", 200, []byte(`{"locations":[]}`), platforms.StorefrontACallLimitHeader, "40/40")
	c := platforms.NewStorefrontA(f.srv.URL, f.srv.Client())
	ctx := context.Background()
	_, err := c.ListLocations(ctx, sfaBridge())
	require.NoError(t, err)
	start := time.Now()
	_, err = c.ListLocations(ctx, sfaBridge())
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 400*time.Millisecond, "a full bucket leaks one call in half a second")

	f.serve("GET "+sfaRoot+"/locations.json", 200, []byte(`{"locations":[]}`), platforms.StorefrontACallLimitHeader, "39/40")
	c = platforms.NewStorefrontA(f.srv.URL, f.srv.Client())
	_, err = c.ListLocations(ctx, sfaBridge())
	require.NoError(t, err)
	start = time.Now()
	_, err = c.ListLocations(ctx, sfaBridge())
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 300*time.Millisecond, "room left: no pause")
}
