package platforms

import (
	"encoding/json"
	"strings"
)

// The storefront_a order mapping (StorefrontAOrder).

// wireOrder is a storefront_a REST Admin API order.
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
