package sandboxapi

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
)

// storefront_c: the storefront's Management API (vendors/platforms/storefront_c)
// under {prefix} (default /platforms/storefront_c, FOS_STOREFRONT_C_URL
// under FOS_SANDBOX=1), which stands for https://api.bigcommerce.com; the
// store is the {storeHash} of the path, as on the platform:
//
//	GET  /stores/{hash}/v2/orders                 min_id, max_id, min/max_date_created,
//	                                              min/max_date_modified, status_id, email,
//	                                              customer_id, sort, page, limit (1-250, default 50)
//	GET  /stores/{hash}/v2/orders/count
//	GET  /stores/{hash}/v2/orders/{id}
//	GET  /stores/{hash}/v2/orders/{id}/products   page, limit
//	GET  /stores/{hash}/v2/orders/{id}/shipping_addresses (also .../shippingaddresses)
//	GET  /stores/{hash}/v2/orders/{id}/shipments  POST the same to create one
//	GET  /stores/{hash}/v2/orders/{id}/shipments/count
//	GET  /stores/{hash}/v3/inventory/locations
//	POST /stores/{hash}/v3/hooks                  GET .../hooks, GET/DELETE .../hooks/{id}
//
// V2 lists are bare arrays and an empty one is 204 No Content; V3 answers
// {"data": ..., "meta": {...}}. Each store holds StoreOrderCount(hash)
// orders built from its hash (ids from 100 up, products and a shipping
// address each, shipments for shipped orders), two locations, and the
// shipments and hooks created through the API. Creating a shipment moves
// the order to Shipped (2) or Partially Shipped (3).
//
// Errors: V2 [{"status": n, "message": "..."}], V3 {"status", "title",
// "type", "errors"}. No or a "sandbox-fail" X-Auth-Token is 401; the store
// hash "sandbox-fail" is 503; the token "sandbox-ratelimit" makes every
// other call a 429 with X-Rate-Limit-Requests-Left: 0 and
// X-Rate-Limit-Time-Reset-Ms: 1000. Every answer carries the four
// X-Rate-Limit-* headers of a 150-call, 30-second window (reported, never
// enforced, never 0 left outside the on-demand 429s).

const (
	sfcQuota        = 150
	sfcWindow       = 30 * time.Second
	sfcDefaultLimit = 50
	sfcMaxLimit     = 250
	sfcTimeLayout   = time.RFC1123Z
)

func sfcStatusNames() map[int]string {
	return map[int]string{0: "Incomplete", 1: "Pending", 2: "Shipped", 3: "Partially Shipped", 4: "Refunded", 5: "Cancelled",
		6: "Declined", 7: "Awaiting Payment", 8: "Awaiting Pickup", 9: "Awaiting Shipment", 10: "Completed",
		11: "Awaiting Fulfillment", 12: "Manual Verification Required", 13: "Disputed", 14: "Partially Refunded"}
}

func sfcScopes() []string {
	return []string{"store/order/*", "store/order/created", "store/order/updated", "store/order/archived",
		"store/order/statusUpdated", "store/order/message/created", "store/order/refund/created",
		"store/order/transaction/created", "store/order/transaction/updated", "store/shipment/*",
		"store/shipment/created", "store/shipment/updated", "store/shipment/deleted"}
}

func sfcProviders() []string {
	return []string{"", "auspost", "canadapost", "endicia", "usps", "fedex", "royalmail", "ups", "upsready", "shipperhq"}
}

type sfcSandbox struct {
	now    func() time.Time
	mu     sync.Mutex
	stores storeTable[sfcStore]
}

type sfcStore struct {
	hash        string
	orders      []sfcOrder // by id
	byID        map[int64]int
	shipments   map[int64][]map[string]any
	nextShip    int64
	locations   []map[string]any
	hooks       []sfcHook
	nextHook    int64
	calls       int
	window      time.Time
	windowCalls int
}

// sfcOrder is a V2 order with its sub-resources; the order map is copied
// on write.
type sfcOrder struct {
	id                int64
	created, modified time.Time
	statusID          int
	email             string
	customerID        int64
	body              map[string]any
	products          []map[string]any
	addresses         []map[string]any
}

type sfcHook struct {
	ID          int64             `json:"id"`
	ClientID    string            `json:"client_id"`
	StoreHash   string            `json:"store_hash"`
	Scope       string            `json:"scope"`
	Destination string            `json:"destination"`
	Headers     map[string]string `json:"headers"`
	IsActive    bool              `json:"is_active"`
	CreatedAt   int64             `json:"created_at"`
	UpdatedAt   int64             `json:"updated_at"`
}

