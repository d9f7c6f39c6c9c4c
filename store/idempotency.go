package store

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
)

// IdempotencyTTL is how long a stored response answers repeats of its key.
const IdempotencyTTL = 24 * time.Hour

// DefaultIdempotencyLease is how long an in-flight claim holds its key
// without being renewed: a request whose process died frees its key after
// this long, not after IdempotencyTTL.
const DefaultIdempotencyLease = 2 * time.Minute

// IdempotentResponse is the stored answer to the first request of a key.
type IdempotentResponse struct {
	StatusCode  int
	ContentType string
	Body        []byte
}

// IdempotencyClaim is a request's hold on a key, returned by
// ClaimIdempotencyKey. ID tells this holder from a later one that took the
// key over after the lease ran out.
type IdempotencyClaim struct {
	OrganizationID uuid.UUID
	Key            string
	ID             uuid.UUID
}

// Outcomes of ClaimIdempotencyKey.
var (
	// ErrIdempotencyMismatch: the key was used with a different request.
	ErrIdempotencyMismatch = errors.New("idempotency key reused with a different request")
	// ErrIdempotencyInFlight: the first request with this key has not finished.
	ErrIdempotencyInFlight = errors.New("a request with this idempotency key is in progress")
)

// ClaimIdempotencyKey claims key for a request whose body hashes to hash,
// for lease (DefaultIdempotencyLease when 0). It returns the claim when the
// caller now owns the key and must run the request, renew the claim while
// it runs longer than the lease, and then Complete or Release it; a stored
// response to replay; or ErrIdempotencyMismatch / ErrIdempotencyInFlight.
// An entry older than the TTL, and an in-flight claim whose lease ran out
// (its request died with its process), is taken over, whatever request it
// was for: no response was ever stored for it.
func ClaimIdempotencyKey(ctx context.Context, db DBTX, orgID uuid.UUID, key string, hash []byte, lease time.Duration) (*IdempotencyClaim, *IdempotentResponse, error) {
	if lease <= 0 {
		lease = DefaultIdempotencyLease
	}
	claim := IdempotencyClaim{OrganizationID: orgID, Key: key, ID: uuid.New()}
	var claimed bool
	err := db.QueryRow(ctx, `
INSERT INTO idempotency_keys (organization_id, key, request_hash, claim_id, lease_expires_at)
VALUES ($1, $2, $3, $4, now() + make_interval(secs => $6))
ON CONFLICT (organization_id, key) DO UPDATE
   SET request_hash = EXCLUDED.request_hash, status_code = NULL, content_type = NULL,
       response_body = NULL, created_at = now(), claim_id = EXCLUDED.claim_id,
       lease_expires_at = EXCLUDED.lease_expires_at
 WHERE idempotency_keys.created_at < now() - make_interval(secs => $5)
    OR (idempotency_keys.status_code IS NULL
        AND coalesce(idempotency_keys.lease_expires_at, idempotency_keys.created_at + make_interval(secs => $6)) < now())
RETURNING true`, orgID, key, hash, claim.ID, IdempotencyTTL.Seconds(), lease.Seconds()).Scan(&claimed)
	if err == nil {
		return &claim, nil, nil
	}
	if err = mapErr(err); !errors.Is(err, ErrNotFound) {
		return nil, nil, err
	}
	var (
		storedHash []byte
		status     *int
		ctype      *string
		body       []byte
	)
	err = db.QueryRow(ctx, `SELECT request_hash, status_code, content_type, response_body
  FROM idempotency_keys WHERE organization_id = $1 AND key = $2`, orgID, key).Scan(&storedHash, &status, &ctype, &body)
	if err != nil {
		return nil, nil, mapErr(err)
	}
	if !bytes.Equal(storedHash, hash) {
		return nil, nil, ErrIdempotencyMismatch
	}
	if status == nil {
		return nil, nil, ErrIdempotencyInFlight
	}
	resp := &IdempotentResponse{StatusCode: *status, Body: body}
	if ctype != nil {
		resp.ContentType = *ctype
	}
	return nil, resp, nil
}

// RenewIdempotencyKey extends an in-flight claim by lease from now. It
// reports false when the claim is no longer held (its lease ran out and
// another request took the key over, or it was completed or released).
func RenewIdempotencyKey(ctx context.Context, db DBTX, c IdempotencyClaim, lease time.Duration) (bool, error) {
	if lease <= 0 {
		lease = DefaultIdempotencyLease
	}
	tag, err := db.Exec(ctx, `UPDATE idempotency_keys SET lease_expires_at = now() + make_interval(secs => $4)
 WHERE organization_id = $1 AND key = $2 AND claim_id = $3 AND status_code IS NULL`, c.OrganizationID, c.Key, c.ID, lease.Seconds())
	if err != nil {
		return false, mapErr(err)
	}
	return tag.RowsAffected() == 1, nil
}

// CompleteIdempotencyKey stores the response of the request that holds
// claim. A claim taken over meanwhile is left to its new holder.
func CompleteIdempotencyKey(ctx context.Context, db DBTX, c IdempotencyClaim, r IdempotentResponse) error {
	_, err := db.Exec(ctx, `UPDATE idempotency_keys SET status_code = $4, content_type = $5, response_body = $6, lease_expires_at = NULL
 WHERE organization_id = $1 AND key = $2 AND claim_id = $3`, c.OrganizationID, c.Key, c.ID, r.StatusCode, r.ContentType, r.Body)
	return mapErr(err)
}

// ReleaseIdempotencyKey forgets a claim whose request failed on the server's
// side, so the client may retry with the same key. A claim taken over
// meanwhile is left to its new holder.
func ReleaseIdempotencyKey(ctx context.Context, db DBTX, c IdempotencyClaim) error {
	_, err := db.Exec(ctx, `DELETE FROM idempotency_keys WHERE organization_id = $1 AND key = $2 AND claim_id = $3`, c.OrganizationID, c.Key, c.ID)
	return mapErr(err)
}

// PurgeIdempotencyKeys deletes entries older than the TTL.
func PurgeIdempotencyKeys(ctx context.Context, db DBTX) (int64, error) {
	tag, err := db.Exec(ctx, `DELETE FROM idempotency_keys WHERE created_at < now() - make_interval(secs => $1)`, IdempotencyTTL.Seconds())
	return tag.RowsAffected(), mapErr(err)
}
