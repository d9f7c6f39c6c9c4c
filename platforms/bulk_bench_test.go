package platforms_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/sandboxapi"
)

// BenchmarkListBulkStore's measure for storefront_b and marketplace_a
// (kept apart from its table, which is another change's; the two cases can
// join it when both are merged): listing a 10,000-order sandbox store.
func BenchmarkListBulkStoreBMarketplaceA(b *testing.B) {
	cases := []struct {
		name   string
		conn   func(srv *httptest.Server) platforms.Connector
		bridge platforms.Bridge
	}{
		{"storefront_b", func(srv *httptest.Server) platforms.Connector {
			return platforms.NewStorefrontB(srv.URL+"/platforms/storefront_b", srv.Client())
		}, sfbBridge("storeUrl", "https://bulk-10000.example.com")},
		{"marketplace_a", func(srv *httptest.Server) platforms.Connector {
			return platforms.NewMarketplaceA(srv.URL+"/platforms/marketplace_a", srv.URL+"/platforms/marketplace_a/lwa", srv.Client())
		}, mpaBridge("refreshToken", "bulk-10000")},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			srv := httptest.NewServer(sandboxapi.NewHandler())
			defer srv.Close()
			counter := &countingTransport{next: srv.Client().Transport}
			srv.Client().Transport = counter
			c := tc.conn(srv)
			ctx := context.Background()
			pages := 0
			for i := 0; i < b.N; i++ {
				cursor, n := "", 0
				for {
					orders, next, err := c.ListOrders(ctx, tc.bridge, time.Time{}, cursor)
					if err != nil {
						b.Fatal(err)
					}
					pages++
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
			b.ReportMetric(float64(pages)/float64(b.N), "pages/op")
			b.ReportMetric(float64(counter.n.Load())/float64(b.N), "requests/op")
		})
	}
}
