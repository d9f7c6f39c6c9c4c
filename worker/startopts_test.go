package worker

import (
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
)

// One helper builds every start's options: the summary says what runs and
// for which resource, the search attributes carry the bridge and task
// where they apply, the memo names the organization; a start site that
// gives no summary gets one from the workflow id.
func TestStartSummariesAndSearchAttributes(t *testing.T) {
	o := Start{ID: "bridge-task/e1", TaskQueue: "q", OrganizationID: "o1", OrganizationName: "Acme",
		Summary: `grab-orders of bridge "My shop" (storefront_a)`, BridgeID: "b1", TaskName: "grab-orders",
		Memo: map[string]any{"bridgeId": "b1", "bridge": "My shop"}}.Options()
	require.Equal(t, "bridge-task/e1", o.ID)
	require.Equal(t, enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING, o.WorkflowIDConflictPolicy)
	require.Equal(t, `grab-orders of bridge "My shop" (storefront_a) — Acme`, o.StaticSummary)
	require.Contains(t, o.StaticDetails, "- bridge: My shop")
	require.Contains(t, o.StaticDetails, "- organization: Acme")
	require.Equal(t, map[string]any{"bridgeId": "b1", "bridge": "My shop", "organization": "Acme", "organizationId": "o1"}, o.Memo)
	for key, want := range map[string]string{"OrganizationId": "o1", "BridgeId": "b1", "TaskName": "grab-orders"} {
		var got string
		switch key {
		case "OrganizationId":
			got, _ = o.TypedSearchAttributes.GetKeyword(OrganizationIDKey)
		case "BridgeId":
			got, _ = o.TypedSearchAttributes.GetKeyword(BridgeIDKey)
		case "TaskName":
			got, _ = o.TypedSearchAttributes.GetKeyword(TaskNameKey)
		}
		require.Equal(t, want, got, key)
	}

	d := StartOptions("order-resync/r1", "q", "o1", map[string]any{"orderId": "r1"})
	require.Equal(t, "Resync of order r1", d.StaticSummary)
	_, ok := d.TypedSearchAttributes.GetKeyword(BridgeIDKey)
	require.False(t, ok, "no BridgeId where none applies")
	named := WithOrganizationName(d, "Acme")
	require.Equal(t, "Resync of order r1 — Acme", named.StaticSummary)
	require.Equal(t, "Acme", named.Memo["organization"])
	require.Nil(t, d.Memo["organization"], "the options given are not changed")
	require.Equal(t, "Dispatch of assignment a1", DefaultSummary("dispatch/a1"))
}
