package store_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

func dispTestBridge(t testing.TB, s *store.Store, orgID uuid.UUID) uuid.UUID {
	t.Helper()
	id := uuid.New()
	_, err := s.Pool.Exec(t.Context(), `INSERT INTO bridges (id, organization_id, type, name) VALUES ($1, $2, 'shipping_hub_a', 'Hub')`, id, orgID)
	require.NoError(t, err)
	return id
}

func dispTestNew(orgID, src, dst uuid.UUID, name string, sets ...uuid.UUID) store.Dispatcher {
	return store.Dispatcher{ID: uuid.New(), OrganizationID: orgID, Name: name, SourceBridgeIDs: []uuid.UUID{src}, DestinationBridgeID: dst,
		Conditions: json.RawMessage(`[{"field":"status","operator":"exists"}]`), MatchMode: "all", IsActive: true, ConditionSetIDs: sets}
}

func TestDispatchersAndAssignments(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org, shop := orderTestOrg(t, s)
	other, otherShop := orderTestOrg(t, s)
	hub := dispTestBridge(t, s, org)
	otherSet := csTestSet(t, s, other, "Theirs", "string")

	// References must be the organization's.
	_, err := store.CreateDispatcher(ctx, s, dispTestNew(org, otherShop, hub, "x"))
	require.ErrorIs(t, err, store.ErrDispatcherSource)
	_, err = store.CreateDispatcher(ctx, s, dispTestNew(org, shop, dispTestBridge(t, s, other), "x"))
	require.ErrorIs(t, err, store.ErrDispatcherDestination)
	_, err = store.CreateDispatcher(ctx, s, dispTestNew(org, shop, hub, "x", otherSet.ID))
	var missing *store.MissingConditionSetsError
	require.ErrorAs(t, err, &missing)
	require.Equal(t, []uuid.UUID{otherSet.ID}, missing.IDs)

	set := csTestSet(t, s, org, "VIP", "string")
	d, err := store.CreateDispatcher(ctx, s, dispTestNew(org, shop, hub, "To hub", set.ID))
	require.NoError(t, err)
	require.Equal(t, []string{"order_created"}, d.TriggerOn)
	require.JSONEq(t, `{}`, string(d.DestinationConfig))
	_, err = store.CreateDispatcher(ctx, s, dispTestNew(org, shop, hub, "To hub"))
	require.ErrorIs(t, err, store.ErrConflict)
	require.ErrorIs(t, store.DeleteConditionSet(ctx, s, org, set.ID), store.ErrConditionSetInUse)

	act, err := store.ActiveDispatchers(ctx, s.Pool, org, shop, "order_created")
	require.NoError(t, err)
	require.Len(t, act, 1)
	act, err = store.ActiveDispatchers(ctx, s.Pool, org, shop, "order_updated")
	require.NoError(t, err)
	require.Empty(t, act)
	act, err = store.ActiveDispatchers(ctx, s.Pool, org, hub, "")
	require.NoError(t, err)
	require.Empty(t, act, "the hub is no source")

	// 200 orders assigned in one statement; repeats, duplicates and
	// another organization's orders are skipped.
	var ids []uuid.UUID
	for i := range 200 {
		o, err := store.CreateOrder(ctx, s.Pool, orderTestNew(org, shop, fmt.Sprint("d", i)))
		require.NoError(t, err)
		ids = append(ids, o.ID)
	}
	foreign, err := store.CreateOrder(ctx, s.Pool, orderTestNew(other, otherShop, "f"))
	require.NoError(t, err)
	as, err := store.CreateAssignments(ctx, s.Pool, d, ids[:150], map[string]any{"trigger": "manual"})
	require.NoError(t, err)
	require.Len(t, as, 150)
	require.Equal(t, ids[0], as[0].OrderID, "in the order given")
	require.Equal(t, store.AssignmentPending, as[0].Status)
	as, err = store.CreateAssignments(ctx, s.Pool, d, append(append([]uuid.UUID{foreign.ID}, ids...), ids[199]), nil)
	require.NoError(t, err)
	require.Len(t, as, 50)
	got, err := store.DispatcherByID(ctx, s.Pool, org, d.ID)
	require.NoError(t, err)
	require.Equal(t, 200, got.OrdersAssigned)
	require.NotNil(t, got.LastAssignedAt)

	list, total, err := store.ListAssignments(ctx, s.Pool, org, d.ID, "", 10, 0)
	require.NoError(t, err)
	require.Equal(t, 200, total)
	require.Len(t, list, 10)
	_, total, err = store.ListAssignments(ctx, s.Pool, other, d.ID, "", 10, 0)
	require.NoError(t, err)
	require.Zero(t, total)

	// Busy: delete refused. Begin, finish with the order marked.
	require.ErrorIs(t, store.DeleteDispatcher(ctx, s, org, d.ID), store.ErrDispatcherBusy)
	a := list[0]
	begun, err := store.BeginAssignment(ctx, s.Pool, org, a.ID)
	require.NoError(t, err)
	require.Equal(t, store.AssignmentProcessing, begun.Status)
	ok, err := store.FinishAssignment(ctx, s, org, a.ID, store.AssignmentOutcome{Status: store.AssignmentCompleted, SentTo: "fulfillment",
		TaskName: "push-order", WorkflowID: "dispatch/" + a.ID.String(), Output: map[string]any{"externalOrderId": "9"}, Metadata: map[string]any{"externalOrderId": "9"}})
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = store.FinishAssignment(ctx, s, org, a.ID, store.AssignmentOutcome{Status: store.AssignmentFailed, ErrorMessage: "late"})
	require.NoError(t, err)
	require.False(t, ok, "recorded once")
	done, err := store.AssignmentByID(ctx, s.Pool, org, a.ID)
	require.NoError(t, err)
	require.Equal(t, store.AssignmentCompleted, done.Status)
	require.NotNil(t, done.TaskExecutionID)
	require.NotNil(t, done.ProcessedAt)
	o, err := store.OrderByID(ctx, s.Pool, org, a.OrderID)
	require.NoError(t, err)
	require.NotNil(t, o.SentToFulfillment)
	require.Nil(t, o.SentToCart)

	// Failed, then reset with retryCount 0.
	b := list[1]
	_, err = store.FinishAssignment(ctx, s, org, b.ID, store.AssignmentOutcome{Status: store.AssignmentFailed, ErrorMessage: "hub down"})
	require.NoError(t, err)
	failed, _ := store.AssignmentByID(ctx, s.Pool, org, b.ID)
	require.Equal(t, 1, failed.RetryCount)
	reset, err := store.ResetFailedAssignments(ctx, s.Pool, other, nil)
	require.NoError(t, err)
	require.Empty(t, reset)
	reset, err = store.ResetFailedAssignments(ctx, s.Pool, org, nil)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{b.ID}, reset)
	back, _ := store.AssignmentByID(ctx, s.Pool, org, b.ID)
	require.Equal(t, store.AssignmentPending, back.Status)
	require.Zero(t, back.RetryCount)
	require.Nil(t, back.ErrorMessage)

	pend, err := store.PendingAssignments(ctx, s.Pool, org, &hub, 500)
	require.NoError(t, err)
	require.Len(t, pend, 199)

	_, err = s.Pool.Exec(ctx, `UPDATE dispatch_assignments SET status = 'skipped'`)
	require.NoError(t, err)
	require.NoError(t, store.DeleteDispatcher(ctx, s, org, d.ID))
	require.ErrorIs(t, store.DeleteDispatcher(ctx, s, org, d.ID), store.ErrNotFound)
	require.NoError(t, store.DeleteConditionSet(ctx, s, org, set.ID))
}

