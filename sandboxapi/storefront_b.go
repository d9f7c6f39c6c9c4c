package sandboxapi

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
)

// storefront_b: the self-hosted storefront's REST API wc/v3
// (vendors/platforms/storefront_b). A store's own URL is its API base, so
// under FOS_SANDBOX=1 every store is served below one prefix (default
// /platforms/storefront_b) by its host and path:
//
//	{prefix}/{host}{path}/wp-json/wc/v3/...     for storeUrl https://{host}{path}
//
//	GET    orders               page, per_page (1-100, default 10), status (any or a
//	                            comma list), orderby (date|id|modified), order (asc|desc,
//	                            default desc), modified_after/before, after/before,
//	                            dates_are_gmt; answers a bare array with X-WP-Total,
//	                            X-WP-TotalPages and a Link header
//	GET    orders/{id}          PUT orders/{id} (status, customer_note)
//	GET    orders/{id}/notes    type (any|customer|internal); POST orders/{id}/notes
//	POST   webhooks             GET webhooks, GET webhooks/{id}, DELETE webhooks/{id}?force=true
//
// Every store holds StoreOrderCount(host) orders built deterministically
// from its host and path, in the site's time zone (UTC-3) with *_gmt
// twins; completed orders carry the tracking note of their shipment.
// Status changes and notes made through the API are kept per handler and
// add the system note the platform writes ("Order status changed from
// Processing to Completed.").
//
// Credentials come as Basic auth or, as the platform allows over HTTPS,
// as consumer_key/consumer_secret query parameters; a store whose host
// starts "strip-auth." never sees the Authorization header (hosts that
// strip it), so only the query parameters work there.
//
// Errors are {"code", "message", "data": {"status"}}: no or "sandbox-fail"
// credentials are 401 woocommerce_rest_authentication_error; a store
// whose first host label is "sandbox-fail", or a query value
// "sandbox-fail", is 503; a consumer key "sandbox-ratelimit" makes every
// other call a 429 with Retry-After: 1 (the platform documents no limit;
// the host's limiter answers so). Paths outside wc/v3 are the platform's
// 404 rest_no_route.

const (
	// wcStripAuthHost: a store whose host starts so strips the
	// Authorization header (only query-string credentials reach it).
	wcStripAuthHost  = "strip-auth."
	wcAPIRoot        = "/wp-json/wc/v3"
	wcDefaultPerPage = 10
	wcMaxPerPage     = 100
)

// wcSiteZone is the sandbox sites' time zone (the examples' UTC-3).
var wcSiteZone = time.FixedZone("UTC-3", -3*60*60)

func wcLocal(t time.Time) string { return t.In(wcSiteZone).Format("2006-01-02T15:04:05") }
func wcGMT(t time.Time) string   { return t.UTC().Format("2006-01-02T15:04:05") }

func wcTopics() map[string]bool {
	out := map[string]bool{}
	for _, res := range []string{"order", "customer", "product", "coupon"} {
		for _, ev := range []string{"created", "updated", "deleted", "restored"} {
			out[res+"."+ev] = true
		}
	}
	return out
}

func wcStatuses() []string {
	return []string{"pending", "processing", "on-hold", "completed", "cancelled", "refunded", "failed", "trash", "checkout-draft"}
}

type wcSandbox struct {
	now    func() time.Time
	mu     sync.Mutex
	stores storeTable[wcStore]
}

type wcStore struct {
	key    string
	orders []wcOrder // by id
	byID   map[int64]int
	notes  map[int64][]wcNote // newest last
	// trackings are the Shipment Tracking extension's items per order.
	trackings map[int64][]wcTracking
	webhooks  []wcWebhook
	nextID    int64
	calls     int
}

type wcLink struct {
	Href string `json:"href"`
}

type wcAddress struct {
	FirstName string  `json:"first_name"`
	LastName  string  `json:"last_name"`
	Company   string  `json:"company"`
	Address1  string  `json:"address_1"`
	Address2  string  `json:"address_2"`
	City      string  `json:"city"`
	State     string  `json:"state"`
	Postcode  string  `json:"postcode"`
	Country   string  `json:"country"`
	Email     *string `json:"email,omitempty"`
	Phone     string  `json:"phone"`
}

type wcMeta struct {
	ID    int64  `json:"id"`
	Key   string `json:"key"`
	Value string `json:"value"`
}

type wcTax struct {
	ID       int64  `json:"id"`
	Total    string `json:"total"`
	Subtotal string `json:"subtotal"`
}

type wcLineItem struct {
	ID          int64    `json:"id"`
	Name        string   `json:"name"`
	ProductID   int64    `json:"product_id"`
	VariationID int64    `json:"variation_id"`
	Quantity    int      `json:"quantity"`
	TaxClass    string   `json:"tax_class"`
	Subtotal    string   `json:"subtotal"`
	SubtotalTax string   `json:"subtotal_tax"`
	Total       string   `json:"total"`
	TotalTax    string   `json:"total_tax"`
	Taxes       []wcTax  `json:"taxes"`
	MetaData    []wcMeta `json:"meta_data"`
	SKU         string   `json:"sku"`
	Price       float64  `json:"price"`
}