// mountStorefrontC serves the storefront_c sandbox under prefix (routes
// registered one by one, so other routes may share the prefix).
func mountStorefrontC(r chi.Router, prefix string) {
	s := &sfcSandbox{now: time.Now}
	v2 := prefix + "/stores/{storeHash}/v2"
	v3 := prefix + "/stores/{storeHash}/v3"
	r.Group(func(g chi.Router) {
		g.Use(s.authenticate)
		g.Get(v2+"/orders", s.listOrders)
		g.Get(v2+"/orders/count", s.countOrders)
		g.Get(v2+"/orders/{id}", s.getOrder)
		g.Get(v2+"/orders/{id}/products", s.subList(orderProducts))
		g.Get(v2+"/orders/{id}/shipping_addresses", s.subList(orderAddresses))
		g.Get(v2+"/orders/{id}/shippingaddresses", s.subList(orderAddresses))
		g.Get(v2+"/orders/{id}/shipments", s.subList(orderShipments))
		g.Get(v2+"/orders/{id}/shipments/count", s.countShipments)
		g.Post(v2+"/orders/{id}/shipments", s.createShipment)
		g.Get(v3+"/inventory/locations", s.listLocations)
		g.Get(v3+"/hooks", s.listHooks)
		g.Post(v3+"/hooks", s.createHook)
		g.Get(v3+"/hooks/{id}", s.getHook)
		g.Delete(v3+"/hooks/{id}", s.deleteHook)
	})
}

func isV3(r *http.Request) bool { return strings.Contains(r.URL.Path, "/v3/") }

// sfcError writes the error shape of the request's API version.
func sfcError(w http.ResponseWriter, r *http.Request, status int, msg string, fields map[string]string) {
	if isV3(r) {
		body := map[string]any{"status": status, "title": msg, "type": "/api-docs/getting-started/api-status-codes"}
		if fields != nil {
			body["errors"] = fields
		}
		writeJSON(w, status, body)
		return
	}
	writeJSON(w, status, []map[string]any{{"status": status, "message": msg}})
}

func (s *sfcSandbox) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := strings.TrimSpace(r.Header.Get("X-Auth-Token"))
		if token == "" || token == FailValue {
			sfcError(w, r, http.StatusUnauthorized, "You are not authorized to access this resource.", nil)
			return
		}
		hash := strings.ToLower(chi.URLParam(r, "storeHash"))
		if hash == FailValue {
			sfcError(w, r, http.StatusServiceUnavailable, "Service Unavailable", nil)
			return
		}
		s.mu.Lock()
		st := s.store(hash)
		now := s.now()
		st.calls++
		if now.Sub(st.window) >= sfcWindow {
			st.window, st.windowCalls = now, 0
		}
		st.windowCalls++
		// Throttling is on demand only, so the quota never reads used up.
		left := max(1, sfcQuota-st.windowCalls)
		reset := sfcWindow - now.Sub(st.window)
		limited := token == RateLimitValue && st.calls%2 == 1
		s.mu.Unlock()
		h := w.Header()
		h.Set("X-Rate-Limit-Time-Window-Ms", strconv.FormatInt(sfcWindow.Milliseconds(), 10))
		h.Set("X-Rate-Limit-Time-Reset-Ms", strconv.FormatInt(max(1, reset.Milliseconds()), 10))
		h.Set("X-Rate-Limit-Requests-Quota", strconv.Itoa(sfcQuota))
		if limited {
			h.Set("X-Rate-Limit-Time-Reset-Ms", "1000")
			h.Set("X-Rate-Limit-Requests-Left", "0")
			sfcError(w, r, http.StatusTooManyRequests, "Too many requests", nil)
			return
		}
		h.Set("X-Rate-Limit-Requests-Left", strconv.Itoa(left))
		next.ServeHTTP(w, r)
	})
}

func (s *sfcSandbox) storeOf(r *http.Request) *sfcStore {
	return s.store(strings.ToLower(chi.URLParam(r, "storeHash")))
}

// store returns the store of a hash, building it on first use. s.mu held.
func (s *sfcSandbox) store(hash string) *sfcStore {
	return s.stores.get(hash, func() *sfcStore { return buildSfcStore(hash) })
}

func money4(c int64) string { return fmt.Sprintf("%d.%02d00", c/100, c%100) }

func toCents(s string) int64 {
	v, _ := strconv.ParseFloat(s, 64)
	return int64(math.Round(v * 100))
}

