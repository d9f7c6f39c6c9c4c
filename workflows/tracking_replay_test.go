package workflows

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

// TestTrackingPollerReplay replays a recorded poll (several rounds of
// parallel activities) against the current code; a change that running
// histories cannot replay fails here (guard it with workflow.GetVersion).
// The history is recorded by the end-to-end test:
// FOS_UPDATE_HISTORY=1 go test ./e2e -run TestTrackingPollerEndToEnd.
func TestTrackingPollerReplay(t *testing.T) {
	r := newReplayer(t)
	r.RegisterWorkflowWithOptions(TrackingPoller, workflow.RegisterOptions{Name: TrackingPollerWorkflowType})
	require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/tracking_poller_history.json"))
}
