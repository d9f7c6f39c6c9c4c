package platforms_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/sandboxapi"
)

func newSandbox(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(sandboxapi.NewHandler())
	t.Cleanup(srv.Close)
	return srv
}

// bridges returns one valid bridge per type.
func bridges() []platforms.Bridge {
	cfgs := map[string]map[string]any{
		"storefront_a":   {"shopDomain": "demo.example.com", "accessToken": "tok-a"},
		"shipping_hub_a": {"apiKey": "key-1", "apiSecret": "secret-1"},
		"storefront_b":   {"storeUrl": "https://shop.example.com/", "consumerKey": "ck_1", "consumerSecret": "cs_1"},
		"storefront_c":   {"storeHash": "abc123", "accessToken": "tok-c"},
		"marketplace_a": {"sellerId": "SELLER1", "refreshToken": "Atzr|x", "clientId": "amzn1.app",
			"clientSecret": "cs", "marketplaceId": "ATVPDKIKX0DER"},
	}
	var out []platforms.Bridge
	for _, bt := range platforms.Types() {
		out = append(out, platforms.Bridge{ID: uuid.New(), OrganizationID: uuid.New(), Type: bt.Slug, Config: cfgs[bt.Slug]})
	}
	return out
}

func bridgeOf(typ string) platforms.Bridge {
	for _, b := range bridges() {
		if b.Type == typ {
			return b
		}
	}
	panic(typ)
}

func withConfig(b platforms.Bridge, kv ...string) platforms.Bridge {
	cfg := map[string]any{}
	for k, v := range b.Config {
		cfg[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "<delete>" {
			delete(cfg, kv[i])
			continue
		}
		cfg[kv[i]] = kv[i+1]
	}
	b.Config = cfg
	return b
}

func listAll(t *testing.T, c platforms.Connector, b platforms.Bridge, since time.Time) ([]platforms.Order, int) {
	t.Helper()
	var all []platforms.Order
	cursor, pages := "", 0
	for {
		page, next, err := c.ListOrders(context.Background(), b, since, cursor)
		require.NoError(t, err)
		all = append(all, page...)
		pages++
		require.Less(t, pages, 100, "paging does not end")
		if next == "" {
			return all, pages
		}
		cursor = next
	}
}

func TestListAndFetchEveryType(t *testing.T) {
	srv := newSandbox(t)
	reg := platforms.NewSandboxRegistry(srv.URL, srv.Client())
	ctx := context.Background()
	for _, b := range bridges() {
		t.Run(b.Type, func(t *testing.T) {
			c, err := reg.Get(b.Type)
			require.NoError(t, err)
			orders, _, err := c.ListOrders(ctx, b, time.Time{}, "")
			require.NoError(t, err)
			require.Len(t, orders, sandboxapi.CatalogSize)

			got, err := c.FetchOrder(ctx, b, orders[3].ExternalID)
			require.NoError(t, err)
			assert.Equal(t, orders[3], *got)
		})
	}
	_, err := reg.Get("erp_x")
	var pe *platforms.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, platforms.CodeUnsupportedType, pe.Code)
	assert.Len(t, reg.Types(), 5)
}

