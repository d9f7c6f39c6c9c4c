package store_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// shpTestFixture is an organization with an order and a carrier account.
func shpTestFixture(t *testing.T, s *store.Store) (orgID, orderID, accountID uuid.UUID) {
	t.Helper()
	orgID, bridgeID := orderTestOrg(t, s)
	o, err := store.CreateOrder(t.Context(), s.Pool, orderTestNew(orgID, bridgeID, uuid.NewString()))
	require.NoError(t, err)
	accountID = uuid.New()
	_, err = s.Pool.Exec(t.Context(), `INSERT INTO carrier_accounts (id, organization_id, name, carrier, supports_labels, supports_pickup)
		VALUES ($1, $2, 'A', 'carrier_a', true, true)`, accountID, orgID)
	require.NoError(t, err)
	return orgID, o.ID, accountID
}

func shpTestPending(t *testing.T, s *store.Store, orgID, orderID, accountID uuid.UUID) store.Shipment {
	t.Helper()
	d := time.Date(2030, 1, 7, 0, 0, 0, 0, time.UTC)
	sh, created, err := store.InsertPendingShipment(t.Context(), s.Pool, store.Shipment{
		ID: uuid.New(), OrganizationID: orgID, OrderID: &orderID, CarrierAccountID: &accountID, Carrier: "carrier_a",
		Service: "FEDEX_GROUND", ShipDate: &d, ShipFrom: json.RawMessage(`{"city":"Memphis"}`), ShipTo: json.RawMessage(`{"city":"Seattle"}`),
		Parcels: json.RawMessage(`[{"weight":1}]`),
	})
	require.NoError(t, err)
	require.True(t, created)
	return sh
}

