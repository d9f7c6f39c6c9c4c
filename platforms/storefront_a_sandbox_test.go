package platforms_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/sandboxapi"
)

// The storefront_a connector against the sandbox store at the prefix
// FOS_STOREFRONT_A_URL defaults to under FOS_SANDBOX=1.
func TestStorefrontAAgainstTheSandboxStore(t *testing.T) {
	srv := newSandbox(t)
	c := platforms.NewStorefrontA(srv.URL+"/platforms/storefront_a", srv.Client())
	ctx := context.Background()
	b := sfaBridge("shopDomain", "sandbox-demo.myshopify.com")

	all, pages := listAll(t, c, b, time.Time{})
	require.Len(t, all, sandboxapi.StoreSize)
	assert.Equal(t, 2, pages, "250 a page")
	seen := map[string]bool{}
	statuses := map[string]bool{}
	for i, o := range all {
		assert.False(t, seen[o.ExternalID], "order listed twice")
		seen[o.ExternalID] = true
		statuses[o.Status] = true
		require.NotEmpty(t, o.LineItems, o.ExternalID)
		require.NotNil(t, o.ShippingAddress)
		assert.InDelta(t, o.Totals.Total, o.Totals.Subtotal-o.Totals.Discount+o.Totals.Shipping+o.Totals.Tax, 0.001)
		if i > 0 {
			prev, _ := strconv.ParseInt(all[i-1].ExternalID, 10, 64)
			cur, _ := strconv.ParseInt(o.ExternalID, 10, 64)
			assert.Less(t, prev, cur, "listed by id")
		}
	}
	assert.GreaterOrEqual(t, len(statuses), 5, "a spread of statuses: %v", statuses)

	// updated_at_min filters.
	mid := all[len(all)/2].UpdatedAt
	recent, _ := listAll(t, c, b, mid)
	require.NotEmpty(t, recent)
	assert.Less(t, len(recent), len(all))
	for _, o := range recent {
		assert.False(t, o.UpdatedAt.Before(mid))
	}

	// Another shop has other orders; the same shop the same ones.
	other, _ := listAll(t, c, sfaBridge("shopDomain", "other.myshopify.com"), time.Time{})
	assert.NotEqual(t, all[0].ExternalID, other[0].ExternalID)
	again, _ := listAll(t, c, b, time.Time{})
	assert.Equal(t, all, again)

	// Fetch one unfulfilled order, push a fulfillment twice: created once.
	var target platforms.Order
	for _, o := range all {
		if o.FulfillmentStatus == platforms.FulfillmentUnfulfilled && o.Status != platforms.StatusCancelled && o.Status != platforms.StatusRefunded {
			target = o
			break
		}
	}
	require.NotEmpty(t, target.ExternalID)
	got, err := c.FetchOrder(ctx, b, target.ExternalID)
	require.NoError(t, err)
	assert.Equal(t, target, *got)

	push := platforms.Fulfillment{OrderExternalID: target.ExternalID, TrackingNumber: "1Z999AA10123456784", Carrier: "UPS",
		TrackingURL: "https://www.ups.com/track?tracknum=1Z999AA10123456784"}
	first, err := c.PushFulfillment(ctx, b, push)
	require.NoError(t, err)
	assert.True(t, first.Created)
	second, err := c.PushFulfillment(ctx, b, push)
	require.NoError(t, err)
	assert.Equal(t, platforms.FulfillmentResult{ExternalID: first.ExternalID, Created: false}, second)

	after, err := c.FetchOrder(ctx, b, target.ExternalID)
	require.NoError(t, err)
	assert.Equal(t, platforms.FulfillmentFulfilled, after.FulfillmentStatus)
	assert.Equal(t, platforms.StatusShipped, after.Status)
	assert.True(t, after.UpdatedAt.After(target.UpdatedAt))
	fs, _ := after.SourceData["fulfillments"].([]any)
	require.Len(t, fs, 1, "one fulfillment recorded")
	// The changed order shows up as changed since its old updated_at.
	changed, _ := listAll(t, c, b, time.Now().Add(-time.Minute))
	require.Len(t, changed, 1)
	assert.Equal(t, target.ExternalID, changed[0].ExternalID)

	// Nothing left to fulfill with a new tracking number.
	push.TrackingNumber = "1Z999AA10123456785"
	_, err = c.PushFulfillment(ctx, b, push)
	var pe *platforms.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, platforms.CodeNothingToFulfill, pe.Code)

	// The label bought again: the fulfillment moves to the new number
	// (update_tracking), named from the service's carrier code; a company
	// the platform does not know is refused as the platform refuses it.
	push.ReplacesTrackingNumber, push.Carrier, push.TrackingURL = "1Z999AA10123456784", "carrier_b", ""
	moved, err := c.PushFulfillment(ctx, b, push)
	require.NoError(t, err)
	assert.Equal(t, platforms.FulfillmentResult{ExternalID: first.ExternalID, Updated: true}, moved)
	after, err = c.FetchOrder(ctx, b, target.ExternalID)
	require.NoError(t, err)
	fs, _ = after.SourceData["fulfillments"].([]any)
	require.Len(t, fs, 1, "moved, not a second fulfillment")
	assert.Equal(t, "1Z999AA10123456785", fs[0].(map[string]any)["tracking_number"])
	assert.Equal(t, "UPS", fs[0].(map[string]any)["tracking_company"])
	refused := push
	refused.TrackingNumber, refused.ReplacesTrackingNumber = "1Z999AA10123456786", "1Z999AA10123456785"
	refused.Carrier = "Bogus Parcels"
	_, err = c.PushFulfillment(ctx, b, refused)
	require.Error(t, err, "an unknown tracking company without a url is refused")

	// Partial fulfillment of a multi-line order, line by line.
	var multi platforms.Order
	for _, o := range all {
		if o.FulfillmentStatus == platforms.FulfillmentUnfulfilled && o.Status == platforms.StatusConfirmed && len(o.LineItems) >= 2 && o.ExternalID != target.ExternalID {
			multi = o
			break
		}
	}
	require.NotEmpty(t, multi.ExternalID)
	line := multi.LineItems[0]
	res, err := c.PushFulfillment(ctx, b, platforms.Fulfillment{OrderExternalID: multi.ExternalID, TrackingNumber: "PART-1", Carrier: "USPS",
		LineItems: []platforms.FulfillmentLine{{ExternalID: line.ExternalID, Quantity: line.Quantity}}})
	require.NoError(t, err)
	assert.True(t, res.Created)
	partial, err := c.FetchOrder(ctx, b, multi.ExternalID)
	require.NoError(t, err)
	assert.Equal(t, platforms.FulfillmentPartial, partial.FulfillmentStatus)

	// Locations.
	locs, err := c.ListLocations(ctx, b)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(locs), 2)
	assert.NotEmpty(t, locs[0].ExternalID)
	assert.NotEmpty(t, locs[0].Address.City)
	assert.True(t, locs[0].IsDefault)

	// Webhooks: register, list, duplicate refused, delete.
	hook, err := c.RegisterWebhook(ctx, b, "orders/create", "https://fos.example.com/webhooks/storefront_a")
	require.NoError(t, err)
	_, err = c.RegisterWebhook(ctx, b, "orders/create", "https://fos.example.com/webhooks/storefront_a")
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 422, pe.StatusCode)
	_, err = c.RegisterWebhook(ctx, b, "orders/nope", "https://fos.example.com/webhooks/storefront_a")
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, pe.Message, "Invalid topic specified")
	hooks, err := c.ListWebhooks(ctx, b)
	require.NoError(t, err)
	assert.Equal(t, []platforms.Webhook{hook}, hooks)
	require.NoError(t, c.DeleteWebhook(ctx, b, hook.ID))
	require.NoError(t, c.DeleteWebhook(ctx, b, hook.ID), "already gone counts as deleted")
	hooks, err = c.ListWebhooks(ctx, b)
	require.NoError(t, err)
	assert.Empty(t, hooks)

	// Unknown order.
	_, err = c.FetchOrder(ctx, b, "1")
	require.ErrorIs(t, err, platforms.ErrOrderNotFound)
}

