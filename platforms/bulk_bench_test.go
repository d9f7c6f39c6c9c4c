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

// countingSandbox is the sandbox behind a request counter.
func countingSandbox(b *testing.B) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	h := sandboxapi.NewHandler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h.ServeHTTP(w, r)
	}))
	b.Cleanup(srv.Close)
	return srv, &n
}

// benchListAll reads every page of a 10,000-order sandbox store and
// reports the platform requests one import takes.
func benchListAll(b *testing.B, c platforms.Connector, br platforms.Bridge, requests *atomic.Int64) {
	ctx := context.Background()
	// Warm the sandbox's store (built on first use).
	if _, _, err := c.ListOrders(ctx, br, time.Time{}, ""); err != nil {
		b.Fatal(err)
	}
	requests.Store(0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cursor, orders := "", 0
		for {
			page, next, err := c.ListOrders(ctx, br, time.Time{}, cursor)
			if err != nil {
				b.Fatal(err)
			}
			orders += len(page)
			if next == "" {
				break
			}
			cursor = next
		}
		if orders != 10_000 {
			b.Fatalf("%d orders", orders)
		}
	}
	b.ReportMetric(float64(requests.Load())/float64(b.N), "requests/import")
}

func BenchmarkStorefrontBSandboxImport10k(b *testing.B) {
	srv, n := countingSandbox(b)
	c := platforms.NewStorefrontB(srv.URL+"/platforms/storefront_b", srv.Client())
	benchListAll(b, c, sfbBridge("storeUrl", "https://bulk-10000.example.com"), n)
}

func BenchmarkMarketplaceASandboxImport10k(b *testing.B) {
	srv, n := countingSandbox(b)
	c := platforms.NewMarketplaceA(srv.URL+"/platforms/marketplace_a", srv.URL+"/platforms/marketplace_a/lwa", srv.Client())
	benchListAll(b, c, mpaBridge("refreshToken", "bulk-10000"), n)
}
