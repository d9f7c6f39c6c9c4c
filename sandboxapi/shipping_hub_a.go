package sandboxapi

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // hub timestamps are Pacific time

	"github.com/go-chi/chi/v5"
)

// shipping_hub_a: the shipping hub's V1 API (vendors/platforms/shipping_hub_a)
// under {prefix} (default /platforms/shipping_hub_a, FOS_SHIPPING_HUB_A_URL
// under FOS_SANDBOX=1), which stands for https://ssapi.shipstation.com:
//
//	GET    /orders                  modifyDateStart/End, createDateStart/End,
//	                                orderDateStart/End, orderStatus, orderNumber,
//	                                storeId, customerName, sortBy, sortDir, page, pageSize
//	GET    /orders/{orderId}
//	POST   /orders/markasshipped    orderId, carrierCode, shipDate, trackingNumber, ...
//	GET    /shipments               orderId, orderNumber, trackingNumber, carrierCode,
//	                                createDateStart/End, shipDateStart/End,
//	                                includeShipmentItems, sortBy, sortDir, page, pageSize
//	GET    /fulfillments            orderId, orderNumber, trackingNumber, page, pageSize
//	GET    /warehouses
//	POST   /webhooks/subscribe      GET /webhooks, DELETE /webhooks/{webhookId}
//
// The account is the Basic-auth API key: every key has its own
// StoreOrderCount(apiKey) orders (built from a digest of the key), labels
// (shipments) for its shipped orders, two warehouses, and the
// mark-as-shipped fulfillments and webhooks created through the API. Lists
// answer {"<list>": [...], "total", "page", "pages"}, pageSize 1-500
// (default 100). Dates are Pacific time without an offset, as on the hub.
//
// Errors are {"message": "..."}: no or "sandbox-fail" credentials are 401
// "Invalid API credentials"; a query value "sandbox-fail" is a 500; an API
// key "sandbox-ratelimit" makes every other call a 429 with
// X-Rate-Limit-Remaining: 0 and X-Rate-Limit-Reset: 1. Every answer
// carries X-Rate-Limit-Limit: 40 and the remaining calls of the current
// minute (reported, never enforced, never below 1 outside the on-demand
// 429s).

const (
	hubRateLimit       = 40
	hubDefaultPageSize = 100
	hubMaxPageSize     = 500
	hubTimeLayout      = "2006-01-02T15:04:05.0000000"
)

var hubZone = func() *time.Location {
	loc, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		panic(err)
	}
	return loc
}()

func hubTime(t time.Time) string { return t.In(hubZone).Format(hubTimeLayout) }

func hubDay(t time.Time) string { return t.In(hubZone).Format("2006-01-02") }

func hubEvents() []string {
	return []string{"ORDER_NOTIFY", "ITEM_ORDER_NOTIFY", "SHIP_NOTIFY", "ITEM_SHIP_NOTIFY", "FULFILLMENT_SHIPPED", "FULFILLMENT_REJECTED"}
}

type hubSandbox struct {
	now      func() time.Time
	mu       sync.Mutex
	accounts storeTable[hubAccount]
}

type hubAccount struct {
	sellerID     int64
	storeID      int64
	orders       []hubOrder // by orderId
	byID         map[int64]int
	byKey        map[string]int // orderKey → index, of orders[:keyed] (indexOfKey)
	keyed        int
	shipments    []hubShipment
	fulfillments []hubFulfillment
	warehouses   []hubWarehouse
	webhooks     []hubWebhook
	nextID       int64
	calls        int
	window       time.Time
	windowCalls  int
}

type hubAddr struct {
	Name            string  `json:"name"`
	Company         *string `json:"company"`
	Street1         string  `json:"street1"`
	Street2         string  `json:"street2"`
	Street3         *string `json:"street3"`
	City            string  `json:"city"`
	State           string  `json:"state"`
	PostalCode      string  `json:"postalCode"`
	Country         string  `json:"country"`
	Phone           string  `json:"phone"`
	Residential     *bool   `json:"residential"`
	AddressVerified *string `json:"addressVerified,omitempty"`
}

type hubWeight struct {
	Value float64 `json:"value"`
	Units string  `json:"units"`
}

