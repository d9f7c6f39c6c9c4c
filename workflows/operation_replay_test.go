package workflows

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

// TestOperationReplay replays an OperationExecute run (update-with-start,
// batches, finish) and an OperationUndo run (plan, reverse, restore,
// finish) recorded by the end-to-end test (FOS_UPDATE_HISTORY=1 go test
// -run TestOperationExecuteEndToEnd ./e2e/): a change to either workflow
// that running histories cannot replay fails here (guard it with
// workflow.GetVersion).
func TestOperationReplay(t *testing.T) {
	for _, c := range []struct {
		file, name string
		wf         any
	}{
		{"operation_execute_history.json", OperationExecuteWorkflowType, OperationExecute},
		{"operation_undo_history.json", OperationUndoWorkflowType, OperationUndo},
	} {
		t.Run(c.file, func(t *testing.T) {
			r := newReplayer(t)
			r.RegisterWorkflowWithOptions(c.wf, workflow.RegisterOptions{Name: c.name})
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/"+c.file))
		})
	}
}
