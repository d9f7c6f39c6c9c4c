package platforms_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/sandboxapi"
)

// The storefront_b connector against the sandbox stores below
// /platforms/storefront_b, the sandbox URL of the type under FOS_SANDBOX=1.
func TestStorefrontBAgainstTheSandboxStore(t *testing.T) {
	srv := newSandbox(t)
	c := platforms.NewStorefrontB(srv.URL+"/platforms/storefront_b", srv.Client())
	ctx := context.Background()
	b := sfbBridge("storeUrl", "https://demo-shop.example.com/store")

	all, pages := listAll(t, c, b, time.Time{})
	require.Len(t, all, sandboxapi.StoreSize)
	assert.Equal(t, 3, pages, "100 a page")
	seen := map[string]bool{}
	statuses := map[string]bool{}
	for i, o := range all {
		assert.False(t, seen[o.ExternalID], "order listed twice")
		seen[o.ExternalID] = true
		statuses[o.Status] = true
		require.NotEmpty(t, o.LineItems, o.ExternalID)
		require.NotNil(t, o.ShippingAddress)
		assert.NotEmpty(t, o.ShippingAddress.Address1)
		assert.NotEmpty(t, o.Customer.Email)
		assert.False(t, o.UpdatedAt.IsZero())
		assert.InDelta(t, o.Totals.Total, o.Totals.Subtotal-o.Totals.Discount+o.Totals.Shipping+o.Totals.Tax, 0.001, o.ExternalID)
		if i > 0 {
			prev, _ := strconv.ParseInt(all[i-1].ExternalID, 10, 64)
			cur, _ := strconv.ParseInt(o.ExternalID, 10, 64)
			assert.Less(t, prev, cur, "listed by id")
		}
	}
	assert.GreaterOrEqual(t, len(statuses), 5, "a spread of statuses: %v", statuses)

	// modified_after filters (a second early, never later).
	mid := all[len(all)/2].UpdatedAt
	recent, _ := listAll(t, c, b, mid)
	require.NotEmpty(t, recent)
	assert.Less(t, len(recent), len(all))
	for _, o := range recent {
		assert.False(t, o.UpdatedAt.Before(mid.Add(-time.Second)))
	}

	// The same store the same orders; another store others.
	again, _ := listAll(t, c, b, time.Time{})
	assert.Equal(t, all, again)
	other, _ := listAll(t, c, sfbBridge("storeUrl", "https://demo-shop.example.com"), time.Time{})
	assert.NotEqual(t, all[0].ExternalID, other[0].ExternalID)

	// Fetch a processing order, push twice: one status change, one note.
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

	push := platforms.Fulfillment{OrderExternalID: target.ExternalID, TrackingNumber: "1Z999AA10123456784", Carrier: "UPS", NotifyCustomer: true}
	first, err := c.PushFulfillment(ctx, b, push)
	require.NoError(t, err)
	assert.True(t, first.Created)
	second, err := c.PushFulfillment(ctx, b, push)
	require.NoError(t, err)
	assert.Equal(t, platforms.FulfillmentResult{ExternalID: first.ExternalID, Created: false}, second)
	after, err := c.FetchOrder(ctx, b, target.ExternalID)
	require.NoError(t, err)
	assert.Equal(t, platforms.StatusShipped, after.Status)
	assert.Equal(t, platforms.FulfillmentFulfilled, after.FulfillmentStatus)
	assert.True(t, after.UpdatedAt.After(target.UpdatedAt))
	changed, _ := listAll(t, c, b, time.Now().Add(-time.Minute))
	require.Len(t, changed, 1)
	assert.Equal(t, target.ExternalID, changed[0].ExternalID)

	// The notes the store recorded: the status change and one tracking note.
	notes := sandboxGet(t, srv, "/platforms/storefront_b/demo-shop.example.com/store/wp-json/wc/v3/orders/"+target.ExternalID+"/notes")
	assert.Equal(t, 1, strings.Count(notes, "1Z999AA10123456784"), notes)
	assert.Contains(t, notes, "Order status changed from Processing to Completed.")

	// A store with the Shipment Tracking extension: a tracking item, once,
	// named from the service's carrier code.
	var other2 platforms.Order
	for _, o := range all {
		if o.Status == platforms.StatusConfirmed && o.ExternalID != target.ExternalID {
			other2 = o
			break
		}
	}
	require.NotEmpty(t, other2.ExternalID)
	tb := sfbBridge("storeUrl", "https://demo-shop.example.com/store", platforms.ConfigShipmentTracking, "true")
	tpush := platforms.Fulfillment{OrderExternalID: other2.ExternalID, TrackingNumber: "9400111899560000000000", Carrier: "carrier_c",
		ShipDate: time.Date(2026, 7, 10, 0, 0, 0, 0, time.UTC)}
	tfirst, err := c.PushFulfillment(ctx, tb, tpush)
	require.NoError(t, err)
	assert.True(t, tfirst.Created)
	tsecond, err := c.PushFulfillment(ctx, tb, tpush)
	require.NoError(t, err)
	assert.Equal(t, platforms.FulfillmentResult{ExternalID: tfirst.ExternalID, Created: false}, tsecond)
	items := sandboxGet(t, srv, "/platforms/storefront_b/demo-shop.example.com/store/wp-json/wc-shipment-tracking/v3/orders/"+other2.ExternalID+"/shipment-trackings")
	assert.Equal(t, 1, strings.Count(items, "9400111899560000000000"), items)
	assert.Contains(t, items, `"tracking_provider":"USPS"`)
	assert.Contains(t, items, `"date_shipped":"2026-07-10"`)
	tafter, err := c.FetchOrder(ctx, tb, other2.ExternalID)
	require.NoError(t, err)
	assert.Equal(t, platforms.StatusShipped, tafter.Status)

	// A cancelled order has nothing to fulfill.
	for _, o := range all {
		if o.Status == platforms.StatusCancelled {
			_, err = c.PushFulfillment(ctx, b, platforms.Fulfillment{OrderExternalID: o.ExternalID, TrackingNumber: "X1", Carrier: "UPS"})
			var pe *platforms.Error
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, platforms.CodeNothingToFulfill, pe.Code)
			break
		}
	}

	// Webhooks.
	hook, err := c.RegisterWebhook(ctx, b, "order.updated", "https://fos.example.com/webhooks/storefront_b")
	require.NoError(t, err)
	hooks, err := c.ListWebhooks(ctx, b)
	require.NoError(t, err)
	assert.Equal(t, []platforms.Webhook{hook}, hooks)
	require.NoError(t, c.DeleteWebhook(ctx, b, hook.ID))
	require.NoError(t, c.DeleteWebhook(ctx, b, hook.ID))
	hooks, err = c.ListWebhooks(ctx, b)
	require.NoError(t, err)
	assert.Empty(t, hooks)
	_, err = c.RegisterWebhook(ctx, b, "order.nope", "https://fos.example.com/x")
	require.Error(t, err)

	_, err = c.FetchOrder(ctx, b, "1")
	require.ErrorIs(t, err, platforms.ErrOrderNotFound)
}