// BenchmarkCreateAssignments200 is one bulk assign of 200 orders.
func BenchmarkCreateAssignments200(b *testing.B) {
	s := storetest.New(b)
	ctx := b.Context()
	org := csTestOrg(b, s)
	shop, hub := dispTestBridge(b, s, org), dispTestBridge(b, s, org)
	d, err := store.CreateDispatcher(ctx, s, dispTestNew(org, shop, hub, "bench"))
	require.NoError(b, err)
	n := 0
	for b.Loop() {
		b.StopTimer()
		ids := make([]uuid.UUID, 200)
		for i := range ids {
			o, err := store.CreateOrder(ctx, s.Pool, orderTestNew(org, shop, fmt.Sprint("b", n)))
			require.NoError(b, err)
			ids[i] = o.ID
			n++
		}
		b.StartTimer()
		as, err := store.CreateAssignments(ctx, s.Pool, d, ids, nil)
		if err != nil || len(as) != 200 {
			b.Fatal(err, len(as))
		}
	}
}

// OrderRulesApply answers, in one query, whether split rules and
// dispatchers (of a trigger) apply to an order's bridge.
func TestOrderRulesApply(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org, shop := orderTestOrg(t, s)
	hub := dispTestBridge(t, s, org)
	o, err := store.CreateOrder(ctx, s.Pool, orderTestNew(org, shop, "r1"))
	require.NoError(t, err)
	atHub, err := store.CreateOrder(ctx, s.Pool, orderTestNew(org, hub, "r2"))
	require.NoError(t, err)
	other, _ := orderTestOrg(t, s)

	split, dispatch, err := store.OrderRulesApply(ctx, s.Pool, org, o.ID, "order_created")
	require.NoError(t, err)
	require.False(t, split)
	require.False(t, dispatch)

	_, err = store.CreateDispatcher(ctx, s, dispTestNew(org, shop, hub, "To hub"))
	require.NoError(t, err)
	group := "sku"
	_, err = store.CreateSplitRule(ctx, s, store.SplitRule{ID: uuid.New(), OrganizationID: org, Name: "By SKU", Method: "field_group",
		GroupField: &group, BridgeID: &hub, IsActive: true, ConditionGroups: json.RawMessage(`[]`)})
	require.NoError(t, err)

	split, dispatch, err = store.OrderRulesApply(ctx, s.Pool, org, o.ID, "order_created")
	require.NoError(t, err)
	require.False(t, split, "the split rule is the hub's")
	require.True(t, dispatch)
	_, dispatch, err = store.OrderRulesApply(ctx, s.Pool, org, o.ID, "order_updated")
	require.NoError(t, err)
	require.False(t, dispatch, "another trigger")
	split, dispatch, err = store.OrderRulesApply(ctx, s.Pool, org, atHub.ID, "order_created")
	require.NoError(t, err)
	require.True(t, split)
	require.False(t, dispatch, "the hub is no source")
	split, dispatch, err = store.OrderRulesApply(ctx, s.Pool, other, o.ID, "order_created")
	require.NoError(t, err)
	require.False(t, split || dispatch, "another organization's order meets nothing")

	// The same question asked with the insert, in one round trip.
	created, met, err := store.CreateOrderProbeEvents(ctx, s.Pool, orderTestNew(org, shop, "r3"), "order_created", "")
	require.NoError(t, err)
	require.False(t, met.Split)
	require.True(t, met.Dispatch)
	got, err := store.OrderByID(ctx, s.Pool, org, created.ID)
	require.NoError(t, err)
	require.Equal(t, "r3", got.ExternalID)
	_, met, err = store.CreateOrderProbeEvents(ctx, s.Pool, orderTestNew(org, hub, "r4"), "order_created", "")
	require.NoError(t, err)
	require.True(t, met.Split)
	require.False(t, met.Dispatch)
	_, _, err = store.CreateOrderProbeEvents(ctx, s.Pool, orderTestNew(org, hub, "r4"), "order_created", "")
	require.ErrorIs(t, err, store.ErrConflict, "the insert's error, as CreateOrder's")

	// And whether a standing order listens to the event: only an active
	// one of that event, of the organization.
	probe := func(ext, event string) store.OrderProbe {
		t.Helper()
		_, p, err := store.CreateOrderProbeEvents(ctx, s.Pool, orderTestNew(org, shop, ext), "order_created", event)
		require.NoError(t, err)
		return p
	}
	require.False(t, probe("s1", "on_order_created").Standing, "none yet")
	standing := func(orgID uuid.UUID, trigger string, active bool) {
		t.Helper()
		_, err := store.SaveAgentStandingOrder(ctx, s.Pool, store.AgentStandingOrder{ID: uuid.New(), OrganizationID: orgID, Name: trigger,
			NaturalLanguage: "x", TriggerType: trigger, IsActive: active})
		require.NoError(t, err)
	}
	standing(other, "on_order_created", true)
	standing(org, "on_order_updated", true)
	standing(org, "on_order_created", false)
	require.False(t, probe("s2", "on_order_created").Standing, "another organization's, another event's, an inactive one")
	standing(org, "on_order_created", true)
	p := probe("s3", "on_order_created")
	require.True(t, p.Standing)
	require.True(t, p.Dispatch, "the rules' answers as before")
	require.False(t, probe("s4", "").Standing, "no event asked")
}

