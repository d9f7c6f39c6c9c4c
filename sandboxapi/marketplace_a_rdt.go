package sandboxapi

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// marketplace_a's restricted data and usage plans.
//
//	POST /tokens/2021-03-01/restrictedDataToken
//	     {"restrictedResources": [{"method": "GET", "path": "/orders/v0/orders"
//	      or "/orders/v0/orders/{orderId}", "dataElements": ["buyerInfo",
//	      "shippingAddress"]}]} → {"restrictedDataToken": "Atz.sprdt|…", "expiresIn": 3600}
//
// As on the marketplace, getOrders and getOrder return the buyer (BuyerInfo)
// and the street, name and phone of the ShippingAddress only when called
// with a restricted data token (RDT) that covers the operation's path and
// those data elements; with the plain access token the address holds city,
// region, postal code and country alone. An RDT works for the operations
// it names only (403 elsewhere). A seller whose refresh token contains
// "sandbox-nopii" has no PII role: the Tokens API refuses it (403).
//
// A seller whose refresh token contains "sandbox-metered" has the
// documented usage plans enforced (token buckets per operation: rate and
// burst of vendors/platforms/marketplace_a §4): past the burst a call is a
// 429 QuotaExceeded with x-amzn-RateLimit-Limit naming the documented
// rate. Other sellers are not metered, so a 300-order import does not take
// the ten minutes getOrderItems' 0.5 a second would impose.

const (
	mpaRDTPrefix      = "Atz.sprdt|sbx."
	mpaRDTPath        = "/tokens/2021-03-01/restrictedDataToken"
	mpaMeteredValue   = "sandbox-metered"
	mpaNoPIIValue     = "sandbox-nopii"
	mpaOrdersListPath = "/orders/v0/orders"
	mpaOrderPath      = "/orders/v0/orders/{orderId}"
)

// mpaPlan is an operation's documented usage plan.
type mpaPlan struct {
	rate  float64
	burst float64
}

// mpaPlans: the documented default usage plans (vendors/platforms/marketplace_a §4).
var mpaPlans = map[string]mpaPlan{
	"getOrders": {0.0167, 20}, "getOrder": {0.5, 30}, "getOrderItems": {0.5, 30},
	"confirmShipment": {2, 10}, "createRestrictedDataToken": {1, 10},
}

// mpaOperation names the operation of a request (""; not metered).
func mpaOperation(r *http.Request) string {
	p := r.URL.Path
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(p, mpaRDTPath):
		return "createRestrictedDataToken"
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/shipmentConfirmation"):
		return "confirmShipment"
	case r.Method == http.MethodGet && strings.HasSuffix(p, "/orderItems"):
		return "getOrderItems"
	case r.Method == http.MethodGet && strings.HasSuffix(p, mpaOrdersListPath):
		return "getOrders"
	case r.Method == http.MethodGet && strings.Contains(p, mpaOrdersListPath+"/"):
		return "getOrder"
	}
	return ""
}

// mpaBucket is one seller's token bucket for one operation.
type mpaBucket struct {
	tokens float64
	at     time.Time
}