type hubOption struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type hubItem struct {
	OrderItemID       int64       `json:"orderItemId"`
	LineItemKey       *string     `json:"lineItemKey"`
	SKU               string      `json:"sku"`
	Name              string      `json:"name"`
	ImageURL          *string     `json:"imageUrl"`
	Weight            *hubWeight  `json:"weight"`
	Quantity          int         `json:"quantity"`
	UnitPrice         float64     `json:"unitPrice"`
	TaxAmount         *float64    `json:"taxAmount"`
	ShippingAmount    *float64    `json:"shippingAmount"`
	WarehouseLocation *string     `json:"warehouseLocation"`
	Options           []hubOption `json:"options"`
	ProductID         *int64      `json:"productId"`
	FulfillmentSKU    *string     `json:"fulfillmentSku"`
	Adjustment        bool        `json:"adjustment"`
	UPC               *string     `json:"upc"`
	CreateDate        string      `json:"createDate"`
	ModifyDate        string      `json:"modifyDate"`
}

type hubOrder struct {
	OrderID                  int64          `json:"orderId"`
	OrderNumber              string         `json:"orderNumber"`
	OrderKey                 string         `json:"orderKey"`
	OrderDate                string         `json:"orderDate"`
	CreateDate               string         `json:"createDate"`
	ModifyDate               string         `json:"modifyDate"`
	PaymentDate              *string        `json:"paymentDate"`
	ShipByDate               *string        `json:"shipByDate"`
	OrderStatus              string         `json:"orderStatus"`
	CustomerID               int64          `json:"customerId"`
	CustomerUsername         string         `json:"customerUsername"`
	CustomerEmail            string         `json:"customerEmail"`
	BillTo                   hubAddr        `json:"billTo"`
	ShipTo                   hubAddr        `json:"shipTo"`
	Items                    []hubItem      `json:"items"`
	OrderTotal               float64        `json:"orderTotal"`
	AmountPaid               float64        `json:"amountPaid"`
	TaxAmount                float64        `json:"taxAmount"`
	ShippingAmount           float64        `json:"shippingAmount"`
	CustomerNotes            *string        `json:"customerNotes"`
	InternalNotes            *string        `json:"internalNotes"`
	Gift                     bool           `json:"gift"`
	GiftMessage              *string        `json:"giftMessage"`
	PaymentMethod            *string        `json:"paymentMethod"`
	RequestedShippingService string         `json:"requestedShippingService"`
	CarrierCode              *string        `json:"carrierCode"`
	ServiceCode              *string        `json:"serviceCode"`
	PackageCode              *string        `json:"packageCode"`
	Confirmation             string         `json:"confirmation"`
	ShipDate                 *string        `json:"shipDate"`
	HoldUntilDate            *string        `json:"holdUntilDate"`
	Weight                   hubWeight      `json:"weight"`
	Dimensions               *string        `json:"dimensions"`
	InsuranceOptions         map[string]any `json:"insuranceOptions"`
	InternationalOptions     map[string]any `json:"internationalOptions"`
	AdvancedOptions          map[string]any `json:"advancedOptions"`
	TagIDs                   []int64        `json:"tagIds"`
	UserID                   *string        `json:"userId"`
	ExternallyFulfilled      bool           `json:"externallyFulfilled"`
	ExternallyFulfilledBy    *string        `json:"externallyFulfilledBy"`

	modified, created, ordered time.Time
	customerName               string
}

type hubShipment struct {
	ShipmentID          int64          `json:"shipmentId"`
	OrderID             int64          `json:"orderId"`
	OrderKey            string         `json:"orderKey"`
	UserID              string         `json:"userId"`
	OrderNumber         string         `json:"orderNumber"`
	CreateDate          string         `json:"createDate"`
	ShipDate            string         `json:"shipDate"`
	ShipmentCost        float64        `json:"shipmentCost"`
	InsuranceCost       float64        `json:"insuranceCost"`
	TrackingNumber      string         `json:"trackingNumber"`
	IsReturnLabel       bool           `json:"isReturnLabel"`
	BatchNumber         string         `json:"batchNumber"`
	CarrierCode         string         `json:"carrierCode"`
	ServiceCode         string         `json:"serviceCode"`
	PackageCode         string         `json:"packageCode"`
	Confirmation        string         `json:"confirmation"`
	WarehouseID         int64          `json:"warehouseId"`
	Voided              bool           `json:"voided"`
	VoidDate            *string        `json:"voidDate"`
	MarketplaceNotified bool           `json:"marketplaceNotified"`
	NotifyErrorMessage  *string        `json:"notifyErrorMessage"`
	ShipTo              hubAddr        `json:"shipTo"`
	Weight              hubWeight      `json:"weight"`
	Dimensions          *string        `json:"dimensions"`
	InsuranceOptions    map[string]any `json:"insuranceOptions"`
	AdvancedOptions     map[string]any `json:"advancedOptions"`
	ShipmentItems       []hubItem      `json:"shipmentItems"`
	LabelData           *string        `json:"labelData"`
	FormData            *string        `json:"formData"`

	created, shipped time.Time
}