// OrdersRules answers for a batch what OrderRulesApply and
// ActiveDispatchersForOrder answer order by order, in one round trip:
// the orders a split rule applies to, and each dispatcher once (in
// priority order) with its orders.
func TestOrdersRules(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org, shop := orderTestOrg(t, s)
	hub, hub2 := dispTestBridge(t, s, org), dispTestBridge(t, s, org)
	other, _ := orderTestOrg(t, s)
	var ids []uuid.UUID
	for i := range 5 {
		o, err := store.CreateOrder(ctx, s.Pool, orderTestNew(org, shop, fmt.Sprint("b", i)))
		require.NoError(t, err)
		ids = append(ids, o.ID)
	}
	atHub, err := store.CreateOrder(ctx, s.Pool, orderTestNew(org, hub, "h"))
	require.NoError(t, err)
	batch := append(append([]uuid.UUID{atHub.ID}, ids...), uuid.New())

	split, ds, err := store.OrdersRules(ctx, s.Pool, org, batch, "order_created")
	require.NoError(t, err)
	require.Empty(t, split)
	require.Empty(t, ds, "no dispatcher yet")

	low, err := store.CreateDispatcher(ctx, s, dispTestNew(org, shop, hub, "Low"))
	require.NoError(t, err)
	top := dispTestNew(org, shop, hub2, "Top")
	top.Priority = 5
	top, err = store.CreateDispatcher(ctx, s, top)
	require.NoError(t, err)
	updated := dispTestNew(org, shop, hub2, "On update")
	updated.TriggerOn = []string{"order_updated"}
	_, err = store.CreateDispatcher(ctx, s, updated)
	require.NoError(t, err)
	group := "sku"
	_, err = store.CreateSplitRule(ctx, s, store.SplitRule{ID: uuid.New(), OrganizationID: org, Name: "By SKU", Method: "field_group",
		GroupField: &group, BridgeID: &hub, IsActive: true, ConditionGroups: json.RawMessage(`[]`)})
	require.NoError(t, err)

	split, ds, err = store.OrdersRules(ctx, s.Pool, org, batch, "order_created")
	require.NoError(t, err)
	require.Equal(t, map[uuid.UUID]bool{atHub.ID: true}, split, "the split rule is the hub's")
	require.Len(t, ds, 2, "the order_created dispatchers, once each")
	require.Equal(t, []uuid.UUID{top.ID, low.ID}, []uuid.UUID{ds[0].ID, ds[1].ID}, "in priority order")
	require.Equal(t, "Top", ds[0].Name)
	require.ElementsMatch(t, ids, ds[0].OrderIDs)
	require.ElementsMatch(t, ids, ds[1].OrderIDs)
	// Order by order, the same answers.
	for _, id := range batch {
		sp, di, err := store.OrderRulesApply(ctx, s.Pool, org, id, "order_created")
		require.NoError(t, err)
		require.Equal(t, sp, split[id])
		require.Equal(t, di, slices.Contains(ds[0].OrderIDs, id) || slices.Contains(ds[1].OrderIDs, id))
		one, err := store.ActiveDispatchersForOrder(ctx, s.Pool, org, id, "order_created")
		require.NoError(t, err)
		var want []uuid.UUID
		for _, d := range ds {
			if slices.Contains(d.OrderIDs, id) {
				want = append(want, d.ID)
			}
		}
		var got []uuid.UUID
		for _, d := range one {
			got = append(got, d.ID)
		}
		require.Equal(t, want, got)
	}
	alone, err := store.DispatchersForOrders(ctx, s.Pool, org, batch, "order_created")
	require.NoError(t, err)
	require.Equal(t, ds, alone)

	_, ds, err = store.OrdersRules(ctx, s.Pool, org, batch, "order_updated")
	require.NoError(t, err)
	require.Len(t, ds, 1)
	require.Equal(t, "On update", ds[0].Name)
	split, ds, err = store.OrdersRules(ctx, s.Pool, other, batch, "order_created")
	require.NoError(t, err)
	require.Empty(t, split, "another organization's orders meet nothing")
	require.Empty(t, ds)
}