func link(hash, path string) map[string]any {
	return map[string]any{"url": "https://api.bigcommerce.com/stores/" + hash + "/v2" + path, "resource": path}
}

func buildSfcStore(hash string) *sfcStore {
	st := &sfcStore{hash: hash, shipments: map[int64][]map[string]any{}, nextShip: 1}
	seed := rng{s: storeSeed("storefront_c/store", hash)}
	st.nextHook = 20_000_000 + int64(seed.intn(9_000_000))
	for i, p := range []place{pick(&seed, places()), pick(&seed, places())} {
		st.locations = append(st.locations, map[string]any{
			"id": i + 1, "code": strings.ToUpper(strings.ReplaceAll(p.city, " ", "_")) + "_" + strconv.Itoa(i+1),
			"label": p.city + " Location", "description": "Sandbox location in " + p.city, "managed_by_external_source": false,
			"type_id": "PHYSICAL", "enabled": true, "time_zone": "Etc/UTC",
			"created_at": "2025-01-01T00:00:00.0001", "updated_at": "2025-02-02T00:00:00.0001", "storefront_visibility": true,
			"address": map[string]any{"address1": fmt.Sprintf("%d %s", 100+seed.intn(800), pick(&seed, streets())), "address2": "",
				"city": p.city, "state": p.provinceCode, "zip": p.zip, "email": "store@example.com",
				"phone": fmt.Sprintf("+1555%07d", seed.intn(10_000_000)), "country_code": p.countryCode,
				"geo_coordinates": map[string]any{"latitude": 0, "longitude": 0}},
			"special_hours": []any{}, "operating_hours": map[string]any{},
		})
	}
	gen := generateOrders("storefront_c", hash, StoreOrderCount(hash))
	st.byID = make(map[int64]int, len(gen))
	firstID := int64(100)
	for i, o := range gen {
		so := st.orderOf(firstID+int64(i), o)
		st.byID[so.id] = len(st.orders)
		st.orders = append(st.orders, so)
	}
	return st
}

