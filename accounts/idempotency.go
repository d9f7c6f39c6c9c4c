package accounts

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/store"
)

// The answers to a key that cannot be claimed (both Conflicts).
var (
	errIdempotencyMismatch = domain.Conflict("Idempotency-Key was already used with a different request")
	errIdempotencyInFlight = domain.Conflict("a request with this Idempotency-Key is still in progress")
)

// idempotencyKey scopes a client's key to the actor as well as the
// organization: a stored response is only ever replayed to whoever
// received it first, so a replay can never get past the scope and role
// checks of another caller.
func idempotencyKey(actor domain.Actor, key string) string {
	return string(actor.Kind) + ":" + actor.ID.String() + ":" + key
}

// ClaimIdempotencyKey claims the actor's key for a request whose method,
// path and body hash to requestHash. It returns the claim when the caller
// now owns the key (run the request, KeepClaim while it runs, then
// CompleteIdempotencyKey or ReleaseIdempotencyKey); or the stored response
// of the key's first request, to replay. The same key with another
// request, or while its first request runs, is a Conflict. A claim's
// lease is Deps.IdempotencyLease; stored responses answer for 24 hours.
func (s *Service) ClaimIdempotencyKey(ctx context.Context, actor domain.Actor, key string, requestHash []byte) (*IdempotencyClaim, *IdempotentResponse, error) {
	claim, stored, err := store.ClaimIdempotencyKey(ctx, s.store.Pool, actor.OrganizationID, idempotencyKey(actor, key), requestHash, s.lease)
	switch {
	case errors.Is(err, store.ErrIdempotencyMismatch):
		return nil, nil, errIdempotencyMismatch
	case errors.Is(err, store.ErrIdempotencyInFlight):
		return nil, nil, errIdempotencyInFlight
	}
	return claim, stored, err
}

// CompleteIdempotencyKey stores the response that answers the key's
// repeats.
func (s *Service) CompleteIdempotencyKey(ctx context.Context, claim IdempotencyClaim, r IdempotentResponse) error {
	return store.CompleteIdempotencyKey(ctx, s.store.Pool, claim, r)
}

// ReleaseIdempotencyKey frees the key for a retry (the request failed in a
// way worth retrying: a 5xx, a 429, no answer).
func (s *Service) ReleaseIdempotencyKey(ctx context.Context, claim IdempotencyClaim) error {
	return store.ReleaseIdempotencyKey(ctx, s.store.Pool, claim)
}

// KeepClaim renews claim's lease every third of the lease until the
// returned stop is called, so a live request keeps its key however long
// it runs. It costs a timer, not a goroutine, per request; a request
// shorter than a third of the lease never writes a renewal.
func (s *Service) KeepClaim(ctx context.Context, claim IdempotencyClaim) (stop func()) {
	lease := s.lease
	every := lease / 3
	var (
		mu      sync.Mutex
		stopped bool
		t       *time.Timer
	)
	renew := func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), every)
		held, err := store.RenewIdempotencyKey(rctx, s.store.Pool, claim, lease)
		cancel()
		switch {
		case err != nil:
			s.log.WarnContext(ctx, "renew Idempotency-Key lease", "error", err)
		case !held:
			return // completed meanwhile, or taken over: nothing to keep
		}
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			t.Reset(every)
		}
	}
	mu.Lock()
	t = time.AfterFunc(every, renew)
	mu.Unlock()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		t.Stop()
	}
}
