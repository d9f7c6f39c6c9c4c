package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/worker"
	"github.com/fos-dev/fos/workflows"
)

// trackingStack is the service with the sandbox carriers wired into the
// API and the worker.
type trackingStack struct {
	*stack
	store *store.Store
	box   *secrets.Box
	reg   *carriers.Registry
}

func startTracking(t *testing.T) *trackingStack {
	s := start(t)
	return &trackingStack{stack: s, store: s.store, box: s.box, reg: s.reg}
}

func TestTrackingPollerEndToEnd(t *testing.T) {
	began := time.Now()
	s := startTracking(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	mail := "trk-" + uuid.NewString()[:8] + "@example.com"
	signup := data(s.mustCall(201, "", "POST", "/api/v1/auth/signup", map[string]any{
		"email": mail, "password": "correct horse", "first_name": "Ada", "last_name": "Lovelace", "organization_name": "Tracking Co",
	}))
	orgID := signup["organization"].(map[string]any)["id"].(string)
	code, out := s.call(signup["access_token"].(string), orgID, "POST", "/api/v1/api-keys", map[string]any{
		"name": "e2e", "scopes": []string{"shipments:read", "shipments:write"},
	})
	require.Equal(t, 201, code, "%v", out)
	key := data(out)["key"].(string)

	// A carrier_a account and shipments carrying numbers the sandbox knows
	// (the carrier API for shipments is another part of the service).
	acct := uuid.New()
	sealed, err := s.box.SealJSON(map[string]any{"accountNumber": "123456789", "childKey": "child-key-e2e", "childSecret": "child-secret-e2e"},
		store.CarrierAccountCredentialsAD(uuid.MustParse(orgID), acct))
	require.NoError(t, err)
	_, err = s.store.Pool.Exec(ctx, `INSERT INTO carrier_accounts (id, organization_id, name, carrier, credentials, status)
		VALUES ($1, $2, 'FedEx', 'carrier_a', $3, 'active')`, acct, orgID, sealed)
	require.NoError(t, err)
	numbers := []string{"794843185271", "794843186342", "794843187413"}
	var shipments []string
	for _, n := range numbers {
		id := uuid.NewString()
		_, err := s.store.Pool.Exec(ctx, `INSERT INTO shipments (id, organization_id, carrier_account_id, carrier, service, status, tracking_number, ship_to)
			VALUES ($1, $2, $3, 'carrier_a', 'FEDEX_GROUND', 'label_created', $4, '{"city": "Seattle", "provinceCode": "WA"}')`, id, orgID, acct, n)
		require.NoError(t, err)
		shipments = append(shipments, id)
	}
	carrierA, err := s.reg.Get("carrier_a")
	require.NoError(t, err)
	want, err := carrierA.Track(ctx, carriers.Account{ID: acct.String(), Carrier: "carrier_a",
		Credentials: map[string]any{"accountNumber": "123456789", "childKey": "child-key-e2e", "childSecret": "child-secret-e2e"}}, numbers)
	require.NoError(t, err)

	// One poll, started directly, in small batches so it takes several rounds.
	polledAt := time.Now()
	run, err := s.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "tracking-poller-e2e-" + uuid.NewString()[:8], TaskQueue: taskQueue},
		workflows.TrackingPollerWorkflowType, workflows.TrackingPollerInput{BatchSize: 1, Concurrency: 2})
	require.NoError(t, err)
	var res workflows.TrackingPollerResult
	require.NoError(t, run.Get(ctx, &res))
	t.Logf("poll: %+v in %s", res, time.Since(polledAt).Round(time.Millisecond))
	require.GreaterOrEqual(t, res.Totals.Tracked, 3)
	require.GreaterOrEqual(t, res.Rounds, 2)
	writeHistory(t, ctx, s.temporal, run.GetID(), run.GetRunID(), "tracking_poller_history.json")

	// The checkpoints, through the API.
	for i, id := range shipments {
		got := s.mustCall(200, key, "GET", "/api/v1/shipment-tracking/checkpoints?shipmentId="+id+"&limit=100", nil)
		list := got["data"].([]any)
		require.Len(t, list, len(want[i].Events), "shipment %s", numbers[i])
		for j, it := range list {
			c := it.(map[string]any)
			require.EqualValues(t, j, c["sequence"])
			require.Equal(t, "carrier_a", c["source"])
			require.Equal(t, want[i].Events[j].EventID, c["sourceEventId"])
			require.Equal(t, orgID, c["organizationId"])
			require.NotNil(t, c["latitude"])
		}
		var status string
		require.NoError(t, s.store.Pool.QueryRow(ctx, `SELECT status FROM shipments WHERE id = $1`, id).Scan(&status))
		require.Equal(t, want[i].Status, status)
	}
	// And on the map, with the carrier's coordinates.
	m := s.mustCall(200, key, "GET", "/api/v1/shipment-tracking/map", nil)
	items := m["data"].([]any)
	require.Len(t, items, 3)
	first := items[0].(map[string]any)
	require.NotNil(t, first["ship_to_lat"])
	require.NotNil(t, first["ship_from_lat"])
	require.Equal(t, map[string]any{"city": "Seattle", "state": "WA"}, first["ship_to"])

	// A second poll finds nothing left to move.
	run2, err := s.temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "tracking-poller-e2e-" + uuid.NewString()[:8], TaskQueue: taskQueue},
		workflows.TrackingPollerWorkflowType, workflows.TrackingPollerInput{})
	require.NoError(t, err)
	var res2 workflows.TrackingPollerResult
	require.NoError(t, run2.Get(ctx, &res2))
	require.Zero(t, res2.Totals.StatusChanges)

	// The schedule: created once, updated in place, and it starts the poller.
	require.NoError(t, worker.EnsureTrackingSchedule(ctx, s.temporal, taskQueue, time.Hour))
	require.NoError(t, worker.EnsureTrackingSchedule(ctx, s.temporal, taskQueue, 2*time.Hour))
	h := s.temporal.ScheduleClient().GetHandle(ctx, workflows.TrackingPollerScheduleID)
	t.Cleanup(func() { _ = h.Delete(context.Background()) })
	desc, err := h.Describe(ctx)
	require.NoError(t, err)
	require.Len(t, desc.Schedule.Spec.Intervals, 1)
	require.Equal(t, 2*time.Hour, desc.Schedule.Spec.Intervals[0].Every)
	require.Equal(t, enumspb.SCHEDULE_OVERLAP_POLICY_SKIP, desc.Schedule.Policy.Overlap)
	action, ok := desc.Schedule.Action.(*client.ScheduleWorkflowAction)
	require.True(t, ok)
	require.Equal(t, workflows.TrackingPollerWorkflowType, action.Workflow)
	require.Equal(t, taskQueue, action.TaskQueue)

	require.NoError(t, h.Trigger(ctx, client.ScheduleTriggerOptions{}))
	var started *client.ScheduleWorkflowExecution
	require.Eventually(t, func() bool {
		d, err := h.Describe(ctx)
		if err != nil || len(d.Info.RecentActions) == 0 {
			return false
		}
		started = d.Info.RecentActions[0].StartWorkflowResult
		return started != nil
	}, 20*time.Second, 100*time.Millisecond)
	var res3 workflows.TrackingPollerResult
	require.NoError(t, s.temporal.GetWorkflow(ctx, started.WorkflowID, started.FirstExecutionRunID).Get(ctx, &res3))
	require.Equal(t, 1, res3.Runs)
	t.Logf("tracking end to end in %s", time.Since(began).Round(time.Millisecond))
}