func TestFetchOrderMapsPlatformShape(t *testing.T) {
	srv := newSandbox(t)
	c := platforms.NewSandboxConnector(srv.URL, nil)
	b := bridgeOf("storefront_a")
	ids := sandboxapi.OrderIDs("storefront_a", "demo.example.com")
	require.Len(t, ids, sandboxapi.CatalogSize)

	statuses := map[string]bool{}
	for i, id := range ids {
		o, err := c.FetchOrder(context.Background(), b, id)
		require.NoError(t, err)
		assert.Equal(t, id, o.ExternalID)
		assert.Equal(t, "#"+strconv.Itoa(1001+i), o.OrderNumber)
		assert.Contains(t, o.Customer.Email, "@example.com")
		assert.NotEmpty(t, o.Customer.FirstName)
		assert.NotEmpty(t, o.Customer.LastName)
		require.NotNil(t, o.ShippingAddress)
		assert.NotEmpty(t, o.ShippingAddress.Address1)
		assert.NotEmpty(t, o.ShippingAddress.CountryCode)
		require.NotNil(t, o.BillingAddress)
		require.NotEmpty(t, o.LineItems)
		var sum float64
		for _, li := range o.LineItems {
			assert.NotEmpty(t, li.SKU)
			assert.NotEmpty(t, li.Name)
			assert.NotEmpty(t, li.ExternalID)
			assert.Positive(t, li.Quantity)
			assert.InDelta(t, li.UnitPrice*float64(li.Quantity), li.TotalPrice, 0.001)
			sum += li.TotalPrice
		}
		tot := o.Totals
		assert.InDelta(t, sum, tot.Subtotal, 0.001)
		assert.InDelta(t, tot.Subtotal-tot.Discount+tot.Shipping+tot.Tax, tot.Total, 0.001, "totals add up for %s", id)
		assert.Contains(t, []string{"USD", "CAD"}, o.Currency)
		assert.False(t, o.OrderedAt.IsZero())
		assert.True(t, o.UpdatedAt.After(o.OrderedAt))
		assert.NotNil(t, o.Tags)
		assert.Equal(t, mathRound(tot.Total), tot.Total)
		require.NotNil(t, o.SourceData)
		assert.Equal(t, o.OrderNumber, o.SourceData["name"])
		assert.Contains(t, []string{"pending", "authorized", "paid", "partially_paid", "refunded", "voided"}, o.PaymentStatus)
		assert.Contains(t, []string{"unfulfilled", "partial", "fulfilled"}, o.FulfillmentStatus)
		statuses[o.Status] = true

		switch o.Status {
		case platforms.StatusShipped, platforms.StatusDelivered:
			assert.Equal(t, platforms.FulfillmentFulfilled, o.FulfillmentStatus)
			assert.Equal(t, platforms.PaymentPaid, o.PaymentStatus)
		case platforms.StatusProcessing:
			assert.Equal(t, platforms.FulfillmentPartial, o.FulfillmentStatus)
		case platforms.StatusCancelled:
			assert.Equal(t, platforms.PaymentVoided, o.PaymentStatus)
			assert.NotNil(t, o.SourceData["cancelled_at"])
		case platforms.StatusRefunded:
			assert.Equal(t, platforms.PaymentRefunded, o.PaymentStatus)
		}
	}
	for _, s := range []string{"pending", "confirmed", "processing", "shipped", "delivered", "cancelled", "refunded"} {
		assert.True(t, statuses[s], "catalog has a %s order", s)
	}
}

func mathRound(v float64) float64 { return math.Round(v*100) / 100 }

func TestListPagingAndSince(t *testing.T) {
	srv := newSandbox(t)
	c := platforms.NewSandboxConnector(srv.URL, srv.Client(), platforms.WithPageSize(7))
	b := bridgeOf("storefront_c")

	all, pages := listAll(t, c, b, time.Time{})
	assert.Equal(t, 4, pages) // 25 orders, 7 per page
	require.Len(t, all, sandboxapi.CatalogSize)
	seen := map[string]bool{}
	for i, o := range all {
		assert.False(t, seen[o.ExternalID], "order %s listed twice", o.ExternalID)
		seen[o.ExternalID] = true
		if i > 0 {
			assert.False(t, o.UpdatedAt.Before(all[i-1].UpdatedAt), "list is ordered by updatedAt")
		}
	}

	// Determinism: a second full listing is identical.
	again, _ := listAll(t, c, b, time.Time{})
	assert.Equal(t, all, again)

	// since keeps orders updated at or after it, across pages too.
	cut := all[10].UpdatedAt
	recent, _ := listAll(t, c, b, cut)
	require.NotEmpty(t, recent)
	assert.Equal(t, all[10].ExternalID, recent[0].ExternalID)
	for _, o := range recent {
		assert.False(t, o.UpdatedAt.Before(cut))
	}
	assert.Len(t, recent, len(all)-10)

	none, next, err := c.ListOrders(context.Background(), b, time.Now().Add(24*time.Hour), "")
	require.NoError(t, err)
	assert.Empty(t, none)
	assert.Empty(t, next)
}

