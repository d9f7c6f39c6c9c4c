package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/internal/vendortest"
	"github.com/fos-dev/fos/platforms"
)

// The platforms' published example payloads, above the checkout (as
// package platforms' tests find them: vendortest; missing ones fail the
// test).
func platformExample(t *testing.T, typ, name string) []byte {
	t.Helper()
	return vendortest.Example(t, "platforms", typ, name)
}

func exampleJSON(t *testing.T, typ, name string) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(platformExample(t, typ, name), &v))
	return v
}

// examplePlatform is a server that answers a platform's API with its
// published examples: route "METHOD /path" → example file (or handler).
// Any other request fails the test.
type examplePlatform struct {
	t      *testing.T
	typ    string
	routes map[string]http.HandlerFunc
}

func (p *examplePlatform) file(route, name string, header ...string) {
	body := platformExample(p.t, p.typ, name)
	p.routes[route] = func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}
}

func (p *examplePlatform) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h, ok := p.routes[r.Method+" "+r.URL.Path]; ok {
		h(w, r)
		return
	}
	p.t.Errorf("%s example server: unexpected %s %s", p.typ, r.Method, r.URL)
	http.NotFound(w, r)
}

// wantOrder is what an imported order must hold, read from the example.
type wantOrder struct {
	ExternalID string
	Email      string
	ShipName   string
	Address1   string
	City       string
	Zip        string
	Country    string
	Items      []wantItem
	Total      float64
	Currency   string
	Status     string
	// Payment and Fulfillment are the normalized payment and fulfillment
	// statuses; OrderedAt the order's creation instant.
	Payment     string
	Fulfillment string
	OrderedAt   time.Time
}

type wantItem struct {
	SKU       string
	Quantity  float64
	UnitPrice float64
}

