package accounts

import (
	"context"
	"encoding/hex"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fos-dev/fos/store"
)

// apiKeyChannel is the NOTIFY channel on which migration 00014's trigger
// (apiKeyTrigger) announces every change of an API key that matters to
// authentication (revocation, expiry, scopes, name, deletion); the payload
// is the key hash in hex.
const (
	apiKeyChannel = "fos_api_key_changes"
	apiKeyTrigger = "api_keys_notify_change"
)

// apiKeyCacheMax bounds the cache; past it the cache starts over.
const apiKeyCacheMax = 10_000

// apiKeyCache keeps the API key rows of recent requests by key hash, so that
// authenticating a known key does not run the row lookup. A revocation (on
// any instance, or by hand in SQL) is still effective on the next request:
//
//   - migration 00014 makes every relevant change of api_keys NOTIFY
//     apiKeyChannel on commit;
//   - the pool's store.Listener LISTENs on it; a cached row is used only
//     after a round trip on that connection that began after the request
//     arrived (Listener.Fresh), by when every change committed before the
//     request has evicted its key. Concurrent requests share one such
//     round trip, which is what makes a hit cheaper than the lookup;
//   - a row read from the table is cached only if no notification arrived
//     while it was read, and only while the listener is live: a lost
//     connection empties the cache and every request reads the table until
//     the connection is back. Without the trigger (a database not migrated
//     that far) the cache never turns on.
type apiKeyCache struct {
	pool      *pgxpool.Pool
	listener  *store.Listener
	subscribe sync.Once
	sub       *store.Subscription

	mu      sync.Mutex
	live    bool // the listener listens on apiKeyChannel
	seq     uint64
	entries map[string]store.APIKey
}

// apiKeyCaches holds one cache per pool, so every router on a pool shares
// it (and the pool's listener).
var apiKeyCaches sync.Map // *pgxpool.Pool -> *apiKeyCache

func apiKeyCacheFor(pool *pgxpool.Pool) *apiKeyCache {
	if c, ok := apiKeyCaches.Load(pool); ok {
		return c.(*apiKeyCache)
	}
	c, _ := apiKeyCaches.LoadOrStore(pool, &apiKeyCache{pool: pool, listener: store.ListenerOf(pool), entries: map[string]store.APIKey{}})
	return c.(*apiKeyCache)
}

// lookup is store.APIKeyByHash, answered from the cache when it may be.
func (c *apiKeyCache) lookup(ctx context.Context, hash []byte) (store.APIKey, error) {
	h := string(hash)
	c.subscribe.Do(func() { c.sub = c.listener.Subscribe(apiKeyChannel, []string{apiKeyTrigger}, c) })
	// The first request waits for the listener (once per process), so a
	// key's first request is the only one that reads the table.
	select {
	case <-c.sub.Ready():
	case <-ctx.Done():
		return store.APIKey{}, ctx.Err()
	}
	c.mu.Lock()
	if _, hit := c.entries[h]; hit && c.live {
		c.mu.Unlock()
		fresh, err := c.listener.Fresh(ctx)
		if err != nil {
			return store.APIKey{}, err
		}
		c.mu.Lock()
		k, still := c.entries[h]
		if fresh && still && c.live {
			c.mu.Unlock()
			return k, nil
		}
	}
	seq := c.seq
	c.mu.Unlock()

	k, err := store.APIKeyByHash(ctx, c.pool, hash)
	if err == nil && k.RevokedAt == nil {
		c.mu.Lock()
		if c.live && c.seq == seq {
			if len(c.entries) >= apiKeyCacheMax {
				clear(c.entries)
			}
			c.entries[h] = k
		}
		c.mu.Unlock()
	}
	return k, err
}

// Notified drops one key (its hash in hex) or, when the payload is not a
// hash, every key.
func (c *apiKeyCache) Notified(hexHash string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	if raw, err := hex.DecodeString(hexHash); err == nil && len(raw) > 0 {
		delete(c.entries, string(raw))
		return
	}
	clear(c.entries)
}

// Live marks the listener up or down; either way the cache starts over,
// because notifications may have been missed while it was down.
func (c *apiKeyCache) Live(live bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live = live
	c.seq++
	clear(c.entries)
}