// OrdersForConditions reads the orders as OrdersByIDs with only the JSON
// documents named (and the metadata); the others are null.
func TestOrdersForConditions(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org, bridge := orderTestOrg(t, s)
	in := orderTestNew(org, bridge, "c-1")
	in.SourceData = json.RawMessage(`{"id": 1}`)
	in.ShippingAddress = json.RawMessage(`{"city": "Austin"}`)
	in.BillingAddress = json.RawMessage(`{"city": "Dallas"}`)
	in.Metadata = json.RawMessage(`{"k": "v"}`)
	o, err := store.CreateOrder(ctx, s.Pool, in)
	require.NoError(t, err)
	full, err := store.OrdersByIDs(ctx, s.Pool, org, []uuid.UUID{o.ID})
	require.NoError(t, err)
	require.Len(t, full, 1)

	lean, err := store.OrdersForConditions(ctx, s.Pool, org, []uuid.UUID{o.ID, uuid.New()}, []string{"lineItems", "status"})
	require.NoError(t, err)
	require.Len(t, lean, 1)
	got := lean[0]
	for name, doc := range map[string]json.RawMessage{"customer": got.Customer, "shippingAddress": got.ShippingAddress,
		"billingAddress": got.BillingAddress, "totals": got.Totals, "sourceData": got.SourceData} {
		require.Empty(t, doc, name)
	}
	require.JSONEq(t, string(full[0].LineItems), string(got.LineItems))
	require.JSONEq(t, `{"k": "v"}`, string(got.Metadata), "the metadata is always read")
	want := full[0]
	want.Customer, want.ShippingAddress, want.BillingAddress, want.Totals, want.SourceData = nil, nil, nil, nil, nil
	require.Equal(t, want, got, "everything else as OrdersByIDs")

	all, err := store.OrdersForConditions(ctx, s.Pool, org, []uuid.UUID{o.ID},
		[]string{"customer", "shippingAddress", "billingAddress", "lineItems", "totals", "sourceData"})
	require.NoError(t, err)
	require.Equal(t, full, all)
}
