package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// An insights read is planned for its values, without JIT, read-only,
// and leaves the pooled connection's settings as they were.
func TestInsightReadSettings(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	conn, err := st.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	show := func(db store.DBTX, name string) string {
		var v string
		require.NoError(t, db.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v))
		return v
	}
	jit, mode := show(conn, "jit"), show(conn, "plan_cache_mode")
	require.NoError(t, store.InsightRead(ctx, conn, func(db store.DBTX) error {
		require.Equal(t, "off", show(db, "jit"))
		require.Equal(t, "force_custom_plan", show(db, "plan_cache_mode"))
		require.Equal(t, "16MB", show(db, "work_mem"))
		return nil
	}))
	err = store.InsightRead(ctx, conn, func(db store.DBTX) error {
		_, err := db.Exec(ctx, "CREATE TEMP TABLE insight_read_probe (x int)")
		return err
	})
	require.ErrorContains(t, err, "read-only")
	require.Equal(t, jit, show(conn, "jit"))
	require.Equal(t, mode, show(conn, "plan_cache_mode"))

	// fn's error is returned and the transaction ends.
	boom := errors.New("boom")
	require.ErrorIs(t, store.InsightRead(ctx, conn, func(store.DBTX) error { return boom }), boom)
	require.Equal(t, jit, show(conn, "jit"))
}
