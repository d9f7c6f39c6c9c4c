package platforms

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// storefront_b speaks the self-hosted storefront's REST API (wc/v3) as
// vendors/platforms/storefront_b/README.md documents it:
//
//	{storeUrl}/wp-json/wc/v3/{resource}
//	Authorization: Basic base64(consumerKey:consumerSecret)   (HTTPS only)
//
// The store's own URL is the base; over plain HTTP the platform wants
// OAuth 1.0a signatures instead of Basic, so the connector refuses an
// http:// storeUrl rather than send the secret in clear. Lists page by
// page/per_page (at most 100) and answer bare arrays with the page count
// in X-WP-TotalPages; a host that strips Authorization gets the key and
// secret as query parameters (HTTPS only; see call); orders are read by id ascending with modified_after
// (GMT) for "changed since", so an order modified during a sync keeps its
// place. The platform has no shipment resource: a fulfillment is the order
// updated to "completed" plus an order note naming the tracking number.
// No rate limits are documented; a 429 from the host carries Retry-After.
//
// With a sandbox URL (the built-in sandbox under FOS_SANDBOX=1) the store
// is reached at {sandboxURL}/{host}{path of storeUrl}/wp-json/wc/v3/...:
// the store's host and path name the store below the sandbox prefix.

// Storefront B wire constants.
const (
	StorefrontBAPIRoot          = "/wp-json/wc/v3"
	StorefrontBTotalPagesHeader = "X-WP-TotalPages"
	StorefrontBTotalHeader      = "X-WP-Total"
	storefrontBMaxPerPage       = 100
)

// StorefrontB is the storefront_b connector. It implements Connector,
// FulfillmentPusher and WebhookRegistrar (the platform has no locations).
type StorefrontB struct {
	sandboxURL string
	client     *http.Client
	opts       connOptions
	pacer      pacer
	// queryAuth: the API roots of stores that took the query-string
	// credentials after refusing the header.
	queryAuth sync.Map
}

// NewStorefrontB returns the storefront_b connector. sandboxURL is "" in
// production (each bridge's storeUrl is its base and must be https://);
// under FOS_SANDBOX=1 it is the sandbox prefix (…/platforms/storefront_b)
// below which every store is served by its host and path. The client (the
// SSRF-guarded one in production) bounds every call with its timeout,
// DefaultHTTPTimeout when it has none.
func NewStorefrontB(sandboxURL string, client *http.Client, opts ...Option) *StorefrontB {
	hc := timedClient(client)
	hc.CheckRedirect = storefrontBRedirects(hc.CheckRedirect)
	return &StorefrontB{
		sandboxURL: strings.TrimRight(strings.TrimSpace(sandboxURL), "/"),
		client:     hc,
		opts:       applyOptions(storefrontBMaxPerPage, storefrontBMaxPerPage, opts),
	}
}

