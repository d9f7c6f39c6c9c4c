package activities

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/mocks"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// The reconciler's webhook event kind on a real database with a mocked
// Temporal client: an event processing whose run is missing or was
// terminated in the UI, and one received whose started run is gone, go back
// to received for the relay (one more attempt); one that used its attempts
// is failed with a tenant-safe reason; an open run, a young event and a
// received event the relay never started are left alone.
func TestReconcileWebhookEvents(t *testing.T) {
	st := storetest.New(t)
	fake := &fakePlatform{}
	f := newTaskFixture(t, st, fake, fake)
	ctx := context.Background()
	tc := mocks.NewClient(t)
	m := &MaintenanceActivities{Store: st, Temporal: tc}
	ids := map[string]uuid.UUID{}
	// kind -> status, age of relayed_at (0: never relayed), attempts
	setup := map[string]struct {
		status   string
		relayed  time.Duration
		created  time.Duration
		attempts int
	}{
		"missing":    {store.WebhookEventProcessing, 0, time.Hour, 1},
		"terminated": {store.WebhookEventProcessing, time.Hour, 2 * time.Hour, 3},
		"lost":       {store.WebhookEventReceived, time.Hour, 2 * time.Hour, 0},
		"exhausted":  {store.WebhookEventProcessing, time.Hour, 2 * time.Hour, WebhookEventMaxAttempts - 1},
		"running":    {store.WebhookEventProcessing, time.Hour, 2 * time.Hour, 1},
		"fresh":      {store.WebhookEventProcessing, time.Minute, 2 * time.Minute, 1},
		"unrelayed":  {store.WebhookEventReceived, 0, time.Hour, 0},
	}
	for k, s := range setup {
		id, inserted, err := store.InsertActiveBridgeWebhookEvent(ctx, st.Pool, store.WebhookEvent{
			ID: uuid.New(), OrganizationID: f.orgID, BridgeID: f.bridgeID, Topic: "ORDER_NOTIFY", DedupeKey: k,
			Payload: json.RawMessage(`{}`)})
		require.NoError(t, err)
		require.True(t, inserted)
		ids[k] = id
		var relayed *time.Time
		if s.relayed > 0 {
			r := time.Now().Add(-s.relayed)
			relayed = &r
		}
		_, err = st.Pool.Exec(ctx, `UPDATE webhook_events SET status = $2, relayed_at = $3, created_at = $4, attempts = $5,
			relay_after = now() + interval '1 hour' WHERE id = $1`, id, s.status, relayed, time.Now().Add(-s.created), s.attempts)
		require.NoError(t, err)
	}
	t.Cleanup(func() { // leave no stale row to the package's other reconciler tests
		_, _ = st.Pool.Exec(context.Background(), `UPDATE webhook_events SET status = 'processed' WHERE organization_id = $1`, f.orgID)
	})
	wf := func(k string) string { return "inbound-webhook/" + ids[k].String() }
	tc.On("DescribeWorkflowExecution", mock.Anything, wf("missing"), "").Return(nil, serviceerror.NewNotFound("no run")).Once()
	tc.On("DescribeWorkflowExecution", mock.Anything, wf("lost"), "").Return(nil, serviceerror.NewNotFound("no run")).Once()
	tc.On("DescribeWorkflowExecution", mock.Anything, wf("running"), "").
		Return(describeAs(wf("running"), enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, time.Now().Add(-time.Hour)), nil).Once()
	tc.On("DescribeWorkflowExecution", mock.Anything, wf("exhausted"), "").
		Return(describeAs(wf("exhausted"), enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT, time.Now().Add(-time.Hour)), nil).Once()
	tc.On("DescribeWorkflowExecution", mock.Anything, wf("terminated"), "").
		Return(describeAs(wf("terminated"), enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED, time.Now().Add(-time.Hour)), nil).Once()
	for _, k := range []string{"exhausted", "terminated"} {
		it := mocks.NewHistoryEventIterator(t)
		if k == "terminated" {
			it.On("HasNext").Return(true).Once()
			it.On("Next").Return(&historypb.HistoryEvent{
				EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
				Attributes: &historypb.HistoryEvent_WorkflowExecutionTerminatedEventAttributes{WorkflowExecutionTerminatedEventAttributes: &historypb.WorkflowExecutionTerminatedEventAttributes{
					Reason: "stuck", Identity: "ops@example.com",
				}},
			}, nil).Once()
		}
		it.On("HasNext").Return(false).Once()
		tc.On("GetWorkflowHistory", mock.Anything, wf(k), "run-"+wf(k), false, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT).Return(it).Once()
	}

	res, err := m.ReconcileKind(ctx, m.webhookEventKind())
	require.NoError(t, err)
	require.Equal(t, ReconcileRunsResult{Checked: 5, Restarted: 2, Failed: 1}, res)

	type want struct {
		status   string
		attempts int
		errText  string
	}
	for k, w := range map[string]want{
		"missing":    {store.WebhookEventReceived, 2, "previous attempt stopped: the workflow never started"},
		"lost":       {store.WebhookEventReceived, 1, "previous attempt stopped: the workflow never started"},
		"terminated": {store.WebhookEventReceived, 4, "previous attempt stopped: stopped by an operator: stuck"},
		"exhausted":  {store.WebhookEventFailed, WebhookEventMaxAttempts, "processing stopped: the workflow run timed out; the event was not processed"},
		"running":    {store.WebhookEventProcessing, 1, ""},
		"fresh":      {store.WebhookEventProcessing, 1, ""},
		"unrelayed":  {store.WebhookEventReceived, 0, ""},
	} {
		ev, err := store.WebhookEventByID(ctx, st.Pool, f.orgID, ids[k])
		require.NoError(t, err)
		require.Equal(t, w.status, ev.Status, k)
		require.Equal(t, w.attempts, ev.Attempts, k)
		if w.errText == "" {
			require.Nil(t, ev.Error, k)
			continue
		}
		require.Equal(t, w.errText, *ev.Error, k)
		require.NotContains(t, *ev.Error, "ops@example.com", "the operator's identity is logged, not stored")
		if w.status == store.WebhookEventReceived {
			require.Nil(t, ev.RelayedAt, k)
			require.Nil(t, ev.ProcessedAt, k)
		} else {
			require.NotNil(t, ev.ProcessedAt, k)
		}
	}
	// A re-queued event is the relay's at once.
	refs, err := store.ClaimWebhookEvents(ctx, st.Pool, 10, time.Minute)
	require.NoError(t, err)
	claimed := map[uuid.UUID]bool{}
	for _, r := range refs {
		claimed[r.ID] = true
	}
	require.True(t, claimed[ids["missing"]] && claimed[ids["lost"]] && claimed[ids["terminated"]], "re-queued events are claimable")
	require.False(t, claimed[ids["unrelayed"]], "relay_after of an untouched event is unchanged")

	// Nothing stale is left: a second pass asks Temporal about the open run only.
	tc.On("DescribeWorkflowExecution", mock.Anything, wf("running"), "").
		Return(describeAs(wf("running"), enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, time.Now().Add(-time.Hour)), nil).Once()
	res, err = m.ReconcileKind(ctx, m.webhookEventKind())
	require.NoError(t, err)
	require.Equal(t, ReconcileRunsResult{Checked: 1}, res)
}

