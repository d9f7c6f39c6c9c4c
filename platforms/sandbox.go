package platforms

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// SandboxFailValue is the credential or config value that makes every call
// of a bridge to the sandbox fail (CONTRACT section 8).
const SandboxFailValue = "sandbox-fail"

// Wire headers of the sandbox platforms (see package sandboxapi).
const (
	sandboxHeaderAccessToken  = "X-Access-Token"
	sandboxHeaderAuthToken    = "X-Auth-Token"
	sandboxHeaderRefreshToken = "X-Refresh-Token"
	sandboxHeaderConfig       = "X-Sandbox-Config"
)

// DefaultHTTPTimeout bounds every platform call when the given client has
// no timeout of its own.
const DefaultHTTPTimeout = 20 * time.Second

// DefaultPageSize is the number of orders ListOrders asks for per page.
const DefaultPageSize = 50

// maxResponseBytes caps a platform response body.
const maxResponseBytes = 16 << 20

// SandboxOption tunes a sandbox connector.
type SandboxOption func(*sandboxConnector)

// WithPageSize sets the number of orders requested per ListOrders page (1-250).
func WithPageSize(n int) SandboxOption {
	return func(c *sandboxConnector) {
		if n > 0 {
			c.pageSize = min(n, 250)
		}
	}
}

type sandboxConnector struct {
	baseURL  string
	client   *http.Client
	pageSize int
}

// NewSandboxConnector returns a connector that talks to the built-in sandbox
// platforms (package sandboxapi) at baseURL, the sandbox root under which
// /platforms/... is served. It works for every bridge type. A nil
// httpClient, or one without a timeout, gets DefaultHTTPTimeout.
func NewSandboxConnector(baseURL string, httpClient *http.Client, opts ...SandboxOption) Connector {
	var hc http.Client
	if httpClient != nil {
		hc = *httpClient
	}
	if hc.Timeout == 0 {
		hc.Timeout = DefaultHTTPTimeout
	}
	c := &sandboxConnector{baseURL: strings.TrimRight(baseURL, "/"), client: &hc, pageSize: DefaultPageSize}
	for _, o := range opts {
		o(c)
	}
	return c
}

// NewSandboxRegistry returns a registry with the sandbox connector
// registered for all five bridge types.
func NewSandboxRegistry(baseURL string, c *http.Client, opts ...SandboxOption) *Registry {
	conn := NewSandboxConnector(baseURL, c, opts...)
	r := NewRegistry()
	for _, t := range Types() {
		r.Register(t.Slug, conn)
	}
	return r
}

// SandboxStore returns the store segment the sandbox connector puts in URLs
// for a bridge: the type's store key value (StoreKeyField), except for
// shipping_hub_a, whose store key is its API key: there it is
// "acct_" + the first 16 hex digits of SHA-256(apiKey), so the key never
// appears in a URL. ok is false when the value is missing.
func SandboxStore(bridgeType string, cfg map[string]any) (store string, ok bool) {
	field := StoreKeyField(bridgeType)
	if field == "" {
		return "", false
	}
	v := configString(cfg, field)
	if v == "" {
		return "", false
	}
	if bridgeType == TypeShippingHubA {
		sum := sha256.Sum256([]byte(v))
		return "acct_" + hex.EncodeToString(sum[:8]), true
	}
	return v, true
}

func configString(cfg map[string]any, key string) string {
	s, _ := cfg[key].(string)
	return strings.TrimSpace(s)
}

// credentialFields names the config fields a type authenticates with.
func credentialFields(bridgeType string) []string {
	switch bridgeType {
	case TypeStorefrontA, TypeStorefrontC:
		return []string{"accessToken"}
	case TypeStorefrontB:
		return []string{"consumerKey", "consumerSecret"}
	case TypeShippingHubA:
		return []string{"apiKey", "apiSecret"}
	case TypeMarketplaceA:
		return []string{"clientId", "clientSecret", "refreshToken"}
	}
	return nil
}

