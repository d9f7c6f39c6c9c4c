package store_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

func TestIdempotencyClaimReplayAndPurge(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org := bridgeTestOrg(t, s)

	resp, err := store.ClaimIdempotencyKey(ctx, s.Pool, org, "k", []byte("h1"))
	require.NoError(t, err)
	require.Nil(t, resp, "the first request owns the key")
	_, err = store.ClaimIdempotencyKey(ctx, s.Pool, org, "k", []byte("h1"))
	require.ErrorIs(t, err, store.ErrIdempotencyInFlight)
	require.NoError(t, store.CompleteIdempotencyKey(ctx, s.Pool, org, "k", store.IdempotentResponse{StatusCode: 201, ContentType: "application/json", Body: []byte(`{"ok":1}`)}))
	resp, err = store.ClaimIdempotencyKey(ctx, s.Pool, org, "k", []byte("h1"))
	require.NoError(t, err)
	require.Equal(t, 201, resp.StatusCode)
	require.Equal(t, `{"ok":1}`, string(resp.Body))
	_, err = store.ClaimIdempotencyKey(ctx, s.Pool, org, "k", []byte("h2"))
	require.ErrorIs(t, err, store.ErrIdempotencyMismatch)

	// Older than the TTL: purged, and a reuse of the key is a fresh claim.
	_, err = store.ClaimIdempotencyKey(ctx, s.Pool, org, "fresh", []byte("h"))
	require.NoError(t, err)
	_, err = s.Pool.Exec(ctx, `UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE organization_id = $1 AND key = 'k'`, org)
	require.NoError(t, err)
	resp, err = store.ClaimIdempotencyKey(ctx, s.Pool, org, "k", []byte("h2"))
	require.NoError(t, err)
	require.Nil(t, resp, "an expired key is taken over")
	_, err = s.Pool.Exec(ctx, `UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE organization_id = $1 AND key = 'k'`, org)
	require.NoError(t, err)
	n, err := store.PurgeIdempotencyKeys(ctx, s.Pool)
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, int64(1))
	var left int
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT count(*) FROM idempotency_keys WHERE organization_id = $1`, org).Scan(&left))
	require.Equal(t, 1, left, "the fresh key stays")
}
