package api

import (
	"context"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/worker"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// describeRunning answers a describe with an open run.
func describeRunning(id string) *workflowservice.DescribeWorkflowExecutionResponse {
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{
		Execution: &commonpb.WorkflowExecution{WorkflowId: id, RunId: "run-1"},
		Status:    enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING,
		StartTime: timestamppb.Now(),
	}}
}

// A start whose answer is lost is sent again and joins the run; when its
// outcome stays unknown the comparison stays processing (the reconciler
// starts the run if it does not exist) instead of being reverted.
func TestRateComparisonProcessAmbiguousStart(t *testing.T) {
	tc := mocks.NewClient(t)
	e := newEnv(t, func(d *Deps) { d.Temporal = tc })
	owner := e.signup()
	acctB := rcAccount(t, e, owner.org, "carrier_b", "active", true)
	rcAccount(t, e, owner.org, "carrier_a", "active", true)

	// Deadline, then the re-sent start (USE_EXISTING) answers: 202.
	id := rcCreate(t, e, owner.caller, acctB, rcItems(2, "A"))["id"].(string)
	expectRateComparisonStart(t, tc, owner.org, id, serviceerror.NewDeadlineExceeded("context deadline exceeded"))
	expectRateComparisonStartWith(t, tc, owner.org, id, enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING, nil, 1)
	res := e.do(owner.caller, "POST", "/api/v1/rate-comparisons/"+id+"/process", nil)
	require.Equal(t, 202, res.Code, "%s", res.Raw)
	require.Equal(t, "processing", res.data()["status"])

	// Never answered, and the describe fails too: the run may exist, so
	// the comparison stays processing.
	id2 := rcCreate(t, e, owner.caller, acctB, rcItems(2, "B"))["id"].(string)
	expectRateComparisonStart(t, tc, owner.org, id2, serviceerror.NewUnavailable("upstream connect error"))
	expectRateComparisonStartWith(t, tc, owner.org, id2, enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING, context.DeadlineExceeded, worker.StartAttempts-1)
	tc.On("DescribeWorkflowExecution", mock.Anything, "rate-comparison/"+id2, "").Return(nil, serviceerror.NewUnavailable("down")).Once()
	res = e.do(owner.caller, "POST", "/api/v1/rate-comparisons/"+id2+"/process", nil)
	require.Equal(t, 202, res.Code, "%s", res.Raw)
	res = e.do(owner.caller, "GET", "/api/v1/rate-comparisons/"+id2, nil)
	require.Equal(t, "processing", res.data()["status"], "not reverted while the run may exist")

	// Never answered, but the describe finds the run: 202.
	id3 := rcCreate(t, e, owner.caller, acctB, rcItems(2, "C"))["id"].(string)
	expectRateComparisonStart(t, tc, owner.org, id3, serviceerror.NewDeadlineExceeded("deadline"))
	expectRateComparisonStartWith(t, tc, owner.org, id3, enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING, serviceerror.NewDeadlineExceeded("deadline"), worker.StartAttempts-1)
	tc.On("DescribeWorkflowExecution", mock.Anything, "rate-comparison/"+id3, "").Return(describeRunning("rate-comparison/"+id3), nil).Once()
	tc.On("GetWorkflow", mock.Anything, "rate-comparison/"+id3, "run-1").Return(mocks.NewWorkflowRun(t)).Once()
	res = e.do(owner.caller, "POST", "/api/v1/rate-comparisons/"+id3+"/process", nil)
	require.Equal(t, 202, res.Code, "%s", res.Raw)
}

// A resync start whose answer is lost is sent again.
func TestResyncOrderAmbiguousStartSentAgain(t *testing.T) {
	tc := mocks.NewClient(t)
	e := newEnv(t, func(d *Deps) { d.Temporal = tc })
	owner := e.signup()
	orderID := resyncFixtureOrder(t, e, owner.org, false)
	tc.On("ExecuteWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything).
		Return(nil, serviceerror.NewDeadlineExceeded("deadline")).Once()
	run := mocks.NewWorkflowRun(t)
	run.On("GetID").Return("order-resync/" + orderID)
	run.On("GetRunID").Return("run-2")
	tc.On("ExecuteWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything).Return(run, nil).Once()
	res := e.do(owner.caller, "POST", "/api/v1/orders/"+orderID+"/resync", nil)
	require.Equal(t, 202, res.Code, "%s", res.Raw)
	require.Equal(t, "run-2", res.data()["runId"])
}

// A registration whose update-with-start answer is lost is sent again under
// the same update id; when the run exists but never answers, the new
// account stays pending (503) instead of being deleted under its run.
func TestCarrierARegisterAmbiguousStartKeepsAccount(t *testing.T) {
	e, tc := carrierEnv(t)
	owner := e.signup()
	var updateIDs []string
	tc.On("NewWithStartWorkflowOperation", mock.Anything, mock.Anything, mock.Anything).Return(fakeStartOp{}).Times(3)
	tc.On("UpdateWithStartWorkflow", mock.Anything, mock.Anything).Run(func(args mock.Arguments) {
		updateIDs = append(updateIDs, args.Get(1).(client.UpdateWithStartWorkflowOptions).UpdateOptions.UpdateID)
	}).Return(nil, serviceerror.NewDeadlineExceeded("deadline")).Times(3)
	tc.On("DescribeWorkflowExecution", mock.Anything, mock.Anything, "").Return(func(_ context.Context, id, _ string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
		return describeRunning(id), nil
	}).Once()
	tc.On("GetWorkflow", mock.Anything, mock.Anything, "run-1").Return(mocks.NewWorkflowRun(t)).Once()
	requireError(t, e.do(owner.caller, "POST", "/api/v1/carrier-accounts/carrier_a/register", registerBody("451134299")), 503, "temporal_unavailable")
	require.Len(t, updateIDs, 3)
	require.Equal(t, updateIDs[0], updateIDs[1], "the same update, so Temporal answers the first one's outcome")
	require.Equal(t, updateIDs[0], updateIDs[2])
	var status string
	require.NoError(t, e.deps.Store.Pool.QueryRow(context.Background(),
		`SELECT status FROM carrier_accounts WHERE organization_id = $1 AND account_number_digest = $2`, owner.org,
		store.CarrierAccountNumberDigest(e.deps.Secrets, "451134299")).Scan(&status))
	require.Equal(t, "pending", status, "kept while its run may exist")
}