// storefrontBRedirects wraps a client's redirect policy for self-hosted
// stores, whose sites often redirect (www, trailing slashes): a write is
// never followed (a 301/302 would turn it into a GET that "succeeds"
// without writing; the redirect answer is the error), and nothing follows
// a redirect from https to plain http (Basic credentials would go along).
func storefrontBRedirects(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if m := via[0].Method; m != http.MethodGet && m != http.MethodHead {
			return http.ErrUseLastResponse
		}
		if via[0].URL.Scheme == "https" && req.URL.Scheme != "https" {
			return fmt.Errorf("refusing a redirect from https to %s", req.URL.Scheme)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
}

// storefrontBStore is what one call needs from the bridge.
type storefrontBStore struct {
	root   string // …/wp-json/wc/v3
	header http.Header
	// creds are the consumer key and secret as query parameters, for a
	// host that strips Authorization (HTTPS only, as the platform says).
	creds url.Values
	// inQuery: send creds instead of the header (the bridge's
	// queryStringAuth, or learned from a 401).
	inQuery bool
}

// ConfigQueryStringAuth is storefront_b's bridge config flag: send the
// consumer key and secret as query parameters (for hosts that strip the
// Authorization header); without it the connector switches by itself
// after a 401 to the header.
const ConfigQueryStringAuth = "queryStringAuth"

func (c *StorefrontB) store(b Bridge) (storefrontBStore, error) {
	raw := configString(b.Config, "storeUrl")
	if raw == "" {
		return storefrontBStore{}, invalidField("storeUrl", "bridge config is missing storeUrl")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Scheme != "https" && u.Scheme != "http") {
		return storefrontBStore{}, invalidField("storeUrl", "storeUrl must be an absolute https:// URL of the store")
	}
	path := strings.TrimRight(u.EscapedPath(), "/")
	if strings.Contains(path+"/", "/../") || strings.Contains(path+"/", "/./") {
		return storefrontBStore{}, invalidField("storeUrl", "storeUrl must not contain . or .. path segments")
	}
	// A storeUrl pasted with the API root is the store itself.
	path = strings.TrimSuffix(path, StorefrontBAPIRoot)
	path = strings.TrimSuffix(path, "/wp-json")
	key, secret := configString(b.Config, "consumerKey"), configString(b.Config, "consumerSecret")
	if key == "" || secret == "" {
		return storefrontBStore{}, invalidField("consumerKey", "bridge config is missing consumerKey or consumerSecret")
	}
	req := http.Request{Header: http.Header{}}
	req.SetBasicAuth(key, secret)
	var base string
	switch {
	case c.sandboxURL != "":
		base = c.sandboxURL + "/" + strings.ToLower(u.Host) + path
	case u.Scheme != "https":
		// Basic over plain HTTP would expose the secret; the platform
		// itself only accepts OAuth 1.0a signatures there.
		return storefrontBStore{}, invalidField("storeUrl", "storeUrl must use https:// (the consumer secret is never sent over plain HTTP)")
	default:
		base = "https://" + strings.ToLower(u.Host) + path
	}
	root := base + StorefrontBAPIRoot
	st := storefrontBStore{root: root, header: req.Header, creds: url.Values{"consumer_key": {key}, "consumer_secret": {secret}}}
	_, learned := c.queryAuth.Load(root)
	st.inQuery = notifyFlag(b, ConfigQueryStringAuth, false) || learned
	return st, nil
}

// call sends one call with the credentials in the Authorization header,
// or in the query string for a store whose host strips the header: a 401
// to the header is tried once more with the query-string credentials (over
// HTTPS only: store refuses plain-HTTP stores) and, when that works, the
// store is called that way from then on.
func (c *StorefrontB) call(ctx context.Context, s storefrontBStore, method, path string, q url.Values, body any, orderLookup bool) (*wireResponse, error) {
	send := func(inQuery bool) (*wireResponse, error) {
		h, qq := s.header, q
		if inQuery {
			h = http.Header{}
			qq = url.Values{}
			for k, v := range q {
				qq[k] = v
			}
			for k, v := range s.creds {
				qq[k] = v
			}
		}
		return wireCall{
			method: method, url: joinURL(s.root, path, qq), header: h, body: body, orderLookup: orderLookup,
			pace: pacing{pacer: &c.pacer, key: s.root, retryAfter: storefrontBRetryAfter},
		}.do(ctx, c.client)
	}
	resp, err := send(s.inQuery)
	var pe *Error
	if !s.inQuery && errors.As(err, &pe) && pe.StatusCode == http.StatusUnauthorized {
		if resp, qerr := send(true); qerr == nil {
			c.queryAuth.Store(s.root, true)
			return resp, nil
		}
	}
	return resp, err
}

// storefrontBRetryAfter: the platform documents no limits; a host's or
// firewall's 429 names its wait in Retry-After.
func storefrontBRetryAfter(h http.Header) time.Duration { return secondsHeader(h, "Retry-After") }

// FetchOrder implements Connector: GET /orders/{id}.
func (c *StorefrontB) FetchOrder(ctx context.Context, b Bridge, externalID string) (*Order, error) {
	s, err := c.store(b)
	if err != nil {
		return nil, err
	}
	externalID = strings.TrimSpace(externalID)
	if !isDigits(externalID) {
		return nil, notFoundID(externalID)
	}
	resp, err := c.call(ctx, s, http.MethodGet, "/orders/"+externalID, nil, nil, true)
	if err != nil {
		return nil, err
	}
	o, err := StorefrontBOrder(resp.body)
	if err != nil {
		return nil, err
	}
	return &o, nil
}

// ListOrders implements Connector: GET /orders?status=any&orderby=id&
// order=asc&modified_after=…&dates_are_gmt=true&page=N&per_page=100; the
// cursor is the next page with the first page's filter.
func (c *StorefrontB) ListOrders(ctx context.Context, b Bridge, since time.Time, cursor string) ([]Order, string, error) {
	s, err := c.store(b)
	if err != nil {
		return nil, "", err
	}
	page, modified := 1, ""
	if cursor != "" {
		if page, modified, err = parsePageCursor(cursor, "modified_after"); err != nil {
			return nil, "", err
		}
	} else if !since.IsZero() {
		// The filter is exclusive and whole seconds: start a second early
		// so an order changed in the same second is never skipped.
		modified = since.UTC().Truncate(time.Second).Add(-time.Second).Format("2006-01-02T15:04:05")
	}
	q := url.Values{
		"status": {"any"}, "orderby": {"id"}, "order": {"asc"}, "dates_are_gmt": {"true"},
		"page": {strconv.Itoa(page)}, "per_page": {strconv.Itoa(c.opts.pageSize)},
	}
	if modified != "" {
		q.Set("modified_after", modified)
	}
	resp, err := c.call(ctx, s, http.MethodGet, "/orders", q, nil, false)
	if err != nil {
		return nil, "", err
	}
	var raws []json.RawMessage
	if err := decodeJSON(resp.body, &raws, "order list response"); err != nil {
		return nil, "", err
	}
	orders := make([]Order, 0, len(raws))
	for _, raw := range raws {
		o, err := StorefrontBOrder(raw)
		if err != nil {
			return nil, "", err
		}
		orders = append(orders, o)
	}
	next := ""
	if total, err := strconv.Atoi(strings.TrimSpace(resp.header.Get(StorefrontBTotalPagesHeader))); err == nil {
		if page < total && len(raws) > 0 {
			next = pageCursor(page+1, "modified_after", modified)
		}
	} else if len(raws) == c.opts.pageSize {
		// No page count (a proxy dropped it): a full page may have a successor.
		next = pageCursor(page+1, "modified_after", modified)
	}
	return orders, next, nil
}

// storefrontBAddress is the billing or shipping object.
type storefrontBAddress struct {
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
	Company   string `json:"company"`
	Address1  string `json:"address_1"`
	Address2  string `json:"address_2"`
	City      string `json:"city"`
	State     string `json:"state"`
	Postcode  string `json:"postcode"`
	Country   string `json:"country"`
	Email     string `json:"email"`
	Phone     string `json:"phone"`
}

func (a *storefrontBAddress) normalize() *Address {
	if a == nil || *a == (storefrontBAddress{}) {
		return nil
	}
	out := &Address{
		Name: strings.TrimSpace(a.FirstName + " " + a.LastName), Company: a.Company, Address1: a.Address1, Address2: a.Address2,
		City: a.City, Province: a.State, Zip: a.Postcode, Country: a.Country, CountryCode: a.Country, Phone: a.Phone,
	}
	// The platform stores the state code (ISO 3166-2 subdivision) in state.
	if s := strings.TrimSpace(a.State); len(s) >= 1 && len(s) <= 3 {
		out.ProvinceCode = strings.ToUpper(s)
	}
	return out
}

type storefrontBOrder struct {
	ID              json.Number         `json:"id"`
	Number          string              `json:"number"`
	Status          string              `json:"status"`
	Currency        string              `json:"currency"`
	DateCreated     string              `json:"date_created"`
	DateCreatedGMT  string              `json:"date_created_gmt"`
	DateModified    string              `json:"date_modified"`
	DateModifiedGMT string              `json:"date_modified_gmt"`
	DatePaidGMT     *string             `json:"date_paid_gmt"`
	DiscountTotal   flexFloat           `json:"discount_total"`
	ShippingTotal   flexFloat           `json:"shipping_total"`
	TotalTax        flexFloat           `json:"total_tax"`
	Total           flexFloat           `json:"total"`
	CustomerNote    string              `json:"customer_note"`
	Billing         *storefrontBAddress `json:"billing"`
	Shipping        *storefrontBAddress `json:"shipping"`
	LineItems       []struct {
		ID       json.Number `json:"id"`
		Name     string      `json:"name"`
		SKU      string      `json:"sku"`
		Quantity int         `json:"quantity"`
		Subtotal flexFloat   `json:"subtotal"`
	} `json:"line_items"`
	FeeLines []struct {
		Total flexFloat `json:"total"`
	} `json:"fee_lines"`
	Refunds []struct {
		Total flexFloat `json:"total"`
	} `json:"refunds"`
}

// ParseStorefrontBTime reads a wc/v3 date: the *_gmt fields carry no offset
// and are UTC; zero when empty or invalid.
func ParseStorefrontBTime(s string) time.Time {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC()
	}
	if t, err := time.Parse("2006-01-02T15:04:05", s); err == nil {
		return t
	}
	return time.Time{}
}

