package activities

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/mocks"
	"go.temporal.io/sdk/testsuite"

	"github.com/fos-dev/fos/store"
)

// Head-of-line blocking (issue 22 item 7): 250 carrier registrations
// legitimately waiting (their runs are open), older than the one whose
// run is lost, do not hide it: the scan goes by when each row was last
// checked, so one reconcile run finds the lost one; the next run looks at
// the lost one's neighbours in turn, not the same 200 again.
func TestReconcileFindsLostRowBehindWaitingOnes(t *testing.T) {
	f := newRCFixture(t)
	ctx := context.Background()
	const waiting = 250
	_, err := f.st.Pool.Exec(ctx, `INSERT INTO carrier_accounts (id, organization_id, name, carrier, status, updated_at)
SELECT gen_random_uuid(), $1, 'reg ' || g, 'carrier_a', 'pending', now() - interval '2 hours' + g * interval '1 second'
  FROM generate_series(1, $2) g`, f.orgID, waiting)
	require.NoError(t, err)
	lost := uuid.New()
	_, err = f.st.Pool.Exec(ctx, `INSERT INTO carrier_accounts (id, organization_id, name, carrier, status, updated_at)
 VALUES ($1, $2, 'lost', 'carrier_a', 'pending', now() - interval '1 hour')`, lost, f.orgID)
	require.NoError(t, err)

	tc := mocks.NewClient(t)
	lostID := "carrier-registration/" + lost.String()
	tc.On("DescribeWorkflowExecution", mock.Anything, lostID, "").Return(nil, serviceerror.NewNotFound("no run")).Once()
	tc.On("DescribeWorkflowExecution", mock.Anything, mock.MatchedBy(func(id string) bool { return id != lostID }), "").
		Return(describeAs("open", enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, time.Now().Add(-2*time.Hour)), nil)
	a := &MaintenanceActivities{Store: f.st, Temporal: tc}

	// Before: the oldest-first scan of 200 never reaches it.
	old, err := f.st.Pool.Query(ctx, `SELECT id FROM carrier_accounts WHERE status = 'pending' ORDER BY updated_at LIMIT $1`, ReconcileBatch)
	require.NoError(t, err)
	var oldest []uuid.UUID
	for old.Next() {
		var id uuid.UUID
		require.NoError(t, old.Scan(&id))
		oldest = append(oldest, id)
	}
	require.NoError(t, old.Err())
	require.NotContains(t, oldest, lost, "an age-ordered scan hides it behind the waiting rows")

	res, err := a.ReconcileKind(ctx, a.carrierRegistrationKind())
	require.NoError(t, err)
	require.Equal(t, 1, res.Failed, "the lost registration is found in one run: %+v", res)
	acct, err := store.CarrierAccountByID(ctx, f.st.Pool, f.orgID, lost)
	require.NoError(t, err)
	require.Equal(t, "error", acct.Status)

	var unchecked int
	require.NoError(t, f.st.Pool.QueryRow(ctx, `SELECT count(*) FROM carrier_accounts
 WHERE organization_id = $1 AND status = 'pending' AND reconcile_checked_at IS NULL`, f.orgID).Scan(&unchecked))
	require.Zero(t, unchecked, "every waiting row was looked at and marked")

	// A new lost row behind them all is found by the next run although
	// every waiting row is older: they were just checked.
	lost2 := uuid.New()
	_, err = f.st.Pool.Exec(ctx, `INSERT INTO carrier_accounts (id, organization_id, name, carrier, status, updated_at)
 VALUES ($1, $2, 'lost2', 'carrier_a', 'pending', now() - interval '30 minutes')`, lost2, f.orgID)
	require.NoError(t, err)
	rows, err := store.StalePendingCarrierAccounts(ctx, f.st.Pool, time.Now().Add(-CarrierRegistrationStartBound), 1)
	require.NoError(t, err)
	require.Equal(t, lost2, rows[0].ID, "never checked comes first")
}