type hubFulfillment struct {
	FulfillmentID           int64   `json:"fulfillmentId"`
	OrderID                 int64   `json:"orderId"`
	OrderNumber             string  `json:"orderNumber"`
	UserID                  string  `json:"userId"`
	CustomerEmail           string  `json:"customerEmail"`
	TrackingNumber          string  `json:"trackingNumber"`
	CreateDate              string  `json:"createDate"`
	ShipDate                string  `json:"shipDate"`
	VoidDate                *string `json:"voidDate"`
	DeliveryDate            *string `json:"deliveryDate"`
	CarrierCode             string  `json:"carrierCode"`
	FulfillmentProviderCode *string `json:"fulfillmentProviderCode"`
	FulfillmentServiceCode  *string `json:"fulfillmentServiceCode"`
	FulfillmentFee          float64 `json:"fulfillmentFee"`
	VoidRequested           bool    `json:"voidRequested"`
	Voided                  bool    `json:"voided"`
	MarketplaceNotified     bool    `json:"marketplaceNotified"`
	NotifyErrorMessage      *string `json:"notifyErrorMessage"`
	ShipTo                  hubAddr `json:"shipTo"`
}

type hubWarehouse struct {
	WarehouseID   int64   `json:"warehouseId"`
	WarehouseName string  `json:"warehouseName"`
	OriginAddress hubAddr `json:"originAddress"`
	ReturnAddress hubAddr `json:"returnAddress"`
	CreateDate    string  `json:"createDate"`
	IsDefault     bool    `json:"isDefault"`
}

type hubWebhook struct {
	IsLabelAPIHook   bool    `json:"IsLabelAPIHook"`
	WebHookID        int64   `json:"WebHookID"`
	SellerID         int64   `json:"SellerID"`
	StoreID          *int64  `json:"StoreID"`
	HookType         string  `json:"HookType"`
	MessageFormat    string  `json:"MessageFormat"`
	URL              string  `json:"Url"`
	Name             string  `json:"Name"`
	BulkCopyBatchID  *string `json:"BulkCopyBatchID"`
	BulkCopyRecordID *string `json:"BulkCopyRecordID"`
	Active           bool    `json:"Active"`
	WebhookLogs      []any   `json:"WebhookLogs"`
	Seller           *string `json:"Seller"`
	Store            *string `json:"Store"`
}

// mountShippingHubA serves the shipping_hub_a sandbox under prefix. The
// routes are registered one by one (not mounted), so other routes may
// share the prefix.
func mountShippingHubA(r chi.Router, prefix string) {
	s := &hubSandbox{now: time.Now}
	r.Group(func(g chi.Router) {
		g.Use(s.authenticate)
		g.Get(prefix+"/orders", s.listOrders)
		g.Get(prefix+"/orders/{orderId}", s.getOrder)
		g.Post(prefix+"/orders/markasshipped", s.markAsShipped)
		g.Post(prefix+"/orders/createorder", s.createOrder)
		g.Get(prefix+"/shipments", s.listShipments)
		g.Get(prefix+"/fulfillments", s.listFulfillments)
		g.Get(prefix+"/warehouses", s.listWarehouses)
		g.Get(prefix+"/webhooks", s.listWebhooks)
		g.Post(prefix+"/webhooks/subscribe", s.subscribe)
		g.Delete(prefix+"/webhooks/{webhookId}", s.unsubscribe)
	})
	r.Post(prefix+"/_sandbox/orders", s.sandboxOrder) // webhook_delivery.go
}

func hubError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"message": msg})
}