func TestStoreShipmentLabelLifecycle(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	orgID, orderID, accountID := shpTestFixture(t, s)

	sh := shpTestPending(t, s, orgID, orderID, accountID)
	require.Equal(t, store.ShipmentPending, sh.Status)
	require.False(t, sh.HasLabel())
	require.NotNil(t, sh.BridgeID, "the order's bridge is copied")
	require.JSONEq(t, `{}`, string(sh.Metadata))

	// An order of another organization is not found.
	otherOrg, otherOrder, _ := shpTestFixture(t, s)
	_, _, err := store.InsertPendingShipment(ctx, s.Pool, store.Shipment{ID: uuid.New(), OrganizationID: orgID, OrderID: &otherOrder, Carrier: "carrier_a", Service: "X"})
	require.ErrorIs(t, err, store.ErrNotFound)
	// The same id again (a client's retry) returns the existing row.
	again, created, err := store.InsertPendingShipment(ctx, s.Pool, store.Shipment{ID: sh.ID, OrganizationID: orgID, OrderID: &orderID, Carrier: "carrier_a", Service: "OTHER"})
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, "FEDEX_GROUND", again.Service)
	require.Nil(t, again.LabelRequestedAt, "not marked as asked of the carrier")

	// A batch's purchase inserts the shipment marked as asked of the
	// carrier (it calls the carrier next); a shipment found is not marked.
	marked, created, err := store.InsertPendingShipment(ctx, s.Pool, store.Shipment{ID: uuid.New(), OrganizationID: orgID, OrderID: &orderID,
		Carrier: "carrier_a", Service: "X", LabelRequestedAt: &time.Time{}})
	require.NoError(t, err)
	require.True(t, created)
	require.NotNil(t, marked.LabelRequestedAt)
	require.WithinDuration(t, time.Now(), *marked.LabelRequestedAt, time.Minute)
	again, created, err = store.InsertPendingShipment(ctx, s.Pool, store.Shipment{ID: sh.ID, OrganizationID: orgID, OrderID: &orderID,
		Carrier: "carrier_a", Service: "X", LabelRequestedAt: &time.Time{}})
	require.NoError(t, err)
	require.False(t, created)
	require.Nil(t, again.LabelRequestedAt)

	doc := store.ShipmentLabelDoc{TrackingNumber: "700000000001", RateAmount: 12.34, RateCurrency: "USD", Format: "PDF",
		ContentType: "application/pdf", Document: []byte("%PDF-1"), CarrierResponse: json.RawMessage(`{"zone":"8"}`)}
	got, err := store.CompleteShipmentLabel(ctx, s.Pool, orgID, sh.ID, doc)
	require.NoError(t, err)
	require.Equal(t, store.ShipmentLabelCreated, got.Status)
	require.Equal(t, "700000000001", *got.TrackingNumber)
	require.Equal(t, 12.34, *got.RateAmount)
	require.Equal(t, "PDF", *got.LabelFormat)
	require.Equal(t, 1, *got.LabelPieces)
	require.True(t, doc.Recorded(got))

	// A second completion (a retried request) keeps the first label.
	doc2 := doc
	doc2.TrackingNumber, doc2.Document = "700000000002", []byte("%PDF-2")
	got, err = store.CompleteShipmentLabel(ctx, s.Pool, orgID, sh.ID, doc2)
	require.NoError(t, err)
	require.Equal(t, "700000000001", *got.TrackingNumber)
	require.False(t, doc2.Recorded(got))
	l, err := store.ShipmentLabel(ctx, s.Pool, orgID, sh.ID)
	require.NoError(t, err)
	require.Equal(t, []byte("%PDF-1"), l.Document)
	_, err = store.ShipmentLabel(ctx, s.Pool, otherOrg, sh.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = store.CompleteShipmentLabel(ctx, s.Pool, otherOrg, sh.ID, doc)
	require.ErrorIs(t, err, store.ErrNotFound)

	// A stash is for a pending shipment of the organization only.
	require.ErrorIs(t, store.StashShipmentLabel(ctx, s.Pool, orgID, sh.ID, doc), store.ErrNotFound, "no longer pending")
	require.ErrorIs(t, store.StashShipmentLabel(ctx, s.Pool, otherOrg, shpTestPending(t, s, orgID, orderID, accountID).ID, doc), store.ErrNotFound)

	// Multi-package labels keep every piece, also through the stash.
	stashed := shpTestPending(t, s, orgID, orderID, accountID)
	pieces := doc
	pieces.TrackingNumber, pieces.TrackingNumbers, pieces.Pieces = "s1", []string{"s1", "s2"}, [][]byte{[]byte("^XA1^XZ"), []byte("^XA2^XZ")}
	require.NoError(t, store.StashShipmentLabel(ctx, s.Pool, orgID, stashed.ID, pieces))
	_, found, err := store.StashedShipmentLabel(ctx, s.Pool, otherOrg, stashed.ID)
	require.NoError(t, err)
	require.False(t, found, "another organization's stash")
	facts, found, err := store.StashedShipmentLabel(ctx, s.Pool, orgID, stashed.ID)
	require.NoError(t, err)
	require.True(t, found)
	want := pieces
	want.Document, want.Pieces, want.Stashed = nil, nil, true
	require.Equal(t, want, facts, "the facts come back, the documents stay in the stash")
	pieces.Document, pieces.Pieces, pieces.Stashed = nil, nil, true
	got, err = store.CompleteShipmentLabel(ctx, s.Pool, orgID, stashed.ID, pieces)
	require.NoError(t, err)
	require.True(t, pieces.Recorded(got))
	l, err = store.ShipmentLabel(ctx, s.Pool, orgID, stashed.ID)
	require.NoError(t, err)
	require.Equal(t, []byte("%PDF-1"), l.Document)
	require.Equal(t, [][]byte{[]byte("^XA1^XZ"), []byte("^XA2^XZ")}, l.PieceDocuments)
	require.Equal(t, []string{"s1", "s2"}, l.TrackingNumbers)
	_, found, err = store.StashedShipmentLabel(ctx, s.Pool, orgID, stashed.ID)
	require.NoError(t, err)
	require.False(t, found, "recorded: the stash is gone")
	// A shipment failed as exception keeps its stash (the trace of a label
	// bought and not voided); so does a stash of another label than the one
	// recorded. Only the stash of the label recorded is purged.
	failed := shpTestPending(t, s, orgID, orderID, accountID)
	require.NoError(t, store.StashShipmentLabel(ctx, s.Pool, orgID, failed.ID, doc))
	other := doc
	other.TrackingNumber = "700000000009"
	require.ErrorIs(t, store.StashShipmentLabel(ctx, s.Pool, orgID, failed.ID, other), store.ErrNotFound, "another label does not replace the stash")
	ok, err := store.FailPendingShipment(ctx, s.Pool, orgID, failed.ID, "unknown")
	require.NoError(t, err)
	require.True(t, ok)
	left := shpTestPending(t, s, orgID, orderID, accountID)
	require.NoError(t, store.StashShipmentLabel(ctx, s.Pool, orgID, left.ID, doc))
	_, err = s.Pool.Exec(ctx, `UPDATE shipments SET status = 'label_created', tracking_number = $2 WHERE id = $1`, left.ID, doc.TrackingNumber)
	require.NoError(t, err)
	n, err := store.PurgeSettledLabelStashes(ctx, s.Pool)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	kept, found, err := store.StashedShipmentLabel(ctx, s.Pool, orgID, failed.ID)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, doc.TrackingNumber, kept.TrackingNumber)
	// A voided label's stash is dropped by its tracking number.
	require.NoError(t, store.DropLabelStash(ctx, s.Pool, orgID, doc.TrackingNumber))
	_, found, err = store.StashedShipmentLabel(ctx, s.Pool, orgID, failed.ID)
	require.NoError(t, err)
	require.False(t, found)
	n, err = store.PurgeSettledLabelStashes(ctx, s.Pool)
	require.NoError(t, err)
	require.Zero(t, n)

	// Multi-package labels keep every piece.
	sh2 := shpTestPending(t, s, orgID, orderID, accountID)
	doc.TrackingNumbers, doc.Pieces = []string{"a", "b"}, [][]byte{[]byte("^XA1^XZ"), []byte("^XA2^XZ")}
	_, err = store.CompleteShipmentLabel(ctx, s.Pool, orgID, sh2.ID, doc)
	require.NoError(t, err)
	l, err = store.ShipmentLabel(ctx, s.Pool, orgID, sh2.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, l.TrackingNumbers)
	require.Len(t, l.PieceDocuments, 2)

	// A pending shipment: listed as pending past its bound, failed with a
	// reason (only while pending), or deleted (only while pending).
	sh3 := shpTestPending(t, s, orgID, orderID, accountID)
	pend, err := store.StalePendingShipments(ctx, s.Pool, time.Now().Add(time.Minute), 100)
	require.NoError(t, err)
	require.Contains(t, pend, store.PendingShipmentRow{WaitingRow: store.WaitingRow{OrganizationID: orgID, ID: sh3.ID, Since: sh3.CreatedAt}})
	require.NotContains(t, pend, store.PendingShipmentRow{WaitingRow: store.WaitingRow{OrganizationID: orgID, ID: sh.ID, Since: sh.CreatedAt}})
	pend, err = store.StalePendingShipments(ctx, s.Pool, sh3.CreatedAt, 100)
	require.NoError(t, err)
	for _, p := range pend {
		require.NotEqual(t, sh3.ID, p.ID, "not yet past its bound")
	}
	ok, err = store.FailPendingShipment(ctx, s.Pool, orgID, sh3.ID, "outcome unknown")
	require.NoError(t, err)
	require.True(t, ok)
	got, err = store.ShipmentByID(ctx, s.Pool, orgID, sh3.ID)
	require.NoError(t, err)
	require.Equal(t, store.ShipmentException, got.Status)
	require.JSONEq(t, `{"error":"outcome unknown"}`, string(got.CarrierResponse))
	require.JSONEq(t, `{"label_purchase_error":"outcome unknown"}`, string(got.Metadata))
	ok, err = store.FailPendingShipment(ctx, s.Pool, orgID, sh3.ID, "again")
	require.NoError(t, err)
	require.False(t, ok)
	ok, err = store.DeletePendingShipment(ctx, s.Pool, orgID, sh3.ID)
	require.NoError(t, err)
	require.False(t, ok, "no longer pending")
	sh4 := shpTestPending(t, s, orgID, orderID, accountID)
	ok, err = store.DeletePendingShipment(ctx, s.Pool, orgID, sh4.ID)
	require.NoError(t, err)
	require.True(t, ok)

	// Patch: metadata merged, delivered stamps delivered_at.
	tn := "X1"
	tnp := &tn
	st := store.ShipmentDelivered
	got, err = store.PatchShipment(ctx, s, orgID, sh.ID, store.ShipmentPatch{Status: &st, TrackingNumber: &tnp, Metadata: map[string]any{"a": 1}})
	require.NoError(t, err)
	require.Equal(t, "X1", *got.TrackingNumber)
	require.NotNil(t, got.DeliveredAt)
	got, err = store.PatchShipment(ctx, s, orgID, sh.ID, store.ShipmentPatch{Metadata: map[string]any{"b": "x", "a": nil}})
	require.NoError(t, err)
	require.JSONEq(t, `{"b":"x"}`, string(got.Metadata))
	_, err = store.PatchShipment(ctx, s, otherOrg, sh.ID, store.ShipmentPatch{})
	require.ErrorIs(t, err, store.ErrNotFound)

	// Orders of the include, in one query.
	orders, err := store.ShipmentOrders(ctx, s.Pool, orgID, []uuid.UUID{orderID, otherOrder})
	require.NoError(t, err)
	require.Len(t, orders, 1)
	require.Equal(t, "Ann Lee", orders[orderID].CustomerName)

	// Delete removes the label too.
	require.NoError(t, store.DeleteShipment(ctx, s.Pool, orgID, sh.ID))
	require.ErrorIs(t, store.DeleteShipment(ctx, s.Pool, orgID, sh.ID), store.ErrNotFound)
	_, err = store.ShipmentLabel(ctx, s.Pool, orgID, sh.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
}