// StorefrontBOrder maps one wc/v3 order object (a REST answer or a webhook
// body) onto Order; SourceData is the whole object with exact numbers.
// Line names are HTML-unescaped ("&ndash;" is "–"); fee lines count into
// the subtotal so Total = Subtotal - Discount + Shipping + Tax holds.
func StorefrontBOrder(raw json.RawMessage) (Order, error) {
	var w storefrontBOrder
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
		ExternalID:      w.ID.String(),
		OrderNumber:     firstNonEmpty(w.Number, w.ID.String()),
		Currency:        strings.ToUpper(w.Currency),
		ShippingAddress: w.Shipping.normalize(),
		BillingAddress:  w.Billing.normalize(),
		LineItems:       []LineItem{},
		Tags:            []string{},
		Note:            w.CustomerNote,
		OrderedAt:       ParseStorefrontBTime(firstNonEmpty(w.DateCreatedGMT, w.DateCreated)),
		UpdatedAt:       ParseStorefrontBTime(firstNonEmpty(w.DateModifiedGMT, w.DateModified)),
		SourceData:      source,
	}
	if o.Currency == "" {
		o.Currency = "USD"
	}
	if w.Billing != nil {
		o.Customer = Customer{Email: w.Billing.Email, FirstName: w.Billing.FirstName, LastName: w.Billing.LastName, Phone: w.Billing.Phone}
	}
	if o.Customer.FirstName == "" && o.Customer.LastName == "" && w.Shipping != nil {
		o.Customer.FirstName, o.Customer.LastName = w.Shipping.FirstName, w.Shipping.LastName
	}
	if o.ShippingAddress != nil && o.ShippingAddress.Phone == "" {
		o.ShippingAddress.Phone = o.Customer.Phone
	}

	var subtotal float64
	for _, li := range w.LineItems {
		unit := 0.0
		if li.Quantity > 0 {
			unit = float64(li.Subtotal) / float64(li.Quantity)
		}
		subtotal += float64(li.Subtotal)
		o.LineItems = append(o.LineItems, LineItem{
			ExternalID: li.ID.String(), SKU: li.SKU, Name: html.UnescapeString(li.Name), Quantity: li.Quantity,
			UnitPrice: round2(unit), TotalPrice: round2(float64(li.Subtotal)),
			RequiresShipping: true, Taxable: true,
		})
	}
	for _, f := range w.FeeLines {
		subtotal += float64(f.Total)
	}
	o.Totals = Totals{
		Subtotal: round2(subtotal),
		Discount: round2(float64(w.DiscountTotal)),
		Shipping: round2(float64(w.ShippingTotal)),
		Tax:      round2(float64(w.TotalTax)),
		Total:    round2(float64(w.Total)),
	}
	o.Status, o.PaymentStatus, o.FulfillmentStatus = storefrontBStatuses(w)
	return o, nil
}

