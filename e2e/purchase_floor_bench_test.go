package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// floorCarrierLatency is the carrier latency both BenchmarkCreateShipment
// and BenchmarkPurchaseFloor inject.
const floorCarrierLatency = 250 * time.Millisecond

// floorWorkflow is the shape of ShipmentLabel with nothing in it: an
// update that waits for the outcome, and one activity that only waits for
// the carrier's latency.
func floorWorkflow(ctx workflow.Context) (string, error) {
	var done *string
	if err := workflow.SetUpdateHandler(ctx, "result", func(ctx workflow.Context) (string, error) {
		if err := workflow.Await(ctx, func() bool { return done != nil }); err != nil {
			return "", err
		}
		return *done, nil
	}); err != nil {
		return "", err
	}
	var out string
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	err := workflow.ExecuteActivity(actx, "FloorCarrier").Get(ctx, &out)
	done = &out
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return "", err
	}
	return out, err
}

// BenchmarkPurchaseFloor is what the purchase mechanism itself costs on
// this machine and Temporal server (the same as BenchmarkCreateShipment's):
// update-with-start of a workflow whose update waits for one activity that
// only sleeps for the carrier's latency, with no API, database, codec or
// carrier call. Its overhead-p99-ms is the floor under
// BenchmarkCreateShipment's overhead; the difference between the two is
// what fos adds.
//
//	go test ./e2e -run '^$' -bench 'PurchaseFloor|CreateShipment' -benchtime 200x
func BenchmarkPurchaseFloor(b *testing.B) {
	s := start(b)
	queue := "fos-e2e-floor-" + uuid.NewString()[:8]
	w := sdkworker.New(s.temporal, queue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(floorWorkflow, workflow.RegisterOptions{Name: "Floor"})
	w.RegisterActivityWithOptions(func(context.Context) (string, error) {
		time.Sleep(floorCarrierLatency)
		return "ok", nil
	}, activity.RegisterOptions{Name: "FloorCarrier"})
	require.NoError(b, w.Start())
	b.Cleanup(w.Stop)
	ctx := context.Background()
	purchase := func() time.Duration {
		id := "floor/" + uuid.NewString()
		began := time.Now()
		h, err := s.temporal.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
			StartWorkflowOperation: s.temporal.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
				ID: id, TaskQueue: queue, WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
			}, "Floor"),
			UpdateOptions: client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: "result", WaitForStage: client.WorkflowUpdateStageCompleted},
		})
		require.NoError(b, err)
		var out string
		require.NoError(b, h.Get(ctx, &out))
		return time.Since(began) - floorCarrierLatency
	}
	for range 3 {
		purchase()
	}
	over := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		over = append(over, purchase())
	}
	b.StopTimer()
	b.ReportMetric(float64(percentile(over, 0.5))/1e6, "overhead-p50-ms")
	b.ReportMetric(float64(percentile(over, 0.99))/1e6, "overhead-p99-ms")
	b.ReportMetric(0, "ns/op")
}

// percentile is the q quantile of d (sorted in place).
func percentile(d []time.Duration, q float64) time.Duration {
	slices.Sort(d)
	return d[min(len(d)-1, int(q*float64(len(d))))]
}
