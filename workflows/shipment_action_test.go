package workflows

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"github.com/stretchr/testify/suite"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/fos-dev/fos/activities"
)

type shipmentActionSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	env *testsuite.TestWorkflowEnvironment
}

func TestShipmentAction(t *testing.T) { suite.Run(t, new(shipmentActionSuite)) }

var shipActs *activities.ShipmentActivities

func (s *shipmentActionSuite) SetupTest() {
	s.env = s.NewTestWorkflowEnvironment()
	s.env.RegisterActivity(&activities.ShipmentActivities{})
	s.env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: ShipmentActionWorkflowID(shipActionInput().ActionID)})
}

func (s *shipmentActionSuite) AfterTest(_, _ string) { s.env.AssertExpectations(s.T()) }

func shipActionInput() ShipmentActionInput {
	return ShipmentActionInput{
		OrganizationID: "8e0c2f3a-5a8b-4d62-9a43-1f0b6f1e2d11",
		ShipmentID:     "0b7f1e4c-2d3a-4c5b-8e9f-6a7b8c9d0e1f",
		ActionID:       "5d7e9f1a-2b3c-4d5e-8f9a-0b1c2d3e4f5a",
	}
}

func (s *shipmentActionSuite) TestSuccessRecordsCompleted() {
	in := shipActionInput()
	s.env.OnActivity(shipActs.SendShipmentAction, mock.Anything, activities.SendShipmentActionInput{OrganizationID: in.OrganizationID, ActionID: in.ActionID}).
		Return(activities.SendShipmentActionResult{ConfirmationNumber: "DM0000000001", Status: "accepted", Messages: []string{"Hold requested"}, Raw: json.RawMessage(`{"ok":true}`)}, nil).Once()
	s.env.OnActivity(shipActs.RecordShipmentActionOutcome, mock.Anything, activities.RecordShipmentActionOutcomeInput{
		OrganizationID: in.OrganizationID, ActionID: in.ActionID, Status: "completed", ConfirmationNumber: "DM0000000001",
		Messages: []string{"Hold requested"}, CarrierResponse: json.RawMessage(`{"ok":true}`),
	}).Return(activities.RecordShipmentActionOutcomeResult{Recorded: true}, nil).Once()

	s.env.ExecuteWorkflow(ShipmentAction, in)

	s.True(s.env.IsWorkflowCompleted())
	s.NoError(s.env.GetWorkflowError())
	var res ShipmentActionResult
	s.NoError(s.env.GetWorkflowResult(&res))
	s.Equal(ShipmentActionResult{ActionID: in.ActionID, Status: "completed", ConfirmationNumber: "DM0000000001"}, res)
}

func (s *shipmentActionSuite) TestCarrierRefusalRecordsFailed() {
	in := shipActionInput()
	refusal := temporal.NewNonRetryableApplicationError("carrier_a error 404 TRACKING.TRACKINGNUMBER.NOTFOUND: not found",
		activities.ErrTypeShipmentActionRejected, errors.New("carrier"))
	s.env.OnActivity(shipActs.SendShipmentAction, mock.Anything, mock.Anything).Return(activities.SendShipmentActionResult{}, refusal).Once()
	s.env.OnActivity(shipActs.RecordShipmentActionOutcome, mock.Anything, activities.RecordShipmentActionOutcomeInput{
		OrganizationID: in.OrganizationID, ActionID: in.ActionID, Status: "failed",
		Error: "carrier_a error 404 TRACKING.TRACKINGNUMBER.NOTFOUND: not found",
	}).Return(activities.RecordShipmentActionOutcomeResult{Recorded: true}, nil).Once()

	s.env.ExecuteWorkflow(ShipmentAction, in)

	s.True(s.env.IsWorkflowCompleted())
	err := s.env.GetWorkflowError()
	s.Require().Error(err)
	var appErr *temporal.ApplicationError
	s.Require().True(errors.As(err, &appErr), "%v", err)
	s.Equal(activities.ErrTypeShipmentActionRejected, appErr.Type())
	s.env.AssertActivityNumberOfCalls(s.T(), "SendShipmentAction", 1)
}

func (s *shipmentActionSuite) TestTransientFailureRetriedThenCompleted() {
	transient := temporal.NewApplicationError("the carrier could not be reached", activities.ErrTypeShipmentCarrierUnavailable)
	s.env.OnActivity(shipActs.SendShipmentAction, mock.Anything, mock.Anything).Return(activities.SendShipmentActionResult{}, transient).Twice()
	s.env.OnActivity(shipActs.SendShipmentAction, mock.Anything, mock.Anything).Return(activities.SendShipmentActionResult{ConfirmationNumber: "DM1"}, nil).Once()
	s.env.OnActivity(shipActs.RecordShipmentActionOutcome, mock.Anything, mock.MatchedBy(func(in activities.RecordShipmentActionOutcomeInput) bool {
		return in.Status == "completed" && in.ConfirmationNumber == "DM1"
	})).Return(activities.RecordShipmentActionOutcomeResult{Recorded: true}, nil).Once()

	s.env.ExecuteWorkflow(ShipmentAction, shipActionInput())

	s.NoError(s.env.GetWorkflowError())
	s.env.AssertActivityNumberOfCalls(s.T(), "SendShipmentAction", 3)
}