func (s *hubSandbox) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, secret, ok := r.BasicAuth()
		if !ok || strings.TrimSpace(key) == "" || strings.TrimSpace(secret) == "" || key == FailValue || secret == FailValue {
			hubError(w, http.StatusUnauthorized, "Invalid API credentials")
			return
		}
		for _, vs := range r.URL.Query() {
			for _, v := range vs {
				if v == FailValue {
					writeJSON(w, http.StatusInternalServerError, map[string]string{"Message": "An error has occurred."})
					return
				}
			}
		}
		s.mu.Lock()
		acct := s.account(key)
		now := s.now()
		acct.calls++
		if now.Sub(acct.window) >= time.Minute {
			acct.window, acct.windowCalls = now, 0
		}
		acct.windowCalls++
		// Throttling is on demand only, so the quota never reads used up.
		remaining := max(1, hubRateLimit-acct.windowCalls)
		reset := int((time.Minute - now.Sub(acct.window)).Seconds())
		limited := key == RateLimitValue && acct.calls%2 == 1
		s.mu.Unlock()
		w.Header().Set("X-Rate-Limit-Limit", strconv.Itoa(hubRateLimit))
		w.Header().Set("X-Rate-Limit-Reset", strconv.Itoa(max(1, reset)))
		if limited {
			// A one-second window, so callers wait it out quickly.
			w.Header().Set("X-Rate-Limit-Reset", "1")
			w.Header().Set("X-Rate-Limit-Remaining", "0")
			hubError(w, http.StatusTooManyRequests, "Too Many Requests")
			return
		}
		w.Header().Set("X-Rate-Limit-Remaining", strconv.Itoa(remaining))
		next.ServeHTTP(w, r)
	})
}

func (s *hubSandbox) accountOf(r *http.Request) *hubAccount {
	key, _, _ := r.BasicAuth()
	return s.account(key)
}

// account returns the account of an API key, building it on first use.
// s.mu held.
func (s *hubSandbox) account(key string) *hubAccount {
	return s.accounts.get(key, func() *hubAccount { return buildHubAccount(key) })
}

func buildHubAccount(key string) *hubAccount {
	seed := rng{s: storeSeed("shipping_hub_a/account", key)}
	a := &hubAccount{
		sellerID: 100_000 + int64(seed.intn(800_000)),
		storeID:  10_000 + int64(seed.intn(80_000)),
		nextID:   900_000_000 + int64(seed.intn(90_000_000)),
	}
	created := time.Date(2024, time.May, 27, 9, 54, 29, 0, time.UTC)
	for i, p := range []place{pick(&seed, places()), pick(&seed, places())} {
		addr := hubAddr{Name: p.city + " warehouse", Company: strPtr("Sandbox Goods"), Street1: fmt.Sprintf("%d %s", 100+seed.intn(800), pick(&seed, streets())),
			City: p.city, State: p.provinceCode, PostalCode: p.zip, Country: p.countryCode, Phone: fmt.Sprintf("555%07d", seed.intn(10_000_000)), Residential: boolPtr(false)}
		ret := addr
		ret.Residential = nil
		a.warehouses = append(a.warehouses, hubWarehouse{
			WarehouseID: 10_000 + int64(seed.intn(80_000)), WarehouseName: []string{"Main warehouse", p.city}[i],
			OriginAddress: addr, ReturnAddress: ret, CreateDate: hubTime(created.Add(time.Duration(i) * 24 * time.Hour)), IsDefault: i == 0,
		})
	}
	orders := generateOrders("shipping_hub_a", key, StoreOrderCount(key))
	a.byID = make(map[int64]int, len(orders))
	for _, o := range orders {
		ho := a.hubOrderOf(o)
		a.byID[ho.OrderID] = len(a.orders)
		a.orders = append(a.orders, ho)
		if len(o.Fulfillments) > 0 {
			a.shipments = append(a.shipments, a.labelOf(o, ho))
		}
	}
	return a
}

func boolPtr(b bool) *bool { return &b }

func hubAddrOf(ad address) hubAddr {
	return hubAddr{Name: ad.Name, Company: ad.Company, Street1: ad.Address1, Street2: ad.Address2, City: ad.City,
		State: ad.ProvinceCode, PostalCode: ad.Zip, Country: ad.CountryCode, Phone: ad.Phone, Residential: boolPtr(ad.Company == nil),
		AddressVerified: strPtr("Address validated successfully")}
}

func hubCarrier(id int64) (carrier, service string) {
	switch id % 3 {
	case 0:
		return "ups", "ups_ground"
	case 1:
		return "fedex", "fedex_home_delivery"
	}
	return "stamps_com", "usps_priority_mail"
}

func parseCents(s string) float64 {
	v, _ := strconv.ParseFloat(s, 64)
	return v
}

