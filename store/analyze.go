package store

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Statistics after bulk writes (issue 22 item 13). Right after a bulk
// import the planner still has the statistics of the small table (or none:
// autovacuum may be off, and elsewhere it runs a minute or more later), so
// it estimates a few rows and picks plans (a bitmap heap scan over the
// whole organization) that cost hundreds of milliseconds per list. A bulk
// writer reports the rows it added (NoteBulkWrite), outside its
// transaction; once a table grew by AnalyzeMinRows and AnalyzeGrowth of
// its size since its last ANALYZE, it is analyzed — at most once per
// AnalyzeInterval per table and process, the next one deferred to the end
// of the interval — as bulk loaders do. The ANALYZE runs off the writer's
// path (its own goroutine): an import's next page does not wait for it
// (each took ~0.1-0.5 s of a 100,000-order import's pages).

// Thresholds of NoteBulkWrite.
var (
	AnalyzeMinRows  int64   = 1000
	AnalyzeGrowth   float64 = 0.10
	AnalyzeInterval         = 5 * time.Second
	// analyzeTimeout bounds one ANALYZE (it samples, so a few hundred
	// milliseconds even for large tables).
	analyzeTimeout = time.Minute
)

// analyzeTables are the tables bulk writers grow.
var analyzeTables = map[string]bool{
	"orders": true, "order_activities": true, "dispatch_assignments": true, "task_executions": true,
	"webhook_events": true, "operation_items": true, "rate_comparison_items": true,
}

type tableStats struct {
	grown     int64
	size      float64 // reltuples at the last ANALYZE (-1: unknown)
	last      time.Time
	running   bool
	scheduled bool
}

type analyzer struct {
	mu     sync.Mutex
	tables map[string]*tableStats
}

var (
	analyzersMu sync.Mutex
	analyzers   = map[*pgxpool.Pool]*analyzer{}
)

func (s *Store) analyzer() *analyzer {
	analyzersMu.Lock()
	defer analyzersMu.Unlock()
	a, ok := analyzers[s.Pool]
	if !ok {
		a = &analyzer{tables: map[string]*tableStats{}}
		analyzers[s.Pool] = a
	}
	return a
}

// NoteBulkWrite records that rows were added to table (committed: call it
// after the transaction) and has the table analyzed when it grew enough
// (see above): at once in the background when the interval allows, else
// once the interval ends. It reports whether it started an ANALYZE now.
// Errors are logged, never returned: the write happened.
func (s *Store) NoteBulkWrite(ctx context.Context, table string, rows int) bool {
	if rows <= 0 || !analyzeTables[table] || s == nil || s.Pool == nil {
		return false
	}
	a := s.analyzer()
	a.mu.Lock()
	st, ok := a.tables[table]
	if !ok {
		st = &tableStats{size: -1}
		a.tables[table] = st
	}
	st.grown += int64(rows)
	due := st.grown >= AnalyzeMinRows && float64(st.grown) >= AnalyzeGrowth*max(st.size, 0)
	if !due || st.running {
		if st.size < 0 && !st.running && !st.scheduled {
			// The table's size is not known yet: learn it in the background
			// so the threshold is a share of the table, not of nothing.
			st.scheduled = true
			go s.learnSize(table)
		}
		a.mu.Unlock()
		return false
	}
	if wait := AnalyzeInterval - time.Since(st.last); wait > 0 {
		if !st.scheduled {
			st.scheduled = true
			time.AfterFunc(wait, func() { s.deferredAnalyze(table) })
		}
		a.mu.Unlock()
		return false
	}
	st.running = true
	a.mu.Unlock()
	go s.analyzeNow(context.WithoutCancel(ctx), table)
	return true
}

func (s *Store) learnSize(table string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var size float64
	err := s.Pool.QueryRow(ctx, `SELECT reltuples FROM pg_class WHERE oid = $1::regclass`, table).Scan(&size)
	a := s.analyzer()
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.tables[table]
	st.scheduled = false
	if err == nil && st.size < 0 {
		st.size = max(size, 0)
	}
}

func (s *Store) deferredAnalyze(table string) {
	a := s.analyzer()
	a.mu.Lock()
	st := a.tables[table]
	st.scheduled = false
	if st.running || st.grown < AnalyzeMinRows {
		a.mu.Unlock()
		return
	}
	st.running = true
	a.mu.Unlock()
	s.analyzeNow(context.Background(), table)
}

// analyzeColumnsSQL lists a table's columns but its JSON documents
// (jsonb, json), quoted and comma-separated ("" when it has none or
// cannot be read).
const analyzeColumnsSQL = `SELECT coalesce(string_agg(quote_ident(attname), ', ' ORDER BY attnum), '')
  FROM pg_attribute
 WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped AND atttypid NOT IN ('jsonb'::regtype, 'json'::regtype)`

// analyzeSQL is the ANALYZE of a table after bulk writes: of its columns
// but its JSON documents. Sampling and sorting those (an order's line
// items, addresses and platform object) took two thirds of an ANALYZE of
// orders (570 ms of 20,000 orders, 205 ms without), and the planner does
// not estimate from them what the bulk writes change: the row count
// (pg_class.reltuples, which any ANALYZE updates) and the distributions of
// the keys, statuses and times the queries filter and sort on. Their
// statistics stay those of autovacuum's ANALYZE.
func (s *Store) analyzeSQL(ctx context.Context, table string) string {
	all := `ANALYZE ` + pgx.Identifier{table}.Sanitize()
	var cols string
	if err := s.Pool.QueryRow(ctx, analyzeColumnsSQL, table).Scan(&cols); err != nil || cols == "" {
		return all
	}
	return all + ` (` + cols + `)`
}

// analyzeNow runs ANALYZE table (st.running is set) and records it.
func (s *Store) analyzeNow(ctx context.Context, table string) bool {
	ctx, cancel := context.WithTimeout(ctx, analyzeTimeout)
	defer cancel()
	var size float64
	// The table name is one of analyzeTables, never input.
	_, err := s.Pool.Exec(ctx, s.analyzeSQL(ctx, table))
	if err == nil {
		err = s.Pool.QueryRow(ctx, `SELECT reltuples FROM pg_class WHERE oid = $1::regclass`, table).Scan(&size)
	}
	a := s.analyzer()
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.tables[table]
	st.running = false
	if err != nil {
		slog.Default().WarnContext(ctx, "analyze after bulk writes", "table", table, "error", err)
		return false
	}
	st.grown, st.size, st.last = 0, size, time.Now()
	return true
}
