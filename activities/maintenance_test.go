package activities

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/mocks"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fos-dev/fos/store"
)

func describeAs(id string, status enumspb.WorkflowExecutionStatus, started time.Time) *workflowservice.DescribeWorkflowExecutionResponse {
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{
		Execution: &commonpb.WorkflowExecution{WorkflowId: id, RunId: "run-" + id},
		Status:    status,
		StartTime: timestamppb.New(started),
	}}
}

// ReconcileRuns on a real database with a mocked Temporal client: a
// comparison whose run is missing is restarted, one whose run was
// terminated in the UI is failed with the operator's reason, an open run
// and a row younger than its bound are left alone; a pending carrier
// account without a run ends in error.
func TestReconcileRuns(t *testing.T) {
	f := newRCFixture(t)
	ctx := context.Background()
	acctA := f.account("carrier_a", rcCredsA, "active")
	tc := mocks.NewClient(t)
	var mu sync.Mutex
	var restarted []string
	a := &MaintenanceActivities{Store: f.st, Temporal: tc, StartRateComparison: func(_ context.Context, orgID, id string) error {
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, f.orgID.String(), orgID)
		restarted = append(restarted, id)
		return nil
	}}
	aged := func(c store.RateComparison, age time.Duration) store.RateComparison {
		_, err := f.st.Pool.Exec(ctx, `UPDATE rate_comparisons SET started_at = now() - $2::interval WHERE id = $1`, c.ID, age.String())
		require.NoError(t, err)
		return c
	}
	wf := func(c store.RateComparison) string { return "rate-comparison/" + c.ID.String() }

	missing := aged(f.comparison(acctA, "carrier_a", rcNumbers(2, "M")), 10*time.Minute)
	tc.On("DescribeWorkflowExecution", mock.Anything, wf(missing), "").Return(nil, serviceerror.NewNotFound("no run")).Once()

	stale := aged(f.comparison(acctA, "carrier_a", rcNumbers(2, "S")), 10*time.Minute)
	// Only a run from an earlier processing (it failed an hour ago).
	tc.On("DescribeWorkflowExecution", mock.Anything, wf(stale), "").
		Return(describeAs(wf(stale), enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, time.Now().Add(-time.Hour)), nil).Once()

	running := aged(f.comparison(acctA, "carrier_a", rcNumbers(2, "R")), 10*time.Minute)
	tc.On("DescribeWorkflowExecution", mock.Anything, wf(running), "").
		Return(describeAs(wf(running), enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, time.Now().Add(-10*time.Minute)), nil).Once()

	terminated := aged(f.comparison(acctA, "carrier_a", rcNumbers(2, "T")), 10*time.Minute)
	tc.On("DescribeWorkflowExecution", mock.Anything, wf(terminated), "").
		Return(describeAs(wf(terminated), enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED, time.Now().Add(-9*time.Minute)), nil).Once()
	it := mocks.NewHistoryEventIterator(t)
	it.On("HasNext").Return(true).Once()
	it.On("Next").Return(&historypb.HistoryEvent{
		EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
		Attributes: &historypb.HistoryEvent_WorkflowExecutionTerminatedEventAttributes{WorkflowExecutionTerminatedEventAttributes: &historypb.WorkflowExecutionTerminatedEventAttributes{
			Reason: "operator said stop", Identity: "ops@example.com",
		}},
	}, nil).Once()
	it.On("HasNext").Return(false).Once()
	tc.On("GetWorkflowHistory", mock.Anything, wf(terminated), "run-"+wf(terminated), false, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT).Return(it).Once()

	young := f.comparison(acctA, "carrier_a", rcNumbers(2, "Y")) // not described at all

	// Carrier accounts pending registration.
	pending := func(age time.Duration) uuid.UUID {
		id := uuid.New()
		_, err := f.st.Pool.Exec(ctx, `INSERT INTO carrier_accounts (id, organization_id, name, carrier, status, updated_at)
 VALUES ($1, $2, 'reg', 'carrier_a', 'pending', now() - $3::interval)`, id, f.orgID, age.String())
		require.NoError(t, err)
		return id
	}
	orphan := pending(time.Hour)
	tc.On("DescribeWorkflowExecution", mock.Anything, "carrier-registration/"+orphan.String(), "").Return(nil, serviceerror.NewNotFound("no run")).Once()
	waiting := pending(time.Hour)
	tc.On("DescribeWorkflowExecution", mock.Anything, "carrier-registration/"+waiting.String(), "").
		Return(describeAs("carrier-registration/"+waiting.String(), enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, time.Now().Add(-time.Hour)), nil).Once()
	fresh := pending(time.Minute) // not described at all

	repairs := map[string]int{}
	a.Repaired = func(kind, outcome string) { repairs[kind+" "+outcome]++ }
	res, err := a.ReconcileRuns(ctx, ReconcileRunsInput{})
	require.NoError(t, err)
	require.Equal(t, ReconcileRunsResult{Checked: 6, Restarted: 2, Failed: 2}, res)
	// Each repair is counted (fos_reconciler_repairs_total).
	require.Equal(t, map[string]int{"rate comparison restarted": 2, "rate comparison failed": 1, "carrier registration failed": 1}, repairs)
	require.ElementsMatch(t, []string{missing.ID.String(), stale.ID.String()}, restarted)

	status := func(id uuid.UUID) (string, string) {
		c, err := store.RateComparisonByID(ctx, f.st.Pool, f.orgID, id)
		require.NoError(t, err)
		return c.Status, rcDeref(c.Error)
	}
	for _, c := range []store.RateComparison{missing, stale, running, young} {
		st, _ := status(c.ID)
		require.Equal(t, "processing", st)
	}
	st, msg := status(terminated.ID)
	require.Equal(t, "failed", st)
	require.Equal(t, "processing stopped: stopped by an operator: operator said stop; process the comparison again to finish the remaining items", msg)

	acct := func(id uuid.UUID) (string, string) {
		a, err := store.CarrierAccountByID(ctx, f.st.Pool, f.orgID, id)
		require.NoError(t, err)
		return a.Status, rcDeref(a.LastError)
	}
	st, msg = acct(orphan)
	require.Equal(t, "error", st)
	require.Equal(t, "registration ended: the workflow never started; register the account again", msg)
	st, _ = acct(waiting)
	require.Equal(t, "pending", st)
	st, _ = acct(fresh)
	require.Equal(t, "pending", st)

	// Temporal unreachable: the activity fails (and is retried).
	tc.On("DescribeWorkflowExecution", mock.Anything, mock.Anything, "").Return(nil, serviceerror.NewUnavailable("down"))
	_, err = a.ReconcileRuns(ctx, ReconcileRunsInput{})
	require.Error(t, err)
}

