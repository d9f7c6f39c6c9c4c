package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// readTxBeginner begins transactions with options (a pool or a
// connection).
type readTxBeginner interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// insightReadSettings are the planner settings of an insights read (one
// simple-protocol round trip).
const insightReadSettings = `SET LOCAL jit = off; SET LOCAL plan_cache_mode = force_custom_plan; SET LOCAL work_mem = '16MB'`

// InsightRead runs fn's statements in a read-only transaction whose
// statements are planned for their actual parameters and without JIT
// compilation, committed when fn returns nil.
//
// The insights' aggregates read an organization's windows of tens of
// thousands of rows, and both planner defaults went badly wrong on them
// (plans in the closing note of issue 19, notes/insights19.md):
//
//   - plan_cache_mode: pgx prepares each statement on its connection, and
//     from the sixth execution PostgreSQL may run a generic plan, planned
//     without the parameters' values. A window such as created_at >=
//     $2 - $3 then has a default selectivity (one row estimated for
//     12,578), and the late-shipment statement became nested loops that
//     ran a subplan 2.3 million times: 28-30 s instead of 0.3 s. Planning
//     for the values costs a millisecond or two per statement.
//   - jit: with the values, the estimated costs cross PostgreSQL's JIT
//     thresholds (jit_above_cost 100,000; inlining and optimization from
//     500,000) as an organization grows, and compiling a plan's
//     expressions then takes far longer than running them (the same
//     statement spent 4.9 s in JIT on a machine at load 21; without JIT
//     it ran in 0.19 s at load 3).
func InsightRead(ctx context.Context, db readTxBeginner, fn func(DBTX) error) error {
	tx, err := db.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return mapErr(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, insightReadSettings); err != nil {
		return mapErr(err)
	}
	if err := fn(tx); err != nil {
		return err
	}
	return mapErr(tx.Commit(ctx))
}