// authorize sets the type's credential headers and the X-Sandbox-Config
// header on req. Non-secret config values are sent as they are; a secret
// that is not a credential is only sent when it is the fail value, so
// secrets never leave the service except as credentials.
func authorize(req *http.Request, b Bridge) {
	cfg := b.Config
	get := func(k string) string { return configString(cfg, k) }
	switch b.Type {
	case TypeStorefrontA:
		if v := get("accessToken"); v != "" {
			req.Header.Set(sandboxHeaderAccessToken, v)
		}
	case TypeStorefrontC:
		if v := get("accessToken"); v != "" {
			req.Header.Set(sandboxHeaderAuthToken, v)
		}
	case TypeStorefrontB:
		if u, p := get("consumerKey"), get("consumerSecret"); u != "" || p != "" {
			req.SetBasicAuth(u, p)
		}
	case TypeShippingHubA:
		if u, p := get("apiKey"), get("apiSecret"); u != "" || p != "" {
			req.SetBasicAuth(u, p)
		}
	case TypeMarketplaceA:
		if u, p := get("clientId"), get("clientSecret"); u != "" || p != "" {
			req.SetBasicAuth(u, p)
		}
		if v := get("refreshToken"); v != "" {
			req.Header.Set(sandboxHeaderRefreshToken, v)
		}
	}

	skip := map[string]bool{StoreKeyField(b.Type): true}
	for _, k := range credentialFields(b.Type) {
		skip[k] = true
	}
	extra := url.Values{}
	for _, k := range sortedKeys(cfg) {
		s, isString := cfg[k].(string)
		if !isString || skip[k] {
			continue
		}
		if IsSecretField(b.Type, k) && s != SandboxFailValue {
			continue
		}
		extra.Set(k, s)
	}
	if len(extra) > 0 {
		req.Header.Set(sandboxHeaderConfig, extra.Encode())
	}
}

func (c *sandboxConnector) storeURL(b Bridge) (string, error) {
	store, ok := SandboxStore(b.Type, b.Config)
	if !ok {
		field := StoreKeyField(b.Type)
		if field == "" {
			return "", &Error{Code: CodeUnsupportedType, Message: fmt.Sprintf("unknown bridge type %q", b.Type)}
		}
		return "", &Error{Code: CodeInvalidConfig, Message: fmt.Sprintf("bridge config is missing %s", field)}
	}
	return c.baseURL + "/platforms/" + url.PathEscape(b.Type) + "/stores/" + url.PathEscape(store), nil
}

// FetchOrder implements Connector.
func (c *sandboxConnector) FetchOrder(ctx context.Context, b Bridge, externalID string) (*Order, error) {
	externalID = strings.TrimSpace(externalID)
	if externalID == "" {
		return nil, &Error{Code: CodeInvalidRequest, Message: "external id is empty"}
	}
	base, err := c.storeURL(b)
	if err != nil {
		return nil, err
	}
	body, err := c.get(ctx, b, base+"/orders/"+url.PathEscape(externalID), true)
	if err != nil {
		return nil, err
	}
	var env struct {
		Order json.RawMessage `json:"order"`
	}
	if err := json.Unmarshal(body, &env); err != nil || len(env.Order) == 0 || string(env.Order) == "null" {
		return nil, badResponse("order response has no order object", err)
	}
	o, err := mapOrder(env.Order)
	if err != nil {
		return nil, err
	}
	return &o, nil
}