// A destination's backlog of 250 pending assignments waits on its one
// open drainer: described once, not 250 times, and a lost single-run
// assignment behind the backlog is restarted in the same run.
func TestReconcileDispatchBacklogDescribesDrainerOnce(t *testing.T) {
	f := newRCFixture(t)
	ctx := context.Background()
	hub, shop := uuid.New(), uuid.New()
	_, err := f.st.Pool.Exec(ctx, `INSERT INTO bridges (id, organization_id, type, name) VALUES ($1, $3, 'shipping_hub_a', 'Hub'), ($2, $3, 'storefront_a', 'Shop')`, hub, shop, f.orgID)
	require.NoError(t, err)
	_, err = f.st.Pool.Exec(ctx, `
WITH o AS (
    INSERT INTO orders (id, organization_id, bridge_id, external_id, status, customer, customer_email, line_items, totals, ordered_at)
    SELECT gen_random_uuid(), $1, $2, 'o' || g, 'confirmed', '{}', 'a@example.com', '[]', '{}', now() FROM generate_series(1, 251) g
    RETURNING id, external_id
)
INSERT INTO dispatch_assignments (id, organization_id, order_id, destination_bridge_id, status, claimed_by, updated_at)
SELECT gen_random_uuid(), $1, o.id, $3,
       CASE WHEN o.external_id = 'o251' THEN 'processing' ELSE 'pending' END,
       NULL, now() - interval '1 hour' + (CASE WHEN o.external_id = 'o251' THEN interval '10 minutes' ELSE interval '0' END)
  FROM o`, f.orgID, shop, hub)
	require.NoError(t, err)
	var lost uuid.UUID
	require.NoError(t, f.st.Pool.QueryRow(ctx, `UPDATE dispatch_assignments SET claimed_by = 'dispatch/' || id
 WHERE organization_id = $1 AND status = 'processing' RETURNING id`, f.orgID).Scan(&lost))

	tc := mocks.NewClient(t)
	drainer := "dispatch-batch/" + hub.String()
	tc.On("DescribeWorkflowExecution", mock.Anything, drainer, "").
		Return(describeAs(drainer, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, time.Now().Add(-2*time.Hour)), nil).Once()
	tc.On("DescribeWorkflowExecution", mock.Anything, "dispatch/"+lost.String(), "").Return(nil, serviceerror.NewNotFound("no run")).Once()
	var restarted []uuid.UUID
	a := &MaintenanceActivities{Store: f.st, Temporal: tc,
		StartDispatch: func(_ context.Context, _, id uuid.UUID) error { restarted = append(restarted, id); return nil },
		DrainDispatch: func(context.Context, uuid.UUID, uuid.UUID) error { t.Fatal("the drainer is open"); return nil },
	}
	res, err := a.ReconcileKind(ctx, a.dispatchKind())
	require.NoError(t, err)
	require.Equal(t, 251, res.Checked)
	require.Equal(t, []uuid.UUID{lost}, restarted)
}