// orderOf maps a generated catalog order onto a V2 order numbered id.
func (st *sfcStore) orderOf(id int64, o order) sfcOrder {
	created, _ := time.Parse(time.RFC3339, o.CreatedAt)
	statusID, payment := 11, "captured"
	switch {
	case o.CancelledAt != nil:
		statusID, payment = 5, "void"
	case o.FinancialStatus == "refunded":
		statusID, payment = 4, "refunded"
	case o.FulfillmentStatus != nil && *o.FulfillmentStatus == "partial":
		statusID = 3
	case o.FulfillmentStatus != nil && len(o.Fulfillments) > 0 && o.Fulfillments[0].ShipmentStatus == "delivered":
		statusID = 10
	case o.FulfillmentStatus != nil:
		statusID = 2
	case o.FinancialStatus == "pending":
		statusID, payment = 7, ""
	case o.FinancialStatus == "partially_paid":
		statusID, payment = 12, "authorized"
	case o.FinancialStatus == "authorized":
		payment = "authorized"
	}
	var bp int64
	if len(o.TaxLines) > 0 {
		bp = int64(math.Round(o.TaxLines[0].Rate * 10000))
	}
	addrID := id*10 + 5
	var products []map[string]any
	var subtotal, totalTax int64
	itemsTotal, itemsShipped := 0, 0
	for j, li := range o.LineItems {
		price := toCents(li.Price)
		line := price * int64(li.Quantity)
		var unitTax, lineTax int64
		if li.Taxable {
			unitTax, lineTax = (price*bp+5000)/10000, (line*bp+5000)/10000
		}
		subtotal += line
		totalTax += lineTax
		shipped := li.Quantity - li.FulfillableQuantity
		if o.CancelledAt != nil {
			shipped = 0
		}
		typ := "physical"
		if !li.RequiresShipping {
			typ = "digital"
		}
		itemsTotal += li.Quantity
		itemsShipped += shipped
		products = append(products, map[string]any{
			"id": id*10 + int64(j), "order_id": id, "product_id": li.ProductID % 100000, "order_address_id": addrID,
			"name": li.Name, "name_customer": li.Name, "name_merchant": li.Name, "sku": li.SKU, "upc": "", "type": typ,
			"base_price": money4(price), "price_ex_tax": money4(price), "price_inc_tax": money4(price + unitTax), "price_tax": money4(unitTax),
			"base_total": money4(line), "total_ex_tax": money4(line), "total_inc_tax": money4(line + lineTax), "total_tax": money4(lineTax),
			"weight": fmt.Sprintf("%.4f", float64(li.Grams)/1000), "quantity": li.Quantity, "quantity_shipped": shipped,
			"is_refunded": o.FinancialStatus == "refunded", "quantity_refunded": 0, "refund_amount": "0.0000",
			"parent_order_product_id": nil, "is_bundled_product": false, "applied_discounts": []any{}, "product_options": []any{},
			"configurable_fields": []any{}, "gift_certificate_id": nil, "external_id": nil, "brand": "Sandbox",
		})
	}
	discount := toCents(o.TotalDiscounts)
	shipping := toCents(o.TotalShippingSet.ShopMoney.Amount)
	totalInc := subtotal - discount + shipping + totalTax
	ad := o.ShippingAddress
	company := ""
	if ad.Company != nil {
		company = *ad.Company
	}
	address := func(withID bool) map[string]any {
		m := map[string]any{"first_name": ad.FirstName, "last_name": ad.LastName, "company": company, "street_1": ad.Address1,
			"street_2": ad.Address2, "city": ad.City, "state": ad.Province, "zip": ad.Zip, "country": ad.Country,
			"country_iso2": ad.CountryCode, "phone": ad.Phone, "email": o.Email}
		if withID {
			m["id"], m["order_id"] = addrID, id
			m["items_total"], m["items_shipped"] = itemsTotal, itemsShipped
			m["shipping_method"] = o.ShippingLines[0].Title
			m["base_cost"], m["cost_ex_tax"], m["cost_inc_tax"], m["cost_tax"] = money4(shipping), money4(shipping), money4(shipping), "0.0000"
			m["shipping_zone_id"], m["shipping_zone_name"] = 1, "Sandbox zone"
			m["shipping_quotes"] = link(st.hash, fmt.Sprintf("/orders/%d/shippingaddresses/%d/shippingquotes", id, addrID))
		}
		m["form_fields"] = []any{}
		return m
	}
	dateShipped := ""
	if len(o.Fulfillments) > 0 && o.CancelledAt == nil {
		shippedAt, _ := time.Parse(time.RFC3339, o.Fulfillments[0].CreatedAt)
		dateShipped = shippedAt.Format(sfcTimeLayout)
		var items []map[string]any
		for _, p := range products {
			if q := p["quantity_shipped"].(int); q > 0 {
				items = append(items, map[string]any{"order_product_id": p["id"], "product_id": p["product_id"], "quantity": q})
			}
		}
		st.shipments[id] = []map[string]any{st.shipment(id, o.Customer.ID, addrID, shippedAt, o.Fulfillments[0].TrackingNumber, "ups", "",
			"", address(false), address(false), items)}
	}
	body := map[string]any{
		"id": id, "customer_id": o.Customer.ID % 100000, "date_created": created.Format(sfcTimeLayout),
		"date_modified": o.updated.Format(sfcTimeLayout), "date_shipped": dateShipped, "status_id": statusID,
		"status": sfcStatusNames()[statusID], "custom_status": sfcStatusNames()[statusID],
		"subtotal_ex_tax": money4(subtotal), "subtotal_inc_tax": money4(subtotal + totalTax), "subtotal_tax": money4(totalTax),
		"base_shipping_cost": money4(shipping), "shipping_cost_ex_tax": money4(shipping), "shipping_cost_inc_tax": money4(shipping),
		"shipping_cost_tax": "0.0000", "shipping_cost_tax_class_id": 0, "base_handling_cost": "0.0000", "handling_cost_ex_tax": "0.0000",
		"handling_cost_inc_tax": "0.0000", "handling_cost_tax": "0.0000", "base_wrapping_cost": "0.0000", "wrapping_cost_ex_tax": "0.0000",
		"wrapping_cost_inc_tax": "0.0000", "wrapping_cost_tax": "0.0000",
		"total_ex_tax": money4(totalInc - totalTax), "total_inc_tax": money4(totalInc), "total_tax": money4(totalTax),
		"is_tax_inclusive_pricing": false, "items_total": itemsTotal, "items_shipped": itemsShipped,
		"payment_method": "Credit Card", "payment_provider_id": "", "payment_status": payment, "refunded_amount": "0.0000",
		"order_is_digital": false, "store_credit_amount": "0.0000", "gift_certificate_amount": "0.0000",
		"currency_id": 1, "currency_code": o.Currency, "currency_exchange_rate": "1.0000000000", "default_currency_id": 1,
		"default_currency_code": o.Currency, "staff_notes": "", "customer_message": "", "discount_amount": money4(discount),
		"coupon_discount": money4(discount), "shipping_address_count": 1, "ebay_order_id": "0",
		"billing_address": address(false), "is_email_opt_in": false, "credit_card_type": nil, "order_source": "www", "channel_id": 1,
		"external_source": nil, "products": link(st.hash, fmt.Sprintf("/orders/%d/products", id)),
		"shipping_addresses": link(st.hash, fmt.Sprintf("/orders/%d/shippingaddresses", id)),
		"coupons":            link(st.hash, fmt.Sprintf("/orders/%d/coupons", id)), "external_id": nil, "external_merchant_id": nil,
		"tax_provider_id": "BasicTaxProvider", "customer_locale": "en", "external_order_id": "", "fees": []any{},
	}
	if len(o.Refunds) > 0 {
		body["refunded_amount"] = money4(totalInc)
	}
	if o.Note != nil {
		body["customer_message"] = *o.Note
	}
	return sfcOrder{id: id, created: created, modified: o.updated, statusID: statusID, email: o.Email,
		customerID: o.Customer.ID % 100000, body: body, products: products, addresses: []map[string]any{address(true)}}
}

