package accounts

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

// A cached API key stops working on the very next authentication after it
// is revoked, whether through the Service or by another instance (a plain
// UPDATE of the row), while other requests keep the cache busy.
func TestAPIKeyCacheRevocationIsImmediate(t *testing.T) {
	e := newEnv(t)
	owner := e.owner(t)
	cache := apiKeyCacheFor(e.store.Pool)

	// Background load on another key keeps shared round trips in flight.
	_, busy := e.apiKey(t, owner, "orders:read")
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var loadFailures atomic.Int64
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if _, err := e.svc.AuthenticateAPIKey(ctx, busy); err != nil && ctx.Err() == nil {
					loadFailures.Add(1)
				}
			}
		}()
	}
	defer func() { stop(); wg.Wait(); require.Zero(t, loadFailures.Load()) }()

	cached := func(secret string) bool {
		cache.mu.Lock()
		defer cache.mu.Unlock()
		_, ok := cache.entries[string(auth.HashAPIKey(secret))]
		return ok
	}
	for i := range 30 {
		key, secret := e.apiKey(t, owner, "orders:read")
		// Once the listener is up, the first authentication caches the key
		// and the next ones are answered from the cache.
		require.Eventually(t, func() bool {
			_, err := e.svc.AuthenticateAPIKey(t.Context(), secret)
			return err == nil && cached(secret)
		}, 5*time.Second, 5*time.Millisecond, "the key is cached")
		_, err := e.svc.AuthenticateAPIKey(t.Context(), secret)
		require.NoError(t, err)
		switch i % 3 {
		case 0: // through the Service
			require.NoError(t, e.svc.RevokeAPIKey(t.Context(), owner, key.ID))
		case 1: // by another instance
			_, err := e.store.Pool.Exec(t.Context(), `UPDATE api_keys SET revoked_at = now() WHERE id = $1`, key.ID)
			require.NoError(t, err)
		case 2: // a narrower scope elsewhere
			_, err := e.store.Pool.Exec(t.Context(), `UPDATE api_keys SET scopes = '{orders:write}' WHERE id = $1`, key.ID)
			require.NoError(t, err)
			k, err := e.svc.AuthenticateAPIKey(t.Context(), secret)
			require.NoError(t, err)
			require.Equal(t, []string{"orders:write"}, k.Scopes)
			continue
		}
		_, err = e.svc.AuthenticateAPIKey(t.Context(), secret)
		require.Error(t, err)
		require.False(t, cached(secret))
	}
}

// Recording last use does not evict the key (the trigger ignores it).
func TestAPIKeyCacheKeepsKeyOnUse(t *testing.T) {
	e := newEnv(t)
	owner := e.owner(t)
	_, secret := e.apiKey(t, owner, "orders:read")
	cache := apiKeyCacheFor(e.store.Pool)
	state := func() (bool, uint64) {
		cache.mu.Lock()
		defer cache.mu.Unlock()
		_, ok := cache.entries[string(auth.HashAPIKey(secret))]
		return ok, cache.seq
	}
	require.Eventually(t, func() bool {
		_, err := e.svc.AuthenticateAPIKey(t.Context(), secret)
		ok, _ := state()
		return err == nil && ok
	}, 5*time.Second, 5*time.Millisecond)
	_, seq := state()
	_, err := e.store.Pool.Exec(t.Context(), `UPDATE api_keys SET last_used_at = now() WHERE key_hash = $1`, auth.HashAPIKey(secret))
	require.NoError(t, err)
	// This authentication's round trip would have brought a notification.
	_, err = e.svc.AuthenticateAPIKey(t.Context(), secret)
	require.NoError(t, err)
	ok, seqAfter := state()
	require.True(t, ok)
	require.Equal(t, seq, seqAfter, "no eviction")
}

// Without the trigger that announces key changes, the cache stays off and
// every lookup reads the table.
func TestAPIKeyCacheOffWithoutTrigger(t *testing.T) {
	e := newEnv(t)
	owner := e.owner(t)
	_, secret := e.apiKey(t, owner, "orders:read")
	ctx := context.Background()
	pool := e.store.Pool
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
		got, err := c.lookup(ctx, auth.HashAPIKey(secret))
		require.NoError(t, err)
		require.Equal(t, []string{"orders:read"}, got.Scopes)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	require.False(t, c.live)
	require.Empty(t, c.entries)
}
