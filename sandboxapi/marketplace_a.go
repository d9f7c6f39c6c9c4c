package sandboxapi

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
)

// marketplace_a: the marketplace's selling-partner API
// (vendors/platforms/marketplace_a) under {prefix} (default
// /platforms/marketplace_a, FOS_MARKETPLACE_A_URL under FOS_SANDBOX=1),
// which stands for the regional host https://sellingpartnerapi-{na,eu,fe}.amazon.com,
// and its token host under {authPrefix} (default
// /platforms/marketplace_a/lwa, FOS_MARKETPLACE_A_AUTH_URL), which stands
// for https://api.amazon.com:
//
//	POST {authPrefix}/auth/o2/token        form grant_type=refresh_token, refresh_token,
//	                                       client_id, client_secret → {access_token,
//	                                       token_type, expires_in: 3600}
//	GET  /orders/v0/orders                 MarketplaceIds, CreatedAfter/Before or
//	                                       LastUpdatedAfter/Before, OrderStatuses,
//	                                       FulfillmentChannels, MaxResultsPerPage (1-100), NextToken
//	GET  /orders/v0/orders/{orderId}
//	GET  /orders/v0/orders/{orderId}/orderItems   NextToken (two items a page)
//	POST /orders/v0/orders/{orderId}/shipmentConfirmation   204; packageReferenceId a
//	                                       positive number, carrierCode a known code
//	                                       ("Other" with carrierName)
//	POST /tokens/2021-03-01/restrictedDataToken  (marketplace_a_rdt.go: PII needs an RDT)
//	GET  /supplySources/2020-07-01/supplySources          pageSize, nextPageToken
//	GET  /supplySources/2020-07-01/supplySources/{id}
//
// The seller is the refresh token: its access token ("Atza|sbx.…") names
// a digest of it (never the token itself), so the API host never sees the
// refresh token. Every seller holds StoreOrderCount(refreshToken) merchant-
// fulfilled orders built deterministically, every fifth without the buyer's
// name, e-mail, phone and street (no PII role), three supply sources, and
// the shipments confirmed through the API (kept per handler).
//
// Errors are {"errors": [{"code", "message", "details"}]}; the token host
// answers OAuth errors {"error", "error_description"}: a "sandbox-fail"
// client id or secret is 401 invalid_client, a "sandbox-fail" refresh
// token 400 invalid_grant; an unknown access token is 403; a query value
// "sandbox-fail" is 503. A refresh token "sandbox-ratelimit" makes every
// other getOrders call a 429 QuotaExceeded. Every answer carries
// x-amzn-RateLimit-Limit (the sandbox's rates: 1 a second for order
// reads, 2 for confirmations, 10 for supply sources) and x-amzn-RequestId.

const (
	mpaTokenPrefix     = "Atza|sbx."
	mpaDefaultPage     = 100
	mpaItemsPerPage    = 2
	mpaSupplyDefault   = 10
	mpaRateOrders      = "1"
	mpaRateConfirm     = "2"
	mpaRateSupply      = "10"
	mpaRateLimitHeader = "x-amzn-RateLimit-Limit"
)

type mpaSandbox struct {
	now      func() time.Time
	mu       sync.Mutex
	accounts storeTable[mpaAccount]
	buckets  map[string]*mpaBucket // metered sellers' usage plans
}

type mpaAccount struct {
	orders    []mpaOrder
	byID      map[string]int
	items     map[string][]mpaItem
	sources   []mpaSupplySource
	shipments []mpaConfirmation
	calls     int
}

type mpaMoney struct {
	CurrencyCode string `json:"CurrencyCode"`
	Amount       string `json:"Amount"`
}

type mpaAddress struct {
	Name          string `json:"Name,omitempty"`
	AddressLine1  string `json:"AddressLine1,omitempty"`
	AddressLine2  string `json:"AddressLine2,omitempty"`
	City          string `json:"City"`
	StateOrRegion string `json:"StateOrRegion"`
	PostalCode    string `json:"PostalCode"`
	CountryCode   string `json:"CountryCode"`
	Phone         string `json:"Phone,omitempty"`
	AddressType   string `json:"AddressType,omitempty"`
}

type mpaBuyer struct {
	BuyerEmail string `json:"BuyerEmail,omitempty"`
	BuyerName  string `json:"BuyerName,omitempty"`
}

