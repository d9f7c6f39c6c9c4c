package sandbox

import (
	"context"
	"slices"
	"testing"
	"time"
)

// realisticOrder is an order as the API renders it (about 4 KB).
const realisticOrder = sampleOrderJSON

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
// in this process and reports the p50 and p99 latency of one run (the
// in-process baseline of BenchmarkTransformPool).
func BenchmarkTransform(b *testing.B) {
	benchLatency(b, NewWithPool(Limits{}, nil))
}

// benchLatency runs tenLines over realisticOrder b.N times and reports
// the p50 and p99 latency of one run.
func benchLatency(b *testing.B, sb *Sandbox) {
	ctx := context.Background()
	in := []byte(realisticOrder)
	if _, err := sb.RunFor(ctx, "org", tenLines, in); err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if _, err := sb.RunFor(ctx, "org", tenLines, in); err != nil {
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

// BenchmarkTransformPool is BenchmarkTransform through a sandbox process
// of a Pool (the service's path): the pipe, the framing and the copy of
// the order in and out on top of the run (the bound: p99 ≤ 5 ms).
//
//	go test -run '^$' -bench 'TransformPool|TransformBatch' -benchtime 2000x ./sandbox/
func BenchmarkTransformPool(b *testing.B) {
	p, err := NewPool(PoolConfig{Processes: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	benchLatency(b, NewWithPool(Limits{}, p))
}

// BenchmarkTransformBatch runs the 10-line transformation over a sync
// page of 50 orders in one request (transforms.Chain.ApplyBatch's path)
// and reports runs per second (the bound: ≥ 1,000).
func BenchmarkTransformBatch(b *testing.B) {
	p, err := NewPool(PoolConfig{Processes: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	sb := NewWithPool(Limits{}, p)
	ctx := context.Background()
	page := make([][]byte, 50)
	for i := range page {
		page[i] = []byte(realisticOrder)
	}
	b.ResetTimer()
	for range b.N {
		for _, r := range sb.RunBatch(ctx, "org", tenLines, page) {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
	}
	b.ReportMetric(float64(b.N*len(page))/b.Elapsed().Seconds(), "runs/s")
}
