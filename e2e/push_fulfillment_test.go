package e2e

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
)

// A storefront_a shop's order shipped by the service: the first
// push-fulfillment run creates the shop's fulfillment; the label bought
// again (a new tracking number) makes the second run move that fulfillment
// to the new number (update_tracking), not create a second one; a third
// run has nothing to send. Through the API, the BridgeTask workflow and
// the sandbox shop.
func TestPushFulfillmentUpdatesTrackingEndToEnd(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	orgID, key := s.taskAccount()
	shop := "push-" + uuid.NewString()[:8] + ".myshopify.com"
	bridgeID := data(s.mustCall(201, key, "POST", "/api/v1/bridges", map[string]any{
		"type": "storefront_a", "name": "Shop", "config": map[string]any{"shopDomain": shop, "accessToken": "shpat_e2e"},
	}))["id"].(string)
	imported := s.runTask(key, bridgeID, "grab-orders")
	require.Equal(t, "completed", imported["status"], "%v", imported)

	var orderID, orderExt string
	require.NoError(t, s.store.Pool.QueryRow(ctx, `SELECT id, external_id FROM orders WHERE bridge_id = $1 AND status = 'confirmed'
		AND fulfillment_status = 'unfulfilled' ORDER BY external_id LIMIT 1`, bridgeID).Scan(&orderID, &orderExt))
	shipmentID := uuid.New()
	_, err := s.store.Pool.Exec(ctx, `INSERT INTO shipments (id, organization_id, order_id, carrier, service, status, tracking_number, ship_date)
		VALUES ($1, $2, $3, 'carrier_b', '03', 'label_created', '1ZE2EPUSH0000001', current_date)`, shipmentID, orgID, orderID)
	require.NoError(t, err)

	output := func(run map[string]any) map[string]any {
		require.Equal(t, "completed", run["status"], "%v", run)
		return run["output"].(map[string]any)
	}
	first := output(s.runTask(key, bridgeID, "push-fulfillment"))
	require.Equal(t, map[string]any{"pushed": float64(1), "updated": float64(0), "alreadyThere": float64(0), "refused": float64(0), "problems": []any{}}, first)

	_, err = s.store.Pool.Exec(ctx, `UPDATE shipments SET tracking_number = '1ZE2EPUSH0000002', updated_at = now() WHERE id = $1`, shipmentID)
	require.NoError(t, err)
	second := output(s.runTask(key, bridgeID, "push-fulfillment"))
	require.Equal(t, map[string]any{"pushed": float64(0), "updated": float64(1), "alreadyThere": float64(0), "refused": float64(0), "problems": []any{}}, second)

	sfa := platforms.NewStorefrontA(s.sandbox.URL+"/platforms/storefront_a", s.sandbox.Client())
	onShop, err := sfa.FetchOrder(ctx, platforms.Bridge{Type: platforms.TypeStorefrontA, Config: map[string]any{"shopDomain": shop, "accessToken": "shpat_e2e"}}, orderExt)
	require.NoError(t, err)
	fs, _ := onShop.SourceData["fulfillments"].([]any)
	require.Len(t, fs, 1, "the fulfillment was moved, not duplicated")
	require.Equal(t, "1ZE2EPUSH0000002", fs[0].(map[string]any)["tracking_number"])
	require.Equal(t, "UPS", fs[0].(map[string]any)["tracking_company"])

	third := output(s.runTask(key, bridgeID, "push-fulfillment"))
	require.Equal(t, map[string]any{"pushed": float64(0), "updated": float64(0), "alreadyThere": float64(0), "refused": float64(0), "problems": []any{}}, third)
}