type mpaOrder struct {
	AmazonOrderID                string      `json:"AmazonOrderId"`
	SellerOrderID                string      `json:"SellerOrderId"`
	PurchaseDate                 string      `json:"PurchaseDate"`
	LastUpdateDate               string      `json:"LastUpdateDate"`
	OrderStatus                  string      `json:"OrderStatus"`
	FulfillmentChannel           string      `json:"FulfillmentChannel"`
	SalesChannel                 string      `json:"SalesChannel"`
	ShipServiceLevel             string      `json:"ShipServiceLevel"`
	OrderTotal                   mpaMoney    `json:"OrderTotal"`
	NumberOfItemsShipped         int         `json:"NumberOfItemsShipped"`
	NumberOfItemsUnshipped       int         `json:"NumberOfItemsUnshipped"`
	PaymentMethod                string      `json:"PaymentMethod"`
	PaymentMethodDetails         []string    `json:"PaymentMethodDetails"`
	MarketplaceID                string      `json:"MarketplaceId"`
	ShipmentServiceLevelCategory string      `json:"ShipmentServiceLevelCategory"`
	OrderType                    string      `json:"OrderType"`
	EarliestShipDate             string      `json:"EarliestShipDate"`
	LatestShipDate               string      `json:"LatestShipDate"`
	IsBusinessOrder              bool        `json:"IsBusinessOrder"`
	IsPrime                      bool        `json:"IsPrime"`
	IsPremiumOrder               bool        `json:"IsPremiumOrder"`
	IsGlobalExpressEnabled       bool        `json:"IsGlobalExpressEnabled"`
	IsSoldByAB                   bool        `json:"IsSoldByAB"`
	IsIBA                        bool        `json:"IsIBA"`
	IsISPU                       bool        `json:"IsISPU"`
	IsAccessPointOrder           bool        `json:"IsAccessPointOrder"`
	ShippingAddress              *mpaAddress `json:"ShippingAddress,omitempty"`
	BuyerInfo                    *mpaBuyer   `json:"BuyerInfo,omitempty"`

	updated, created time.Time
}

type mpaItem struct {
	ASIN              string   `json:"ASIN"`
	OrderItemID       string   `json:"OrderItemId"`
	SellerSKU         string   `json:"SellerSKU"`
	Title             string   `json:"Title"`
	QuantityOrdered   int      `json:"QuantityOrdered"`
	QuantityShipped   int      `json:"QuantityShipped"`
	ItemPrice         mpaMoney `json:"ItemPrice"`
	ShippingPrice     mpaMoney `json:"ShippingPrice"`
	ItemTax           mpaMoney `json:"ItemTax"`
	ShippingTax       mpaMoney `json:"ShippingTax"`
	ShippingDiscount  mpaMoney `json:"ShippingDiscount"`
	PromotionDiscount mpaMoney `json:"PromotionDiscount"`
	PromotionIDs      []string `json:"PromotionIds,omitempty"`
	ConditionID       string   `json:"ConditionId"`
	IsGift            string   `json:"IsGift"`
	IsTransparency    bool     `json:"IsTransparency"`
}

type mpaSupplySource struct {
	SupplySourceID   string            `json:"supplySourceId"`
	SupplySourceCode string            `json:"supplySourceCode"`
	Alias            string            `json:"alias"`
	Status           string            `json:"-"`
	Address          map[string]string `json:"address"`
}

// mpaConfirmation is a recorded confirmShipment.
type mpaConfirmation struct {
	OrderID string
	Body    json.RawMessage
	At      time.Time
}

// mountMarketplaceA serves the marketplace_a sandbox API under prefix and
// its token host under authPrefix (below prefix by default). Routes are
// registered one by one, so the two may share a prefix.
func mountMarketplaceA(r chi.Router, prefix, authPrefix string) {
	s := &mpaSandbox{now: time.Now}
	r.Post(authPrefix+"/auth/o2/token", s.token)
	r.Group(func(g chi.Router) {
		g.Use(s.authenticate)
		g.Post(prefix+mpaRDTPath, s.restrictedDataToken)
		g.Get(prefix+"/orders/v0/orders", s.listOrders)
		g.Get(prefix+"/orders/v0/orders/{orderId}", s.getOrder)
		g.Get(prefix+"/orders/v0/orders/{orderId}/orderItems", s.getOrderItems)
		g.Post(prefix+"/orders/v0/orders/{orderId}/shipmentConfirmation", s.confirmShipment)
		g.Get(prefix+"/supplySources/2020-07-01/supplySources", s.listSupplySources)
		g.Get(prefix+"/supplySources/2020-07-01/supplySources/{id}", s.getSupplySource)
	})
}

