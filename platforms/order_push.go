package platforms

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// OrderPusher is the optional capability of a connector whose platform
// accepts orders from the service (a dispatcher's destination). The
// reference's Key is the service's stable reference of the order (one per
// order and destination): the platform's order carries it, so a retried
// push finds (or updates) the order an earlier attempt made and never
// creates a second one.
type OrderPusher interface {
	PushOrder(ctx context.Context, b Bridge, o Order, ref PushRef) (OrderPushResult, error)
}

// PushRef identifies a push: Key is carried by the platform's order;
// Since is no later than the first attempt (the assignment's creation), so
// a platform that can only be searched by creation time is searched from
// there.
type PushRef struct {
	Key   string
	Since time.Time
}

// OrderPushResult is the outcome of PushOrder.
type OrderPushResult struct {
	// ExternalID is the platform's id of the order.
	ExternalID string
	// Kind is what the destination is: "fulfillment" (a shipping hub) or
	// "cart" (a storefront).
	Kind string
}

// Kinds of OrderPushResult.
const (
	PushKindFulfillment = "fulfillment"
	PushKindCart        = "cart"
)

// ErrOrdersNotAccepted: the bridge's platform does not take orders from
// the service (for a connector that implements OrderPusher for some of
// its bridges only).
var ErrOrdersNotAccepted = errors.New("the platform does not accept orders")

var (
	_ OrderPusher = (*ShippingHubA)(nil)
	_ OrderPusher = (*StorefrontA)(nil)
)

// hubCreateOrder is the body of POST /orders/createorder: the hub creates
// the order, or updates the one with the same orderKey.
type hubCreateOrder struct {
	OrderNumber   string          `json:"orderNumber"`
	OrderKey      string          `json:"orderKey"`
	OrderDate     string          `json:"orderDate"`
	OrderStatus   string          `json:"orderStatus"`
	CustomerEmail string          `json:"customerEmail,omitempty"`
	BillTo        hubPushAddress  `json:"billTo"`
	ShipTo        hubPushAddress  `json:"shipTo"`
	Items         []hubPushItem   `json:"items"`
	AmountPaid    float64         `json:"amountPaid"`
	TaxAmount     float64         `json:"taxAmount"`
	Shipping      float64         `json:"shippingAmount"`
	CustomerNotes string          `json:"customerNotes,omitempty"`
	Advanced      json.RawMessage `json:"advancedOptions,omitempty"`
}

type hubPushAddress struct {
	Name       string `json:"name"`
	Company    string `json:"company,omitempty"`
	Street1    string `json:"street1"`
	Street2    string `json:"street2,omitempty"`
	City       string `json:"city"`
	State      string `json:"state"`
	PostalCode string `json:"postalCode"`
	Country    string `json:"country"`
	Phone      string `json:"phone,omitempty"`
}

type hubPushItem struct {
	LineItemKey string  `json:"lineItemKey,omitempty"`
	SKU         string  `json:"sku"`
	Name        string  `json:"name"`
	Quantity    int     `json:"quantity"`
	UnitPrice   float64 `json:"unitPrice"`
}

func hubPushAddressOf(a *Address, fallbackName string) hubPushAddress {
	if a == nil {
		return hubPushAddress{Name: fallbackName}
	}
	name := a.Name
	if name == "" {
		name = fallbackName
	}
	return hubPushAddress{Name: name, Company: a.Company, Street1: a.Address1, Street2: a.Address2, City: a.City,
		State: a.ProvinceCode, PostalCode: a.Zip, Country: a.CountryCode, Phone: a.Phone}
}