func TestStoreShipmentActions(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	orgID, orderID, accountID := shpTestFixture(t, s)
	sh := shpTestPending(t, s, orgID, orderID, accountID)

	wf := "shipment-action/x"
	a, err := store.InsertShipmentAction(ctx, s.Pool, store.ShipmentAction{ID: uuid.New(), OrganizationID: orgID, ShipmentID: sh.ID,
		ActionType: "hold", Config: json.RawMessage(`{"reason":"other"}`), ShipmentStatus: "in_transit", WorkflowID: &wf})
	require.NoError(t, err)
	require.Equal(t, store.ShipmentActionPending, a.Status)
	require.Equal(t, []string{}, a.Messages)

	ok, err := store.FinishShipmentAction(ctx, s.Pool, orgID, a.ID, store.ShipmentActionOutcome{
		Status: store.ShipmentActionCompleted, ConfirmationNumber: "DM1", Messages: []string{"accepted"}, CarrierResponse: json.RawMessage(`{"x":1}`)})
	require.NoError(t, err)
	require.True(t, ok)
	// The first outcome wins.
	ok, err = store.FinishShipmentAction(ctx, s.Pool, orgID, a.ID, store.ShipmentActionOutcome{Status: store.ShipmentActionFailed, Error: "late"})
	require.NoError(t, err)
	// The same id again (a client's retry) returns the record as it is.
	again, err := store.InsertShipmentAction(ctx, s.Pool, store.ShipmentAction{ID: a.ID, OrganizationID: orgID, ShipmentID: sh.ID,
		ActionType: "instructions", ShipmentStatus: "in_transit", WorkflowID: &wf})
	require.NoError(t, err)
	require.Equal(t, store.ShipmentActionCompleted, again.Status)
	require.Equal(t, "hold", again.ActionType)
	require.False(t, ok)
	got, err := store.ShipmentActionByID(ctx, s.Pool, orgID, a.ID)
	require.NoError(t, err)
	require.Equal(t, store.ShipmentActionCompleted, got.Status)
	require.Equal(t, "DM1", *got.ConfirmationNumber)
	require.Nil(t, got.Error)
	require.NotNil(t, got.CompletedAt)

	_, err = store.FinishShipmentAction(ctx, s.Pool, orgID, uuid.New(), store.ShipmentActionOutcome{Status: store.ShipmentActionFailed})
	require.ErrorIs(t, err, store.ErrNotFound)
	otherOrg, _, _ := shpTestFixture(t, s)
	_, err = store.ShipmentActionByID(ctx, s.Pool, otherOrg, a.ID)
	require.ErrorIs(t, err, store.ErrNotFound)

	list, err := store.ShipmentActions(ctx, s.Pool, orgID, sh.ID)
	require.NoError(t, err)
	require.Len(t, list, 1)
	// Deleting the shipment deletes its actions.
	require.NoError(t, store.DeleteShipment(ctx, s.Pool, orgID, sh.ID))
	_, err = store.ShipmentActionByID(ctx, s.Pool, orgID, a.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
}

func TestStorePickups(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	orgID, _, accountID := shpTestFixture(t, s)
	today := time.Now().UTC().Truncate(24 * time.Hour)
	ins := func(status string, offset int) store.Pickup {
		t.Helper()
		conf := "CPU" + uuid.NewString()[:8]
		p, created, err := store.InsertPickup(ctx, s.Pool, store.Pickup{ID: uuid.New(), OrganizationID: orgID, CarrierAccountID: &accountID,
			Carrier: "carrier_a", ExternalID: &conf, Status: status, PickupAddress: json.RawMessage(`{"city":"Memphis"}`),
			PickupDate: today.AddDate(0, 0, offset), ReadyTime: "09:00", CloseTime: "17:00", PackageCount: 1, ConfirmationNumber: &conf})
		require.NoError(t, err)
		require.True(t, created)
		return p
	}
	future := ins(store.PickupConfirmed, 1)
	todays := ins(store.PickupConfirmed, 0)
	past := ins(store.PickupConfirmed, -1)
	cancelled := ins(store.PickupCancelled, -3)
	// Pending and failed bookings are not listed.
	booking := ins(store.PickupPending, 2)
	lost := ins(store.PickupPending, 2)
	ok, err := store.FailPendingPickup(ctx, s.Pool, orgID, lost.ID, "outcome unknown")
	require.NoError(t, err)
	require.True(t, ok)
	require.False(t, booking.Visible())
	require.Equal(t, store.PickupCompleted, past.StatusOn(time.Now()))
	require.Equal(t, store.PickupConfirmed, todays.StatusOn(time.Now()), "today's pickup is still confirmed")

	ids := func(f store.PickupFilter) []uuid.UUID {
		f.Today, f.Limit = time.Now(), 100
		list, total, err := store.ListPickups(ctx, s.Pool, orgID, f)
		require.NoError(t, err)
		require.Len(t, list, total)
		out := []uuid.UUID{}
		for _, p := range list {
			out = append(out, p.ID)
		}
		return out
	}
	require.Equal(t, []uuid.UUID{future.ID, todays.ID, past.ID, cancelled.ID}, ids(store.PickupFilter{}))
	require.Equal(t, []uuid.UUID{future.ID, todays.ID}, ids(store.PickupFilter{Status: store.PickupConfirmed}))
	require.Equal(t, []uuid.UUID{past.ID}, ids(store.PickupFilter{Status: store.PickupCompleted}))
	from, to := today.AddDate(0, 0, -1), today
	require.Equal(t, []uuid.UUID{todays.ID, past.ID}, ids(store.PickupFilter{FromDate: &from, ToDate: &to}))

	// The completion job persists it, once.
	n, err := store.CompletePastPickups(ctx, s.Pool, time.Now())
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, int64(1))
	got, err := store.PickupByID(ctx, s.Pool, orgID, past.ID)
	require.NoError(t, err)
	require.Equal(t, store.PickupCompleted, got.Status)
	require.NotNil(t, got.CompletedAt)
	got, err = store.PickupByID(ctx, s.Pool, orgID, todays.ID)
	require.NoError(t, err)
	require.Equal(t, store.PickupConfirmed, got.Status)
	require.Equal(t, []uuid.UUID{past.ID}, ids(store.PickupFilter{Status: store.PickupCompleted}))
	n, err = store.CompletePastPickups(ctx, s.Pool, time.Now())
	require.NoError(t, err)
	require.Zero(t, n)

	// Cancellation keeps the booking's response and adds the carrier's answer.
	_, err = s.Pool.Exec(ctx, `UPDATE pickups SET carrier_response = '{"location":"TNMA"}' WHERE id = $1`, future.ID)
	require.NoError(t, err)
	reason := "not needed"
	c, err := store.MarkPickupCancelled(ctx, s.Pool, orgID, future.ID, &reason, json.RawMessage(`{"messages":["ok"]}`))
	require.NoError(t, err)
	require.Equal(t, store.PickupCancelled, c.Status)
	require.JSONEq(t, `{"location":"TNMA","cancellation":{"messages":["ok"]}}`, string(c.CarrierResponse))
	require.Equal(t, "not needed", *c.CancelReason)
	_, err = store.MarkPickupCancelled(ctx, s.Pool, orgID, future.ID, &reason, nil)
	require.ErrorIs(t, err, store.ErrNotFound, "only a confirmed pickup is cancelled")

	// A pending booking: listed past its bound, then confirmed (once).
	pend, err := store.StalePendingPickups(ctx, s.Pool, time.Now().Add(time.Minute), 100)
	require.NoError(t, err)
	require.Contains(t, pend, store.WaitingRow{OrganizationID: orgID, ID: booking.ID, Since: booking.CreatedAt})
	again, created, err := store.InsertPickup(ctx, s.Pool, booking)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, booking.ID, again.ID)
	conf, err := store.ConfirmPickup(ctx, s.Pool, orgID, booking.ID, "CONF1", json.RawMessage(`{"location":"X"}`))
	require.NoError(t, err)
	require.Equal(t, store.PickupConfirmed, conf.Status)
	require.Equal(t, "CONF1", *conf.ConfirmationNumber)
	conf, err = store.ConfirmPickup(ctx, s.Pool, orgID, booking.ID, "CONF2", nil)
	require.NoError(t, err)
	require.Equal(t, "CONF1", *conf.ConfirmationNumber, "the first booking stays")
	ok, err = store.DeletePendingPickup(ctx, s.Pool, orgID, booking.ID)
	require.NoError(t, err)
	require.False(t, ok)

	otherOrg, _, _ := shpTestFixture(t, s)
	_, err = store.PickupByID(ctx, s.Pool, otherOrg, future.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
}

