package sandboxapi

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
)

// storefront_a: the storefront's REST Admin API
// (vendors/platforms/storefront_a), served under
// {prefix}/admin/api/{version}/..., where {prefix} (default
// /platforms/storefront_a, FOS_STOREFRONT_A_URL under FOS_SANDBOX=1)
// stands for https://{shopDomain}. Since the host no longer names the shop,
// the shop is named by the X-Shopify-Shop-Domain request header (the
// platform's own header for a shop's domain), or else by the Host header,
// so a client that reaches the sandbox under the shop's own host name
// works too.
//
//	GET    orders.json            status (open|closed|cancelled|any, default open),
//	                              updated_at_min/max, created_at_min/max, since_id,
//	                              ids, financial_status, fulfillment_status, fields,
//	                              limit (1-250, default 50), page_info
//	GET    orders/count.json
//	GET    orders/{id}.json       fields
//	GET    orders/{id}/fulfillment_orders.json
//	POST   fulfillments.json      line_items_by_fulfillment_order, tracking_info
//	GET    locations.json
//	POST   webhooks.json          GET webhooks.json (topic, address), GET webhooks/count.json,
//	GET    webhooks/{id}.json     DELETE webhooks/{id}.json
//
// Orders are listed by id; page_info is an opaque cursor that carries the
// first page's filters, so with page_info only limit and fields may be
// sent (as on the platform), and the Link header names the rel="next" and
// rel="previous" pages. Every shop holds StoreOrderCount(domain) orders
// built deterministically from its domain, two or three locations and the
// fulfillments and webhooks created through the API (kept per handler).
//
// Credentials: X-Shopify-Access-Token; missing or "sandbox-fail" is 401
// {"errors": "[API] Invalid API key or access token ..."}; "sandbox-ratelimit"
// makes every other call a 429 with Retry-After: 1.0 and
// X-Shopify-Shop-Api-Call-Limit: 40/40. A shop domain whose first label is
// "sandbox-fail" is 503. Every answer carries X-Shopify-Shop-Api-Call-Limit
// from a leaky bucket of 40 that leaks 2 calls a second (reported, never
// enforced, and never reported full outside the on-demand 429s).

const (
	sfaTokenHeader     = "X-Shopify-Access-Token"
	sfaShopHeader      = "X-Shopify-Shop-Domain"
	sfaCallLimitHeader = "X-Shopify-Shop-Api-Call-Limit"
	sfaBucket          = 40
	sfaLeakPerSecond   = 2
	sfaDefaultLimit    = 50
	sfaMaxLimit        = 250
)

var sfaVersionRE = regexp.MustCompile(`^(\d{4}-\d{2}|unstable)$`)

// sfaTopics are the webhook topics the sandbox accepts.
func sfaTopics() []string {
	return []string{"orders/create", "orders/updated", "orders/fulfilled", "orders/partially_fulfilled",
		"orders/paid", "orders/cancelled", "orders/delete", "orders/edited", "fulfillments/create", "fulfillments/update"}
}

type sfaSandbox struct {
	now   func() time.Time
	mu    sync.Mutex
	shops storeTable[sfaShop]
}

type sfaShop struct {
	domain    string
	shopID    int64
	orders    []order // by id
	byID      map[int64]int
	locations []sfaLocation
	webhooks  []sfaWebhook
	nextHook  int64
	appSecret string // signs webhook deliveries (webhook_delivery.go)
	calls     int
	bucket    float64
	bucketAt  time.Time
}

type sfaLocation struct {
	ID                    int64   `json:"id"`
	Name                  string  `json:"name"`
	Address1              string  `json:"address1"`
	Address2              *string `json:"address2"`
	City                  string  `json:"city"`
	Zip                   string  `json:"zip"`
	Province              string  `json:"province"`
	Country               string  `json:"country"`
	Phone                 *string `json:"phone"`
	CreatedAt             string  `json:"created_at"`
	UpdatedAt             string  `json:"updated_at"`
	CountryCode           string  `json:"country_code"`
	CountryName           string  `json:"country_name"`
	ProvinceCode          string  `json:"province_code"`
	Legacy                bool    `json:"legacy"`
	Active                bool    `json:"active"`
	AdminGraphqlAPIID     string  `json:"admin_graphql_api_id"`
	LocalizedCountryName  string  `json:"localized_country_name"`
	LocalizedProvinceName string  `json:"localized_province_name"`
}

type sfaWebhook struct {
	ID                         int64    `json:"id"`
	Address                    string   `json:"address"`
	Topic                      string   `json:"topic"`
	CreatedAt                  string   `json:"created_at"`
	UpdatedAt                  string   `json:"updated_at"`
	Format                     string   `json:"format"`
	Fields                     []string `json:"fields"`
	MetafieldNamespaces        []string `json:"metafield_namespaces"`
	APIVersion                 string   `json:"api_version"`
	PrivateMetafieldNamespaces []string `json:"private_metafield_namespaces"`
}