type wcTaxLine struct {
	ID               int64    `json:"id"`
	RateCode         string   `json:"rate_code"`
	RateID           int64    `json:"rate_id"`
	Label            string   `json:"label"`
	Compound         bool     `json:"compound"`
	TaxTotal         string   `json:"tax_total"`
	ShippingTaxTotal string   `json:"shipping_tax_total"`
	MetaData         []wcMeta `json:"meta_data"`
}

type wcShippingLine struct {
	ID          int64    `json:"id"`
	MethodTitle string   `json:"method_title"`
	MethodID    string   `json:"method_id"`
	Total       string   `json:"total"`
	TotalTax    string   `json:"total_tax"`
	Taxes       []wcTax  `json:"taxes"`
	MetaData    []wcMeta `json:"meta_data"`
}

type wcCouponLine struct {
	ID          int64    `json:"id"`
	Code        string   `json:"code"`
	Discount    string   `json:"discount"`
	DiscountTax string   `json:"discount_tax"`
	MetaData    []wcMeta `json:"meta_data"`
}

type wcRefund struct {
	ID     int64  `json:"id"`
	Refund string `json:"refund"`
	Total  string `json:"total"`
}

type wcOrder struct {
	ID                 int64               `json:"id"`
	ParentID           int64               `json:"parent_id"`
	Number             string              `json:"number"`
	OrderKey           string              `json:"order_key"`
	CreatedVia         string              `json:"created_via"`
	Version            string              `json:"version"`
	Status             string              `json:"status"`
	Currency           string              `json:"currency"`
	DateCreated        string              `json:"date_created"`
	DateCreatedGMT     string              `json:"date_created_gmt"`
	DateModified       string              `json:"date_modified"`
	DateModifiedGMT    string              `json:"date_modified_gmt"`
	DiscountTotal      string              `json:"discount_total"`
	DiscountTax        string              `json:"discount_tax"`
	ShippingTotal      string              `json:"shipping_total"`
	ShippingTax        string              `json:"shipping_tax"`
	CartTax            string              `json:"cart_tax"`
	Total              string              `json:"total"`
	TotalTax           string              `json:"total_tax"`
	PricesIncludeTax   bool                `json:"prices_include_tax"`
	CustomerID         int64               `json:"customer_id"`
	CustomerIPAddress  string              `json:"customer_ip_address"`
	CustomerUserAgent  string              `json:"customer_user_agent"`
	CustomerNote       string              `json:"customer_note"`
	Billing            wcAddress           `json:"billing"`
	Shipping           wcAddress           `json:"shipping"`
	PaymentMethod      string              `json:"payment_method"`
	PaymentMethodTitle string              `json:"payment_method_title"`
	TransactionID      string              `json:"transaction_id"`
	DatePaid           *string             `json:"date_paid"`
	DatePaidGMT        *string             `json:"date_paid_gmt"`
	DateCompleted      *string             `json:"date_completed"`
	DateCompletedGMT   *string             `json:"date_completed_gmt"`
	CartHash           string              `json:"cart_hash"`
	MetaData           []wcMeta            `json:"meta_data"`
	LineItems          []wcLineItem        `json:"line_items"`
	TaxLines           []wcTaxLine         `json:"tax_lines"`
	ShippingLines      []wcShippingLine    `json:"shipping_lines"`
	FeeLines           []any               `json:"fee_lines"`
	CouponLines        []wcCouponLine      `json:"coupon_lines"`
	Refunds            []wcRefund          `json:"refunds"`
	Links              map[string][]wcLink `json:"_links"`

	modified, created time.Time
}

type wcNote struct {
	ID             int64               `json:"id"`
	Author         string              `json:"author"`
	DateCreated    string              `json:"date_created"`
	DateCreatedGMT string              `json:"date_created_gmt"`
	Note           string              `json:"note"`
	CustomerNote   bool                `json:"customer_note"`
	Links          map[string][]wcLink `json:"_links"`
}

type wcWebhook struct {
	ID              int64               `json:"id"`
	Name            string              `json:"name"`
	Status          string              `json:"status"`
	Topic           string              `json:"topic"`
	Resource        string              `json:"resource"`
	Event           string              `json:"event"`
	Hooks           []string            `json:"hooks"`
	DeliveryURL     string              `json:"delivery_url"`
	DateCreated     string              `json:"date_created"`
	DateCreatedGMT  string              `json:"date_created_gmt"`
	DateModified    string              `json:"date_modified"`
	DateModifiedGMT string              `json:"date_modified_gmt"`
	Links           map[string][]wcLink `json:"_links"`
}

// mountStorefrontB serves the storefront_b sandbox below prefix.
func mountStorefrontB(r chi.Router, prefix string) {
	s := &wcSandbox{now: time.Now}
	r.Handle(prefix+"/*", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		rest := strings.TrimPrefix(req.URL.Path, prefix)
		if i := strings.Index(rest, wcTrackingRoot+"/"); i > 1 {
			// The Shipment Tracking extension's routes, same credentials.
			store := strings.ToLower(strings.Trim(rest[:i], "/"))
			s.serve(w, req, store, prefix+rest[:i], "/"+wcTrackingSeg+rest[i+len(wcTrackingRoot):])
			return
		}
		i := strings.Index(rest, wcAPIRoot+"/")
		if i <= 1 {
			wcError(w, http.StatusNotFound, "rest_no_route", "No route was found matching the URL and request method.")
			return
		}
		store := strings.ToLower(strings.Trim(rest[:i], "/"))
		s.serve(w, req, store, prefix+rest[:i], rest[i+len(wcAPIRoot):])
	}))
}

