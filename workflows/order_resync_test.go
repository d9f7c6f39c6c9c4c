package workflows

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"github.com/stretchr/testify/suite"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/fos-dev/fos/activities"
)

type orderResyncSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	env *testsuite.TestWorkflowEnvironment
}

func TestOrderResync(t *testing.T) { suite.Run(t, new(orderResyncSuite)) }

func (s *orderResyncSuite) SetupTest() {
	s.env = s.NewTestWorkflowEnvironment()
	s.env.RegisterActivity(&activities.OrderActivities{})
}

func (s *orderResyncSuite) AfterTest(_, _ string) { s.env.AssertExpectations(s.T()) }

var a *activities.OrderActivities

func input() OrderResyncInput {
	return OrderResyncInput{
		OrganizationID: "8e0c2f3a-5a8b-4d62-9a43-1f0b6f1e2d11",
		OrderID:        "0b7f1e4c-2d3a-4c5b-8e9f-6a7b8c9d0e1f",
		RequestedBy:    Actor{Type: "user", ID: "5d7e9f1a-2b3c-4d5e-8f9a-0b1c2d3e4f5a", Name: "Ada Lovelace"},
	}
}

func (s *orderResyncSuite) TestSuccess() {
	in := input()
	s.env.SetStartWorkflowOptions(testStartOptions(in.OrderID))
	s.env.OnActivity(a.ResyncOrder, mock.Anything, mock.MatchedBy(func(got activities.ResyncOrderInput) bool {
		// The input is propagated, and the run keys the recorded activity.
		return got.OrganizationID == in.OrganizationID && got.OrderID == in.OrderID &&
			got.RequestedBy == in.RequestedBy &&
			got.WorkflowID == OrderResyncWorkflowID(in.OrderID) && got.RunID != ""
	})).Return(activities.ResyncOrderResult{
		OrderID: in.OrderID, BridgeID: "bridge-1", ExternalID: "4001",
		ChangedFields: []string{"status", "customer", "totals"},
	}, nil).Once()

	s.env.ExecuteWorkflow(OrderResync, in)

	s.True(s.env.IsWorkflowCompleted())
	s.NoError(s.env.GetWorkflowError())
	var res OrderResyncResult
	s.NoError(s.env.GetWorkflowResult(&res))
	s.Equal(OrderResyncResult{OrderID: in.OrderID, BridgeID: "bridge-1", ChangedFields: []string{"status", "customer", "totals"}}, res)
	s.env.AssertActivityNumberOfCalls(s.T(), "RecordResyncFailure", 0)
}

func (s *orderResyncSuite) TestRetryableFailureThenSuccess() {
	in := input()
	transient := temporal.NewApplicationError("bridge \"Shop\" failed: Service Unavailable (platform_unavailable)", activities.ErrTypePlatformUnavailable)
	s.env.OnActivity(a.ResyncOrder, mock.Anything, mock.Anything).Return(activities.ResyncOrderResult{}, transient).Twice()
	s.env.OnActivity(a.ResyncOrder, mock.Anything, mock.Anything).Return(activities.ResyncOrderResult{BridgeID: "bridge-1", ChangedFields: []string{}}, nil).Once()

	s.env.ExecuteWorkflow(OrderResync, in)

	s.True(s.env.IsWorkflowCompleted())
	s.NoError(s.env.GetWorkflowError())
	s.env.AssertActivityNumberOfCalls(s.T(), "ResyncOrder", 3)
	s.env.AssertActivityNumberOfCalls(s.T(), "RecordResyncFailure", 0)
}

