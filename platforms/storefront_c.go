package platforms

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// storefront_c speaks the storefront's REST Management API as
// vendors/platforms/storefront_c/README.md documents it:
//
//	https://api.bigcommerce.com/stores/{storeHash}/v2/orders (V2 orders)
//	https://api.bigcommerce.com/stores/{storeHash}/v3/...   (hooks, inventory locations)
//	X-Auth-Token: {accessToken}
//
// V2 lists are bare JSON arrays paged by page/limit (a short page is the
// last; an empty list may be 204 No Content); an order's products and
// shipping addresses are sub-resources, read per order. Orders are read
// with min_date_modified and sort=id:asc (stable while orders change).
// Fulfillment creates a shipment (order_address_id, items, tracking) unless
// one of the order's shipments already has the tracking number. A 429
// says how long to wait in X-Rate-Limit-Time-Reset-Ms (and maybe
// X-Retry-After, seconds; the longer wins).
//
// With a base URL (FOS_STOREFRONT_C_URL, CONTRACT 8b) the base replaces
// https://api.bigcommerce.com; the /stores/{storeHash}/... paths stay.

// StorefrontCDefaultURL is the storefront's API host.
const StorefrontCDefaultURL = "https://api.bigcommerce.com"

// Storefront C wire constants.
const (
	StorefrontCTokenHeader = "X-Auth-Token"
	storefrontCMaxLimit    = 250
	// storefrontCPageSize: every order costs two more calls (products,
	// addresses), so a page of 50 (101 calls) fits the smallest plan's
	// quota of 150 calls per 30 s window.
	storefrontCPageSize = 50
	// storefrontCParallel bounds the sub-resource reads of one page.
	storefrontCParallel = 4
	// storefrontCMaxSleep: a used-up quota is waited out inside the call
	// (one 30 s window at most), so a page is never cut off half-read and
	// re-read from the start.
	storefrontCMaxSleep = 30 * time.Second
)

var storeHashRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// StorefrontC is the storefront_c connector. It implements Connector,
// FulfillmentPusher, LocationLister and WebhookRegistrar.
type StorefrontC struct {
	baseURL string
	client  *http.Client
	opts    connOptions
	pacer   pacer
}

// NewStorefrontC returns the storefront_c connector. baseURL replaces the
// API host (FOS_STOREFRONT_C_URL); "" is StorefrontCDefaultURL.
func NewStorefrontC(baseURL string, client *http.Client, opts ...Option) *StorefrontC {
	base := strings.TrimRight(strings.TrimSpace(baseURL), "/")
	if base == "" {
		base = StorefrontCDefaultURL
	}
	return &StorefrontC{baseURL: base, client: timedClient(client), opts: applyOptions(storefrontCPageSize, storefrontCMaxLimit, opts)}
}

type storefrontCStore struct {
	hash   string
	root   string // .../stores/{hash}
	header http.Header
}

func (c *StorefrontC) store(b Bridge) (storefrontCStore, error) {
	hash := configString(b.Config, "storeHash")
	if !storeHashRE.MatchString(hash) {
		return storefrontCStore{}, invalidField("storeHash", "bridge config is missing storeHash or it is malformed")
	}
	token := configString(b.Config, "accessToken")
	if token == "" {
		return storefrontCStore{}, invalidField("accessToken", "bridge config is missing accessToken")
	}
	h := http.Header{}
	h.Set(StorefrontCTokenHeader, token)
	return storefrontCStore{hash: strings.ToLower(hash), root: c.baseURL + "/stores/" + hash, header: h}, nil
}

func (c *StorefrontC) call(ctx context.Context, s storefrontCStore, method, path string, q url.Values, body any, orderLookup bool) (*wireResponse, error) {
	return wireCall{
		method: method, url: joinURL(s.root, path, q), header: s.header, body: body, orderLookup: orderLookup,
		pace: pacing{pacer: &c.pacer, key: s.hash, retryAfter: storefrontCRetryAfter, exhausted: storefrontCQuotaUsed,
			maxSleep: storefrontCMaxSleep},
	}.do(ctx, c.client)
}