// wcError writes the platform's error body.
func wcError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"code": code, "message": msg, "data": map[string]int{"status": status}})
}

func (s *wcSandbox) serve(w http.ResponseWriter, r *http.Request, store, storePath, path string) {
	key, secret, ok := r.BasicAuth()
	if strings.HasPrefix(store, wcStripAuthHost) {
		// A host that strips Authorization before the site sees it.
		key, secret, ok = "", "", false
	}
	if !ok {
		// The query-string credentials the platform takes over HTTPS.
		q := r.URL.Query()
		key, secret = q.Get("consumer_key"), q.Get("consumer_secret")
		ok = key != "" && secret != ""
	}
	if !ok || strings.TrimSpace(key) == "" || strings.TrimSpace(secret) == "" {
		wcError(w, http.StatusUnauthorized, "woocommerce_rest_cannot_view", "Sorry, you cannot list resources.")
		return
	}
	if key == FailValue || secret == FailValue {
		wcError(w, http.StatusUnauthorized, "woocommerce_rest_authentication_error", "Consumer key is invalid.")
		return
	}
	fail := store == FailValue || strings.HasPrefix(store, FailValue+".") || strings.HasPrefix(store, FailValue+"/")
	for _, vs := range r.URL.Query() {
		for _, v := range vs {
			fail = fail || v == FailValue
		}
	}
	if fail {
		wcError(w, http.StatusServiceUnavailable, "internal_server_error", "The site is experiencing technical difficulties.")
		return
	}
	s.mu.Lock()
	st := s.store(store)
	st.calls++
	limited := key == RateLimitValue && st.calls%2 == 1
	s.mu.Unlock()
	if limited {
		w.Header().Set("Retry-After", "1")
		wcError(w, http.StatusTooManyRequests, "rest_too_many_requests", "Too many requests. Please wait and try again.")
		return
	}

	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	base := scheme + "://" + r.Host + storePath + wcAPIRoot
	segs := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(segs) == 1 && segs[0] == "orders" && r.Method == http.MethodGet:
		s.listOrders(w, r, st, base)
	case len(segs) == 2 && segs[0] == "orders" && r.Method == http.MethodGet:
		s.getOrder(w, st, segs[1], base)
	case len(segs) == 2 && segs[0] == "orders" && (r.Method == http.MethodPut || r.Method == http.MethodPost || r.Method == http.MethodPatch):
		s.updateOrder(w, r, st, segs[1], base)
	case len(segs) == 4 && segs[0] == wcTrackingSeg && segs[1] == "orders" && segs[3] == "shipment-trackings" && r.Method == http.MethodGet:
		s.listTrackings(w, st, segs[2])
	case len(segs) == 4 && segs[0] == wcTrackingSeg && segs[1] == "orders" && segs[3] == "shipment-trackings" && r.Method == http.MethodPost:
		s.createTracking(w, r, st, segs[2])
	case len(segs) >= 1 && segs[0] == wcTrackingSeg:
		wcError(w, http.StatusNotFound, "rest_no_route", "No route was found matching the URL and request method.")
	case len(segs) == 3 && segs[0] == "orders" && segs[2] == "notes" && r.Method == http.MethodGet:
		s.listNotes(w, r, st, segs[1])
	case len(segs) == 3 && segs[0] == "orders" && segs[2] == "notes" && r.Method == http.MethodPost:
		s.createNote(w, r, st, segs[1], base)
	case len(segs) == 1 && segs[0] == "webhooks" && r.Method == http.MethodGet:
		s.listWebhooks(w, r, st)
	case len(segs) == 1 && segs[0] == "webhooks" && r.Method == http.MethodPost:
		s.createWebhook(w, r, st, base)
	case len(segs) == 2 && segs[0] == "webhooks" && r.Method == http.MethodGet:
		s.getWebhook(w, st, segs[1])
	case len(segs) == 2 && segs[0] == "webhooks" && r.Method == http.MethodDelete:
		s.deleteWebhook(w, r, st, segs[1])
	default:
		wcError(w, http.StatusNotFound, "rest_no_route", "No route was found matching the URL and request method")
	}
}

// store returns the store of a key (host and path), building it on first
// use. s.mu held.
func (s *wcSandbox) store(key string) *wcStore {
	return s.stores.get(key, func() *wcStore {
		host, _, _ := strings.Cut(key, "/")
		orders := generateOrders("storefront_b", key, StoreOrderCount(host))
		seed := rng{s: storeSeed("storefront_b/site", key)}
		st := &wcStore{key: key, byID: make(map[int64]int, len(orders)), notes: map[int64][]wcNote{},
			nextID: 1_000_000 + int64(seed.intn(1_000_000))}
		for _, o := range orders {
			wo := wcOrderOf(o)
			st.byID[wo.ID] = len(st.orders)
			st.orders = append(st.orders, wo)
			created := wo.created.Add(time.Minute)
			st.notes[wo.ID] = append(st.notes[wo.ID], wcNote{ID: o.ID*10 + 1, Author: "system",
				DateCreated: wcLocal(created), DateCreatedGMT: wcGMT(created), Note: "Order status changed from Pending payment to Processing."})
			if len(o.Fulfillments) > 0 && wo.Status == "completed" {
				f := o.Fulfillments[0]
				at, _ := time.Parse(time.RFC3339, f.CreatedAt)
				st.notes[wo.ID] = append(st.notes[wo.ID],
					wcNote{ID: o.ID*10 + 2, Author: "system", DateCreated: wcLocal(at), DateCreatedGMT: wcGMT(at),
						Note: "Order status changed from Processing to Completed."},
					wcNote{ID: o.ID*10 + 3, Author: "shop-manager", DateCreated: wcLocal(at), DateCreatedGMT: wcGMT(at), CustomerNote: true,
						Note: fmt.Sprintf("Shipped with %s. Tracking number: %s (%s)", f.TrackingCompany, f.TrackingNumber, f.TrackingURL)})
			}
		}
		return st
	})
}

