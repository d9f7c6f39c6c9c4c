package platforms_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/sandboxapi"
)

// The storefront_c connector against the sandbox store at the prefix
// FOS_STOREFRONT_C_URL defaults to under FOS_SANDBOX=1.
func TestStorefrontCAgainstTheSandboxStore(t *testing.T) {
	srv := newSandbox(t)
	c := platforms.NewStorefrontC(srv.URL+"/platforms/storefront_c", srv.Client(), platforms.ListLimit(100))
	ctx := context.Background()
	b := sfcBridge("storeHash", "sbx1234")

	all, pages := listAll(t, c, b, time.Time{})
	require.Len(t, all, sandboxapi.StoreSize)
	assert.Equal(t, 4, pages, "3 full pages, then an empty one")
	statuses := map[string]bool{}
	for i, o := range all {
		statuses[o.Status] = true
		require.NotEmpty(t, o.LineItems)
		require.NotNil(t, o.ShippingAddress)
		assert.NotEmpty(t, o.ShippingAddress.Address1)
		assert.NotEmpty(t, o.Customer.Email)
		assert.InDelta(t, o.Totals.Total, o.Totals.Subtotal-o.Totals.Discount+o.Totals.Shipping+o.Totals.Tax, 0.001, o.ExternalID)
		if i > 0 {
			prev, _ := strconv.Atoi(all[i-1].ExternalID)
			cur, _ := strconv.Atoi(o.ExternalID)
			assert.Equal(t, prev+1, cur, "ids in order, none skipped")
		}
	}
	assert.GreaterOrEqual(t, len(statuses), 6, "a spread of statuses: %v", statuses)

	mid := all[len(all)/2].UpdatedAt
	recent, _ := listAll(t, c, b, mid)
	assert.Less(t, len(recent), len(all))
	assert.NotEmpty(t, recent)
	for _, o := range recent {
		assert.False(t, o.UpdatedAt.Before(mid))
	}

	var target platforms.Order
	for _, o := range all {
		if o.Status == platforms.StatusConfirmed && len(o.LineItems) >= 2 {
			target = o
			break
		}
	}
	require.NotEmpty(t, target.ExternalID)
	got, err := c.FetchOrder(ctx, b, target.ExternalID)
	require.NoError(t, err)
	assert.Equal(t, target, *got)

	// Ship one line, then the rest twice: the repeat creates nothing.
	first := target.LineItems[0]
	res, err := c.PushFulfillment(ctx, b, platforms.Fulfillment{OrderExternalID: target.ExternalID, TrackingNumber: "1ZPART", Carrier: "UPS",
		LineItems: []platforms.FulfillmentLine{{ExternalID: first.ExternalID, Quantity: first.Quantity}}})
	require.NoError(t, err)
	assert.True(t, res.Created)
	partial, err := c.FetchOrder(ctx, b, target.ExternalID)
	require.NoError(t, err)
	assert.Equal(t, platforms.FulfillmentPartial, partial.FulfillmentStatus)
	assert.Equal(t, platforms.StatusProcessing, partial.Status)

	push := platforms.Fulfillment{OrderExternalID: target.ExternalID, TrackingNumber: "1ZREST", Carrier: "dhl"}
	rest, err := c.PushFulfillment(ctx, b, push)
	require.NoError(t, err)
	assert.True(t, rest.Created)
	again, err := c.PushFulfillment(ctx, b, push)
	require.NoError(t, err)
	assert.Equal(t, platforms.FulfillmentResult{ExternalID: rest.ExternalID, Created: false}, again)
	done, err := c.FetchOrder(ctx, b, target.ExternalID)
	require.NoError(t, err)
	assert.Equal(t, platforms.FulfillmentFulfilled, done.FulfillmentStatus)
	assert.Equal(t, platforms.StatusShipped, done.Status)
	// The status the published status update sets (status_id 2, Shipped)
	// is the one the platform gives an order whose every item shipped: the
	// connector sends no status change of its own.
	var published struct {
		StatusID json.Number `json:"status_id"`
	}
	require.NoError(t, json.Unmarshal(platformExample(t, "storefront_c", "order_update_status_request.json"), &published))
	assert.Equal(t, published.StatusID.String(), fmt.Sprint(done.SourceData["status_id"]))
	changed, _ := listAll(t, c, b, time.Now().Add(-time.Minute))
	require.Len(t, changed, 1)
	assert.Equal(t, target.ExternalID, changed[0].ExternalID)

	push.TrackingNumber = "1ZMORE"
	_, err = c.PushFulfillment(ctx, b, push)
	var pe *platforms.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, platforms.CodeNothingToFulfill, pe.Code)

	locs, err := c.ListLocations(ctx, b)
	require.NoError(t, err)
	require.Len(t, locs, 2)
	// The platform names no default location; none is invented.
	assert.False(t, locs[0].IsDefault)
	assert.False(t, locs[1].IsDefault)
	assert.NotEmpty(t, locs[0].Address.City)
	assert.NotContains(t, sandboxGetSFC(t, srv, "/platforms/storefront_c/stores/sbx1234/v3/inventory/locations"), "is_default")

	hook, err := c.RegisterWebhook(ctx, b, "store/order/created", "https://fos.example.com/webhooks/storefront_c")
	require.NoError(t, err)
	_, err = c.RegisterWebhook(ctx, b, "store/order/created", "https://fos.example.com/webhooks/storefront_c")
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 422, pe.StatusCode)
	hooks, err := c.ListWebhooks(ctx, b)
	require.NoError(t, err)
	assert.Equal(t, []platforms.Webhook{hook}, hooks)
	require.NoError(t, c.DeleteWebhook(ctx, b, hook.ID))
	hooks, err = c.ListWebhooks(ctx, b)
	require.NoError(t, err)
	assert.Empty(t, hooks)

	_, err = c.FetchOrder(ctx, b, "1")
	require.ErrorIs(t, err, platforms.ErrOrderNotFound)
}

func TestStorefrontCSandboxFailAndRateLimit(t *testing.T) {
	srv := newSandbox(t)
	c := platforms.NewStorefrontC(srv.URL+"/platforms/storefront_c", srv.Client())
	ctx := context.Background()

	_, _, err := c.ListOrders(ctx, sfcBridge("accessToken", "sandbox-fail"), time.Time{}, "")
	require.ErrorIs(t, err, platforms.ErrUnauthorized)
	assert.Contains(t, err.Error(), "not authorized")

	_, _, err = c.ListOrders(ctx, sfcBridge("storeHash", "sandbox-fail"), time.Time{}, "")
	require.Error(t, err)
	assert.True(t, platforms.IsRetryable(err))
	assert.NotErrorIs(t, err, platforms.ErrUnauthorized)

	b := sfcBridge("accessToken", "sandbox-ratelimit")
	_, err = c.ListLocations(ctx, b)
	require.ErrorIs(t, err, platforms.ErrRateLimited)
	wait, _ := platforms.RetryAfter(err)
	assert.Positive(t, wait)
	assert.LessOrEqual(t, wait, 30*time.Second)
	locs, err := c.ListLocations(ctx, b)
	require.NoError(t, err)
	assert.Len(t, locs, 2)
}

// sandboxGetSFC reads a storefront_c sandbox path with a token.
func sandboxGetSFC(t *testing.T, srv *httptest.Server, path string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	require.NoError(t, err)
	req.Header.Set(platforms.StorefrontCTokenHeader, "tok-c")
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode, string(body))
	return string(body)
}
