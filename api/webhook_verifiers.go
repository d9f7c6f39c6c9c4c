package api

import (
	"sync"
	"time"

	"github.com/google/uuid"
)

// The inbound webhooks' cache of opened secrets (webhookVerifier).

// maxWebhookVerifiers bounds the cache (it is dropped whole when full).
const maxWebhookVerifiers = 10000

// webhookMissingTTL is how long an id that names no bridge is answered
// 404 without a database read (ids are random: a new bridge never has an
// id that was probed before).
const webhookMissingTTL = time.Minute

// webhookVerifiers caches webhookVerifier by bridge id, and the ids that
// named no bridge. The zero value is ready to use.
type webhookVerifiers struct {
	mu      sync.RWMutex
	m       map[uuid.UUID]webhookVerifier
	missing map[uuid.UUID]time.Time
}

func (c *webhookVerifiers) get(id uuid.UUID) (webhookVerifier, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	v, ok := c.m[id]
	return v, ok
}

func (c *webhookVerifiers) put(id uuid.UUID, v webhookVerifier) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxWebhookVerifiers {
		c.m = map[uuid.UUID]webhookVerifier{}
	}
	c.m[id] = v
}

func (c *webhookVerifiers) drop(id uuid.UUID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, id)
}

// isMissing reports whether id was found to name no bridge lately.
func (c *webhookVerifiers) isMissing(id uuid.UUID) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	at, ok := c.missing[id]
	return ok && time.Since(at) < webhookMissingTTL
}

func (c *webhookVerifiers) markMissing(id uuid.UUID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.missing == nil || len(c.missing) >= maxWebhookVerifiers {
		c.missing = map[uuid.UUID]time.Time{}
	}
	c.missing[id] = time.Now()
}

// hookVerifiers is per Server (keyed by the Server, so test routers with
// their own databases do not share entries).
var hookVerifiers sync.Map // *Server -> *webhookVerifiers

func (s *Server) webhookVerifiers() *webhookVerifiers {
	v, _ := hookVerifiers.LoadOrStore(s, &webhookVerifiers{})
	return v.(*webhookVerifiers)
}