// storefrontCQuotaUsed: X-Rate-Limit-Requests-Left 0 holds the store's
// calls until the window resets (X-Rate-Limit-Time-Reset-Ms).
func storefrontCQuotaUsed(h http.Header) time.Duration {
	if strings.TrimSpace(h.Get("X-Rate-Limit-Requests-Left")) != "0" {
		return 0
	}
	return storefrontCRetryAfter(h)
}

func storefrontCRetryAfter(h http.Header) time.Duration {
	wait := secondsHeader(h, "X-Retry-After")
	if ms, err := strconv.ParseInt(strings.TrimSpace(h.Get("X-Rate-Limit-Time-Reset-Ms")), 10, 64); err == nil && ms > 0 {
		wait = max(wait, time.Duration(ms)*time.Millisecond)
	}
	return wait
}

// getList reads one page of a V2 list (a bare array; 204 or an empty body
// is an empty list).
func (c *StorefrontC) getList(ctx context.Context, s storefrontCStore, path string, q url.Values, orderLookup bool) ([]json.RawMessage, error) {
	resp, err := c.call(ctx, s, http.MethodGet, path, q, nil, orderLookup)
	if err != nil {
		return nil, err
	}
	if resp.status == http.StatusNoContent || len(strings.TrimSpace(string(resp.body))) == 0 {
		return nil, nil
	}
	var items []json.RawMessage
	if err := decodeJSON(resp.body, &items, path+" response"); err != nil {
		return nil, err
	}
	return items, nil
}

// getAll pages through a V2 sub-resource list.
func (c *StorefrontC) getAll(ctx context.Context, s storefrontCStore, path string) ([]json.RawMessage, error) {
	var all []json.RawMessage
	for page := 1; ; page++ {
		items, err := c.getList(ctx, s, path, url.Values{"page": {strconv.Itoa(page)}, "limit": {strconv.Itoa(storefrontCMaxLimit)}}, true)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		if len(items) < storefrontCMaxLimit || page >= 1000 {
			return all, nil
		}
	}
}

// FetchOrder implements Connector: GET /v2/orders/{id} with its products
// and shipping addresses.
func (c *StorefrontC) FetchOrder(ctx context.Context, b Bridge, externalID string) (*Order, error) {
	s, err := c.store(b)
	if err != nil {
		return nil, err
	}
	externalID = strings.TrimSpace(externalID)
	if !isDigits(externalID) {
		return nil, notFoundID(externalID)
	}
	resp, err := c.call(ctx, s, http.MethodGet, "/v2/orders/"+externalID, nil, nil, true)
	if err != nil {
		return nil, err
	}
	o, err := c.complete(ctx, s, resp.body)
	if err != nil {
		return nil, err
	}
	return &o, nil
}

// complete reads an order's sub-resources and maps it.
func (c *StorefrontC) complete(ctx context.Context, s storefrontCStore, raw json.RawMessage) (Order, error) {
	var head struct {
		ID json.Number `json:"id"`
	}
	if err := json.Unmarshal(raw, &head); err != nil || !isDigits(head.ID.String()) {
		return Order{}, badResponse("order payload has no id", err)
	}
	products, err := c.getAll(ctx, s, "/v2/orders/"+head.ID.String()+"/products")
	if err != nil {
		return Order{}, err
	}
	addresses, err := c.getAll(ctx, s, "/v2/orders/"+head.ID.String()+"/shipping_addresses")
	if err != nil {
		return Order{}, err
	}
	return StorefrontCOrder(raw, products, addresses)
}

