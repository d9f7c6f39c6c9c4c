package platforms_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/sandboxapi"
)

func pushTestOrder(total float64) platforms.Order {
	addr := &platforms.Address{Name: "Jane Doe", Address1: "1 Main St", City: "Austin", ProvinceCode: "TX", Zip: "78701", CountryCode: "US"}
	return platforms.Order{
		OrderNumber: "#P-1", PaymentStatus: "paid", Customer: platforms.Customer{Email: "jane@example.com", FirstName: "Jane", LastName: "Doe"},
		ShippingAddress: addr, LineItems: []platforms.LineItem{{ExternalID: "l1", SKU: "SKU-1", Name: "Thing", Quantity: 2, UnitPrice: total / 2}},
		Totals: platforms.Totals{Subtotal: total, Total: total}, OrderedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
}

// createorder is create-or-update by orderKey: a second push with the same
// key updates the hub's order, never adds one.
func TestShippingHubAPushOrderIsKeyed(t *testing.T) {
	srv := newSandbox(t)
	c := platforms.NewShippingHubA(srv.URL+"/platforms/shipping_hub_a", srv.Client(), platforms.ListLimit(100))
	ctx := context.Background()
	b := hubBridge("apiKey", "push-key-1", "apiSecret", "s3cret")

	first, err := c.PushOrder(ctx, b, pushTestOrder(40), platforms.PushRef{Key: "fos-order-1"})
	require.NoError(t, err)
	require.NotEmpty(t, first.ExternalID)
	require.Equal(t, platforms.PushKindFulfillment, first.Kind)
	again, err := c.PushOrder(ctx, b, pushTestOrder(60), platforms.PushRef{Key: "fos-order-1"})
	require.NoError(t, err)
	require.Equal(t, first.ExternalID, again.ExternalID, "the same order, updated")

	got, err := c.FetchOrder(ctx, b, first.ExternalID)
	require.NoError(t, err)
	require.Equal(t, "#P-1", got.OrderNumber)
	require.InDelta(t, 60, got.Totals.Total, 0.001)
	require.Equal(t, "Jane Doe", got.ShippingAddress.Name)
	require.Len(t, got.LineItems, 1)

	all, _ := listAll(t, c, b, time.Time{})
	require.Len(t, all, sandboxapi.StoreOrderCount("push-key-1")+1)

	other, err := c.PushOrder(ctx, b, pushTestOrder(10), platforms.PushRef{Key: "fos-order-2"})
	require.NoError(t, err)
	require.NotEqual(t, first.ExternalID, other.ExternalID)

	_, err = c.PushOrder(ctx, b, pushTestOrder(10), platforms.PushRef{Key: " "})
	require.Error(t, err)
}

// storefront_a: the order is created with the key as a tag; a repeat finds
// it among the orders created since the first attempt and creates nothing.
func TestStorefrontAPushOrderLooksFirst(t *testing.T) {
	srv := newSandbox(t)
	c := platforms.NewStorefrontA(srv.URL+"/platforms/storefront_a", srv.Client())
	ctx := context.Background()
	b := sfaBridge("shopDomain", "push-shop.myshopify.com")
	since := time.Now().Add(-time.Minute)
	before, _ := listAll(t, c, b, time.Time{})

	first, err := c.PushOrder(ctx, b, pushTestOrder(40), platforms.PushRef{Key: "fos-order-1", Since: since})
	require.NoError(t, err)
	require.Equal(t, platforms.PushKindCart, first.Kind)
	again, err := c.PushOrder(ctx, b, pushTestOrder(40), platforms.PushRef{Key: "fos-order-1", Since: since})
	require.NoError(t, err)
	require.Equal(t, first.ExternalID, again.ExternalID, "found, not created again")
	other, err := c.PushOrder(ctx, b, pushTestOrder(10), platforms.PushRef{Key: "fos-order-2", Since: since})
	require.NoError(t, err)
	require.NotEqual(t, first.ExternalID, other.ExternalID)

	got, err := c.FetchOrder(ctx, b, first.ExternalID)
	require.NoError(t, err)
	require.Contains(t, got.Tags, "fos-order-1")
	require.InDelta(t, 40, got.Totals.Total, 0.001)
	require.Len(t, got.LineItems, 1)
	require.Equal(t, "Jane Doe", got.ShippingAddress.Name)
	after, _ := listAll(t, c, b, time.Time{})
	require.Len(t, after, len(before)+2)

	_, err = c.PushOrder(ctx, b, pushTestOrder(1), platforms.PushRef{Key: "a,b"})
	require.Error(t, err)
}