// mountStorefrontA serves the storefront_a sandbox under prefix.
func mountStorefrontA(r chi.Router, prefix string) {
	s := &sfaSandbox{now: time.Now}
	api := chi.NewRouter()
	api.NotFound(func(w http.ResponseWriter, _ *http.Request) { sfaError(w, http.StatusNotFound, "Not Found") })
	api.MethodNotAllowed(func(w http.ResponseWriter, _ *http.Request) {
		sfaError(w, http.StatusMethodNotAllowed, "Method Not Allowed")
	})
	api.Route("/api/{version}", func(v chi.Router) {
		v.Use(s.authenticate)
		v.Get("/orders.json", s.listOrders)
		v.Post("/orders.json", s.createOrder)
		v.Get("/orders/count.json", s.countOrders)
		v.Get("/orders/{id}.json", s.getOrder)
		v.Get("/orders/{id}/fulfillment_orders.json", s.fulfillmentOrders)
		v.Post("/fulfillments.json", s.createFulfillment)
		v.Post("/fulfillments/{id}/update_tracking.json", s.updateTracking)
		v.Post("/fulfillments/{id}/cancel.json", s.cancelFulfillment)
		v.Get("/locations.json", s.listLocations)
		v.Get("/webhooks.json", s.listWebhooks)
		v.Post("/webhooks.json", s.createWebhook)
		v.Get("/webhooks/count.json", s.countWebhooks)
		v.Get("/webhooks/{id}.json", s.getWebhook)
		v.Delete("/webhooks/{id}.json", s.deleteWebhook)
	})
	mountStorefrontAOAuth(api) // storefront_a_oauth.go
	r.Mount(prefix+"/admin", api)
	r.Post(prefix+"/_sandbox/orders", s.sandboxOrder) // webhook_delivery.go
}

// sfaError writes the platform's error body {"errors": "..."}.
func sfaError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"errors": msg})
}

type sfaShopKey struct{}

func (s *sfaSandbox) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !sfaVersionRE.MatchString(chi.URLParam(r, "version")) {
			sfaError(w, http.StatusNotFound, "Not Found")
			return
		}
		token := strings.TrimSpace(r.Header.Get(sfaTokenHeader))
		if token == "" || token == FailValue {
			sfaError(w, http.StatusUnauthorized, "[API] Invalid API key or access token (unrecognized login or wrong password)")
			return
		}
		domain := strings.ToLower(strings.TrimSpace(r.Header.Get(sfaShopHeader)))
		if domain == "" {
			domain = strings.ToLower(r.Host)
		}
		if strings.HasPrefix(domain, FailValue+".") || domain == FailValue {
			sfaError(w, http.StatusServiceUnavailable, "Service Unavailable")
			return
		}
		s.mu.Lock()
		shop := s.shop(domain)
		now := s.now()
		shop.calls++
		limited := token == RateLimitValue && shop.calls%2 == 1
		used := shop.leak(now)
		s.mu.Unlock()
		if limited {
			w.Header().Set("Retry-After", "1.0")
			w.Header().Set(sfaCallLimitHeader, fmt.Sprintf("%d/%d", sfaBucket, sfaBucket))
			sfaError(w, http.StatusTooManyRequests, "Exceeded 2 calls per second for api client. Reduce request rates to resume uninterrupted service.")
			return
		}
		// The sandbox throttles only on demand, so it never reports a full
		// bucket otherwise (a client would rightly hold off).
		w.Header().Set(sfaCallLimitHeader, fmt.Sprintf("%d/%d", min(used, sfaBucket-1), sfaBucket))
		r.Header.Set(sfaShopHeader, domain)
		next.ServeHTTP(w, r)
	})
}

// leak adds this call to the shop's leaky bucket and returns its level.
func (sh *sfaShop) leak(now time.Time) int {
	if !sh.bucketAt.IsZero() {
		sh.bucket = math.Max(0, sh.bucket-now.Sub(sh.bucketAt).Seconds()*sfaLeakPerSecond)
	}
	sh.bucketAt = now
	sh.bucket = math.Min(sfaBucket, sh.bucket+1)
	return int(math.Ceil(sh.bucket))
}