// storefrontBStatuses maps the order status (pending, processing, on-hold,
// completed, cancelled, refunded, failed, trash, checkout-draft) and the
// payment date onto the normalized statuses.
func storefrontBStatuses(w storefrontBOrder) (status, payment, fulfillment string) {
	fulfillment = FulfillmentUnfulfilled
	paid := w.DatePaidGMT != nil && strings.TrimSpace(*w.DatePaidGMT) != ""
	payment = PaymentPending
	if paid {
		payment = PaymentPaid
	}
	switch w.Status {
	case "processing":
		status, payment = StatusConfirmed, PaymentPaid
	case "on-hold":
		status = StatusOnHold
	case "completed":
		status, fulfillment = StatusShipped, FulfillmentFulfilled
		payment = PaymentPaid
	case "cancelled", "trash":
		status = StatusCancelled
		if !paid {
			payment = PaymentVoided
		}
	case "refunded":
		status, payment = StatusRefunded, PaymentRefunded
	case "failed":
		status, payment = StatusPending, PaymentVoided
	default: // pending, checkout-draft
		status = StatusPending
	}
	return status, payment, fulfillment
}

// storefrontBNote is an order note.
type storefrontBNote struct {
	ID           json.Number `json:"id"`
	Note         string      `json:"note"`
	CustomerNote bool        `json:"customer_note"`
}