func rcDeref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// The reason a reconciler stores for a closed run is one a tenant may
// read: a termination names no operator (pid@host, e-mail) and its reason
// and a failure's text go through TenantText; Detail keeps it all for
// the logs.
func TestDescribeWaitingRunReasonIsTenantSafe(t *testing.T) {
	ctx := context.Background()
	tc := mocks.NewClient(t)
	closing := func(id string, status enumspb.WorkflowExecutionStatus, ev *historypb.HistoryEvent) {
		tc.On("DescribeWorkflowExecution", mock.Anything, id, "").Return(describeAs(id, status, time.Now()), nil).Once()
		it := mocks.NewHistoryEventIterator(t)
		it.On("HasNext").Return(true).Once()
		it.On("Next").Return(ev, nil).Once()
		it.On("HasNext").Return(false).Once()
		tc.On("GetWorkflowHistory", mock.Anything, id, "run-"+id, false, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT).Return(it).Once()
	}
	closing("t1", enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED, &historypb.HistoryEvent{
		Attributes: &historypb.HistoryEvent_WorkflowExecutionTerminatedEventAttributes{WorkflowExecutionTerminatedEventAttributes: &historypb.WorkflowExecutionTerminatedEventAttributes{
			Reason: "stuck on a bad deploy", Identity: "4242@worker-7.internal",
		}},
	})
	closing("t2", enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED, &historypb.HistoryEvent{
		Attributes: &historypb.HistoryEvent_WorkflowExecutionTerminatedEventAttributes{WorkflowExecutionTerminatedEventAttributes: &historypb.WorkflowExecutionTerminatedEventAttributes{
			Reason: "db at 10.1.2.3:5432 down", Identity: "ops@example.com",
		}},
	})
	closing("f1", enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, &historypb.HistoryEvent{
		Attributes: &historypb.HistoryEvent_WorkflowExecutionFailedEventAttributes{WorkflowExecutionFailedEventAttributes: &historypb.WorkflowExecutionFailedEventAttributes{
			Failure: &failurepb.Failure{Message: "record: ERROR: deadlock detected (SQLSTATE 40P01)"},
		}},
	})
	run := mocks.NewWorkflowRun(t)
	run.On("Get", mock.Anything, nil).Return(errors.New("not a workflow execution error")).Once()
	tc.On("GetWorkflow", mock.Anything, "f1", "run-f1").Return(run).Once()

	for id, want := range map[string]string{
		"t1": "stopped by an operator: stuck on a bad deploy",
		"t2": "stopped by an operator: " + InternalFailureMessage,
		"f1": "the workflow run failed: " + InternalFailureMessage,
	} {
		wr, err := DescribeWaitingRun(ctx, tc, id, time.Time{})
		require.NoError(t, err)
		require.Equal(t, want, wr.Reason, id)
	}
	tc.On("DescribeWorkflowExecution", mock.Anything, "t1", "").Return(describeAs("t1", enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED, time.Now()), nil).Once()
	it := mocks.NewHistoryEventIterator(t)
	it.On("HasNext").Return(true).Once()
	it.On("Next").Return(&historypb.HistoryEvent{
		Attributes: &historypb.HistoryEvent_WorkflowExecutionTerminatedEventAttributes{WorkflowExecutionTerminatedEventAttributes: &historypb.WorkflowExecutionTerminatedEventAttributes{
			Reason: "stuck", Identity: "4242@worker-7.internal",
		}},
	}, nil).Once()
	it.On("HasNext").Return(false).Once()
	tc.On("GetWorkflowHistory", mock.Anything, "t1", "run-t1", false, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT).Return(it).Once()
	wr, err := DescribeWaitingRun(ctx, tc, "t1", time.Time{})
	require.NoError(t, err)
	require.Equal(t, "the workflow run was terminated in Temporal: stuck (by 4242@worker-7.internal)", wr.Detail, "the operators' account")
}