func (s *orderResyncSuite) TestPermanentFailureRecordsAndFails() {
	in := input()
	permanent := temporal.NewNonRetryableApplicationError("order 4001 not found on bridge \"Shop\"", activities.ErrTypePlatformPermanent, errors.New("platform error 404 order_not_found: Not Found"))
	s.env.OnActivity(a.ResyncOrder, mock.Anything, mock.Anything).Return(activities.ResyncOrderResult{}, permanent).Once()
	s.env.OnActivity(a.RecordResyncFailure, mock.Anything, activities.RecordResyncFailureInput{
		OrganizationID: in.OrganizationID,
		OrderID:        in.OrderID,
		WorkflowID:     OrderResyncWorkflowID(in.OrderID),
		RunID:          s.runID(),
		Error:          "order 4001 not found on bridge \"Shop\"",
		ErrorType:      activities.ErrTypePlatformPermanent,
		RequestedBy:    in.RequestedBy,
	}).Return(activities.RecordResyncFailureResult{Recorded: true}, nil).Once()
	s.env.SetStartWorkflowOptions(testStartOptions(in.OrderID))

	s.env.ExecuteWorkflow(OrderResync, in)

	s.True(s.env.IsWorkflowCompleted())
	err := s.env.GetWorkflowError()
	s.Require().Error(err)
	var appErr *temporal.ApplicationError
	s.Require().True(errors.As(err, &appErr), "%v", err)
	s.Equal(activities.ErrTypePlatformPermanent, appErr.Type())
	s.env.AssertActivityNumberOfCalls(s.T(), "ResyncOrder", 1)
}

func (s *orderResyncSuite) TestRetriesExhaustedRecordsAndFails() {
	transient := temporal.NewApplicationError("bridge \"Shop\" failed: Service Unavailable (platform_unavailable)", activities.ErrTypePlatformUnavailable)
	s.env.OnActivity(a.ResyncOrder, mock.Anything, mock.Anything).Return(activities.ResyncOrderResult{}, transient)
	s.env.OnActivity(a.RecordResyncFailure, mock.Anything, mock.MatchedBy(func(in activities.RecordResyncFailureInput) bool {
		return in.ErrorType == activities.ErrTypePlatformUnavailable && in.Error == "bridge \"Shop\" failed: Service Unavailable (platform_unavailable)"
	})).Return(activities.RecordResyncFailureResult{Recorded: true}, nil).Once()

	s.env.ExecuteWorkflow(OrderResync, input())

	s.True(s.env.IsWorkflowCompleted())
	s.Error(s.env.GetWorkflowError())
	s.env.AssertActivityNumberOfCalls(s.T(), "ResyncOrder", int(resyncOrderOptions.RetryPolicy.MaximumAttempts))
}

func (s *orderResyncSuite) TestFailureRecordingFailsStillReturnsOriginalError() {
	permanent := temporal.NewNonRetryableApplicationError("order has no source bridge", activities.ErrTypeBridgeUnavailable, nil)
	s.env.OnActivity(a.ResyncOrder, mock.Anything, mock.Anything).Return(activities.ResyncOrderResult{}, permanent).Once()
	s.env.OnActivity(a.RecordResyncFailure, mock.Anything, mock.Anything).
		Return(activities.RecordResyncFailureResult{}, temporal.NewNonRetryableApplicationError("bad input", activities.ErrTypeInvalidInput, nil)).Once()

	s.env.ExecuteWorkflow(OrderResync, input())

	err := s.env.GetWorkflowError()
	var appErr *temporal.ApplicationError
	s.Require().True(errors.As(err, &appErr), "%v", err)
	s.Equal(activities.ErrTypeBridgeUnavailable, appErr.Type())
}

// runID is the run id the test environment gives the workflow.
func (s *orderResyncSuite) runID() string { return "default-test-run-id" }

func TestFailureOf(t *testing.T) {
	msg, typ := failureOf(temporal.NewNonRetryableApplicationError("human message", "PlatformPermanent", errors.New("cause")))
	require.Equal(t, "human message", msg)
	require.Equal(t, "PlatformPermanent", typ)
	// A bare Go error is never shown to the tenant (it may name addresses).
	msg, typ = failureOf(errors.New("dial tcp 10.0.0.7:443: connect: connection refused"))
	require.Equal(t, activities.InternalFailureMessage, msg)
	require.Empty(t, typ)
}

func TestOrderResyncWorkflowID(t *testing.T) {
	require.Equal(t, "order-resync/abc", OrderResyncWorkflowID("abc"))
}

func testStartOptions(orderID string) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{ID: OrderResyncWorkflowID(orderID)}
}
