package platforms_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/sandboxapi"
)

type countingTransport struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// Listing a 10,000-order sandbox store through each connector: the
// platform side of a 10,000-order grab-orders (requests/op is the number
// of platform calls).
func BenchmarkListBulkStore(b *testing.B) {
	cases := []struct {
		name   string
		conn   func(base string, srv *httptest.Server) platforms.Connector
		bridge platforms.Bridge
	}{
		{"storefront_a", func(base string, srv *httptest.Server) platforms.Connector {
			return platforms.NewStorefrontA(base+"/platforms/storefront_a", srv.Client())
		}, sfaBridge("shopDomain", "bulk-10000.myshopify.com")},
		{"shipping_hub_a", func(base string, srv *httptest.Server) platforms.Connector {
			return platforms.NewShippingHubA(base+"/platforms/shipping_hub_a", srv.Client())
		}, hubBridge("apiKey", "bulk-10000")},
		{"storefront_c", func(base string, srv *httptest.Server) platforms.Connector {
			return platforms.NewStorefrontC(base+"/platforms/storefront_c", srv.Client())
		}, sfcBridge("storeHash", "bulk-10000")},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			srv := httptest.NewServer(sandboxapi.NewHandler())
			defer srv.Close()
			counter := &countingTransport{next: srv.Client().Transport}
			srv.Client().Transport = counter
			c := tc.conn(srv.URL, srv)
			ctx := context.Background()
			requests := 0
			for i := 0; i < b.N; i++ {
				cursor, n := "", 0
				for {
					orders, next, err := c.ListOrders(ctx, tc.bridge, time.Time{}, cursor)
					if err != nil {
						b.Fatal(err)
					}
					requests++
					n += len(orders)
					if next == "" {
						break
					}
					cursor = next
				}
				if n != 10000 {
					b.Fatalf("listed %d orders", n)
				}
			}
			b.ReportMetric(float64(requests)/float64(b.N), "pages/op")
			b.ReportMetric(float64(counter.n.Load())/float64(b.N), "requests/op")
		})
	}
}