func mpaError(w http.ResponseWriter, status int, code, msg, details string) {
	e := map[string]string{"code": code, "message": msg}
	if details != "" {
		e["details"] = details
	}
	writeJSON(w, status, map[string]any{"errors": []map[string]string{e}})
}

// mpaSeller is what an access token (or restricted data token) names.
type mpaSeller struct {
	key     string // digest of the refresh token
	orders  int
	limited bool
	metered bool   // usage plans enforced
	noPII   bool   // no role for restricted data
	scope   string // a restricted data token's scope (mpaRDTScope), "" for an access token
	token   string // the access token
}

func mpaAccessToken(refresh string) string {
	sum := sha256.Sum256([]byte("marketplace_a/refresh\x00" + refresh))
	// Flags: r rate-limited every other getOrders, m metered, n no PII role.
	flags := "0"
	if refresh == RateLimitValue {
		flags += "r"
	}
	if strings.Contains(refresh, mpaMeteredValue) {
		flags += "m"
	}
	if strings.Contains(refresh, mpaNoPIIValue) {
		flags += "n"
	}
	return fmt.Sprintf("%s%d.%s.%s", mpaTokenPrefix, StoreOrderCount(refresh), flags, hex.EncodeToString(sum[:12]))
}

func parseMpaToken(tok string) (mpaSeller, bool) {
	rest, ok := strings.CutPrefix(tok, mpaTokenPrefix)
	scope := ""
	if !ok {
		if rest, ok = strings.CutPrefix(tok, mpaRDTPrefix); ok {
			i := strings.LastIndexByte(rest, '.')
			if i < 0 || i == len(rest)-1 {
				return mpaSeller{}, false
			}
			rest, scope = rest[:i], rest[i+1:]
		}
	}
	parts := strings.Split(rest, ".")
	if !ok || len(parts) != 3 || len(parts[2]) != 24 || !strings.HasPrefix(parts[1], "0") {
		return mpaSeller{}, false
	}
	n, err := strconv.Atoi(parts[0])
	if err != nil || n < 1 || n > MaxStoreSize {
		return mpaSeller{}, false
	}
	if _, err := hex.DecodeString(parts[2]); err != nil {
		return mpaSeller{}, false
	}
	return mpaSeller{key: parts[2], orders: n, limited: strings.Contains(parts[1], "r"), metered: strings.Contains(parts[1], "m"),
		noPII: strings.Contains(parts[1], "n"), scope: scope, token: mpaTokenPrefix + rest}, true
}

// token is the refresh-token exchange of the token host.
func (s *mpaSandbox) token(w http.ResponseWriter, r *http.Request) {
	oauthErr := func(status int, code, desc string) {
		writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
	}
	if err := r.ParseForm(); err != nil {
		oauthErr(http.StatusBadRequest, "invalid_request", "The request is missing a required parameter or is otherwise malformed.")
		return
	}
	f := r.PostForm
	if f.Get("grant_type") != "refresh_token" {
		oauthErr(http.StatusBadRequest, "unsupported_grant_type", "The authorization grant type is not supported by the authorization server.")
		return
	}
	id, secret, refresh := f.Get("client_id"), f.Get("client_secret"), f.Get("refresh_token")
	if id == "" || secret == "" || refresh == "" {
		oauthErr(http.StatusBadRequest, "invalid_request", "The request is missing a required parameter : refresh_token, client_id or client_secret")
		return
	}
	if id == FailValue || secret == FailValue {
		oauthErr(http.StatusUnauthorized, "invalid_client", "Client authentication failed")
		return
	}
	if refresh == FailValue {
		oauthErr(http.StatusBadRequest, "invalid_grant", "The request has an invalid grant parameter : refresh_token")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]any{"access_token": mpaAccessToken(refresh), "token_type": "bearer", "expires_in": 3600})
}

type mpaSellerKey struct{}