// shop returns the shop of a domain, building it on first use. s.mu held.
func (s *sfaSandbox) shop(domain string) *sfaShop {
	return s.shops.get(domain, func() *sfaShop {
		orders := generateOrders("storefront_a", domain, StoreOrderCount(domain))
		sh := &sfaShop{domain: domain, orders: orders, byID: make(map[int64]int, len(orders))}
		for i, o := range orders {
			sh.byID[o.ID] = i
		}
		seed := rng{s: storeSeed("storefront_a/shop", domain)}
		sh.shopID = 500_000_000 + int64(seed.intn(400_000_000))
		sh.nextHook = 6_000_000_000 + int64(seed.intn(1_000_000_000))
		created := ts(time.Date(2025, time.October, 1, 9, 0, 0, 0, time.UTC))
		pl := places()
		nLoc := 2 + seed.intn(2)
		for i := 0; i < nLoc; i++ {
			p := pl[(seed.intn(len(pl))+i)%len(pl)]
			id := 20_000_000 + int64(seed.intn(900_000_000))
			sh.locations = append(sh.locations, sfaLocation{
				ID: id, Name: fmt.Sprintf("%s Warehouse", p.city), Address1: fmt.Sprintf("%d %s", 100+seed.intn(800), pick(&seed, streets())),
				City: p.city, Zip: p.zip, Province: p.province, Country: p.countryCode, CreatedAt: created, UpdatedAt: created,
				CountryCode: p.countryCode, CountryName: p.country, ProvinceCode: p.provinceCode, Active: i < 2,
				AdminGraphqlAPIID: fmt.Sprintf("gid://shopify/Location/%d", id), LocalizedCountryName: p.country, LocalizedProvinceName: p.province,
			})
		}
		return sh
	})
}

func (s *sfaSandbox) shopOf(r *http.Request) *sfaShop {
	return s.shop(r.Header.Get(sfaShopHeader))
}

// sfaFilter is the order filter of a list; it travels inside page_info.
type sfaFilter struct {
	Status            string  `json:"s,omitempty"`
	UpdatedMin        string  `json:"um,omitempty"`
	UpdatedMax        string  `json:"ux,omitempty"`
	CreatedMin        string  `json:"cm,omitempty"`
	CreatedMax        string  `json:"cx,omitempty"`
	SinceID           int64   `json:"si,omitempty"`
	IDs               []int64 `json:"ids,omitempty"`
	FinancialStatus   string  `json:"fs,omitempty"`
	FulfillmentStatus string  `json:"ff,omitempty"`
}

// sfaCursor is the content of page_info.
type sfaCursor struct {
	F sfaFilter `json:"f"`
	// A is the anchor id; D is "n" (ids after A) or "p" (ids before A).
	A int64  `json:"a"`
	D string `json:"d"`
}

func encodeSfaCursor(c sfaCursor) string {
	raw, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(raw)
}

func decodeSfaCursor(s string) (sfaCursor, error) {
	var c sfaCursor
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(raw, &c)
	}
	if err == nil && c.D != "n" && c.D != "p" {
		err = fmt.Errorf("bad direction")
	}
	return c, err
}

func parseSfaTime(v string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	return time.Parse("2006-01-02", v)
}

// filterFromQuery reads the list filters; the error names the bad field.
func filterFromQuery(q url.Values) (sfaFilter, string) {
	f := sfaFilter{Status: q.Get("status")}
	switch f.Status {
	case "":
		f.Status = "open"
	case "open", "closed", "cancelled", "any":
	default:
		return f, "status"
	}
	for _, p := range []struct {
		key string
		dst *string
	}{{"updated_at_min", &f.UpdatedMin}, {"updated_at_max", &f.UpdatedMax}, {"created_at_min", &f.CreatedMin}, {"created_at_max", &f.CreatedMax}} {
		if v := q.Get(p.key); v != "" {
			if _, err := parseSfaTime(v); err != nil {
				return f, p.key
			}
			*p.dst = v
		}
	}
	if v := q.Get("since_id"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return f, "since_id"
		}
		f.SinceID = n
	}
	if v := q.Get("ids"); v != "" {
		for _, p := range strings.Split(v, ",") {
			n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
			if err != nil {
				return f, "ids"
			}
			f.IDs = append(f.IDs, n)
		}
	}
	f.FinancialStatus = q.Get("financial_status")
	f.FulfillmentStatus = q.Get("fulfillment_status")
	return f, ""
}

func (f sfaFilter) match(o *order) bool {
	switch f.Status {
	case "open":
		if o.ClosedAt != nil || o.CancelledAt != nil {
			return false
		}
	case "closed":
		if o.ClosedAt == nil {
			return false
		}
	case "cancelled":
		if o.CancelledAt == nil {
			return false
		}
	}
	if f.SinceID != 0 && o.ID <= f.SinceID {
		return false
	}
	if len(f.IDs) > 0 {
		found := false
		for _, id := range f.IDs {
			found = found || id == o.ID
		}
		if !found {
			return false
		}
	}
	created, _ := time.Parse(time.RFC3339, o.CreatedAt)
	for _, c := range []struct {
		bound string
		t     time.Time
		min   bool
	}{{f.UpdatedMin, o.updated, true}, {f.UpdatedMax, o.updated, false}, {f.CreatedMin, created, true}, {f.CreatedMax, created, false}} {
		if c.bound == "" {
			continue
		}
		b, _ := parseSfaTime(c.bound)
		if (c.min && c.t.Before(b)) || (!c.min && c.t.After(b)) {
			return false
		}
	}
	if fs := f.FinancialStatus; fs != "" && fs != "any" {
		ok := fs == o.FinancialStatus || (fs == "unpaid" && (o.FinancialStatus == "pending" || o.FinancialStatus == "authorized" || o.FinancialStatus == "partially_paid"))
		if !ok {
			return false
		}
	}
	ful := ""
	if o.FulfillmentStatus != nil {
		ful = *o.FulfillmentStatus
	}
	switch f.FulfillmentStatus {
	case "", "any":
	case "shipped":
		return ful == "fulfilled"
	case "partial":
		return ful == "partial"
	case "unshipped":
		return ful == ""
	case "unfulfilled":
		return ful == "" || ful == "partial"
	default:
		return false
	}
	return true
}

