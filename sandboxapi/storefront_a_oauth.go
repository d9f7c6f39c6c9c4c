package sandboxapi

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
)

// storefront_a OAuth (authorization code grant, as the platform runs it):
//
//	GET  {prefix}/admin/oauth/authorize     client_id, scope, redirect_uri, state
//	                                        (+ shop when the host does not name it)
//	POST {prefix}/admin/oauth/access_token  client_id, client_secret, code (JSON or form)
//
// The authorize page approves at once: it redirects to redirect_uri with
// code, hmac, host, shop, state and timestamp, hmac being the hex
// HMAC-SHA256, with the app's client secret, of the other parameters
// sorted and joined as k=v&k=v (the platform's rule). The sandbox knows
// every app: an app's client secret is StorefrontAClientSecret(client_id),
// except client_id "sandbox-fail", which is unknown. Codes are single use,
// bound to the app and the shop, and expire after a minute; the token
// endpoint refuses a wrong secret (400 invalid_client), an unknown, used,
// expired or foreign code (400 invalid_request, "The authorization code
// was not found or was already used") and answers
// {"access_token": "shpca_<32 hex>", "scope": "<the granted scopes>"}.

// StorefrontAClientSecret is the sandbox's client secret of an app.
func StorefrontAClientSecret(clientID string) string {
	m := hmac.New(sha256.New, []byte("fos-sandbox/storefront_a/app"))
	m.Write([]byte(clientID))
	return "shpss_" + hex.EncodeToString(m.Sum(nil))[:32]
}

// SandboxStorefrontAClientID is the app the service uses under FOS_SANDBOX=1
// unless FOS_STOREFRONT_A_CLIENT_ID is set.
const SandboxStorefrontAClientID = "fos-sandbox-app"

var sfaShopHostRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*\.myshopify\.com$`)

type sfaCode struct {
	clientID, shop, scope string
	expires               time.Time
	used                  bool
}

type sfaOAuth struct {
	mu    sync.Mutex
	codes map[string]*sfaCode
	now   func() time.Time
}

func mountStorefrontAOAuth(api chi.Router) {
	o := &sfaOAuth{codes: map[string]*sfaCode{}, now: time.Now}
	api.Get("/oauth/authorize", o.authorize)
	api.Post("/oauth/access_token", o.accessToken)
}

func sfaOAuthPage(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte("<!doctype html><title>Oauth error</title><h1>Oauth error invalid_request: " + html.EscapeString(msg) + "</h1>"))
}

// QuerySignature is the platform's hmac of a redirect query.
func QuerySignature(secret string, q url.Values) string {
	keys := make([]string, 0, len(q))
	for k := range q {
		if k != "hmac" && k != "signature" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strings.Join(q[k], ",")
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(strings.Join(parts, "&")))
	return hex.EncodeToString(m.Sum(nil))
}

func (o *sfaOAuth) shopOf(r *http.Request) string {
	shop := strings.ToLower(strings.TrimSpace(r.URL.Query().Get("shop")))
	if shop == "" {
		shop = strings.ToLower(strings.TrimSpace(r.Header.Get(sfaShopHeader)))
	}
	if shop == "" {
		shop = strings.ToLower(r.Host)
	}
	return shop
}

func (o *sfaOAuth) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	clientID, scope, redirect, state := q.Get("client_id"), q.Get("scope"), q.Get("redirect_uri"), q.Get("state")
	shop := o.shopOf(r)
	switch {
	case clientID == "" || clientID == FailValue:
		sfaOAuthPage(w, http.StatusBadRequest, "The client_id is missing or invalid")
		return
	case !sfaShopHostRE.MatchString(shop):
		sfaOAuthPage(w, http.StatusNotFound, "There is no store at this address")
		return
	case scope == "":
		sfaOAuthPage(w, http.StatusBadRequest, "The scope is missing")
		return
	}
	ru, err := url.Parse(redirect)
	if redirect == "" || err != nil || (ru.Scheme != "https" && ru.Scheme != "http") || ru.Host == "" {
		sfaOAuthPage(w, http.StatusBadRequest, "The redirect_uri is missing or not whitelisted")
		return
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	code := hex.EncodeToString(b)
	o.mu.Lock()
	o.codes[code] = &sfaCode{clientID: clientID, shop: shop, scope: scope, expires: o.now().Add(time.Minute)}
	o.mu.Unlock()
	back := url.Values{}
	back.Set("code", code)
	back.Set("host", base64.RawURLEncoding.EncodeToString([]byte("admin.shopify.com/store/"+strings.TrimSuffix(shop, ".myshopify.com"))))
	back.Set("shop", shop)
	back.Set("state", state)
	back.Set("timestamp", strconv.FormatInt(o.now().Unix(), 10))
	back.Set("hmac", QuerySignature(StorefrontAClientSecret(clientID), back))
	ru.RawQuery = back.Encode()
	http.Redirect(w, r, ru.String(), http.StatusFound)
}

func (o *sfaOAuth) accessToken(w http.ResponseWriter, r *http.Request) {
	var in struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		Code         string `json:"code"`
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&in); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_request", "error_description": "The request body is not valid JSON"})
			return
		}
	} else {
		_ = r.ParseForm()
		in.ClientID, in.ClientSecret, in.Code = r.Form.Get("client_id"), r.Form.Get("client_secret"), r.Form.Get("code")
	}
	if in.ClientID == "" || in.ClientID == FailValue || !hmac.Equal([]byte(in.ClientSecret), []byte(StorefrontAClientSecret(in.ClientID))) {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_client", "error_description": "Client credentials are invalid"})
		return
	}
	shop := o.shopOf(r)
	o.mu.Lock()
	c, ok := o.codes[in.Code]
	valid := ok && !c.used && c.clientID == in.ClientID && c.shop == shop && o.now().Before(c.expires)
	if ok {
		c.used = true // a code is spent by any attempt
	}
	o.mu.Unlock()
	if !valid {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_request", "error_description": "The authorization code was not found or was already used"})
		return
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	writeJSON(w, http.StatusOK, map[string]any{"access_token": "shpca_" + hex.EncodeToString(b), "scope": c.scope})
}
