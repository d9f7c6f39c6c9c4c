package sandboxapi

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
)

// Credential headers the sandbox platforms read.
const (
	HeaderAccessToken  = "X-Access-Token"
	HeaderAuthToken    = "X-Auth-Token"
	HeaderRefreshToken = "X-Refresh-Token"
	HeaderConfig       = "X-Sandbox-Config"
)

// List paging limits.
const (
	DefaultLimit = 50
	MaxLimit     = 250
)

// platformTypes are the bridge types the sandbox imitates.
func platformTypes() []string {
	return []string{"storefront_a", "shipping_hub_a", "storefront_b", "storefront_c", "marketplace_a"}
}

func knownType(t string) bool {
	for _, k := range platformTypes() {
		if k == t {
			return true
		}
	}
	return false
}

func platformsRouter() http.Handler {
	r := chi.NewRouter()
	r.NotFound(func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "Not Found")
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "Method Not Allowed")
	})
	r.Route("/{type}/stores/{store}", func(r chi.Router) {
		r.Use(authenticate)
		r.Get("/orders", listOrders)
		r.Get("/orders/{orderId}", getOrder)
	})
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

// credentials returns the credential values a request carries for the type
// and whether all of them are present.
func credentials(r *http.Request, typ string) ([]string, bool) {
	basic := func() []string {
		u, p, ok := r.BasicAuth()
		if !ok {
			return nil
		}
		return []string{u, p}
	}
	var vals []string
	switch typ {
	case "storefront_a":
		vals = []string{r.Header.Get(HeaderAccessToken)}
	case "storefront_c":
		vals = []string{r.Header.Get(HeaderAuthToken)}
	case "storefront_b", "shipping_hub_a":
		vals = basic()
	case "marketplace_a":
		b := basic()
		if b == nil {
			return nil, false
		}
		vals = append(b, r.Header.Get(HeaderRefreshToken))
	}
	if len(vals) == 0 {
		return nil, false
	}
	for _, v := range vals {
		if strings.TrimSpace(v) == "" {
			return vals, false
		}
	}
	return vals, true
}

// authenticate applies the credential and sandbox-fail rules of the
// package comment.
func authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		typ := chi.URLParam(r, "type")
		if !knownType(typ) {
			writeError(w, http.StatusNotFound, "not_found", "Not Found")
			return
		}
		creds, ok := credentials(r, typ)
		if !ok {
			writeError(w, http.StatusUnauthorized, "unauthorized",
				"[API] Invalid API key or access token (unrecognized login or wrong password)")
			return
		}
		for _, c := range creds {
			if c == FailValue {
				writeError(w, http.StatusUnauthorized, "unauthorized",
					"[API] Invalid API key or access token (unrecognized login or wrong password)")
				return
			}
		}
		fail := pathParam(r, "store") == FailValue
		if raw := r.Header.Get(HeaderConfig); raw != "" && !fail {
			cfg, err := url.ParseQuery(raw)
			if err != nil {
				writeError(w, http.StatusBadRequest, "invalid_request", "malformed "+HeaderConfig+" header")
				return
			}
			for _, vs := range cfg {
				for _, v := range vs {
					if v == FailValue {
						fail = true
					}
				}
			}
		}
		if fail {
			writeError(w, http.StatusServiceUnavailable, "service_unavailable",
				"Service Unavailable: the platform cannot serve this store right now")
			return
		}
		next.ServeHTTP(w, r)
	})
}

type listResponse struct {
	Orders     []order `json:"orders"`
	NextCursor *string `json:"next_cursor"`
}

type orderResponse struct {
	Order order `json:"order"`
}

func listOrders(w http.ResponseWriter, r *http.Request) {
	typ, store := chi.URLParam(r, "type"), pathParam(r, "store")
	q := r.URL.Query()

	limit := DefaultLimit
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "invalid_request", "limit must be a positive integer")
			return
		}
		limit = min(n, MaxLimit)
	}

	var since time.Time
	offset := 0
	if c := q.Get("cursor"); c != "" {
		var err error
		offset, since, err = decodeCursor(c)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request", "cursor is invalid")
			return
		}
	} else if s := q.Get("since"); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request", "since must be an RFC 3339 timestamp")
			return
		}
		since = t
	}

	all := storeOrders(typ, store)
	sort.SliceStable(all, func(i, j int) bool {
		if !all[i].updated.Equal(all[j].updated) {
			return all[i].updated.Before(all[j].updated)
		}
		return all[i].ID < all[j].ID
	})
	matched := make([]order, 0, len(all))
	for _, o := range all {
		if since.IsZero() || !o.updated.Before(since) {
			matched = append(matched, o)
		}
	}

	resp := listResponse{Orders: []order{}}
	if offset < len(matched) {
		end := min(offset+limit, len(matched))
		resp.Orders = matched[offset:end]
		if end < len(matched) {
			next := encodeCursor(end, since)
			resp.NextCursor = &next
			u := *r.URL
			u.RawQuery = url.Values{"cursor": {next}, "limit": {strconv.Itoa(limit)}}.Encode()
			w.Header().Set("Link", fmt.Sprintf("<%s>; rel=\"next\"", u.RequestURI()))
		}
	}
	writeJSON(w, http.StatusOK, resp)
}

func getOrder(w http.ResponseWriter, r *http.Request) {
	typ, store, id := chi.URLParam(r, "type"), pathParam(r, "store"), pathParam(r, "orderId")
	for _, o := range storeOrders(typ, store) {
		if strconv.FormatInt(o.ID, 10) == id {
			writeJSON(w, http.StatusOK, orderResponse{Order: o})
			return
		}
	}
	writeError(w, http.StatusNotFound, "not_found", "Not Found")
}

// A cursor is base64url("<offset>:<since unix nanos or 0>").
func encodeCursor(offset int, since time.Time) string {
	var ns int64
	if !since.IsZero() {
		ns = since.UnixNano()
	}
	return base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("%d:%d", offset, ns)))
}

func decodeCursor(c string) (int, time.Time, error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, time.Time{}, err
	}
	a, b, ok := strings.Cut(string(raw), ":")
	if !ok {
		return 0, time.Time{}, fmt.Errorf("malformed cursor")
	}
	off, err := strconv.Atoi(a)
	if err != nil || off < 0 {
		return 0, time.Time{}, fmt.Errorf("malformed cursor offset")
	}
	ns, err := strconv.ParseInt(b, 10, 64)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("malformed cursor since")
	}
	var since time.Time
	if ns != 0 {
		since = time.Unix(0, ns).UTC()
	}
	return off, since, nil
}