// jget walks a decoded JSON value by object keys and array indexes.
func jget(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func jstr(v any, path ...any) string {
	switch x := jget(v, path...).(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return ""
}

func jnum(v any, path ...any) float64 {
	switch x := jget(v, path...).(type) {
	case float64:
		return x
	case string:
		f, _ := strconv.ParseFloat(x, 64)
		return f
	}
	return 0
}

// jtime parses a timestamp in layout, in loc when it names no offset.
func jtime(t *testing.T, layout, s string, loc *time.Location) time.Time {
	t.Helper()
	v, err := time.ParseInLocation(layout, s, loc)
	require.NoError(t, err, s)
	return v
}

// pacific is the zone of the shipping hub's offset-less timestamps.
func pacific(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("America/Los_Angeles")
	require.NoError(t, err)
	return loc
}

func jlist(v any, path ...any) []any { a, _ := jget(v, path...).([]any); return a }

// exampleCase is one platform: its example server, the bridge config and
// the orders the examples hold.
type exampleCase struct {
	typ    string
	server func(t *testing.T) *examplePlatform
	// tls: the platform is reached over https (storefront_b's storeUrl).
	tls    bool
	env    func(url string) map[string]string
	config func(url string) map[string]any
	want   func(t *testing.T) []wantOrder
}

func exampleCases() []exampleCase {
	return []exampleCase{
		{
			typ: platforms.TypeStorefrontA,
			server: func(t *testing.T) *examplePlatform {
				p := &examplePlatform{t: t, typ: platforms.TypeStorefrontA, routes: map[string]http.HandlerFunc{}}
				p.file("GET /admin/api/"+platforms.StorefrontADefaultAPIVersion+"/orders.json", "orders_list_response.json",
					platforms.StorefrontACallLimitHeader, "1/40")
				return p
			},
			env: func(u string) map[string]string { return map[string]string{platforms.EnvStorefrontAURL: u} },
			config: func(string) map[string]any {
				return map[string]any{"shopDomain": "example-shop.myshopify.com", "accessToken": "shpat_example"}
			},
			want: func(t *testing.T) []wantOrder {
				var out []wantOrder
				for _, o := range jlist(exampleJSON(t, platforms.TypeStorefrontA, "orders_list_response.json"), "orders") {
					w := wantOrder{
						ExternalID: jstr(o, "id"), Email: jstr(o, "email"),
						ShipName: jstr(o, "shipping_address", "name"), Address1: jstr(o, "shipping_address", "address1"),
						City: jstr(o, "shipping_address", "city"), Zip: jstr(o, "shipping_address", "zip"), Country: jstr(o, "shipping_address", "country_code"),
						Total: jnum(o, "total_price"), Currency: jstr(o, "currency"),
						// partially_refunded, unfulfilled: paid and waiting.
						Status:      platforms.StatusConfirmed,
						Payment:     map[string]string{"paid": platforms.PaymentPaid, "partially_refunded": platforms.PaymentPaid, "authorized": platforms.PaymentAuthorized, "pending": platforms.PaymentPending, "refunded": platforms.PaymentRefunded, "voided": platforms.PaymentVoided}[jstr(o, "financial_status")],
						Fulfillment: map[string]string{"": platforms.FulfillmentUnfulfilled, "partial": platforms.FulfillmentPartial, "fulfilled": platforms.FulfillmentFulfilled}[jstr(o, "fulfillment_status")],
						OrderedAt:   jtime(t, time.RFC3339, jstr(o, "created_at"), time.UTC),
					}
					for _, li := range jlist(o, "line_items") {
						w.Items = append(w.Items, wantItem{SKU: jstr(li, "sku"), Quantity: jnum(li, "quantity"), UnitPrice: jnum(li, "price")})
					}
					out = append(out, w)
				}
				return out
			},
		},
		{
			typ: platforms.TypeShippingHubA,
			server: func(t *testing.T) *examplePlatform {
				p := &examplePlatform{t: t, typ: platforms.TypeShippingHubA, routes: map[string]http.HandlerFunc{}}
				p.file("GET /orders", "orders_list_response.json", "X-Rate-Limit-Limit", "40", "X-Rate-Limit-Remaining", "39", "X-Rate-Limit-Reset", "60")
				return p
			},
			env: func(u string) map[string]string { return map[string]string{platforms.EnvShippingHubAURL: u} },
			config: func(string) map[string]any {
				return map[string]any{"apiKey": "example-key", "apiSecret": "example-secret"}
			},
			want: func(t *testing.T) []wantOrder {
				var out []wantOrder
				for _, o := range jlist(exampleJSON(t, platforms.TypeShippingHubA, "orders_list_response.json"), "orders") {
					w := wantOrder{
						ExternalID: jstr(o, "orderId"), Email: jstr(o, "customerEmail"),
						ShipName: jstr(o, "shipTo", "name"), Address1: jstr(o, "shipTo", "street1"),
						City: jstr(o, "shipTo", "city"), Zip: jstr(o, "shipTo", "postalCode"), Country: jstr(o, "shipTo", "country"),
						Total: jnum(o, "orderTotal"),
						// The hub's orders carry no currency: the account's, USD.
						Currency: "USD",
						Status:   map[string]string{"awaiting_shipment": platforms.StatusConfirmed, "shipped": platforms.StatusShipped, "awaiting_payment": platforms.StatusPending, "on_hold": platforms.StatusOnHold, "cancelled": platforms.StatusCancelled}[jstr(o, "orderStatus")],
						// Paid (paymentDate set, amountPaid at least the total);
						// dates without an offset are Pacific time (README).
						Payment:     platforms.PaymentPaid,
						Fulfillment: map[bool]string{true: platforms.FulfillmentFulfilled, false: platforms.FulfillmentUnfulfilled}[jstr(o, "orderStatus") == "shipped"],
						OrderedAt:   jtime(t, "2006-01-02T15:04:05.0000000", jstr(o, "orderDate"), pacific(t)),
					}
					for _, it := range jlist(o, "items") {
						if jget(it, "adjustment") == true {
							continue // a discount line, not an item
						}
						w.Items = append(w.Items, wantItem{SKU: jstr(it, "sku"), Quantity: jnum(it, "quantity"), UnitPrice: jnum(it, "unitPrice")})
					}
					out = append(out, w)
				}
				return out
			},
		},
		{
			typ: platforms.TypeStorefrontB,
			tls: true,
			server: func(t *testing.T) *examplePlatform {
				p := &examplePlatform{t: t, typ: platforms.TypeStorefrontB, routes: map[string]http.HandlerFunc{}}
				p.file("GET "+platforms.StorefrontBAPIRoot+"/orders", "orders_list_response.json", platforms.StorefrontBTotalPagesHeader, "1", platforms.StorefrontBTotalHeader, "2")
				return p
			},
			env: func(string) map[string]string { return nil },
			config: func(u string) map[string]any {
				return map[string]any{"storeUrl": u, "consumerKey": "ck_example", "consumerSecret": "cs_example"}
			},
			want: func(t *testing.T) []wantOrder {
				var out []wantOrder
				for _, o := range jlist(exampleJSON(t, platforms.TypeStorefrontB, "orders_list_response.json")) {
					w := wantOrder{
						ExternalID: jstr(o, "id"), Email: jstr(o, "billing", "email"),
						ShipName: strings.TrimSpace(jstr(o, "shipping", "first_name") + " " + jstr(o, "shipping", "last_name")), Address1: jstr(o, "shipping", "address_1"),
						City: jstr(o, "shipping", "city"), Zip: jstr(o, "shipping", "postcode"), Country: jstr(o, "shipping", "country"),
						Total: jnum(o, "total"), Currency: jstr(o, "currency"),
						Status: map[string]string{"processing": platforms.StatusConfirmed, "completed": platforms.StatusShipped, "pending": platforms.StatusPending, "on-hold": platforms.StatusOnHold, "cancelled": platforms.StatusCancelled, "refunded": platforms.StatusRefunded}[jstr(o, "status")],
						// processing and completed orders are paid (completed
						// ones with no date_paid too); completed is fulfilled.
						Payment:     platforms.PaymentPaid,
						Fulfillment: map[bool]string{true: platforms.FulfillmentFulfilled, false: platforms.FulfillmentUnfulfilled}[jstr(o, "status") == "completed"],
						OrderedAt:   jtime(t, "2006-01-02T15:04:05", jstr(o, "date_created_gmt"), time.UTC),
					}
					for _, li := range jlist(o, "line_items") {
						w.Items = append(w.Items, wantItem{SKU: jstr(li, "sku"), Quantity: jnum(li, "quantity"), UnitPrice: jnum(li, "price")})
					}
					out = append(out, w)
				}
				return out
			},
		},
		{
			typ: platforms.TypeStorefrontC,
			server: func(t *testing.T) *examplePlatform {
				p := &examplePlatform{t: t, typ: platforms.TypeStorefrontC, routes: map[string]http.HandlerFunc{}}
				hdr := []string{"X-Rate-Limit-Requests-Left", "149", "X-Rate-Limit-Time-Reset-Ms", "30000"}
				p.file("GET /stores/abc123/v2/orders", "orders_list_response.json", hdr...)
				for _, o := range jlist(exampleJSON(t, platforms.TypeStorefrontC, "orders_list_response.json")) {
					id := jstr(o, "id")
					p.file("GET /stores/abc123/v2/orders/"+id+"/products", "order_products_response.json", hdr...)
					p.file("GET /stores/abc123/v2/orders/"+id+"/shipping_addresses", "order_shipping_addresses_response.json", hdr...)
				}
				return p
			},
			env: func(u string) map[string]string { return map[string]string{platforms.EnvStorefrontCURL: u} },
			config: func(string) map[string]any {
				return map[string]any{"storeHash": "abc123", "accessToken": "example-token"}
			},
			want: func(t *testing.T) []wantOrder {
				var out []wantOrder
				addrs := exampleJSON(t, platforms.TypeStorefrontC, "order_shipping_addresses_response.json")
				products := jlist(exampleJSON(t, platforms.TypeStorefrontC, "order_products_response.json"))
				for _, o := range jlist(exampleJSON(t, platforms.TypeStorefrontC, "orders_list_response.json")) {
					w := wantOrder{
						ExternalID: jstr(o, "id"), Email: jstr(o, "billing_address", "email"),
						ShipName: strings.TrimSpace(jstr(addrs, 0, "first_name") + " " + jstr(addrs, 0, "last_name")), Address1: jstr(addrs, 0, "street_1"),
						City: jstr(addrs, 0, "city"), Zip: jstr(addrs, 0, "zip"), Country: jstr(addrs, 0, "country_iso2"),
						Total: jnum(o, "total_inc_tax"), Currency: jstr(o, "currency_code"),
						// Awaiting Fulfillment (status_id 11): paid, to be shipped.
						Status: platforms.StatusConfirmed,
						// payment_status authorized; no item shipped yet.
						Payment:     map[string]string{"authorized": platforms.PaymentAuthorized, "captured": platforms.PaymentPaid}[jstr(o, "payment_status")],
						Fulfillment: map[bool]string{true: platforms.FulfillmentUnfulfilled, false: platforms.FulfillmentPartial}[jnum(o, "items_shipped") == 0],
						OrderedAt:   jtime(t, time.RFC1123Z, jstr(o, "date_created"), time.UTC),
					}
					for _, p := range products {
						w.Items = append(w.Items, wantItem{SKU: jstr(p, "sku"), Quantity: jnum(p, "quantity"), UnitPrice: jnum(p, "price_ex_tax")})
					}
					out = append(out, w)
				}
				return out
			},
		},
		{
			typ: platforms.TypeMarketplaceA,
			server: func(t *testing.T) *examplePlatform {
				p := &examplePlatform{t: t, typ: platforms.TypeMarketplaceA, routes: map[string]http.HandlerFunc{}}
				hdr := []string{platforms.MarketplaceARateLimitHeader, "0.0167"}
				// The token host (no published example: the documented answer).
				p.routes["POST "+platforms.MarketplaceATokenPath] = func(w http.ResponseWriter, r *http.Request) {
					require.NoError(t, r.ParseForm())
					if r.PostForm.Get("grant_type") != "refresh_token" || r.PostForm.Get("refresh_token") != "Atzr|example" {
						http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
						return
					}
					w.Header().Set("Content-Type", "application/json")
					_, _ = w.Write([]byte(`{"access_token":"Atza|example","token_type":"bearer","expires_in":3600}`))
				}
				// The Tokens API: buyer and address data need a restricted
				// data token (the documented answer's shape).
				p.routes["POST "+platforms.MarketplaceARDTPath] = func(w http.ResponseWriter, r *http.Request) {
					require.Equal(t, "Atza|example", r.Header.Get(platforms.MarketplaceATokenHeader))
					w.Header().Set("Content-Type", "application/json")
					_, _ = w.Write([]byte(`{"restrictedDataToken":"Atz.sprdt|example","expiresIn":3600}`))
				}
				// The examples name a NextToken; the page after is empty.
				paged := func(name, empty string) http.HandlerFunc {
					body := platformExample(t, platforms.TypeMarketplaceA, name)
					return func(w http.ResponseWriter, r *http.Request) {
						want := "Atza|example"
						if r.URL.Path == "/orders/v0/orders" {
							want = "Atz.sprdt|example" // getOrders with the buyer and address
						}
						require.Equal(t, want, r.Header.Get(platforms.MarketplaceATokenHeader))
						w.Header().Set(hdr[0], hdr[1])
						w.Header().Set("Content-Type", "application/json")
						if r.URL.Query().Get("NextToken") != "" {
							_, _ = w.Write([]byte(empty))
							return
						}
						_, _ = w.Write(body)
					}
				}
				p.routes["GET /orders/v0/orders"] = paged("ordersV0_getOrders_response.json", `{"payload":{"Orders":[]}}`)
				for _, o := range jlist(exampleJSON(t, platforms.TypeMarketplaceA, "ordersV0_getOrders_response.json"), "payload", "Orders") {
					p.routes["GET /orders/v0/orders/"+jstr(o, "AmazonOrderId")+"/orderItems"] = paged("ordersV0_getOrderItems_response.json", `{"payload":{"OrderItems":[]}}`)
				}
				return p
			},
			env: func(u string) map[string]string {
				return map[string]string{platforms.EnvMarketplaceAURL: u, platforms.EnvMarketplaceAAuthURL: u}
			},
			config: func(string) map[string]any {
				return map[string]any{"sellerId": "A2EXAMPLE", "refreshToken": "Atzr|example", "clientId": "amzn1.application-oa2-client.example",
					"clientSecret": "example-secret", "marketplaceId": "ATVPDKIKX0DER"}
			},
			want: func(t *testing.T) []wantOrder {
				var out []wantOrder
				items := jlist(exampleJSON(t, platforms.TypeMarketplaceA, "ordersV0_getOrderItems_response.json"), "payload", "OrderItems")
				for _, o := range jlist(exampleJSON(t, platforms.TypeMarketplaceA, "ordersV0_getOrders_response.json"), "payload", "Orders") {
					w := wantOrder{
						ExternalID: jstr(o, "AmazonOrderId"), Email: jstr(o, "BuyerInfo", "BuyerEmail"),
						ShipName: jstr(o, "ShippingAddress", "Name"), Address1: jstr(o, "ShippingAddress", "AddressLine1"),
						City: jstr(o, "ShippingAddress", "City"), Zip: jstr(o, "ShippingAddress", "PostalCode"), Country: jstr(o, "ShippingAddress", "CountryCode"),
						Currency: jstr(o, "OrderTotal", "CurrencyCode"),
						Status:   map[string]string{"Pending": platforms.StatusPending, "Unshipped": platforms.StatusConfirmed, "Shipped": platforms.StatusShipped, "Canceled": platforms.StatusCancelled}[jstr(o, "OrderStatus")],
						Payment:  map[string]string{"Pending": platforms.PaymentPending, "Unshipped": platforms.PaymentPaid, "Shipped": platforms.PaymentPaid, "Canceled": platforms.PaymentVoided}[jstr(o, "OrderStatus")],
						Fulfillment: map[string]string{"Pending": platforms.FulfillmentUnfulfilled, "Unshipped": platforms.FulfillmentUnfulfilled, "Shipped": platforms.FulfillmentFulfilled,
							"Canceled": platforms.FulfillmentUnfulfilled}[jstr(o, "OrderStatus")],
						OrderedAt: jtime(t, time.RFC3339, jstr(o, "PurchaseDate"), time.UTC),
					}
					for _, it := range items {
						// ItemPrice is the line's price (all units).
						q := jnum(it, "QuantityOrdered")
						w.Items = append(w.Items, wantItem{SKU: jstr(it, "SellerSKU"), Quantity: q, UnitPrice: math.Round(jnum(it, "ItemPrice", "Amount")/q*100) / 100})
						if w.Currency == "" {
							w.Currency = jstr(it, "ItemPrice", "CurrencyCode")
						}
					}
					if jget(o, "OrderTotal") != nil {
						w.Total = jnum(o, "OrderTotal", "Amount")
					} else {
						// No order total (a pending order): the items'.
						for _, it := range items {
							w.Total += jnum(it, "ItemPrice", "Amount") + jnum(it, "ShippingPrice", "Amount") + jnum(it, "ItemTax", "Amount") + jnum(it, "ShippingTax", "Amount") -
								jnum(it, "PromotionDiscount", "Amount") - jnum(it, "ShippingDiscount", "Amount")
						}
						w.Total = math.Round(w.Total*100) / 100
					}
					out = append(out, w)
				}
				return out
			},
		},
	}
}

// Pointing each type's connector (FOS_STOREFRONT_A_URL, ...; storefront_b
// by its storeUrl) at a server that answers with the platform's published
// examples imports those orders: grab-orders run through the API, the
// orders read back through the API hold the examples' values.
func TestGrabOrdersFromPublishedExamples(t *testing.T) {
	for _, tc := range exampleCases() {
		t.Run(tc.typ, func(t *testing.T) {
			want := tc.want(t)
			require.NotEmpty(t, want)
			ep := tc.server(t)
			var srv *httptest.Server
			if tc.tls {
				srv = httptest.NewTLSServer(ep)
			} else {
				srv = httptest.NewServer(ep)
			}
			t.Cleanup(srv.Close)
			env := tc.env(srv.URL)
			// As cmd/fos builds it with FOS_SANDBOX=0: the real hosts, but for
			// the variables set. The store client trusts the test server's
			// certificate (netguard's client in production).
			urls := platforms.APIURLsFromEnv(func(k string) string { return env[k] }, false, "")
			s := startWith(t, platforms.NewAPIRegistry(urls, srv.Client(), srv.Client()))

			_, key := s.taskAccount()
			bridge := s.mustCall(201, key, "POST", "/api/v1/bridges", map[string]any{"type": tc.typ, "name": "Examples", "config": tc.config(srv.URL)})
			bridgeID := data(bridge)["id"].(string)
			done := s.runTask(key, bridgeID, "grab-orders")
			require.Equal(t, "completed", done["status"], "%v", done)
			n := float64(len(want))
			require.Equal(t, map[string]any{"fetched": n, "created": n, "updated": float64(0), "unchanged": float64(0), "failed": float64(0)}, done["output"])

			list := s.mustCall(200, key, "GET", "/api/v1/orders?bridge_id="+bridgeID+"&limit=100", nil)
			got := map[string]map[string]any{}
			for _, o := range list["data"].([]any) {
				m := o.(map[string]any)
				got[m["external_id"].(string)] = m
			}
			require.Len(t, got, len(want))
			for _, w := range want {
				o := got[w.ExternalID]
				require.NotNil(t, o, "order %s imported", w.ExternalID)
				// The list may abridge: read the order itself.
				o = data(s.mustCall(200, key, "GET", "/api/v1/orders/"+o["id"].(string), nil))
				ctx := fmt.Sprintf("%s order %s", tc.typ, w.ExternalID)
				require.Equal(t, w.ExternalID, o["externalId"], ctx)
				require.Equal(t, w.Email, jstr(o, "customer", "email"), ctx)
				require.Equal(t, w.ShipName, jstr(o, "shippingAddress", "name"), ctx)
				require.Equal(t, w.Address1, jstr(o, "shippingAddress", "address1"), ctx)
				require.Equal(t, w.City, jstr(o, "shippingAddress", "city"), ctx)
				require.Equal(t, w.Zip, jstr(o, "shippingAddress", "zip"), ctx)
				require.Equal(t, w.Country, jstr(o, "shippingAddress", "countryCode"), ctx)
				require.InDelta(t, w.Total, jnum(o, "totals", "total"), 0.001, ctx)
				require.Equal(t, w.Currency, o["currency"], ctx)
				require.Equal(t, w.Status, o["status"], ctx)
				require.NotEmpty(t, w.Payment, ctx)
				require.NotEmpty(t, w.Fulfillment, ctx)
				require.Equal(t, w.Payment, o["paymentStatus"], ctx)
				require.Equal(t, w.Fulfillment, o["fulfillmentStatus"], ctx)
				require.False(t, w.OrderedAt.IsZero(), ctx)
				require.True(t, w.OrderedAt.Equal(jtime(t, time.RFC3339Nano, jstr(o, "orderedAt"), time.UTC)), "%s: orderedAt %s, want %s", ctx, jstr(o, "orderedAt"), w.OrderedAt)
				var items []wantItem
				for _, li := range jlist(o, "lineItems") {
					items = append(items, wantItem{SKU: jstr(li, "sku"), Quantity: jnum(li, "quantity"), UnitPrice: jnum(li, "unitPrice")})
				}
				require.Equal(t, w.Items, items, ctx)
			}
		})
	}
}
