package workflows

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// replayWorkflows are the workflow types the worker registers (package
// worker, register_*.go), by type name: TestReplayAllHistories registers
// them all on one replayer.
var replayWorkflows = map[string]any{
	AgentConversationWorkflowType:   AgentConversation,
	AgentReconcileWorkflowType:      AgentReconcile,
	BridgeTaskWorkflowType:          BridgeTask,
	CarrierRegistrationWorkflowType: CarrierRegistration,
	DispatchAssignmentWorkflowType:  DispatchAssignment,
	DispatchBatchWorkflowType:       DispatchBatch,
	EmbedOutboxWorkflowType:         EmbedOutbox,
	InboundWebhookWorkflowType:      InboundWebhook,
	MaintenanceWorkflowType:         Maintenance,
	OperationExecuteWorkflowType:    OperationExecute,
	OperationUndoWorkflowType:       OperationUndo,
	OrderResyncWorkflowType:         OrderResync,
	PickupBookingWorkflowType:       PickupBooking,
	PickupCancelWorkflowType:        PickupCancel,
	PickupCompletionWorkflowType:    PickupCompletion,
	RateComparisonWorkflowType:      RateComparison,
	ScheduledBridgeTaskWorkflowType: ScheduledBridgeTask,
	ShipmentActionWorkflowType:      ShipmentAction,
	ShipmentLabelWorkflowType:       ShipmentLabel,
	StorefrontAOAuthWorkflowType:    StorefrontAOAuth,
	TrackingPollerWorkflowType:      TrackingPoller,
	WebhookDeliveryWorkflowType:     WebhookDelivery,
}

// notYetRecorded are the registered workflow types that have no recorded
// history yet: empty, every type has one (issue 22 item 11). The test
// fails when a type is neither recorded nor listed here, and when a listed
// one has been recorded (take it off the list); add a type here only with
// the reason it cannot be recorded yet.
var notYetRecorded = map[string]bool{}

// TestReplayAllHistories replays every recorded history in testdata
// (*_history.json, encrypted with the tests' payload key as the service's
// payload codec encrypts them) against the current code, with every
// workflow type registered: a change that a running workflow of any type
// cannot replay fails here (guard it with workflow.GetVersion).
//
// The histories are recorded by the end-to-end tests. To re-record them
// after a deliberate, versioned change (or to add one):
//
//	FOS_UPDATE_HISTORY=1 ./scripts/test-postgres.sh go test -count=1 -p 1 ./e2e/
//
// (narrow with -run; each test names the file it writes, see writeHistory
// in e2e/resync_test.go). Among them are runs that continued as new and
// runs that received updates; the test checks that both kinds are there.
func TestReplayAllHistories(t *testing.T) {
	files, err := filepath.Glob("testdata/*_history.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	recorded := map[string]bool{}
	var continued, updated []string
	for _, file := range files {
		typ, events := historyShape(t, file)
		recorded[typ] = true
		if events["EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW"] {
			continued = append(continued, file)
		}
		if events["EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED"] {
			updated = append(updated, file)
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			_, ok := replayWorkflows[typ]
			require.True(t, ok, "%s is a history of %s, which replayWorkflows does not list", file, typ)
			r := newReplayer(t)
			registerAll(r)
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, file))
		})
	}
	var missing, stale []string
	for typ := range replayWorkflows {
		switch {
		case !recorded[typ] && !notYetRecorded[typ]:
			missing = append(missing, typ)
		case recorded[typ] && notYetRecorded[typ]:
			stale = append(stale, typ)
		}
	}
	sort.Strings(missing)
	sort.Strings(stale)
	require.Empty(t, missing, "workflow types without a recorded history")
	require.Empty(t, stale, "recorded now: take them off notYetRecorded")
	require.NotEmpty(t, updated, "no recorded history has an update")
	require.NotEmpty(t, continued, "no recorded history continued as new")
	t.Logf("histories with updates: %v; continued as new: %v", updated, continued)
}

// TestReplayWorkflowsListsTheWorkersTypes keeps replayWorkflows in step
// with the worker's registrations (package worker's register_*.go).
func TestReplayWorkflowsListsTheWorkersTypes(t *testing.T) {
	files, err := filepath.Glob("../worker/*.go")
	require.NoError(t, err)
	re := regexp.MustCompile(`RegisterWorkflowWithOptions\([^,]+, workflow\.RegisterOptions\{Name: workflows\.(\w+)WorkflowType\}`)
	seen := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range re.FindAllStringSubmatch(string(src), -1) {
			seen++
			name := m[1] // the type name is the constant's (FooWorkflowType = "Foo")
			_, ok := replayWorkflows[name]
			require.True(t, ok, "%s registers %s, which replayWorkflows does not list", f, name)
		}
	}
	require.Positive(t, seen)
}

func registerAll(r worker.WorkflowReplayer) {
	for name, wf := range replayWorkflows {
		r.RegisterWorkflowWithOptions(wf, workflow.RegisterOptions{Name: name})
	}
}

// historyShape is a recorded history's workflow type and its event types.
func historyShape(t *testing.T, file string) (string, map[string]bool) {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	var h struct {
		Events []struct {
			EventType string `json:"eventType"`
			Started   *struct {
				WorkflowType struct {
					Name string `json:"name"`
				} `json:"workflowType"`
			} `json:"workflowExecutionStartedEventAttributes"`
		} `json:"events"`
	}
	require.NoError(t, json.Unmarshal(raw, &h))
	require.NotEmpty(t, h.Events, file)
	require.NotNil(t, h.Events[0].Started, "%s does not start with WorkflowExecutionStarted", file)
	types := map[string]bool{}
	for _, e := range h.Events {
		types[e.EventType] = true
	}
	return h.Events[0].Started.WorkflowType.Name, types
}