func (s *mpaSandbox) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-amzn-RequestId", fmt.Sprintf("%08x-sbx", s.now().UnixNano()&0xffffffff))
		rate := mpaRateOrders
		switch {
		case strings.Contains(r.URL.Path, "/supplySources/"):
			rate = mpaRateSupply
		case strings.HasSuffix(r.URL.Path, "/shipmentConfirmation"):
			rate = mpaRateConfirm
		}
		w.Header().Set(mpaRateLimitHeader, rate)
		seller, ok := parseMpaToken(r.Header.Get("x-amz-access-token"))
		if !ok {
			mpaError(w, http.StatusForbidden, "Unauthorized", "Access to requested resource is denied.",
				"The access token you provided is revoked, malformed or invalid.")
			return
		}
		for _, vs := range r.URL.Query() {
			for _, v := range vs {
				if v == FailValue {
					mpaError(w, http.StatusServiceUnavailable, "ServiceUnavailable", "Service temporarily unavailable.", "")
					return
				}
			}
		}
		op := mpaOperation(r)
		if !rdtAllowed(seller, op) {
			mpaError(w, http.StatusForbidden, "Unauthorized", "Access to requested resource is denied.",
				"The restricted data token does not cover this operation.")
			return
		}
		if seller.metered && op != "" {
			w.Header().Set(mpaRateLimitHeader, mpaRate(op))
		}
		// Throttling hits getOrders, the operation with the tightest quota,
		// so a throttled import resumes with the same call.
		s.mu.Lock()
		acct := s.account(seller)
		limited := false
		if op == "getOrders" {
			acct.calls++
			limited = seller.limited && acct.calls%2 == 1
		}
		if seller.metered && !s.take(seller.key, op, s.now()) {
			limited = true
		}
		s.mu.Unlock()
		if limited {
			mpaError(w, http.StatusTooManyRequests, "QuotaExceeded", "You exceeded your quota for the requested resource.", "")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), mpaSellerKey{}, seller)))
	})
}

func (s *mpaSandbox) accountOf(r *http.Request) *mpaAccount {
	return s.account(r.Context().Value(mpaSellerKey{}).(mpaSeller))
}

// account returns a seller's account, building it on first use. s.mu held.
func (s *mpaSandbox) account(seller mpaSeller) *mpaAccount {
	return s.accounts.get(seller.key, func() *mpaAccount { return buildMpaAccount(seller) })
}

func mpaTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func buildMpaAccount(seller mpaSeller) *mpaAccount {
	a := &mpaAccount{byID: map[string]int{}, items: map[string][]mpaItem{}}
	seed := rng{s: storeSeed("marketplace_a/seller", seller.key)}
	prefix := 100 + seed.intn(900)
	for i := 0; i < 3; i++ {
		p := pick(&seed, places())
		id := fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", seed.next()&0xffffffff, seed.intn(1<<16), seed.intn(1<<12), seed.intn(1<<12), seed.next()&0xffffffffffff)
		a.sources = append(a.sources, mpaSupplySource{
			SupplySourceID: id, SupplySourceCode: fmt.Sprintf("sbx-%s-%d", strings.ToLower(strings.ReplaceAll(p.city, " ", "-")), i+1),
			Alias: p.city + " fulfillment center", Status: []string{"Active", "Active", "Inactive"}[i],
			Address: map[string]string{"name": p.city + " fulfillment center", "addressLine1": fmt.Sprintf("%d %s", 100+seed.intn(800), pick(&seed, streets())),
				"city": p.city, "stateOrRegion": p.provinceCode, "postalCode": p.zip, "countryCode": p.countryCode},
		})
	}
	for _, o := range generateOrders("marketplace_a", seller.key, seller.orders) {
		mo, items := mpaOrderOf(o, prefix)
		a.byID[mo.AmazonOrderID] = len(a.orders)
		a.orders = append(a.orders, mo)
		a.items[mo.AmazonOrderID] = items
	}
	return a
}

