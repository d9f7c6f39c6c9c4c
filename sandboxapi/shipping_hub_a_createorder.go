package sandboxapi

import (
	"net/http"
	"strings"
	"time"
)

// createOrder is POST /orders/createorder: create-or-update keyed by
// orderKey, as on the hub. An order with the key already in the account is
// updated in place (same orderId); otherwise a new order is added. The
// answer is the order.
func (s *hubSandbox) createOrder(w http.ResponseWriter, r *http.Request) {
	var req struct {
		OrderNumber   string    `json:"orderNumber"`
		OrderKey      string    `json:"orderKey"`
		OrderDate     string    `json:"orderDate"`
		OrderStatus   string    `json:"orderStatus"`
		CustomerEmail string    `json:"customerEmail"`
		BillTo        hubAddr   `json:"billTo"`
		ShipTo        hubAddr   `json:"shipTo"`
		Items         []hubItem `json:"items"`
		AmountPaid    float64   `json:"amountPaid"`
		TaxAmount     float64   `json:"taxAmount"`
		Shipping      float64   `json:"shippingAmount"`
		CustomerNotes *string   `json:"customerNotes"`
	}
	if err := readBody(w, r, &req); err != nil || strings.TrimSpace(req.OrderNumber) == "" || req.OrderStatus == "" || strings.TrimSpace(req.ShipTo.Name) == "" {
		hubError(w, http.StatusBadRequest, "Invalid request parameters")
		return
	}
	switch req.OrderStatus {
	case "awaiting_payment", "awaiting_shipment", "pending_fulfillment", "shipped", "on_hold", "cancelled":
	default:
		hubError(w, http.StatusBadRequest, "Invalid orderStatus")
		return
	}
	now := s.now()
	ordered := now
	if t, err := time.ParseInLocation(hubTimeLayout, req.OrderDate, hubZone); err == nil {
		ordered = t
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	acct := s.accountOf(r)
	idx := -1
	if req.OrderKey != "" {
		idx = acct.indexOfKey(req.OrderKey)
	}
	var o hubOrder
	if idx >= 0 {
		o = acct.orders[idx]
	} else {
		acct.nextID++
		o = hubOrder{OrderID: acct.nextID, OrderKey: req.OrderKey, CreateDate: hubTime(now), created: now,
			Confirmation: "none", InsuranceOptions: map[string]any{}, InternationalOptions: map[string]any{},
			AdvancedOptions: map[string]any{"storeId": acct.storeID}}
		if o.OrderKey == "" {
			o.OrderKey = strings.ToLower(strings.ReplaceAll(hubTime(now), ":", ""))
		}
	}
	for i := range req.Items {
		req.Items[i].OrderItemID = o.OrderID*100 + int64(i)
		req.Items[i].CreateDate, req.Items[i].ModifyDate = hubTime(now), hubTime(now)
		if req.Items[i].Options == nil {
			req.Items[i].Options = []hubOption{}
		}
	}
	var total float64
	for _, it := range req.Items {
		total += it.UnitPrice * float64(it.Quantity)
	}
	o.OrderNumber, o.OrderDate, o.ordered, o.OrderStatus = req.OrderNumber, hubTime(ordered), ordered, req.OrderStatus
	o.CustomerEmail, o.CustomerUsername, o.BillTo, o.ShipTo, o.Items = req.CustomerEmail, req.CustomerEmail, req.BillTo, req.ShipTo, req.Items
	o.OrderTotal, o.AmountPaid, o.TaxAmount, o.ShippingAmount, o.CustomerNotes = total+req.TaxAmount+req.Shipping, req.AmountPaid, req.TaxAmount, req.Shipping, req.CustomerNotes
	o.customerName = req.BillTo.Name
	o.modified, o.ModifyDate = now, hubTime(now)
	if idx >= 0 {
		acct.orders[idx] = o
	} else {
		acct.byID[o.OrderID] = len(acct.orders)
		acct.orders = append(acct.orders, o)
	}
	writeJSON(w, http.StatusOK, o)
}

// indexOfKey is the index of the account's first order with the given
// orderKey, or -1: a map over the orders (indexed as they are appended,
// whichever handler appended them), so a drain of 100,000 pushes does not
// scan the account's orders once per push.
func (a *hubAccount) indexOfKey(key string) int {
	if a.byKey == nil {
		a.byKey = make(map[string]int, len(a.orders))
	}
	for ; a.keyed < len(a.orders); a.keyed++ {
		if k := a.orders[a.keyed].OrderKey; k != "" {
			if _, dup := a.byKey[k]; !dup {
				a.byKey[k] = a.keyed
			}
		}
	}
	i, ok := a.byKey[key]
	if !ok {
		return -1
	}
	if a.orders[i].OrderKey == key {
		return i
	}
	// A key changed in place since it was indexed: look the slow way.
	for i := range a.orders {
		if a.orders[i].OrderKey == key {
			return i
		}
	}
	return -1
}
