package payloadcodec

import (
	"crypto/subtle"
	"net/http"
	"slices"
	"strings"

	"go.temporal.io/sdk/converter"
)

// HandlerOptions decide who may use the codec endpoint.
type HandlerOptions struct {
	// AllowedOrigins are the browser origins (the Temporal UI's, e.g.
	// http://127.0.0.1:8233) answered with CORS headers; other origins get
	// none, so a page elsewhere cannot read decoded payloads.
	AllowedOrigins []string
	// Token, when set, must come as "Authorization: Bearer <token>" (the
	// Temporal CLI's --codec-auth, or a UI behind a proxy that adds it).
	Token string
}

// maxCodecBody bounds a request: the UI sends one event's payloads at a
// time, and Temporal caps a payload at 2 MiB by default.
const maxCodecBody = 16 << 20

// NewHTTPHandler serves Temporal's remote codec protocol for c: POST
// <prefix>/encode and <prefix>/decode with a JSON body {"payloads": [...]}
// answered the same way (the SDK's converter.NewPayloadCodecHTTPHandler),
// with CORS for the allowed origins (preflight included) and the bearer
// token check when a token is configured.
func NewHTTPHandler(c *Codec, o HandlerOptions) http.Handler {
	inner := converter.NewPayloadCodecHTTPHandler(c)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && slices.Contains(o.AllowedOrigins, origin) {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Content-Type, X-Namespace, Authorization")
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Set("Access-Control-Max-Age", "600")
			h.Add("Vary", "Origin")
		}
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if o.Token != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(o.Token)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="fos payload codec"`)
				http.Error(w, "codec endpoint: a valid bearer token is required", http.StatusUnauthorized)
				return
			}
		}
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST, OPTIONS")
			http.Error(w, "codec endpoint: POST only", http.StatusMethodNotAllowed)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxCodecBody)
		inner.ServeHTTP(w, r)
	})
}
