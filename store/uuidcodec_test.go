package store_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/store/storetest"
)

// TestUUIDCodecRoundTrips sends and reads uuid.UUID in every shape the
// service uses (value, pointer, nil pointer, array, text and binary result
// formats) through a pool with the codec and checks PostgreSQL saw the
// same id.
func TestUUIDCodecRoundTrips(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	id := uuid.MustParse("0193a6b2-7c4e-7d11-9f3a-5b2c8d4e6f70")
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec} {
		var text string
		var back uuid.UUID
		var ptr *uuid.UUID
		var null *uuid.UUID
		err := s.Pool.QueryRow(ctx, `SELECT $1::uuid::text, $1::uuid, $2::uuid, $3::uuid`,
			mode, id, &id, (*uuid.UUID)(nil)).Scan(&text, &back, &ptr, &null)
		require.NoError(t, err, mode)
		require.Equal(t, id.String(), text, mode)
		require.Equal(t, id, back, mode)
		require.NotNil(t, ptr, mode)
		require.Equal(t, id, *ptr, mode)
		require.Nil(t, null, mode)
		if mode != pgx.QueryExecModeCacheStatement {
			continue // without the parameter types, stock pgx cannot send a []uuid.UUID either
		}
		var arr []uuid.UUID
		require.NoError(t, s.Pool.QueryRow(ctx, `SELECT $1::uuid[]`, mode, []uuid.UUID{id, uuid.Nil}).Scan(&arr), mode)
		require.Equal(t, []uuid.UUID{id, uuid.Nil}, arr, mode)
	}
	// A text result (a uuid read as text by the server's choice).
	var back uuid.UUID
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT $1::text::uuid`, id.String()).Scan(&back))
	require.Equal(t, id, back)
	// NULL into a non-pointer leaves it as it is, as with stock pgx.
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT NULL::uuid`).Scan(&back))
	require.Equal(t, id, back)
	// pgtype.UUID and strings still work (pgx's own codec).
	var s2 string
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT $1::uuid::text`, id.String()).Scan(&s2))
	require.Equal(t, id.String(), s2)
}
