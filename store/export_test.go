package store

import (
	"context"

	"github.com/google/uuid"
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

// AnalyzeSQL exposes the ANALYZE NoteBulkWrite runs on a table.
func (s *Store) AnalyzeSQL(ctx context.Context, table string) string { return s.analyzeSQL(ctx, table) }