func (s *sfaSandbox) listOrders(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := sfaDefaultLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > sfaMaxLimit {
			writeJSON(w, http.StatusBadRequest, map[string]any{"errors": map[string]any{"limit": []string{"must be between 1 and 250"}}})
			return
		}
		limit = n
	}
	var cur sfaCursor
	if pi := q.Get("page_info"); pi != "" {
		for k := range q {
			if k != "page_info" && k != "limit" && k != "fields" {
				sfaError(w, http.StatusBadRequest, "page_info cannot be sent with "+k)
				return
			}
		}
		var err error
		if cur, err = decodeSfaCursor(pi); err != nil {
			sfaError(w, http.StatusBadRequest, "Invalid page_info")
			return
		}
	} else {
		f, bad := filterFromQuery(q)
		if bad != "" {
			writeJSON(w, http.StatusBadRequest, map[string]any{"errors": map[string]any{bad: []string{"is invalid"}}})
			return
		}
		cur = sfaCursor{F: f, D: "n"}
	}

	s.mu.Lock()
	shop := s.shopOf(r)
	var matched []int64
	for i := range shop.orders {
		if cur.F.match(&shop.orders[i]) {
			matched = append(matched, shop.orders[i].ID)
		}
	}
	// matched is in id order; take the page after (or before) the anchor.
	var start, end int
	if cur.D == "n" {
		start = sort.Search(len(matched), func(i int) bool { return matched[i] > cur.A })
		end = min(start+limit, len(matched))
	} else {
		end = sort.Search(len(matched), func(i int) bool { return matched[i] >= cur.A })
		start = max(0, end-limit)
	}
	page := make([]order, 0, end-start)
	for _, id := range matched[start:end] {
		page = append(page, shop.orders[shop.byID[id]])
	}
	s.mu.Unlock()
	var links []string
	self := sfaBaseURL(r)
	if start > 0 && len(page) > 0 {
		links = append(links, fmt.Sprintf(`<%s?limit=%d&page_info=%s>; rel="previous"`, self, limit, encodeSfaCursor(sfaCursor{F: cur.F, A: page[0].ID, D: "p"})))
	}
	if end < len(matched) && len(page) > 0 {
		links = append(links, fmt.Sprintf(`<%s?limit=%d&page_info=%s>; rel="next"`, self, limit, encodeSfaCursor(sfaCursor{F: cur.F, A: page[len(page)-1].ID, D: "n"})))
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	writeJSON(w, http.StatusOK, map[string]any{"orders": withFields(page, q.Get("fields"))})
}

// sfaBaseURL is the absolute URL of the request path, as the Link header
// names it.
func sfaBaseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + r.URL.Path
}

// withFields keeps only the named top-level fields of each order ("" all).
func withFields(orders []order, fields string) any {
	if fields == "" {
		if orders == nil {
			return []order{}
		}
		return orders
	}
	keep := map[string]bool{}
	for _, f := range strings.Split(fields, ",") {
		keep[strings.TrimSpace(f)] = true
	}
	out := make([]map[string]json.RawMessage, 0, len(orders))
	for _, o := range orders {
		raw, _ := json.Marshal(o)
		var m map[string]json.RawMessage
		_ = json.Unmarshal(raw, &m)
		for k := range m {
			if !keep[k] {
				delete(m, k)
			}
		}
		out = append(out, m)
	}
	return out
}

func (s *sfaSandbox) countOrders(w http.ResponseWriter, r *http.Request) {
	f, bad := filterFromQuery(r.URL.Query())
	if bad != "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"errors": map[string]any{bad: []string{"is invalid"}}})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for i, shop := 0, s.shopOf(r); i < len(shop.orders); i++ {
		if f.match(&shop.orders[i]) {
			n++
		}
	}
	writeJSON(w, http.StatusOK, map[string]int{"count": n})
}