// hubOrderOf maps a generated catalog order onto the hub's order shape.
func (a *hubAccount) hubOrderOf(o order) hubOrder {
	created, _ := time.Parse(time.RFC3339, o.CreatedAt)
	paid := o.FinancialStatus == "paid" || o.FinancialStatus == "refunded" || o.FinancialStatus == "partially_paid"
	status := "awaiting_shipment"
	switch {
	case o.CancelledAt != nil || o.FinancialStatus == "refunded":
		status = "cancelled"
	case o.FulfillmentStatus != nil && *o.FulfillmentStatus == "fulfilled":
		status = "shipped"
	case o.FulfillmentStatus != nil && *o.FulfillmentStatus == "partial":
		status = "pending_fulfillment"
	case o.FinancialStatus == "pending" || o.FinancialStatus == "partially_paid":
		status = "awaiting_payment"
	case o.Tags == "wholesale":
		status = "on_hold"
	}
	total := parseCents(o.TotalPrice)
	amountPaid := 0.0
	if paid {
		amountPaid = total
		if o.FinancialStatus == "partially_paid" {
			amountPaid = parseCents(cents(int64(total*100) / 2))
		}
	}
	cd := hubTime(created.Add(5 * time.Minute))
	var items []hubItem
	var grams int
	for _, li := range o.LineItems {
		pid := li.ProductID
		grams += li.Grams * li.Quantity
		items = append(items, hubItem{
			OrderItemID: li.ID, LineItemKey: strPtr(strconv.FormatInt(li.ID, 36)), SKU: li.SKU, Name: li.Name,
			Weight: &hubWeight{Value: float64(li.Grams) / 28.35, Units: "ounces"}, Quantity: li.Quantity, UnitPrice: parseCents(li.Price),
			WarehouseLocation: strPtr(fmt.Sprintf("Aisle %d, Bin %d", 1+li.ID%9, 1+li.ID%40)), Options: []hubOption{},
			ProductID: &pid, CreateDate: cd, ModifyDate: cd,
		})
	}
	for _, dc := range o.DiscountCodes {
		items = append(items, hubItem{
			OrderItemID: o.ID*10 + 5, SKU: "DISCOUNT CODE", Name: dc.Code, Weight: &hubWeight{Units: "ounces"}, Quantity: 1,
			UnitPrice: -parseCents(dc.Amount), Options: []hubOption{}, Adjustment: true, CreateDate: cd, ModifyDate: cd,
		})
	}
	ho := hubOrder{
		OrderID: o.ID, OrderNumber: strconv.Itoa(o.OrderNumber), OrderKey: fmt.Sprintf("%x", o.ID*2654435761),
		OrderDate: hubTime(created), CreateDate: cd, ModifyDate: hubTime(o.updated), ShipByDate: strPtr(hubTime(created.Add(5 * 24 * time.Hour))),
		OrderStatus: status, CustomerID: o.Customer.ID, CustomerUsername: o.Email, CustomerEmail: o.Email,
		BillTo: hubAddrOf(o.BillingAddress), ShipTo: hubAddrOf(o.ShippingAddress), Items: items,
		OrderTotal: total, AmountPaid: amountPaid, TaxAmount: parseCents(o.TotalTax), ShippingAmount: parseCents(o.TotalShippingSet.ShopMoney.Amount),
		CustomerNotes: o.Note, PaymentMethod: strPtr("Credit Card"), RequestedShippingService: o.ShippingLines[0].Title,
		PackageCode: strPtr("package"), Confirmation: "none",
		Weight:               hubWeight{Value: float64(grams) / 28.35, Units: "ounces"},
		InsuranceOptions:     map[string]any{"provider": nil, "insureShipment": false, "insuredValue": 0},
		InternationalOptions: map[string]any{"contents": nil, "customsItems": nil, "nonDelivery": nil},
		AdvancedOptions: map[string]any{"warehouseId": a.warehouses[0].WarehouseID, "nonMachinable": false, "saturdayDelivery": false,
			"containsAlcohol": false, "mergedOrSplit": false, "mergedIds": []int64{}, "parentId": nil, "storeId": a.storeID,
			"customField1": nil, "customField2": nil, "customField3": nil, "source": o.SourceName,
			"billToParty": nil, "billToAccount": nil, "billToPostalCode": nil, "billToCountryCode": nil},
		modified: o.updated, created: created.Add(5 * time.Minute), ordered: created, customerName: o.BillingAddress.Name,
	}
	if paid {
		ho.PaymentDate = strPtr(hubTime(created))
	}
	if len(o.Fulfillments) > 0 {
		shipped, _ := time.Parse(time.RFC3339, o.Fulfillments[0].CreatedAt)
		carrier, service := hubCarrier(o.ID)
		ho.ShipDate, ho.CarrierCode, ho.ServiceCode = strPtr(hubDay(shipped)), &carrier, &service
	}
	return ho
}