func (s *shipmentActionSuite) TestRetriesExhaustedRecordsFailed() {
	transient := temporal.NewApplicationError("the carrier could not be reached", activities.ErrTypeShipmentCarrierUnavailable)
	s.env.OnActivity(shipActs.SendShipmentAction, mock.Anything, mock.Anything).Return(activities.SendShipmentActionResult{}, transient)
	s.env.OnActivity(shipActs.RecordShipmentActionOutcome, mock.Anything, mock.MatchedBy(func(in activities.RecordShipmentActionOutcomeInput) bool {
		return in.Status == "failed" && in.Error == "the carrier could not be reached"
	})).Return(activities.RecordShipmentActionOutcomeResult{Recorded: true}, nil).Once()

	s.env.ExecuteWorkflow(ShipmentAction, shipActionInput())

	s.Error(s.env.GetWorkflowError())
	s.env.AssertActivityNumberOfCalls(s.T(), "SendShipmentAction", notSentAttempts)
}

// A call whose outcome is unknown (a 5xx, a timeout after sending) is never
// repeated: a delivery change may carry a fee.
func (s *shipmentActionSuite) TestUnknownOutcomeNotRetried() {
	unknown := temporal.NewNonRetryableApplicationError(activities.ShipmentActionUnknownMessage+" (carrier_a error 503)", activities.ErrTypeShipmentActionOutcomeUnknown, nil)
	s.env.OnActivity(shipActs.SendShipmentAction, mock.Anything, mock.Anything).Return(activities.SendShipmentActionResult{}, unknown)
	s.env.OnActivity(shipActs.RecordShipmentActionOutcome, mock.Anything, mock.MatchedBy(func(in activities.RecordShipmentActionOutcomeInput) bool {
		return in.Status == "failed" && in.Error == activities.ShipmentActionUnknownMessage+" (carrier_a error 503)"
	})).Return(activities.RecordShipmentActionOutcomeResult{Recorded: true}, nil).Once()

	s.env.ExecuteWorkflow(ShipmentAction, shipActionInput())

	s.Error(s.env.GetWorkflowError())
	s.env.AssertActivityNumberOfCalls(s.T(), "SendShipmentAction", 1)
}

func (s *shipmentActionSuite) TestAlreadyFinishedRecordsNothing() {
	s.env.OnActivity(shipActs.SendShipmentAction, mock.Anything, mock.Anything).
		Return(activities.SendShipmentActionResult{AlreadyFinished: true, FinishedStatus: "completed"}, nil).Once()

	s.env.ExecuteWorkflow(ShipmentAction, shipActionInput())

	s.NoError(s.env.GetWorkflowError())
	var res ShipmentActionResult
	s.NoError(s.env.GetWorkflowResult(&res))
	s.Equal("completed", res.Status)
	s.env.AssertActivityNumberOfCalls(s.T(), "RecordShipmentActionOutcome", 0)
}

func (s *shipmentActionSuite) TestActivityTimeoutRecordsFailed() {
	s.env.OnActivity(shipActs.SendShipmentAction, mock.Anything, mock.Anything).
		Return(activities.SendShipmentActionResult{}, temporal.NewTimeoutError(0, nil))
	s.env.OnActivity(shipActs.RecordShipmentActionOutcome, mock.Anything, mock.MatchedBy(func(in activities.RecordShipmentActionOutcomeInput) bool {
		return in.Status == "failed" && in.Error == activities.ShipmentActionUnknownMessage
	})).Return(activities.RecordShipmentActionOutcomeResult{Recorded: true}, nil).Once()

	s.env.ExecuteWorkflow(ShipmentAction, shipActionInput())

	s.Error(s.env.GetWorkflowError())
	s.env.AssertActivityNumberOfCalls(s.T(), "SendShipmentAction", 1)
}

func TestPickupCompletionWorkflow(t *testing.T) {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	env.RegisterActivity(&activities.ShipmentActivities{})
	start := time.Date(2030, 3, 4, 5, 0, 0, 0, time.UTC)
	env.SetStartTime(start)
	env.OnActivity(shipActs.CompletePastPickups, mock.Anything, mock.MatchedBy(func(in activities.CompletePastPickupsInput) bool {
		return in.AsOf.Equal(start)
	})).Return(activities.CompletePastPickupsResult{Completed: 7}, nil).Once()

	env.ExecuteWorkflow(PickupCompletion)

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res PickupCompletionResult
	require.NoError(t, env.GetWorkflowResult(&res))
	require.Equal(t, int64(7), res.Completed)
	env.AssertExpectations(t)
}
