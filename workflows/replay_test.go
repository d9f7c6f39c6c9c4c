package workflows

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// TestOrderResyncReplay replays recorded histories (a successful run and a
// run that failed for good) against the current code: a change to
// OrderResync that running histories cannot replay fails here (guard it
// with workflow.GetVersion). The histories are recorded by the end-to-end
// test: FOS_UPDATE_HISTORY=1 go test ./e2e/.
func TestOrderResyncReplay(t *testing.T) {
	for _, file := range []string{"order_resync_history.json", "order_resync_failed_history.json"} {
		t.Run(file, func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(OrderResync, workflow.RegisterOptions{Name: OrderResyncWorkflowType})
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/"+file))
		})
	}
}

// TestShipmentActionReplay replays a completed and a failed ShipmentAction
// run recorded by the end-to-end test (FOS_UPDATE_HISTORY=1 go test ./e2e/).
func TestShipmentActionReplay(t *testing.T) {
	for _, file := range []string{"shipment_action_history.json", "shipment_action_failed_history.json"} {
		t.Run(file, func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(ShipmentAction, workflow.RegisterOptions{Name: ShipmentActionWorkflowType})
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/"+file))
		})
	}
}
