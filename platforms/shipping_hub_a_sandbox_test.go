package platforms_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/sandboxapi"
)

// The shipping_hub_a connector against the sandbox hub at the prefix
// FOS_SHIPPING_HUB_A_URL defaults to under FOS_SANDBOX=1.
func TestShippingHubAAgainstTheSandboxHub(t *testing.T) {
	srv := newSandbox(t)
	c := platforms.NewShippingHubA(srv.URL+"/platforms/shipping_hub_a", srv.Client(), platforms.ListLimit(100))
	ctx := context.Background()
	b := hubBridge("apiKey", "sandbox-key-1", "apiSecret", "s3cret")

	all, pages := listAll(t, c, b, time.Time{})
	require.Len(t, all, sandboxapi.StoreSize)
	assert.Equal(t, 3, pages)
	seen := map[string]bool{}
	statuses := map[string]bool{}
	for i, o := range all {
		assert.False(t, seen[o.ExternalID], "order listed twice")
		seen[o.ExternalID] = true
		statuses[o.Status] = true
		require.NotEmpty(t, o.LineItems)
		require.NotNil(t, o.ShippingAddress)
		assert.NotEmpty(t, o.ShippingAddress.Address1)
		assert.NotEmpty(t, o.Customer.Email)
		assert.InDelta(t, o.Totals.Total, o.Totals.Subtotal-o.Totals.Discount+o.Totals.Shipping+o.Totals.Tax, 0.001, o.ExternalID)
		if i > 0 {
			assert.False(t, o.UpdatedAt.Before(all[i-1].UpdatedAt), "sorted by ModifyDate")
		}
	}
	assert.GreaterOrEqual(t, len(statuses), 5, "a spread of statuses: %v", statuses)

	// modifyDateStart filters (whole seconds, Pacific time).
	mid := all[len(all)/2].UpdatedAt.Truncate(time.Second)
	recent, _ := listAll(t, c, b, mid)
	assert.Less(t, len(recent), len(all))
	assert.Greater(t, len(recent), 100)
	for _, o := range recent {
		assert.False(t, o.UpdatedAt.Before(mid))
	}

	// Fetch one awaiting shipment and mark it shipped twice: once.
	var target platforms.Order
	for _, o := range all {
		if o.Status == platforms.StatusConfirmed {
			target = o
			break
		}
	}
	require.NotEmpty(t, target.ExternalID)
	got, err := c.FetchOrder(ctx, b, target.ExternalID)
	require.NoError(t, err)
	assert.Equal(t, target, *got)

	push := platforms.Fulfillment{OrderExternalID: target.ExternalID, TrackingNumber: "9400111899561704681189", Carrier: "usps"}
	first, err := c.PushFulfillment(ctx, b, push)
	require.NoError(t, err)
	assert.True(t, first.Created)
	second, err := c.PushFulfillment(ctx, b, push)
	require.NoError(t, err)
	assert.False(t, second.Created)
	assert.NotEmpty(t, second.ExternalID, "the hub's fulfillment id")
	after, err := c.FetchOrder(ctx, b, target.ExternalID)
	require.NoError(t, err)
	assert.Equal(t, platforms.StatusShipped, after.Status)
	changed, _ := listAll(t, c, b, time.Now().Add(-time.Minute))
	require.Len(t, changed, 1)
	assert.Equal(t, target.ExternalID, changed[0].ExternalID)

	// A label the hub made counts as known too.
	ships, next, err := c.ListShipments(ctx, b, time.Time{}, "")
	require.NoError(t, err)
	require.NotEmpty(t, ships)
	assert.Empty(t, next)
	s := ships[0]
	assert.NotEmpty(t, s.TrackingNumber)
	assert.NotEmpty(t, s.Items)
	res, err := c.PushFulfillment(ctx, b, platforms.Fulfillment{OrderExternalID: s.OrderExternalID, TrackingNumber: s.TrackingNumber, Carrier: s.CarrierCode})
	require.NoError(t, err)
	assert.Equal(t, platforms.FulfillmentResult{ExternalID: s.ExternalID, Created: false}, res)
	shipped, err := c.FetchOrder(ctx, b, s.OrderExternalID)
	require.NoError(t, err)
	assert.Contains(t, []string{platforms.StatusShipped, platforms.StatusProcessing, platforms.StatusCancelled}, shipped.Status,
		"an order with a label is shipped or in progress (or was cancelled after)")

	// Warehouses.
	locs, err := c.ListLocations(ctx, b)
	require.NoError(t, err)
	require.Len(t, locs, 2)
	assert.True(t, locs[0].IsDefault)
	assert.NotEmpty(t, locs[0].Address.City)

	// Webhooks.
	hook, err := c.RegisterWebhook(ctx, b, "ORDER_NOTIFY", "https://fos.example.com/webhooks/shipping_hub_a")
	require.NoError(t, err)
	hooks, err := c.ListWebhooks(ctx, b)
	require.NoError(t, err)
	assert.Equal(t, []platforms.Webhook{hook}, hooks)
	require.NoError(t, c.DeleteWebhook(ctx, b, hook.ID))
	hooks, err = c.ListWebhooks(ctx, b)
	require.NoError(t, err)
	assert.Empty(t, hooks)
	_, err = c.RegisterWebhook(ctx, b, "NOPE", "https://fos.example.com/x")
	require.Error(t, err)

	_, err = c.FetchOrder(ctx, b, "1")
	require.ErrorIs(t, err, platforms.ErrOrderNotFound)

	// Another key is another account.
	other, _ := listAll(t, c, hubBridge("apiKey", "sandbox-key-2", "apiSecret", "s3cret"), time.Time{})
	assert.NotEqual(t, all[0].ExternalID, other[0].ExternalID)
}

func TestShippingHubASandboxFailAndRateLimit(t *testing.T) {
	srv := newSandbox(t)
	c := platforms.NewShippingHubA(srv.URL+"/platforms/shipping_hub_a", srv.Client())
	ctx := context.Background()

	for _, b := range []platforms.Bridge{hubBridge("apiKey", "sandbox-fail"), hubBridge("apiSecret", "sandbox-fail")} {
		_, _, err := c.ListOrders(ctx, b, time.Time{}, "")
		require.ErrorIs(t, err, platforms.ErrUnauthorized)
		assert.Contains(t, err.Error(), "Invalid API credentials")
	}
	_, _, err := c.ListOrders(ctx, hubBridge("storeId", "sandbox-fail"), time.Time{}, "")
	require.Error(t, err)
	assert.True(t, platforms.IsRetryable(err))
	assert.NotErrorIs(t, err, platforms.ErrUnauthorized)

	b := hubBridge("apiKey", "sandbox-ratelimit")
	_, _, err = c.ListOrders(ctx, b, time.Time{}, "")
	require.ErrorIs(t, err, platforms.ErrRateLimited)
	wait, _ := platforms.RetryAfter(err)
	assert.Positive(t, wait)
	assert.LessOrEqual(t, wait, time.Minute)
	orders, _, err := c.ListOrders(ctx, b, time.Time{}, "")
	require.NoError(t, err)
	assert.Len(t, orders, 250)

	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/platforms/shipping_hub_a/warehouses", nil)
	req.SetBasicAuth("k", "s")
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, "40", resp.Header.Get("X-Rate-Limit-Limit"))
	assert.Equal(t, "39", resp.Header.Get("X-Rate-Limit-Remaining"))
	assert.NotEmpty(t, resp.Header.Get("X-Rate-Limit-Reset"))
}