// labelOf is the label the hub made for a shipped catalog order.
func (a *hubAccount) labelOf(o order, ho hubOrder) hubShipment {
	f := o.Fulfillments[0]
	shipped, _ := time.Parse(time.RFC3339, f.CreatedAt)
	carrier, service := hubCarrier(o.ID)
	var items []hubItem
	for _, fl := range f.LineItems {
		for _, it := range ho.Items {
			if it.OrderItemID == fl.ID {
				it.Quantity = fl.Quantity
				items = append(items, it)
			}
		}
	}
	return hubShipment{
		ShipmentID: o.ID*10 + 6, OrderID: o.ID, OrderKey: ho.OrderKey, UserID: fmt.Sprintf("%08x-0000-4000-8000-%012x", a.sellerID, a.storeID),
		OrderNumber: ho.OrderNumber, CreateDate: hubTime(shipped), ShipDate: hubDay(shipped), ShipmentCost: 4 + float64(o.ID%900)/100,
		TrackingNumber: f.TrackingNumber, BatchNumber: strconv.FormatInt(100000+o.ID%900000, 10), CarrierCode: carrier, ServiceCode: service,
		PackageCode: "package", Confirmation: "delivery", WarehouseID: a.warehouses[0].WarehouseID, MarketplaceNotified: true,
		ShipTo: ho.ShipTo, Weight: ho.Weight, InsuranceOptions: map[string]any{"provider": nil, "insureShipment": false, "insuredValue": 0},
		ShipmentItems: items, created: shipped, shipped: shipped,
	}
}

// hubDate reads a date filter ("2015-01-01 00:00:00" or "2015-01-01",
// Pacific time); zero when absent.
func hubDate(q url.Values, key string) (time.Time, bool) {
	v := strings.TrimSpace(q.Get(key))
	if v == "" {
		return time.Time{}, true
	}
	for _, layout := range []string{"2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, v, hubZone); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// inRange checks t against the Start/End filters named prefix.
type dateRange struct{ start, end time.Time }

func (d dateRange) has(t time.Time) bool {
	return (d.start.IsZero() || !t.Before(d.start)) && (d.end.IsZero() || !t.After(d.end))
}

func hubRange(q url.Values, prefix string) (dateRange, bool) {
	s, ok1 := hubDate(q, prefix+"Start")
	e, ok2 := hubDate(q, prefix+"End")
	return dateRange{s, e}, ok1 && ok2
}

func hubSortDesc(q url.Values) bool { return strings.EqualFold(q.Get("sortDir"), "DESC") }

func (s *hubSandbox) listOrders(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	page, size, ok := pageParams(q, "pageSize", hubDefaultPageSize, hubMaxPageSize)
	modified, ok1 := hubRange(q, "modifyDate")
	created, ok2 := hubRange(q, "createDate")
	ordered, ok3 := hubRange(q, "orderDate")
	var storeID int64
	if v := q.Get("storeId"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			ok = false
		}
		storeID = n
	}
	sortBy := q.Get("sortBy")
	if sortBy != "" && sortBy != "OrderDate" && sortBy != "ModifyDate" && sortBy != "CreateDate" {
		ok = false
	}
	if !ok || !ok1 || !ok2 || !ok3 {
		hubError(w, http.StatusBadRequest, "Invalid request parameters")
		return
	}
	status, number, name := q.Get("orderStatus"), strings.ToLower(q.Get("orderNumber")), strings.ToLower(q.Get("customerName"))

	s.mu.Lock()
	acct := s.accountOf(r)
	var matched []*hubOrder
	for i := range acct.orders {
		o := &acct.orders[i]
		if (status == "" || o.OrderStatus == status) && strings.HasPrefix(strings.ToLower(o.OrderNumber), number) &&
			(name == "" || strings.Contains(strings.ToLower(o.customerName), name)) &&
			(storeID == 0 || storeID == acct.storeID) &&
			modified.has(o.modified) && created.has(o.created) && ordered.has(o.ordered) {
			matched = append(matched, o)
		}
	}
	key := func(o *hubOrder) time.Time {
		switch sortBy {
		case "ModifyDate":
			return o.modified
		case "CreateDate":
			return o.created
		}
		return o.ordered
	}
	desc := hubSortDesc(q)
	sort.SliceStable(matched, func(i, j int) bool {
		a, b := key(matched[i]), key(matched[j])
		if !a.Equal(b) {
			return a.Before(b) != desc
		}
		return (matched[i].OrderID < matched[j].OrderID) != desc
	})
	pageRefs, pages := paginate(matched, page, size)
	items := make([]hubOrder, len(pageRefs))
	for i, o := range pageRefs {
		items[i] = *o
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"orders": orEmpty(items), "total": len(matched), "page": page, "pages": pages})
}

