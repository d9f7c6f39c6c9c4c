package workflows

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"
)

// TestAgentConversationReplay replays a recorded AgentConversation run (a
// chat turn whose write waited, an approval racing a second one, the run
// completing when idle) against the current code; a change that running
// conversations cannot replay fails here (guard it with
// workflow.GetVersion). Recorded by the end-to-end test:
// FOS_UPDATE_HISTORY=1 go test -run TestAgentApprovalEndToEnd ./e2e/.
func TestAgentConversationReplay(t *testing.T) {
	r := newReplayer(t)
	r.RegisterWorkflowWithOptions(AgentConversation, workflow.RegisterOptions{Name: AgentConversationWorkflowType})
	require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/agent_conversation_history.json"))
}
