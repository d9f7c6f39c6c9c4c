package platforms_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/sandboxapi"
)

// The marketplace_a connector against the sandbox at the prefixes
// FOS_MARKETPLACE_A_URL and FOS_MARKETPLACE_A_AUTH_URL default to under
// FOS_SANDBOX=1.
func newSandboxMarketplaceA(t *testing.T) (*platforms.MarketplaceA, string, *http.Client) {
	srv := newSandbox(t)
	return platforms.NewMarketplaceA(srv.URL+"/platforms/marketplace_a", srv.URL+"/platforms/marketplace_a/lwa", srv.Client()), srv.URL, srv.Client()
}

func TestMarketplaceAAgainstTheSandboxSeller(t *testing.T) {
	c, _, _ := newSandboxMarketplaceA(t)
	ctx := context.Background()
	b := mpaBridge("refreshToken", "Atzr|sandbox-seller-1")

	all, pages := listAll(t, c, b, time.Time{})
	require.Len(t, all, sandboxapi.StoreSize)
	assert.Equal(t, 3, pages, "100 a page")
	seen := map[string]bool{}
	statuses := map[string]bool{}
	withoutPII := 0
	for i, o := range all {
		assert.False(t, seen[o.ExternalID], "order listed twice")
		seen[o.ExternalID] = true
		statuses[o.Status] = true
		require.NotEmpty(t, o.LineItems, o.ExternalID)
		require.NotNil(t, o.ShippingAddress)
		assert.NotEmpty(t, o.ShippingAddress.City)
		if o.Customer.Email == "" {
			withoutPII++
			assert.Empty(t, o.ShippingAddress.Address1, "no PII role: no street either")
		}
		assert.InDelta(t, o.Totals.Total, o.Totals.Subtotal-o.Totals.Discount+o.Totals.Shipping+o.Totals.Tax, 0.001, o.ExternalID)
		if i > 0 {
			assert.False(t, o.UpdatedAt.Before(all[i-1].UpdatedAt), "listed by LastUpdateDate")
		}
	}
	assert.GreaterOrEqual(t, len(statuses), 5, "a spread of statuses: %v", statuses)
	assert.Equal(t, sandboxapi.StoreSize/5, withoutPII)

	// LastUpdatedAfter filters.
	mid := all[len(all)/2].UpdatedAt
	recent, _ := listAll(t, c, b, mid)
	assert.Less(t, len(recent), len(all))
	assert.Greater(t, len(recent), 100)
	for _, o := range recent {
		assert.False(t, o.UpdatedAt.Before(mid))
	}
	again, _ := listAll(t, c, b, time.Time{})
	assert.Equal(t, all, again)
	other, _ := listAll(t, c, mpaBridge("refreshToken", "Atzr|sandbox-seller-2"), time.Time{})
	assert.NotEqual(t, all[0].ExternalID, other[0].ExternalID)

	// Fetch an unshipped multi-line order (its items span item pages), confirm twice: once.
	var target platforms.Order
	for _, o := range all {
		if o.Status == platforms.StatusConfirmed && len(o.LineItems) == 3 {
			target = o
			break
		}
	}
	require.NotEmpty(t, target.ExternalID)
	got, err := c.FetchOrder(ctx, b, target.ExternalID)
	require.NoError(t, err)
	assert.Equal(t, target, *got)

	push := platforms.Fulfillment{OrderExternalID: target.ExternalID, TrackingNumber: "1Z999AA10123456784", Carrier: "UPS"}
	first, err := c.PushFulfillment(ctx, b, push)
	require.NoError(t, err)
	assert.True(t, first.Created)
	second, err := c.PushFulfillment(ctx, b, push)
	require.NoError(t, err)
	assert.False(t, second.Created)
	after, err := c.FetchOrder(ctx, b, target.ExternalID)
	require.NoError(t, err)
	assert.Equal(t, platforms.StatusShipped, after.Status)
	assert.Equal(t, platforms.FulfillmentFulfilled, after.FulfillmentStatus)
	changed, _ := listAll(t, c, b, time.Now().Add(-time.Minute))
	require.Len(t, changed, 1)
	assert.Equal(t, target.ExternalID, changed[0].ExternalID)

	// Line by line: the first line, then the rest.
	var multi platforms.Order
	for _, o := range all {
		if o.Status == platforms.StatusConfirmed && len(o.LineItems) >= 2 && o.ExternalID != target.ExternalID {
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
	res, err = c.PushFulfillment(ctx, b, platforms.Fulfillment{OrderExternalID: multi.ExternalID, TrackingNumber: "PART-1", Carrier: "USPS",
		LineItems: []platforms.FulfillmentLine{{ExternalID: line.ExternalID, Quantity: line.Quantity}}})
	require.NoError(t, err)
	assert.False(t, res.Created, "a retry of the same lines sends nothing")

	// Cancelled orders have nothing to fulfill.
	for _, o := range all {
		if o.Status == platforms.StatusCancelled {
			_, err = c.PushFulfillment(ctx, b, platforms.Fulfillment{OrderExternalID: o.ExternalID, TrackingNumber: "X1", Carrier: "UPS"})
			var pe *platforms.Error
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, platforms.CodeNothingToFulfill, pe.Code)
			break
		}
	}

	// Supply sources.
	locs, err := c.ListLocations(ctx, b)
	require.NoError(t, err)
	require.Len(t, locs, 3)
	assert.True(t, locs[0].IsDefault)
	assert.NotEmpty(t, locs[0].ExternalID)
	assert.NotEmpty(t, locs[0].Address.City)
	assert.NotEmpty(t, locs[0].Address.Address1)

	_, err = c.FetchOrder(ctx, b, "111-0000000-0000000")
	require.ErrorIs(t, err, platforms.ErrOrderNotFound)
}

func TestMarketplaceASandboxFailAndRateLimit(t *testing.T) {
	c, base, client := newSandboxMarketplaceA(t)
	ctx := context.Background()

	for _, kv := range [][]string{{"refreshToken", "sandbox-fail"}, {"clientId", "sandbox-fail"}, {"clientSecret", "sandbox-fail"}} {
		_, _, err := c.ListOrders(ctx, mpaBridge(kv...), time.Time{}, "")
		require.ErrorIs(t, err, platforms.ErrUnauthorized, kv)
		assert.False(t, platforms.IsRetryable(err))
	}
	_, _, err := c.ListOrders(ctx, mpaBridge("marketplaceId", "sandbox-fail"), time.Time{}, "")
	require.Error(t, err)
	assert.True(t, platforms.IsRetryable(err))
	assert.NotErrorIs(t, err, platforms.ErrUnauthorized)

	// Every other getOrders is throttled: the caller waits as told and goes on.
	b := mpaBridge("refreshToken", "sandbox-ratelimit")
	_, _, err = c.ListOrders(ctx, b, time.Time{}, "")
	require.ErrorIs(t, err, platforms.ErrRateLimited)
	wait, _ := platforms.RetryAfter(err)
	assert.Equal(t, time.Second, wait, "one call at the operation's rate")
	start := time.Now()
	orders, next, err := c.ListOrders(ctx, b, time.Time{}, "")
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond, "waited before calling again")
	assert.Len(t, orders, 100)
	assert.NotEmpty(t, next)

	// The token host's own answer, and an access token it never issued.
	resp, err := client.PostForm(base+"/platforms/marketplace_a/lwa/auth/o2/token", url.Values{
		"grant_type": {"refresh_token"}, "refresh_token": {"Atzr|x"}, "client_id": {"id"}, "client_secret": {"s"}})
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	assert.Contains(t, string(body), `"expires_in":3600`)
	assert.NotContains(t, string(body), "Atzr|x")
	req, _ := http.NewRequest(http.MethodGet, base+"/platforms/marketplace_a/orders/v0/orders?MarketplaceIds=ATVPDKIKX0DER&CreatedAfter=2020-01-01T00:00:00Z", nil)
	req.Header.Set("x-amz-access-token", "Atza|forged")
	resp, err = client.Do(req)
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, 403, resp.StatusCode)
	assert.True(t, strings.Contains(string(body), "revoked, malformed or invalid"))
	assert.Equal(t, "1", resp.Header.Get("x-amzn-RateLimit-Limit"))

	bulk, pages := listAll(t, c, mpaBridge("refreshToken", "bulk-450"), time.Time{})
	assert.Len(t, bulk, 450)
	assert.Equal(t, 5, pages)
}
