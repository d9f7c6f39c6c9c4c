package platforms

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// marketplace_a speaks the marketplace's selling-partner API as
// vendors/platforms/marketplace_a/README.md documents it:
//
//	POST https://api.amazon.com/auth/o2/token   (form: grant_type=refresh_token,
//	     refresh_token, client_id, client_secret) → {access_token, expires_in}
//	https://sellingpartnerapi-{na,eu,fe}.amazon.com/{operation path}
//	x-amz-access-token: {access_token}
//
// The access token is cached per credentials until shortly before it
// expires, one exchange serves every concurrent caller, and only the
// access token ever reaches the API host (the refresh token and client
// secret go to the token host alone). Orders are read with the Orders API
// v0 (getOrders with MarketplaceIds, FulfillmentChannels=MFN and
// LastUpdatedAfter, paged by NextToken; getOrder; getOrderItems, itself
// paged by NextToken) with a restricted data token from the Tokens API
// for getOrders and getOrder, so orders carry the buyer and the shipping
// address (without the PII role they have neither and cannot be
// labelled); shipments are confirmed with confirmShipment (v0, 204 No
// Content); supply sources (Supply Sources API 2020-07-01, paged by
// nextPageToken) are the locations. The regional host comes from the
// bridge's region (na, eu, fe) or else its marketplaceId. A throttled call
// is a 429; x-amzn-RateLimit-Limit names the operation's rate in requests
// a second, so the wait is one request's worth (1/rate); a 429 without it
// waits one request at the operation's documented rate, with jitter.
//
// With base URLs (FOS_MARKETPLACE_A_URL, FOS_MARKETPLACE_A_AUTH_URL,
// CONTRACT 8b) they replace the regional API host and the token host;
// paths and auth flows stay the same.

// Marketplace A hosts and wire constants.
const (
	MarketplaceAAuthURL         = "https://api.amazon.com"
	MarketplaceATokenPath       = "/auth/o2/token"
	MarketplaceATokenHeader     = "x-amz-access-token"
	MarketplaceARateLimitHeader = "x-amzn-RateLimit-Limit"
	marketplaceAMaxPerPage      = 100
	marketplaceASupplyPageSize  = 50
	// marketplaceAMaxItemPages bounds the item pages read for one order.
	marketplaceAMaxItemPages = 50
	// tokenRefreshMargin: a cached token is renewed this long before expiry.
	tokenRefreshMargin = time.Minute
	// A list page reads every order's items (getOrderItems: 0.5 calls a
	// second, burst 30, in production), so item calls sleep through a
	// throttle of up to marketplaceAItemsMaxSleep, at most
	// marketplaceAItemsRetries times an order, instead of failing the
	// page; and read items are kept (marketplaceAItemsCached orders), so a
	// page that fails anyway resumes where it stopped when retried.
	marketplaceAItemsMaxSleep = 5 * time.Second
	marketplaceAItemsRetries  = 10
	marketplaceAItemsCached   = 5000
)

// MarketplaceAEarliest is the LastUpdatedAfter of a first import (the
// API needs a lower bound).
var MarketplaceAEarliest = time.Date(2015, time.January, 1, 0, 0, 0, 0, time.UTC)

// marketplaceARegions maps marketplace ids to their selling region.
var marketplaceARegions = map[string]string{
	// North America
	"ATVPDKIKX0DER": "na", "A2EUQ1WTGCTBG2": "na", "A1AM78C64UM0Y8": "na", "A2Q3Y263D00KWC": "na",
	// Europe (and the Middle East, Africa, India)
	"A1F83G8C2ARO7P": "eu", "A1PA6795UKMFR9": "eu", "A13V1IB3VIYZZH": "eu", "APJ6JRA9NG5V4": "eu",
	"A1RKKUPIHCS9HS": "eu", "A1805IZSGTT6HS": "eu", "A2NODRKZP88ZB9": "eu", "A1C3SOZRARQ6R3": "eu",
	"A33AVAJ2PDY3EV": "eu", "A2VIGQ35RCS4UG": "eu", "A17E79C6D8DWNP": "eu", "ARBP9OOSHTCHU": "eu",
	"A21TJRUUN4KGV": "eu",
	// Far East
	"A19VAU5U5O7RUS": "fe", "A39IBJ37TRP1C6": "fe", "A1VC38T7YXB528": "fe",
}

// MarketplaceAHost returns the regional API host of a bridge's region
// (na, eu, fe; it wins when set) or marketplace id.
func MarketplaceAHost(region, marketplaceID string) (string, bool) {
	r := strings.ToLower(strings.TrimSpace(region))
	if r == "" {
		r = marketplaceARegions[strings.TrimSpace(marketplaceID)]
	}
	switch r {
	case "na", "eu", "fe":
		return "https://sellingpartnerapi-" + r + ".amazon.com", true
	}
	return "", false
}