// take spends a token of a seller's operation bucket. s.mu held.
func (s *mpaSandbox) take(seller, op string, now time.Time) bool {
	plan, ok := mpaPlans[op]
	if !ok {
		return true
	}
	if s.buckets == nil {
		s.buckets = map[string]*mpaBucket{}
	}
	key := seller + "/" + op
	b, ok := s.buckets[key]
	if !ok {
		if len(s.buckets) > 100_000 {
			clear(s.buckets)
		}
		b = &mpaBucket{tokens: plan.burst, at: now}
		s.buckets[key] = b
	}
	b.tokens = min(plan.burst, b.tokens+now.Sub(b.at).Seconds()*plan.rate)
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// mpaRate is the x-amzn-RateLimit-Limit of an operation.
func mpaRate(op string) string {
	return strconv.FormatFloat(mpaPlans[op].rate, 'f', -1, 64)
}

// mpaRDTScope is what an RDT covers: "L" (getOrders) and/or "O" (getOrder),
// each followed by the data elements it grants ("b" buyerInfo, "s"
// shippingAddress), e.g. "LbsObs".
func mpaRDTScope(resources []mpaRestrictedResource) (string, string) {
	var scope strings.Builder
	for _, rr := range resources {
		if rr.Method != http.MethodGet {
			return "", "Only GET operations have restricted data."
		}
		switch {
		case rr.Path == mpaOrdersListPath:
			scope.WriteString("L")
		case rr.Path == mpaOrderPath || (strings.HasPrefix(rr.Path, mpaOrdersListPath+"/") && !strings.Contains(strings.TrimPrefix(rr.Path, mpaOrdersListPath+"/"), "/")):
			scope.WriteString("O")
		default:
			return "", "The path " + rr.Path + " is not a restricted operation."
		}
		if len(rr.DataElements) == 0 {
			return "", "dataElements is required for " + rr.Path + "."
		}
		for _, e := range rr.DataElements {
			switch e {
			case "buyerInfo":
				scope.WriteString("b")
			case "shippingAddress":
				scope.WriteString("s")
			case "buyerTaxInformation":
			default:
				return "", "Invalid dataElement " + e + "."
			}
		}
	}
	return scope.String(), ""
}

type mpaRestrictedResource struct {
	Method       string   `json:"method"`
	Path         string   `json:"path"`
	DataElements []string `json:"dataElements"`
}

// restrictedDataToken is the Tokens API's createRestrictedDataToken.
func (s *mpaSandbox) restrictedDataToken(w http.ResponseWriter, r *http.Request) {
	seller := r.Context().Value(mpaSellerKey{}).(mpaSeller)
	if seller.scope != "" {
		mpaError(w, http.StatusForbidden, "Unauthorized", "Access to requested resource is denied.", "")
		return
	}
	var req struct {
		RestrictedResources []mpaRestrictedResource `json:"restrictedResources"`
	}
	if err := readBody(w, r, &req); err != nil || len(req.RestrictedResources) == 0 {
		mpaError(w, http.StatusBadRequest, "InvalidInput", "Invalid Input", "restrictedResources is required.")
		return
	}
	if seller.noPII {
		mpaError(w, http.StatusForbidden, "Unauthorized", "Access to requested resource is denied.",
			"The application is not authorized for the roles the restricted data needs.")
		return
	}
	scope, msg := mpaRDTScope(req.RestrictedResources)
	if msg != "" {
		mpaError(w, http.StatusBadRequest, "InvalidInput", "Invalid Input", msg)
		return
	}
	tok := mpaRDTPrefix + strings.TrimPrefix(seller.token, mpaTokenPrefix) + "." + scope
	writeJSON(w, http.StatusOK, map[string]any{"restrictedDataToken": tok, "expiresIn": 3600})
}

// sees reports whether the caller's token grants a data element
// ('b' buyer, 's' shipping address) of getOrders (list) or getOrder.
func (sl mpaSeller) sees(list bool, element byte) bool {
	res := byte('O')
	if list {
		res = 'L'
	}
	in := false
	for i := 0; i < len(sl.scope); i++ {
		switch c := sl.scope[i]; c {
		case 'L', 'O':
			in = c == res
		default:
			if in && c == element {
				return true
			}
		}
	}
	return false
}

// redactPII drops what the caller's token does not grant.
func (sl mpaSeller) redactPII(o mpaOrder, list bool) mpaOrder {
	if !sl.sees(list, 's') && o.ShippingAddress != nil {
		a := *o.ShippingAddress
		a.Name, a.AddressLine1, a.AddressLine2, a.Phone, a.AddressType = "", "", "", "", ""
		o.ShippingAddress = &a
	}
	if !sl.sees(list, 'b') && o.BuyerInfo != nil {
		o.BuyerInfo = &mpaBuyer{}
	}
	return o
}

// rdtAllowed: an RDT is good for the restricted operations only.
func rdtAllowed(seller mpaSeller, op string) bool {
	if seller.scope == "" {
		return true
	}
	return (op == "getOrders" && strings.Contains(seller.scope, "L")) || (op == "getOrder" && strings.Contains(seller.scope, "O"))
}
