package rules

import (
	"context"
	"fmt"
	"sync"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/rules/cond"
	"github.com/fos-dev/fos/store"
)

// SetCache keeps loaded condition sets in memory between evaluations, keyed
// by the set's values_version: each Load asks PostgreSQL only for the
// versions (one small query) and re-reads the values of a set only when it
// changed, so a rule on a 100,000-value set costs a map lookup per order,
// not a transfer of the set. The zero value is ready; safe for concurrent
// use. (Not an oncemap.Map: entries are replaced by version and evicted.)
type SetCache struct {
	mu      sync.Mutex
	entries map[uuid.UUID]setEntry
	values  int // cached values, bounded by MaxValues
	// MaxValues bounds what the cache holds (default 5,000,000 values);
	// past it the cache is emptied before adding.
	MaxValues int
}

type setEntry struct {
	org     uuid.UUID
	version int64
	set     *cond.Set
}

const defaultSetCacheValues = 5_000_000

// Load returns the organization's sets among ids, current as of the call
// (sets that are not the organization's are absent: they match nothing).
func (c *SetCache) Load(ctx context.Context, db store.DBTX, orgID uuid.UUID, ids []uuid.UUID) (cond.Sets, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	versions, err := store.ConditionSetVersions(ctx, db, orgID, ids)
	if err != nil {
		return nil, fmt.Errorf("condition set versions: %w", err)
	}
	out := make(cond.Sets, len(versions))
	var stale []uuid.UUID
	c.mu.Lock()
	for id, v := range versions {
		if e, ok := c.entries[id]; ok && e.org == orgID && e.version == v {
			out[id] = e.set
		} else {
			stale = append(stale, id)
		}
	}
	c.mu.Unlock()
	if len(stale) == 0 {
		return out, nil
	}
	loaded, err := store.LoadConditionSets(ctx, db, orgID, stale)
	if err != nil {
		return nil, fmt.Errorf("load condition sets: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	limit := c.MaxValues
	if limit <= 0 {
		limit = defaultSetCacheValues
	}
	for id, s := range loaded {
		set := cond.NewSet(s.ValueType, s.Values)
		out[id] = set
		if c.entries == nil || c.values+len(s.Values) > limit {
			c.entries, c.values = map[uuid.UUID]setEntry{}, 0
		}
		if old, ok := c.entries[id]; ok {
			if old.version > s.Version { // a newer copy got here first
				continue
			}
			c.values -= old.set.Len()
		}
		if len(s.Values) <= limit {
			c.entries[id] = setEntry{org: orgID, version: s.Version, set: set}
			c.values += len(s.Values)
		}
	}
	return out, nil
}
