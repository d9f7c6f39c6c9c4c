package sandbox

import (
	"context"
	"slices"
	"testing"
	"time"
)

// realisticOrder is an order as the API renders it (about 4 KB): five line
// items, addresses, totals, tags, metadata and the platform's source data.
const realisticOrder = `{
  "id": "0b9f3c1e-6a7d-4d2b-9a51-2f4f2f0f7c11", "organizationId": "5c1d4f0e-1b2a-4c3d-8e9f-0a1b2c3d4e5f",
  "bridgeId": "7e8f9a0b-1c2d-4e3f-9a8b-7c6d5e4f3a2b", "externalId": "1001", "orderNumber": "#1001",
  "status": "pending", "financialStatus": "paid", "fulfillmentStatus": null, "currency": "USD",
  "customer": {"email": "bea@example.com", "firstName": "Bea", "lastName": "Arthur", "phone": "+1 555 0100"},
  "shippingAddress": {"name": "Bea Arthur", "company": null, "address1": "1 Main St", "address2": "Apt 4",
    "city": "Springfield", "province": "IL", "zip": "62701", "country": "US", "phone": "+1 555 0100"},
  "billingAddress": {"name": "Bea Arthur", "address1": "1 Main St", "city": "Springfield", "province": "IL", "zip": "62701", "country": "US"},
  "lineItems": [
    {"sku": "MUG-1", "name": "Mug", "quantity": 2, "unitPrice": 9.5, "totalPrice": 19, "weight": 0.4, "requiresShipping": true, "taxable": true, "properties": {"color": "blue"}},
    {"sku": "TEE-M", "name": "T-shirt M", "quantity": 1, "unitPrice": 20, "totalPrice": 20, "weight": 0.2, "requiresShipping": true, "taxable": true, "properties": {"size": "M"}},
    {"sku": "CAP-1", "name": "Cap", "quantity": 1, "unitPrice": 15, "totalPrice": 15, "weight": 0.1, "requiresShipping": true, "taxable": true, "properties": {}},
    {"sku": "GIFT", "name": "Gift card", "quantity": 1, "unitPrice": 25, "totalPrice": 25, "weight": 0, "requiresShipping": false, "taxable": false, "properties": {}},
    {"sku": "STK-5", "name": "Sticker pack", "quantity": 5, "unitPrice": 2, "totalPrice": 10, "weight": 0.05, "requiresShipping": true, "taxable": true, "properties": {"pack": "5"}}
  ],
  "totals": {"subtotal": 89, "shipping": 5, "tax": 7.12, "discount": 0, "total": 101.12},
  "tags": ["vip", "repeat"], "notes": "Leave at the door",
  "metadata": {"channel": "web", "campaign": "spring"},
  "sourceData": {"id": 5512345678901, "admin_graphql_api_id": "gid://shopify/Order/5512345678901", "browser_ip": "203.0.113.9",
    "gateway": "shopify_payments", "landing_site": "/products/mug", "referring_site": "https://www.example.com/",
    "shipping_lines": [{"code": "Standard", "price": "5.00", "source": "shopify"}],
    "note_attributes": [{"name": "gift", "value": "no"}]},
  "createdAt": "2026-11-24T07:00:00Z", "updatedAt": "2026-11-24T07:00:00Z"
}`

// tenLines is a typical transformation: normalize, derive, tag.
const tenLines = `function transform(order) {
  order.customer.email = order.customer.email.toLowerCase().trim();
  order.shippingAddress.country = (order.shippingAddress.country || "US").toUpperCase();
  var weight = order.lineItems.reduce(function (w, li) { return w + li.weight * li.quantity; }, 0);
  order.metadata.totalWeight = Math.round(weight * 100) / 100;
  order.lineItems = order.lineItems.filter(function (li) { return li.requiresShipping; });
  if (order.totals.total > 100) order.tags.push("free-shipping");
  order.metadata.itemCount = order.lineItems.length;
  order.notes = order.notes ? order.notes.slice(0, 200) : null;
  return order;
}`

// BenchmarkTransform runs a 10-line transformation over a realistic order
// and reports the p50 and p99 latency of one run (the bound: p99
// ≤ 2 ms).
func BenchmarkTransform(b *testing.B) {
	sb := New(Limits{})
	ctx := context.Background()
	in := []byte(realisticOrder)
	if _, err := sb.Run(ctx, tenLines, in); err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if _, err := sb.Run(ctx, tenLines, in); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkInfiniteLoop measures how long `while (true) {}` takes to
// answer {success: false} under the default 1 s deadline (bound: 1.1 s).
func BenchmarkInfiniteLoop(b *testing.B) {
	sb := New(Limits{})
	var worst time.Duration
	for range b.N {
		start := time.Now()
		_, err := sb.Run(context.Background(), `function transform(d) { while (true) {} }`, []byte(`{}`))
		if !IsKind(err, KindTimeout) {
			b.Fatalf("want a timeout, got %v", err)
		}
		worst = max(worst, time.Since(start))
	}
	b.ReportMetric(float64(worst.Milliseconds()), "worst-ms")
	if worst > 1100*time.Millisecond {
		b.Fatalf("answered after %v, want ≤ 1.1 s", worst)
	}
}
