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
	"github.com/fos-dev/fos/carriers/carrierstest"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/worker"
	"github.com/fos-dev/fos/workflows"
)

// shpStack is the service with the sandbox carriers in the API and worker.
type shpStack struct {
	*stack
	store *store.Store
	box   *secrets.Box
}

// No real carrier publishes a delivery-change API, so the built-in adapters
// refuse actions (api TestShipmentActionUnsupportedCarrier); carrier_a here
// is the test double of a carrier that has one, on the real adapter and
// sandbox, so the action path runs end to end.
func startShipments(t *testing.T) *shpStack {
	s := start(t, func(r *carriers.Registry) *carriers.Registry {
		return carrierstest.WithDeliveryChanges(r, carriers.CarrierA)
	})
	return &shpStack{stack: s, store: s.store, box: s.box}
}

// waitForAction polls an action record until it leaves pending.
func (s *shpStack) waitForAction(key, shipmentID, actionID string) map[string]any {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		rec := data(s.mustCall(200, key, "GET", "/api/v1/shipments/"+shipmentID+"/actions/"+actionID, nil))
		if rec["status"] != "pending" {
			return rec
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("action %s still pending after 20s", actionID)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// shipmentInTransit signs up an organization with a shipments API key, a
// carrier_a account and an order, buys the order's label and moves the
// shipment in transit, the state actions are allowed in.
func (s *shpStack) shipmentInTransit(t *testing.T) (key, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	signup := data(s.mustCall(201, "", "POST", "/api/v1/auth/signup", map[string]any{
		"email": "e2e-" + uuid.NewString()[:8] + "@example.com", "password": "correct horse", "first_name": "Ada", "last_name": "Lovelace", "organization_name": "E2E Ship",
	}))
	orgID := signup["organization"].(map[string]any)["id"].(string)
	code, out := s.call(signup["access_token"].(string), orgID, "POST", "/api/v1/api-keys", map[string]any{
		"name": "e2e", "scopes": []string{"shipments:read", "shipments:write"},
	})
	require.Equal(t, 201, code, "%v", out)
	key = data(out)["key"].(string)

	// A carrier_a account (the carrier accounts API is another part) and an order.
	acct := uuid.New()
	sealed, err := s.box.SealJSON(map[string]any{"accountNumber": "123456789", "childKey": "k", "childSecret": "s"},
		store.CarrierAccountCredentialsAD(uuid.MustParse(orgID), acct))
	require.NoError(t, err)
	_, err = s.store.Pool.Exec(ctx, `INSERT INTO carrier_accounts (id, organization_id, name, carrier, credentials, supports_rating, supports_pickup, supports_labels)
		VALUES ($1, $2, 'FedEx', 'carrier_a', $3, true, true, true)`, acct, orgID, sealed)
	require.NoError(t, err)
	orderID := uuid.New()
	_, err = s.store.Pool.Exec(ctx, `INSERT INTO orders (id, organization_id, external_id, status, customer, customer_email, shipping_address, line_items, totals, ordered_at)
		VALUES ($1, $2, 'e2e-1', 'confirmed', '{"email": "c@example.com"}', 'c@example.com',
		        '{"name": "Chloe Chen", "address1": "1 Pike St", "city": "Seattle", "provinceCode": "WA", "zip": "98101", "countryCode": "US"}',
		        '[]', '{"total": 0}', now())`, orderID, orgID)
	require.NoError(t, err)

	sh := data(s.mustCall(201, key, "POST", "/api/v1/shipments", map[string]any{
		"order_id": orderID.String(), "carrier_account_id": acct.String(), "service": "FEDEX_GROUND",
		"parcels":   []any{map[string]any{"length": 12, "width": 10, "height": 8, "weight": 5, "unit": "lb"}},
		"ship_from": map[string]any{"street": "10 Main St", "city": "Memphis", "state": "TN", "zip": "38103"},
		"ship_date": time.Now().UTC().AddDate(0, 0, -1).Format("2006-01-02"),
	}))
	id = sh["id"].(string)
	s.mustCall(200, key, "PATCH", "/api/v1/shipments/"+id, map[string]any{"status": "in_transit"})
	return key, id
}

func TestShipmentActionEndToEnd(t *testing.T) {
	s := startShipments(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	key, id := s.shipmentInTransit(t)

	// A hold goes to the carrier and completes; the shipment stays in transit.
	out := s.mustCall(202, key, "POST", "/api/v1/shipments/"+id+"/actions", map[string]any{
		"actionType": "hold", "config": map[string]any{"reason": "customer_request", "notes": "call first"},
	})
	require.Equal(t, "pending", out["status"])
	actionID := out["actionId"].(string)
	rec := s.waitForAction(key, id, actionID)
	require.Equal(t, "completed", rec["status"], "%v", rec)
	require.Regexp(t, `^DM\d{10}$`, rec["confirmationNumber"])
	require.NotEmpty(t, rec["messages"])
	require.Equal(t, "in_transit", data(s.mustCall(200, key, "GET", "/api/v1/shipments/"+id, nil))["status"])
	var res workflows.ShipmentActionResult
	require.NoError(t, s.temporal.GetWorkflow(ctx, workflows.ShipmentActionWorkflowID(actionID), "").Get(ctx, &res))
	require.Equal(t, "completed", res.Status)
	desc, err := s.temporal.DescribeWorkflowExecution(ctx, workflows.ShipmentActionWorkflowID(actionID), "")
	require.NoError(t, err)
	require.Contains(t, desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields(), "OrganizationId")
	writeHistory(t, ctx, s.temporal, workflows.ShipmentActionWorkflowID(actionID), desc.GetWorkflowExecutionInfo().GetExecution().GetRunId(), "shipment_action_history.json")

	// The carrier does not know the number: the record fails with its error.
	s.mustCall(200, key, "PATCH", "/api/v1/shipments/"+id, map[string]any{"tracking_number": "700000000000"})
	out = s.mustCall(202, key, "POST", "/api/v1/shipments/"+id+"/actions", map[string]any{"actionType": "instructions", "instructions": "back door"})
	rec = s.waitForAction(key, id, out["actionId"].(string))
	require.Equal(t, "failed", rec["status"], "%v", rec)
	require.Contains(t, rec["error"], "carrier_a")
	run := s.temporal.GetWorkflow(ctx, workflows.ShipmentActionWorkflowID(out["actionId"].(string)), "")
	require.Error(t, run.Get(ctx, nil), "the run shows as failed")
	d, err := s.temporal.DescribeWorkflowExecution(ctx, run.GetID(), "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, d.GetWorkflowExecutionInfo().GetStatus())
	writeHistory(t, ctx, s.temporal, run.GetID(), d.GetWorkflowExecutionInfo().GetExecution().GetRunId(), "shipment_action_failed_history.json")
}

func TestPickupCompletionScheduleEndToEnd(t *testing.T) {
	s := startShipments(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	org := uuid.New()
	_, err := s.store.Pool.Exec(ctx, `INSERT INTO organizations (id, name, slug) VALUES ($1, 'P', $2)`, org, "p-"+org.String())
	require.NoError(t, err)
	past, future := uuid.New(), uuid.New()
	for id, date := range map[uuid.UUID]string{past: time.Now().UTC().AddDate(0, 0, -1).Format("2006-01-02"), future: time.Now().UTC().AddDate(0, 0, 1).Format("2006-01-02")} {
		_, err := s.store.Pool.Exec(ctx, `INSERT INTO pickups (id, organization_id, carrier, status, pickup_address, pickup_date, ready_time, close_time)
			VALUES ($1, $2, 'carrier_a', 'confirmed', '{}', $3, '09:00', '17:00')`, id, org, date)
		require.NoError(t, err)
	}

	// Created, it runs at once; ensuring it again is a no-op update.
	require.NoError(t, worker.EnsurePickupCompletionSchedule(ctx, s.temporal, taskQueue))
	require.NoError(t, worker.EnsurePickupCompletionSchedule(ctx, s.temporal, taskQueue))
	deadline := time.Now().Add(20 * time.Second)
	for {
		p, err := store.PickupByID(ctx, s.store.Pool, org, past)
		require.NoError(t, err)
		if p.Status == store.PickupCompleted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the past pickup was not completed by the schedule within 20s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	p, err := store.PickupByID(ctx, s.store.Pool, org, future)
	require.NoError(t, err)
	require.Equal(t, store.PickupConfirmed, p.Status)

	desc, err := s.temporal.ScheduleClient().GetHandle(ctx, workflows.PickupCompletionScheduleID).Describe(ctx)
	require.NoError(t, err)
	require.Equal(t, worker.PickupCompletionInterval, desc.Schedule.Spec.Intervals[0].Every)
	action := desc.Schedule.Action.(*client.ScheduleWorkflowAction)
	require.Equal(t, workflows.PickupCompletionWorkflowType, action.Workflow)
	require.Equal(t, taskQueue, action.TaskQueue)
	require.Equal(t, enumspb.SCHEDULE_OVERLAP_POLICY_SKIP, desc.Schedule.Policy.Overlap)
	// Its run says what each fire does (the schedule's note) in the UI,
	// and is a recorded history of the replay tests (FOS_UPDATE_HISTORY=1).
	require.NotEmpty(t, desc.Info.RecentActions)
	runID := desc.Info.RecentActions[0].StartWorkflowResult.WorkflowID
	s.waitClosed(runID)
	ui := describeForUI(t, ctx, s.temporal, runID)
	require.Contains(t, ui.Summary, "marks confirmed pickups whose date has passed completed")
	writeHistory(t, ctx, s.temporal, runID, "", "pickup_completion_history.json")
}

// With the built-in carrier_a adapter (no delivery-change API, as the real
// carrier) an action is still accepted and recorded pending, as the
// specification says; its run ends the record failed with the reason.
func TestShipmentActionUnsupportedByCarrier(t *testing.T) {
	st := start(t)
	s := &shpStack{stack: st, store: st.store, box: st.box}
	key, id := s.shipmentInTransit(t)
	out := s.mustCall(202, key, "POST", "/api/v1/shipments/"+id+"/actions", map[string]any{"actionType": "instructions", "instructions": "back door"})
	require.Equal(t, "pending", out["status"])
	rec := s.waitForAction(key, id, out["actionId"].(string))
	require.Equal(t, "failed", rec["status"], "%v", rec)
	require.Contains(t, rec["error"], "not support")
	require.Equal(t, "in_transit", data(s.mustCall(200, key, "GET", "/api/v1/shipments/"+id, nil))["status"])
}
