package accounts

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/auth"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/store"
)

// APIKeys lists the organization's API keys (admin or owner).
func (s *Service) APIKeys(ctx context.Context, actor domain.Actor) ([]APIKey, error) {
	if err := requireOperator(actor, adminOrOwner...); err != nil {
		return nil, err
	}
	return store.ListAPIKeys(ctx, s.store.Pool, actor.OrganizationID)
}

// NewAPIKey is a key to create, already checked for shape: a name of
// 1-100 characters (trimmed here), known scopes without repeats, an
// expiry in the future or none.
type NewAPIKey struct {
	Name      string
	Scopes    []string
	ExpiresAt *time.Time
}

// CreatedAPIKey is a new key with its secret, which is returned once and
// never stored.
type CreatedAPIKey struct {
	APIKey
	Secret string
}

// CreateAPIKey creates a key of the actor's organization (admin or owner).
func (s *Service) CreateAPIKey(ctx context.Context, actor domain.Actor, in NewAPIKey) (CreatedAPIKey, error) {
	if err := requireOperator(actor, adminOrOwner...); err != nil {
		return CreatedAPIKey{}, err
	}
	var createdBy *uuid.UUID
	if actor.Kind == domain.ActorUser {
		id := actor.ID
		createdBy = &id
	}
	secret, prefix, hash := auth.NewAPIKey()
	k, err := store.CreateAPIKey(ctx, s.store.Pool, store.APIKey{
		ID: uuid.New(), OrganizationID: actor.OrganizationID, Name: strings.TrimSpace(in.Name),
		KeyHash: hash, KeyPrefix: prefix, Scopes: in.Scopes, CreatedBy: createdBy, ExpiresAt: in.ExpiresAt,
	})
	if err != nil {
		return CreatedAPIKey{}, err
	}
	return CreatedAPIKey{APIKey: k, Secret: secret}, nil
}

// RevokeAPIKey revokes a key of the actor's organization (admin or owner);
// it stops working on the next request, on every instance.
func (s *Service) RevokeAPIKey(ctx context.Context, actor domain.Actor, id uuid.UUID) error {
	if err := requireOperator(actor, adminOrOwner...); err != nil {
		return err
	}
	return notFoundAs(store.RevokeAPIKey(ctx, s.store.Pool, actor.OrganizationID, id), "API key")
}

// errBadAPIKey answers every key that does not work, whatever the reason.
var errBadAPIKey = &domain.Error{Kind: domain.KindUnauthorized, Message: "invalid, revoked or expired API key"}

// AuthenticateAPIKey is the key whose secret a request carries, when it
// works (not revoked, not expired); else Unauthorized. The key is found
// by the hash of the secret, so the secret is never compared byte by byte;
// the row is answered from the key cache when it may be (apiKeyCache). Its
// last use is recorded off the request path, at most once a minute.
func (s *Service) AuthenticateAPIKey(ctx context.Context, secret string) (APIKey, error) {
	k, err := apiKeyCacheFor(s.store.Pool).lookup(ctx, auth.HashAPIKey(secret))
	if errors.Is(err, store.ErrNotFound) {
		return APIKey{}, errBadAPIKey
	}
	if err != nil {
		return APIKey{}, err
	}
	now := time.Now()
	if k.RevokedAt != nil || (k.ExpiresAt != nil && !now.Before(*k.ExpiresAt)) {
		return APIKey{}, errBadAPIKey
	}
	s.keyUse.touch(s, k.ID, now)
	return k, nil
}

// errNotMember refuses a user acting in an organization not theirs.
var errNotMember = domain.Forbidden("you are not a member of that organization")

// MembershipOf is the user's membership of org; a user who is not a
// member is Forbidden.
func (s *Service) MembershipOf(ctx context.Context, org, userID uuid.UUID) (Membership, error) {
	m, err := store.MembershipOf(ctx, s.store.Pool, org, userID)
	if errors.Is(err, store.ErrNotFound) {
		return Membership{}, errNotMember
	}
	return m, err
}

// keyUseRecorder writes last_used_at at most once a minute per key, off the
// request path, so authentication stays one read.
type keyUseRecorder struct {
	mu   sync.Mutex
	last map[uuid.UUID]time.Time
}

func (k *keyUseRecorder) touch(s *Service, id uuid.UUID, now time.Time) {
	k.mu.Lock()
	if k.last == nil {
		k.last = map[uuid.UUID]time.Time{}
	}
	if now.Sub(k.last[id]) < time.Minute {
		k.mu.Unlock()
		return
	}
	k.last[id] = now
	k.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := store.TouchAPIKey(ctx, s.store.Pool, id, now); err != nil {
			s.log.Warn("record API key use", "api_key_id", id, "error", err)
		}
	}()
}