var marketplaceAOrderIDRE = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z-]{0,39}$`)

// MarketplaceA is the marketplace_a connector. It implements Connector,
// FulfillmentPusher and LocationLister.
type MarketplaceA struct {
	apiURL  string // "" = the bridge's regional host
	authURL string
	client  *http.Client
	opts    connOptions
	tokens  tokenCache
	pacer   pacer
	items   itemsCache
}

// NewMarketplaceA returns the marketplace_a connector. apiURL replaces the
// regional API host (FOS_MARKETPLACE_A_URL; "" picks it from the bridge),
// authURL the token host (FOS_MARKETPLACE_A_AUTH_URL; "" is
// MarketplaceAAuthURL).
func NewMarketplaceA(apiURL, authURL string, client *http.Client, opts ...Option) *MarketplaceA {
	auth := strings.TrimRight(strings.TrimSpace(authURL), "/")
	if auth == "" {
		auth = MarketplaceAAuthURL
	}
	return &MarketplaceA{
		apiURL:  strings.TrimRight(strings.TrimSpace(apiURL), "/"),
		authURL: auth,
		client:  timedClient(client),
		opts:    applyOptions(marketplaceAMaxPerPage, marketplaceAMaxPerPage, opts),
		tokens:  tokenCache{entries: map[string]*tokenEntry{}},
	}
}

// marketplaceASeller is what one call needs from the bridge.
type marketplaceASeller struct {
	host          string
	marketplaceID string
	clientID      string
	clientSecret  string
	refreshToken  string
	cacheKey      string
}

func (c *MarketplaceA) seller(b Bridge) (marketplaceASeller, error) {
	s := marketplaceASeller{
		marketplaceID: configString(b.Config, "marketplaceId"),
		clientID:      configString(b.Config, "clientId"),
		clientSecret:  configString(b.Config, "clientSecret"),
		refreshToken:  configString(b.Config, "refreshToken"),
	}
	if s.clientID == "" || s.clientSecret == "" || s.refreshToken == "" {
		return s, invalidField("refreshToken", "bridge config is missing clientId, clientSecret or refreshToken")
	}
	if s.marketplaceID == "" {
		return s, invalidField("marketplaceId", "bridge config is missing marketplaceId")
	}
	// The region is checked even when a base URL replaces the host, so a
	// config that cannot work in production fails the same way anywhere.
	host, ok := MarketplaceAHost(configString(b.Config, "region"), s.marketplaceID)
	if !ok && (c.apiURL == "" || configString(b.Config, "region") != "") {
		return s, invalidField("region", "region must be na, eu or fe (or marketplaceId a known marketplace)")
	}
	s.host = firstNonEmpty(c.apiURL, host)
	sum := sha256.Sum256([]byte(c.authURL + "\x00" + s.clientID + "\x00" + s.clientSecret + "\x00" + s.refreshToken))
	s.cacheKey = hex.EncodeToString(sum[:])
	return s, nil
}

// tokenCache keeps one access token per credentials (keyed by a digest).
type tokenCache struct {
	mu      sync.Mutex
	entries map[string]*tokenEntry
}

type tokenEntry struct {
	// sem (capacity 1) serialises refreshes: callers queue behind the one
	// exchange in flight and then find its token.
	sem     chan struct{}
	token   string
	expires time.Time
	// deniedUntil: the Tokens API refused restricted data (no PII role);
	// it is not asked again before then.
	deniedUntil time.Time
}

// maxCachedTokens bounds the cache; past it, expired tokens are dropped.
const maxCachedTokens = 10_000

func (tc *tokenCache) entry(key string) *tokenEntry {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	e, ok := tc.entries[key]
	if !ok {
		if len(tc.entries) >= maxCachedTokens {
			tc.sweep()
		}
		e = &tokenEntry{sem: make(chan struct{}, 1)}
		tc.entries[key] = e
	}
	return e
}

// sweep drops the entries whose token has expired and that no caller is
// refreshing. tc.mu held.
func (tc *tokenCache) sweep() {
	now := time.Now()
	for k, e := range tc.entries {
		select {
		case e.sem <- struct{}{}:
			if now.After(e.expires) {
				delete(tc.entries, k)
			}
			<-e.sem
		default:
		}
	}
}

// accessToken returns a valid access token for the seller, exchanging the
// refresh token when none is cached. fresh reports an exchange.
func (c *MarketplaceA) accessToken(ctx context.Context, s marketplaceASeller) (token string, fresh bool, err error) {
	e := c.tokens.entry(s.cacheKey)
	select {
	case e.sem <- struct{}{}:
	case <-ctx.Done():
		return "", false, &Error{Code: CodeNetwork, Message: "platform call cancelled: " + ctx.Err().Error(), Retryable: true, cause: ctx.Err()}
	}
	defer func() { <-e.sem }()
	if e.token != "" && time.Now().Before(e.expires) {
		return e.token, false, nil
	}
	tok, ttl, err := c.exchange(ctx, s)
	if err != nil {
		return "", false, err
	}
	margin := min(tokenRefreshMargin, ttl/2)
	e.token, e.expires = tok, time.Now().Add(ttl-margin)
	return tok, true, nil
}

// dropToken forgets a cached token the API refused.
func (c *MarketplaceA) dropToken(s marketplaceASeller, token string) {
	c.tokens.drop(s.cacheKey, token)
}

// drop forgets the token cached under key when it is token.
func (tc *tokenCache) drop(key, token string) {
	e := tc.entry(key)
	select {
	case e.sem <- struct{}{}:
		if e.token == token {
			e.token = ""
		}
		<-e.sem
	default: // an exchange is in flight; it replaces the token anyway
	}
}

// exchange trades the refresh token for an access token at the token host.
// A refused grant or client (400/401 invalid_grant, invalid_client, ...)
// matches ErrUnauthorized.
func (c *MarketplaceA) exchange(ctx context.Context, s marketplaceASeller) (string, time.Duration, error) {
	form := url.Values{
		"grant_type": {"refresh_token"}, "refresh_token": {s.refreshToken},
		"client_id": {s.clientID}, "client_secret": {s.clientSecret},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.authURL+MarketplaceATokenPath, strings.NewReader(form.Encode()))
	if err != nil {
		return "", 0, &Error{Code: CodeInvalidConfig, Message: "cannot build token request", cause: err}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded;charset=UTF-8")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "fos-connector/1.0 (Language=Go)")
	resp, err := c.client.Do(req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return "", 0, &Error{Code: CodeNetwork, Message: "token call cancelled: " + ctxErr.Error(), Retryable: true, cause: ctxErr}
		}
		return "", 0, &Error{Code: CodeNetwork, Message: "token host unreachable: " + err.Error(), Retryable: true, cause: err}
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return "", 0, &Error{StatusCode: resp.StatusCode, Code: CodeNetwork, Message: "reading token response: " + err.Error(), Retryable: true, cause: err}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e := statusError(resp.StatusCode, raw, false)
		var body struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(raw, &body)
		switch body.Error {
		case "invalid_grant", "invalid_client", "unauthorized_client", "invalid_scope":
			e.Code, e.Retryable = CodeUnauthorized, false
		}
		if resp.StatusCode == http.StatusTooManyRequests {
			return "", 0, &RateLimitError{Err: e, RetryAfter: marketplaceAWaitFor("lwaToken")(resp.Header)}
		}
		return "", 0, e
	}
	var tok struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		ExpiresIn   int    `json:"expires_in"`
	}
	if err := decodeJSON(raw, &tok, "token response"); err != nil {
		return "", 0, err
	}
	if tok.AccessToken == "" {
		return "", 0, badResponse("token response has no access_token", nil)
	}
	ttl := time.Duration(tok.ExpiresIn) * time.Second
	if ttl <= 0 {
		ttl = time.Hour // the documented lifetime
	}
	return tok.AccessToken, ttl, nil
}

// marketplaceARates are the operations' documented default rates
// (requests a second; vendors/platforms/marketplace_a §4). Supply sources
// have no published usage plan: one a second is assumed.
var marketplaceARates = map[string]float64{
	"getOrders": 0.0167, "getOrder": 0.5, "getOrderItems": 0.5, "confirmShipment": 2,
	"createRestrictedDataToken": 1, "getSupplySources": 1,
}

// marketplaceAWait is the wait a throttled call asks for: Retry-After
// when present, else one request at the x-amzn-RateLimit-Limit rate.
func marketplaceAWait(h http.Header) time.Duration {
	if d := secondsHeader(h, "Retry-After"); d > 0 {
		return d
	}
	rate, err := strconv.ParseFloat(strings.TrimSpace(h.Get(MarketplaceARateLimitHeader)), 64)
	if err != nil || rate <= 0 {
		return 0
	}
	return time.Duration(float64(time.Second) / rate).Round(time.Millisecond)
}

// marketplaceAWaitFor is marketplaceAWait for one operation: a 429 that
// names no rate waits one request at the operation's documented rate plus
// up to a fifth more (jitter, so callers throttled together do not come
// back together), never a tight loop.
func marketplaceAWaitFor(op string) func(http.Header) time.Duration {
	return func(h http.Header) time.Duration {
		if d := marketplaceAWait(h); d > 0 {
			return d
		}
		return MarketplaceADocumentedWait(op)
	}
}

// MarketplaceADocumentedWait is one request's worth of an operation's
// documented rate with up to 20 % jitter (one second for an operation
// without a documented rate).
func MarketplaceADocumentedWait(op string) time.Duration {
	base := time.Second
	if r := marketplaceARates[op]; r > 0 {
		base = time.Duration(float64(time.Second) / r)
	}
	return base + time.Duration(rand.Int64N(int64(base)/5+1))
}

// call sends one API call (operation op, whose quota it spends) with the
// access token. A 401/403 drops the cached token; when that token came
// from the cache, the call is tried once more with a fresh one (a token
// revoked before its expiry).
func (c *MarketplaceA) call(ctx context.Context, s marketplaceASeller, op, method, path string, q url.Values, body any, orderLookup bool) (*wireResponse, error) {
	return c.callAs(ctx, s, op, method, path, q, body, orderLookup, false)
}

// callRestricted is call for getOrders and getOrder with a restricted data
// token (so the buyer and the shipping address come back); without one
// (the application has no PII role) the access token is used and the
// orders have no street, name or e-mail.
func (c *MarketplaceA) callRestricted(ctx context.Context, s marketplaceASeller, op, path string, q url.Values, orderLookup bool) (*wireResponse, error) {
	return c.callAs(ctx, s, op, http.MethodGet, path, q, nil, orderLookup, true)
}

func (c *MarketplaceA) callAs(ctx context.Context, s marketplaceASeller, op, method, path string, q url.Values, body any, orderLookup, restricted bool) (*wireResponse, error) {
	for attempt := 0; ; attempt++ {
		var token string
		var fresh bool
		var err error
		if restricted {
			if token, fresh, err = c.restrictedToken(ctx, s); err != nil {
				return nil, err
			}
			restricted = token != ""
		}
		if !restricted {
			if token, fresh, err = c.accessToken(ctx, s); err != nil {
				return nil, err
			}
		}
		h := http.Header{}
		h.Set(MarketplaceATokenHeader, token)
		resp, err := wireCall{
			method: method, url: joinURL(s.host, path, q), header: h, body: body, orderLookup: orderLookup,
			// Quotas are per selling partner, application and operation.
			pace: pacing{pacer: &c.pacer, key: s.cacheKey + "/" + op, retryAfter: marketplaceAWaitFor(op), maxSleep: marketplaceAMaxSleep(op)},
		}.do(ctx, c.client)
		if err != nil && errors.Is(err, ErrUnauthorized) {
			if restricted {
				c.tokens.drop(s.rdtKey(), token)
			} else {
				c.dropToken(s, token)
			}
			if !fresh && attempt == 0 {
				continue
			}
		}
		return resp, err
	}
}

// The Tokens API and what the service's restricted data token covers:
// getOrders and getOrder (generic path), buyer and shipping address.
const (
	MarketplaceARDTPath = "/tokens/2021-03-01/restrictedDataToken"
	marketplaceARDTKey  = "\x00rdt"
	// marketplaceARDTDenial: how long a refusal (no PII role) is believed.
	marketplaceARDTDenial = 10 * time.Minute
)

var marketplaceARDTResources = []map[string]any{
	{"method": http.MethodGet, "path": "/orders/v0/orders", "dataElements": []string{"buyerInfo", "shippingAddress"}},
	{"method": http.MethodGet, "path": "/orders/v0/orders/{orderId}", "dataElements": []string{"buyerInfo", "shippingAddress"}},
}

// rdtKey caches a seller's restricted data token per regional host.
func (s marketplaceASeller) rdtKey() string { return s.cacheKey + marketplaceARDTKey + "\x00" + s.host }

// restrictedToken returns a cached restricted data token for the seller,
// asking the Tokens API (createRestrictedDataToken) when none is cached;
// "" when the application has no role for the data (403: the caller goes
// on with the access token), asked again after marketplaceARDTDenial.
func (c *MarketplaceA) restrictedToken(ctx context.Context, s marketplaceASeller) (string, bool, error) {
	e := c.tokens.entry(s.rdtKey())
	select {
	case e.sem <- struct{}{}:
	case <-ctx.Done():
		return "", false, &Error{Code: CodeNetwork, Message: "platform call cancelled: " + ctx.Err().Error(), Retryable: true, cause: ctx.Err()}
	}
	defer func() { <-e.sem }()
	now := time.Now()
	if e.token != "" && now.Before(e.expires) {
		return e.token, false, nil
	}
	if now.Before(e.deniedUntil) {
		return "", false, nil
	}
	resp, err := c.call(ctx, s, "createRestrictedDataToken", http.MethodPost, MarketplaceARDTPath, nil,
		map[string]any{"restrictedResources": marketplaceARDTResources}, false)
	var pe *Error
	if errors.As(err, &pe) && pe.StatusCode == http.StatusForbidden {
		e.deniedUntil = now.Add(marketplaceARDTDenial)
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	var out struct {
		Token     string `json:"restrictedDataToken"`
		ExpiresIn int    `json:"expiresIn"`
	}
	if err := decodeJSON(resp.body, &out, "restricted data token response"); err != nil {
		return "", false, err
	}
	if out.Token == "" {
		return "", false, badResponse("restricted data token response has no restrictedDataToken", nil)
	}
	ttl := time.Duration(out.ExpiresIn) * time.Second
	if ttl <= 0 {
		ttl = time.Hour
	}
	e.token, e.expires = out.Token, now.Add(ttl-min(tokenRefreshMargin, ttl/2))
	return out.Token, true, nil
}

// marketplaceAMaxSleep is the longest an operation's call sleeps for its
// quota (0: the default).
func marketplaceAMaxSleep(op string) time.Duration {
	if op == "getOrderItems" {
		return marketplaceAItemsMaxSleep
	}
	return 0
}

// itemsCache keeps the raw items of orders by seller, order id and
// LastUpdateDate (an order's items change only with it), oldest dropped
// first.
type itemsCache struct {
	mu    sync.Mutex
	items map[string][]json.RawMessage
	keys  []string
}

func (ic *itemsCache) get(key string) ([]json.RawMessage, bool) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	v, ok := ic.items[key]
	return v, ok
}

func (ic *itemsCache) put(key string, v []json.RawMessage) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if ic.items == nil {
		ic.items = map[string][]json.RawMessage{}
	}
	if _, ok := ic.items[key]; !ok {
		ic.keys = append(ic.keys, key)
	}
	ic.items[key] = v
	for len(ic.keys) > marketplaceAItemsCached {
		delete(ic.items, ic.keys[0])
		ic.keys = ic.keys[1:]
	}
}

// v0 wire types.
type mpaMoney struct {
	CurrencyCode string    `json:"CurrencyCode"`
	Amount       flexFloat `json:"Amount"`
}

func (m *mpaMoney) amount() float64 {
	if m == nil {
		return 0
	}
	return float64(m.Amount)
}

type mpaAddress struct {
	Name          string `json:"Name"`
	CompanyName   string `json:"CompanyName"`
	AddressLine1  string `json:"AddressLine1"`
	AddressLine2  string `json:"AddressLine2"`
	AddressLine3  string `json:"AddressLine3"`
	City          string `json:"City"`
	StateOrRegion string `json:"StateOrRegion"`
	PostalCode    string `json:"PostalCode"`
	CountryCode   string `json:"CountryCode"`
	Phone         string `json:"Phone"`
}

func (a *mpaAddress) normalize() *Address {
	if a == nil {
		return nil
	}
	out := &Address{
		Name: a.Name, Company: a.CompanyName, Address1: a.AddressLine1,
		Address2: strings.Join(nonEmpty(a.AddressLine2, a.AddressLine3), ", "), City: a.City,
		Province: a.StateOrRegion, Zip: a.PostalCode, Country: a.CountryCode, CountryCode: a.CountryCode, Phone: a.Phone,
	}
	if s := strings.TrimSpace(a.StateOrRegion); len(s) == 2 {
		out.ProvinceCode = strings.ToUpper(s)
	}
	return out
}

type mpaOrder struct {
	AmazonOrderID   string      `json:"AmazonOrderId"`
	SellerOrderID   string      `json:"SellerOrderId"`
	PurchaseDate    string      `json:"PurchaseDate"`
	LastUpdateDate  string      `json:"LastUpdateDate"`
	OrderStatus     string      `json:"OrderStatus"`
	MarketplaceID   string      `json:"MarketplaceId"`
	OrderTotal      *mpaMoney   `json:"OrderTotal"`
	ShippingAddress *mpaAddress `json:"ShippingAddress"`
	BuyerInfo       *struct {
		BuyerEmail string `json:"BuyerEmail"`
		BuyerName  string `json:"BuyerName"`
	} `json:"BuyerInfo"`
}

type mpaItem struct {
	OrderItemID       string    `json:"OrderItemId"`
	SellerSKU         string    `json:"SellerSKU"`
	Title             string    `json:"Title"`
	QuantityOrdered   int       `json:"QuantityOrdered"`
	QuantityShipped   int       `json:"QuantityShipped"`
	ItemPrice         *mpaMoney `json:"ItemPrice"`
	ShippingPrice     *mpaMoney `json:"ShippingPrice"`
	ItemTax           *mpaMoney `json:"ItemTax"`
	ShippingTax       *mpaMoney `json:"ShippingTax"`
	ShippingDiscount  *mpaMoney `json:"ShippingDiscount"`
	PromotionDiscount *mpaMoney `json:"PromotionDiscount"`
}

// MarketplaceAOrder maps a v0 order object and its order items (the
// OrderItems of getOrderItems) onto Order. Buyer and address details the
// seller may not see without a restricted data token are simply empty.
// SourceData is the order object with the raw items under "OrderItems".
func MarketplaceAOrder(rawOrder json.RawMessage, rawItems []json.RawMessage) (Order, error) {
	var w mpaOrder
	if err := json.Unmarshal(rawOrder, &w); err != nil {
		return Order{}, badResponse("order payload does not parse", err)
	}
	if w.AmazonOrderID == "" {
		return Order{}, badResponse("order payload has no AmazonOrderId", nil)
	}
	source, err := rawObject(rawOrder)
	if err != nil {
		return Order{}, err
	}
	itemsSource := make([]any, 0, len(rawItems))
	items := make([]mpaItem, 0, len(rawItems))
	for _, raw := range rawItems {
		var it mpaItem
		if err := json.Unmarshal(raw, &it); err != nil {
			return Order{}, badResponse("order item payload does not parse", err)
		}
		m, err := rawObject(raw)
		if err != nil {
			return Order{}, err
		}
		items = append(items, it)
		itemsSource = append(itemsSource, m)
	}
	source["OrderItems"] = itemsSource

	o := Order{
		ExternalID:      w.AmazonOrderID,
		OrderNumber:     firstNonEmpty(w.SellerOrderID, w.AmazonOrderID),
		ShippingAddress: w.ShippingAddress.normalize(),
		LineItems:       []LineItem{},
		Tags:            []string{},
		OrderedAt:       parseTime(w.PurchaseDate),
		UpdatedAt:       parseTime(w.LastUpdateDate),
		SourceData:      source,
	}
	if w.BuyerInfo != nil {
		o.Customer.Email = w.BuyerInfo.BuyerEmail
		o.Customer.FirstName, o.Customer.LastName = splitName(w.BuyerInfo.BuyerName)
	}
	if o.ShippingAddress != nil {
		o.Customer.Phone = o.ShippingAddress.Phone
	}

	currency := ""
	if w.OrderTotal != nil {
		currency = w.OrderTotal.CurrencyCode
	}
	var t Totals
	for _, it := range items {
		price := it.ItemPrice.amount()
		unit := 0.0
		if it.QuantityOrdered > 0 {
			unit = price / float64(it.QuantityOrdered)
		}
		if currency == "" && it.ItemPrice != nil {
			currency = it.ItemPrice.CurrencyCode
		}
		t.Subtotal += price
		t.Shipping += it.ShippingPrice.amount()
		t.Tax += it.ItemTax.amount() + it.ShippingTax.amount()
		t.Discount += it.PromotionDiscount.amount() + it.ShippingDiscount.amount()
		o.LineItems = append(o.LineItems, LineItem{
			ExternalID: it.OrderItemID, SKU: it.SellerSKU, Name: it.Title, Quantity: it.QuantityOrdered,
			UnitPrice: round2(unit), TotalPrice: round2(price), RequiresShipping: true, Taxable: true,
		})
	}
	t.Total = t.Subtotal - t.Discount + t.Shipping + t.Tax
	if w.OrderTotal != nil {
		t.Total = w.OrderTotal.amount()
	}
	o.Totals = Totals{Subtotal: round2(t.Subtotal), Shipping: round2(t.Shipping), Tax: round2(t.Tax), Discount: round2(t.Discount), Total: round2(t.Total)}
	o.Currency = strings.ToUpper(firstNonEmpty(currency, "USD"))
	o.Status, o.PaymentStatus, o.FulfillmentStatus = marketplaceAStatuses(w.OrderStatus)
	return o, nil
}

// marketplaceAStatuses maps OrderStatus (PendingAvailability, Pending,
// Unshipped, PartiallyShipped, Shipped, InvoiceUnconfirmed, Canceled,
// Unfulfillable) onto the normalized statuses.
func marketplaceAStatuses(s string) (status, payment, fulfillment string) {
	switch s {
	case "Unshipped", "InvoiceUnconfirmed":
		return StatusConfirmed, PaymentPaid, FulfillmentUnfulfilled
	case "PartiallyShipped":
		return StatusProcessing, PaymentPaid, FulfillmentPartial
	case "Shipped":
		return StatusShipped, PaymentPaid, FulfillmentFulfilled
	case "Canceled":
		return StatusCancelled, PaymentVoided, FulfillmentUnfulfilled
	case "Unfulfillable":
		return StatusOnHold, PaymentPaid, FulfillmentUnfulfilled
	}
	return StatusPending, PaymentPending, FulfillmentUnfulfilled
}

// v0 envelope: {"payload": {...}, "errors": [...]}.
func mpaPayload(body []byte, what string, v any) error {
	var env struct {
		Payload json.RawMessage `json:"payload"`
	}
	if err := decodeJSON(body, &env, what); err != nil {
		return err
	}
	if len(env.Payload) == 0 || string(env.Payload) == "null" {
		return badResponse(what+" has no payload", nil)
	}
	return decodeJSON(env.Payload, v, what)
}

// orderItems reads every page of GET /orders/v0/orders/{id}/orderItems,
// sleeping through short throttles (marketplaceAItemsMaxSleep).
func (c *MarketplaceA) orderItems(ctx context.Context, s marketplaceASeller, orderID string) ([]json.RawMessage, error) {
	var all []json.RawMessage
	token := ""
	for page, throttled := 0, 0; page < marketplaceAMaxItemPages; page++ {
		var q url.Values
		if token != "" {
			q = url.Values{"NextToken": {token}}
		}
		resp, err := c.call(ctx, s, "getOrderItems", http.MethodGet, "/orders/v0/orders/"+url.PathEscape(orderID)+"/orderItems", q, nil, true)
		if wait, limited := RetryAfter(err); limited && wait <= marketplaceAItemsMaxSleep && throttled < marketplaceAItemsRetries {
			// The pacer holds the next call for the wait: try the page again.
			throttled++
			page--
			continue
		}
		if err != nil {
			return nil, err
		}
		var p struct {
			OrderItems []json.RawMessage `json:"OrderItems"`
			NextToken  string            `json:"NextToken"`
		}
		if err := mpaPayload(resp.body, "order items response", &p); err != nil {
			return nil, err
		}
		all = append(all, p.OrderItems...)
		if p.NextToken == "" || p.NextToken == token {
			return all, nil
		}
		token = p.NextToken
	}
	return all, nil
}

// withItems maps an order with its items, read once per LastUpdateDate.
func (c *MarketplaceA) withItems(ctx context.Context, s marketplaceASeller, rawOrder json.RawMessage) (Order, error) {
	var id struct {
		AmazonOrderID  string `json:"AmazonOrderId"`
		LastUpdateDate string `json:"LastUpdateDate"`
	}
	if err := json.Unmarshal(rawOrder, &id); err != nil || id.AmazonOrderID == "" {
		return Order{}, badResponse("order payload has no AmazonOrderId", err)
	}
	key := s.cacheKey + "\x00" + id.AmazonOrderID + "\x00" + id.LastUpdateDate
	items, ok := c.items.get(key)
	if !ok || id.LastUpdateDate == "" {
		var err error
		if items, err = c.orderItems(ctx, s, id.AmazonOrderID); err != nil {
			return Order{}, err
		}
		if id.LastUpdateDate != "" {
			c.items.put(key, items)
		}
	}
	return MarketplaceAOrder(rawOrder, items)
}

// FetchOrder implements Connector: getOrder, then getOrderItems.
func (c *MarketplaceA) FetchOrder(ctx context.Context, b Bridge, externalID string) (*Order, error) {
	s, err := c.seller(b)
	if err != nil {
		return nil, err
	}
	externalID = strings.TrimSpace(externalID)
	if !marketplaceAOrderIDRE.MatchString(externalID) {
		return nil, notFoundID(externalID)
	}
	resp, err := c.callRestricted(ctx, s, "getOrder", "/orders/v0/orders/"+externalID, nil, true)
	if err != nil {
		return nil, err
	}
	var raw json.RawMessage
	if err := mpaPayload(resp.body, "order response", &raw); err != nil {
		return nil, err
	}
	o, err := c.withItems(ctx, s, raw)
	if err != nil {
		return nil, err
	}
	return &o, nil
}

// ListOrders implements Connector: getOrders with MarketplaceIds,
// FulfillmentChannels=MFN, LastUpdatedAfter (MarketplaceAEarliest when
// since is zero) and MaxResultsPerPage; the cursor is the NextToken, sent
// back with MarketplaceIds alone. Each order's items are read with
// getOrderItems.
func (c *MarketplaceA) ListOrders(ctx context.Context, b Bridge, since time.Time, cursor string) ([]Order, string, error) {
	s, err := c.seller(b)
	if err != nil {
		return nil, "", err
	}
	q := url.Values{"MarketplaceIds": {s.marketplaceID}}
	if cursor != "" {
		q.Set("NextToken", cursor)
	} else {
		if since.IsZero() {
			since = MarketplaceAEarliest
		}
		q.Set("LastUpdatedAfter", since.UTC().Format(time.RFC3339))
		q.Set("FulfillmentChannels", "MFN")
		q.Set("MaxResultsPerPage", strconv.Itoa(c.opts.pageSize))
	}
	resp, err := c.callRestricted(ctx, s, "getOrders", "/orders/v0/orders", q, false)
	if err != nil {
		return nil, "", err
	}
	var p struct {
		Orders    []json.RawMessage `json:"Orders"`
		NextToken string            `json:"NextToken"`
	}
	if err := mpaPayload(resp.body, "order list response", &p); err != nil {
		return nil, "", err
	}
	out := make([]Order, 0, len(p.Orders))
	for _, raw := range p.Orders {
		o, err := c.withItems(ctx, s, raw)
		if err != nil {
			return nil, "", err
		}
		out = append(out, o)
	}
	return out, p.NextToken, nil
}

// MarketplaceACarrier returns the carrierCode and carrierName of a carrier
// name (CarrierName): a code of MarketplaceACarrierCodes (matched ignoring
// case), or "Other"; carrierName is the name either way (required with
// "Other", and sent with a known code too, as the published request does).
func MarketplaceACarrier(name string) (code, carrierName string) {
	name = strings.TrimSpace(name)
	for _, c := range MarketplaceACarrierCodes {
		if strings.EqualFold(c, name) {
			return c, c
		}
	}
	return MarketplaceAOtherCarrier, name
}

// MarketplaceAPackageReference is the packageReferenceId of the package
// with a tracking number: the marketplace takes only positive numbers,
// unique within the order; this one is 1 + the first 31 bits of the
// number's SHA-256, the same on every attempt.
func MarketplaceAPackageReference(tracking string) string {
	sum := sha256.Sum256([]byte(strings.ToUpper(strings.TrimSpace(tracking))))
	n := (uint32(sum[0])<<24 | uint32(sum[1])<<16 | uint32(sum[2])<<8 | uint32(sum[3])) & 0x7fffffff
	return strconv.FormatUint(uint64(n)+1, 10)
}

// MarketplaceAShipment is the confirmShipment body.
type MarketplaceAShipment struct {
	MarketplaceID string                    `json:"marketplaceId"`
	PackageDetail MarketplaceAPackageDetail `json:"packageDetail"`
}

// MarketplaceAPackageDetail is one confirmed package.
type MarketplaceAPackageDetail struct {
	PackageReferenceID     string                 `json:"packageReferenceId"`
	CarrierCode            string                 `json:"carrierCode"`
	CarrierName            string                 `json:"carrierName,omitempty"`
	ShippingMethod         string                 `json:"shippingMethod,omitempty"`
	TrackingNumber         string                 `json:"trackingNumber"`
	ShipDate               string                 `json:"shipDate"`
	ShipFromSupplySourceID string                 `json:"shipFromSupplySourceId,omitempty"`
	OrderItems             []MarketplaceAShipItem `json:"orderItems"`
}

// MarketplaceAShipItem is a quantity of one order item in a package.
type MarketplaceAShipItem struct {
	OrderItemID string `json:"orderItemId"`
	Quantity    int    `json:"quantity"`
}

// PushFulfillment implements FulfillmentPusher with confirmShipment. It
// first reads the order: a Shipped order, or one whose requested items are
// all shipped already, was confirmed before and nothing is sent (Created
// false); a Canceled or Pending order has nothing to fulfill. Otherwise
// the package holds the unshipped quantity of the requested items (all
// items when none are named); its packageReferenceId is a positive number
// derived from the tracking number (MarketplaceAPackageReference), so a
// retry names the same package. The carrier goes as carrierCode
// (MarketplaceACarrier), the service as shippingMethod.
func (c *MarketplaceA) PushFulfillment(ctx context.Context, b Bridge, f Fulfillment) (FulfillmentResult, error) {
	s, err := c.seller(b)
	if err != nil {
		return FulfillmentResult{}, err
	}
	orderID := strings.TrimSpace(f.OrderExternalID)
	if !marketplaceAOrderIDRE.MatchString(orderID) {
		return FulfillmentResult{}, notFoundID(orderID)
	}
	tracking := strings.TrimSpace(f.TrackingNumber)
	name, err := CarrierName(b, f.Carrier, f.Service)
	if err != nil {
		return FulfillmentResult{}, err
	}
	if tracking == "" || name == "" {
		return FulfillmentResult{}, &Error{Code: CodeInvalidRequest, Message: "fulfillment needs a tracking number and a carrier"}
	}
	resp, err := c.call(ctx, s, "getOrder", http.MethodGet, "/orders/v0/orders/"+orderID, nil, nil, true)
	if err != nil {
		return FulfillmentResult{}, err
	}
	var order mpaOrder
	if err := mpaPayload(resp.body, "order response", &order); err != nil {
		return FulfillmentResult{}, err
	}
	switch order.OrderStatus {
	case "Shipped":
		return FulfillmentResult{ExternalID: tracking, Created: false}, nil
	case "Canceled", "Pending", "PendingAvailability", "Unfulfillable":
		return FulfillmentResult{}, &Error{Code: CodeNothingToFulfill, Message: "order " + orderID + " is " + order.OrderStatus}
	}
	rawItems, err := c.orderItems(ctx, s, orderID)
	if err != nil {
		return FulfillmentResult{}, err
	}
	wanted, unknown := map[string]int{}, map[string]bool{}
	for _, l := range f.LineItems {
		if l.Quantity > 0 {
			wanted[l.ExternalID] += l.Quantity
			unknown[l.ExternalID] = true
		}
	}
	var lines []MarketplaceAShipItem
	for _, raw := range rawItems {
		var it mpaItem
		if err := json.Unmarshal(raw, &it); err != nil {
			return FulfillmentResult{}, badResponse("order item payload does not parse", err)
		}
		delete(unknown, it.OrderItemID)
		open := it.QuantityOrdered - it.QuantityShipped
		if len(wanted) > 0 {
			open = min(open, wanted[it.OrderItemID])
		}
		if open > 0 {
			lines = append(lines, MarketplaceAShipItem{OrderItemID: it.OrderItemID, Quantity: open})
		}
	}
	if len(unknown) > 0 {
		return FulfillmentResult{}, &Error{Code: CodeInvalidRequest, Message: "order " + orderID + " has no item " + strings.Join(sortedKeys(unknown), ", ")}
	}
	if len(lines) == 0 {
		return FulfillmentResult{ExternalID: tracking, Created: false}, nil
	}
	shipDate := f.ShipDate
	if shipDate.IsZero() {
		shipDate = time.Now()
	}
	code, carrierName := MarketplaceACarrier(name)
	body := MarketplaceAShipment{MarketplaceID: firstNonEmpty(order.MarketplaceID, s.marketplaceID), PackageDetail: MarketplaceAPackageDetail{
		PackageReferenceID: MarketplaceAPackageReference(tracking), CarrierCode: code, CarrierName: carrierName,
		ShippingMethod: strings.TrimSpace(f.Service),
		TrackingNumber: tracking, ShipDate: shipDate.UTC().Format("2006-01-02T15:04:05.000Z"), OrderItems: lines,
	}}
	if _, err := c.call(ctx, s, "confirmShipment", http.MethodPost, "/orders/v0/orders/"+orderID+"/shipmentConfirmation", nil, body, true); err != nil {
		return FulfillmentResult{}, err
	}
	return FulfillmentResult{ExternalID: tracking, Created: true}, nil
}

// ListLocations implements LocationLister: every page of GET
// /supplySources/2020-07-01/supplySources. The list carries no status, so
// every supply source is active; the first is the default.
func (c *MarketplaceA) ListLocations(ctx context.Context, b Bridge) ([]Location, error) {
	s, err := c.seller(b)
	if err != nil {
		return nil, err
	}
	out := []Location{}
	token := ""
	for page := 0; page < 1000; page++ {
		q := url.Values{"pageSize": {strconv.Itoa(marketplaceASupplyPageSize)}}
		if token != "" {
			q.Set("nextPageToken", token)
		}
		resp, err := c.call(ctx, s, "getSupplySources", http.MethodGet, "/supplySources/2020-07-01/supplySources", q, nil, false)
		if err != nil {
			return nil, err
		}
		var env struct {
			SupplySources []struct {
				SupplySourceID   string `json:"supplySourceId"`
				SupplySourceCode string `json:"supplySourceCode"`
				Alias            string `json:"alias"`
				Status           string `json:"status"`
				Address          *struct {
					Name          string `json:"name"`
					AddressLine1  string `json:"addressLine1"`
					AddressLine2  string `json:"addressLine2"`
					AddressLine3  string `json:"addressLine3"`
					City          string `json:"city"`
					StateOrRegion string `json:"stateOrRegion"`
					PostalCode    string `json:"postalCode"`
					CountryCode   string `json:"countryCode"`
					Phone         string `json:"phone"`
				} `json:"address"`
			} `json:"supplySources"`
			NextPageToken string `json:"nextPageToken"`
		}
		if err := decodeJSON(resp.body, &env, "supply source list"); err != nil {
			return nil, err
		}
		for _, ss := range env.SupplySources {
			loc := Location{
				ExternalID: ss.SupplySourceID, Name: firstNonEmpty(ss.Alias, ss.SupplySourceCode),
				Active: ss.Status == "" || strings.EqualFold(ss.Status, "Active"), IsDefault: len(out) == 0,
			}
			if a := ss.Address; a != nil {
				loc.Address = (&mpaAddress{Name: firstNonEmpty(a.Name, loc.Name), AddressLine1: a.AddressLine1, AddressLine2: a.AddressLine2,
					AddressLine3: a.AddressLine3, City: a.City, StateOrRegion: a.StateOrRegion, PostalCode: a.PostalCode,
					CountryCode: a.CountryCode, Phone: a.Phone}).normalize()
			}
			out = append(out, loc)
		}
		if env.NextPageToken == "" || env.NextPageToken == token || len(env.SupplySources) == 0 {
			return out, nil
		}
		token = env.NextPageToken
	}
	return out, nil
}

var _ interface {
	Connector
	FulfillmentPusher
	LocationLister
} = (*MarketplaceA)(nil)