// orderOf returns the shop's order of the {id} URL parameter. s.mu held.
func (s *sfaSandbox) orderOf(r *http.Request) (*sfaShop, int, bool) {
	shop := s.shopOf(r)
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil {
		return shop, 0, false
	}
	i, ok := shop.byID[id]
	return shop, i, ok
}

func (s *sfaSandbox) getOrder(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	shop, i, ok := s.orderOf(r)
	var o order
	if ok {
		o = shop.orders[i]
	}
	s.mu.Unlock()
	if !ok {
		sfaError(w, http.StatusNotFound, "Not Found")
		return
	}
	list, _ := withFields([]order{o}, r.URL.Query().Get("fields")).([]map[string]json.RawMessage)
	if list != nil {
		writeJSON(w, http.StatusOK, map[string]any{"order": list[0]})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"order": o})
}

// Fulfillment orders: one per order, id = order id*10+5, its lines
// id = line item id*10+4, assigned to the shop's first location.
type sfaFulfillmentOrder struct {
	ID                 int64            `json:"id"`
	ShopID             int64            `json:"shop_id"`
	OrderID            int64            `json:"order_id"`
	AssignedLocationID int64            `json:"assigned_location_id"`
	RequestStatus      string           `json:"request_status"`
	Status             string           `json:"status"`
	SupportedActions   []string         `json:"supported_actions"`
	Destination        map[string]any   `json:"destination"`
	LineItems          []sfaFOLine      `json:"line_items"`
	FulfillAt          *string          `json:"fulfill_at"`
	FulfillBy          *string          `json:"fulfill_by"`
	InternationalDuty  *string          `json:"international_duties"`
	FulfillmentHolds   []map[string]any `json:"fulfillment_holds"`
	CreatedAt          string           `json:"created_at"`
	UpdatedAt          string           `json:"updated_at"`
	DeliveryMethod     *string          `json:"delivery_method"`
	AssignedLocation   map[string]any   `json:"assigned_location"`
	MerchantRequests   []map[string]any `json:"merchant_requests"`
}

type sfaFOLine struct {
	ID                  int64 `json:"id"`
	ShopID              int64 `json:"shop_id"`
	FulfillmentOrderID  int64 `json:"fulfillment_order_id"`
	Quantity            int   `json:"quantity"`
	LineItemID          int64 `json:"line_item_id"`
	InventoryItemID     int64 `json:"inventory_item_id"`
	FulfillableQuantity int   `json:"fulfillable_quantity"`
	VariantID           int64 `json:"variant_id"`
}

func (sh *sfaShop) fulfillmentOrder(o *order) sfaFulfillmentOrder {
	loc := sh.locations[0]
	foID := o.ID*10 + 5
	fo := sfaFulfillmentOrder{
		ID: foID, ShopID: sh.shopID, OrderID: o.ID, AssignedLocationID: loc.ID, RequestStatus: "unsubmitted",
		SupportedActions: []string{}, FulfillmentHolds: []map[string]any{}, MerchantRequests: []map[string]any{},
		CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt,
		Destination: map[string]any{
			"id": o.ID*10 + 6, "address1": o.ShippingAddress.Address1, "address2": o.ShippingAddress.Address2,
			"city": o.ShippingAddress.City, "company": o.ShippingAddress.Company, "country": o.ShippingAddress.Country,
			"email": o.Email, "first_name": o.ShippingAddress.FirstName, "last_name": o.ShippingAddress.LastName,
			"phone": o.ShippingAddress.Phone, "province": o.ShippingAddress.Province, "zip": o.ShippingAddress.Zip,
		},
		AssignedLocation: map[string]any{
			"address1": loc.Address1, "address2": nil, "city": loc.City, "country_code": loc.CountryCode,
			"location_id": loc.ID, "name": loc.Name, "phone": nil, "province": loc.Province, "zip": loc.Zip,
		},
	}
	open, done := 0, 0
	for _, li := range o.LineItems {
		fo.LineItems = append(fo.LineItems, sfaFOLine{
			ID: li.ID*10 + 4, ShopID: sh.shopID, FulfillmentOrderID: foID, Quantity: li.Quantity, LineItemID: li.ID,
			InventoryItemID: li.VariantID + 1, FulfillableQuantity: li.FulfillableQuantity, VariantID: li.VariantID,
		})
		open += li.FulfillableQuantity
		done += li.Quantity - li.FulfillableQuantity
	}
	switch {
	case o.CancelledAt != nil:
		fo.Status = "cancelled"
	case open == 0 || o.ClosedAt != nil:
		fo.Status = "closed"
	case done > 0:
		fo.Status, fo.SupportedActions = "in_progress", []string{"create_fulfillment", "move"}
	default:
		fo.Status, fo.SupportedActions = "open", []string{"create_fulfillment", "move", "hold"}
	}
	return fo
}

func (s *sfaSandbox) fulfillmentOrders(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	shop, i, ok := s.orderOf(r)
	if !ok {
		sfaError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"fulfillment_orders": []sfaFulfillmentOrder{shop.fulfillmentOrder(&shop.orders[i])}})
}