func (st *sfcStore) shipment(orderID, customerID, addrID int64, at time.Time, tracking, provider, carrier, link string,
	billing, shipping map[string]any, items []map[string]any) map[string]any {
	id := st.nextShip
	st.nextShip++
	generated := ""
	if provider != "" && tracking != "" {
		generated = "https://tracking.example.com/" + provider + "/" + url.PathEscape(tracking)
	}
	return map[string]any{
		"id": id, "order_id": orderID, "customer_id": customerID, "order_address_id": addrID, "date_created": at.Format(sfcTimeLayout),
		"tracking_number": tracking, "merchant_shipping_cost": "0.0000", "shipping_method": "None", "comments": "",
		"shipping_provider": provider, "tracking_carrier": carrier, "tracking_link": link, "billing_address": billing,
		"shipping_address": shipping, "items": items, "shipping_provider_display_name": strings.ToUpper(provider),
		"generated_tracking_link": generated,
	}
}

func parseSfcDate(v string) (time.Time, bool) {
	for _, layout := range []string{time.RFC1123Z, time.RFC1123, time.RFC3339Nano, "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// writeV2List writes a bare array, or 204 when it is empty.
func writeV2List[T any](w http.ResponseWriter, items []T) {
	if len(items) == 0 {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, http.StatusOK, items)
}

// orderFilter reads the V2 order filters; bad names the bad parameter.
func orderFilter(q url.Values) (func(*sfcOrder) bool, string) {
	var checks []func(*sfcOrder) bool
	for _, p := range []struct {
		key string
		get func(*sfcOrder) time.Time
		min bool
	}{{"min_date_created", func(o *sfcOrder) time.Time { return o.created }, true},
		{"max_date_created", func(o *sfcOrder) time.Time { return o.created }, false},
		{"min_date_modified", func(o *sfcOrder) time.Time { return o.modified }, true},
		{"max_date_modified", func(o *sfcOrder) time.Time { return o.modified }, false}} {
		v := q.Get(p.key)
		if v == "" {
			continue
		}
		t, ok := parseSfcDate(v)
		if !ok {
			return nil, p.key
		}
		p := p
		checks = append(checks, func(o *sfcOrder) bool {
			if p.min {
				return !p.get(o).Before(t)
			}
			return !p.get(o).After(t)
		})
	}
	for _, p := range []struct {
		key string
		get func(*sfcOrder) int64
		min bool
		eq  bool
	}{{"min_id", func(o *sfcOrder) int64 { return o.id }, true, false}, {"max_id", func(o *sfcOrder) int64 { return o.id }, false, false},
		{"status_id", func(o *sfcOrder) int64 { return int64(o.statusID) }, false, true},
		{"customer_id", func(o *sfcOrder) int64 { return o.customerID }, false, true}} {
		v := q.Get(p.key)
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, p.key
		}
		p := p
		checks = append(checks, func(o *sfcOrder) bool {
			switch {
			case p.eq:
				return p.get(o) == n
			case p.min:
				return p.get(o) >= n
			}
			return p.get(o) <= n
		})
	}
	if e := q.Get("email"); e != "" {
		checks = append(checks, func(o *sfcOrder) bool { return strings.EqualFold(o.email, e) })
	}
	return func(o *sfcOrder) bool {
		for _, c := range checks {
			if !c(o) {
				return false
			}
		}
		return true
	}, ""
}

func (s *sfcSandbox) listOrders(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	page, limit, ok := pageParams(q, "limit", sfcDefaultLimit, sfcMaxLimit)
	match, bad := orderFilter(q)
	field, dir, _ := strings.Cut(q.Get("sort"), ":")
	if field == "" {
		field = "id"
	}
	if !ok || bad != "" || (field != "id" && field != "date_created" && field != "date_modified" && field != "status_id" && field != "customer_id") ||
		(dir != "" && dir != "asc" && dir != "desc") {
		sfcError(w, r, http.StatusBadRequest, "The filter or sort parameters are invalid.", nil)
		return
	}
	s.mu.Lock()
	st := s.storeOf(r)
	var matched []*sfcOrder
	for i := range st.orders {
		if match(&st.orders[i]) {
			matched = append(matched, &st.orders[i])
		}
	}
	key := func(o *sfcOrder) int64 {
		switch field {
		case "date_created":
			return o.created.UnixNano()
		case "date_modified":
			return o.modified.UnixNano()
		case "status_id":
			return int64(o.statusID)
		case "customer_id":
			return o.customerID
		}
		return o.id
	}
	sort.SliceStable(matched, func(i, j int) bool {
		a, b := key(matched[i]), key(matched[j])
		if a == b {
			a, b = matched[i].id, matched[j].id
		}
		return (a < b) != (dir == "desc")
	})
	pageItems, _ := paginate(matched, page, limit)
	out := make([]map[string]any, len(pageItems))
	for i, o := range pageItems {
		out[i] = o.body
	}
	s.mu.Unlock()
	writeV2List(w, out)
}

func (s *sfcSandbox) countOrders(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.storeOf(r)
	counts := map[int]int{}
	for _, o := range st.orders {
		counts[o.statusID]++
	}
	var statuses []map[string]any
	names := sfcStatusNames()
	for id := 0; id <= 14; id++ {
		statuses = append(statuses, map[string]any{"id": id, "name": names[id], "system_label": names[id], "custom_label": names[id],
			"count": counts[id], "sort_order": id})
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(st.orders), "statuses": statuses})
}