func TestStoresDiffer(t *testing.T) {
	srv := newSandbox(t)
	c := platforms.NewSandboxConnector(srv.URL, nil)
	a, _, err := c.ListOrders(context.Background(), bridgeOf("storefront_a"), time.Time{}, "")
	require.NoError(t, err)
	other := withConfig(bridgeOf("storefront_a"), "shopDomain", "other.example.com")
	o, _, err := c.ListOrders(context.Background(), other, time.Time{}, "")
	require.NoError(t, err)
	assert.NotEqual(t, a[0].ExternalID, o[0].ExternalID)

	// Spelling variants of one store give the same catalog.
	variant := withConfig(bridgeOf("storefront_a"), "shopDomain", "HTTPS://Demo.Example.com/")
	v, _, err := c.ListOrders(context.Background(), variant, time.Time{}, "")
	require.NoError(t, err)
	assert.Equal(t, a, v)
}

func TestFetchOrderNotFound(t *testing.T) {
	srv := newSandbox(t)
	c := platforms.NewSandboxConnector(srv.URL, nil)
	for _, id := range []string{"123", "no/such order"} {
		_, err := c.FetchOrder(context.Background(), bridgeOf("storefront_b"), id)
		require.Error(t, err)
		assert.ErrorIs(t, err, platforms.ErrOrderNotFound)
		assert.NotErrorIs(t, err, platforms.ErrUnauthorized)
		var pe *platforms.Error
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, http.StatusNotFound, pe.StatusCode)
		assert.False(t, pe.Retryable)
		assert.False(t, platforms.IsRetryable(err))
	}

	_, err := c.FetchOrder(context.Background(), bridgeOf("storefront_b"), " ")
	var pe *platforms.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, platforms.CodeInvalidRequest, pe.Code)
}

func TestSandboxFailCredential(t *testing.T) {
	srv := newSandbox(t)
	c := platforms.NewSandboxConnector(srv.URL, nil)
	cases := map[string]string{
		"storefront_a":   "accessToken",
		"shipping_hub_a": "apiSecret",
		"storefront_b":   "consumerKey",
		"storefront_c":   "accessToken",
		"marketplace_a":  "refreshToken",
	}
	for typ, key := range cases {
		b := withConfig(bridgeOf(typ), key, platforms.SandboxFailValue)
		_, _, err := c.ListOrders(context.Background(), b, time.Time{}, "")
		require.Error(t, err, typ)
		var pe *platforms.Error
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, http.StatusUnauthorized, pe.StatusCode, typ)
		assert.Equal(t, platforms.CodeUnauthorized, pe.Code)
		assert.False(t, pe.Retryable)
		assert.ErrorIs(t, err, platforms.ErrUnauthorized)
		assert.NotEmpty(t, pe.Message)

		_, err = c.FetchOrder(context.Background(), b, sandboxapi.OrderIDs(typ, "x")[0])
		assert.ErrorIs(t, err, platforms.ErrUnauthorized, typ)
		assert.NotErrorIs(t, err, platforms.ErrOrderNotFound)
	}
}

func TestSandboxFailConfigValue(t *testing.T) {
	srv := newSandbox(t)
	c := platforms.NewSandboxConnector(srv.URL, nil)
	for _, b := range []platforms.Bridge{
		withConfig(bridgeOf("storefront_a"), "shopDomain", platforms.SandboxFailValue),
		withConfig(bridgeOf("marketplace_a"), "marketplaceId", platforms.SandboxFailValue),
		withConfig(bridgeOf("storefront_a"), "webhookSecret", platforms.SandboxFailValue),
	} {
		_, _, err := c.ListOrders(context.Background(), b, time.Time{}, "")
		var pe *platforms.Error
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, http.StatusServiceUnavailable, pe.StatusCode)
		assert.Equal(t, platforms.CodePlatformUnavailable, pe.Code)
		assert.True(t, pe.Retryable)
		assert.True(t, platforms.IsRetryable(err))
	}
}