type sfaFulfillmentRequest struct {
	Fulfillment *struct {
		LineItemsByFO []struct {
			FulfillmentOrderID int64 `json:"fulfillment_order_id"`
			Lines              []struct {
				ID       int64 `json:"id"`
				Quantity int   `json:"quantity"`
			} `json:"fulfillment_order_line_items"`
		} `json:"line_items_by_fulfillment_order"`
		TrackingInfo struct {
			Number  string `json:"number"`
			Company string `json:"company"`
			URL     string `json:"url"`
		} `json:"tracking_info"`
		NotifyCustomer bool   `json:"notify_customer"`
		Message        string `json:"message"`
	} `json:"fulfillment"`
}

// createFulfillment records a fulfillment over fulfillment order lines:
// the lines' fulfillable quantities drop, the order's fulfillment_status
// and updated_at change, and the order lists the fulfillment from then on.
func (s *sfaSandbox) createFulfillment(w http.ResponseWriter, r *http.Request) {
	var req sfaFulfillmentRequest
	if err := readBody(w, r, &req); err != nil || req.Fulfillment == nil || len(req.Fulfillment.LineItemsByFO) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]any{"errors": map[string]any{"fulfillment": "Required parameter missing or invalid"}})
		return
	}
	if t := req.Fulfillment.TrackingInfo; t.Company != "" && t.URL == "" && !knownName(sfaTrackingCompanies, t.Company, false) {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"errors": map[string]any{
			"tracking_company": []string{fmt.Sprintf("%q is not a tracking company the platform knows; give a tracking url with it", t.Company)}}})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	shop := s.shopOf(r)

	idx := -1
	take := map[int64]int{} // line item id -> quantity
	for _, g := range req.Fulfillment.LineItemsByFO {
		i, ok := shop.byID[(g.FulfillmentOrderID-5)/10]
		if !ok || g.FulfillmentOrderID%10 != 5 || (idx >= 0 && i != idx) {
			sfaError(w, http.StatusNotFound, "Not Found")
			return
		}
		idx = i
		fo := shop.fulfillmentOrder(&shop.orders[i])
		if fo.Status != "open" && fo.Status != "in_progress" {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"errors": []string{
				fmt.Sprintf("Fulfillment order %d has an unfulfillable status= %s.", fo.ID, fo.Status)}})
			return
		}
		if len(g.Lines) == 0 {
			for _, l := range fo.LineItems {
				take[l.LineItemID] += l.FulfillableQuantity
			}
			continue
		}
		for _, want := range g.Lines {
			found := false
			for _, l := range fo.LineItems {
				if l.ID == want.ID {
					found = true
					take[l.LineItemID] += want.Quantity
					if want.Quantity < 1 || take[l.LineItemID] > l.FulfillableQuantity {
						writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"errors": []string{"Invalid fulfillment order line item quantity requested."}})
						return
					}
				}
			}
			if !found {
				sfaError(w, http.StatusNotFound, "Not Found")
				return
			}
		}
	}

	// Copy on write: pages already handed out keep their slices.
	o := shop.orders[idx]
	now := s.now().UTC()
	items := append([]lineItem(nil), o.LineItems...)
	var lines []fulfillmentLine
	open := 0
	for j := range items {
		if q := take[items[j].ID]; q > 0 {
			items[j].FulfillableQuantity -= q
			lines = append(lines, fulfillmentLine{ID: items[j].ID, SKU: items[j].SKU, Quantity: q})
			st := "partial"
			if items[j].FulfillableQuantity == 0 {
				st = "fulfilled"
			}
			items[j].FulfillmentStatus = strPtr(st)
		}
		open += items[j].FulfillableQuantity
	}
	if len(lines) == 0 {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"errors": []string{"Invalid fulfillment order line item quantity requested."}})
		return
	}
	t := req.Fulfillment.TrackingInfo
	f := fulfillment{
		ID: o.ID*1000 + 100 + int64(len(o.Fulfillments)), OrderID: o.ID, Name: fmt.Sprintf("%s.%d", o.Name, len(o.Fulfillments)+1),
		Status: "success", TrackingCompany: t.Company, TrackingNumbers: []string{}, TrackingURL: t.URL,
		CreatedAt: ts(now), UpdatedAt: ts(now), LineItems: lines,
	}
	if t.Number != "" {
		f.TrackingNumber, f.TrackingNumbers = t.Number, []string{t.Number}
	}
	o.LineItems = items
	o.Fulfillments = append(append([]fulfillment(nil), o.Fulfillments...), f)
	status := "partial"
	if open == 0 {
		status = "fulfilled"
	}
	o.FulfillmentStatus = strPtr(status)
	o.updated = now
	o.UpdatedAt = ts(now)
	shop.orders[idx] = o

	trackingNumber := any(nil)
	if t.Number != "" {
		trackingNumber = t.Number
	}
	writeJSON(w, http.StatusCreated, map[string]any{"fulfillment": map[string]any{
		"id": f.ID, "order_id": o.ID, "status": f.Status, "created_at": f.CreatedAt, "updated_at": f.UpdatedAt,
		"service": "manual", "tracking_company": t.Company, "shipment_status": nil, "location_id": shop.locations[0].ID,
		"line_items": lines, "tracking_number": trackingNumber, "tracking_numbers": f.TrackingNumbers,
		"tracking_url": t.URL, "tracking_urls": nonEmptyList(t.URL), "receipt": map[string]any{}, "name": f.Name,
		"admin_graphql_api_id": fmt.Sprintf("gid://shopify/Fulfillment/%d", f.ID),
	}})
}

