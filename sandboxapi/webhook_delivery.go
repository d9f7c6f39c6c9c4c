package sandboxapi

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Webhook deliveries of the API-speaking sandbox stores. Once a topic is
// registered (storefront_a POST webhooks.json, shipping_hub_a POST
// /webhooks/subscribe), a change of the store's catalog through the
// sandbox control endpoints below is delivered to the registered address
// the way the platform delivers it, asynchronously, with a short bounded
// retry:
//
//	POST {prefix}/_sandbox/orders    (storefront_a and shipping_hub_a)
//
// storefront_a: body {"shop_domain", "id"?, "note"?, "tags"?, "webhook_secret"?}.
// Without id a new order is added to the shop (topic orders/create);
// with the id of an order of the shop, its note/tags and updated_at change
// (orders/updated). The delivery is the order's REST JSON with the
// platform's headers: X-Shopify-Topic, X-Shopify-Hmac-Sha256 (base64
// HMAC-SHA256 of the raw body keyed by the app's client secret),
// X-Shopify-Shop-Domain, X-Shopify-API-Version, X-Shopify-Webhook-Id (per
// delivery), X-Shopify-Event-Id (per event, the same on every retry) and
// X-Shopify-Triggered-At. The sandbox app's client secret is
// SandboxAppSecret unless a request names another webhook_secret (the
// shop then keeps it).
//
// shipping_hub_a: body {"api_key", "id"?}. A new order (ORDER_NOTIFY,
// ITEM_ORDER_NOTIFY) is delivered as the hub does: {"resource_url",
// "resource_type"} POSTed to the registered target_url (which carries the
// service's token), no signature and no headers of its own.
//
// The answer is {"order": ..., "deliveries": n}: 201 for a new order, 200
// for an update.

// SandboxAppSecret is the sandbox storefront_a app's client secret, the
// HMAC key of its webhook signatures (unless a request names another).
const SandboxAppSecret = "sandbox-app-secret"

// Delivery retry: attempts and the wait before the first retry (doubled
// each time).
const (
	deliveryAttempts = 4
	deliveryBackoff  = 250 * time.Millisecond
	deliveryTimeout  = 5 * time.Second
)

// deliveryClient sends the sandbox's webhook deliveries.
var deliveryClient = &http.Client{Timeout: deliveryTimeout}

// delivery is one webhook POST.
type delivery struct {
	url    string
	header http.Header
	body   []byte
	// perTry sets per-attempt headers (a fresh delivery id).
	perTry func(http.Header)
}

// deliverAsync sends each delivery in the background, retrying a failed
// one (network error, non-2xx) a few times.
func deliverAsync(ds []delivery) {
	for _, d := range ds {
		go func(d delivery) {
			wait := deliveryBackoff
			for attempt := 0; attempt < deliveryAttempts; attempt++ {
				if attempt > 0 {
					time.Sleep(wait)
					wait *= 2
				}
				if d.send() {
					return
				}
			}
		}(d)
	}
}

func (d delivery) send() bool {
	ctx, cancel := context.WithTimeout(context.Background(), deliveryTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.url, bytes.NewReader(d.body))
	if err != nil {
		return true // a malformed address never succeeds
	}
	for k, vs := range d.header {
		req.Header[k] = vs
	}
	if d.perTry != nil {
		d.perTry(req.Header)
	}
	resp, err := deliveryClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode >= 200 && resp.StatusCode < 300
}

