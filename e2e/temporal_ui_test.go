package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/fos-dev/fos/payloadcodec/codectest"
)

// uiView is what an operator sees of a run in the Temporal UI: its static
// summary and details, search attributes, memo and, for a failed run, the
// failure's clear message (without the codec).
type uiView struct {
	Summary, Details string
	SearchAttributes map[string]string
	Memo             map[string]any
	FailureMessage   string
}

// describeForUI describes workflow id (its latest run) as the UI shows it,
// decoding the encrypted summary and memo with the tests' payload key.
func describeForUI(t *testing.T, ctx context.Context, c client.Client, id string) uiView {
	t.Helper()
	desc, err := c.DescribeWorkflowExecution(ctx, id, "")
	require.NoError(t, err)
	dc := codectest.DataConverter()
	var v uiView
	if md := desc.GetExecutionConfig().GetUserMetadata(); md != nil {
		if p := md.GetSummary(); p != nil {
			require.NoError(t, dc.FromPayload(p, &v.Summary))
		}
		if p := md.GetDetails(); p != nil {
			require.NoError(t, dc.FromPayload(p, &v.Details))
		}
	}
	v.SearchAttributes = map[string]string{}
	for k, p := range desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields() {
		var s string
		if converter.GetDefaultDataConverter().FromPayload(p, &s) == nil {
			v.SearchAttributes[k] = s
		}
	}
	v.Memo = map[string]any{}
	for k, p := range desc.GetWorkflowExecutionInfo().GetMemo().GetFields() {
		var x any
		require.NoError(t, dc.FromPayload(p, &x))
		v.Memo[k] = x
	}
	if desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_FAILED {
		it := c.GetWorkflowHistory(ctx, id, desc.GetWorkflowExecutionInfo().GetExecution().GetRunId(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			require.NoError(t, err)
			if a := ev.GetWorkflowExecutionFailedEventAttributes(); a != nil {
				// The UI shows the failure and its causes' messages.
				var msgs []string
				for f := a.GetFailure(); f != nil; f = f.GetCause() {
					msgs = append(msgs, f.GetMessage())
				}
				v.FailureMessage = strings.Join(msgs, ": ")
			}
		}
	}
	return v
}