// updateTracking changes a fulfillment's tracking (number, company, url),
// refusing a company the platform does not know without a url as
// fulfillments.json does; 404 for a fulfillment the shop does not have,
// 422 for a cancelled one.
func (s *sfaSandbox) updateTracking(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Fulfillment *struct {
			NotifyCustomer bool `json:"notify_customer"`
			TrackingInfo   *struct {
				Number  string `json:"number"`
				Company string `json:"company"`
				URL     string `json:"url"`
			} `json:"tracking_info"`
		} `json:"fulfillment"`
	}
	if err := readBody(w, r, &req); err != nil || req.Fulfillment == nil || req.Fulfillment.TrackingInfo == nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"errors": map[string]any{"fulfillment": "Required parameter missing or invalid"}})
		return
	}
	t := *req.Fulfillment.TrackingInfo
	if t.Company != "" && t.URL == "" && !knownName(sfaTrackingCompanies, t.Company, false) {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"errors": map[string]any{
			"tracking_company": []string{fmt.Sprintf("%q is not a tracking company the platform knows; give a tracking url with it", t.Company)}}})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	shop := s.shopOf(r)
	idx, j, ok := shop.fulfillmentOf(r)
	if !ok {
		sfaError(w, http.StatusNotFound, "Not Found")
		return
	}
	o := shop.orders[idx]
	if o.Fulfillments[j].Status == "cancelled" {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"errors": []string{"Cannot update tracking info of a cancelled fulfillment."}})
		return
	}
	fs := append([]fulfillment(nil), o.Fulfillments...)
	now := s.now().UTC()
	fs[j].TrackingCompany, fs[j].TrackingURL, fs[j].UpdatedAt = t.Company, t.URL, ts(now)
	fs[j].TrackingNumber, fs[j].TrackingNumbers = t.Number, []string{}
	if t.Number != "" {
		fs[j].TrackingNumbers = []string{t.Number}
	}
	o.Fulfillments = fs
	o.updated, o.UpdatedAt = now, ts(now)
	shop.orders[idx] = o
	writeJSON(w, http.StatusOK, map[string]any{"fulfillment": sfaFulfillmentBody(o, fs[j], shop.locations[0].ID)})
}

// fulfillmentOf finds the fulfillment of the path's {id}: its order's
// index and its position in the order's fulfillments.
func (sh *sfaShop) fulfillmentOf(r *http.Request) (idx, j int, ok bool) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil {
		return 0, 0, false
	}
	idx, ok = sh.byID[(id-100)/1000]
	if !ok {
		return 0, 0, false
	}
	for j, f := range sh.orders[idx].Fulfillments {
		if f.ID == id {
			return idx, j, true
		}
	}
	return 0, 0, false
}

// sfaFulfillmentBody is a fulfillment as update_tracking and cancel answer it.
func sfaFulfillmentBody(o order, f fulfillment, locationID int64) map[string]any {
	return map[string]any{
		"id": f.ID, "order_id": o.ID, "status": f.Status, "created_at": f.CreatedAt, "updated_at": f.UpdatedAt,
		"service": "manual", "tracking_company": f.TrackingCompany, "shipment_status": nil, "location_id": locationID,
		"line_items": f.LineItems, "tracking_number": f.TrackingNumber, "tracking_numbers": f.TrackingNumbers,
		"tracking_url": f.TrackingURL, "tracking_urls": nonEmptyList(f.TrackingURL), "name": f.Name,
	}
}

