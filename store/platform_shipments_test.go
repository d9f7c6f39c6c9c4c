package store_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// The shipments a hub's page creates are named (the agent's standing
// orders on_shipment_created hear them); a page told again creates none.
func TestUpsertPlatformShipmentsNamesTheCreated(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org, _ := orderTestOrg(t, s)
	hub := dispTestBridge(t, s, org)
	list := []platforms.Shipment{
		{ExternalID: "sh-1", CarrierCode: "carrier_a", TrackingNumber: "T1"},
		{ExternalID: "sh-2", CarrierCode: "carrier_b", TrackingNumber: "T2"},
		{ExternalID: ""},
	}
	first, err := store.UpsertPlatformShipments(ctx, s, org, hub, list, nil)
	require.NoError(t, err)
	require.Equal(t, 2, first.Created)
	require.Len(t, first.CreatedIDs, 2)
	var stored []uuid.UUID
	rows, err := s.Pool.Query(ctx, `SELECT id FROM shipments WHERE organization_id = $1 AND bridge_id = $2 ORDER BY external_id`, org, hub)
	require.NoError(t, err)
	for rows.Next() {
		var id uuid.UUID
		require.NoError(t, rows.Scan(&id))
		stored = append(stored, id)
	}
	require.NoError(t, rows.Err())
	require.ElementsMatch(t, stored, first.CreatedIDs)

	again, err := store.UpsertPlatformShipments(ctx, s, org, hub, list, nil)
	require.NoError(t, err)
	require.Zero(t, again.Created)
	require.Empty(t, again.CreatedIDs)
}