// sandboxGet reads a sandbox path with any Basic credentials.
func sandboxGet(t *testing.T, srv *httptest.Server, path string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	require.NoError(t, err)
	req.SetBasicAuth("ck_example", "cs_example")
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode, string(body))
	return string(body)
}

func TestStorefrontBSandboxFailAndRateLimit(t *testing.T) {
	srv := newSandbox(t)
	c := platforms.NewStorefrontB(srv.URL+"/platforms/storefront_b", srv.Client())
	ctx := context.Background()

	for _, b := range []platforms.Bridge{sfbBridge("consumerKey", "sandbox-fail"), sfbBridge("consumerSecret", "sandbox-fail")} {
		_, _, err := c.ListOrders(ctx, b, time.Time{}, "")
		require.ErrorIs(t, err, platforms.ErrUnauthorized)
		assert.Contains(t, err.Error(), "Consumer key is invalid.")
	}
	_, _, err := c.ListOrders(ctx, sfbBridge("storeUrl", "https://sandbox-fail.example.com"), time.Time{}, "")
	require.Error(t, err)
	assert.True(t, platforms.IsRetryable(err))
	assert.NotErrorIs(t, err, platforms.ErrUnauthorized)

	// Every other call is throttled: the caller waits as told and goes on.
	b := sfbBridge("consumerKey", "sandbox-ratelimit")
	_, _, err = c.ListOrders(ctx, b, time.Time{}, "")
	require.ErrorIs(t, err, platforms.ErrRateLimited)
	wait, _ := platforms.RetryAfter(err)
	assert.Equal(t, time.Second, wait)
	start := time.Now()
	orders, next, err := c.ListOrders(ctx, b, time.Time{}, "")
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond, "waited before calling again")
	assert.Len(t, orders, 100)
	assert.NotEmpty(t, next)

	// The page headers.
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/platforms/storefront_b/x.example.com/wp-json/wc/v3/orders?per_page=7", nil)
	req.SetBasicAuth("ck", "cs")
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, "300", resp.Header.Get("X-WP-Total"))
	assert.Equal(t, "43", resp.Header.Get("X-WP-TotalPages"))
	assert.Contains(t, resp.Header.Get("Link"), `rel="next"`)

	bulk, pages := listAll(t, c, sfbBridge("storeUrl", "https://bulk-1200.example.com"), time.Time{})
	assert.Len(t, bulk, 1200)
	assert.Equal(t, 12, pages)
}