func signBody(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

type sandboxOrderRequest struct {
	ShopDomain    string  `json:"shop_domain"`
	APIKey        string  `json:"api_key"`
	ID            *int64  `json:"id"`
	Note          *string `json:"note"`
	Tags          *string `json:"tags"`
	WebhookSecret string  `json:"webhook_secret"`
}

// newStoreOrder builds the next order of a store holding orders (the
// catalog's own builder, numbered after the last one).
func newStoreOrder(bridgeType, store string, orders []order, now time.Time) order {
	i := len(orders)
	baseID := int64(4_000_000_000)
	if len(orders) > 0 {
		baseID = orders[0].ID
	}
	r := rng{s: storeSeed(bridgeType, store) ^ (uint64(i+1) * 0x9e3779b97f4a7c15) ^ uint64(now.UnixNano())}
	o := buildOrder(&r, i, baseID, now, scenario{financial: "paid"})
	for _, ex := range orders { // ids stay unique even after earlier additions
		if ex.ID >= o.ID {
			o.ID = ex.ID + 7919
			o.AdminGraphqlAPIID = "gid://shopify/Order/" + jsonInt(o.ID)
		}
	}
	o.updated = now
	o.UpdatedAt = ts(now)
	return o
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

// sandboxOrder is storefront_a's POST {prefix}/_sandbox/orders.
func (s *sfaSandbox) sandboxOrder(w http.ResponseWriter, r *http.Request) {
	var req sandboxOrderRequest
	if err := readBody(w, r, &req); err != nil || strings.TrimSpace(req.ShopDomain) == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", "shop_domain is required")
		return
	}
	domain := strings.ToLower(strings.TrimSpace(req.ShopDomain))
	s.mu.Lock()
	shop := s.shop(domain)
	now := s.now().UTC()
	if req.WebhookSecret != "" {
		shop.appSecret = req.WebhookSecret
	}
	secret := shop.appSecret
	if secret == "" {
		secret = SandboxAppSecret
	}
	var o order
	topic, status := "orders/create", http.StatusCreated
	if req.ID != nil {
		i, ok := shop.byID[*req.ID]
		if !ok {
			s.mu.Unlock()
			writeError(w, http.StatusNotFound, "not_found", "the shop has no such order")
			return
		}
		if req.Note != nil {
			shop.orders[i].Note = req.Note
		}
		if req.Tags != nil {
			shop.orders[i].Tags = *req.Tags
		}
		shop.orders[i].updated = now
		shop.orders[i].UpdatedAt = ts(now)
		o, topic, status = shop.orders[i], "orders/updated", http.StatusOK
	} else {
		o = newStoreOrder("storefront_a", domain, shop.orders, now)
		if req.Note != nil {
			o.Note = req.Note
		}
		if req.Tags != nil {
			o.Tags = *req.Tags
		}
		shop.byID[o.ID] = len(shop.orders)
		shop.orders = append(shop.orders, o)
	}
	var ds []delivery
	body, _ := json.Marshal(o)
	eventID := uuid.NewString()
	for _, h := range shop.webhooks {
		if h.Topic != topic {
			continue
		}
		hdr := http.Header{}
		hdr.Set("Content-Type", "application/json")
		hdr.Set("X-Shopify-Topic", topic)
		hdr.Set("X-Shopify-Hmac-Sha256", signBody(secret, body))
		hdr.Set("X-Shopify-Shop-Domain", domain)
		hdr.Set("X-Shopify-API-Version", h.APIVersion)
		hdr.Set("X-Shopify-Event-Id", eventID)
		hdr.Set("X-Shopify-Triggered-At", now.Format(time.RFC3339Nano))
		ds = append(ds, delivery{url: h.Address, header: hdr, body: body,
			perTry: func(h http.Header) { h.Set("X-Shopify-Webhook-Id", uuid.NewString()) }})
	}
	s.mu.Unlock()
	deliverAsync(ds)
	writeJSON(w, status, map[string]any{"order": o, "deliveries": len(ds)})
}

// sandboxOrder is shipping_hub_a's POST {prefix}/_sandbox/orders.
func (s *hubSandbox) sandboxOrder(w http.ResponseWriter, r *http.Request) {
	var req sandboxOrderRequest
	if err := readBody(w, r, &req); err != nil || strings.TrimSpace(req.APIKey) == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", "api_key is required")
		return
	}
	s.mu.Lock()
	acct := s.account(req.APIKey)
	now := s.now().UTC()
	var ho hubOrder
	status := http.StatusCreated
	if req.ID != nil {
		i, ok := acct.byID[*req.ID]
		if !ok {
			s.mu.Unlock()
			writeError(w, http.StatusNotFound, "not_found", "the account has no such order")
			return
		}
		acct.orders[i].ModifyDate = hubTime(now)
		acct.orders[i].modified = now
		ho, status = acct.orders[i], http.StatusOK
	} else {
		o := newStoreOrder("shipping_hub_a", req.APIKey, nil, now)
		if n := len(acct.orders); n > 0 {
			o.ID = acct.orders[n-1].OrderID + 7919
			for _, ex := range acct.orders {
				o.ID = max(o.ID, ex.OrderID+7919)
			}
			o.OrderNumber = 1001 + n
			o.Name = "#" + jsonInt(int64(o.OrderNumber))
		}
		ho = acct.hubOrderOf(o)
		acct.byID[ho.OrderID] = len(acct.orders)
		acct.orders = append(acct.orders, ho)
	}
	base := "http://" + r.Host + strings.TrimSuffix(r.URL.Path, "/_sandbox/orders")
	var ds []delivery
	batch := uuid.NewString()
	for _, h := range acct.webhooks {
		if h.HookType != "ORDER_NOTIFY" && h.HookType != "ITEM_ORDER_NOTIFY" {
			continue
		}
		body, _ := json.Marshal(map[string]string{
			"resource_url":  base + "/orders?storeID=" + jsonInt(acct.storeID) + "&importBatch=" + batch,
			"resource_type": h.HookType,
		})
		hdr := http.Header{}
		hdr.Set("Content-Type", "application/json")
		ds = append(ds, delivery{url: h.URL, header: hdr, body: body})
	}
	s.mu.Unlock()
	deliverAsync(ds)
	writeJSON(w, status, map[string]any{"order": ho, "deliveries": len(ds)})
}