// mpaOrderOf maps a generated catalog order onto the v0 order and its items.
func mpaOrderOf(o order, prefix int) (mpaOrder, []mpaItem) {
	created, _ := time.Parse(time.RFC3339, o.CreatedAt)
	id := fmt.Sprintf("%03d-%07d-%07d", prefix, (o.ID/7)%10_000_000, o.OrderNumber)
	status := "Unshipped"
	switch {
	case o.CancelledAt != nil || o.FinancialStatus == "refunded":
		status = "Canceled"
	case o.FulfillmentStatus != nil && *o.FulfillmentStatus == "fulfilled":
		status = "Shipped"
	case o.FulfillmentStatus != nil && *o.FulfillmentStatus == "partial":
		status = "PartiallyShipped"
	case o.FinancialStatus == "pending":
		status = "Pending"
	case o.FinancialStatus == "partially_paid":
		status = "Unfulfillable"
	}
	cur := o.Currency
	money := func(c int64) mpaMoney { return mpaMoney{CurrencyCode: cur, Amount: cents(c)} }
	mo := mpaOrder{
		AmazonOrderID: id, SellerOrderID: id, PurchaseDate: mpaTime(created), LastUpdateDate: mpaTime(o.updated), OrderStatus: status,
		FulfillmentChannel: "MFN", SalesChannel: "Amazon.com", ShipServiceLevel: "Std US D2D Dom", OrderTotal: money(centsOf(o.TotalPrice)),
		PaymentMethod: "Other", PaymentMethodDetails: []string{"Standard"}, MarketplaceID: "ATVPDKIKX0DER",
		ShipmentServiceLevelCategory: "Standard", OrderType: "StandardOrder",
		EarliestShipDate: mpaTime(created.Add(24 * time.Hour)), LatestShipDate: mpaTime(created.Add(72 * time.Hour)),
		IsPrime: o.OrderNumber%3 == 0, updated: o.updated, created: created,
	}
	sa := o.ShippingAddress
	mo.ShippingAddress = &mpaAddress{City: sa.City, StateOrRegion: sa.ProvinceCode, PostalCode: sa.Zip, CountryCode: sa.CountryCode}
	if o.OrderNumber%5 != 0 { // every fifth order: no PII role
		mo.ShippingAddress.Name, mo.ShippingAddress.AddressLine1, mo.ShippingAddress.AddressLine2 = sa.Name, sa.Address1, sa.Address2
		mo.ShippingAddress.Phone, mo.ShippingAddress.AddressType = sa.Phone, "Residential"
		mo.BuyerInfo = &mpaBuyer{BuyerEmail: fmt.Sprintf("%x@marketplace.amazon.com", o.ID*31), BuyerName: sa.Name}
	} else {
		mo.BuyerInfo = &mpaBuyer{}
	}

	discount, shipping, taxes := centsOf(o.TotalDiscounts), centsOf(o.TotalShippingSet.ShopMoney.Amount), lineTaxes(o)
	var items []mpaItem
	for j, li := range o.LineItems {
		sub := centsOf(li.Price) * int64(li.Quantity)
		tax := taxes[j]
		var disc, ship int64
		if j == 0 {
			disc, ship = discount, shipping
		}
		shipped := 0
		if status == "Shipped" || (status == "PartiallyShipped" && j == 0) {
			shipped = li.Quantity
		}
		it := mpaItem{
			ASIN: fmt.Sprintf("B0%08X", li.ProductID%0xffffffff), OrderItemID: strconv.FormatInt(li.ID, 10), SellerSKU: li.SKU,
			Title: li.Name, QuantityOrdered: li.Quantity, QuantityShipped: shipped, ItemPrice: money(sub), ShippingPrice: money(ship),
			ItemTax: money(tax), ShippingTax: money(0), ShippingDiscount: money(0), PromotionDiscount: money(disc),
			ConditionID: "New", IsGift: "false",
		}
		if disc > 0 {
			it.PromotionIDs = []string{"SAVE10"}
		}
		items = append(items, it)
		mo.NumberOfItemsShipped += shipped
		mo.NumberOfItemsUnshipped += li.Quantity - shipped
	}
	if status == "Canceled" {
		mo.NumberOfItemsUnshipped = 0
	}
	return mo, items
}

// mpaFilter is the getOrders filter; it travels inside NextToken.
type mpaFilter struct {
	Marketplace   string   `json:"m"`
	CreatedAfter  string   `json:"ca,omitempty"`
	CreatedBefore string   `json:"cb,omitempty"`
	UpdatedAfter  string   `json:"ua,omitempty"`
	UpdatedBefore string   `json:"ub,omitempty"`
	Statuses      []string `json:"s,omitempty"`
	Channels      []string `json:"c,omitempty"`
	PageSize      int      `json:"n"`
	// AfterUpdated/AfterID is the last order of the previous page: the list
	// goes on after it (by LastUpdateDate, then id), so an order updated
	// during the paging moves to the end instead of shifting the pages.
	AfterUpdated int64  `json:"au,omitempty"`
	AfterID      string `json:"ai,omitempty"`
}

// mpaBounds are a filter's parsed date bounds (zero: none).
type mpaBounds struct{ createdAfter, createdBefore, updatedAfter, updatedBefore time.Time }

func (f mpaFilter) bounds() mpaBounds {
	parse := func(v string) time.Time { t, _ := time.Parse(time.RFC3339Nano, v); return t }
	return mpaBounds{parse(f.CreatedAfter), parse(f.CreatedBefore), parse(f.UpdatedAfter), parse(f.UpdatedBefore)}
}