// StorefrontBTrackingNote is the order note PushFulfillment writes; carrier
// is the carrier's name (CarrierName).
func StorefrontBTrackingNote(f Fulfillment, carrier string) string {
	var b strings.Builder
	b.WriteString("Shipped")
	if c := strings.TrimSpace(carrier); c != "" {
		b.WriteString(" with " + c)
	}
	b.WriteString(". Tracking number: " + strings.TrimSpace(f.TrackingNumber))
	if u := strings.TrimSpace(f.TrackingURL); u != "" {
		b.WriteString(" (" + u + ")")
	}
	return b.String()
}

// PushFulfillment implements FulfillmentPusher. It reads the order and its
// notes; an order cancelled, refunded or failed has nothing to fulfill.
// Unless it is completed already, PUT /orders/{id} {"status": "completed"};
// then, unless a note names the tracking number, POST /orders/{id}/notes
// with the tracking note naming the carrier (CarrierName; customer_note
// when NotifyCustomer or the bridge's notifyCustomer). The status
// goes first, so a retry after a failed note completes the work and a
// retry after both never writes a second note. The platform has no
// per-line shipping: the whole order is completed.
func (c *StorefrontB) PushFulfillment(ctx context.Context, b Bridge, f Fulfillment) (FulfillmentResult, error) {
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
	carrier, err := CarrierName(b, f.Carrier, f.Service)
	if err != nil {
		return FulfillmentResult{}, err
	}

	resp, err := c.call(ctx, s, http.MethodGet, "/orders/"+orderID, nil, nil, true)
	if err != nil {
		return FulfillmentResult{}, err
	}
	var current struct {
		Status string `json:"status"`
	}
	if err := decodeJSON(resp.body, &current, "order response"); err != nil {
		return FulfillmentResult{}, err
	}
	if notifyFlag(b, ConfigShipmentTracking, false) {
		return c.pushTracking(ctx, s, b, f, orderID, current.Status, carrier)
	}
	resp, err = c.call(ctx, s, http.MethodGet, "/orders/"+orderID+"/notes", url.Values{"type": {"any"}}, nil, true)
	if err != nil {
		return FulfillmentResult{}, err
	}
	var notes []storefrontBNote
	if err := decodeJSON(resp.body, &notes, "order note list"); err != nil {
		return FulfillmentResult{}, err
	}
	var known *storefrontBNote
	for i, n := range notes {
		if strings.Contains(strings.ToLower(n.Note), strings.ToLower(strings.TrimSpace(f.TrackingNumber))) {
			known = &notes[i]
			break
		}
	}

	switch current.Status {
	case "cancelled", "refunded", "failed", "trash":
		if known != nil {
			return FulfillmentResult{ExternalID: known.ID.String(), Created: false}, nil
		}
		return FulfillmentResult{}, &Error{Code: CodeNothingToFulfill, Message: fmt.Sprintf("order %s is %s", orderID, current.Status)}
	case "completed":
	default:
		if _, err := c.call(ctx, s, http.MethodPut, "/orders/"+orderID, nil, map[string]string{"status": "completed"}, true); err != nil {
			return FulfillmentResult{}, err
		}
	}
	if known != nil {
		return FulfillmentResult{ExternalID: known.ID.String(), Created: false}, nil
	}

	resp, err = c.call(ctx, s, http.MethodPost, "/orders/"+orderID+"/notes", nil,
		storefrontBNote{Note: StorefrontBTrackingNote(f, carrier), CustomerNote: NotifyCustomer(b, f)}, true)
	if err != nil {
		return FulfillmentResult{}, err
	}
	var created storefrontBNote
	if err := decodeJSON(resp.body, &created, "order note response"); err != nil {
		return FulfillmentResult{}, err
	}
	if created.ID == "" {
		return FulfillmentResult{}, badResponse("order note response has no id", nil)
	}
	return FulfillmentResult{ExternalID: created.ID.String(), Created: true}, nil
}