func orEmpty[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}

func (s *hubSandbox) getOrder(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(chi.URLParam(r, "orderId"), 10, 64)
	s.mu.Lock()
	acct := s.accountOf(r)
	i, ok := acct.byID[id]
	var o hubOrder
	if ok && err == nil {
		o = acct.orders[i]
	}
	s.mu.Unlock()
	if !ok || err != nil {
		hubError(w, http.StatusNotFound, "Order not found")
		return
	}
	writeJSON(w, http.StatusOK, o)
}

// markAsShipped records a fulfillment (listed by GET /fulfillments) and
// moves the order to shipped; a repeat records another one, as the hub
// would, so callers must look before they mark.
func (s *hubSandbox) markAsShipped(w http.ResponseWriter, r *http.Request) {
	var req struct {
		OrderID            *int64  `json:"orderId"`
		CarrierCode        string  `json:"carrierCode"`
		ShipDate           *string `json:"shipDate"`
		TrackingNumber     *string `json:"trackingNumber"`
		NotifyCustomer     bool    `json:"notifyCustomer"`
		NotifySalesChannel bool    `json:"notifySalesChannel"`
	}
	if err := readBody(w, r, &req); err != nil || req.OrderID == nil || strings.TrimSpace(req.CarrierCode) == "" {
		hubError(w, http.StatusBadRequest, "Invalid request parameters")
		return
	}
	if !knownName(hubCarrierCodes, req.CarrierCode, true) {
		hubError(w, http.StatusBadRequest, "Invalid carrierCode: "+req.CarrierCode)
		return
	}
	now := s.now()
	shipDay := hubDay(now)
	if req.ShipDate != nil && *req.ShipDate != "" {
		d, err := time.ParseInLocation("2006-01-02", *req.ShipDate, hubZone)
		if err != nil {
			hubError(w, http.StatusBadRequest, "Invalid request parameters")
			return
		}
		shipDay = hubDay(d)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	acct := s.accountOf(r)
	i, ok := acct.byID[*req.OrderID]
	if !ok {
		hubError(w, http.StatusNotFound, "Order not found")
		return
	}
	o := acct.orders[i]
	if o.OrderStatus == "cancelled" {
		hubError(w, http.StatusBadRequest, "Order "+o.OrderNumber+" is cancelled and cannot be marked as shipped")
		return
	}
	acct.nextID++
	tracking := ""
	if req.TrackingNumber != nil {
		tracking = *req.TrackingNumber
	}
	acct.fulfillments = append(acct.fulfillments, hubFulfillment{
		FulfillmentID: acct.nextID, OrderID: o.OrderID, OrderNumber: o.OrderNumber, UserID: fmt.Sprintf("%08x-0000-4000-8000-%012x", acct.sellerID, acct.storeID),
		CustomerEmail: o.CustomerEmail, TrackingNumber: tracking, CreateDate: hubTime(now), ShipDate: shipDay,
		CarrierCode: req.CarrierCode, MarketplaceNotified: req.NotifySalesChannel, ShipTo: o.ShipTo,
	})
	carrier := req.CarrierCode
	o.OrderStatus, o.ShipDate, o.CarrierCode = "shipped", &shipDay, &carrier
	o.modified, o.ModifyDate = now, hubTime(now)
	acct.orders[i] = o
	writeJSON(w, http.StatusOK, map[string]any{"orderId": o.OrderID, "orderNumber": o.OrderNumber})
}

func (s *hubSandbox) listShipments(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	page, size, ok := pageParams(q, "pageSize", hubDefaultPageSize, hubMaxPageSize)
	created, ok1 := hubRange(q, "createDate")
	shipped, ok2 := hubRange(q, "shipDate")
	var orderID int64
	if v := q.Get("orderId"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		ok = ok && err == nil
		orderID = n
	}
	sortBy := q.Get("sortBy")
	if sortBy != "" && sortBy != "ShipDate" && sortBy != "CreateDate" {
		ok = false
	}
	if !ok || !ok1 || !ok2 {
		hubError(w, http.StatusBadRequest, "Invalid request parameters")
		return
	}
	withItems := strings.EqualFold(q.Get("includeShipmentItems"), "true")
	s.mu.Lock()
	acct := s.accountOf(r)
	var matched []hubShipment
	for _, sh := range acct.shipments {
		if (orderID == 0 || sh.OrderID == orderID) && (q.Get("orderNumber") == "" || sh.OrderNumber == q.Get("orderNumber")) &&
			(q.Get("trackingNumber") == "" || sh.TrackingNumber == q.Get("trackingNumber")) &&
			(q.Get("carrierCode") == "" || sh.CarrierCode == q.Get("carrierCode")) &&
			created.has(sh.created) && shipped.has(sh.shipped) {
			if !withItems {
				sh.ShipmentItems = nil
			}
			matched = append(matched, sh)
		}
	}
	s.mu.Unlock()
	desc := hubSortDesc(q)
	sort.SliceStable(matched, func(i, j int) bool {
		a, b := matched[i].created, matched[j].created
		if sortBy == "ShipDate" {
			a, b = matched[i].shipped, matched[j].shipped
		}
		if !a.Equal(b) {
			return a.Before(b) != desc
		}
		return (matched[i].ShipmentID < matched[j].ShipmentID) != desc
	})
	items, pages := paginate(matched, page, size)
	writeJSON(w, http.StatusOK, map[string]any{"shipments": orEmpty(items), "total": len(matched), "page": page, "pages": pages})
}

func (s *hubSandbox) listFulfillments(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	page, size, ok := pageParams(q, "pageSize", hubDefaultPageSize, hubMaxPageSize)
	var orderID int64
	if v := q.Get("orderId"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		ok = ok && err == nil
		orderID = n
	}
	if !ok {
		hubError(w, http.StatusBadRequest, "Invalid request parameters")
		return
	}
	s.mu.Lock()
	var matched []hubFulfillment
	for _, f := range s.accountOf(r).fulfillments {
		if (orderID == 0 || f.OrderID == orderID) && (q.Get("orderNumber") == "" || f.OrderNumber == q.Get("orderNumber")) &&
			(q.Get("trackingNumber") == "" || f.TrackingNumber == q.Get("trackingNumber")) {
			matched = append(matched, f)
		}
	}
	s.mu.Unlock()
	items, pages := paginate(matched, page, size)
	writeJSON(w, http.StatusOK, map[string]any{"fulfillments": orEmpty(items), "total": len(matched), "page": page, "pages": pages})
}

func (s *hubSandbox) listWarehouses(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	writeJSON(w, http.StatusOK, s.accountOf(r).warehouses)
}

func (s *hubSandbox) listWebhooks(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"webhooks": orEmpty(s.accountOf(r).webhooks)})
}