// Head-of-line blocking for shipments, pickups and shipment actions
// (issue 22 item 7): 600 of each legitimately waiting (more than one scan
// page: a batch's labels wait on the batch's open run, pickups and
// actions on their own open runs), all older than a lost row of each
// kind, do not hide the lost ones: one ReconcileShipments run settles
// them, describes the batch's run once, and marks every row it looked
// at, so a row lost later is looked at first by the next run. (An
// oldest-first scan of 500 never reached them.)
func TestReconcileShipmentsFindsLostRowsBehindWaitingOnes(t *testing.T) {
	f := newShpActFixture(t)
	ctx := context.Background()
	tc := mocks.NewClient(t)
	f.acts.Temporal = tc
	const waiting = 600
	t.Cleanup(func() {
		// The package's tests share the database: the waiting rows would
		// be other reconciler tests' rows to describe.
		for _, table := range []string{"shipment_actions", "pickups", "shipments"} {
			_, err := f.st.Pool.Exec(context.Background(), `DELETE FROM `+table+` WHERE organization_id = $1 AND status = 'pending'`, f.orgID)
			require.NoError(t, err)
		}
	})
	batch := "operation/batch-" + uuid.NewString()
	_, err := f.st.Pool.Exec(ctx, `
INSERT INTO shipments (id, organization_id, carrier_account_id, carrier, service, status, created_at, purchase_owner, label_requested_at)
SELECT gen_random_uuid(), $1, $2, 'carrier_a', 'FEDEX_GROUND', 'pending', now() - interval '3 hours' + g * interval '1 second', $3, now() - interval '3 hours'
  FROM generate_series(1, $4) g`, f.orgID, f.accountID, batch, waiting)
	require.NoError(t, err)
	_, err = f.st.Pool.Exec(ctx, `
INSERT INTO pickups (id, organization_id, carrier_account_id, carrier, status, pickup_address, pickup_date, ready_time, close_time, created_at)
SELECT gen_random_uuid(), $1, $2, 'carrier_a', 'pending', '{}', '2030-01-07', '09:00', '17:00', now() - interval '3 hours' + g * interval '1 second'
  FROM generate_series(1, $3) g`, f.orgID, f.accountID, waiting)
	require.NoError(t, err)
	_, err = f.st.Pool.Exec(ctx, `
INSERT INTO shipment_actions (id, organization_id, shipment_id, action_type, status, shipment_status, created_at)
SELECT gen_random_uuid(), $1, $2, 'hold', 'pending', 'in_transit', now() - interval '3 hours' + g * interval '1 second'
  FROM generate_series(1, $3) g`, f.orgID, f.shipmentID, waiting)
	require.NoError(t, err)

	lostShipment, lostPickup, lostAction := uuid.New(), uuid.New(), uuid.New()
	_, err = f.st.Pool.Exec(ctx, `INSERT INTO shipments (id, organization_id, carrier_account_id, carrier, service, status, created_at)
 VALUES ($1, $2, $3, 'carrier_a', 'FEDEX_GROUND', 'pending', now() - interval '1 hour')`, lostShipment, f.orgID, f.accountID)
	require.NoError(t, err)
	_, err = f.st.Pool.Exec(ctx, `INSERT INTO pickups (id, organization_id, carrier_account_id, carrier, status, pickup_address, pickup_date, ready_time, close_time, created_at)
 VALUES ($1, $2, $3, 'carrier_a', 'pending', '{}', '2030-01-07', '09:00', '17:00', now() - interval '1 hour')`, lostPickup, f.orgID, f.accountID)
	require.NoError(t, err)
	_, err = f.st.Pool.Exec(ctx, `INSERT INTO shipment_actions (id, organization_id, shipment_id, action_type, status, shipment_status, created_at)
 VALUES ($1, $2, $3, 'hold', 'pending', 'in_transit', now() - interval '1 hour')`, lostAction, f.orgID, f.shipmentID)
	require.NoError(t, err)

	// Before: the oldest-first scan of 500 rows never reaches them.
	for table, lost := range map[string]uuid.UUID{"shipments": lostShipment, "pickups": lostPickup, "shipment_actions": lostAction} {
		var reached bool
		require.NoError(t, f.st.Pool.QueryRow(ctx, `SELECT $1 = ANY (array(SELECT id FROM `+table+
			` WHERE status = 'pending' ORDER BY created_at LIMIT 500))`, lost).Scan(&reached))
		require.False(t, reached, "an age-ordered scan hides the lost %s row", table)
	}

	lostIDs := map[string]bool{
		ShipmentLabelIDPrefix + lostShipment.String(): true, PickupBookingIDPrefix + lostPickup.String(): true,
		ShipmentActionIDPrefix + lostAction.String(): true,
	}
	for id := range lostIDs {
		tc.On("DescribeWorkflowExecution", mock.Anything, id, "").Return(nil, serviceerror.NewNotFound("workflow not found")).Once()
	}
	// The batch's run is described once for its 600 shipments.
	tc.On("DescribeWorkflowExecution", mock.Anything, batch, "").
		Return(describeAs(batch, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, time.Now().Add(-4*time.Hour)), nil).Once()
	// Every other pickup and action (and rows other tests left) runs.
	tc.On("DescribeWorkflowExecution", mock.Anything, mock.MatchedBy(func(id string) bool { return !lostIDs[id] && id != batch }), "").
		Return(describeAs("open", enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, time.Now().Add(-4*time.Hour)), nil)

	res := f.reconcileShipments()
	require.Equal(t, 2, res.Removed, "the lost shipment and pickup (never started) are removed: %+v", res)
	require.Equal(t, 1, res.Failed, "the lost action fails: %+v", res)
	require.GreaterOrEqual(t, res.Running, 3*waiting)

	_, err = store.ShipmentByID(ctx, f.st.Pool, f.orgID, lostShipment)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = store.PickupByID(ctx, f.st.Pool, f.orgID, lostPickup)
	require.ErrorIs(t, err, store.ErrNotFound)
	var actionStatus string
	require.NoError(t, f.st.Pool.QueryRow(ctx, `SELECT status FROM shipment_actions WHERE id = $1`, lostAction).Scan(&actionStatus))
	require.Equal(t, "failed", actionStatus)

	for _, table := range []string{"shipments", "pickups", "shipment_actions"} {
		var unchecked int
		require.NoError(t, f.st.Pool.QueryRow(ctx, `SELECT count(*) FROM `+table+`
 WHERE organization_id = $1 AND status = 'pending' AND reconcile_checked_at IS NULL AND created_at < now() - interval '15 minutes'`, f.orgID).Scan(&unchecked))
		require.Zero(t, unchecked, "every waiting %s row was looked at and marked", table)
	}
	// A shipment lost later, newer than all the waiting ones, comes first
	// in the next scan: they were just checked.
	lost2 := uuid.New()
	_, err = f.st.Pool.Exec(ctx, `INSERT INTO shipments (id, organization_id, carrier_account_id, carrier, service, status, created_at)
 VALUES ($1, $2, $3, 'carrier_a', 'FEDEX_GROUND', 'pending', now() - interval '30 minutes')`, lost2, f.orgID, f.accountID)
	require.NoError(t, err)
	next, err := store.StalePendingShipments(ctx, f.st.Pool, time.Now().Add(-ReconcileBound), 1)
	require.NoError(t, err)
	require.Equal(t, lost2, next[0].ID, "never checked comes first")
}

// reconcileShipments runs ReconcileShipments once as an activity.
func (f *shpActFixture) reconcileShipments() ReconcileShipmentsResult {
	f.t.Helper()
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	env.RegisterActivity(f.acts)
	val, err := env.ExecuteActivity(f.acts.ReconcileShipments, ReconcileShipmentsInput{})
	require.NoError(f.t, err)
	var res ReconcileShipmentsResult
	require.NoError(f.t, val.Get(&res))
	return res
}
