package operations

import (
	"context"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/store"
)

// BatchSnapshots is the rate snapshot reader of a new batch.
func BatchSnapshots(s *Service) func(ctx context.Context, orgID, id uuid.UUID) (store.RateSnapshot, error) {
	return s.newBatchRun(uuid.New()).snapshot
}