func (s *hubSandbox) subscribe(w http.ResponseWriter, r *http.Request) {
	var req struct {
		TargetURL    string `json:"target_url"`
		Event        string `json:"event"`
		StoreID      *int64 `json:"store_id"`
		FriendlyName string `json:"friendly_name"`
	}
	if err := readBody(w, r, &req); err != nil {
		hubError(w, http.StatusBadRequest, "Invalid request parameters")
		return
	}
	known := false
	for _, e := range hubEvents() {
		known = known || e == req.Event
	}
	u, err := url.Parse(req.TargetURL)
	if !known || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		hubError(w, http.StatusBadRequest, "Invalid request parameters")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	acct := s.accountOf(r)
	acct.nextID++
	acct.webhooks = append(acct.webhooks, hubWebhook{
		WebHookID: acct.nextID, SellerID: acct.sellerID, StoreID: req.StoreID, HookType: req.Event, MessageFormat: "Json",
		URL: req.TargetURL, Name: req.FriendlyName, Active: true, WebhookLogs: []any{},
	})
	writeJSON(w, http.StatusCreated, map[string]int64{"id": acct.nextID})
}

func (s *hubSandbox) unsubscribe(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(chi.URLParam(r, "webhookId"), 10, 64)
	s.mu.Lock()
	defer s.mu.Unlock()
	acct := s.accountOf(r)
	for i, h := range acct.webhooks {
		if err == nil && h.WebHookID == id {
			acct.webhooks = append(acct.webhooks[:i:i], acct.webhooks[i+1:]...)
			w.WriteHeader(http.StatusOK)
			return
		}
	}
	hubError(w, http.StatusNotFound, "Webhook not found")
}