// mpaBefore orders orders by LastUpdateDate, then id.
func mpaBefore(aUpdated time.Time, aID string, bUpdated time.Time, bID string) bool {
	if !aUpdated.Equal(bUpdated) {
		return aUpdated.Before(bUpdated)
	}
	return aID < bID
}

func mpaList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func (f mpaFilter) match(o *mpaOrder, b mpaBounds) bool {
	if (!b.createdAfter.IsZero() && o.created.Before(b.createdAfter)) || (!b.createdBefore.IsZero() && o.created.After(b.createdBefore)) ||
		(!b.updatedAfter.IsZero() && o.updated.Before(b.updatedAfter)) || (!b.updatedBefore.IsZero() && o.updated.After(b.updatedBefore)) {
		return false
	}
	if f.AfterID != "" && !mpaBefore(time.Unix(0, f.AfterUpdated), f.AfterID, o.updated, o.AmazonOrderID) {
		return false
	}
	in := func(v string, xs []string) bool {
		for _, x := range xs {
			if strings.EqualFold(x, v) {
				return true
			}
		}
		return len(xs) == 0
	}
	return in(o.OrderStatus, f.Statuses) && in(o.FulfillmentChannel, f.Channels)
}

func (s *mpaSandbox) listOrders(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("MarketplaceIds") == "" {
		mpaError(w, http.StatusBadRequest, "InvalidInput", "Invalid Input", "MarketplaceIds is required.")
		return
	}
	var f mpaFilter
	if tok := q.Get("NextToken"); tok != "" {
		raw, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil || json.Unmarshal(raw, &f) != nil || f.PageSize < 1 {
			mpaError(w, http.StatusBadRequest, "InvalidInput", "Invalid Input", "NextToken is invalid or expired.")
			return
		}
	} else {
		f = mpaFilter{Marketplace: q.Get("MarketplaceIds"), CreatedAfter: q.Get("CreatedAfter"), CreatedBefore: q.Get("CreatedBefore"),
			UpdatedAfter: q.Get("LastUpdatedAfter"), UpdatedBefore: q.Get("LastUpdatedBefore"),
			Statuses: mpaList(q.Get("OrderStatuses")), Channels: mpaList(q.Get("FulfillmentChannels")), PageSize: mpaDefaultPage}
		if (f.CreatedAfter == "") == (f.UpdatedAfter == "") {
			mpaError(w, http.StatusBadRequest, "InvalidInput", "Invalid Input", "Exactly one of CreatedAfter and LastUpdatedAfter is required.")
			return
		}
		for _, v := range []string{f.CreatedAfter, f.CreatedBefore, f.UpdatedAfter, f.UpdatedBefore} {
			if _, err := time.Parse(time.RFC3339Nano, v); v != "" && err != nil {
				mpaError(w, http.StatusBadRequest, "InvalidInput", "Invalid Input", "Dates must be in ISO 8601 format.")
				return
			}
		}
		if v := q.Get("MaxResultsPerPage"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 100 {
				mpaError(w, http.StatusBadRequest, "InvalidInput", "Invalid Input", "MaxResultsPerPage must be between 1 and 100.")
				return
			}
			f.PageSize = n
		}
	}
	b := f.bounds()
	s.mu.Lock()
	acct := s.accountOf(r)
	var matched []int
	for i := range acct.orders {
		if f.match(&acct.orders[i], b) {
			matched = append(matched, i)
		}
	}
	sort.Slice(matched, func(i, j int) bool {
		a, b := &acct.orders[matched[i]], &acct.orders[matched[j]]
		return mpaBefore(a.updated, a.AmazonOrderID, b.updated, b.AmazonOrderID)
	})
	seller := r.Context().Value(mpaSellerKey{}).(mpaSeller)
	page := make([]mpaOrder, 0, min(f.PageSize, len(matched)))
	for _, i := range matched[:min(f.PageSize, len(matched))] {
		o := seller.redactPII(acct.orders[i], true)
		o.MarketplaceID = f.Marketplace
		page = append(page, o)
	}
	s.mu.Unlock()
	payload := map[string]any{"Orders": page}
	if len(matched) > f.PageSize {
		next, last := f, page[len(page)-1]
		next.AfterUpdated, next.AfterID = last.updated.UnixNano(), last.AmazonOrderID
		raw, _ := json.Marshal(next)
		payload["NextToken"] = base64.RawURLEncoding.EncodeToString(raw)
	}
	if f.UpdatedAfter != "" {
		payload["LastUpdatedBefore"] = mpaTime(s.now().Add(-2 * time.Minute))
	} else {
		payload["CreatedBefore"] = mpaTime(s.now().Add(-2 * time.Minute))
	}
	writeJSON(w, http.StatusOK, map[string]any{"payload": payload})
}

