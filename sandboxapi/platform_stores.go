package sandboxapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// What the sandbox stores that speak the platforms' own APIs
// (storefront_a.go, shipping_hub_a.go) share.

// Store sizes of the API-speaking sandbox stores: StoreSize orders, or the
// N of a store identity (shop domain, API key) that starts with "bulk-N"
// ("bulk-10000.myshopify.com"), capped at MaxStoreSize, so imports of any
// size can be exercised.
const (
	StoreSize    = 300
	MaxStoreSize = 100000
	// maxStores bounds the stores one handler keeps (oldest forgotten).
	maxStores = 1000
)

// Credential values with a sandbox meaning (CONTRACT 8): FailValue refuses
// the credentials; RateLimitValue makes every other call of the store a 429
// carrying the platform's own rate-limit headers.
const RateLimitValue = "sandbox-ratelimit"

// StoreOrderCount is the number of orders the sandbox store of the given
// identity holds.
func StoreOrderCount(identity string) int {
	s := strings.ToLower(strings.TrimSpace(identity))
	if rest, ok := strings.CutPrefix(s, "bulk-"); ok {
		end := 0
		for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
			end++
		}
		if n, err := strconv.Atoi(rest[:end]); err == nil && n > 0 {
			return min(n, MaxStoreSize)
		}
	}
	return StoreSize
}

// generateOrders builds the n orders of a store, derived from a hash of
// the type and the store's identity: the same store always yields the same
// orders, and a store's first orders do not depend on n (below 1,000).
func generateOrders(bridgeType, store string, n int) []order {
	seed := storeSeed(bridgeType, store)
	base := rng{s: seed}
	baseID := int64(4_000_000_000 + base.next()%1_000_000_000)
	clock := time.Date(2025, time.November, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(base.intn(240)) * time.Hour)
	scen := scenarios()
	firstScenario := base.intn(len(scen))
	// Big stores get orders closer together, so their history stays within
	// about a year and a half.
	step, jitter := 4*time.Hour, 20*60
	if n > 1000 {
		step, jitter = time.Hour, 60
	}
	if n > 20000 {
		step, jitter = 5*time.Minute, 5
	}
	out := make([]order, 0, n)
	for i := 0; i < n; i++ {
		r := rng{s: seed ^ (uint64(i+1) * 0xd1b54a32d192ed03)}
		clock = clock.Add(step + time.Duration(r.intn(jitter))*time.Minute)
		out = append(out, buildOrder(&r, i, baseID, clock, scen[(firstScenario+i)%len(scen)]))
	}
	return out
}

// storeTable keeps lazily built stores by key, forgetting the oldest past
// maxStores. Callers hold their own lock.
type storeTable[S any] struct {
	stores map[string]*S
	order  []string
}

func (t *storeTable[S]) get(key string, build func() *S) *S {
	if t.stores == nil {
		t.stores = map[string]*S{}
	}
	if s, ok := t.stores[key]; ok {
		return s
	}
	s := build()
	t.stores[key] = s
	t.order = append(t.order, key)
	if len(t.order) > maxStores {
		delete(t.stores, t.order[0])
		t.order = t.order[1:]
	}
	return s
}

// readBody decodes a JSON request body (at most 1 MiB) into v.
func readBody(w http.ResponseWriter, r *http.Request, v any) error {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}

// pageParams reads the 1-based page and the page size (the sizeKey
// parameter, 1-maxSize, default def).
func pageParams(q url.Values, sizeKey string, def, maxSize int) (page, size int, ok bool) {
	page, size = 1, def
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, 0, false
		}
		page = n
	}
	if v := q.Get(sizeKey); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxSize {
			return 0, 0, false
		}
		size = n
	}
	return page, size, true
}

// paginate returns the 1-based page of items and the page count.
func paginate[T any](items []T, page, size int) ([]T, int) {
	pages := (len(items) + size - 1) / size
	start := (page - 1) * size
	if start >= len(items) {
		return []T{}, pages
	}
	return items[start:min(start+size, len(items))], pages
}
