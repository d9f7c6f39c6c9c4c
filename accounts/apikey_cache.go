package accounts

import (
	"context"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fos-dev/fos/store"
)

// apiKeyChannel is the NOTIFY channel on which migration 00014's trigger
// announces every change of an API key that matters to authentication
// (revocation, expiry, scopes, name, deletion); the payload is the key hash
// in hex.
const apiKeyChannel = "fos_api_key_changes"

const (
	// apiKeyCacheMax bounds the cache; past it the cache starts over.
	apiKeyCacheMax = 10_000
	// apiKeySyncTimeout bounds one round trip of the listener connection;
	// past it the cache is not trusted until the connection is back.
	apiKeySyncTimeout = 2 * time.Second
	// apiKeyDrainEvery reads pending notifications while no request asks.
	apiKeyDrainEvery = 5 * time.Second
)

// apiKeyCache keeps the API key rows of recent requests by key hash, so that
// authenticating a known key does not run the row lookup. A revocation (on
// any instance, or by hand in SQL) is still effective on the next request:
//
//   - migration 00014 makes every relevant change of api_keys NOTIFY
//     apiKeyChannel on commit;
//   - one connection per pool LISTENs on it; a cached row is used only after
//     a round trip on that connection that began after the request arrived.
//     PostgreSQL sends a listening session the notifications committed before
//     a command ahead of that command's answer, so by then every change
//     committed before the request has evicted its key. Concurrent requests
//     share one such round trip (an empty query), which is what makes a hit
//     cheaper than the lookup;
//   - a row read from the table is cached only if no notification arrived
//     while it was read, and only while the listener is connected: a lost
//     connection empties the cache and every request reads the table until
//     the connection is back. Without the trigger (a database not migrated
//     that far) the cache never turns on.
type apiKeyCache struct {
	pool *pgxpool.Pool

	mu      sync.Mutex
	started bool
	ready   chan struct{} // closed once the first connection attempt is over
	live    bool          // the listener is connected and listening
	seq     uint64
	entries map[string]store.APIKey
	next    *apiKeySync // the round trip the next hit waits for (not yet begun)
	wake    chan struct{}
}

// apiKeySync is one shared round trip of the listener connection.
type apiKeySync struct {
	done chan struct{}
	ok   bool
}

// apiKeyCaches holds one cache (and one listener connection) per pool, so
// every router on a pool shares them.
var apiKeyCaches sync.Map // *pgxpool.Pool -> *apiKeyCache

func apiKeyCacheFor(pool *pgxpool.Pool) *apiKeyCache {
	if c, ok := apiKeyCaches.Load(pool); ok {
		return c.(*apiKeyCache)
	}
	c, _ := apiKeyCaches.LoadOrStore(pool, &apiKeyCache{
		pool: pool, entries: map[string]store.APIKey{}, wake: make(chan struct{}, 1), ready: make(chan struct{}),
	})
	return c.(*apiKeyCache)
}

// lookup is store.APIKeyByHash, answered from the cache when it may be.
func (c *apiKeyCache) lookup(ctx context.Context, hash []byte) (store.APIKey, error) {
	h := string(hash)
	c.mu.Lock()
	if !c.started {
		c.started = true
		go c.listen()
	}
	c.mu.Unlock()
	// The first request waits for the listener (once per process), so a
	// key's first request is the only one that reads the table.
	select {
	case <-c.ready:
	case <-ctx.Done():
		return store.APIKey{}, ctx.Err()
	}
	c.mu.Lock()
	if _, hit := c.entries[h]; hit && c.live {
		round := c.next
		if round == nil {
			round = &apiKeySync{done: make(chan struct{})}
			c.next = round
			select {
			case c.wake <- struct{}{}:
			default:
			}
		}
		c.mu.Unlock()
		select {
		case <-round.done:
		case <-ctx.Done():
			return store.APIKey{}, ctx.Err()
		}
		c.mu.Lock()
		k, still := c.entries[h]
		if round.ok && still {
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

// evict drops one key (its hash in hex) or, when the payload is not a
// hash, every key.
func (c *apiKeyCache) evict(hexHash string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	if raw, err := hex.DecodeString(hexHash); err == nil && len(raw) > 0 {
		delete(c.entries, string(raw))
		return
	}
	clear(c.entries)
}

// setLive marks the listener up or down; either way the cache starts over,
// because notifications may have been missed while it was down. Going down
// fails the round trip waiting to begin.
func (c *apiKeyCache) setLive(live bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live = live
	c.seq++
	clear(c.entries)
	if !live && c.next != nil {
		close(c.next.done)
		c.next = nil
	}
}

// listen keeps the listener connection and runs the shared round trips.
func (c *apiKeyCache) listen() {
	backoff := 100 * time.Millisecond
	first := true
	for {
		conn, err := c.connect()
		if err == nil {
			c.setLive(true)
		}
		if first {
			first = false
			close(c.ready)
		}
		if err != nil {
			time.Sleep(backoff)
			backoff = min(2*backoff, 30*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		c.serve(conn)
		c.setLive(false)
		ctx, cancel := context.WithTimeout(context.Background(), apiKeySyncTimeout)
		_ = conn.Close(ctx)
		cancel()
	}
}

func (c *apiKeyCache) connect() (*pgx.Conn, error) {
	cfg := c.pool.Config().ConnConfig.Copy()
	cfg.Tracer = nil // its round trips are not the requests' statements
	cfg.OnNotification = func(_ *pgconn.PgConn, n *pgconn.Notification) {
		if n.Channel == apiKeyChannel {
			c.evict(n.Payload)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+apiKeyChannel); err != nil {
		_ = conn.Close(ctx)
		return nil, err
	}
	// Without the trigger nothing is announced: the cache stays off.
	var announced bool
	err = conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'api_keys_notify_change' AND tgenabled <> 'D')`).Scan(&announced)
	if err == nil && !announced {
		err = errors.New("api_keys_notify_change trigger missing (migration 00014)")
	}
	if err != nil {
		_ = conn.Close(ctx)
		return nil, err
	}
	return conn, nil
}

// serve runs a round trip whenever a request waits for one (and every few
// seconds, to read notifications while idle) until the connection fails.
func (c *apiKeyCache) serve(conn *pgx.Conn) {
	idle := time.NewTicker(apiKeyDrainEvery)
	defer idle.Stop()
	for {
		select {
		case <-c.wake:
		case <-idle.C:
		}
		c.mu.Lock()
		round := c.next
		c.next = nil
		c.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), apiKeySyncTimeout)
		// An empty query: the answer comes after every notification committed
		// before it was sent (OnNotification runs while it is read).
		err := conn.PgConn().Exec(ctx, "").Close()
		cancel()
		if round != nil {
			round.ok = err == nil
			close(round.done)
		}
		if err != nil {
			return
		}
	}
}