// TestStoreShipmentPurchaseOwnerAndMark: a shipment a batch buys keeps its
// purchase owner (listed with it when left pending), and the mark that the
// carrier was asked is set only while pending.
func TestStoreShipmentPurchaseOwnerAndMark(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	orgID, orderID, accountID := shpTestFixture(t, s)
	owner := "operation/" + uuid.NewString()
	sh, created, err := store.InsertPendingShipment(ctx, s.Pool, store.Shipment{
		ID: uuid.New(), OrganizationID: orgID, OrderID: &orderID, CarrierAccountID: &accountID, Carrier: "carrier_a",
		Service: "FEDEX_GROUND", PurchaseOwner: &owner,
	})
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, owner, *sh.PurchaseOwner)
	require.Nil(t, sh.LabelRequestedAt, "never asked yet")
	own := shpTestPending(t, s, orgID, orderID, accountID)
	require.Nil(t, own.PurchaseOwner)

	pend, err := store.StalePendingShipments(ctx, s.Pool, time.Now().Add(time.Minute), 100)
	require.NoError(t, err)
	owners := map[uuid.UUID]*string{}
	for _, p := range pend {
		owners[p.ID] = p.Owner
	}
	require.Contains(t, owners, sh.ID)
	require.Equal(t, owner, *owners[sh.ID])
	require.Contains(t, owners, own.ID)
	require.Nil(t, owners[own.ID])

	require.NoError(t, store.MarkLabelRequested(ctx, s.Pool, orgID, sh.ID))
	got, err := store.ShipmentByID(ctx, s.Pool, orgID, sh.ID)
	require.NoError(t, err)
	require.NotNil(t, got.LabelRequestedAt)
	otherOrg, _, _ := shpTestFixture(t, s)
	require.ErrorIs(t, store.MarkLabelRequested(ctx, s.Pool, otherOrg, sh.ID), store.ErrNotFound, "another organization's")
	_, err = store.FailPendingShipment(ctx, s.Pool, orgID, sh.ID, "unknown")
	require.NoError(t, err)
	require.ErrorIs(t, store.MarkLabelRequested(ctx, s.Pool, orgID, sh.ID), store.ErrNotFound, "no longer pending")
}
