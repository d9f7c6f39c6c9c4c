package api

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// A request whose process died while it held an Idempotency-Key leaves an
// in-flight claim: a repeat is 409 while the lease runs, and succeeds (runs
// the request again) once it has run out.
func TestIdempotencyKeyDiedInFlightSucceedsAfterLease(t *testing.T) {
	e := newEnv(t)
	owner := e.signup()
	body := map[string]any{"name": "Lease room"}
	first := e.do(owner.caller, "POST", "/api/v1/locations", body, "Idempotency-Key", "died")
	require.Equal(t, 201, first.Code, "%s", first.Raw)

	// Make the stored entry what a request that died mid-flight leaves: no
	// response, the claim of a holder that is gone.
	died := func(lease string) {
		_, err := e.deps.Store.Pool.Exec(context.Background(), `UPDATE idempotency_keys
   SET status_code = NULL, content_type = NULL, response_body = NULL, claim_id = $2,
       lease_expires_at = now() + $3::interval
 WHERE organization_id = $1`, owner.org, uuid.New(), lease)
		require.NoError(t, err)
	}
	died("1 minute")
	res := e.do(owner.caller, "POST", "/api/v1/locations", body, "Idempotency-Key", "died")
	requireError(t, res, 409, "conflict")
	require.Contains(t, string(res.Raw), "still in progress")

	died("-1 second")
	again := e.do(owner.caller, "POST", "/api/v1/locations", body, "Idempotency-Key", "died")
	require.Equal(t, 201, again.Code, "%s", again.Raw)
	require.Empty(t, again.Header.Get("Idempotent-Replayed"), "the request ran again")
	require.NotEqual(t, first.data()["id"], again.data()["id"])

	// Its response is stored as usual.
	replay := e.do(owner.caller, "POST", "/api/v1/locations", body, "Idempotency-Key", "died")
	require.Equal(t, "true", replay.Header.Get("Idempotent-Replayed"))
	require.Equal(t, again.Raw, replay.Raw)
}

// BenchmarkIdempotentPost measures what an Idempotency-Key adds to a POST
// (claim, timer, stored response): compare the two sub-benchmarks.
func BenchmarkIdempotentPost(b *testing.B) {
	e := newEnv(b)
	owner := e.signup()
	body := map[string]any{"name": "Bench room"}
	b.Run("without-key", func(b *testing.B) {
		for b.Loop() {
			if res := e.do(owner.caller, "POST", "/api/v1/locations", body); res.Code != 201 {
				b.Fatalf("%d %s", res.Code, res.Raw)
			}
		}
	})
	b.Run("with-key", func(b *testing.B) {
		for b.Loop() {
			if res := e.do(owner.caller, "POST", "/api/v1/locations", body, "Idempotency-Key", uuid.NewString()); res.Code != 201 {
				b.Fatalf("%d %s", res.Code, res.Raw)
			}
		}
	})
}