func TestStorefrontASandboxFailAndRateLimit(t *testing.T) {
	srv := newSandbox(t)
	c := platforms.NewStorefrontA(srv.URL+"/platforms/storefront_a", srv.Client())
	ctx := context.Background()

	_, _, err := c.ListOrders(ctx, sfaBridge("accessToken", "sandbox-fail"), time.Time{}, "")
	require.ErrorIs(t, err, platforms.ErrUnauthorized)
	assert.Contains(t, err.Error(), "Invalid API key or access token")
	assert.False(t, platforms.IsRetryable(err))

	for _, shop := range []string{"sandbox-fail.myshopify.com", "sandbox-fail"} {
		_, _, err = c.ListOrders(ctx, sfaBridge("shopDomain", shop), time.Time{}, "")
		require.Error(t, err)
		assert.True(t, platforms.IsRetryable(err), shop)
	}

	// Every other call is throttled: the next call waits as told (the
	// connector sleeps a wait this short) and goes on.
	b := sfaBridge("accessToken", "sandbox-ratelimit")
	_, _, err = c.ListOrders(ctx, b, time.Time{}, "")
	require.ErrorIs(t, err, platforms.ErrRateLimited)
	wait, _ := platforms.RetryAfter(err)
	assert.Equal(t, time.Second, wait)
	start := time.Now()
	orders, next, err := c.ListOrders(ctx, b, time.Time{}, "")
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond, "waited before calling again")
	assert.Len(t, orders, 250)
	assert.NotEmpty(t, next)

	// The call-limit header is on every answer.
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/platforms/storefront_a/admin/api/2026-07/locations.json", nil)
	req.Header.Set("X-Shopify-Access-Token", "t")
	req.Header.Set("X-Shopify-Shop-Domain", "x.myshopify.com")
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "1/40", resp.Header.Get("X-Shopify-Shop-Api-Call-Limit"))
}

