package activities

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/internal/vendortest"
	"github.com/fos-dev/fos/platforms"
)

// The storefronts' published webhook payloads point processing at the
// order the vendor's example names (the payload is only a hint: the order
// is fetched). storefront_c's light payloads carry the order id in data.id
// (data.orderId for shipments); storefront_a's and storefront_b's are the
// order itself. A topic that is not about orders is recorded as ignored.
func TestWebhookOrderRefPublishedPayloads(t *testing.T) {
	for _, c := range []struct {
		typ, file, topic, want string
	}{
		{platforms.TypeStorefrontC, "webhook_payload_store_order_created.json", "", "250"},
		{platforms.TypeStorefrontC, "webhook_payload_store_order_updated.json", "", "272"},
		{platforms.TypeStorefrontC, "webhook_payload_store_order_statusUpdated.json", "", "250"},
		{platforms.TypeStorefrontC, "webhook_payload_store_shipment_created.json", "", "251"},
		{platforms.TypeStorefrontB, "webhook_payload_order_created.json", "order.created", ""},
		{platforms.TypeStorefrontA, "webhook_orders_topic_sample_payload.json", "orders/create", ""},
	} {
		t.Run(c.typ+"/"+c.file, func(t *testing.T) {
			var payload map[string]any
			dec := json.NewDecoder(bytes.NewReader(vendortest.Example(t, "platforms", c.typ, c.file)))
			dec.UseNumber()
			require.NoError(t, dec.Decode(&payload))
			topic := c.topic
			if topic == "" {
				topic = payload["scope"].(string)
			}
			want := c.want
			if want == "" {
				want = payload["id"].(json.Number).String()
			}
			id, ignored, err := WebhookOrderRef(c.typ, topic, payload)
			require.NoError(t, err)
			require.Empty(t, ignored)
			require.Equal(t, want, id)
		})
	}
	_, ignored, err := WebhookOrderRef(platforms.TypeStorefrontC, "store/cart/created", map[string]any{"data": map[string]any{"id": 1}})
	require.NoError(t, err)
	require.Contains(t, ignored, "needs no processing")
	_, _, err = WebhookOrderRef(platforms.TypeStorefrontC, "store/order/created", map[string]any{"data": map[string]any{}})
	require.Error(t, err)
}
