package platforms_test

import (
	"context"
	"encoding/json"
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

// Buyer and address data come only with a restricted data token: the
// connector asks the Tokens API for one and the sandbox, like the
// marketplace, returns the street, name and e-mail only to it. Without a
// PII role the orders have no street (and the connector goes on).
func TestMarketplaceARestrictedDataToken(t *testing.T) {
	c, base, client := newSandboxMarketplaceA(t)
	ctx := context.Background()
	b := mpaBridge("refreshToken", "Atzr|sandbox-seller-rdt")
	page, _, err := c.ListOrders(ctx, b, time.Time{}, "")
	require.NoError(t, err)
	withStreet := 0
	for _, o := range page {
		if o.ShippingAddress != nil && o.ShippingAddress.Address1 != "" {
			withStreet++
			assert.NotEmpty(t, o.Customer.Email)
			assert.NotEmpty(t, o.ShippingAddress.Name)
		}
	}
	assert.Equal(t, len(page)-len(page)/5, withStreet, "all but the sandbox's no-PII fifth")
	got, err := c.FetchOrder(ctx, b, page[1].ExternalID)
	require.NoError(t, err)
	assert.Equal(t, page[1].ShippingAddress, got.ShippingAddress)

	// The plain access token gets no PII, and an RDT does not work
	// outside the operations it names.
	tok := mpaSandboxToken(t, client, base, "Atzr|sandbox-seller-rdt")
	body := mpaSandboxGet(t, client, base+"/platforms/marketplace_a/orders/v0/orders/"+page[1].ExternalID, tok, 200)
	assert.NotContains(t, body, page[1].ShippingAddress.Address1)
	assert.NotContains(t, body, page[1].Customer.Email)
	rdt := mpaSandboxRDT(t, client, base, tok, `{"restrictedResources":[{"method":"GET","path":"/orders/v0/orders/{orderId}","dataElements":["shippingAddress"]}]}`)
	body = mpaSandboxGet(t, client, base+"/platforms/marketplace_a/orders/v0/orders/"+page[1].ExternalID, rdt, 200)
	assert.Contains(t, body, page[1].ShippingAddress.Address1, "the address it asked for")
	assert.NotContains(t, body, page[1].Customer.Email, "not the buyer it did not ask for")
	mpaSandboxGet(t, client, base+"/platforms/marketplace_a/orders/v0/orders/"+page[1].ExternalID+"/orderItems", rdt, 403)
	mpaSandboxGet(t, client, base+"/platforms/marketplace_a/supplySources/2020-07-01/supplySources", rdt, 403)

	// No PII role: the Tokens API refuses; orders come without PII.
	nopii := mpaBridge("refreshToken", "Atzr|sandbox-nopii")
	page, _, err = c.ListOrders(ctx, nopii, time.Time{}, "")
	require.NoError(t, err)
	for _, o := range page {
		assert.Empty(t, o.ShippingAddress.Address1)
		assert.Empty(t, o.Customer.Email)
		assert.NotEmpty(t, o.ShippingAddress.City)
	}
}

// A metered seller has the documented usage plans enforced: getOrders
// takes a burst of 20, then 429s naming the documented rate (0.0167/s),
// and the connector answers with the operation's wait (a minute), not a
// tight loop.
func TestMarketplaceASandboxEnforcesDocumentedRates(t *testing.T) {
	c, base, client := newSandboxMarketplaceA(t)
	ctx := context.Background()
	tok := mpaSandboxToken(t, client, base, "Atzr|sandbox-metered-1")
	list := base + "/platforms/marketplace_a/orders/v0/orders?MarketplaceIds=ATVPDKIKX0DER&CreatedAfter=2020-01-01T00:00:00Z&MaxResultsPerPage=1"
	for i := 0; i < 20; i++ {
		mpaSandboxGet(t, client, list, tok, 200)
	}
	resp := mpaSandboxDo(t, client, http.MethodGet, list, tok, "")
	assert.Equal(t, 429, resp.status)
	assert.Equal(t, "0.0167", resp.header.Get("x-amzn-RateLimit-Limit"))
	assert.Contains(t, resp.body, "QuotaExceeded")

	// The connector (a fresh seller, one order a page so the items stay
	// within their own burst) is throttled at the 21st list call and told
	// to wait a minute.
	one := platforms.NewMarketplaceA(base+"/platforms/marketplace_a", base+"/platforms/marketplace_a/lwa", client, platforms.ListLimit(1))
	b := mpaBridge("refreshToken", "Atzr|sandbox-metered-2")
	for i := 0; i < 20; i++ {
		_, _, err := one.ListOrders(ctx, b, time.Time{}, "")
		require.NoError(t, err, "call %d", i)
	}
	_, _, err := one.ListOrders(ctx, b, time.Time{}, "")
	require.ErrorIs(t, err, platforms.ErrRateLimited)
	wait, _ := platforms.RetryAfter(err)
	assert.InDelta(t, 60, wait.Seconds(), 1, "one request at 0.0167/s")
	_ = c
}

type mpaSandboxResp struct {
	status int
	header http.Header
	body   string
}

func mpaSandboxDo(t *testing.T, client *http.Client, method, u, token, body string) mpaSandboxResp {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("x-amz-access-token", token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(resp.Body)
	return mpaSandboxResp{resp.StatusCode, resp.Header, string(raw)}
}

func mpaSandboxGet(t *testing.T, client *http.Client, u, token string, want int) string {
	t.Helper()
	r := mpaSandboxDo(t, client, http.MethodGet, u, token, "")
	require.Equal(t, want, r.status, r.body)
	return r.body
}

func mpaSandboxToken(t *testing.T, client *http.Client, base, refresh string) string {
	t.Helper()
	resp, err := client.PostForm(base+"/platforms/marketplace_a/lwa/auth/o2/token", url.Values{
		"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {"id"}, "client_secret": {"s"}})
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	var out struct {
		AccessToken string `json:"access_token"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.NotEmpty(t, out.AccessToken)
	return out.AccessToken
}

func mpaSandboxRDT(t *testing.T, client *http.Client, base, token, body string) string {
	t.Helper()
	r := mpaSandboxDo(t, client, http.MethodPost, base+"/platforms/marketplace_a"+platforms.MarketplaceARDTPath, token, body)
	require.Equal(t, 200, r.status, r.body)
	var out struct {
		Token     string `json:"restrictedDataToken"`
		ExpiresIn int    `json:"expiresIn"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.body), &out))
	require.Equal(t, 3600, out.ExpiresIn)
	return out.Token
}
