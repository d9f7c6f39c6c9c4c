package platforms

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// OrderPusher is the optional capability of a connector whose platform
// accepts orders from the service (a dispatcher's destination). Key is the
// service's stable reference of the order (one per order and destination):
// the platform keys the order by it, so a retried push updates the order it
// made and never creates a second one.
type OrderPusher interface {
	PushOrder(ctx context.Context, b Bridge, o Order, key string) (OrderPushResult, error)
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
// the service (a connector that implements OrderPusher for some bridge
// types only, as the sandbox connector).
var ErrOrdersNotAccepted = errors.New("the platform does not accept orders")

var (
	_ OrderPusher = (*ShippingHubA)(nil)
	_ OrderPusher = (*sandboxConnector)(nil)
)

// PushOrder implements OrderPusher for the sandbox connector: a
// shipping_hub_a bridge's orders go to the hub sandbox's createorder (the
// hub connector's call); other types do not accept orders here.
func (c *sandboxConnector) PushOrder(ctx context.Context, b Bridge, o Order, key string) (OrderPushResult, error) {
	if b.Type != TypeShippingHubA {
		return OrderPushResult{}, fmt.Errorf("%s: %w", b.Type, ErrOrdersNotAccepted)
	}
	return NewShippingHubA(c.baseURL+"/platforms/shipping_hub_a", c.client).PushOrder(ctx, b, o, key)
}

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
func (c *ShippingHubA) PushOrder(ctx context.Context, b Bridge, o Order, key string) (OrderPushResult, error) {
	key = strings.TrimSpace(key)
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
