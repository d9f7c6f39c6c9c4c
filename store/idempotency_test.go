package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

func TestIdempotencyClaimReplayAndPurge(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org := bridgeTestOrg(t, s)

	claim, resp, err := store.ClaimIdempotencyKey(ctx, s.Pool, org, "k", []byte("h1"), 0)
	require.NoError(t, err)
	require.Nil(t, resp, "the first request owns the key")
	require.NotNil(t, claim)
	_, _, err = store.ClaimIdempotencyKey(ctx, s.Pool, org, "k", []byte("h1"), 0)
	require.ErrorIs(t, err, store.ErrIdempotencyInFlight)
	require.NoError(t, store.CompleteIdempotencyKey(ctx, s.Pool, *claim, store.IdempotentResponse{StatusCode: 201, ContentType: "application/json", Body: []byte(`{"ok":1}`)}))
	_, resp, err = store.ClaimIdempotencyKey(ctx, s.Pool, org, "k", []byte("h1"), 0)
	require.NoError(t, err)
	require.Equal(t, 201, resp.StatusCode)
	require.Equal(t, `{"ok":1}`, string(resp.Body))
	_, _, err = store.ClaimIdempotencyKey(ctx, s.Pool, org, "k", []byte("h2"), 0)
	require.ErrorIs(t, err, store.ErrIdempotencyMismatch)

	// Older than the TTL: purged, and a reuse of the key is a fresh claim.
	_, _, err = store.ClaimIdempotencyKey(ctx, s.Pool, org, "fresh", []byte("h"), 0)
	require.NoError(t, err)
	_, err = s.Pool.Exec(ctx, `UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE organization_id = $1 AND key = 'k'`, org)
	require.NoError(t, err)
	claim, resp, err = store.ClaimIdempotencyKey(ctx, s.Pool, org, "k", []byte("h2"), 0)
	require.NoError(t, err)
	require.Nil(t, resp, "an expired key is taken over")
	require.NotNil(t, claim)
	_, err = s.Pool.Exec(ctx, `UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE organization_id = $1 AND key = 'k'`, org)
	require.NoError(t, err)
	n, err := store.PurgeIdempotencyKeys(ctx, s.Pool)
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, int64(1))
	var left int
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT count(*) FROM idempotency_keys WHERE organization_id = $1`, org).Scan(&left))
	require.Equal(t, 1, left, "the fresh key stays")
}

// An in-flight claim holds its key for its lease, renewals extend it, and
// once it runs out (the request died with its process) a repeat takes the
// key over; the old holder can then neither complete nor release it.
func TestIdempotencyLease(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org := bridgeTestOrg(t, s)
	expire := func() {
		_, err := s.Pool.Exec(ctx, `UPDATE idempotency_keys SET lease_expires_at = now() - interval '1 second' WHERE organization_id = $1 AND key = 'k'`, org)
		require.NoError(t, err)
	}

	old, _, err := store.ClaimIdempotencyKey(ctx, s.Pool, org, "k", []byte("h"), time.Minute)
	require.NoError(t, err)
	_, _, err = store.ClaimIdempotencyKey(ctx, s.Pool, org, "k", []byte("h"), time.Minute)
	require.ErrorIs(t, err, store.ErrIdempotencyInFlight, "a live claim holds the key")

	// A renewal extends an expired-looking lease while the holder lives.
	expire()
	ok, err := store.RenewIdempotencyKey(ctx, s.Pool, *old, time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	_, _, err = store.ClaimIdempotencyKey(ctx, s.Pool, org, "k", []byte("h"), time.Minute)
	require.ErrorIs(t, err, store.ErrIdempotencyInFlight)

	// The holder died: after the lease, a repeat owns the key (any body).
	expire()
	next, resp, err := store.ClaimIdempotencyKey(ctx, s.Pool, org, "k", []byte("h2"), time.Minute)
	require.NoError(t, err)
	require.Nil(t, resp)
	require.NotNil(t, next)
	require.NotEqual(t, old.ID, next.ID)

	// The old holder cannot touch the new claim.
	ok, err = store.RenewIdempotencyKey(ctx, s.Pool, *old, time.Minute)
	require.NoError(t, err)
	require.False(t, ok)
	require.NoError(t, store.ReleaseIdempotencyKey(ctx, s.Pool, *old))
	require.NoError(t, store.CompleteIdempotencyKey(ctx, s.Pool, *old, store.IdempotentResponse{StatusCode: 500}))
	_, _, err = store.ClaimIdempotencyKey(ctx, s.Pool, org, "k", []byte("h2"), time.Minute)
	require.ErrorIs(t, err, store.ErrIdempotencyInFlight, "still the new holder's")

	// A completed key is never taken over by the lease.
	require.NoError(t, store.CompleteIdempotencyKey(ctx, s.Pool, *next, store.IdempotentResponse{StatusCode: 201, Body: []byte("{}")}))
	expire()
	_, resp, err = store.ClaimIdempotencyKey(ctx, s.Pool, org, "k", []byte("h2"), time.Minute)
	require.NoError(t, err)
	require.Equal(t, 201, resp.StatusCode)
}