// PushOrder implements OrderPusher: POST /orders/createorder, which the
// hub treats as create-or-update by orderKey (the key given), so a retry
// updates the order it made.
func (c *ShippingHubA) PushOrder(ctx context.Context, b Bridge, o Order, ref PushRef) (OrderPushResult, error) {
	key := strings.TrimSpace(ref.Key)
	if key == "" {
		return OrderPushResult{}, &Error{Code: CodeInvalidRequest, Message: "order push needs a key"}
	}
	name := strings.TrimSpace(o.Customer.FirstName + " " + o.Customer.LastName)
	status := "awaiting_shipment"
	if o.PaymentStatus != "" && o.PaymentStatus != "paid" {
		status = "awaiting_payment"
	}
	number := o.OrderNumber
	if number == "" {
		number = key
	}
	body := hubCreateOrder{
		OrderNumber: number, OrderKey: key, OrderDate: o.OrderedAt.In(ShippingHubAZone).Format("2006-01-02T15:04:05.0000000"),
		OrderStatus: status, CustomerEmail: o.Customer.Email,
		BillTo: hubPushAddressOf(o.BillingAddress, name), ShipTo: hubPushAddressOf(o.ShippingAddress, name),
		AmountPaid: o.Totals.Total, TaxAmount: o.Totals.Tax, Shipping: o.Totals.Shipping, CustomerNotes: o.Note,
		Items: make([]hubPushItem, 0, len(o.LineItems)),
	}
	if o.BillingAddress == nil && o.ShippingAddress != nil {
		body.BillTo = body.ShipTo
	}
	for _, li := range o.LineItems {
		body.Items = append(body.Items, hubPushItem{LineItemKey: li.ExternalID, SKU: li.SKU, Name: li.Name, Quantity: li.Quantity, UnitPrice: li.UnitPrice})
	}
	resp, err := c.call(ctx, b, http.MethodPost, "/orders/createorder", nil, body, false)
	if err != nil {
		return OrderPushResult{}, err
	}
	var out struct {
		OrderID json.Number `json:"orderId"`
	}
	if err := decodeJSON(resp.body, &out, "createorder response"); err != nil {
		return OrderPushResult{}, err
	}
	if out.OrderID == "" {
		return OrderPushResult{}, badResponse("createorder response has no orderId", nil)
	}
	return OrderPushResult{ExternalID: out.OrderID.String(), Kind: PushKindFulfillment}, nil
}

// sfaPushOrder is the body of storefront_a's POST orders.json.
type sfaPushOrder struct {
	Email           string            `json:"email,omitempty"`
	FinancialStatus string            `json:"financial_status,omitempty"`
	Tags            string            `json:"tags"`
	Note            string            `json:"note,omitempty"`
	SourceName      string            `json:"source_name"`
	Currency        string            `json:"currency,omitempty"`
	Customer        map[string]string `json:"customer,omitempty"`
	ShippingAddress *sfaPushAddress   `json:"shipping_address,omitempty"`
	BillingAddress  *sfaPushAddress   `json:"billing_address,omitempty"`
	LineItems       []sfaPushLine     `json:"line_items"`
}

type sfaPushAddress struct {
	Name         string `json:"name"`
	Company      string `json:"company,omitempty"`
	Address1     string `json:"address1"`
	Address2     string `json:"address2,omitempty"`
	City         string `json:"city"`
	ProvinceCode string `json:"province_code"`
	CountryCode  string `json:"country_code"`
	Zip          string `json:"zip"`
	Phone        string `json:"phone,omitempty"`
}

type sfaPushLine struct {
	Title    string `json:"title"`
	SKU      string `json:"sku,omitempty"`
	Quantity int    `json:"quantity"`
	Price    string `json:"price"`
}

func sfaPushAddressOf(a *Address) *sfaPushAddress {
	if a == nil {
		return nil
	}
	return &sfaPushAddress{Name: a.Name, Company: a.Company, Address1: a.Address1, Address2: a.Address2, City: a.City,
		ProvinceCode: a.ProvinceCode, CountryCode: a.CountryCode, Zip: a.Zip, Phone: a.Phone}
}