// ConfigShipmentTracking is storefront_b's bridge config flag for stores
// that run the Shipment Tracking extension: a fulfillment becomes a
// tracking item (POST /wp-json/wc-shipment-tracking/v3/orders/{id}/shipment-trackings
// {tracking_provider, tracking_number, date_shipped}) instead of an order
// note; the order is completed either way.
const ConfigShipmentTracking = "shipmentTracking"

// StorefrontBTrackingRoot is the Shipment Tracking extension's API root.
const StorefrontBTrackingRoot = "/wp-json/wc-shipment-tracking/v3"

type storefrontBTracking struct {
	TrackingID       string `json:"tracking_id,omitempty"`
	TrackingProvider string `json:"tracking_provider"`
	TrackingNumber   string `json:"tracking_number"`
	DateShipped      string `json:"date_shipped,omitempty"`
}

// pushTracking records the fulfillment as a Shipment Tracking item, once
// per tracking number (a tracking item with the number already there is
// the earlier push), and completes the order.
func (c *StorefrontB) pushTracking(ctx context.Context, s storefrontBStore, b Bridge, f Fulfillment, orderID, status, carrier string) (FulfillmentResult, error) {
	ts := s
	ts.root = strings.TrimSuffix(s.root, StorefrontBAPIRoot) + StorefrontBTrackingRoot
	resp, err := c.call(ctx, ts, http.MethodGet, "/orders/"+orderID+"/shipment-trackings", nil, nil, true)
	if err != nil {
		return FulfillmentResult{}, err
	}
	var items []storefrontBTracking
	if err := decodeJSON(resp.body, &items, "shipment tracking list"); err != nil {
		return FulfillmentResult{}, err
	}
	for _, it := range items {
		if strings.EqualFold(strings.TrimSpace(it.TrackingNumber), strings.TrimSpace(f.TrackingNumber)) {
			return FulfillmentResult{ExternalID: it.TrackingID, Created: false}, nil
		}
	}
	switch status {
	case "cancelled", "refunded", "failed", "trash":
		return FulfillmentResult{}, &Error{Code: CodeNothingToFulfill, Message: fmt.Sprintf("order %s is %s", orderID, status)}
	case "completed":
	default:
		if _, err := c.call(ctx, s, http.MethodPut, "/orders/"+orderID, nil, map[string]string{"status": "completed"}, true); err != nil {
			return FulfillmentResult{}, err
		}
	}
	item := storefrontBTracking{TrackingProvider: carrier, TrackingNumber: strings.TrimSpace(f.TrackingNumber)}
	if !f.ShipDate.IsZero() {
		item.DateShipped = f.ShipDate.Format("2006-01-02")
	}
	resp, err = c.call(ctx, ts, http.MethodPost, "/orders/"+orderID+"/shipment-trackings", nil, item, true)
	if err != nil {
		return FulfillmentResult{}, err
	}
	var created storefrontBTracking
	if err := decodeJSON(resp.body, &created, "shipment tracking response"); err != nil {
		return FulfillmentResult{}, err
	}
	if created.TrackingID == "" {
		return FulfillmentResult{}, badResponse("shipment tracking response has no tracking_id", nil)
	}
	return FulfillmentResult{ExternalID: created.TrackingID, Created: true}, nil
}

