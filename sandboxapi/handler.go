// Package sandboxapi is the built-in sandbox that imitates the external
// platforms (and, later, carriers) over HTTP, so the whole service works
// offline and in tests (CONTRACT section 8). Everything it answers is
// deterministic.
//
// # Platforms
//
// Each bridge type's platform is served in its own wire format at the prefix
// CONTRACT 8b's variables default to under FOS_SANDBOX=1, so the production
// connectors (package platforms) run unchanged against it:
//
//	/platforms/storefront_a/admin/api/{version}/...    REST Admin API; the shop is the X-Shopify-Shop-Domain header (storefront_a.go)
//	/platforms/shipping_hub_a/{orders,shipments,...}   the hub's V1 API; the account is the Basic API key (shipping_hub_a.go)
//	/platforms/storefront_b/{host}{path}/wp-json/wc/v3/...  REST v3; the store is its storeUrl's host and path (storefront_b.go)
//	/platforms/storefront_c/stores/{hash}/v2|v3/...    V2/V3 Management API (storefront_c.go)
//	/platforms/marketplace_a/{orders,supplySources}/... selling-partner API; the seller is the refresh token,
//	/platforms/marketplace_a/lwa/auth/o2/token          exchanged at the token host (marketplace_a.go)
//
// Every store holds StoreOrderCount orders (StoreSize, or N for an identity
// starting "bulk-N"), derived deterministically from the type and the
// store's identity: several line items, addresses, a spread of payment and
// fulfillment states. The stores page as their platforms do, record
// fulfillments and webhooks, answer "sandbox-fail" credentials in the
// platform's own error format and "sandbox-ratelimit" with every other call
// a 429 carrying the platform's rate-limit headers.
package sandboxapi

import (
	"encoding/json"
	"net/http"
	"net/url"

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
	// The platforms' own APIs, at CONTRACT 8b's sandbox prefixes.
	mountStorefrontA(r, "/platforms/storefront_a")
	mountShippingHubA(r, "/platforms/shipping_hub_a")
	mountStorefrontC(r, "/platforms/storefront_c")
	mountStorefrontB(r, "/platforms/storefront_b")
	mountMarketplaceA(r, "/platforms/marketplace_a", "/platforms/marketplace_a/lwa")
	r.Mount("/carriers", carrierRoutes())
	return r
}

// pathParam returns a URL parameter, unescaped when chi routed on the raw
// (escaped) path.
func pathParam(r *http.Request, name string) string {
	v := chi.URLParam(r, name)
	if r.URL.RawPath != "" {
		if u, err := url.PathUnescape(v); err == nil {
			return u
		}
	}
	return v
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