// A shipping hub's SHIP_NOTIFY re-fetches the shipments' orders and stores
// the shipments too (as grab-shipments does), attached to their orders; a
// shipment of an order the hub no longer has is stored unattached; a
// repeated run changes nothing.
func TestProcessHubShipNotifyStoresShipments(t *testing.T) {
	st := storetest.New(t)
	now := time.Now()
	fake := &fakePlatform{orders: []platforms.Order{fakeOrder(1, now), fakeOrder(2, now)}}
	fake.shipments = []platforms.Shipment{
		{ExternalID: "sh-1", OrderExternalID: "5001", TrackingNumber: "1Z001", CarrierCode: "carrier_a", ServiceCode: "ground", CreatedAt: now, Cost: 7.5},
		{ExternalID: "sh-2", OrderExternalID: "5002", TrackingNumber: "1Z002", CarrierCode: "carrier_a", ServiceCode: "ground", CreatedAt: now},
		{ExternalID: "sh-3", OrderExternalID: "9999", TrackingNumber: "1Z003", CarrierCode: "carrier_b", CreatedAt: now},
	}
	f := newTaskFixture(t, st, fake, fake)
	ctx := context.Background()
	wa := &WebhookActivities{Store: st, Secrets: f.acts.Secrets, Platforms: f.acts.Platforms}
	id, _, err := store.InsertActiveBridgeWebhookEvent(ctx, st.Pool, store.WebhookEvent{
		ID: uuid.New(), OrganizationID: f.orgID, BridgeID: f.bridgeID, Topic: "SHIP_NOTIFY", DedupeKey: "batch-1",
		Payload: json.RawMessage(`{"resource_url":"https://hub.example/shipments?batchId=1","resource_type":"SHIP_NOTIFY"}`)})
	require.NoError(t, err)
	in := WebhookEventInput{OrganizationID: f.orgID.String(), EventID: id.String()}
	res, err := wa.ProcessWebhookEvent(ctx, in)
	require.NoError(t, err)
	require.Len(t, res.OrderIDs, 2)
	require.Len(t, res.CreatedOrderIDs, 2)
	require.Equal(t, &store.UpsertCounts{Fetched: 3, Created: 3}, res.Shipments)

	attached := map[string]string{}
	rows, err := st.Pool.Query(ctx, `SELECT s.external_id, coalesce(o.external_id, ''), s.tracking_number FROM shipments s
		LEFT JOIN orders o ON o.id = s.order_id WHERE s.bridge_id = $1`, f.bridgeID)
	require.NoError(t, err)
	for rows.Next() {
		var sh, ord, trk string
		require.NoError(t, rows.Scan(&sh, &ord, &trk))
		attached[sh] = ord + "/" + trk
	}
	require.NoError(t, rows.Err())
	require.Equal(t, map[string]string{"sh-1": "5001/1Z001", "sh-2": "5002/1Z002", "sh-3": "/1Z003"}, attached)

	ev, err := store.WebhookEventByID(ctx, st.Pool, f.orgID, id)
	require.NoError(t, err)
	require.Equal(t, store.WebhookEventProcessed, ev.Status)

	// A redelivered event (its own row) finds everything stored already.
	id2, _, err := store.InsertActiveBridgeWebhookEvent(ctx, st.Pool, store.WebhookEvent{
		ID: uuid.New(), OrganizationID: f.orgID, BridgeID: f.bridgeID, Topic: "ITEM_SHIP_NOTIFY", DedupeKey: "batch-2",
		Payload: json.RawMessage(`{"resource_url":"https://hub.example/shipments?batchId=2"}`)})
	require.NoError(t, err)
	res, err = wa.ProcessWebhookEvent(ctx, WebhookEventInput{OrganizationID: f.orgID.String(), EventID: id2.String()})
	require.NoError(t, err)
	require.Empty(t, res.CreatedOrderIDs)
	require.Equal(t, &store.UpsertCounts{Fetched: 3, Unchanged: 3}, res.Shipments)
	var n int
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT count(*) FROM shipments WHERE bridge_id = $1`, f.bridgeID).Scan(&n))
	require.Equal(t, 3, n)
}

// An order an event changes triggers the order_updated dispatchers (Part 2,
// Events step 5); an event that changes nothing, or an order already
// assigned to the destination, adds no assignment.
func TestProcessWebhookOrderUpdatedTriggersDispatchers(t *testing.T) {
	st := storetest.New(t)
	now := time.Now()
	fake := &fakePlatform{orders: []platforms.Order{fakeOrder(1, now)}}
	f := newTaskFixture(t, st, fake, fake)
	ctx := context.Background()
	wa := &WebhookActivities{Store: st, Secrets: f.acts.Secrets, Platforms: f.acts.Platforms, Hooks: &rules.Hooks{Store: st}}
	process := func(key string) ProcessWebhookEventResult {
		id, _, err := store.InsertActiveBridgeWebhookEvent(ctx, st.Pool, store.WebhookEvent{
			ID: uuid.New(), OrganizationID: f.orgID, BridgeID: f.bridgeID, Topic: "ORDER_NOTIFY", DedupeKey: key,
			Payload: json.RawMessage(`{"resource_url":"https://hub.example/orders?orderId=5001","resource_type":"ORDER_NOTIFY"}`)})
		require.NoError(t, err)
		res, err := wa.ProcessWebhookEvent(ctx, WebhookEventInput{OrganizationID: f.orgID.String(), EventID: id.String()})
		require.NoError(t, err)
		return res
	}
	assigned := func() int {
		var n int
		require.NoError(t, st.Pool.QueryRow(ctx, `SELECT count(*) FROM dispatch_assignments WHERE organization_id = $1`, f.orgID).Scan(&n))
		return n
	}
	require.Len(t, process("e1").OrderIDs, 1)

	dest := uuid.New()
	_, err := st.Pool.Exec(ctx, `INSERT INTO bridges (id, organization_id, type, name) VALUES ($1, $2, 'shipping_hub_a', 'Hub')`, dest, f.orgID)
	require.NoError(t, err)
	_, err = store.CreateDispatcher(ctx, st, store.Dispatcher{ID: uuid.New(), OrganizationID: f.orgID, Name: "Updated to hub",
		SourceBridgeIDs: []uuid.UUID{f.bridgeID}, DestinationBridgeID: dest, TriggerOn: []string{"order_updated"},
		Conditions: json.RawMessage(`[{"field":"status","operator":"exists"}]`), MatchMode: "all", IsActive: true})
	require.NoError(t, err)

	process("e2") // nothing changed on the platform
	require.Zero(t, assigned())
	fake.orders[0].Tags = []string{"gift"}
	process("e3")
	require.Equal(t, 1, assigned())
	fake.orders[0].Tags = []string{"gift", "rush"}
	process("e4")
	require.Equal(t, 1, assigned(), "already assigned to that destination")
}
