package workflows

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// TestPurchaseReplay replays ShipmentLabel and PickupBooking runs recorded
// by the end-to-end tests (FOS_UPDATE_HISTORY=1 go test ./e2e/): a label
// recorded after its worker died mid-write, a label voided because its
// shipment was deleted meanwhile, a booked pickup and its cancellation. A change these
// histories cannot replay fails here (guard it with workflow.GetVersion).
func TestPurchaseReplay(t *testing.T) {
	label := func(r worker.WorkflowReplayer) {
		r.RegisterWorkflowWithOptions(ShipmentLabel, workflow.RegisterOptions{Name: ShipmentLabelWorkflowType})
	}
	pickup := func(r worker.WorkflowReplayer) {
		r.RegisterWorkflowWithOptions(PickupBooking, workflow.RegisterOptions{Name: PickupBookingWorkflowType})
	}
	for file, register := range map[string]func(worker.WorkflowReplayer){
		"shipment_label_history.json":        label,
		"shipment_label_voided_history.json": label,
		"pickup_booking_history.json":        pickup,
		"pickup_cancel_history.json": func(r worker.WorkflowReplayer) {
			r.RegisterWorkflowWithOptions(PickupCancel, workflow.RegisterOptions{Name: PickupCancelWorkflowType})
		},
	} {
		t.Run(file, func(t *testing.T) {
			r := newReplayer(t)
			register(r)
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/"+file))
		})
	}
}