// ListOrders implements Connector: GET /v2/orders?min_date_modified=&
// sort=id:asc&page=&limit=, then each order's sub-resources (a few orders
// at a time).
func (c *StorefrontC) ListOrders(ctx context.Context, b Bridge, since time.Time, cursor string) ([]Order, string, error) {
	s, err := c.store(b)
	if err != nil {
		return nil, "", err
	}
	page, modified := 1, ""
	if cursor != "" {
		if page, modified, err = parsePageCursor(cursor, "min_date_modified"); err != nil {
			return nil, "", err
		}
	} else if !since.IsZero() {
		modified = since.UTC().Format(time.RFC3339)
	}
	q := url.Values{"sort": {"id:asc"}, "page": {strconv.Itoa(page)}, "limit": {strconv.Itoa(c.opts.pageSize)}}
	if modified != "" {
		q.Set("min_date_modified", modified)
	}
	raws, err := c.getList(ctx, s, "/v2/orders", q, false)
	if err != nil {
		return nil, "", err
	}
	orders := make([]Order, len(raws))
	errs := make([]error, len(raws))
	sem := make(chan struct{}, storefrontCParallel)
	var wg sync.WaitGroup
	for i, raw := range raws {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			orders[i], errs[i] = c.complete(ctx, s, raw)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, "", err
		}
	}
	next := ""
	if len(raws) == c.opts.pageSize {
		next = pageCursor(page+1, "min_date_modified", modified)
	}
	return orders, next, nil
}

type storefrontCAddress struct {
	ID         json.Number `json:"id"`
	FirstName  string      `json:"first_name"`
	LastName   string      `json:"last_name"`
	Company    string      `json:"company"`
	Street1    string      `json:"street_1"`
	Street2    string      `json:"street_2"`
	City       string      `json:"city"`
	State      string      `json:"state"`
	Zip        string      `json:"zip"`
	Country    string      `json:"country"`
	CountryISO string      `json:"country_iso2"`
	Phone      string      `json:"phone"`
	Email      string      `json:"email"`
}

func (a *storefrontCAddress) normalize() *Address {
	if a == nil {
		return nil
	}
	return &Address{
		Name: strings.TrimSpace(a.FirstName + " " + a.LastName), Company: a.Company, Address1: a.Street1, Address2: a.Street2,
		City: a.City, Province: a.State, Country: a.Country, CountryCode: a.CountryISO, Zip: a.Zip, Phone: a.Phone,
	}
}

type storefrontCProduct struct {
	ID               json.Number `json:"id"`
	OrderAddressID   json.Number `json:"order_address_id"`
	Name             string      `json:"name"`
	SKU              string      `json:"sku"`
	Type             string      `json:"type"`
	PriceExTax       flexFloat   `json:"price_ex_tax"`
	PriceIncTax      flexFloat   `json:"price_inc_tax"`
	PriceTax         flexFloat   `json:"price_tax"`
	TotalExTax       flexFloat   `json:"total_ex_tax"`
	TotalIncTax      flexFloat   `json:"total_inc_tax"`
	Quantity         int         `json:"quantity"`
	QuantityShipped  int         `json:"quantity_shipped"`
	QuantityRefunded int         `json:"quantity_refunded"`
}

