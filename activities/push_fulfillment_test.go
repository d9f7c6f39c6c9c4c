package activities

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/sandboxapi"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// A shipment pushed to a storefront_a shop whose tracking number changes
// afterwards (its label bought again) is pushed again by the next run: the
// fulfillment the first push created moves to the new number through
// update_tracking (Updated), the shop keeps one fulfillment, and the push
// record keeps the fulfillment's id with the new number, so a third run
// sends nothing. On the sandbox shop, which refuses what the platform
// refuses.
func TestPushFulfillmentsMovesAChangedTrackingNumber(t *testing.T) {
	st := storetest.New(t)
	ctx := context.Background()
	sb := httptest.NewServer(sandboxapi.NewHandler())
	t.Cleanup(sb.Close)
	conn := platforms.NewStorefrontA(sb.URL+"/platforms/storefront_a", sb.Client())
	reg := platforms.NewRegistry()
	reg.Register(platforms.TypeStorefrontA, conn)
	box, err := secrets.NewBox(secrets.NewKey())
	require.NoError(t, err)
	acts := &BridgeTaskActivities{Store: st, Secrets: box, Platforms: reg}

	orgID, bridgeID := uuid.New(), uuid.New()
	shop := "retrack-" + uuid.NewString()[:8] + ".myshopify.com"
	_, err = st.Pool.Exec(ctx, `INSERT INTO organizations (id, name, slug) VALUES ($1, 'Acme', $2)`, orgID, "acme-"+orgID.String())
	require.NoError(t, err)
	sealed, err := box.SealJSON(map[string]any{"accessToken": "shpat_retrack"}, store.BridgeCredentialsAD(orgID, bridgeID))
	require.NoError(t, err)
	_, err = st.Pool.Exec(ctx, `INSERT INTO bridges (id, organization_id, type, name, config, credentials)
		VALUES ($1, $2, 'storefront_a', 'Shop', jsonb_build_object('shopDomain', $3::text), $4)`, bridgeID, orgID, shop, sealed)
	require.NoError(t, err)
	pb := platforms.Bridge{ID: bridgeID, OrganizationID: orgID, Type: platforms.TypeStorefrontA,
		Config: map[string]any{"shopDomain": shop, "accessToken": "shpat_retrack"}}

	// An unfulfilled order of the shop, imported, and the service's
	// shipment for it.
	page, _, err := conn.ListOrders(ctx, pb, time.Time{}, "")
	require.NoError(t, err)
	var target platforms.Order
	for _, o := range page {
		if o.FulfillmentStatus == platforms.FulfillmentUnfulfilled && o.Status == platforms.StatusConfirmed {
			target = o
			break
		}
	}
	require.NotEmpty(t, target.ExternalID)
	shipmentID := uuid.New()
	_, err = st.Pool.Exec(ctx, `
WITH o AS (
    INSERT INTO orders (id, organization_id, bridge_id, external_id, status, customer, customer_email, line_items, totals, ordered_at)
    VALUES (gen_random_uuid(), $1, $2, $3, 'confirmed', '{}', 'a@example.com', '[]', '{}', now()) RETURNING id
)
INSERT INTO shipments (id, organization_id, order_id, carrier, service, status, tracking_number)
SELECT $4, $1, o.id, 'carrier_b', '03', 'label_created', '1ZRETRACK0000001' FROM o`, orgID, bridgeID, target.ExternalID, shipmentID)
	require.NoError(t, err)

	in := PushFulfillmentsInput{OrganizationID: orgID.String(), BridgeID: bridgeID.String()}
	res, err := acts.PushFulfillments(ctx, in)
	require.NoError(t, err)
	require.Equal(t, PushFulfillmentsResult{Pushed: 1, Problems: []string{}}, res)
	var firstID string
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT external_id FROM fulfillment_pushes WHERE bridge_id = $1 AND shipment_id = $2`, bridgeID, shipmentID).Scan(&firstID))

	// The label bought again: a new tracking number.
	_, err = st.Pool.Exec(ctx, `UPDATE shipments SET tracking_number = '1ZRETRACK0000002' WHERE id = $1`, shipmentID)
	require.NoError(t, err)
	res, err = acts.PushFulfillments(ctx, in)
	require.NoError(t, err)
	require.Equal(t, PushFulfillmentsResult{Updated: 1, Problems: []string{}}, res, "moved, not created again")

	after, err := conn.FetchOrder(ctx, pb, target.ExternalID)
	require.NoError(t, err)
	fs, _ := after.SourceData["fulfillments"].([]any)
	require.Len(t, fs, 1, "one fulfillment on the shop")
	ful := fs[0].(map[string]any)
	require.Equal(t, "1ZRETRACK0000002", ful["tracking_number"])
	require.Equal(t, "UPS", ful["tracking_company"], "carrier_b named for the platform")
	var pushedID, pushedNumber string
	require.NoError(t, st.Pool.QueryRow(ctx, `SELECT external_id, tracking_number FROM fulfillment_pushes WHERE bridge_id = $1 AND shipment_id = $2`,
		bridgeID, shipmentID).Scan(&pushedID, &pushedNumber))
	require.Equal(t, firstID, pushedID)
	require.Equal(t, "1ZRETRACK0000002", pushedNumber)

	res, err = acts.PushFulfillments(ctx, in)
	require.NoError(t, err)
	require.Equal(t, PushFulfillmentsResult{Problems: []string{}}, res, "nothing left to send")
}

// A platform that cannot change a fulfillment's tracking (no
// platforms.FulfillmentTrackingUpdater) is not sent a shipment again when
// its number changes after the push: it would get a second fulfillment.
func TestPushFulfillmentsDoesNotResendWithoutTrackingUpdates(t *testing.T) {
	st := storetest.New(t)
	fake := &fakePlatform{pageSize: 10, fulfilled: map[string]bool{}}
	fake.orders = append(fake.orders, fakeOrder(1, time.Date(2026, 4, 1, 12, 0, 0, 0, time.UTC)))
	f := newTaskFixture(t, st, fake, fake)
	ctx := context.Background()
	f.grab(platforms.TaskGrabOrders)
	id := uuid.New()
	_, err := st.Pool.Exec(ctx, `INSERT INTO shipments (id, organization_id, order_id, bridge_id, carrier, service, status, tracking_number)
		SELECT $1, $2, o.id, o.bridge_id, 'carrier_a', 'ground', 'label_created', 'TRK1' FROM orders o WHERE o.bridge_id = $3`, id, f.orgID, f.bridgeID)
	require.NoError(t, err)
	in := PushFulfillmentsInput{OrganizationID: f.orgID.String(), BridgeID: f.bridgeID.String()}
	res, err := f.acts.PushFulfillments(ctx, in)
	require.NoError(t, err)
	require.Equal(t, 1, res.Pushed)
	_, err = st.Pool.Exec(ctx, `UPDATE shipments SET tracking_number = 'TRK2' WHERE id = $1`, id)
	require.NoError(t, err)
	res, err = f.acts.PushFulfillments(ctx, in)
	require.NoError(t, err)
	require.Equal(t, PushFulfillmentsResult{Problems: []string{}}, res)
	require.Len(t, fake.pushes, 1)
}
