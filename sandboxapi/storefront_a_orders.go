package sandboxapi

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// createOrder is POST orders.json {"order": {...}}: the order is added to
// the shop (unpaid unless financial_status says otherwise, unfulfilled)
// with the next id, and answered 201 {"order": ...}. As on the platform,
// a repeat creates another order: callers look before they create.
func (s *sfaSandbox) createOrder(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Order *order `json:"order"`
	}
	if err := readBody(w, r, &req); err != nil || req.Order == nil {
		sfaError(w, http.StatusBadRequest, "Required parameter missing or invalid")
		return
	}
	o := *req.Order
	if len(o.LineItems) == 0 {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"errors": map[string][]string{"line_items": {"must have at least one line item"}}})
		return
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	shop := s.shopOf(r)
	var maxID int64
	maxNumber := 1000
	for _, ex := range shop.orders {
		maxID = max(maxID, ex.ID)
		maxNumber = max(maxNumber, ex.OrderNumber)
	}
	o.ID = maxID + 1
	o.OrderNumber = maxNumber + 1
	o.Number = o.OrderNumber - 1000
	o.Name = "#" + strconv.Itoa(o.OrderNumber)
	o.AdminGraphqlAPIID = fmt.Sprintf("gid://shopify/Order/%d", o.ID)
	o.CreatedAt, o.UpdatedAt, o.ProcessedAt = ts(now), ts(now), ts(now)
	o.updated = now
	o.Confirmed = true
	o.ContactEmail = o.Email
	if o.FinancialStatus == "" {
		o.FinancialStatus = "pending"
	}
	o.FulfillmentStatus = nil
	if o.Currency == "" {
		o.Currency = "USD"
	}
	o.PresentmentCurr = o.Currency
	var total float64
	for i := range o.LineItems {
		li := &o.LineItems[i]
		li.ID = o.ID*100 + int64(i+1)
		if li.Name == "" {
			li.Name = li.Title
		}
		li.FulfillableQuantity = li.Quantity
		li.RequiresShipping, li.Taxable = true, true
		if li.TotalDiscount == "" {
			li.TotalDiscount = "0.00"
		}
		p, _ := strconv.ParseFloat(li.Price, 64)
		total += p * float64(li.Quantity)
	}
	amount := strconv.FormatFloat(total, 'f', 2, 64)
	o.TotalLineItems, o.SubtotalPrice, o.TotalPrice = amount, amount, amount
	o.TotalDiscounts, o.TotalTax = "0.00", "0.00"
	o.TotalShippingSet = moneySet{ShopMoney: money{Amount: "0.00", CurrencyCode: o.Currency}}
	o.Tags = strings.TrimSpace(o.Tags)
	o.DiscountCodes, o.TaxLines, o.ShippingLines = orEmpty(o.DiscountCodes), orEmpty(o.TaxLines), orEmpty(o.ShippingLines)
	o.Fulfillments, o.Refunds, o.PaymentGatewayName = orEmpty(o.Fulfillments), orEmpty(o.Refunds), orEmpty(o.PaymentGatewayName)
	if o.Customer.Email == "" {
		o.Customer.Email = o.Email
	}
	o.Customer.ID = o.ID + 7
	o.Customer.CreatedAt, o.Customer.UpdatedAt = ts(now), ts(now)
	shop.byID[o.ID] = len(shop.orders)
	shop.orders = append(shop.orders, o)
	writeJSON(w, http.StatusCreated, map[string]any{"order": o})
}
