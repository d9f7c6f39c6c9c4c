package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/workflows"
)

// BenchmarkRateComparison10k processes a 10,000-item comparison (carrier_a
// numbers tracked on the sandbox, rated with a carrier_b account) through
// the in-process Temporal server, from POST /process until the comparison
// is completed. Run it once:
//
//	go test ./e2e -run '^$' -bench BenchmarkRateComparison10k -benchtime 1x
//
// It reports items/s and fails when the run takes 60 s or more.
func BenchmarkRateComparison10k(b *testing.B) {
	const n = 10_000
	s := rcStart(b)
	s.account(carriers.CarrierA)
	target := s.account(carriers.CarrierB)
	upload := rcUpload(n)
	b.ResetTimer()
	var total time.Duration
	for range b.N {
		b.StopTimer()
		id := s.create(target, upload)
		b.StartTimer()
		began := time.Now()
		s.do(202, "POST", "/api/v1/rate-comparisons/"+id+"/process", nil)
		final, seen := s.waitDone(id, 120*time.Second)
		elapsed := time.Since(began)
		total += elapsed
		b.StopTimer()
		require.Equal(b, "completed", final["status"])
		require.EqualValues(b, n-n/100, final["completedItems"])
		require.EqualValues(b, n/100, final["failedItems"])
		require.Less(b, elapsed, 60*time.Second, "a 10,000-item comparison must finish in under 60 s")
		var res workflows.RateComparisonResult
		ctx := context.Background()
		require.NoError(b, s.temporal.GetWorkflow(ctx, workflows.RateComparisonWorkflowID(id), "").Get(ctx, &res))
		require.Positive(b, res.Runs, "the run continued as new at least once")
		b.Logf("%d items in %s (%.0f items/s), %d batches over %d runs, %d progress steps seen",
			n, elapsed.Round(time.Millisecond), n/elapsed.Seconds(), res.Batches, res.Runs+1, len(seen))
		b.StartTimer()
	}
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "items/s")
	b.ReportMetric(total.Seconds()/float64(b.N), "s/comparison")
}
