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

func snapTestAccount(t *testing.T, s *store.Store, orgID uuid.UUID) uuid.UUID {
	t.Helper()
	id := uuid.New()
	_, err := s.Pool.Exec(t.Context(), `INSERT INTO carrier_accounts (id, organization_id, name, carrier, supports_rating) VALUES ($1, $2, 'B', 'carrier_b', true)`, id, orgID)
	require.NoError(t, err)
	return id
}

func snapTestNew(orgID, accountID uuid.UUID) store.RateSnapshot {
	days := 3
	return store.RateSnapshot{
		ID: uuid.New(), OrganizationID: orgID, CarrierAccountID: accountID, Carrier: "carrier_b",
		ServiceType: "03", ServiceName: "Ground", TotalPrice: 12.34, Currency: "USD", TransitDays: &days,
		ShipFrom: json.RawMessage(`{"zip": "10001"}`), ShipTo: json.RawMessage(`{"zip": "94105"}`),
		Packages: json.RawMessage(`[{"weight": {"value": 1, "unit": "lb"}}]`),
	}
}

func TestStoreRateSnapshot(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org := bridgeTestOrg(t, s)
	acct := snapTestAccount(t, s, org)

	before := time.Now().Add(-time.Second)
	snap, err := store.CreateRateSnapshot(ctx, s.Pool, snapTestNew(org, acct))
	require.NoError(t, err)
	require.True(t, snap.QuotedAt.After(before))
	require.Equal(t, snap.QuotedAt.Add(store.RateSnapshotTTL), snap.ExpiresAt, "default expiry")
	require.Equal(t, 12.34, snap.TotalPrice)
	require.Nil(t, snap.Breakdown)
	require.Nil(t, snap.RawResponse)
	require.False(t, snap.TransitDaysGuaranteed)

	got, err := store.RateSnapshotByID(ctx, s.Pool, org, snap.ID)
	require.NoError(t, err)
	require.Equal(t, snap.ID, got.ID)
	require.JSONEq(t, `{"zip": "94105"}`, string(got.ShipTo))

	// Explicit expiry and optional JSON.
	n := snapTestNew(org, acct)
	n.ExpiresAt = time.Now().Add(time.Hour).Truncate(time.Microsecond)
	n.Breakdown = json.RawMessage(`[{"name": "fuel", "amount": 1.5}]`)
	n.RawResponse = json.RawMessage(`{"big": 12345678901234567890}`)
	snap2, err := store.CreateRateSnapshot(ctx, s.Pool, n)
	require.NoError(t, err)
	require.True(t, n.ExpiresAt.Equal(snap2.ExpiresAt))
	require.JSONEq(t, `[{"name": "fuel", "amount": 1.5}]`, string(snap2.Breakdown))
	require.Contains(t, string(snap2.RawResponse), "12345678901234567890", "numbers kept exactly")

	// Another organization: neither readable nor creatable with its account.
	other := bridgeTestOrg(t, s)
	_, err = store.RateSnapshotByID(ctx, s.Pool, other, snap.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = store.CreateRateSnapshot(ctx, s.Pool, snapTestNew(other, acct))
	require.ErrorIs(t, err, store.ErrNotFound)

	// Immutable: UPDATE and DELETE are refused by the table itself.
	_, err = s.Pool.Exec(ctx, `UPDATE rate_snapshots SET total_price = 0 WHERE id = $1`, snap.ID)
	require.ErrorContains(t, err, "immutable")
	_, err = s.Pool.Exec(ctx, `DELETE FROM rate_snapshots WHERE id = $1`, snap.ID)
	require.ErrorContains(t, err, "immutable")

	// Deleting the carrier account keeps the snapshot as it was.
	_, err = s.Pool.Exec(ctx, `DELETE FROM carrier_accounts WHERE id = $1`, acct)
	require.NoError(t, err)
	got, err = store.RateSnapshotByID(ctx, s.Pool, org, snap.ID)
	require.NoError(t, err)
	require.Equal(t, acct, got.CarrierAccountID)

	// Deleting the organization cascades through the trigger.
	_, err = s.Pool.Exec(ctx, `DELETE FROM organizations WHERE id = $1`, org)
	require.NoError(t, err)
	var left int
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT count(*) FROM rate_snapshots WHERE organization_id = $1`, org).Scan(&left))
	require.Zero(t, left)
}

// An expiry the database's clock has already passed is the client's error:
// the check violation maps to ErrInvalidInput (a 400), never a 500.
func TestStoreRateSnapshotExpiredIsInvalidInput(t *testing.T) {
	ctx := t.Context()
	s := storetest.New(t)
	org := bridgeTestOrg(t, s)
	acct := snapTestAccount(t, s, org)
	n := snapTestNew(org, acct)
	n.ExpiresAt = time.Now().Add(-time.Second)
	_, err := store.CreateRateSnapshot(ctx, s.Pool, n)
	require.ErrorIs(t, err, store.ErrInvalidInput)
	require.True(t, store.IsConstraint(err, "rate_snapshots_check"))
}