// storefrontAPushTag marks an order the service created: the push key is
// one of the order's tags.
func storefrontAHasTag(tags, key string) bool {
	for _, t := range strings.Split(tags, ",") {
		if strings.TrimSpace(t) == key {
			return true
		}
	}
	return false
}

// PushOrder implements OrderPusher: the order is created in the shop
// (POST orders.json, source_name "fos") with the push key as a tag. The
// REST Admin API has no search by tag, so an earlier attempt's order is
// looked for first among the orders created since ref.Since (GET
// orders.json?status=any&created_at_min=…, every page); when one carries
// the key it is the result and nothing is created.
func (c *StorefrontA) PushOrder(ctx context.Context, b Bridge, o Order, ref PushRef) (OrderPushResult, error) {
	key := strings.TrimSpace(ref.Key)
	if key == "" || strings.Contains(key, ",") {
		return OrderPushResult{}, &Error{Code: CodeInvalidRequest, Message: "order push needs a key without commas"}
	}
	s, err := c.shop(b)
	if err != nil {
		return OrderPushResult{}, err
	}
	q := url.Values{"status": {"any"}, "limit": {strconv.Itoa(storefrontAMaxLimit)}, "fields": {"id,tags"}}
	if !ref.Since.IsZero() {
		q.Set("created_at_min", ref.Since.UTC().Format(time.RFC3339))
	}
	for {
		resp, err := c.call(ctx, s, http.MethodGet, "/orders.json", q, nil, false)
		if err != nil {
			return OrderPushResult{}, err
		}
		var env struct {
			Orders []struct {
				ID   json.Number `json:"id"`
				Tags string      `json:"tags"`
			} `json:"orders"`
		}
		if err := decodeJSON(resp.body, &env, "order list response"); err != nil {
			return OrderPushResult{}, err
		}
		for _, it := range env.Orders {
			if storefrontAHasTag(it.Tags, key) {
				return OrderPushResult{ExternalID: it.ID.String(), Kind: PushKindCart}, nil
			}
		}
		next := linkPageInfo(resp.header.Values("Link"), "next")
		if next == "" {
			break
		}
		q = url.Values{"limit": {strconv.Itoa(storefrontAMaxLimit)}, "page_info": {next}}
	}
	tags := key
	for _, t := range o.Tags {
		if t = strings.TrimSpace(strings.ReplaceAll(t, ",", " ")); t != "" && t != key {
			tags += ", " + t
		}
	}
	body := sfaPushOrder{
		Email: o.Customer.Email, FinancialStatus: o.PaymentStatus, Tags: tags, Note: o.Note, SourceName: "fos", Currency: o.Currency,
		ShippingAddress: sfaPushAddressOf(o.ShippingAddress), BillingAddress: sfaPushAddressOf(o.BillingAddress),
		LineItems: make([]sfaPushLine, 0, len(o.LineItems)),
	}
	if o.Customer.Email != "" || o.Customer.FirstName != "" {
		body.Customer = map[string]string{"email": o.Customer.Email, "first_name": o.Customer.FirstName, "last_name": o.Customer.LastName}
	}
	for _, li := range o.LineItems {
		body.LineItems = append(body.LineItems, sfaPushLine{Title: li.Name, SKU: li.SKU, Quantity: li.Quantity, Price: strconv.FormatFloat(li.UnitPrice, 'f', 2, 64)})
	}
	resp, err := c.call(ctx, s, http.MethodPost, "/orders.json", nil, map[string]any{"order": body}, false)
	if err != nil {
		return OrderPushResult{}, err
	}
	var out struct {
		Order struct {
			ID json.Number `json:"id"`
		} `json:"order"`
	}
	if err := decodeJSON(resp.body, &out, "order create response"); err != nil {
		return OrderPushResult{}, err
	}
	if out.Order.ID == "" {
		return OrderPushResult{}, badResponse("order create response has no order id", nil)
	}
	return OrderPushResult{ExternalID: out.Order.ID.String(), Kind: PushKindCart}, nil
}
