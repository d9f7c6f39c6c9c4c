package api

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/auth"
	"github.com/fos-dev/fos/store/storetest"
)

// A cached API key stops working on the very next request after it is
// revoked, whether through this instance's API or by another instance (a
// plain UPDATE of the row), while other requests keep the cache busy.
func TestAPIKeyCacheRevocationIsImmediate(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	cache := apiKeyCacheFor(e.deps.Store.Pool)

	// Background load on another key keeps shared round trips in flight.
	busy := e.apiKey(owner, "orders:read")
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var loadFailures atomic.Int64
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if e.do(busy, "GET", "/api/v1/organizations", nil).Code != 200 {
					loadFailures.Add(1)
				}
			}
		}()
	}
	defer func() { stop(); wg.Wait(); require.Zero(t, loadFailures.Load()) }()

	cached := func(c caller) bool {
		cache.mu.Lock()
		defer cache.mu.Unlock()
		_, ok := cache.entries[string(auth.HashAPIKey(c.token))]
		return ok
	}
	for i := range 30 {
		res := e.do(owner.caller, "POST", "/api/v1/api-keys", map[string]any{"name": "k", "scopes": []string{"orders:read"}})
		require.Equal(t, 201, res.Code, "%s", res.Raw)
		k := caller{token: res.data()["key"].(string)}
		id := res.data()["id"].(string)
		// Once the listener is up, the first request caches the key and the
		// next ones are answered from the cache.
		require.Eventually(t, func() bool {
			return e.do(k, "GET", "/api/v1/organizations", nil).Code == 200 && cached(k)
		}, 5*time.Second, 5*time.Millisecond, "the key is cached")
		require.Equal(t, 200, e.do(k, "GET", "/api/v1/organizations", nil).Code)
		switch i % 3 {
		case 0: // through the API
			require.Equal(t, 200, e.do(owner.caller, "DELETE", "/api/v1/api-keys/"+id, nil).Code)
		case 1: // by another instance
			_, err := e.deps.Store.Pool.Exec(t.Context(), `UPDATE api_keys SET revoked_at = now() WHERE id = $1`, id)
			require.NoError(t, err)
		case 2: // a narrower scope elsewhere
			_, err := e.deps.Store.Pool.Exec(t.Context(), `UPDATE api_keys SET scopes = '{orders:write}' WHERE id = $1`, id)
			require.NoError(t, err)
			requireError(t, e.do(k, "GET", "/api/v1/orders", nil), 403, "insufficient_scope")
			continue
		}
		requireError(t, e.do(k, "GET", "/api/v1/organizations", nil), 401, "unauthorized")
		require.False(t, cached(k))
	}
}

// Recording last use does not evict the key (the trigger ignores it).
func TestAPIKeyCacheKeepsKeyOnUse(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	k := e.apiKey(owner, "orders:read")
	cache := apiKeyCacheFor(e.deps.Store.Pool)
	state := func() (bool, uint64) {
		cache.mu.Lock()
		defer cache.mu.Unlock()
		_, ok := cache.entries[string(auth.HashAPIKey(k.token))]
		return ok, cache.seq
	}
	require.Eventually(t, func() bool {
		ok, _ := state()
		return e.do(k, "GET", "/api/v1/orders", nil).Code == 200 && ok
	}, 5*time.Second, 5*time.Millisecond)
	_, seq := state()
	_, err := e.deps.Store.Pool.Exec(t.Context(), `UPDATE api_keys SET last_used_at = now() WHERE key_hash = $1`, auth.HashAPIKey(k.token))
	require.NoError(t, err)
	// This request's round trip would have brought a notification.
	require.Equal(t, 200, e.do(k, "GET", "/api/v1/orders", nil).Code)
	ok, seqAfter := state()
	require.True(t, ok)
	require.Equal(t, seq, seqAfter, "no eviction")
}

// Without the trigger that announces key changes, the cache stays off and
// every request reads the table.
func TestAPIKeyCacheOffWithoutTrigger(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	k := e.apiKey(owner, "orders:read")
	ctx := context.Background()
	pool := e.deps.Store.Pool
	_, err := pool.Exec(ctx, `ALTER TABLE api_keys DISABLE TRIGGER api_keys_notify_change`)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := pool.Exec(ctx, `ALTER TABLE api_keys ENABLE TRIGGER api_keys_notify_change`)
		require.NoError(t, err)
	})
	other, err := pgxpool.New(ctx, storetest.URL()) // a cache of its own
	require.NoError(t, err)
	defer other.Close()
	c := apiKeyCacheFor(other)
	for range 2 {
		got, err := c.lookup(ctx, auth.HashAPIKey(k.token))
		require.NoError(t, err)
		require.Equal(t, []string{"orders:read"}, got.Scopes)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	require.False(t, c.live)
	require.Empty(t, c.entries)
}