// order returns the store's order of the {id} parameter. s.mu held.
func (s *sfcSandbox) order(r *http.Request) (*sfcStore, *sfcOrder) {
	st := s.storeOf(r)
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil {
		return st, nil
	}
	i, ok := st.byID[id]
	if !ok {
		return st, nil
	}
	return st, &st.orders[i]
}

func (s *sfcSandbox) notFound(w http.ResponseWriter, r *http.Request) {
	if isV3(r) {
		sfcError(w, r, http.StatusNotFound, "Not Found", nil)
		return
	}
	sfcError(w, r, http.StatusNotFound, "The requested resource was not found.", nil)
}

func (s *sfcSandbox) getOrder(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	_, o := s.order(r)
	var body map[string]any
	if o != nil {
		body = o.body
	}
	s.mu.Unlock()
	if body == nil {
		s.notFound(w, r)
		return
	}
	writeJSON(w, http.StatusOK, body)
}

// subList serves one page of an order's sub-resource list.
func (s *sfcSandbox) subList(list func(st *sfcStore, o *sfcOrder) []map[string]any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		page, limit, ok := pageParams(r.URL.Query(), "limit", 50, sfcMaxLimit)
		if !ok {
			sfcError(w, r, http.StatusBadRequest, "The page or limit parameter is invalid.", nil)
			return
		}
		s.mu.Lock()
		st, o := s.order(r)
		var items []map[string]any
		if o != nil {
			items, _ = paginate(list(st, o), page, limit)
		}
		s.mu.Unlock()
		if o == nil {
			s.notFound(w, r)
			return
		}
		writeV2List(w, items)
	}
}

func orderProducts(_ *sfcStore, o *sfcOrder) []map[string]any  { return o.products }
func orderAddresses(_ *sfcStore, o *sfcOrder) []map[string]any { return o.addresses }
func orderShipments(st *sfcStore, o *sfcOrder) []map[string]any {
	return st.shipments[o.id]
}

func (s *sfcSandbox) countShipments(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, o := s.order(r)
	if o == nil {
		s.notFound(w, r)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"count": len(st.shipments[o.id])})
}

