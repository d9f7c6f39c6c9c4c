package platforms_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
)

func TestCarrierNameDefaultsAndOverrides(t *testing.T) {
	for _, tc := range []struct {
		typ, carrier, service, want string
	}{
		{"storefront_a", "carrier_a", "FEDEX_GROUND", "FedEx"},
		{"storefront_a", "carrier_b", "03", "UPS"},
		{"storefront_a", "carrier_c", "", "USPS"},
		{"shipping_hub_a", "carrier_a", "", "fedex"},
		{"shipping_hub_a", "carrier_b", "", "ups"},
		{"shipping_hub_a", "carrier_c", "", "usps"},
		{"storefront_b", "carrier_b", "", "UPS"},
		{"storefront_c", "carrier_a", "", "fedex"},
		{"storefront_c", "carrier_c", "", "usps"},
		{"marketplace_a", "carrier_a", "PRIORITY_OVERNIGHT", "FedEx"},
		{"marketplace_a", "carrier_a", "SMART_POST", "FedEx SmartPost"},
		{"marketplace_a", "carrier_b", "", "UPS"},
		// A name that is not a service code goes as it is.
		{"storefront_a", "DHL Express", "", "DHL Express"},
		{"shipping_hub_a", "stamps_com", "", "stamps_com"},
	} {
		got, err := platforms.CarrierName(bridgeOf(tc.typ), tc.carrier, tc.service)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%s %s/%s", tc.typ, tc.carrier, tc.service)
	}

	b := bridgeOf("storefront_a")
	b.Config = map[string]any{"carrierNames": map[string]any{"carrier_a": "FedEx", "carrier_a/FEDEX_GROUND": "FedEx Ground Custom", "carrier_b": "UPS Freight"}}
	for in, want := range map[[2]string]string{
		{"carrier_a", "FEDEX_GROUND"}: "FedEx Ground Custom", {"carrier_a", "STANDARD_OVERNIGHT"}: "FedEx",
		{"carrier_b", "03"}: "UPS Freight", {"carrier_c", ""}: "USPS",
	} {
		got, err := platforms.CarrierName(b, in[0], in[1])
		require.NoError(t, err)
		assert.Equal(t, want, got, in)
	}

	for _, bad := range []any{"FedEx", map[string]any{"carrier_a": 7}, map[string]any{"carrier_a": " "}} {
		b.Config = map[string]any{"carrierNames": bad}
		_, err := platforms.CarrierName(b, "carrier_a", "")
		var pe *platforms.Error
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, platforms.CodeInvalidConfig, pe.Code)
		assert.Equal(t, "carrierNames", pe.Field)
		require.Error(t, platforms.ValidateCarrierNames(b.Config))
	}
	require.NoError(t, platforms.ValidateCarrierNames(map[string]any{"carrierNames": map[string]any{"carrier_a/SMART_POST": "FedEx SmartPost"}}))

	// The API refuses a bad carrierNames when the bridge is saved.
	reg := platforms.NewRegistry()
	errs := reg.CheckConfig("storefront_a", map[string]any{"carrierNames": []any{"x"}})
	require.Len(t, errs, 1)
	assert.Equal(t, "config.carrierNames", errs[0].Field)
}

func TestMarketplaceACarrierAndPackageReference(t *testing.T) {
	code, name := platforms.MarketplaceACarrier("fedex")
	assert.Equal(t, [2]string{"FedEx", "FedEx"}, [2]string{code, name})
	code, name = platforms.MarketplaceACarrier("Acme Couriers")
	assert.Equal(t, [2]string{"Other", "Acme Couriers"}, [2]string{code, name})

	ref := platforms.MarketplaceAPackageReference("1Z999AA10123456784")
	n, err := strconv.ParseUint(ref, 10, 64)
	require.NoError(t, err)
	assert.Positive(t, n)
	assert.LessOrEqual(t, n, uint64(1<<31))
	assert.Equal(t, ref, platforms.MarketplaceAPackageReference(" 1z999aa10123456784 "), "the same package on every attempt")
	assert.NotEqual(t, ref, platforms.MarketplaceAPackageReference("1Z999AA10123456785"))
}

// openOrder finds an order of the sandbox store a push can fulfil.
func openOrder(t *testing.T, all []platforms.Order) platforms.Order {
	t.Helper()
	for _, o := range all {
		if o.FulfillmentStatus == platforms.FulfillmentUnfulfilled && o.PaymentStatus == platforms.PaymentPaid &&
			(o.Status == platforms.StatusConfirmed || o.Status == platforms.StatusProcessing || o.Status == platforms.StatusPending) {
			return o
		}
	}
	t.Fatal("no open order")
	return platforms.Order{}
}

// Every platform's push, given the service's own carrier code and service
// (as push-fulfillment reads them from shipments), sends the platform's
// name for the carrier; the sandboxes, like the platforms, refuse the
// service's code and unknown names.
func TestPushFulfillmentNamesTheCarrierPerPlatform(t *testing.T) {
	srv := newSandbox(t)
	reg := platforms.NewAPIRegistry(platforms.SandboxURLs(srv.URL), srv.Client(), nil)
	ctx := context.Background()
	for _, b := range bridges() {
		t.Run(b.Type, func(t *testing.T) {
			conn, err := reg.Get(b.Type)
			require.NoError(t, err)
			pusher := conn.(platforms.FulfillmentPusher)
			all, _ := listAll(t, conn, b, time.Time{})
			target := openOrder(t, all)

			res, err := pusher.PushFulfillment(ctx, b, platforms.Fulfillment{OrderExternalID: target.ExternalID,
				TrackingNumber: "794698765432", Carrier: "carrier_a", Service: "FEDEX_GROUND"})
			require.NoError(t, err)
			assert.True(t, res.Created)

			after, err := conn.FetchOrder(ctx, b, target.ExternalID)
			require.NoError(t, err)
			switch b.Type {
			case "storefront_a":
				fs := after.SourceData["fulfillments"].([]any)
				assert.Equal(t, "FedEx", fs[len(fs)-1].(map[string]any)["tracking_company"])
			case "shipping_hub_a":
				assert.Equal(t, "fedex", after.SourceData["carrierCode"])
			}

			// An unknown carrier name is refused by the platform for good
			// (the run counts it refused), except where the carrier is free
			// text (storefront_b's note) or goes as "Other"
			// (marketplace_a).
			other := openOrder(t, without(all, target.ExternalID))
			b2 := b
			b2.Config = map[string]any{"carrierNames": map[string]any{"carrier_b": "Carrier B Express"}}
			for k, v := range b.Config {
				b2.Config[k] = v
			}
			_, err = pusher.PushFulfillment(ctx, b2, platforms.Fulfillment{OrderExternalID: other.ExternalID,
				TrackingNumber: "1Z999AA10123456784", Carrier: "carrier_b", Service: "03"})
			switch b.Type {
			case "storefront_b", "marketplace_a":
				require.NoError(t, err)
			default:
				require.Error(t, err)
				assert.False(t, platforms.IsRetryable(err), "refused for good: %v", err)
			}
		})
	}
}

func without(all []platforms.Order, id string) []platforms.Order {
	out := make([]platforms.Order, 0, len(all))
	for _, o := range all {
		if o.ExternalID != id {
			out = append(out, o)
		}
	}
	return out
}
