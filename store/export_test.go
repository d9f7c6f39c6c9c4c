package store

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// OrderPageSQL exposes ListOrders' page statement to the tests (EXPLAIN).
func OrderPageSQL(db DBTX, orgID uuid.UUID, p OrderListParams) (string, []any) {
	sql, args, _, _ := orderPageSQL(db, orgID, p)
	return sql, args
}

// ItemsStateSQL exposes the SQL of an ItemsState to the tests.
func ItemsStateSQL(alias, orderBy string) string { return itemsStateJSON(alias, orderBy) }

// InsertOrderSQL and InsertOrderArgs expose CreateOrder's statement, and
// EmbedDefaultAppliesSQL the embed default dispatcher's question, to
// BenchmarkOrderInsertPGCost.
const InsertOrderSQL = insertOrderSQL

func InsertOrderArgs(o *Order) []any { return insertOrderArgs(o) }

var EmbedDefaultAppliesSQL = embedDefaultAppliesSQL

// OrderProbeKept tells whether the pool's CreateOrderProbed keeps an answer
// for the organization, and the cache's notification count (seq).
func OrderProbeKept(pool *pgxpool.Pool, org uuid.UUID) (bool, uint64) {
	c := orderProbeCacheFor(pool)
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.orgs[org]) > 0, c.seq
}

// OrderProbeLive tells whether the pool's CreateOrderProbed cache is on.
func OrderProbeLive(pool *pgxpool.Pool) bool {
	c := orderProbeCacheFor(pool)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live
}

// ListenerRounds is how many round trips the pool's Listener ran.
func ListenerRounds(pool *pgxpool.Pool) uint64 {
	l := ListenerOf(pool)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rounds
}

// AnalyzeSQL exposes the ANALYZE NoteBulkWrite runs on a table.
func (s *Store) AnalyzeSQL(ctx context.Context, table string) string { return s.analyzeSQL(ctx, table) }