// StorefrontCOrder maps a V2 order with its products and shipping
// addresses onto Order. SourceData is the order object with the products
// and shipping_addresses links replaced by the lists read.
func StorefrontCOrder(raw json.RawMessage, products, addresses []json.RawMessage) (Order, error) {
	var w struct {
		ID                 json.Number        `json:"id"`
		DateCreated        string             `json:"date_created"`
		DateModified       string             `json:"date_modified"`
		StatusID           int                `json:"status_id"`
		SubtotalExTax      flexFloat          `json:"subtotal_ex_tax"`
		SubtotalIncTax     flexFloat          `json:"subtotal_inc_tax"`
		ShippingCostExTax  flexFloat          `json:"shipping_cost_ex_tax"`
		ShippingCostIncTax flexFloat          `json:"shipping_cost_inc_tax"`
		TotalIncTax        flexFloat          `json:"total_inc_tax"`
		TotalTax           flexFloat          `json:"total_tax"`
		DiscountAmount     flexFloat          `json:"discount_amount"`
		TaxInclusive       bool               `json:"is_tax_inclusive_pricing"`
		ItemsTotal         int                `json:"items_total"`
		ItemsShipped       int                `json:"items_shipped"`
		PaymentStatus      string             `json:"payment_status"`
		CurrencyCode       string             `json:"currency_code"`
		StaffNotes         string             `json:"staff_notes"`
		CustomerMessage    string             `json:"customer_message"`
		BillingAddress     storefrontCAddress `json:"billing_address"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return Order{}, badResponse("order payload does not parse", err)
	}
	if w.ID.String() == "" {
		return Order{}, badResponse("order payload has no id", nil)
	}
	source, err := rawObject(raw)
	if err != nil {
		return Order{}, err
	}
	o := Order{
		ExternalID:     w.ID.String(),
		OrderNumber:    w.ID.String(),
		Currency:       strings.ToUpper(firstNonEmpty(w.CurrencyCode, "USD")),
		BillingAddress: w.BillingAddress.normalize(),
		LineItems:      []LineItem{},
		Tags:           []string{},
		Note:           firstNonEmpty(w.CustomerMessage, w.StaffNotes),
		OrderedAt:      parseRFC2822(w.DateCreated),
		UpdatedAt:      parseRFC2822(w.DateModified),
		SourceData:     source,
		Customer: Customer{Email: w.BillingAddress.Email, FirstName: w.BillingAddress.FirstName,
			LastName: w.BillingAddress.LastName, Phone: w.BillingAddress.Phone},
	}
	productList := make([]any, 0, len(products))
	for _, p := range products {
		var pw storefrontCProduct
		if err := json.Unmarshal(p, &pw); err != nil {
			return Order{}, badResponse("order product does not parse", err)
		}
		pm, err := rawObject(p)
		if err != nil {
			return Order{}, err
		}
		productList = append(productList, pm)
		unit, total := pw.PriceExTax, pw.TotalExTax
		if w.TaxInclusive {
			unit, total = pw.PriceIncTax, pw.TotalIncTax
		}
		o.LineItems = append(o.LineItems, LineItem{
			ExternalID: pw.ID.String(), SKU: pw.SKU, Name: pw.Name, Quantity: pw.Quantity,
			UnitPrice: round2(float64(unit)), TotalPrice: round2(float64(total)),
			RequiresShipping: pw.Type != "digital", Taxable: pw.PriceTax != 0,
		})
	}
	addrList := make([]any, 0, len(addresses))
	for i, a := range addresses {
		var aw storefrontCAddress
		if err := json.Unmarshal(a, &aw); err != nil {
			return Order{}, badResponse("shipping address does not parse", err)
		}
		am, err := rawObject(a)
		if err != nil {
			return Order{}, err
		}
		addrList = append(addrList, am)
		if i == 0 {
			o.ShippingAddress = aw.normalize()
		}
	}
	source["products"], source["shipping_addresses"] = productList, addrList

	subtotal, shipping := w.SubtotalExTax, w.ShippingCostExTax
	if w.TaxInclusive {
		subtotal, shipping = w.SubtotalIncTax, w.ShippingCostIncTax
	}
	o.Totals = Totals{
		Subtotal: round2(float64(subtotal)), Discount: round2(float64(w.DiscountAmount)), Shipping: round2(float64(shipping)),
		Tax: round2(float64(w.TotalTax)), Total: round2(float64(w.TotalIncTax)),
	}
	if w.TaxInclusive {
		o.Totals.Tax = 0 // already inside the prices
	}
	o.Status, o.PaymentStatus, o.FulfillmentStatus = storefrontCStatuses(w.StatusID, w.PaymentStatus, w.ItemsTotal, w.ItemsShipped)
	return o, nil
}

func parseRFC2822(s string) time.Time {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}
	}
	for _, layout := range []string{time.RFC1123Z, time.RFC1123, time.RFC3339Nano} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

// storefrontCStatuses maps status_id (0 Incomplete, 1 Pending, 2 Shipped,
// 3 Partially Shipped, 4 Refunded, 5 Cancelled, 6 Declined, 7 Awaiting
// Payment, 8 Awaiting Pickup, 9 Awaiting Shipment, 10 Completed, 11
// Awaiting Fulfillment, 12 Manual Verification Required, 13 Disputed, 14
// Partially Refunded), payment_status and the shipped item counts onto
// the normalized statuses.
func storefrontCStatuses(statusID int, payment string, itemsTotal, itemsShipped int) (string, string, string) {
	fulfillment := FulfillmentUnfulfilled
	switch {
	case statusID == 2 || statusID == 10 || (itemsTotal > 0 && itemsShipped >= itemsTotal):
		fulfillment = FulfillmentFulfilled
	case statusID == 3 || itemsShipped > 0:
		fulfillment = FulfillmentPartial
	}
	var pay string
	switch strings.ToLower(strings.TrimSpace(payment)) {
	case "authorized", "authorize":
		pay = PaymentAuthorized
	case "captured", "paid", "partially refunded", "partially_refunded":
		pay = PaymentPaid
	case "refunded":
		pay = PaymentRefunded
	case "void", "voided":
		pay = PaymentVoided
	default:
		pay = PaymentPending
	}
	var status string
	switch statusID {
	case 4:
		status, pay = StatusRefunded, PaymentRefunded
	case 5, 6:
		status = StatusCancelled
	case 2:
		status = StatusShipped
	case 10:
		status = StatusDelivered
	case 3, 8, 9:
		status = StatusProcessing
	case 12, 13:
		status = StatusOnHold
	case 11, 14:
		status = StatusConfirmed
	default: // 0, 1, 7
		status = StatusPending
	}
	if statusID == 14 && pay == PaymentPending {
		pay = PaymentPaid
	}
	return status, pay, fulfillment
}

// storefrontCProviders are the shipping_provider values a shipment takes.
func storefrontCProviders() []string {
	return []string{"auspost", "canadapost", "endicia", "usps", "fedex", "royalmail", "ups", "upsready", "shipperhq"}
}

// storefrontCCarrier splits a carrier name (CarrierName) into a shipment's
// shipping_provider and tracking_carrier: one of the providers (or
// carrier_{id}) goes as shipping_provider with tracking_carrier ""; any
// other name is an AfterShip courier slug in tracking_carrier with
// shipping_provider "".
func storefrontCCarrier(name string) (provider, trackingCarrier string) {
	name = strings.ToLower(strings.TrimSpace(name))
	if id, ok := strings.CutPrefix(name, "carrier_"); ok && isDigits(id) {
		return name, ""
	}
	for _, p := range storefrontCProviders() {
		if p == name {
			return p, ""
		}
	}
	return "", name
}

// PushFulfillment implements FulfillmentPusher: unless a shipment of the
// order already has the tracking number, it reads the order's products
// and creates one shipment per shipping address over the open quantities
// (POST /v2/orders/{id}/shipments), naming the carrier by
// storefrontCCarrier.
func (c *StorefrontC) PushFulfillment(ctx context.Context, b Bridge, f Fulfillment) (FulfillmentResult, error) {
	s, err := c.store(b)
	if err != nil {
		return FulfillmentResult{}, err
	}
	orderID := strings.TrimSpace(f.OrderExternalID)
	if !isDigits(orderID) {
		return FulfillmentResult{}, notFoundID(orderID)
	}
	if strings.TrimSpace(f.TrackingNumber) == "" {
		return FulfillmentResult{}, &Error{Code: CodeInvalidRequest, Message: "fulfillment has no tracking number"}
	}
	name, err := CarrierName(b, f.Carrier, f.Service)
	if err != nil {
		return FulfillmentResult{}, err
	}
	shipments, err := c.getAll(ctx, s, "/v2/orders/"+orderID+"/shipments")
	if err != nil {
		return FulfillmentResult{}, err
	}
	for _, raw := range shipments {
		var sh struct {
			ID             json.Number `json:"id"`
			TrackingNumber string      `json:"tracking_number"`
		}
		if json.Unmarshal(raw, &sh) == nil && strings.EqualFold(strings.TrimSpace(sh.TrackingNumber), strings.TrimSpace(f.TrackingNumber)) {
			return FulfillmentResult{ExternalID: sh.ID.String(), Created: false}, nil
		}
	}

	products, err := c.getAll(ctx, s, "/v2/orders/"+orderID+"/products")
	if err != nil {
		return FulfillmentResult{}, err
	}
	wanted := map[string]int{}
	for _, l := range f.LineItems {
		if l.Quantity > 0 {
			wanted[l.ExternalID] += l.Quantity
		}
	}
	selective := len(wanted) > 0
	var addrOrder []string
	groups := map[string][]storefrontCShipItem{}
	for _, raw := range products {
		var p storefrontCProduct
		if err := json.Unmarshal(raw, &p); err != nil {
			return FulfillmentResult{}, badResponse("order product does not parse", err)
		}
		open := p.Quantity - p.QuantityShipped - p.QuantityRefunded
		if p.Type == "digital" || open <= 0 {
			continue
		}
		q := open
		if selective {
			q = min(wanted[p.ID.String()], open)
			wanted[p.ID.String()] -= q
		}
		if q <= 0 {
			continue
		}
		addr := p.OrderAddressID.String()
		if _, ok := groups[addr]; !ok {
			addrOrder = append(addrOrder, addr)
		}
		groups[addr] = append(groups[addr], storefrontCShipItem{OrderProductID: p.ID, Quantity: q})
	}
	if len(addrOrder) == 0 {
		return FulfillmentResult{}, &Error{Code: CodeNothingToFulfill, Message: "order " + orderID + " has nothing left to ship"}
	}
	provider, carrier := storefrontCCarrier(name)
	var first string
	for _, addr := range addrOrder {
		body := storefrontCShipmentCreate{
			OrderAddressID: json.Number(addr), Items: groups[addr], TrackingNumber: f.TrackingNumber,
			ShippingProvider: provider, TrackingCarrier: carrier, TrackingLink: f.TrackingURL,
		}
		resp, err := c.call(ctx, s, http.MethodPost, "/v2/orders/"+orderID+"/shipments", nil, body, true)
		if err != nil {
			return FulfillmentResult{}, err
		}
		var created struct {
			ID json.Number `json:"id"`
		}
		if err := decodeJSON(resp.body, &created, "shipment response"); err != nil {
			return FulfillmentResult{}, err
		}
		if first == "" {
			first = created.ID.String()
		}
	}
	return FulfillmentResult{ExternalID: first, Created: true}, nil
}

type storefrontCShipmentCreate struct {
	OrderAddressID   json.Number           `json:"order_address_id"`
	Items            []storefrontCShipItem `json:"items"`
	TrackingNumber   string                `json:"tracking_number"`
	ShippingProvider string                `json:"shipping_provider"`
	TrackingCarrier  string                `json:"tracking_carrier,omitempty"`
	TrackingLink     string                `json:"tracking_link,omitempty"`
}

type storefrontCShipItem struct {
	OrderProductID json.Number `json:"order_product_id"`
	Quantity       int         `json:"quantity"`
}

// ListLocations implements LocationLister: GET /v3/inventory/locations,
// page by page ({"data": [...], "meta": {"pagination": {...}}}).
func (c *StorefrontC) ListLocations(ctx context.Context, b Bridge) ([]Location, error) {
	s, err := c.store(b)
	if err != nil {
		return nil, err
	}
	var out []Location
	for page := 1; page <= 100; page++ {
		resp, err := c.call(ctx, s, http.MethodGet, "/v3/inventory/locations", url.Values{"page": {strconv.Itoa(page)}, "limit": {"250"}}, nil, false)
		if err != nil {
			return nil, err
		}
		var env struct {
			Data []struct {
				ID      json.Number `json:"id"`
				Code    string      `json:"code"`
				Label   string      `json:"label"`
				Enabled bool        `json:"enabled"`
				Address *struct {
					Address1    string `json:"address1"`
					Address2    string `json:"address2"`
					City        string `json:"city"`
					State       string `json:"state"`
					Zip         string `json:"zip"`
					Phone       string `json:"phone"`
					CountryCode string `json:"country_code"`
				} `json:"address"`
			} `json:"data"`
			Meta struct {
				Pagination struct {
					TotalPages  int `json:"total_pages"`
					CurrentPage int `json:"current_page"`
				} `json:"pagination"`
			} `json:"meta"`
		}
		if err := decodeJSON(resp.body, &env, "location list"); err != nil {
			return nil, err
		}
		for _, l := range env.Data {
			// The API names no default location (is_default is a filter,
			// not a field): none is marked default.
			loc := Location{ExternalID: l.ID.String(), Name: firstNonEmpty(l.Label, l.Code), Active: l.Enabled}
			if a := l.Address; a != nil {
				loc.Address = &Address{Name: loc.Name, Address1: a.Address1, Address2: a.Address2, City: a.City, Province: a.State,
					Zip: a.Zip, Phone: a.Phone, CountryCode: a.CountryCode, Country: a.CountryCode}
				if len(a.State) == 2 {
					loc.Address.ProvinceCode = a.State
				}
			}
			out = append(out, loc)
		}
		if env.Meta.Pagination.TotalPages <= page {
			break
		}
	}
	return out, nil
}

type storefrontCHook struct {
	ID          json.Number `json:"id"`
	Scope       string      `json:"scope"`
	Destination string      `json:"destination"`
}

// unwrapData returns the "data" member of a V3 envelope, or the body when
// it has none (the hooks guide shows bare objects, the OpenAPI an envelope).
func unwrapData(body []byte) json.RawMessage {
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if json.Unmarshal(body, &env) == nil && len(env.Data) > 0 && string(env.Data) != "null" {
		return env.Data
	}
	return body
}

// RegisterWebhook implements WebhookRegistrar: POST /v3/hooks with scope
// and destination.
func (c *StorefrontC) RegisterWebhook(ctx context.Context, b Bridge, topic, address string) (Webhook, error) {
	s, err := c.store(b)
	if err != nil {
		return Webhook{}, err
	}
	body := map[string]any{"scope": topic, "destination": address, "is_active": true, "headers": map[string]string{}}
	resp, err := c.call(ctx, s, http.MethodPost, "/v3/hooks", nil, body, false)
	if err != nil {
		return Webhook{}, err
	}
	var h storefrontCHook
	if err := decodeJSON(unwrapData(resp.body), &h, "hook response"); err != nil {
		return Webhook{}, err
	}
	if h.ID == "" {
		return Webhook{}, badResponse("hook response has no id", nil)
	}
	return Webhook{ID: h.ID.String(), Topic: h.Scope, Address: h.Destination}, nil
}

// ListWebhooks implements WebhookRegistrar: GET /v3/hooks.
func (c *StorefrontC) ListWebhooks(ctx context.Context, b Bridge) ([]Webhook, error) {
	s, err := c.store(b)
	if err != nil {
		return nil, err
	}
	resp, err := c.call(ctx, s, http.MethodGet, "/v3/hooks", url.Values{"limit": {"250"}}, nil, false)
	if err != nil {
		return nil, err
	}
	var hooks []storefrontCHook
	if err := decodeJSON(unwrapData(resp.body), &hooks, "hook list"); err != nil {
		return nil, err
	}
	out := make([]Webhook, len(hooks))
	for i, h := range hooks {
		out[i] = Webhook{ID: h.ID.String(), Topic: h.Scope, Address: h.Destination}
	}
	return out, nil
}

// DeleteWebhook implements WebhookRegistrar: DELETE /v3/hooks/{id}.
func (c *StorefrontC) DeleteWebhook(ctx context.Context, b Bridge, id string) error {
	s, err := c.store(b)
	if err != nil {
		return err
	}
	if !isDigits(id) {
		return &Error{Code: CodeInvalidRequest, Message: fmt.Sprintf("hook id %q is not numeric", id)}
	}
	_, err = c.call(ctx, s, http.MethodDelete, "/v3/hooks/"+id, nil, nil, false)
	return ignoreNotFound(err)
}