// wcStatusOf is the storefront's status of a catalog order.
func wcStatusOf(o order) string {
	switch {
	case o.CancelledAt != nil:
		return "cancelled"
	case o.FinancialStatus == "refunded":
		return "refunded"
	case o.FulfillmentStatus != nil && *o.FulfillmentStatus == "fulfilled":
		return "completed"
	case o.FinancialStatus == "pending":
		return "pending"
	case o.FinancialStatus == "authorized":
		return "on-hold"
	case o.FinancialStatus == "partially_paid":
		return "failed"
	}
	return "processing" // paid, possibly partly shipped (no partial state here)
}

func wcAddressOf(a address, email *string) wcAddress {
	company := ""
	if a.Company != nil {
		company = *a.Company
	}
	return wcAddress{FirstName: a.FirstName, LastName: a.LastName, Company: company, Address1: a.Address1, Address2: a.Address2,
		City: a.City, State: a.ProvinceCode, Postcode: a.Zip, Country: a.CountryCode, Email: email, Phone: a.Phone}
}

func centsOf(s string) int64 {
	v, _ := strconv.ParseFloat(s, 64)
	if v < 0 {
		return int64(v*100 - 0.5)
	}
	return int64(v*100 + 0.5)
}

// lineTaxes spreads an order's tax over its taxable lines in cents (the
// last taxable line takes the rounding rest), as the platforms that carry
// tax per line need it.
func lineTaxes(o order) []int64 {
	out := make([]int64, len(o.LineItems))
	last := -1
	for j, li := range o.LineItems {
		if li.Taxable {
			last = j
		}
	}
	if last < 0 {
		return out
	}
	var rate float64
	if len(o.TaxLines) > 0 {
		rate = o.TaxLines[0].Rate
	}
	left := centsOf(o.TotalTax)
	for j, li := range o.LineItems {
		switch {
		case j == last:
			out[j] = left
		case li.Taxable:
			out[j] = min(left, int64(float64(centsOf(li.Price)*int64(li.Quantity))*rate+0.5))
		}
		left -= out[j]
	}
	return out
}