func TestMissingCredential(t *testing.T) {
	srv := newSandbox(t)
	c := platforms.NewSandboxConnector(srv.URL, nil)
	for typ, key := range map[string]string{"storefront_a": "accessToken", "storefront_b": "consumerSecret", "marketplace_a": "refreshToken"} {
		b := withConfig(bridgeOf(typ), key, "<delete>")
		_, _, err := c.ListOrders(context.Background(), b, time.Time{}, "")
		var pe *platforms.Error
		require.ErrorAs(t, err, &pe, typ)
		assert.Equal(t, http.StatusUnauthorized, pe.StatusCode, typ)
		assert.False(t, pe.Retryable)
	}

	// A missing store key is caught before any call.
	b := withConfig(bridgeOf("storefront_c"), "storeHash", "<delete>")
	_, _, err := c.ListOrders(context.Background(), b, time.Time{}, "")
	var pe *platforms.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, platforms.CodeInvalidConfig, pe.Code)
	assert.Equal(t, 0, pe.StatusCode)
}

func TestShippingHubStoreKeyNotInURL(t *testing.T) {
	var paths []string
	inner := sandboxapi.NewHandler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.RawQuery+" "+r.URL.EscapedPath()+" "+r.Header.Get("X-Sandbox-Config"))
		inner.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c := platforms.NewSandboxConnector(srv.URL+"/", nil)
	b := withConfig(bridgeOf("shipping_hub_a"), "webhookSecret", "whsec-very-secret", "storeId", "42")
	_, _, err := c.ListOrders(context.Background(), b, time.Time{}, "")
	require.NoError(t, err)
	require.Len(t, paths, 1)
	assert.NotContains(t, paths[0], "key-1")
	assert.NotContains(t, paths[0], "whsec-very-secret")
	assert.Contains(t, paths[0], "storeId=42")
	store, ok := platforms.SandboxStore("shipping_hub_a", b.Config)
	require.True(t, ok)
	assert.True(t, strings.HasPrefix(store, "acct_"))
	assert.Contains(t, paths[0], "/platforms/shipping_hub_a/stores/"+store+"/orders")
}

func TestServerErrorsAndNetworkFailures(t *testing.T) {
	var status int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"errors":[{"code":"X","message":"boom"}]}`))
	}))
	c := platforms.NewSandboxConnector(srv.URL, nil)
	b := bridgeOf("storefront_a")
	for s, want := range map[int]struct {
		code      string
		retryable bool
	}{
		500: {platforms.CodePlatformError, true},
		502: {platforms.CodePlatformUnavailable, true},
		429: {platforms.CodeRateLimited, true},
		403: {platforms.CodeForbidden, false},
		422: {platforms.CodePlatformError, false},
	} {
		status = s
		_, err := c.FetchOrder(context.Background(), b, "1")
		var pe *platforms.Error
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, s, pe.StatusCode)
		assert.Equal(t, want.code, pe.Code, s)
		assert.Equal(t, want.retryable, pe.Retryable, s)
		assert.Equal(t, "boom", pe.Message)
	}

	// Malformed success body.
	srvBad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"order": "nope"}`))
	}))
	defer srvBad.Close()
	_, err := platforms.NewSandboxConnector(srvBad.URL, nil).FetchOrder(context.Background(), b, "1")
	var pe *platforms.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, platforms.CodeBadResponse, pe.Code)

	// Unreachable platform: retryable network error.
	srv.Close()
	_, err = c.FetchOrder(context.Background(), b, "1")
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, platforms.CodeNetwork, pe.Code)
	assert.True(t, pe.Retryable)

	// Cancelled context.
	live := newSandbox(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = platforms.NewSandboxConnector(live.URL, nil).FetchOrder(ctx, b, "1")
	assert.ErrorIs(t, err, context.Canceled)
}

func TestClientTimeout(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	c := platforms.NewSandboxConnector(srv.URL, &http.Client{Timeout: 100 * time.Millisecond})
	start := time.Now()
	_, err := c.FetchOrder(context.Background(), bridgeOf("storefront_a"), "1")
	require.Error(t, err)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.True(t, platforms.IsRetryable(err))
	assert.False(t, errors.Is(err, platforms.ErrOrderNotFound))
}