func (s *mpaSandbox) orderOf(r *http.Request) (*mpaAccount, int, bool) {
	acct := s.accountOf(r)
	i, ok := acct.byID[chi.URLParam(r, "orderId")]
	return acct, i, ok
}

func mpaNoOrder(w http.ResponseWriter, r *http.Request) {
	mpaError(w, http.StatusNotFound, "NotFound", "Order not found", "No order with AmazonOrderId "+chi.URLParam(r, "orderId")+".")
}

func (s *mpaSandbox) getOrder(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	acct, i, ok := s.orderOf(r)
	var o mpaOrder
	if ok {
		o = acct.orders[i]
	}
	s.mu.Unlock()
	if !ok {
		mpaNoOrder(w, r)
		return
	}
	o = r.Context().Value(mpaSellerKey{}).(mpaSeller).redactPII(o, false)
	writeJSON(w, http.StatusOK, map[string]any{"payload": o})
}

// getOrderItems pages the order's items two at a time; NextToken is the
// offset of the next page.
func (s *mpaSandbox) getOrderItems(w http.ResponseWriter, r *http.Request) {
	offset := 0
	if tok := r.URL.Query().Get("NextToken"); tok != "" {
		raw, err := base64.RawURLEncoding.DecodeString(tok)
		n, perr := strconv.Atoi(strings.TrimPrefix(string(raw), "items:"))
		if err != nil || perr != nil || n < 0 {
			mpaError(w, http.StatusBadRequest, "InvalidInput", "Invalid Input", "NextToken is invalid or expired.")
			return
		}
		offset = n
	}
	s.mu.Lock()
	acct, i, ok := s.orderOf(r)
	var id string
	var items []mpaItem
	if ok {
		id = acct.orders[i].AmazonOrderID
		items = acct.items[id]
	}
	s.mu.Unlock()
	if !ok {
		mpaNoOrder(w, r)
		return
	}
	end := min(offset+mpaItemsPerPage, len(items))
	payload := map[string]any{"AmazonOrderId": id, "OrderItems": orEmpty(items[min(offset, end):end])}
	if end < len(items) {
		payload["NextToken"] = base64.RawURLEncoding.EncodeToString([]byte("items:" + strconv.Itoa(end)))
	}
	writeJSON(w, http.StatusOK, map[string]any{"payload": payload})
}