// The sandbox stores answer with every field of the published examples.
func TestSandboxStoresSpeakThePublishedShapes(t *testing.T) {
	srv := newSandbox(t)
	missing := func(published, served []byte, optional ...string) []string {
		got := keyPaths(t, served)
		var out []string
	next:
		for k := range keyPaths(t, published) {
			for _, o := range optional {
				if k == o || strings.HasPrefix(k, o+".") {
					continue next
				}
			}
			if !got[k] {
				out = append(out, k)
			}
		}
		return out
	}

	// storefront_b: an order, a list, notes.
	list := sandboxGet(t, srv, "/platforms/storefront_b/shape.example.com/wp-json/wc/v3/orders?per_page=100&status=completed")
	assert.Empty(t, missing(platformExample(t, "storefront_b", "orders_list_response.json"), []byte(list), "fee_lines", "refunds"))
	var orders []struct {
		ID int64 `json:"id"`
	}
	require.NoError(t, json.Unmarshal([]byte(list), &orders))
	require.NotEmpty(t, orders)
	one := sandboxGet(t, srv, "/platforms/storefront_b/shape.example.com/wp-json/wc/v3/orders/"+fmt.Sprint(orders[0].ID))
	assert.Empty(t, missing(platformExample(t, "storefront_b", "order_get_response.json"), []byte(one), "fee_lines", "refunds"))

	// marketplace_a: a v0 order, its items, the supply sources.
	c := platforms.NewMarketplaceA(srv.URL+"/platforms/marketplace_a", srv.URL+"/platforms/marketplace_a/lwa", srv.Client())
	all, _, err := c.ListOrders(context.Background(), mpaBridge(), time.Time{}, "")
	require.NoError(t, err)
	raw, err := json.Marshal(all[1].SourceData)
	require.NoError(t, err)
	var published struct {
		Payload json.RawMessage `json:"payload"`
	}
	require.NoError(t, json.Unmarshal(platformExample(t, "marketplace_a", "ordersV0_getOrder_response.json"), &published))
	// Left out: fields of programs the sandbox sellers are not in.
	assert.Empty(t, missing(published.Payload, raw, "DefaultShipFromLocationAddress", "FulfillmentInstruction", "AutomatedShippingSettings",
		"BuyerInfo.BuyerTaxInfo", "BuyerInfo.PurchaseOrderNumber"))
	require.NoError(t, json.Unmarshal(platformExample(t, "marketplace_a", "ordersV0_getOrderItems_response.json"), &published))
	var items struct {
		OrderItems []json.RawMessage `json:"OrderItems"`
	}
	require.NoError(t, json.Unmarshal(published.Payload, &items))
	served, _ := json.Marshal(all[1].SourceData["OrderItems"])
	assert.Empty(t, missing(items.OrderItems[1], served, "ConditionSubtypeId", "ConditionNote", "PriceDesignation", "BuyerInfo",
		"BuyerRequestedCancel", "PromotionIds"))
}

// A store whose host strips the Authorization header answers the Basic
// credentials with a 401: the connector goes on with the query-string
// credentials (HTTPS only) and keeps using them; a plain-HTTP store is
// refused before anything is sent.
func TestStorefrontBQueryStringCredentials(t *testing.T) {
	srv := newSandbox(t)
	c := platforms.NewStorefrontB(srv.URL+"/platforms/storefront_b", srv.Client())
	ctx := context.Background()
	b := sfbBridge("storeUrl", "https://strip-auth.example.com")
	all, _ := listAll(t, c, b, time.Time{})
	require.Len(t, all, sandboxapi.StoreSize)
	got, err := c.FetchOrder(ctx, b, all[0].ExternalID)
	require.NoError(t, err)
	assert.Equal(t, all[0].ExternalID, got.ExternalID)

	// Configured up front: no 401 first (a fresh connector).
	fresh := platforms.NewStorefrontB(srv.URL+"/platforms/storefront_b", srv.Client())
	qb := sfbBridge("storeUrl", "https://strip-auth.example.com")
	qb.Config["queryStringAuth"] = true
	_, err = fresh.FetchOrder(ctx, qb, all[0].ExternalID)
	require.NoError(t, err)

	// Wrong credentials stay refused either way, and nothing secret is in
	// the error.
	_, err = fresh.FetchOrder(ctx, sfbBridge("storeUrl", "https://strip-auth.example.com", "consumerSecret", "sandbox-fail"), all[0].ExternalID)
	require.ErrorIs(t, err, platforms.ErrUnauthorized)
	assert.NotContains(t, err.Error(), "cs_example")

	// Plain HTTP: a clear refusal naming the field (production connector).
	prod := platforms.NewStorefrontB("", srv.Client())
	_, err = prod.FetchOrder(ctx, sfbBridge("storeUrl", "http://shop.example.com"), "1")
	var pe *platforms.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "storeUrl", pe.Field)
	assert.Contains(t, pe.Message, "https://")
}
