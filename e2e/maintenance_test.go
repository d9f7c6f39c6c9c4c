package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/store"
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

// The reconciler, triggered through the maintenance schedule on the real
// server: a comparison left processing without a run (the process died
// between the row's write and the workflow start) is started again under
// its id and finishes; one whose run an operator terminated in the UI
// becomes failed with the operator's reason.
func TestMaintenanceReconcilesOrphanedRateComparisons(t *testing.T) {
	s := rcStart(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s.account(carriers.CarrierA)
	target := s.account(carriers.CarrierB)
	org := uuid.MustParse(s.orgID)

	// processing, as the process endpoint writes it, aged past the bound.
	processing := func(id string) {
		_, _, err := store.StartRateComparison(ctx, s.store.Pool, org, uuid.MustParse(id), workflows.RateComparisonWorkflowID(id))
		require.NoError(t, err)
		_, err = s.store.Pool.Exec(ctx, `UPDATE rate_comparisons SET started_at = now() - interval '10 minutes' WHERE id = $1`, id)
		require.NoError(t, err)
	}
	orphan := s.create(target, rcUpload(20))
	processing(orphan)

	terminated := s.create(target, rcUpload(5))
	processing(terminated)
	// Its run waits on a queue no worker polls, and is terminated.
	opts := worker.StartOptions(workflows.RateComparisonWorkflowID(terminated), "nobody-polls", s.orgID, map[string]any{"comparisonId": terminated})
	_, err := s.temporal.ExecuteWorkflow(ctx, opts, workflows.RateComparison, workflows.NewRateComparisonInput(s.orgID, terminated, worker.ReconcilerActor))
	require.NoError(t, err)
	require.NoError(t, s.temporal.TerminateWorkflow(ctx, workflows.RateComparisonWorkflowID(terminated), "", "stuck on a bad deploy"))

	require.NoError(t, worker.EnsureMaintenanceSchedule(ctx, s.temporal, taskQueue))
	h := s.temporal.ScheduleClient().GetHandle(ctx, workflows.MaintenanceScheduleID)
	require.NoError(t, h.Trigger(ctx, client.ScheduleTriggerOptions{}))

	done, _ := s.waitDone(orphan, 45*time.Second)
	require.Equal(t, "completed", done["status"], "restarted and finished: %v", done)
	require.EqualValues(t, 20, done["completedItems"])

	d := data(s.do(200, "GET", "/api/v1/rate-comparisons/"+terminated, nil))
	require.Equal(t, "failed", d["status"])
	require.Contains(t, d["error"], "stopped by an operator: stuck on a bad deploy")
	require.Contains(t, d["error"], "process the comparison again")
	// And it can be processed again through the API.
	require.Equal(t, "processing", data(s.do(202, "POST", "/api/v1/rate-comparisons/"+terminated+"/process", nil))["status"])
	done, _ = s.waitDone(terminated, 30*time.Second)
	require.Equal(t, "completed", done["status"])
}

// A carrier account left pending by a registration run an operator
// terminated in the UI ends in error with the operator's reason.
func TestMaintenanceReconcilesTerminatedRegistration(t *testing.T) {
	s := startWithCarriers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	signup := data(s.mustCall(201, "", "POST", "/api/v1/auth/signup", map[string]any{
		"email": "mnt-" + uuid.NewString()[:8] + "@example.com", "password": "correct horse", "first_name": "M", "last_name": "T", "organization_name": "Maint",
	}))
	orgID := signup["organization"].(map[string]any)["id"].(string)
	acctUUID, orgUUID := uuid.New(), uuid.MustParse(orgID)
	sealed, err := s.box.SealJSON(map[string]any{"accountNumber": "451134231"}, store.CarrierAccountCredentialsAD(orgUUID, acctUUID))
	require.NoError(t, err)
	ra, err := store.UpsertRegistrationAccount(ctx, s.store.Pool, store.CarrierAccount{
		ID: acctUUID, OrganizationID: orgUUID, Name: "Stuck", Carrier: carriers.CarrierA,
		Credentials: sealed, AccountNumberDigest: store.CarrierAccountNumberDigest(s.box, "451134231"),
	}, false)
	require.NoError(t, err)
	acctID := ra.Account.ID.String()
	wfID := workflows.CarrierRegistrationWorkflowID(acctID)
	_, err = s.temporal.ExecuteWorkflow(ctx, worker.StartOptions(wfID, "nobody-polls", orgID, map[string]any{"carrierAccountId": acctID}),
		workflows.CarrierRegistration, workflows.CarrierRegistrationInput{OrganizationID: orgID, AccountID: acctID})
	require.NoError(t, err)
	require.NoError(t, s.temporal.TerminateWorkflow(ctx, wfID, "", "customer gave up"))
	_, err = s.store.Pool.Exec(ctx, `UPDATE carrier_accounts SET updated_at = now() - interval '1 hour' WHERE id = $1`, acctID)
	require.NoError(t, err)

	require.NoError(t, worker.EnsureMaintenanceSchedule(ctx, s.temporal, taskQueue))
	h := s.temporal.ScheduleClient().GetHandle(ctx, workflows.MaintenanceScheduleID)
	require.NoError(t, h.Trigger(ctx, client.ScheduleTriggerOptions{}))

	require.Eventually(t, func() bool {
		a, err := store.CarrierAccountByID(ctx, s.store.Pool, uuid.MustParse(orgID), ra.Account.ID)
		return err == nil && a.Status == store.CarrierAccountError
	}, 20*time.Second, 100*time.Millisecond)
	a, err := store.CarrierAccountByID(ctx, s.store.Pool, uuid.MustParse(orgID), ra.Account.ID)
	require.NoError(t, err)
	require.Contains(t, *a.LastError, "stopped by an operator: customer gave up")
	require.NotContains(t, *a.LastError, "@", "the terminator's identity (pid@host) is logged, not stored")
	require.Contains(t, *a.LastError, "register the account again")
}