type storefrontBWebhook struct {
	ID          json.Number `json:"id,omitempty"`
	Name        string      `json:"name,omitempty"`
	Status      string      `json:"status,omitempty"`
	Topic       string      `json:"topic"`
	DeliveryURL string      `json:"delivery_url"`
	Secret      string      `json:"secret,omitempty"`
}

func (w storefrontBWebhook) webhook() Webhook {
	return Webhook{ID: w.ID.String(), Topic: w.Topic, Address: w.DeliveryURL}
}

// RegisterWebhook implements WebhookRegistrar: POST /webhooks with name,
// topic (order.created, order.updated, ...), delivery_url and status
// active; the bridge's webhookSecret, when set, signs the deliveries
// (X-WC-Webhook-Signature).
func (c *StorefrontB) RegisterWebhook(ctx context.Context, b Bridge, topic, address string) (Webhook, error) {
	s, err := c.store(b)
	if err != nil {
		return Webhook{}, err
	}
	body := storefrontBWebhook{Name: "fos " + topic, Status: "active", Topic: topic, DeliveryURL: address,
		Secret: configString(b.Config, ConfigWebhookSecret)}
	resp, err := c.call(ctx, s, http.MethodPost, "/webhooks", nil, body, false)
	if err != nil {
		return Webhook{}, err
	}
	var out storefrontBWebhook
	if err := decodeJSON(resp.body, &out, "webhook response"); err != nil {
		return Webhook{}, err
	}
	if out.ID == "" {
		return Webhook{}, badResponse("webhook response has no id", nil)
	}
	return out.webhook(), nil
}

// ListWebhooks implements WebhookRegistrar: GET /webhooks (every page).
func (c *StorefrontB) ListWebhooks(ctx context.Context, b Bridge) ([]Webhook, error) {
	s, err := c.store(b)
	if err != nil {
		return nil, err
	}
	out := []Webhook{}
	for page := 1; ; page++ {
		q := url.Values{"page": {strconv.Itoa(page)}, "per_page": {strconv.Itoa(storefrontBMaxPerPage)}}
		resp, err := c.call(ctx, s, http.MethodGet, "/webhooks", q, nil, false)
		if err != nil {
			return nil, err
		}
		var hooks []storefrontBWebhook
		if err := decodeJSON(resp.body, &hooks, "webhook list"); err != nil {
			return nil, err
		}
		for _, h := range hooks {
			out = append(out, h.webhook())
		}
		total, err := strconv.Atoi(resp.header.Get(StorefrontBTotalPagesHeader))
		if err != nil || page >= total || len(hooks) == 0 {
			return out, nil
		}
	}
}

// DeleteWebhook implements WebhookRegistrar: DELETE /webhooks/{id}?force=true
// (webhooks cannot be trashed); one the store no longer has counts as
// deleted.
func (c *StorefrontB) DeleteWebhook(ctx context.Context, b Bridge, id string) error {
	s, err := c.store(b)
	if err != nil {
		return err
	}
	if !isDigits(id) {
		return &Error{Code: CodeInvalidRequest, Message: fmt.Sprintf("webhook id %q is not numeric", id)}
	}
	_, err = c.call(ctx, s, http.MethodDelete, "/webhooks/"+id, url.Values{"force": {"true"}}, nil, false)
	return ignoreNotFound(err)
}

var _ interface {
	Connector
	FulfillmentPusher
	WebhookRegistrar
} = (*StorefrontB)(nil)