// confirmShipment records a package: its items' shipped quantities grow,
// the order becomes PartiallyShipped or Shipped and its LastUpdateDate
// moves. Quantities beyond what is unshipped are refused, so a blind
// repeat of a full confirmation fails rather than ships twice.
func (s *mpaSandbox) confirmShipment(w http.ResponseWriter, r *http.Request) {
	var raw json.RawMessage
	var req struct {
		MarketplaceID string `json:"marketplaceId"`
		PackageDetail *struct {
			PackageReferenceID string `json:"packageReferenceId"`
			CarrierCode        string `json:"carrierCode"`
			CarrierName        string `json:"carrierName"`
			TrackingNumber     string `json:"trackingNumber"`
			ShipDate           string `json:"shipDate"`
			OrderItems         []struct {
				OrderItemID string `json:"orderItemId"`
				Quantity    int    `json:"quantity"`
			} `json:"orderItems"`
		} `json:"packageDetail"`
	}
	if err := readBody(w, r, &raw); err != nil || json.Unmarshal(raw, &req) != nil {
		mpaError(w, http.StatusBadRequest, "InvalidInput", "Invalid Input", "The request body is not valid JSON.")
		return
	}
	p := req.PackageDetail
	if req.MarketplaceID == "" || p == nil || p.PackageReferenceID == "" || p.CarrierCode == "" || p.TrackingNumber == "" || len(p.OrderItems) == 0 {
		mpaError(w, http.StatusBadRequest, "InvalidInput", "Invalid Input", "marketplaceId and packageDetail (packageReferenceId, carrierCode, trackingNumber, shipDate, orderItems) are required.")
		return
	}
	if _, err := time.Parse(time.RFC3339Nano, p.ShipDate); err != nil {
		mpaError(w, http.StatusBadRequest, "InvalidInput", "Invalid Input", "")
		return
	}
	if n, err := strconv.ParseUint(p.PackageReferenceID, 10, 63); err != nil || n == 0 {
		mpaError(w, http.StatusBadRequest, "InvalidInput", "Invalid Input", "packageReferenceId must be a positive number.")
		return
	}
	switch {
	case !knownName(mpaCarrierCodes, p.CarrierCode, true):
		mpaError(w, http.StatusBadRequest, "InvalidInput", "Invalid Input", "Invalid carrierCode "+p.CarrierCode+".")
		return
	case p.CarrierCode == "Other" && strings.TrimSpace(p.CarrierName) == "":
		mpaError(w, http.StatusBadRequest, "InvalidInput", "Invalid Input", "carrierName is required when carrierCode is Other.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	acct, i, ok := s.orderOf(r)
	if !ok {
		mpaNoOrder(w, r)
		return
	}
	o := acct.orders[i]
	if o.OrderStatus != "Unshipped" && o.OrderStatus != "PartiallyShipped" {
		mpaError(w, http.StatusBadRequest, "InvalidInput", "Invalid Input", "Order "+o.AmazonOrderID+" is "+o.OrderStatus+" and cannot be confirmed.")
		return
	}
	items := append([]mpaItem(nil), acct.items[o.AmazonOrderID]...)
	for _, want := range p.OrderItems {
		found := false
		for j := range items {
			if items[j].OrderItemID == want.OrderItemID {
				found = true
				if want.Quantity < 1 || items[j].QuantityShipped+want.Quantity > items[j].QuantityOrdered {
					mpaError(w, http.StatusBadRequest, "InvalidInput", "Invalid Input", "Quantity for item "+want.OrderItemID+" exceeds the unshipped quantity.")
					return
				}
				items[j].QuantityShipped += want.Quantity
			}
		}
		if !found {
			mpaError(w, http.StatusBadRequest, "InvalidInput", "Invalid Input", "Unknown orderItemId "+want.OrderItemID+".")
			return
		}
	}
	now := s.now()
	o.NumberOfItemsShipped, o.NumberOfItemsUnshipped = 0, 0
	for _, it := range items {
		o.NumberOfItemsShipped += it.QuantityShipped
		o.NumberOfItemsUnshipped += it.QuantityOrdered - it.QuantityShipped
	}
	o.OrderStatus = "PartiallyShipped"
	if o.NumberOfItemsUnshipped == 0 {
		o.OrderStatus = "Shipped"
	}
	o.updated, o.LastUpdateDate = now, mpaTime(now)
	acct.orders[i] = o
	acct.items[o.AmazonOrderID] = items
	acct.shipments = append(acct.shipments, mpaConfirmation{OrderID: o.AmazonOrderID, Body: raw, At: now})
	w.WriteHeader(http.StatusNoContent)
}

func (s *mpaSandbox) listSupplySources(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	size, offset := mpaSupplyDefault, 0
	if v := q.Get("pageSize"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 50 {
			mpaError(w, http.StatusBadRequest, "InvalidInput", "Invalid Input", "pageSize must be between 1 and 50.")
			return
		}
		size = n
	}
	if tok := q.Get("nextPageToken"); tok != "" {
		raw, err := base64.RawURLEncoding.DecodeString(tok)
		n, perr := strconv.Atoi(string(raw))
		if err != nil || perr != nil || n < 0 {
			mpaError(w, http.StatusBadRequest, "InvalidInput", "Invalid Input", "nextPageToken is invalid.")
			return
		}
		offset = n
	}
	s.mu.Lock()
	sources := s.accountOf(r).sources
	s.mu.Unlock()
	end := min(offset+size, len(sources))
	out := map[string]any{"supplySources": orEmpty(sources[min(offset, end):end])}
	if end < len(sources) {
		out["nextPageToken"] = base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(end)))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *mpaSandbox) getSupplySource(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	sources := s.accountOf(r).sources
	s.mu.Unlock()
	for _, src := range sources {
		if src.SupplySourceID == chi.URLParam(r, "id") {
			writeJSON(w, http.StatusOK, map[string]any{
				"supplySourceId": src.SupplySourceID, "supplySourceCode": src.SupplySourceCode, "alias": src.Alias,
				"status": src.Status, "address": src.Address, "createdAt": "1.7356896E9", "updatedAt": "1.7356896E9",
			})
			return
		}
	}
	mpaError(w, http.StatusNotFound, "NotFound", "Supply source not found", "")
}