// wcOrderOf maps a generated catalog order onto the wc/v3 order shape.
func wcOrderOf(o order) wcOrder {
	created, _ := time.Parse(time.RFC3339, o.CreatedAt)
	status := wcStatusOf(o)
	email := o.Email
	wo := wcOrder{
		ID: o.ID, Number: strconv.Itoa(o.OrderNumber), OrderKey: fmt.Sprintf("wc_order_%x", o.ID*2654435761%0xfffffffffff),
		CreatedVia: "checkout", Version: "9.4.2", Status: status, Currency: o.Currency,
		DateCreated: wcLocal(created), DateCreatedGMT: wcGMT(created), DateModified: wcLocal(o.updated), DateModifiedGMT: wcGMT(o.updated),
		DiscountTotal: o.TotalDiscounts, DiscountTax: "0.00", ShippingTotal: o.TotalShippingSet.ShopMoney.Amount, ShippingTax: "0.00",
		CartTax: o.TotalTax, Total: o.TotalPrice, TotalTax: o.TotalTax, CustomerID: o.Customer.ID % 100_000,
		CustomerIPAddress: "203.0.113.7", CustomerUserAgent: "mozilla/5.0 (sandbox)",
		Billing: wcAddressOf(o.BillingAddress, &email), Shipping: wcAddressOf(o.ShippingAddress, nil),
		PaymentMethod: "stripe", PaymentMethodTitle: "Credit card", FeeLines: []any{},
		MetaData:    []wcMeta{{ID: o.ID*10 + 6, Key: "_order_source", Value: o.SourceName}},
		CouponLines: []wcCouponLine{}, Refunds: []wcRefund{}, TaxLines: []wcTaxLine{},
		modified: o.updated, created: created,
	}
	if o.Note != nil {
		wo.CustomerNote = *o.Note
	}
	if o.FinancialStatus == "paid" || o.FinancialStatus == "refunded" {
		paid := created.Add(2 * time.Minute)
		wo.DatePaid, wo.DatePaidGMT = strPtr(wcLocal(paid)), strPtr(wcGMT(paid))
		wo.TransactionID = fmt.Sprintf("ch_sbx%010d", o.ID%10_000_000_000)
	}
	if status == "completed" {
		at, _ := time.Parse(time.RFC3339, o.Fulfillments[0].CreatedAt)
		wo.DateCompleted, wo.DateCompletedGMT = strPtr(wcLocal(at)), strPtr(wcGMT(at))
	}
	// Lines: the discount comes off the first line, the tax is spread over
	// the taxable lines.
	discount, taxes := centsOf(o.TotalDiscounts), lineTaxes(o)
	for j, li := range o.LineItems {
		sub := centsOf(li.Price) * int64(li.Quantity)
		total := sub
		if j == 0 {
			total -= discount
		}
		tax := taxes[j]
		item := wcLineItem{
			ID: li.ID, Name: strings.ReplaceAll(li.Name, " - ", " &ndash; "), ProductID: li.ProductID % 100_000, Quantity: li.Quantity,
			Subtotal: cents(sub), SubtotalTax: cents(tax), Total: cents(total), TotalTax: cents(tax), Taxes: []wcTax{},
			MetaData: []wcMeta{}, SKU: li.SKU, Price: float64(total) / 100 / float64(li.Quantity),
		}
		if li.VariantTitle != "" && li.VariantTitle != "Default" {
			item.VariationID = li.VariantID % 100_000
			item.MetaData = append(item.MetaData, wcMeta{ID: li.ID*10 + 1, Key: "variant", Value: li.VariantTitle})
		}
		if tax > 0 {
			item.Taxes = append(item.Taxes, wcTax{ID: 75, Total: cents(tax), Subtotal: cents(tax)})
		}
		wo.LineItems = append(wo.LineItems, item)
	}
	for _, t := range o.TaxLines {
		wo.TaxLines = append(wo.TaxLines, wcTaxLine{ID: o.ID*10 + 4, RateCode: "US-" + strings.ToUpper(t.Title), RateID: 75, Label: t.Title,
			TaxTotal: t.Price, ShippingTaxTotal: "0.00", MetaData: []wcMeta{}})
	}
	for _, sl := range o.ShippingLines {
		method := "flat_rate"
		if centsOf(sl.Price) == 0 {
			method = "free_shipping"
		}
		var shipped []string
		for _, li := range o.LineItems {
			if li.RequiresShipping {
				shipped = append(shipped, fmt.Sprintf("%s &times; %d", li.Title, li.Quantity))
			}
		}
		wo.ShippingLines = append(wo.ShippingLines, wcShippingLine{ID: sl.ID, MethodTitle: sl.Title, MethodID: method,
			Total: sl.Price, TotalTax: "0.00", Taxes: []wcTax{}, MetaData: []wcMeta{{ID: sl.ID*10 + 1, Key: "Items", Value: strings.Join(shipped, ", ")}}})
	}
	for _, dc := range o.DiscountCodes {
		wo.CouponLines = append(wo.CouponLines, wcCouponLine{ID: o.ID*10 + 5, Code: strings.ToLower(dc.Code), Discount: dc.Amount,
			DiscountTax: "0.00", MetaData: []wcMeta{}})
	}
	for _, rf := range o.Refunds {
		wo.Refunds = append(wo.Refunds, wcRefund{ID: rf.ID, Total: "-" + rf.Amount})
	}
	return wo
}

func (o wcOrder) withLinks(base string) wcOrder {
	o.Links = map[string][]wcLink{
		"self":       {{Href: fmt.Sprintf("%s/orders/%d", base, o.ID)}},
		"collection": {{Href: base + "/orders"}},
	}
	if o.CustomerID != 0 {
		o.Links["customer"] = []wcLink{{Href: fmt.Sprintf("%s/customers/%d", base, o.CustomerID)}}
	}
	return o
}

// wcDate reads an ISO 8601 filter; without an offset it is GMT when gmt,
// else site time.
func wcDate(v string, gmt bool) (time.Time, bool) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, true
	}
	zone := wcSiteZone
	if gmt {
		zone = time.UTC
	}
	t, err := time.ParseInLocation("2006-01-02T15:04:05", v, zone)
	return t, err == nil
}

// wcPaging reads page and per_page.
func wcPaging(w http.ResponseWriter, q url.Values) (page, perPage int, ok bool) {
	page, perPage = 1, wcDefaultPerPage
	for _, p := range []struct {
		key      string
		dst      *int
		min, max int
	}{{"page", &page, 1, 1 << 30}, {"per_page", &perPage, 1, wcMaxPerPage}} {
		if v := q.Get(p.key); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < p.min || n > p.max {
				writeJSON(w, http.StatusBadRequest, map[string]any{"code": "rest_invalid_param", "message": "Invalid parameter(s): " + p.key,
					"data": map[string]any{"status": 400, "params": map[string]string{p.key: fmt.Sprintf("%s must be between %d (inclusive) and %d (inclusive)", p.key, p.min, p.max)}}})
				return 0, 0, false
			}
			*p.dst = n
		}
	}
	return page, perPage, true
}

func wcInvalid(w http.ResponseWriter, param string) {
	writeJSON(w, http.StatusBadRequest, map[string]any{"code": "rest_invalid_param", "message": "Invalid parameter(s): " + param,
		"data": map[string]any{"status": 400, "params": map[string]string{param: "Invalid " + param + "."}}})
}

// wcPageHeaders sets X-WP-Total, X-WP-TotalPages and the Link header.
func wcPageHeaders(w http.ResponseWriter, r *http.Request, base, path string, total, page, perPage int) int {
	pages := (total + perPage - 1) / perPage
	w.Header().Set("X-WP-Total", strconv.Itoa(total))
	w.Header().Set("X-WP-TotalPages", strconv.Itoa(pages))
	link := func(p int, rel string) string {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(p))
		return fmt.Sprintf(`<%s%s?%s>; rel="%s"`, base, path, q.Encode(), rel)
	}
	var links []string
	if page > 1 && page <= pages+1 {
		links = append(links, link(page-1, "prev"))
	}
	if page < pages {
		links = append(links, link(page+1, "next"))
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	return pages
}