func TestStorefrontASandboxBulkStore(t *testing.T) {
	srv := newSandbox(t)
	c := platforms.NewStorefrontA(srv.URL+"/platforms/storefront_a", srv.Client())
	all, pages := listAll(t, c, sfaBridge("shopDomain", "bulk-1200.myshopify.com"), time.Time{})
	assert.Len(t, all, 1200)
	assert.Equal(t, 5, pages)
}

// A fulfillment the merchant cancelled (POST fulfillments/{id}/cancel.json):
// the sandbox refuses to update its tracking (422) as the platform does,
// and the push that would have moved it to a new number creates a new
// fulfillment over the lines the cancel opened again.
func TestStorefrontASandboxCancelledFulfillmentIsNotMoved(t *testing.T) {
	srv := newSandbox(t)
	c := platforms.NewStorefrontA(srv.URL+"/platforms/storefront_a", srv.Client())
	ctx := context.Background()
	shop := "cancel-demo.myshopify.com"
	b := sfaBridge("shopDomain", shop)
	all, _ := listAll(t, c, b, time.Time{})
	var target platforms.Order
	for _, o := range all {
		if o.FulfillmentStatus == platforms.FulfillmentUnfulfilled && o.Status == platforms.StatusConfirmed {
			target = o
			break
		}
	}
	require.NotEmpty(t, target.ExternalID)
	first, err := c.PushFulfillment(ctx, b, platforms.Fulfillment{OrderExternalID: target.ExternalID, TrackingNumber: "1ZCANCEL00000001", Carrier: "carrier_b"})
	require.NoError(t, err)
	require.True(t, first.Created)

	post := func(path, body string) int {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/platforms/storefront_a"+sfaRoot+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("X-Shopify-Access-Token", "shpat_test")
		req.Header.Set("X-Shopify-Shop-Domain", shop)
		req.Header.Set("Content-Type", "application/json")
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, post("/fulfillments/"+first.ExternalID+"/cancel.json", `{}`))
	reopened, err := c.FetchOrder(ctx, b, target.ExternalID)
	require.NoError(t, err)
	assert.Equal(t, platforms.FulfillmentUnfulfilled, reopened.FulfillmentStatus, "the cancel opened its lines again")
	assert.Equal(t, http.StatusUnprocessableEntity, post("/fulfillments/"+first.ExternalID+"/update_tracking.json",
		`{"fulfillment": {"tracking_info": {"number": "1ZCANCEL00000002", "company": "UPS"}}}`), "a cancelled fulfillment's tracking cannot change")
	assert.Equal(t, http.StatusUnprocessableEntity, post("/fulfillments/"+first.ExternalID+"/cancel.json", `{}`), "cancelled once")
	assert.Equal(t, http.StatusNotFound, post("/fulfillments/999100/cancel.json", `{}`))

	again, err := c.PushFulfillment(ctx, b, platforms.Fulfillment{OrderExternalID: target.ExternalID, TrackingNumber: "1ZCANCEL00000002", Carrier: "carrier_b",
		ReplacesTrackingNumber: "1ZCANCEL00000001", FulfillmentExternalID: first.ExternalID})
	require.NoError(t, err)
	assert.True(t, again.Created, "a new fulfillment, the cancelled one left as it is")
	assert.NotEqual(t, first.ExternalID, again.ExternalID)
	after, err := c.FetchOrder(ctx, b, target.ExternalID)
	require.NoError(t, err)
	assert.Equal(t, platforms.FulfillmentFulfilled, after.FulfillmentStatus)
	fs, _ := after.SourceData["fulfillments"].([]any)
	require.Len(t, fs, 2)
	assert.Equal(t, "cancelled", fs[0].(map[string]any)["status"])
	assert.Equal(t, "1ZCANCEL00000002", fs[1].(map[string]any)["tracking_number"])
}
