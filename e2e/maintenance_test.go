package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/fos-dev/fos/worker"
	"github.com/fos-dev/fos/workflows"
)

// The maintenance schedule, triggered on the real server, purges expired
// Idempotency-Key records and keeps fresh ones.
func TestMaintenanceSchedulePurgesExpiredIdempotencyKeys(t *testing.T) {
	s := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	signup := data(s.mustCall(201, "", "POST", "/api/v1/auth/signup", map[string]any{
		"email": "mnt-" + uuid.NewString()[:8] + "@example.com", "password": "correct horse", "first_name": "M", "last_name": "T", "organization_name": "Maint",
	}))
	org := signup["organization"].(map[string]any)["id"].(string)
	_, err := s.store.Pool.Exec(ctx, `INSERT INTO idempotency_keys (organization_id, key, request_hash, status_code, created_at)
VALUES ($1, 'old', '\x00', 201, now() - interval '25 hours'), ($1, 'new', '\x00', 201, now())`, org)
	require.NoError(t, err)

	require.NoError(t, worker.EnsureMaintenanceSchedule(ctx, s.temporal, taskQueue))
	require.NoError(t, worker.EnsureMaintenanceSchedule(ctx, s.temporal, taskQueue), "idempotent")
	h := s.temporal.ScheduleClient().GetHandle(ctx, workflows.MaintenanceScheduleID)
	require.NoError(t, h.Trigger(ctx, client.ScheduleTriggerOptions{}))

	require.Eventually(t, func() bool {
		var keys []string
		rows, err := s.store.Pool.Query(ctx, `SELECT key FROM idempotency_keys WHERE organization_id = $1 ORDER BY key`, org)
		if err != nil {
			return false
		}
		defer rows.Close()
		for rows.Next() {
			var k string
			_ = rows.Scan(&k)
			keys = append(keys, k)
		}
		return len(keys) == 1 && keys[0] == "new"
	}, 20*time.Second, 100*time.Millisecond)
}
