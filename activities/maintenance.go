package activities

import (
	"context"
	"log/slog"

	"github.com/fos-dev/fos/store"
)

// MaintenanceActivities keep the database tidy.
type MaintenanceActivities struct {
	Store  *store.Store
	Logger *slog.Logger
}

// PurgeExpiredInput is the input of PurgeExpired.
type PurgeExpiredInput struct{}

// PurgeExpiredResult counts what PurgeExpired removed.
type PurgeExpiredResult struct {
	IdempotencyKeys int64 `json:"idempotencyKeys"`
}

// PurgeExpired deletes Idempotency-Key records older than their 24-hour
// lifetime (one DELETE; idempotent).
func (a *MaintenanceActivities) PurgeExpired(ctx context.Context, _ PurgeExpiredInput) (PurgeExpiredResult, error) {
	n, err := store.PurgeIdempotencyKeys(ctx, a.Store.Pool)
	if err != nil {
		return PurgeExpiredResult{}, err
	}
	if n > 0 && a.Logger != nil {
		a.Logger.Info("purged expired idempotency keys", "count", n)
	}
	return PurgeExpiredResult{IdempotencyKeys: n}, nil
}