func (s *wcSandbox) listOrders(w http.ResponseWriter, r *http.Request, st *wcStore, base string) {
	q := r.URL.Query()
	page, perPage, ok := wcPaging(w, q)
	if !ok {
		return
	}
	gmt := q.Get("dates_are_gmt") == "true" || q.Get("dates_are_gmt") == "1"
	var bounds [4]time.Time
	for i, k := range []string{"modified_after", "modified_before", "after", "before"} {
		if v := q.Get(k); v != "" {
			t, ok := wcDate(v, gmt)
			if !ok {
				wcInvalid(w, k)
				return
			}
			bounds[i] = t
		}
	}
	statuses := map[string]bool{}
	for _, v := range strings.Split(q.Get("status"), ",") {
		if v = strings.TrimSpace(v); v != "" && v != "any" {
			valid := false
			for _, s := range wcStatuses() {
				valid = valid || s == v
			}
			if !valid {
				wcInvalid(w, "status")
				return
			}
			statuses[v] = true
		}
	}
	orderBy, dir := q.Get("orderby"), q.Get("order")
	if orderBy == "" {
		orderBy = "date"
	}
	if dir == "" {
		dir = "desc"
	}
	if (orderBy != "date" && orderBy != "id" && orderBy != "modified") || (dir != "asc" && dir != "desc") {
		wcInvalid(w, "orderby")
		return
	}

	s.mu.Lock()
	// Indices, not copies: a store may hold 100,000 orders.
	var matched []int
	for i := range st.orders {
		o := &st.orders[i]
		if len(statuses) == 0 && o.Status == "trash" || len(statuses) > 0 && !statuses[o.Status] {
			continue
		}
		// after/before bounds are exclusive, as in the platform's queries.
		if (!bounds[0].IsZero() && !o.modified.After(bounds[0])) || (!bounds[1].IsZero() && !o.modified.Before(bounds[1])) ||
			(!bounds[2].IsZero() && !o.created.After(bounds[2])) || (!bounds[3].IsZero() && !o.created.Before(bounds[3])) {
			continue
		}
		matched = append(matched, i)
	}
	less := func(a, b *wcOrder) bool {
		switch {
		case orderBy == "date" && !a.created.Equal(b.created):
			return a.created.Before(b.created)
		case orderBy == "modified" && !a.modified.Equal(b.modified):
			return a.modified.Before(b.modified)
		}
		return a.ID < b.ID
	}
	sort.SliceStable(matched, func(i, j int) bool {
		a, b := &st.orders[matched[i]], &st.orders[matched[j]]
		if dir == "asc" {
			return less(a, b)
		}
		return less(b, a)
	})
	items, _ := paginate(matched, page, perPage)
	out := make([]wcOrder, len(items))
	for i, idx := range items {
		out[i] = st.orders[idx].withLinks(base)
	}
	s.mu.Unlock()
	wcPageHeaders(w, r, base, "/orders", len(matched), page, perPage)
	writeJSON(w, http.StatusOK, out)
}

// orderIndex finds an order by its id segment. s.mu held.
func (st *wcStore) orderIndex(seg string) (int, bool) {
	id, err := strconv.ParseInt(seg, 10, 64)
	if err != nil {
		return 0, false
	}
	i, ok := st.byID[id]
	return i, ok
}

func wcNoOrder(w http.ResponseWriter) {
	wcError(w, http.StatusNotFound, "woocommerce_rest_shop_order_invalid_id", "Invalid ID.")
}

// order is the index of the order seg names; a missing one is answered
// 404 here (the caller holds the sandbox's lock).
func (st *wcStore) order(w http.ResponseWriter, seg string) (int, bool) {
	i, ok := st.orderIndex(seg)
	if !ok {
		wcNoOrder(w)
	}
	return i, ok
}

// wcReadBody decodes a JSON body into v; a body that is not JSON is
// answered 400 rest_invalid_json here.
func wcReadBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := readBody(w, r, v); err != nil {
		wcError(w, http.StatusBadRequest, "rest_invalid_json", "Invalid JSON body passed.")
		return false
	}
	return true
}

func (s *wcSandbox) getOrder(w http.ResponseWriter, st *wcStore, seg, base string) {
	s.mu.Lock()
	i, ok := st.orderIndex(seg)
	var o wcOrder
	if ok {
		o = st.orders[i]
	}
	s.mu.Unlock()
	if !ok {
		wcNoOrder(w)
		return
	}
	writeJSON(w, http.StatusOK, o.withLinks(base))
}

