// Package oncemap computes a value once per key.
package oncemap

import "sync"

// Map computes a value once per key and keeps it. Concurrent Gets of a key
// wait for its one computation and share its answer; a computation that
// failed is forgotten (the next Get computes again) unless Keep says to
// keep its error. Nothing is evicted: a Map lives as long as what it
// caches for (a batch). The zero value is ready; safe for concurrent use.
type Map[K comparable, V any] struct {
	// Keep reports whether a failure is kept (nil: none is).
	Keep func(error) bool

	mu sync.Mutex
	m  map[K]*entry[V]
}

type entry[V any] struct {
	once sync.Once
	v    V
	err  error
}

// Get returns key's value, computing it with compute when there is none.
func (m *Map[K, V]) Get(key K, compute func() (V, error)) (V, error) {
	m.mu.Lock()
	if m.m == nil {
		m.m = map[K]*entry[V]{}
	}
	e := m.m[key]
	if e == nil {
		e = &entry[V]{}
		m.m[key] = e
	}
	m.mu.Unlock()
	e.once.Do(func() {
		e.v, e.err = compute()
		if e.err != nil && (m.Keep == nil || !m.Keep(e.err)) {
			m.mu.Lock()
			if m.m[key] == e {
				delete(m.m, key)
			}
			m.mu.Unlock()
		}
	})
	return e.v, e.err
}