// createShipment records a shipment over open product quantities and
// moves the order to Shipped or Partially Shipped.
func (s *sfcSandbox) createShipment(w http.ResponseWriter, r *http.Request) {
	var req struct {
		OrderAddressID   json.Number `json:"order_address_id"`
		TrackingNumber   string      `json:"tracking_number"`
		ShippingProvider string      `json:"shipping_provider"`
		TrackingCarrier  string      `json:"tracking_carrier"`
		TrackingLink     string      `json:"tracking_link"`
		Comments         string      `json:"comments"`
		Items            []struct {
			OrderProductID int64 `json:"order_product_id"`
			Quantity       int   `json:"quantity"`
		} `json:"items"`
	}
	if err := readBody(w, r, &req); err != nil {
		sfcError(w, r, http.StatusBadRequest, "The request body is not valid JSON.", nil)
		return
	}
	provider := strings.ToLower(req.ShippingProvider)
	known := strings.HasPrefix(provider, "carrier_")
	for _, p := range sfcProviders() {
		known = known || p == provider
	}
	switch {
	case req.OrderAddressID == "":
		sfcError(w, r, http.StatusBadRequest, "The field 'order_address_id' is invalid.", nil)
		return
	case len(req.Items) == 0:
		sfcError(w, r, http.StatusBadRequest, "The field 'items' is invalid.", nil)
		return
	case len(req.TrackingNumber) > 50:
		sfcError(w, r, http.StatusBadRequest, "The field 'tracking_number' is invalid.", nil)
		return
	case !known:
		sfcError(w, r, http.StatusBadRequest, "The field 'shipping_provider' is invalid.", nil)
		return
	case req.TrackingCarrier != "" && (provider != "" || !knownName(sfcCourierSlugs, req.TrackingCarrier, true)):
		sfcError(w, r, http.StatusBadRequest, "The field 'tracking_carrier' is invalid.", nil)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st, o := s.order(r)
	if o == nil {
		s.notFound(w, r)
		return
	}
	addr := o.addresses[0]
	if fmt.Sprint(addr["id"]) != req.OrderAddressID.String() {
		sfcError(w, r, http.StatusBadRequest, "The field 'order_address_id' is invalid.", nil)
		return
	}
	if o.statusID == 5 || o.statusID == 4 || o.statusID == 6 {
		sfcError(w, r, http.StatusBadRequest, "The order cannot be shipped in its current status.", nil)
		return
	}
	// Copy on write: bodies already handed out stay as they were.
	products := make([]map[string]any, len(o.products))
	for i, p := range o.products {
		products[i] = cloneMap(p)
	}
	var items []map[string]any
	shippedNow := 0
	for _, it := range req.Items {
		var p map[string]any
		for _, cand := range products {
			if cand["id"] == it.OrderProductID {
				p = cand
			}
		}
		if p == nil || it.Quantity < 1 || p["quantity_shipped"].(int)+it.Quantity > p["quantity"].(int) {
			sfcError(w, r, http.StatusBadRequest, fmt.Sprintf("The quantity of order product %d is invalid.", it.OrderProductID), nil)
			return
		}
		p["quantity_shipped"] = p["quantity_shipped"].(int) + it.Quantity
		shippedNow += it.Quantity
		items = append(items, map[string]any{"order_product_id": it.OrderProductID, "product_id": p["product_id"], "quantity": it.Quantity})
	}
	now := s.now().UTC()
	body := cloneMap(o.body)
	shippedTotal := body["items_shipped"].(int) + shippedNow
	statusID := 3
	if shippedTotal >= body["items_total"].(int) {
		statusID = 2
	}
	body["items_shipped"], body["status_id"] = shippedTotal, statusID
	body["status"], body["custom_status"] = sfcStatusNames()[statusID], sfcStatusNames()[statusID]
	body["date_shipped"], body["date_modified"] = now.Format(sfcTimeLayout), now.Format(sfcTimeLayout)
	address := cloneMap(addr)
	address["items_shipped"] = shippedTotal
	shipTo := cloneMap(addr)
	for _, k := range []string{"id", "order_id", "items_total", "items_shipped", "shipping_method", "base_cost", "cost_ex_tax",
		"cost_inc_tax", "cost_tax", "shipping_zone_id", "shipping_zone_name", "shipping_quotes", "form_fields"} {
		delete(shipTo, k)
	}
	sh := st.shipment(o.id, o.customerID, o.id*10+5, now, req.TrackingNumber, provider, req.TrackingCarrier, req.TrackingLink,
		body["billing_address"].(map[string]any), shipTo, items)
	sh["comments"] = req.Comments
	st.shipments[o.id] = append(append([]map[string]any(nil), st.shipments[o.id]...), sh)
	o.body, o.products, o.addresses = body, products, []map[string]any{address}
	o.statusID, o.modified = statusID, now.Truncate(time.Second)
	writeJSON(w, http.StatusCreated, sh)
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func v3Meta(total, page, limit int) map[string]any {
	pages := (total + limit - 1) / limit
	return map[string]any{"pagination": map[string]any{"total": total, "count": min(limit, max(0, total-(page-1)*limit)),
		"per_page": limit, "current_page": page, "total_pages": pages}}
}

func (s *sfcSandbox) listLocations(w http.ResponseWriter, r *http.Request) {
	page, limit, ok := pageParams(r.URL.Query(), "limit", 50, sfcMaxLimit)
	if !ok {
		sfcError(w, r, http.StatusBadRequest, "The page or limit parameter is invalid.", nil)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	locs := s.storeOf(r).locations
	items, _ := paginate(locs, page, limit)
	writeJSON(w, http.StatusOK, map[string]any{"data": orEmpty(items), "meta": v3Meta(len(locs), page, limit)})
}

func (s *sfcSandbox) listHooks(w http.ResponseWriter, r *http.Request) {
	page, limit, ok := pageParams(r.URL.Query(), "limit", 50, sfcMaxLimit)
	if !ok {
		sfcError(w, r, http.StatusBadRequest, "The page or limit parameter is invalid.", nil)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var hooks []sfcHook
	q := r.URL.Query()
	for _, h := range s.storeOf(r).hooks {
		if (q.Get("scope") == "" || q.Get("scope") == h.Scope) && (q.Get("destination") == "" || q.Get("destination") == h.Destination) {
			hooks = append(hooks, h)
		}
	}
	items, _ := paginate(hooks, page, limit)
	writeJSON(w, http.StatusOK, map[string]any{"data": orEmpty(items), "meta": v3Meta(len(hooks), page, limit)})
}

func (s *sfcSandbox) createHook(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Scope       string            `json:"scope"`
		Destination string            `json:"destination"`
		IsActive    *bool             `json:"is_active"`
		Headers     map[string]string `json:"headers"`
	}
	if err := readBody(w, r, &req); err != nil {
		sfcError(w, r, http.StatusUnprocessableEntity, "JSON data is missing or invalid", map[string]string{"body": "error.json.invalid."})
		return
	}
	fields := map[string]string{}
	known := false
	for _, sc := range sfcScopes() {
		known = known || sc == req.Scope
	}
	if req.Scope == "" {
		fields["scope"] = "error.path.missing."
	} else if !known {
		fields["scope"] = "error.scope.invalid."
	}
	if req.Destination == "" {
		fields["destination"] = "error.path.missing."
	} else if u, err := url.Parse(req.Destination); err != nil || u.Scheme != "https" || u.Host == "" || (u.Port() != "" && u.Port() != "443") {
		fields["destination"] = "error.destination.invalid."
	}
	if len(fields) > 0 {
		sfcError(w, r, http.StatusUnprocessableEntity, "JSON data is missing or invalid", fields)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.storeOf(r)
	for _, h := range st.hooks {
		if h.Scope == req.Scope && h.Destination == req.Destination {
			sfcError(w, r, http.StatusUnprocessableEntity, "JSON data is missing or invalid",
				map[string]string{"destination": "A webhook for this scope and destination already exists."})
			return
		}
	}
	active := req.IsActive == nil || *req.IsActive
	now := s.now().Unix()
	st.nextHook++
	h := sfcHook{ID: st.nextHook, ClientID: "sandbox-client", StoreHash: st.hash, Scope: req.Scope, Destination: req.Destination,
		Headers: req.Headers, IsActive: active, CreatedAt: now, UpdatedAt: now}
	st.hooks = append(st.hooks, h)
	writeJSON(w, http.StatusOK, map[string]any{"data": h, "meta": map[string]any{}})
}

func (s *sfcSandbox) hookIndex(r *http.Request) (*sfcStore, int) {
	st := s.storeOf(r)
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	for i, h := range st.hooks {
		if err == nil && h.ID == id {
			return st, i
		}
	}
	return st, -1
}

func (s *sfcSandbox) getHook(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, i := s.hookIndex(r)
	if i < 0 {
		s.notFound(w, r)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": st.hooks[i], "meta": map[string]any{}})
}

func (s *sfcSandbox) deleteHook(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, i := s.hookIndex(r)
	if i < 0 {
		s.notFound(w, r)
		return
	}
	h := st.hooks[i]
	st.hooks = append(st.hooks[:i:i], st.hooks[i+1:]...)
	writeJSON(w, http.StatusOK, map[string]any{"data": h, "meta": map[string]any{}})
}