// cancelFulfillment cancels a fulfillment (POST fulfillments/{id}/cancel.json):
// its lines can be fulfilled again, the order's fulfillment_status follows;
// a cancelled fulfillment keeps its tracking but can no longer be updated
// or cancelled again (422).
func (s *sfaSandbox) cancelFulfillment(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	shop := s.shopOf(r)
	idx, j, ok := shop.fulfillmentOf(r)
	if !ok {
		sfaError(w, http.StatusNotFound, "Not Found")
		return
	}
	o := shop.orders[idx]
	if o.Fulfillments[j].Status == "cancelled" {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"errors": []string{"Fulfillment is already cancelled."}})
		return
	}
	now := s.now().UTC()
	fs := append([]fulfillment(nil), o.Fulfillments...)
	fs[j].Status, fs[j].UpdatedAt = "cancelled", ts(now)
	items := append([]lineItem(nil), o.LineItems...)
	open, total := 0, 0
	for k := range items {
		for _, l := range fs[j].LineItems {
			if l.ID == items[k].ID {
				items[k].FulfillableQuantity += l.Quantity
				items[k].FulfillmentStatus = strPtr("partial")
				if items[k].FulfillableQuantity >= items[k].Quantity {
					items[k].FulfillmentStatus = nil
				}
			}
		}
		open += items[k].FulfillableQuantity
		total += items[k].Quantity
	}
	switch {
	case open >= total:
		o.FulfillmentStatus = nil
	case open == 0:
		o.FulfillmentStatus = strPtr("fulfilled")
	default:
		o.FulfillmentStatus = strPtr("partial")
	}
	o.LineItems, o.Fulfillments = items, fs
	o.updated, o.UpdatedAt = now, ts(now)
	shop.orders[idx] = o
	writeJSON(w, http.StatusOK, map[string]any{"fulfillment": sfaFulfillmentBody(o, fs[j], shop.locations[0].ID)})
}

func nonEmptyList(s string) []string {
	if s == "" {
		return []string{}
	}
	return []string{s}
}

func (s *sfaSandbox) listLocations(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"locations": s.shopOf(r).locations})
}

func (sh *sfaShop) matchingWebhooks(q url.Values) []sfaWebhook {
	out := []sfaWebhook{}
	for _, h := range sh.webhooks {
		if (q.Get("topic") == "" || q.Get("topic") == h.Topic) && (q.Get("address") == "" || q.Get("address") == h.Address) {
			out = append(out, h)
		}
	}
	return out
}

func (s *sfaSandbox) listWebhooks(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"webhooks": s.shopOf(r).matchingWebhooks(r.URL.Query())})
}

func (s *sfaSandbox) countWebhooks(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]int{"count": len(s.shopOf(r).matchingWebhooks(r.URL.Query()))})
}

func (s *sfaSandbox) createWebhook(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Webhook *struct {
			Topic   string   `json:"topic"`
			Address string   `json:"address"`
			Format  string   `json:"format"`
			Fields  []string `json:"fields"`
		} `json:"webhook"`
	}
	if err := readBody(w, r, &req); err != nil || req.Webhook == nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"errors": map[string]any{"webhook": "Required parameter missing or invalid"}})
		return
	}
	h := req.Webhook
	known := false
	for _, t := range sfaTopics() {
		known = known || t == h.Topic
	}
	fieldErrs := map[string][]string{}
	if !known {
		fieldErrs["topic"] = []string{"Invalid topic specified: " + h.Topic}
	}
	if u, err := url.Parse(h.Address); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		fieldErrs["address"] = []string{"is invalid"}
	}
	if h.Format == "" {
		h.Format = "json"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	shop := s.shopOf(r)
	for _, ex := range shop.webhooks {
		if ex.Topic == h.Topic && ex.Address == h.Address {
			fieldErrs["address"] = []string{"for this topic has already been taken"}
		}
	}
	if len(fieldErrs) > 0 {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"errors": fieldErrs})
		return
	}
	now := ts(s.now())
	fields := h.Fields
	if fields == nil {
		fields = []string{}
	}
	shop.nextHook++
	hook := sfaWebhook{ID: shop.nextHook, Address: h.Address, Topic: h.Topic, CreatedAt: now, UpdatedAt: now, Format: h.Format,
		Fields: fields, MetafieldNamespaces: []string{}, APIVersion: chi.URLParam(r, "version"), PrivateMetafieldNamespaces: []string{}}
	shop.webhooks = append(shop.webhooks, hook)
	writeJSON(w, http.StatusCreated, map[string]any{"webhook": hook})
}

func (s *sfaSandbox) webhookIndex(r *http.Request) (*sfaShop, int) {
	shop := s.shopOf(r)
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil {
		return shop, -1
	}
	for i, h := range shop.webhooks {
		if h.ID == id {
			return shop, i
		}
	}
	return shop, -1
}

func (s *sfaSandbox) getWebhook(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	shop, i := s.webhookIndex(r)
	if i < 0 {
		sfaError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"webhook": shop.webhooks[i]})
}

func (s *sfaSandbox) deleteWebhook(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	shop, i := s.webhookIndex(r)
	if i < 0 {
		sfaError(w, http.StatusNotFound, "Not Found")
		return
	}
	shop.webhooks = append(shop.webhooks[:i:i], shop.webhooks[i+1:]...)
	writeJSON(w, http.StatusOK, map[string]any{})
}
