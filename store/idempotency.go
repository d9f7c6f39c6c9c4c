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

// IdempotentResponse is the stored answer to the first request of a key.
type IdempotentResponse struct {
	StatusCode  int
	ContentType string
	Body        []byte
}

// Outcomes of ClaimIdempotencyKey.
var (
	// ErrIdempotencyMismatch: the key was used with a different request.
	ErrIdempotencyMismatch = errors.New("idempotency key reused with a different request")
	// ErrIdempotencyInFlight: the first request with this key has not finished.
	ErrIdempotencyInFlight = errors.New("a request with this idempotency key is in progress")
)

// ClaimIdempotencyKey claims key for a request whose body hashes to hash.
// It returns (nil, nil) when the caller now owns the key and must run the
// request and then call Complete or Release; a stored response to replay;
// or ErrIdempotencyMismatch / ErrIdempotencyInFlight. An entry older than
// the TTL is taken over.
func ClaimIdempotencyKey(ctx context.Context, db DBTX, orgID uuid.UUID, key string, hash []byte) (*IdempotentResponse, error) {
	var claimed bool
	err := db.QueryRow(ctx, `
INSERT INTO idempotency_keys (organization_id, key, request_hash)
VALUES ($1, $2, $3)
ON CONFLICT (organization_id, key) DO UPDATE
   SET request_hash = EXCLUDED.request_hash, status_code = NULL, content_type = NULL,
       response_body = NULL, created_at = now()
 WHERE idempotency_keys.created_at < now() - make_interval(secs => $4)
RETURNING true`, orgID, key, hash, IdempotencyTTL.Seconds()).Scan(&claimed)
	if err == nil {
		return nil, nil
	}
	if err = mapErr(err); !errors.Is(err, ErrNotFound) {
		return nil, err
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
		return nil, mapErr(err)
	}
	if !bytes.Equal(storedHash, hash) {
		return nil, ErrIdempotencyMismatch
	}
	if status == nil {
		return nil, ErrIdempotencyInFlight
	}
	resp := &IdempotentResponse{StatusCode: *status, Body: body}
	if ctype != nil {
		resp.ContentType = *ctype
	}
	return resp, nil
}

// CompleteIdempotencyKey stores the response of the request that claimed key.
func CompleteIdempotencyKey(ctx context.Context, db DBTX, orgID uuid.UUID, key string, r IdempotentResponse) error {
	_, err := db.Exec(ctx, `UPDATE idempotency_keys SET status_code = $3, content_type = $4, response_body = $5
 WHERE organization_id = $1 AND key = $2`, orgID, key, r.StatusCode, r.ContentType, r.Body)
	return mapErr(err)
}

// ReleaseIdempotencyKey forgets a claim whose request failed on the server's
// side, so the client may retry with the same key.
func ReleaseIdempotencyKey(ctx context.Context, db DBTX, orgID uuid.UUID, key string) error {
	_, err := db.Exec(ctx, `DELETE FROM idempotency_keys WHERE organization_id = $1 AND key = $2`, orgID, key)
	return mapErr(err)
}

// PurgeIdempotencyKeys deletes entries older than the TTL.
func PurgeIdempotencyKeys(ctx context.Context, db DBTX) (int64, error) {
	tag, err := db.Exec(ctx, `DELETE FROM idempotency_keys WHERE created_at < now() - make_interval(secs => $1)`, IdempotencyTTL.Seconds())
	return tag.RowsAffected(), mapErr(err)
}