// ListOrders implements Connector.
func (c *sandboxConnector) ListOrders(ctx context.Context, b Bridge, since time.Time, cursor string) ([]Order, string, error) {
	base, err := c.storeURL(b)
	if err != nil {
		return nil, "", err
	}
	q := url.Values{"limit": {strconv.Itoa(c.pageSize)}}
	if cursor != "" {
		q.Set("cursor", cursor)
	} else if !since.IsZero() {
		q.Set("since", since.UTC().Format(time.RFC3339Nano))
	}
	body, err := c.get(ctx, b, base+"/orders?"+q.Encode(), false)
	if err != nil {
		return nil, "", err
	}
	var env struct {
		Orders     []json.RawMessage `json:"orders"`
		NextCursor *string           `json:"next_cursor"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, "", badResponse("order list response is not valid JSON", err)
	}
	orders := make([]Order, 0, len(env.Orders))
	for _, raw := range env.Orders {
		o, err := mapOrder(raw)
		if err != nil {
			return nil, "", err
		}
		orders = append(orders, o)
	}
	next := ""
	if env.NextCursor != nil {
		next = *env.NextCursor
	}
	return orders, next, nil
}

// get performs one GET and maps failures to *Error. orderLookup turns a 404
// into an order-not-found error.
func (c *sandboxConnector) get(ctx context.Context, b Bridge, u string, orderLookup bool) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, &Error{Code: CodeInvalidConfig, Message: "cannot build platform request", cause: err}
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "fos-connector/1.0")
	authorize(req, b)

	resp, err := c.client.Do(req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, &Error{Code: CodeNetwork, Message: "platform call cancelled: " + ctxErr.Error(), Retryable: true, cause: ctxErr}
		}
		return nil, &Error{Code: CodeNetwork, Message: "platform unreachable: " + err.Error(), Retryable: true, cause: err}
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return nil, &Error{StatusCode: resp.StatusCode, Code: CodeNetwork, Message: "reading platform response: " + err.Error(), Retryable: true, cause: err}
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return body, nil
	}
	return nil, statusError(resp.StatusCode, body, orderLookup)
}

// statusError maps a platform's HTTP error answer to *Error.
func statusError(status int, body []byte, orderLookup bool) *Error {
	msg := errorMessage(body)
	if msg == "" {
		msg = http.StatusText(status)
	}
	e := &Error{StatusCode: status, Message: msg}
	switch {
	case status == http.StatusNotFound && orderLookup:
		e.Code = CodeOrderNotFound
	case status == http.StatusNotFound:
		e.Code = CodeNotFound
	case status == http.StatusUnauthorized:
		e.Code = CodeUnauthorized
	case status == http.StatusForbidden:
		e.Code = CodeForbidden
	case status == http.StatusTooManyRequests:
		e.Code, e.Retryable = CodeRateLimited, true
	case status == http.StatusRequestTimeout:
		e.Code, e.Retryable = CodePlatformUnavailable, true
	case status == http.StatusServiceUnavailable || status == http.StatusBadGateway || status == http.StatusGatewayTimeout:
		e.Code, e.Retryable = CodePlatformUnavailable, true
	case status >= 500:
		e.Code, e.Retryable = CodePlatformError, true
	default:
		e.Code = CodePlatformError
	}
	return e
}

// errorMessage extracts a human message from the error bodies platforms
// use: {"errors": "..."}, {"errors": {"field": ["..."]}}, {"errors":
// [{"message": "..."}]}, [{"message": "..."}], {"message": "..."}.
func errorMessage(body []byte) string {
	var v any
	if err := json.Unmarshal(bytes.TrimSpace(body), &v); err != nil {
		s := strings.TrimSpace(string(body))
		if len(s) > 200 {
			s = s[:200]
		}
		return s
	}
	return messageOf(v)
}

func messageOf(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		var parts []string
		for _, e := range x {
			if m := messageOf(e); m != "" {
				parts = append(parts, m)
			}
		}
		return strings.Join(parts, "; ")
	case map[string]any:
		for _, k := range []string{"errors", "message", "Message", "error_description", "error", "title"} {
			if e, ok := x[k]; ok {
				if m := messageOf(e); m != "" {
					return m
				}
			}
		}
		var parts []string
		for _, k := range sortedKeys(x) {
			if m := messageOf(x[k]); m != "" {
				parts = append(parts, k+": "+m)
			}
		}
		return strings.Join(parts, "; ")
	}
	return ""
}

func badResponse(msg string, cause error) *Error {
	if cause != nil {
		msg += ": " + cause.Error()
	}
	return &Error{StatusCode: http.StatusOK, Code: CodeBadResponse, Message: msg, cause: cause}
}

// flexFloat decodes a money amount given as a JSON string or number.
type flexFloat float64

func (f *flexFloat) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*f = 0
		return nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("invalid amount %q", s)
	}
	*f = flexFloat(v)
	return nil
}

// wireOrder is the storefront_a-shaped order the sandbox serves.
type wireOrder struct {
	ID                json.Number `json:"id"`
	Name              string      `json:"name"`
	OrderNumber       json.Number `json:"order_number"`
	Email             string      `json:"email"`
	ContactEmail      string      `json:"contact_email"`
	Phone             string      `json:"phone"`
	CreatedAt         string      `json:"created_at"`
	UpdatedAt         string      `json:"updated_at"`
	ProcessedAt       string      `json:"processed_at"`
	CancelledAt       *string     `json:"cancelled_at"`
	Currency          string      `json:"currency"`
	FinancialStatus   string      `json:"financial_status"`
	FulfillmentStatus *string     `json:"fulfillment_status"`
	Tags              string      `json:"tags"`
	Note              *string     `json:"note"`
	TotalLineItems    *flexFloat  `json:"total_line_items_price"`
	SubtotalPrice     flexFloat   `json:"subtotal_price"`
	TotalDiscounts    flexFloat   `json:"total_discounts"`
	TotalTax          flexFloat   `json:"total_tax"`
	TotalPrice        flexFloat   `json:"total_price"`
	TotalShippingSet  *struct {
		ShopMoney struct {
			Amount flexFloat `json:"amount"`
		} `json:"shop_money"`
	} `json:"total_shipping_price_set"`
	ShippingLines []struct {
		Price flexFloat `json:"price"`
	} `json:"shipping_lines"`
	Customer *struct {
		Email     string `json:"email"`
		FirstName string `json:"first_name"`
		LastName  string `json:"last_name"`
		Phone     string `json:"phone"`
	} `json:"customer"`
	ShippingAddress *wireAddress `json:"shipping_address"`
	BillingAddress  *wireAddress `json:"billing_address"`
	LineItems       []struct {
		ID               json.Number `json:"id"`
		SKU              string      `json:"sku"`
		Name             string      `json:"name"`
		Title            string      `json:"title"`
		Quantity         int         `json:"quantity"`
		Price            flexFloat   `json:"price"`
		RequiresShipping *bool       `json:"requires_shipping"`
		Taxable          *bool       `json:"taxable"`
	} `json:"line_items"`
	Fulfillments []struct {
		ShipmentStatus string `json:"shipment_status"`
	} `json:"fulfillments"`
}

type wireAddress struct {
	FirstName    string  `json:"first_name"`
	LastName     string  `json:"last_name"`
	Name         string  `json:"name"`
	Company      *string `json:"company"`
	Address1     string  `json:"address1"`
	Address2     string  `json:"address2"`
	City         string  `json:"city"`
	Province     string  `json:"province"`
	ProvinceCode string  `json:"province_code"`
	Country      string  `json:"country"`
	CountryCode  string  `json:"country_code"`
	Zip          string  `json:"zip"`
	Phone        string  `json:"phone"`
}

func (a *wireAddress) normalize() *Address {
	if a == nil {
		return nil
	}
	name := a.Name
	if name == "" {
		name = strings.TrimSpace(a.FirstName + " " + a.LastName)
	}
	out := &Address{
		Name: name, Address1: a.Address1, Address2: a.Address2, City: a.City,
		Province: a.Province, ProvinceCode: a.ProvinceCode, Country: a.Country,
		CountryCode: a.CountryCode, Zip: a.Zip, Phone: a.Phone,
	}
	if a.Company != nil {
		out.Company = *a.Company
	}
	return out
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

func parseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

// mapOrder maps one platform order payload to the normalized Order.
func mapOrder(raw json.RawMessage) (Order, error) {
	var w wireOrder
	if err := json.Unmarshal(raw, &w); err != nil {
		return Order{}, badResponse("order payload does not parse", err)
	}
	var source map[string]any
	if err := json.Unmarshal(raw, &source); err != nil {
		return Order{}, badResponse("order payload is not an object", err)
	}
	if w.ID.String() == "" {
		return Order{}, badResponse("order payload has no id", nil)
	}

	o := Order{
		ExternalID:      w.ID.String(),
		OrderNumber:     w.Name,
		Currency:        strings.ToUpper(w.Currency),
		ShippingAddress: w.ShippingAddress.normalize(),
		BillingAddress:  w.BillingAddress.normalize(),
		Tags:            []string{},
		LineItems:       []LineItem{},
		UpdatedAt:       parseTime(w.UpdatedAt),
		OrderedAt:       parseTime(w.ProcessedAt),
		SourceData:      source,
	}
	if o.OrderNumber == "" {
		o.OrderNumber = w.OrderNumber.String()
	}
	if o.Currency == "" {
		o.Currency = "USD"
	}
	if o.OrderedAt.IsZero() {
		o.OrderedAt = parseTime(w.CreatedAt)
	}
	if w.Note != nil {
		o.Note = *w.Note
	}
	for _, t := range strings.Split(w.Tags, ",") {
		if t = strings.TrimSpace(t); t != "" {
			o.Tags = append(o.Tags, t)
		}
	}

	// Customer: the order's own e-mail and phone win over the customer record.
	o.Customer.Email = firstNonEmpty(w.Email, w.ContactEmail)
	o.Customer.Phone = w.Phone
	if w.Customer != nil {
		o.Customer.Email = firstNonEmpty(o.Customer.Email, w.Customer.Email)
		o.Customer.FirstName = w.Customer.FirstName
		o.Customer.LastName = w.Customer.LastName
		o.Customer.Phone = firstNonEmpty(o.Customer.Phone, w.Customer.Phone)
	}
	for _, a := range []*wireAddress{w.ShippingAddress, w.BillingAddress} {
		if a != nil && o.Customer.FirstName == "" && o.Customer.LastName == "" {
			o.Customer.FirstName, o.Customer.LastName = a.FirstName, a.LastName
		}
	}

	for _, li := range w.LineItems {
		name := li.Name
		if name == "" {
			name = li.Title
		}
		item := LineItem{
			ExternalID:       li.ID.String(),
			SKU:              li.SKU,
			Name:             name,
			Quantity:         li.Quantity,
			UnitPrice:        round2(float64(li.Price)),
			TotalPrice:       round2(float64(li.Price) * float64(li.Quantity)),
			RequiresShipping: li.RequiresShipping == nil || *li.RequiresShipping,
			Taxable:          li.Taxable == nil || *li.Taxable,
		}
		o.LineItems = append(o.LineItems, item)
	}

	// Totals: Total = Subtotal - Discount + Shipping + Tax, with Subtotal the
	// line items before discounts.
	o.Totals.Discount = round2(float64(w.TotalDiscounts))
	if w.TotalLineItems != nil {
		o.Totals.Subtotal = round2(float64(*w.TotalLineItems))
	} else {
		o.Totals.Subtotal = round2(float64(w.SubtotalPrice) + float64(w.TotalDiscounts))
	}
	if w.TotalShippingSet != nil {
		o.Totals.Shipping = round2(float64(w.TotalShippingSet.ShopMoney.Amount))
	} else {
		var s float64
		for _, l := range w.ShippingLines {
			s += float64(l.Price)
		}
		o.Totals.Shipping = round2(s)
	}
	o.Totals.Tax = round2(float64(w.TotalTax))
	o.Totals.Total = round2(float64(w.TotalPrice))

	fulfillment := ""
	if w.FulfillmentStatus != nil {
		fulfillment = *w.FulfillmentStatus
	}
	o.FulfillmentStatus = mapFulfillmentStatus(fulfillment)
	o.PaymentStatus = mapPaymentStatus(w.FinancialStatus)
	delivered := len(w.Fulfillments) > 0
	for _, f := range w.Fulfillments {
		if f.ShipmentStatus != "delivered" {
			delivered = false
		}
	}
	o.Status = mapStatus(w.FinancialStatus, o.FulfillmentStatus, w.CancelledAt != nil && *w.CancelledAt != "", delivered, o.Tags)
	return o, nil
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}

func mapPaymentStatus(financial string) string {
	switch financial {
	case "authorized":
		return PaymentAuthorized
	case "paid", "partially_refunded":
		return PaymentPaid
	case "partially_paid":
		return PaymentPartiallyPaid
	case "refunded":
		return PaymentRefunded
	case "voided", "expired":
		return PaymentVoided
	}
	return PaymentPending
}

func mapFulfillmentStatus(s string) string {
	switch s {
	case "fulfilled", "shipped":
		return FulfillmentFulfilled
	case "partial":
		return FulfillmentPartial
	}
	return FulfillmentUnfulfilled
}

// mapStatus derives the normalized order status from the platform state.
func mapStatus(financial, fulfillment string, cancelled, delivered bool, tags []string) string {
	switch {
	case cancelled || financial == "voided":
		return StatusCancelled
	case financial == "refunded":
		return StatusRefunded
	case fulfillment == FulfillmentFulfilled && delivered:
		return StatusDelivered
	case fulfillment == FulfillmentFulfilled:
		return StatusShipped
	case fulfillment == FulfillmentPartial:
		return StatusProcessing
	}
	for _, t := range tags {
		if strings.EqualFold(t, "on_hold") || strings.EqualFold(t, "on-hold") {
			return StatusOnHold
		}
	}
	switch financial {
	case "paid", "authorized", "partially_refunded":
		return StatusConfirmed
	}
	return StatusPending
}