func wcStatusLabel(s string) string {
	switch s {
	case "pending":
		return "Pending payment"
	case "on-hold":
		return "On hold"
	case "checkout-draft":
		return "Draft"
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// updateOrder changes the status (and customer note) of an order; a status
// change moves date_modified and adds the platform's system note.
func (s *wcSandbox) updateOrder(w http.ResponseWriter, r *http.Request, st *wcStore, seg, base string) {
	var req struct {
		Status       *string `json:"status"`
		CustomerNote *string `json:"customer_note"`
	}
	if !wcReadBody(w, r, &req) {
		return
	}
	if req.Status != nil {
		valid := false
		for _, v := range wcStatuses() {
			valid = valid || v == *req.Status
		}
		if !valid {
			writeJSON(w, http.StatusBadRequest, map[string]any{"code": "rest_invalid_param", "message": "Invalid parameter(s): status",
				"data": map[string]any{"status": 400, "params": map[string]string{"status": "status is not one of " + strings.Join(wcStatuses(), ", ") + "."}}})
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := st.order(w, seg)
	if !ok {
		return
	}
	o := st.orders[i]
	now := s.now()
	changed := false
	if req.Status != nil && *req.Status != o.Status {
		st.nextID++
		st.notes[o.ID] = append(st.notes[o.ID], wcNote{ID: st.nextID, Author: "system", DateCreated: wcLocal(now), DateCreatedGMT: wcGMT(now),
			Note: fmt.Sprintf("Order status changed from %s to %s.", wcStatusLabel(o.Status), wcStatusLabel(*req.Status))})
		o.Status = *req.Status
		if o.Status == "completed" {
			o.DateCompleted, o.DateCompletedGMT = strPtr(wcLocal(now)), strPtr(wcGMT(now))
		}
		changed = true
	}
	if req.CustomerNote != nil && *req.CustomerNote != o.CustomerNote {
		o.CustomerNote, changed = *req.CustomerNote, true
	}
	if changed {
		o.modified, o.DateModified, o.DateModifiedGMT = now, wcLocal(now), wcGMT(now)
	}
	st.orders[i] = o
	writeJSON(w, http.StatusOK, o.withLinks(base))
}

func (s *wcSandbox) listNotes(w http.ResponseWriter, r *http.Request, st *wcStore, seg string) {
	typ := r.URL.Query().Get("type")
	if typ != "" && typ != "any" && typ != "customer" && typ != "internal" {
		wcInvalid(w, "type")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := st.order(w, seg)
	if !ok {
		return
	}
	notes := st.notes[st.orders[i].ID]
	out := []wcNote{}
	for j := len(notes) - 1; j >= 0; j-- { // newest first
		n := notes[j]
		if (typ == "customer" && !n.CustomerNote) || (typ == "internal" && n.CustomerNote) {
			continue
		}
		out = append(out, n)
	}
	writeJSON(w, http.StatusOK, out)
}

// The Shipment Tracking extension (wc-shipment-tracking/v3): tracking
// items per order, {tracking_id, tracking_provider, tracking_link,
// tracking_number, date_shipped}.
const (
	wcTrackingRoot = "/wp-json/wc-shipment-tracking/v3"
	wcTrackingSeg  = "_shipment-tracking"
)

type wcTracking struct {
	TrackingID       string `json:"tracking_id"`
	TrackingProvider string `json:"tracking_provider"`
	TrackingLink     string `json:"tracking_link"`
	TrackingNumber   string `json:"tracking_number"`
	DateShipped      string `json:"date_shipped"`
}

func (s *wcSandbox) listTrackings(w http.ResponseWriter, st *wcStore, seg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := st.order(w, seg)
	if !ok {
		return
	}
	out := append([]wcTracking{}, st.trackings[st.orders[i].ID]...)
	writeJSON(w, http.StatusOK, out)
}

// createTracking adds a tracking item: tracking_number and a provider
// (tracking_provider, or custom_tracking_provider with its
// custom_tracking_link) are required; date_shipped is YYYY-MM-DD (today
// when absent). 201 with the item.
func (s *wcSandbox) createTracking(w http.ResponseWriter, r *http.Request, st *wcStore, seg string) {
	var req struct {
		Provider       string `json:"tracking_provider"`
		CustomProvider string `json:"custom_tracking_provider"`
		CustomLink     string `json:"custom_tracking_link"`
		Number         string `json:"tracking_number"`
		DateShipped    string `json:"date_shipped"`
	}
	if !wcReadBody(w, r, &req) {
		return
	}
	if strings.TrimSpace(req.Number) == "" {
		wcError(w, http.StatusBadRequest, "rest_missing_callback_param", "Missing parameter(s): tracking_number")
		return
	}
	if strings.TrimSpace(req.Provider) == "" && strings.TrimSpace(req.CustomProvider) == "" {
		wcError(w, http.StatusBadRequest, "rest_missing_callback_param", "Missing parameter(s): tracking_provider")
		return
	}
	if req.DateShipped != "" {
		if _, err := time.Parse("2006-01-02", req.DateShipped); err != nil {
			wcInvalid(w, "date_shipped")
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := st.order(w, seg)
	if !ok {
		return
	}
	id := st.orders[i].ID
	if req.DateShipped == "" {
		req.DateShipped = s.now().UTC().Format("2006-01-02")
	}
	st.nextID++
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%d/%d", st.key, id, st.nextID)))
	it := wcTracking{TrackingID: hex.EncodeToString(sum[:16]), TrackingProvider: req.Provider, TrackingNumber: req.Number, DateShipped: req.DateShipped}
	if req.Provider == "" {
		it.TrackingProvider, it.TrackingLink = req.CustomProvider, strings.ReplaceAll(req.CustomLink, "%1$s", req.Number)
	}
	if st.trackings == nil {
		st.trackings = map[int64][]wcTracking{}
	}
	st.trackings[id] = append(st.trackings[id], it)
	writeJSON(w, http.StatusCreated, it)
}

// createNote records an order note (how a fulfillment's tracking number
// reaches the store).
func (s *wcSandbox) createNote(w http.ResponseWriter, r *http.Request, st *wcStore, seg, base string) {
	var req struct {
		Note         string `json:"note"`
		CustomerNote bool   `json:"customer_note"`
	}
	if !wcReadBody(w, r, &req) {
		return
	}
	if strings.TrimSpace(req.Note) == "" {
		wcError(w, http.StatusBadRequest, "rest_missing_callback_param", "Missing parameter(s): note")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := st.order(w, seg)
	if !ok {
		return
	}
	id := st.orders[i].ID
	now := s.now()
	st.nextID++
	n := wcNote{ID: st.nextID, Author: "system", DateCreated: wcLocal(now), DateCreatedGMT: wcGMT(now), Note: req.Note, CustomerNote: req.CustomerNote}
	st.notes[id] = append(st.notes[id], n)
	n.Links = map[string][]wcLink{
		"self":       {{Href: fmt.Sprintf("%s/orders/%d/notes/%d", base, id, n.ID)}},
		"collection": {{Href: fmt.Sprintf("%s/orders/%d/notes", base, id)}},
		"up":         {{Href: fmt.Sprintf("%s/orders/%d", base, id)}},
	}
	writeJSON(w, http.StatusCreated, n)
}

func (s *wcSandbox) listWebhooks(w http.ResponseWriter, r *http.Request, st *wcStore) {
	q := r.URL.Query()
	page, perPage, ok := wcPaging(w, q)
	if !ok {
		return
	}
	status := q.Get("status")
	s.mu.Lock()
	var matched []wcWebhook
	for _, h := range st.webhooks {
		if status == "" || status == "all" || status == h.Status {
			matched = append(matched, h)
		}
	}
	s.mu.Unlock()
	items, _ := paginate(matched, page, perPage)
	wcPageHeaders(w, r, "", "", len(matched), page, perPage)
	w.Header().Del("Link")
	writeJSON(w, http.StatusOK, orEmpty(items))
}

func (s *wcSandbox) createWebhook(w http.ResponseWriter, r *http.Request, st *wcStore, base string) {
	var req struct {
		Name        string `json:"name"`
		Topic       string `json:"topic"`
		DeliveryURL string `json:"delivery_url"`
		Secret      string `json:"secret"`
		Status      string `json:"status"`
	}
	if !wcReadBody(w, r, &req) {
		return
	}
	if !wcTopics()[req.Topic] && !strings.HasPrefix(req.Topic, "action.") {
		wcError(w, http.StatusBadRequest, "woocommerce_rest_webhook_invalid_topic", "Webhook topic is required and must be valid.")
		return
	}
	if u, err := url.Parse(req.DeliveryURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		wcError(w, http.StatusBadRequest, "woocommerce_rest_webhook_invalid_delivery_url", "Webhook delivery URL must be a valid URL starting with http:// or https://.")
		return
	}
	if req.Status == "" {
		req.Status = "active"
	}
	if req.Status != "active" && req.Status != "paused" && req.Status != "disabled" {
		wcInvalid(w, "status")
		return
	}
	resource, event, _ := strings.Cut(req.Topic, ".")
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	st.nextID++
	h := wcWebhook{ID: st.nextID, Name: req.Name, Status: req.Status, Topic: req.Topic, Resource: resource, Event: event,
		Hooks: []string{"woocommerce_" + event + "_" + resource}, DeliveryURL: req.DeliveryURL,
		DateCreated: wcLocal(now), DateCreatedGMT: wcGMT(now), DateModified: wcLocal(now), DateModifiedGMT: wcGMT(now),
		Links: map[string][]wcLink{"self": {{Href: fmt.Sprintf("%s/webhooks/%d", base, st.nextID)}}, "collection": {{Href: base + "/webhooks"}}}}
	st.webhooks = append(st.webhooks, h)
	writeJSON(w, http.StatusCreated, h)
}

func (st *wcStore) webhookIndex(seg string) int {
	id, err := strconv.ParseInt(seg, 10, 64)
	for i, h := range st.webhooks {
		if err == nil && h.ID == id {
			return i
		}
	}
	return -1
}

func (s *wcSandbox) getWebhook(w http.ResponseWriter, st *wcStore, seg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := st.webhookIndex(seg)
	if i < 0 {
		wcError(w, http.StatusNotFound, "woocommerce_rest_webhook_invalid_id", "Invalid ID.")
		return
	}
	writeJSON(w, http.StatusOK, st.webhooks[i])
}

func (s *wcSandbox) deleteWebhook(w http.ResponseWriter, r *http.Request, st *wcStore, seg string) {
	if r.URL.Query().Get("force") != "true" {
		wcError(w, http.StatusNotImplemented, "woocommerce_rest_trash_not_supported", "Webhooks do not support trashing.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i := st.webhookIndex(seg)
	if i < 0 {
		wcError(w, http.StatusNotFound, "woocommerce_rest_webhook_invalid_id", "Invalid ID.")
		return
	}
	h := st.webhooks[i]
	st.webhooks = append(st.webhooks[:i:i], st.webhooks[i+1:]...)
	writeJSON(w, http.StatusOK, h)
}
