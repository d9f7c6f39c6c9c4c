// Package sandboxapi is the built-in sandbox that imitates the external
// platforms (and, later, carriers) over HTTP, so the whole service works
// offline and in tests (CONTRACT section 8). Everything it answers is
// deterministic.
//
// # Platforms
//
// Platforms are served under /platforms/{type}, where {type} is a bridge type
// (storefront_a, shipping_hub_a, storefront_b, storefront_c, marketplace_a):
//
//	GET /platforms/{type}/stores/{store}/orders?since=&cursor=&limit=
//	GET /platforms/{type}/stores/{store}/orders/{orderId}
//
// {store} is the bridge's store key, path-escaped: shopDomain (storefront_a),
// storeUrl (storefront_b), storeHash (storefront_c), sellerId
// (marketplace_a); for shipping_hub_a, whose account is its API key, the
// connector sends a digest of the key instead of the key itself. Store keys
// are compared case-insensitively, without an http(s):// scheme or a
// trailing slash.
//
// Every store holds a fixed catalog of CatalogSize orders derived from a
// hash of the type and the store key: order ids, numbers (#1001...),
// customers, addresses, line items, totals that add up, and a spread of
// payment/fulfillment states (pending, authorized, paid, partially fulfilled,
// shipped, delivered, cancelled, refunded, partially paid). The same store
// always yields the same orders; order payloads follow the storefront_a
// REST order shape (id, name, order_number, email, customer, line_items,
// shipping_address, total_price as strings, financial_status,
// fulfillment_status, fulfillments, ...) for every type.
//
// The list is ordered by updated_at, then id. since (RFC 3339) keeps orders
// with updated_at at or after it; limit is 1-250 (default 50); the answer is
// {"orders": [...], "next_cursor": "..." | null}, and next_cursor (also in a
// Link rel="next" header) is passed back as cursor; a cursor carries the
// since filter of the first page. One order is {"order": {...}}.
//
// # Credentials
//
// Each type expects its credentials as the real platform does:
//
//	storefront_a    X-Access-Token: <accessToken>
//	storefront_c    X-Auth-Token: <accessToken>
//	storefront_b    Authorization: Basic <consumerKey:consumerSecret>
//	shipping_hub_a  Authorization: Basic <apiKey:apiSecret>
//	marketplace_a   Authorization: Basic <clientId:clientSecret> and X-Refresh-Token: <refreshToken>
//
// The other config values of the bridge may be sent in the X-Sandbox-Config
// header, URL-query encoded (key=value&...).
//
// # Errors and the sandbox-fail rule
//
// Errors are JSON bodies {"errors": "<message>", "code": "<code>"}.
//
//   - A missing credential is 401 unauthorized.
//   - A credential equal to "sandbox-fail" is 401 unauthorized (the platform
//     refuses the credentials; not worth retrying).
//   - A store key or any X-Sandbox-Config value equal to "sandbox-fail" is
//     503 service_unavailable (the platform is down; worth retrying).
//   - An order id outside the store's catalog is 404 not_found; an unknown
//     type or route is 404 too; a wrong method 405.
//   - A malformed since, cursor or limit is 400 invalid_request.
//
// # The platforms' own APIs
//
// Besides the invented protocol of the sections above, three platforms are
// served in their real wire formats at the prefixes CONTRACT 8b's variables
// default to under FOS_SANDBOX=1, so the production connectors
// (platforms.NewStorefrontA, NewShippingHubA, NewStorefrontC) run unchanged
// against them:
//
//	/platforms/storefront_a/admin/api/{version}/...   REST Admin API (storefront_a.go)
//	/platforms/shipping_hub_a/{orders,shipments,...}  the hub's V1 API (shipping_hub_a.go)
//	/platforms/storefront_c/stores/{hash}/v2|v3/...   V2/V3 Management API (storefront_c.go)
//
// Their stores hold StoreOrderCount orders each (StoreSize, or N for an
// identity starting "bulk-N"), record fulfillments and webhooks, answer
// "sandbox-fail" credentials in the platform's own error format and
// "sandbox-ratelimit" with every other call a 429 carrying the platform's
// rate-limit headers.
package sandboxapi

import (
	"encoding/json"
	"net/http"

	"github.com/go-chi/chi/v5"
)

// FailValue is the credential or config value that makes every sandbox call
// of that account or bridge fail.
const FailValue = "sandbox-fail"

// NewHandler returns the sandbox HTTP handler (platforms under /platforms).
func NewHandler() http.Handler {
	r := chi.NewRouter()
	r.NotFound(func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "Not Found")
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "Method Not Allowed")
	})
	r.Mount("/platforms", platformsRouter())
	// The platforms' own APIs, at CONTRACT 8b's sandbox prefixes.
	mountStorefrontA(r, "/platforms/storefront_a")
	mountShippingHubA(r, "/platforms/shipping_hub_a")
	mountStorefrontC(r, "/platforms/storefront_c")
	mountStorefrontB(r, "/platforms/storefront_b")
	mountMarketplaceA(r, "/platforms/marketplace_a", "/platforms/marketplace_a/lwa")
	r.Mount("/carriers", carrierRoutes())
	return r
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

type errorBody struct {
	Errors string `json:"errors"`
	Code   string `json:"code"`
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, errorBody{Errors: message, Code: code})
}
